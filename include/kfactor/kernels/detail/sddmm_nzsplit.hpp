#pragma once
/// \file
/// The nonzero-split SDDMM kernel (beyond the paper; the default on GPUs).
///
/// The plan's layout is walked in batches of V consecutive nonzeros, whatever
/// rows they fall in, so every lane group gets the same work (RoDe-like
/// balance without row segments). A group of V lanes splits K in 16-byte
/// packs; for each slot s of its batch every lane adds its packs' part of
/// <X_r(s), Y_c(s)> into a register p[s]. A transposed butterfly then leaves
/// slot l's whole dot product in lane l: log2(V) rounds of V/2, V/4, ..., 1
/// shuffles, V - 1 in all for V dot products, where reducing each product
/// apart costs V log2(V). Lane l writes output l, so the writes are
/// coalesced. The staged row X_r is loaded once per batch when the batch lies
/// in one row (the common case on long rows; the plan marks those batches,
/// sddmm_one_row_bit), per slot otherwise: reloading
/// it only where the row changes (a predicated load) serialised the slots'
/// loads and cost up to 35% on M2 (H100).
///
/// Cache policies on CUDA (H100). Every form reads the layout's
/// index streams, and the values and output where they run in layout order,
/// to leave the caches first (read or written once): that took M2 fp32 from
/// 2233 to 2278 GFLOP/s at K = 128 and from 2062 to 2080 at K = 512. Every
/// form loads the staged rows to leave L2 first (each is read for consecutive
/// positions only): on one H100 M2 fp32 at K = 32 went from 1694 to 1739 and
/// bf16 at K = 128 from 3587 to 3688, M1 within about 1%. With hints
/// (Hinted) the streamed rows of the plan's hot indices are loaded to stay in
/// L2 and the others to leave first; normal priority instead of evict-first
/// for those cold rows or for the staged rows lost 7-14%.
///
/// Load order in the hinted form (H100). A batch of several rows
/// loads a staged pack per position besides the streamed one, 64 loads of 16
/// bytes per lane, more than its 255 registers hold at once. Left to the
/// compiler, streamed and staged loads interleave, so the last streamed rows
/// (from memory) wait for registers. Issuing every streamed load first, in
/// program order (asm volatile), and the staged ones (mostly L1 hits: the
/// positions of a row are consecutive) after them took M2 fp32 from 2374 to
/// 2421-2430 GFLOP/s at K = 128 and from 2065-2076 to 2090-2095 at K = 512.
/// Loading each staged row only where the row changes (a predicated load)
/// then cost 21%, prefetching the batch's distinct staged rows to L1 or L2
/// before the streamed loads 30%, and even the first position's staged pack
/// loaded before them 16%.
///
/// L1 priorities in the hinted form (H100). Its streamed rows
/// are loaded not to allocate in L1 (.L1::no_allocate: few are read twice by
/// one multiprocessor before L1 would drop them), and its staged rows to
/// stay (.L1::evict_last: a row serves consecutive positions). The streamed
/// rows' priority took M2 fp32 from 2423-2425 to 2449-2450 GFLOP/s at
/// K = 128 and from 2092-2096 to 2118-2120 at K = 512 on one machine; the
/// staged rows' added 3-4 at K = 128 on another. Choosing the priority per
/// row by its cold bit spilled: 34% slower as a branch, 71% as a predicated
/// pair of loads.
///
/// Every group runs the same number of batches and every shuffle sits
/// outside the data-dependent branches, so whole warps shuffle together. The
/// shuffles exist on devices only; host spaces run the same layout with one
/// position per work item (tests; the plan prefers rowsplit there).

#include <kfactor/core/detail/light_weight.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace kfactor::detail {

/// Lane `src` of the caller's group of `width` lanes (devices); the value
/// itself on a host, where a group has one lane.
template <class V>
KOKKOS_FORCEINLINE_FUNCTION V group_shfl(const V& v, int src, int width) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  KOKKOS_IF_ON_DEVICE((return Kokkos::shfl(v, src, width);))
#endif
  (void)src;
  (void)width;
  return v;
}

/// The transposed butterfly: lane `lane` of a group of V holds partial sums
/// p[0..V) of V slots; afterwards its p[0] holds slot `lane` summed over the
/// group (after the round of half-width h, entry i of lane l holds slot
/// i + (l & h) summed over lanes l ^ h). V - 1 shuffles per lane in all.
template <int V, class Acc>
KOKKOS_FORCEINLINE_FUNCTION void group_transposed_sum(Acc (&p)[V], int lane) {
  for (int h = V / 2; h >= 1; h /= 2) {
    const bool upper = (lane & h) != 0;
    for (int i = 0; i < h; ++i) {
      const Acc send = upper ? p[i] : p[i + h];
      const Acc keep = upper ? p[i + h] : p[i];
      p[i] = keep + group_shfl(send, lane ^ h, V);
    }
  }
}

/// L2 eviction priorities of the nzsplit and panels kernels' loads: streamed
/// rows of hot indices are loaded to stay in L2 (evict_last), the other
/// streamed rows and the staged rows to leave it first (evict_first). CUDA
/// sm_80 and later; elsewhere the loads are plain and the policies unused.
struct SddmmL2Policy {
  std::uint64_t keep = 0, evict = 0;
  KOKKOS_FORCEINLINE_FUNCTION static SddmmL2Policy make() {
    SddmmL2Policy p;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p.keep));
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p.evict));
#endif
    return p;
  }
};

/// Streamed indices of the hinted layout carry this bit when their rows are
/// not to be kept in L2.
inline constexpr ordinal_t sddmm_cold_bit = std::numeric_limits<ordinal_t>::min();

/// Staged rows of the layout carry this bit in every position of a batch
/// whose positions all lie in one row.
inline constexpr ordinal_t sddmm_one_row_bit = std::numeric_limits<ordinal_t>::min();

/// L1 priority of a hinted load (CUDA's .L1:: eviction qualifiers).
enum class SddmmL1 {
  normal,       ///< the default
  keep,         ///< evict_last: rows read again soon by the same multiprocessor
  no_allocate,  ///< rows that would leave L1 before their next use
};

/// *p, read-only, with the L2 eviction policy `policy` (SddmmL2Policy) and
/// the L1 priority L1. InOrder: issued in program order relative to the
/// caller's other InOrder loads (asm volatile), whatever the compiler's
/// schedule would prefer.
template <bool InOrder = false, SddmmL1 L1 = SddmmL1::normal, class Pack>
KOKKOS_FORCEINLINE_FUNCTION Pack sddmm_load_hinted(const Pack* p, std::uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  static_assert(sizeof(Pack) == 16);
  Pack out;
  unsigned* u = reinterpret_cast<unsigned*>(&out);
#define KFACTOR_SDDMM_LOAD(QUALIFIER)                                                       \
  if (InOrder)                                                                              \
    asm volatile("ld.global.nc" QUALIFIER ".L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" \
                 : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3])                           \
                 : "l"(p), "l"(policy));                                                    \
  else                                                                                      \
    asm("ld.global.nc" QUALIFIER ".L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"          \
        : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3])                                    \
        : "l"(p), "l"(policy));
  if constexpr (L1 == SddmmL1::keep) {
    KFACTOR_SDDMM_LOAD(".L1::evict_last")
  } else if constexpr (L1 == SddmmL1::no_allocate) {
    KFACTOR_SDDMM_LOAD(".L1::no_allocate")
  } else {
    KFACTOR_SDDMM_LOAD("")
  }
#undef KFACTOR_SDDMM_LOAD
  return out;
#else
  (void)policy;
  return *p;
#endif
}

/// *p, read once: with Streaming (CUDA), marked to leave L1 and L2 first
/// (ld.global.cs), so that the layout's index and value streams do not
/// displace reused rows; a plain load elsewhere.
template <bool Streaming, class V>
KOKKOS_FORCEINLINE_FUNCTION V sddmm_load_once(const V* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (Streaming) return __ldcs(p);
#endif
  return *p;
}

/// *p = v, written once: with Streaming (CUDA) marked to leave the caches
/// first (st.global.cs); a plain store elsewhere.
template <bool Streaming, class V>
KOKKOS_FORCEINLINE_FUNCTION void sddmm_store_once(V* p, V v) {
#if defined(__CUDA_ARCH__)
  if constexpr (Streaming) {
    __stcs(p, v);
    return;
  }
#endif
  *p = v;
}

/// Whether `p` holds in any lane of the caller's warp (devices; every lane
/// of the warp must call it); `p` itself on a host.
KOKKOS_FORCEINLINE_FUNCTION bool warp_any(bool p) {
#if defined(__CUDA_ARCH__)
  return __any_sync(0xffffffffu, p);
#elif defined(__HIP_DEVICE_COMPILE__)
  return __any(p);
#else
  return p;
#endif
}

/// Launch shape of the nonzero-split kernel.
struct SddmmNzLaunch {
  int team_size = 8;          ///< lane groups per team
  int batches_per_group = 4;  ///< batches each group runs (the same for all)
  int min_teams = 2;          ///< resident teams per multiprocessor the registers must allow (1 for the
                              ///< plan's hinted 32-lane form, else 2 or 3)
};

/// Lanes per group for K of `packs` 16-byte packs: 4 up to 4 packs (bf16 at
/// K = 32: one pack per lane; 8 lanes left half idle and ran M1 at 3163
/// GFLOP/s against 4897 on the H100), 8 up to 64 packs (K = 32 floats is one
/// 128-byte row per group), 32 above. On the H100, 8 lanes beat 32 on M1 by
/// 11% at fp32 K = 128 (32 packs) and by 19% at bf16 K = 512 (64 packs; M2:
/// 8%); at fp32 K = 512 (128 packs) 32 lanes were 15% faster on M1.
constexpr int sddmm_nz_lanes(int packs) { return packs <= 4 ? 4 : packs > 64 ? 32 : 8; }

/// out(dst(e)) = (scaled ? values(dst(e)) : 1) * <X_rows(e), Y_cols(e)> for
/// every layout position e < rows.extent(0); dst(e) = e unless `Permuted`.
/// rows carries sddmm_one_row_bit in the positions of every batch of V
/// positions that lie in one row (mark_one_row_batches), and only there.
/// Requires K % (16 / sizeof(TI)) == 0 and 16-byte aligned rows of X and Y.
/// MinTeams: teams of 256 threads per multiprocessor that the register use
/// must allow (LaunchBounds): 1 leaves up to 255 registers, 2 caps them at
/// 128, 3 at 80. Guarded: K's
/// packs do not fill every lane in every round (packs % V != 0); the lanes
/// past K then leave the pack loop (4 or 8 lanes) or skip their loads (32
/// lanes). Unguarded, the loads are unconditional and the compiler keeps them
/// all in flight. Hinted: cols carry sddmm_cold_bit on the indices whose
/// streamed rows are not to be kept in L2 (SddmmL2Policy).
template <int V, bool Permuted, int MinTeams, bool Guarded, bool Hinted, class ExecutionSpace, class T, class TI,
          class Mem>
void sddmm_nzsplit_kernel(const ExecutionSpace& exec, Kokkos::View<const ordinal_t*, Mem> rows,
                          Kokkos::View<const ordinal_t*, Mem> cols, Kokkos::View<const offset_t*, Mem> dst,
                          Kokkos::View<const T*, Mem> values, Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> X,
                          Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> Y, Kokkos::View<T*, Mem> out, bool scaled,
                          const SddmmNzLaunch& launch) {
  using Acc = sddmm_acc_t<TI>;
  using Pack = SddmmPack<TI>;
  const std::int64_t npos = rows.extent(0);
  if (npos == 0) return;
  const int K = static_cast<int>(X.extent(1));
  const int npacks = K / Pack::width;
  if (!Guarded && npacks % V != 0)
    throw UsageError("sddmm_nzsplit_kernel: K = " + std::to_string(K) + " leaves lanes idle; run it Guarded");
  const std::size_t ldx = X.stride(0), ldy = Y.stride(0);
  const TI* xdata = X.data();
  const TI* ydata = Y.data();

  if constexpr (is_host_space_v<ExecutionSpace>) {
    Kokkos::parallel_for(
        "kfactor::sddmm_nzsplit_host", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, npos),
        KOKKOS_LAMBDA(std::int64_t e) {
          const TI* const y[1] = {ydata + static_cast<std::size_t>(Hinted ? cols(e) & ~sddmm_cold_bit : cols(e)) * ldy};
          Acc s[1];
          sddmm_host_dots<Acc, 1, 32>(xdata + static_cast<std::size_t>(rows(e) & ~sddmm_one_row_bit) * ldx, y, K, s);
          const offset_t d = Permuted ? dst(e) : e;
          out(d) = scaled ? static_cast<T>(values(d) * static_cast<T>(s[0])) : static_cast<T>(s[0]);
        });
  } else {
    // Unbounded (MinTeams 1), the 32-lane form takes 254 registers to keep
    // its slots' loads in flight, and one team of 8 warps per multiprocessor.
    using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, MinTeams>>;
    using Member = typename Policy::member_type;
    // A 32-lane group is a whole warp and takes the one-row branch as one, so
    // it shuffles slot indices where it needs them; narrower groups share
    // their warp with groups that may branch the other way, so they shuffle
    // every slot's indices before branching.
    constexpr bool warp_group = V == 32;
    constexpr int held = warp_group ? 1 : V;
    constexpr bool leave_early = Guarded && !warp_group;
    // The hinted 32-lane form orders a several-row batch's loads.
    constexpr bool streamed_first = warp_group && Hinted;
    const int groups = launch.team_size, per_group = launch.batches_per_group;
    const std::int64_t nbatches = (npos + V - 1) / V;
    const std::int64_t per_team = std::int64_t(groups) * per_group;
    const std::int64_t league = (nbatches + per_team - 1) / per_team;
    Kokkos::parallel_for(
        "kfactor::sddmm_nzsplit", light_weight(Policy(exec, league, groups, V)), KOKKOS_LAMBDA(const Member& team) {
          const std::int64_t first = team.league_rank() * per_team;
          const SddmmL2Policy l2 = SddmmL2Policy::make();
          // Packs of staged row r and of streamed index c (its cold bit
          // cleared and turned into the load's policy when Hinted), loaded in
          // program order when `in_order` (std::true_type; Hinted only).
          // With hints, the staged rows are marked to stay in L1 and the
          // streamed rows not to enter it (see the file's comment).
          const auto x_pack = [&](ordinal_t r, int q, auto in_order) {
            const Pack* p = reinterpret_cast<const Pack*>(xdata + static_cast<std::size_t>(r) * ldx) + q;
            return sddmm_load_hinted<decltype(in_order)::value, Hinted ? SddmmL1::keep : SddmmL1::normal>(p, l2.evict);
          };
          const auto y_pack = [&](ordinal_t c, int q, auto in_order) {
            const ordinal_t j = Hinted ? c & ~sddmm_cold_bit : c;
            const Pack* p = reinterpret_cast<const Pack*>(ydata + static_cast<std::size_t>(j) * ldy) + q;
            return Hinted ? sddmm_load_hinted<decltype(in_order)::value, SddmmL1::no_allocate>(
                                p, (c & sddmm_cold_bit) ? l2.evict : l2.keep)
                          : *p;
          };
          const std::false_type any_order{};
          const std::true_type in_order{};
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, groups), [&](int g) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, V), [&](int lane) {
              // Neighbouring groups take neighbouring batches (shared staged
              // rows in L1). Each batch's indices are loaded one batch ahead,
              // so their memory latency overlaps the previous batch's work.
              // This lane's position in batch `it`; lanes past the layout's
              // end read its last position and do not write.
              const auto position = [&](int it) { return (first + std::int64_t(it) * groups + g) * V + lane; };
              const auto clamped = [&](std::int64_t e) { return e < npos ? e : npos - 1; };
              // The index streams are marked to leave the caches first (read
              // once); so are the values and the output where they run in
              // layout order (a permuted layout writes partial sectors, which
              // should stay until the rest of them is written).
              const auto index_at = [&](const Kokkos::View<const ordinal_t*, Mem>& v, std::int64_t e) {
                return sddmm_load_once<true>(v.data() + e);
              };
              ordinal_t r_next = index_at(rows, clamped(position(0))), c_next = index_at(cols, clamped(position(0)));
              for (int it = 0; it < per_group; ++it) {
                const std::int64_t e = position(it), ec = clamped(e);
                const bool valid = e < npos;
                // One staged row for the whole batch? The plan marks it in
                // every position (lanes past the end read the last batch's).
                const bool same = r_next < 0;
                const ordinal_t r = r_next & ~sddmm_one_row_bit, c = c_next;
                // The output position and scale, loaded now to overlap the
                // dot products.
                const offset_t d = Permuted ? sddmm_load_once<true>(dst.data() + ec) : ec;
                const T scale = scaled ? sddmm_load_once<!Permuted>(values.data() + d) : T(1);
                if (it + 1 < per_group) {
                  const std::int64_t en = clamped(position(it + 1));
                  r_next = index_at(rows, en);
                  c_next = index_at(cols, en);
                }
                // Narrow groups shuffle the rows of a batch of several rows
                // only when some group of their warp has one. In the
                // 80-register form with 8-element packs (bf16, fp16) they
                // read them again instead (L1 hits): held rows spilled 48
                // bytes there against 20, and took M1 bf16 at K = 128 from
                // 7398 to 6408 GFLOP/s, while holding them took fp32 at
                // K = 32 from 3808 to 3878 (H100).
                constexpr bool reread_rows = !warp_group && MinTeams > 2 && Pack::width > 4;
                ordinal_t rs[held] = {}, cs[held];
                if (!warp_group) {
                  for (int s = 0; s < held; ++s) cs[s] = group_shfl(c, s, V);
                  if (!reread_rows && warp_any(!same))
                    for (int s = 0; s < held; ++s) rs[s] = group_shfl(r, s, V);
                }
                const std::int64_t batch_first = e - lane;
                const auto row_of = [&](int s) {
                  if (warp_group) return group_shfl(r, s, V);
                  if (reread_rows) return rows(clamped(batch_first + s)) & ~sddmm_one_row_bit;
                  return rs[s];
                };
                const auto col_of = [&](int s) { return warp_group ? group_shfl(c, s, V) : cs[s]; };
                Acc p[V];
                for (int s = 0; s < V; ++s) p[s] = Acc(0);
                // In the 32-lane form every lane runs the same pack
                // iterations (a lane past K loads nothing), so that the whole
                // warp reaches the shuffles in col_of and row_of. A 4- or 8-lane
                // group shuffles nothing in the pack loop, so its lanes past
                // K leave it: against guarded loads that took bf16 at K = 32
                // (4 packs for 8 lanes) on M1 from 2479 to 3176 GFLOP/s
                // (H100, kernel time).
                if (same) {
                  for (int q0 = 0; leave_early ? q0 + lane < npacks : q0 < npacks; q0 += V) {
                    const int q = q0 + lane;
                    const bool active = !Guarded || leave_early || q < npacks;
                    Acc xa[Pack::width] = {};
                    if (active) {
                      const Pack xp = x_pack(r, q, any_order);
                      for (int w = 0; w < Pack::width; ++w) xa[w] = sddmm_to_acc<Acc>(xp.v[w]);
                    }
                    // At 128 registers, 4- and 8-lane groups issue the
                    // loads of `step` slots before their products (at 80
                    // registers that spilled 64 bytes against 36).
                    constexpr int step = warp_group || MinTeams > 2 ? 1 : V;
                    for (int s0 = 0; s0 < V; s0 += step) {
                      Pack yp[step];
                      for (int s = 0; s < step; ++s) {
                        const ordinal_t cc = col_of(s0 + s);
                        if (active) yp[s] = y_pack(cc, q, any_order);
                      }
                      if (active)
                        for (int s = 0; s < step; ++s)
                          for (int w = 0; w < Pack::width; ++w) p[s0 + s] += xa[w] * sddmm_to_acc<Acc>(yp[s].v[w]);
                    }
                  }
                } else if (streamed_first) {
                  // Every streamed load of the batch, then the staged ones
                  // (see the file's comment on load order).
                  for (int q0 = 0; q0 < npacks; q0 += V) {
                    const int q = q0 + lane;
                    const bool active = !Guarded || q < npacks;
                    Pack yp[V];
                    for (int s = 0; s < V; ++s) {
                      const ordinal_t cc = col_of(s);
                      if (active) yp[s] = y_pack(cc, q, in_order);
                    }
                    for (int s = 0; s < V; ++s) {
                      const ordinal_t rr = row_of(s);
                      if (active) {
                        const Pack xp = x_pack(rr, q, in_order);
                        for (int w = 0; w < Pack::width; ++w)
                          p[s] += sddmm_to_acc<Acc>(xp.v[w]) * sddmm_to_acc<Acc>(yp[s].v[w]);
                      }
                    }
                  }
                } else {
                  for (int q0 = 0; leave_early ? q0 + lane < npacks : q0 < npacks; q0 += V) {
                    const int q = q0 + lane;
                    const bool active = !Guarded || leave_early || q < npacks;
                    constexpr int step = warp_group || MinTeams > 2 ? 1 : V / 2 > 4 ? 4 : V / 2;
                    for (int s0 = 0; s0 < V; s0 += step) {
                      Pack xp[step], yp[step];
                      for (int s = 0; s < step; ++s) {
                        const ordinal_t rr = row_of(s0 + s), cc = col_of(s0 + s);
                        if (active) {
                          xp[s] = x_pack(rr, q, any_order);
                          yp[s] = y_pack(cc, q, any_order);
                        }
                      }
                      if (active)
                        for (int s = 0; s < step; ++s)
                          for (int w = 0; w < Pack::width; ++w)
                            p[s0 + s] += sddmm_to_acc<Acc>(xp[s].v[w]) * sddmm_to_acc<Acc>(yp[s].v[w]);
                    }
                  }
                }
                group_transposed_sum<V>(p, lane);
                if (valid)
                  sddmm_store_once<!Permuted>(
                      out.data() + d, scaled ? static_cast<T>(scale * static_cast<T>(p[0])) : static_cast<T>(p[0]));
              }
            });
          });
        });
  }
}

}  // namespace kfactor::detail
