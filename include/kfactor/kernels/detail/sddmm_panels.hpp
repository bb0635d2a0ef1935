#pragma once
/// \file
/// The panel SDDMM kernel (SddmmKernel::panels; beyond the paper): the
/// paper's SM-L2 staging, computed in the nonzero-split kernel's batches.
///
/// Each work item (an SddmmBlock of the panel layout) stages its panel's
/// staged rows in team scratch, whole (no K-slices), then walks its nonzeros
/// in batches of V, ordered by streamed index: the nonzeros of one streamed
/// row in a panel are adjacent, so that row comes from L2 once per panel and
/// from L1 for the rest, while the staged rows come from scratch. Panels
/// hold what 32 KB of scratch holds (Kokkos' CUDA backend caps a team's at
/// 40 KB), 64 rows at fp32 K = 128. On a power-law S (the peers' M1), such
/// panels with the heaviest rows first leave about half as many (panel,
/// streamed row) pairs as nonzeros (an analytic count on M1's distribution:
/// 51%). Nsight Compute on the H100 (M1, fp32, K = 128) saw the L1 hit rate
/// rise from 26% to 48% and the L2 throughput fall from 81% to 61% of peak,
/// against the nonzero-split kernel; the kernel is then latency-bound (two
/// teams of 256 per multiprocessor at 128 registers). A group of V lanes
/// splits K in 16-byte packs and reduces its V dot products with nzsplit's
/// transposed butterfly (sddmm_nzsplit.hpp).

#include <kfactor/core/detail/light_weight.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>
#include <kfactor/kernels/detail/sddmm_nzsplit.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kfactor::detail {

/// The panel layout's indices per nonzero on a device. Wide: lrow (into
/// active_rows), the streamed index and S's position. Compact, where the
/// streamed indices fit 24 bits and S's positions 32 (half the bytes):
/// packed = streamed index << 8 | row within the panel, and dst32.
template <class Mem>
struct SddmmPanelIndex {
  Kokkos::View<const ordinal_t*, Mem> lrow, cols;
  Kokkos::View<const offset_t*, Mem> dst;
  Kokkos::View<const std::uint32_t*, Mem> packed, dst32;
};

/// out(dst(e)) = (scaled ? values(dst(e)) : 1) * <X_row(e), Y_cols(e)> for
/// every position e of the panel layout, row(e) = active_rows(lrow(e)); the
/// indices are `index`'s compact ones if Compact (devices only), else its
/// wide ones.
/// `panel_rows` bounds every block's nrows (the scratch per team is
/// panel_rows rows of K). Requires K % (16 / sizeof(TI)) == 0 and 16-byte
/// aligned rows of X and Y (devices). Guarded as in sddmm_nzsplit_kernel.
/// Teams of 256 threads (groups * V), MinTeams of them per multiprocessor
/// (LaunchBounds).
template <int V, int MinTeams, bool Guarded, bool Compact, class ExecutionSpace, class T, class TI, class Mem>
void sddmm_panels_kernel(const ExecutionSpace& exec, Kokkos::View<const SddmmBlock*, Mem> blocks,
                         Kokkos::View<const ordinal_t*, Mem> active_rows, const SddmmPanelIndex<Mem>& index,
                         Kokkos::View<const T*, Mem> values, Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> X,
                         Kokkos::View<const TI**, Kokkos::LayoutRight, Mem> Y, Kokkos::View<T*, Mem> out, bool scaled,
                         int panel_rows, int groups) {
  using Acc = sddmm_acc_t<TI>;
  using Pack = SddmmPack<TI>;
  const std::int64_t nblocks = blocks.extent(0);
  if (nblocks == 0) return;
  const int K = static_cast<int>(X.extent(1));
  const std::size_t ldx = X.stride(0), ldy = Y.stride(0);
  const TI* xdata = X.data();
  const TI* ydata = Y.data();
  const auto lrow = index.lrow;
  const auto cols = index.cols;
  const auto dst = index.dst;
  const auto packed = index.packed;
  const auto dst32 = index.dst32;

  if constexpr (is_host_space_v<ExecutionSpace>) {
    static_assert(!Compact, "the compact panel index is for devices");
    (void)panel_rows;
    (void)groups;
    Kokkos::parallel_for(
        "kfactor::sddmm_panels_host", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, cols.extent(0)),
        KOKKOS_LAMBDA(std::int64_t e) {
          const TI* const y[1] = {ydata + static_cast<std::size_t>(cols(e)) * ldy};
          Acc s[1];
          sddmm_host_dots<Acc, 1, 32>(xdata + static_cast<std::size_t>(active_rows(lrow(e))) * ldx, y, K, s);
          const offset_t d = dst(e);
          out(d) = scaled ? static_cast<T>(values(d) * static_cast<T>(s[0])) : static_cast<T>(s[0]);
        });
  } else {
    using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<256, MinTeams>>;
    using Member = typename Policy::member_type;
    using Scratch =
        Kokkos::View<Pack*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    constexpr bool warp_group = V == 32;
    constexpr int held = warp_group ? 1 : V;
    constexpr bool leave_early = Guarded && !warp_group;
    const int npacks = K / Pack::width;
    const std::size_t staged = static_cast<std::size_t>(panel_rows) * npacks;
    Kokkos::parallel_for(
        "kfactor::sddmm_panels",
        light_weight(
            Policy(exec, nblocks, groups, V).set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(staged)))),
        KOKKOS_LAMBDA(const Member& team) {
          const SddmmBlock blk = blocks(team.league_rank());
          Scratch sx(team.team_scratch(0), staged);
          // Staged rows are read once per panel: they leave L2 first, so
          // that the streamed rows stay.
          const std::uint64_t evict_first = SddmmL2Policy::make().evict;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blk.nrows), [&](int i) {
            const Pack* src = reinterpret_cast<const Pack*>(
                xdata + static_cast<std::size_t>(active_rows(blk.active_begin + i)) * ldx);
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, npacks), [&](int q) {
              sx(static_cast<std::size_t>(i) * npacks + q) = sddmm_load_hinted(src + q, evict_first);
            });
          });
          team.team_barrier();
          // Every group runs the same number of batches (shuffles of whole
          // warps); positions past the block's end repeat its last one and
          // do not write.
          const std::int64_t per_round = std::int64_t(groups) * V;
          const int rounds = static_cast<int>((blk.end - blk.begin + per_round - 1) / per_round);
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, groups), [&](int g) {
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, V), [&](int lane) {
              const auto position = [&](int it) { return blk.begin + (std::int64_t(it) * groups + g) * V + lane; };
              const auto clamped = [&](std::int64_t e) { return e < blk.end ? e : blk.end - 1; };
              // Row within the panel and streamed index of position e. The
              // index streams are read once and marked to leave the caches
              // first (the values and the output, scattered over the panel's
              // rows, keep the normal policy).
              const auto indices = [&](std::int64_t e, int& r, ordinal_t& c) {
                if (Compact) {  // (not constexpr: extended lambdas capture nothing first there)
                  const std::uint32_t u = sddmm_load_once<true>(packed.data() + e);
                  r = static_cast<int>(u & 0xffu);
                  c = static_cast<ordinal_t>(u >> 8);
                } else {
                  r = sddmm_load_once<true>(lrow.data() + e) - blk.active_begin;
                  c = sddmm_load_once<true>(cols.data() + e);
                }
              };
              int r_next;
              ordinal_t c_next;
              indices(clamped(position(0)), r_next, c_next);
              for (int it = 0; it < rounds; ++it) {
                const std::int64_t e = position(it), ec = clamped(e);
                const int r = r_next;
                const ordinal_t c = c_next;
                const offset_t d = Compact ? offset_t(sddmm_load_once<true>(dst32.data() + ec))
                                           : sddmm_load_once<true>(dst.data() + ec);
                const T scale = scaled ? values(d) : T(1);
                if (it + 1 < rounds) indices(clamped(position(it + 1)), r_next, c_next);
                int rs[held];
                ordinal_t cs[held];
                if (!warp_group)
                  for (int s = 0; s < held; ++s) {
                    rs[s] = group_shfl(r, s, V);
                    cs[s] = group_shfl(c, s, V);
                  }
                const auto row_of = [&](int s) { return warp_group ? group_shfl(r, s, V) : rs[s]; };
                const auto col_of = [&](int s) { return warp_group ? group_shfl(c, s, V) : cs[s]; };
                Acc p[V];
                for (int s = 0; s < V; ++s) p[s] = Acc(0);
                for (int q0 = 0; leave_early ? q0 + lane < npacks : q0 < npacks; q0 += V) {
                  const int q = q0 + lane;
                  const bool active = !Guarded || leave_early || q < npacks;
                  // The streamed packs of `step` slots are loaded first and
                  // all in flight; each staged pack is read from scratch
                  // only when its products are due, so it holds no register
                  // across the wait.
                  constexpr int step = warp_group ? 1 : MinTeams > 2 ? V / 2 : V;
                  for (int s0 = 0; s0 < V; s0 += step) {
                    Pack yp[step];
                    for (int s = 0; s < step; ++s) {
                      const ordinal_t cc = col_of(s0 + s);
                      if (active) yp[s] = reinterpret_cast<const Pack*>(ydata + static_cast<std::size_t>(cc) * ldy)[q];
                    }
                    for (int s = 0; s < step; ++s) {
                      const int rr = row_of(s0 + s);
                      if (active) {
                        const Pack xp = sx(static_cast<std::size_t>(rr) * npacks + q);
                        for (int w = 0; w < Pack::width; ++w)
                          p[s0 + s] += sddmm_to_acc<Acc>(xp.v[w]) * sddmm_to_acc<Acc>(yp[s].v[w]);
                      }
                    }
                  }
                }
                group_transposed_sum<V>(p, lane);
                if (e < blk.end) out(d) = scaled ? static_cast<T>(scale * static_cast<T>(p[0])) : static_cast<T>(p[0]);
              }
            });
          });
        });
  }
}

}  // namespace kfactor::detail
