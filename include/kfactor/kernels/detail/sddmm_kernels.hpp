#pragma once
/// \file
/// SDDMM kernel building blocks, written once in Kokkos (TeamPolicy with
/// vector lanes: on CUDA a team "thread" is a group of `V` lanes of a warp, on
/// OpenMP the lanes are a SIMD loop). The plan (kfactor/sddmm/plan.hpp) decides
/// which one runs and with what parameters; these functions only launch.
///
/// Naming: the *staged* dense matrix X is the one whose rows are held on chip
/// (registers in the row-split kernel, team scratch in SM-L2 / SM-SM); the
/// *streamed* matrix Y is read per nonzero through the caches. In the normal
/// orientation X = A (rows of S) and Y = B (columns of S); in the transposed
/// orientation (eq. 4 chose to stage B) X = B, Y = A and the plan's layout walks
/// S by columns.
///
/// Every kernel computes out(dst) = (scaled ? s : 1) * <X_r, Y_c> with the dot
/// product accumulated in `Acc` (float for float/half/bfloat16 inputs, double
/// for double inputs).

#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kfactor::detail {

/// Accumulator type for an input element type: double for double, float
/// otherwise (float, Kokkos::Experimental::half_t, bhalf_t).
template <class TI>
using sddmm_acc_t = std::conditional_t<std::is_same_v<std::remove_cv_t<TI>, double>, double, float>;

/// 16 bytes of input elements, loaded with one vector instruction.
template <class TI>
struct alignas(16) SddmmPack {
  static constexpr int width = static_cast<int>(16 / sizeof(TI));
  TI v[width];
};

template <class Acc, class TI>
KOKKOS_FORCEINLINE_FUNCTION Acc sddmm_to_acc(const TI& x) {
  if constexpr (std::is_same_v<std::remove_cv_t<TI>, Acc>)
    return x;
  else
    return static_cast<Acc>(x);
}

/// G partial sums reduced together across the vector lanes (one reduction for
/// G nonzeros: the staged row's registers are reused G times, and G streamed
/// rows are in flight at once).
template <class Acc, int G>
struct SddmmSums {
  Acc v[G];
  KOKKOS_INLINE_FUNCTION SddmmSums() {
    for (int g = 0; g < G; ++g) v[g] = Acc(0);
  }
  KOKKOS_INLINE_FUNCTION SddmmSums& operator+=(const SddmmSums& o) {
    for (int g = 0; g < G; ++g) v[g] += o.v[g];
    return *this;
  }
};

/// G dot products of x with y[0..G) over K elements on a host core: one
/// partial sum per SIMD lane and per row (G vector accumulators of `Bytes`
/// bytes of Acc, one x load per G FMAs), added together at the end; the
/// caller takes 32-byte registers below 64 bytes' worth of K, whose serial
/// lane sums would otherwise dominate. The cross-lane form of the device
/// path, run with one lane on a host, is a serial chain of scalar FMAs per
/// row: 16-18 GFLOP/s on 2 cores with every operand in cache, where
/// torch.sparse.sampled_addmm reached 43-65.
template <class Acc, int G, int Bytes, class TI>
KOKKOS_INLINE_FUNCTION void sddmm_host_dots(const TI* x, const TI* const (&y)[G], int K, Acc (&out)[G]) {
  constexpr int L = Bytes / static_cast<int>(sizeof(Acc));
  Acc acc[G][L];
  for (int g = 0; g < G; ++g)
    for (int l = 0; l < L; ++l) acc[g][l] = Acc(0);
  int k = 0;
  for (; k + L <= K; k += L) {
#if defined(_OPENMP) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#pragma omp simd
#endif
    for (int l = 0; l < L; ++l) {
      const Acc xv = sddmm_to_acc<Acc>(x[k + l]);
      for (int g = 0; g < G; ++g) acc[g][l] += xv * sddmm_to_acc<Acc>(y[g][k + l]);
    }
  }
  for (int g = 0; g < G; ++g) {
    Acc s = Acc(0);
    for (int l = 0; l < L; ++l) s += acc[g][l];
    for (int kk = k; kk < K; ++kk) s += sddmm_to_acc<Acc>(x[kk]) * sddmm_to_acc<Acc>(y[g][kk]);
    out[g] = s;
  }
}

/// A row-split work item: nonzeros [begin, begin + len) of the plan's layout,
/// all in staged row `row`.
struct SddmmItem {
  offset_t begin = 0;
  ordinal_t row = 0;
  ordinal_t len = 0;
};

/// An SM-L2 block: T_i (or fewer) consecutive entries [active_begin,
/// active_begin + nrows) of the active-row list and their nonzeros
/// [begin, end) of the tiled layout.
struct SddmmBlock {
  offset_t begin = 0, end = 0;
  ordinal_t active_begin = 0, nrows = 0;
};

/// Launch parameters shared by the team kernels.
struct SddmmLaunch {
  int vector_length = 1;   ///< lanes per work item
  int team_size = 1;       ///< work items processed concurrently per team
  int items_per_team = 1;  ///< work items per team (>= team_size)
};

}  // namespace kfactor::detail

template <class Acc, int G>
struct Kokkos::reduction_identity<kfactor::detail::SddmmSums<Acc, G>> {
  KOKKOS_FORCEINLINE_FUNCTION static kfactor::detail::SddmmSums<Acc, G> sum() { return {}; }
};

namespace kfactor::detail {

/// One thread per nonzero; the row is found by binary search in the row map.
/// The reference for tests and benchmarks (no tiling, no staging, no vector
/// lanes): out(e) = (scaled ? s_e : 1) * sum_k A(i,k) B(j,k).
template <class ExecutionSpace, class T, class TI, class Mem>
void sddmm_reference_kernel(const ExecutionSpace& exec, Kokkos::View<const offset_t*, Mem> row_map,
                            Kokkos::View<const ordinal_t*, Mem> entries, Kokkos::View<const T*, Mem> values,
                            Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> A,
                            Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> B, Kokkos::View<T*, Mem> out,
                            bool scaled) {
  using Acc = sddmm_acc_t<TI>;
  const offset_t nnz = entries.extent(0);
  const ordinal_t m = static_cast<ordinal_t>(row_map.extent(0)) - 1;
  const int K = static_cast<int>(A.extent(1));
  Kokkos::parallel_for(
      "kfactor::sddmm_reference", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nnz), KOKKOS_LAMBDA(offset_t e) {
        // Largest i with row_map(i) <= e (rows may be empty).
        ordinal_t lo = 0, hi = m - 1;
        while (lo < hi) {
          const ordinal_t mid = lo + (hi - lo + 1) / 2;
          if (row_map(mid) <= e)
            lo = mid;
          else
            hi = mid - 1;
        }
        const ordinal_t j = entries(e);
        Acc s = 0;
        for (int k = 0; k < K; ++k) s += sddmm_to_acc<Acc>(A(lo, k)) * sddmm_to_acc<Acc>(B(j, k));
        out(e) = scaled ? static_cast<T>(values(e) * static_cast<T>(s)) : static_cast<T>(s);
      });
}

/// Row-split / nonzero-split kernel (beyond the paper; RoDe-like balance).
/// Each work item (one row segment of at most `chunk` nonzeros; long rows are
/// split, short rows are separate items grouped `team_size` to a team) is
/// taken by one group of V vector lanes. The lanes split K in 16-byte packs
/// (`Vec`) or single elements; G nonzeros share one cross-lane reduction, so
/// the staged row's pack is loaded once per G streamed rows.
/// `Permuted`: the layout is the plan's own (column index `cols(e)`, output and
/// value position `dst(e)`); otherwise it is S's CSR itself (dst(e) = e).
template <bool Vec, bool Permuted, int G, class ExecutionSpace, class T, class TI, class Mem>
void sddmm_rowsplit_kernel(const ExecutionSpace& exec, Kokkos::View<const SddmmItem*, Mem> items,
                           Kokkos::View<const ordinal_t*, Mem> cols, Kokkos::View<const offset_t*, Mem> dst,
                           Kokkos::View<const T*, Mem> values, Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> X,
                           Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> Y, Kokkos::View<T*, Mem> out, bool scaled,
                           const SddmmLaunch& launch) {
  using Acc = sddmm_acc_t<TI>;
  using Pack = SddmmPack<TI>;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Member = typename Policy::member_type;
  using Sums = SddmmSums<Acc, G>;
  constexpr int W = Vec ? Pack::width : 1;
  const int K = static_cast<int>(X.extent(1));
  const int npacks = (K + W - 1) / W;  // Vec requires K % W == 0
  const std::size_t ldx = X.stride(0), ldy = Y.stride(0);
  const std::int64_t nitems = items.extent(0);
  const int per_team = launch.items_per_team;
  const int V = launch.vector_length;
  const std::int64_t league = (nitems + per_team - 1) / per_team;
  if (league == 0) return;
  const TI* xdata = X.data();
  const TI* ydata = Y.data();
  Kokkos::parallel_for(
      "kfactor::sddmm_rowsplit", Policy(exec, league, launch.team_size, V), KOKKOS_LAMBDA(const Member& team) {
        const std::int64_t first = team.league_rank() * std::int64_t(per_team);
        const int count = static_cast<int>(Kokkos::min<std::int64_t>(per_team, nitems - first));
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, count), [&](int q) {
          const SddmmItem it = items(first + q);
          const TI* xr = xdata + static_cast<std::size_t>(it.row) * ldx;
          for (int g0 = 0; g0 < it.len; g0 += G) {
            const int ng = Kokkos::min(G, it.len - g0);
            const TI* yr[G];
            for (int g = 0; g < G; ++g) {
              const offset_t e = it.begin + g0 + (g < ng ? g : ng - 1);
              yr[g] = ydata + static_cast<std::size_t>(cols(e)) * ldy;
            }
            Sums sums;
            // A plain if on a constant: nvcc refuses a lambda's first capture
            // (K here, V and npacks below) inside `if constexpr`.
            if (is_host_space_v<ExecutionSpace>) {
              if (K >= 256 / int(sizeof(Acc)))
                sddmm_host_dots<Acc, G, 64>(xr, yr, K, sums.v);
              else
                sddmm_host_dots<Acc, G, 32>(xr, yr, K, sums.v);
            } else {
              Kokkos::parallel_reduce(
                  Kokkos::ThreadVectorRange(team, V),
                  [&](int lane, Sums& acc) {
                    Acc loc[G];  // private partial sums: kept in registers
                    for (int g = 0; g < G; ++g) loc[g] = Acc(0);
                    for (int p = lane; p < npacks; p += V) {
                      if constexpr (Vec) {
                        const Pack xp = reinterpret_cast<const Pack*>(xr)[p];
                        // Pack::width, not the local W: nvcc refuses a lambda's first
                        // capture inside `if constexpr`.
                        Acc xa[Pack::width];
                        for (int w = 0; w < Pack::width; ++w) xa[w] = sddmm_to_acc<Acc>(xp.v[w]);
                        for (int g = 0; g < G; ++g) {
                          const Pack yp = reinterpret_cast<const Pack*>(yr[g])[p];
                          for (int w = 0; w < Pack::width; ++w) loc[g] += xa[w] * sddmm_to_acc<Acc>(yp.v[w]);
                        }
                      } else {
                        const Acc xa = sddmm_to_acc<Acc>(xr[p]);
                        for (int g = 0; g < G; ++g) loc[g] += xa * sddmm_to_acc<Acc>(yr[g][p]);
                      }
                    }
                    for (int g = 0; g < G; ++g) acc.v[g] += loc[g];
                  },
                  sums);
            }
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, ng), [&](int g) {
              const offset_t e = it.begin + g0 + g;
              const offset_t d = Permuted ? dst(e) : e;
              const T s = static_cast<T>(sums.v[g]);
              out(d) = scaled ? static_cast<T>(values(d) * s) : s;
            });
          }
        });
      });
}

/// The paper's SM-L2 kernel (Alg. 5, with its bugs fixed): per block, the
/// staged rows of the block's active-row range are copied into team scratch
/// one K-slice [kk, kk + T_k) at a time; every nonzero of the block is then
/// taken by one group of V lanes, which reads the staged slice from scratch
/// and the streamed row from memory (L2), and accumulates
/// out += s * partial (the first slice assigns).
template <class ExecutionSpace, class T, class TI, class Mem>
void sddmm_sm_l2_kernel(const ExecutionSpace& exec, Kokkos::View<const SddmmBlock*, Mem> blocks,
                        Kokkos::View<const ordinal_t*, Mem> active_rows, Kokkos::View<const ordinal_t*, Mem> lrow,
                        Kokkos::View<const ordinal_t*, Mem> cols, Kokkos::View<const offset_t*, Mem> dst,
                        Kokkos::View<const T*, Mem> values, Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> X,
                        Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> Y, Kokkos::View<T*, Mem> out, bool scaled,
                        int tk, int ti, const SddmmLaunch& launch) {
  using Acc = sddmm_acc_t<TI>;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using Scratch =
      Kokkos::View<TI*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int K = static_cast<int>(X.extent(1));
  const std::int64_t nblocks = blocks.extent(0);
  if (nblocks == 0) return;
  const int V = launch.vector_length;
  const std::size_t bytes = Scratch::shmem_size(static_cast<std::size_t>(ti) * tk);
  Kokkos::parallel_for(
      "kfactor::sddmm_sm_l2", Policy(exec, nblocks, launch.team_size, V).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const Member& team) {
        const SddmmBlock blk = blocks(team.league_rank());
        Scratch sh(team.team_scratch(0), static_cast<std::size_t>(ti) * tk);
        const std::int64_t nz = static_cast<std::int64_t>(blk.end - blk.begin);
        for (int kk = 0; kk < K; kk += tk) {
          const int kw = Kokkos::min(tk, K - kk);
          // Stage the active rows' slice: lanes along K (coalesced).
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blk.nrows), [&](int r) {
            const ordinal_t row = active_rows(blk.active_begin + r);
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, kw),
                                 [&](int k) { sh(static_cast<std::size_t>(r) * tk + k) = X(row, kk + k); });
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nz), [&](std::int64_t q) {
            const offset_t e = blk.begin + q;
            const std::size_t lr = static_cast<std::size_t>(lrow(e) - blk.active_begin);
            const ordinal_t c = cols(e);
            Acc partial = 0;
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, kw),
                [&](int k, Acc& s) { s += sddmm_to_acc<Acc>(sh(lr * tk + k)) * sddmm_to_acc<Acc>(Y(c, kk + k)); },
                partial);
            Kokkos::single(Kokkos::PerThread(team), [&]() {
              const offset_t d = dst(e);
              const T p = scaled ? static_cast<T>(values(d) * static_cast<T>(partial)) : static_cast<T>(partial);
              if (kk == 0)
                out(d) = p;
              else
                out(d) += p;
            });
          });
          team.team_barrier();
        }
      });
}

/// The paper's SM-SM kernel (§IV-B): one team per row panel of `t` rows of S;
/// the panel's A rows (t x K) are staged once, then for every column tile of
/// width `t` the tile's B rows (t x K) are staged and each row's nonzeros in
/// the tile are computed from scratch only. Needs 2 t K sizeof(TI) bytes of
/// scratch plus t cursors. Works on S's CSR directly (sorted rows: each row's
/// cursor only moves forward through the tiles).
template <class ExecutionSpace, class T, class TI, class Mem>
void sddmm_sm_sm_kernel(const ExecutionSpace& exec, Kokkos::View<const offset_t*, Mem> row_map,
                        Kokkos::View<const ordinal_t*, Mem> entries, Kokkos::View<const T*, Mem> values,
                        Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> A,
                        Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> B, Kokkos::View<T*, Mem> out, bool scaled,
                        int t, const SddmmLaunch& launch) {
  using Acc = sddmm_acc_t<TI>;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  using Scratch =
      Kokkos::View<TI*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Cursors =
      Kokkos::View<offset_t*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const ordinal_t m = static_cast<ordinal_t>(row_map.extent(0)) - 1;
  const ordinal_t n = static_cast<ordinal_t>(B.extent(0));
  const int K = static_cast<int>(A.extent(1));
  const int V = launch.vector_length;
  if (m <= 0) return;
  const ordinal_t panels = (m + t - 1) / t;
  const ordinal_t tiles = (n + t - 1) / t;
  const std::size_t tile_elems = static_cast<std::size_t>(t) * K;
  const std::size_t bytes = 2 * Scratch::shmem_size(tile_elems) + Cursors::shmem_size(t);
  Kokkos::parallel_for(
      "kfactor::sddmm_sm_sm", Policy(exec, panels, launch.team_size, V).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const Member& team) {
        const ordinal_t r0 = team.league_rank() * t;
        const int nr = Kokkos::min<ordinal_t>(t, m - r0);
        Scratch sa(team.team_scratch(0), tile_elems);
        Scratch sb(team.team_scratch(0), tile_elems);
        Cursors cur(team.team_scratch(0), t);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nr), [&](int r) {
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, K),
                               [&](int k) { sa(static_cast<std::size_t>(r) * K + k) = A(r0 + r, k); });
          Kokkos::single(Kokkos::PerThread(team), [&]() { cur(r) = row_map(r0 + r); });
        });
        const offset_t panel_begin = row_map(r0), panel_end = row_map(r0 + nr);
        team.team_barrier();
        if (panel_begin == panel_end) return;  // uniform across the team
        for (ordinal_t tile = 0; tile < tiles; ++tile) {
          const ordinal_t j0 = tile * t;
          const int nc = Kokkos::min<ordinal_t>(t, n - j0);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nc), [&](int c) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, K),
                                 [&](int k) { sb(static_cast<std::size_t>(c) * K + k) = B(j0 + c, k); });
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, nr), [&](int r) {
            offset_t e = cur(r);
            const offset_t end = row_map(r0 + r + 1);
            while (e < end && entries(e) < j0 + nc) {
              const std::size_t lc = static_cast<std::size_t>(entries(e) - j0);
              Acc s = 0;
              Kokkos::parallel_reduce(
                  Kokkos::ThreadVectorRange(team, K),
                  [&](int k, Acc& acc) {
                    acc +=
                        sddmm_to_acc<Acc>(sa(static_cast<std::size_t>(r) * K + k)) * sddmm_to_acc<Acc>(sb(lc * K + k));
                  },
                  s);
              Kokkos::single(Kokkos::PerThread(team), [&]() {
                out(e) = scaled ? static_cast<T>(values(e) * static_cast<T>(s)) : static_cast<T>(s);
              });
              ++e;
            }
            Kokkos::single(Kokkos::PerThread(team), [&]() { cur(r) = e; });
          });
          team.team_barrier();
        }
      });
}

}  // namespace kfactor::detail
