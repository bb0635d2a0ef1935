#pragma once
/// \file
/// Portable CSR x dense SpMM written once in Kokkos:
///   C = alpha * A * B + beta * C,  A: m x n CSR, B: n x k, C: m x k (row-major).
/// One team handles `rows_per_team` rows (one team thread per row) and the
/// vector lanes of that thread run over the k columns, so a nonzero's row of B
/// is read contiguously (coalesced on a GPU). On a host space one thread owns
/// a row and adds alpha*a_ij*B(j,:) nonzero by nonzero (a vectorised axpy on
/// contiguous rows). Accumulation is in T with the nonzeros of a row in stored
/// order, so the result is deterministic.

#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

namespace kfactor::detail {

/// Launch shape of the row-team kernels of kfactor (SpMM, NMF sweeps): a
/// tuning trait keyed on whether the space runs on the host.
template <class ExecutionSpace>
struct RowTeamShape {
  static constexpr bool host = is_host_space_v<ExecutionSpace>;
  /// Vector lanes per row for an inner dimension of k (a power of two, at most 32).
  static int vector_length(int k) {
    if constexpr (host) {
      (void)k;
      return 1;
    } else {
      int v = 1;
      while (v < k && v < 32) v *= 2;
      return v;
    }
  }
  /// Rows per team (= team threads on a device; a serial chunk on a host).
  static int rows_per_team(int k) {
    if constexpr (host) {
      (void)k;
      return 16;
    } else {
      return 256 / vector_length(k) > 0 ? 256 / vector_length(k) : 1;
    }
  }
};

template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_portable(const ExecutionSpace& exec, typename CV::non_const_value_type alpha,
                   const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta,
                   const CV& C) {
  using S = typename CV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Shape = RowTeamShape<ExecutionSpace>;
  const int m = A.num_rows();
  const int k = static_cast<int>(C.extent(1));
  if (m == 0 || k == 0) return;
  const int vlen = Shape::vector_length(k);
  const int rpt = Shape::rows_per_team(k);
  const int league = (m + rpt - 1) / rpt;
  auto row_map = A.row_map;
  auto entries = A.entries;
  auto values = A.values;
  const Policy policy = Shape::host ? Policy(exec, league, 1, 1) : Policy(exec, league, rpt, vlen);
  if constexpr (Shape::host) {
    // Host: row i of C is accumulated nonzero by nonzero over contiguous rows
    // of B (the inner loop over the k columns vectorises).
    Kokkos::parallel_for(
        "kfactor::spmm_portable_host", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m), KOKKOS_LAMBDA(int i) {
          for (int c = 0; c < k; ++c) C(i, c) = beta == S(0) ? S(0) : beta * C(i, c);
          for (auto e = row_map(i); e < row_map(i + 1); ++e) {
            const S a = alpha * S(values(e));
            const auto j = entries(e);
            for (int c = 0; c < k; ++c) C(i, c) += a * S(B(j, c));
          }
        });
  } else {
    // Device: a team thread per row, vector lanes over the k columns, each
    // lane accumulating its columns in a register over the row's nonzeros.
    Kokkos::parallel_for(
        "kfactor::spmm_portable", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
          const int r0 = team.league_rank() * rpt;
          const int r1 = r0 + rpt < m ? r0 + rpt : m;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](int i) {
            const auto e0 = row_map(i), e1 = row_map(i + 1);
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, k), [&](int c) {
              S acc = S(0);
              for (auto e = e0; e < e1; ++e) acc += S(values(e)) * S(B(entries(e), c));
              C(i, c) = alpha * acc + (beta == S(0) ? S(0) : beta * C(i, c));
            });
          });
        });
  }
}

}  // namespace kfactor::detail
