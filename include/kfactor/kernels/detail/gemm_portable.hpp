#pragma once
/// \file
/// Portable GEMM written once in Kokkos: each team computes a Tile x Tile
/// block of C, staging Tile-deep panels of op(A) and op(B) in team scratch.
/// The fallback when no vendor BLAS serves the operands, and the reference
/// the vendor paths are tested against.

#include <Kokkos_Core.hpp>

namespace kfactor::detail {

template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_portable(const ExecutionSpace& exec, bool ta, bool tb, typename CV::non_const_value_type alpha, const AV& A,
                   const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  using T = typename CV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Scratch = Kokkos::View<T**, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  constexpr int tile = 16;
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int kdim = static_cast<int>(ta ? A.extent(0) : A.extent(1));
  if (m == 0 || n == 0) return;
  const int tiles_m = (m + tile - 1) / tile, tiles_n = (n + tile - 1) / tile;
  const auto scratch = Scratch::shmem_size(tile, tile) * 3;
  Policy policy(exec, tiles_m * tiles_n, Kokkos::AUTO);
  Kokkos::parallel_for(
      "kfactor::gemm_portable", policy.set_scratch_size(0, Kokkos::PerTeam(scratch)),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int i0 = (team.league_rank() / tiles_n) * tile;
        const int j0 = (team.league_rank() % tiles_n) * tile;
        Scratch As(team.team_scratch(0), tile, tile);
        Scratch Bs(team.team_scratch(0), tile, tile);
        Scratch Cs(team.team_scratch(0), tile, tile);  // accumulators of the C tile
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile * tile), [&](int t) { Cs(t / tile, t % tile) = T(0); });
        for (int k0 = 0; k0 < kdim; k0 += tile) {
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile * tile), [&](int t) {
            const int r = t / tile, c = t % tile;
            const int ia = i0 + r, ka = k0 + c;
            As(r, c) = (ia < m && ka < kdim) ? (ta ? A(ka, ia) : A(ia, ka)) : T(0);
            const int kb = k0 + r, jb = j0 + c;
            Bs(r, c) = (kb < kdim && jb < n) ? (tb ? B(jb, kb) : B(kb, jb)) : T(0);
          });
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile), [&](int ii) {
            for (int kk = 0; kk < tile; ++kk) {
              const T a = As(ii, kk);
              for (int jj = 0; jj < tile; ++jj) Cs(ii, jj) += a * Bs(kk, jj);
            }
          });
        }
        team.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, tile), [&](int ii) {
          const int i = i0 + ii;
          if (i >= m) return;
          for (int jj = 0; jj < tile && j0 + jj < n; ++jj) {
            const int j = j0 + jj;
            C(i, j) = alpha * Cs(ii, jj) + (beta == T(0) ? T(0) : beta * C(i, j));
          }
        });
      });
}

}  // namespace kfactor::detail
