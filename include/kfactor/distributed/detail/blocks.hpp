#pragma once
/// \file
/// Row blocks of CSR and dense matrices (copies owned by one rank).

#include <kfactor/core/convert.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::distributed::detail {

/// Rows [r0, r1) of A as a CSR of their own (column ids unchanged).
template <class ExecutionSpace, class T, class Mem>
CsrMatrix<T, Mem> csr_rows(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& A, ordinal_t r0, ordinal_t r1) {
  offset_t e0 = 0, e1 = 0;
  Kokkos::deep_copy(exec, e0, Kokkos::subview(A.row_map, r0));
  Kokkos::deep_copy(exec, e1, Kokkos::subview(A.row_map, r1));
  exec.fence();
  CsrMatrix<T, Mem> out;
  out.num_cols = A.num_cols;
  out.row_map = Kokkos::View<offset_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::block_row_map"),
                                             std::size_t(r1 - r0) + 1);
  out.entries = Kokkos::View<ordinal_t*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::block_entries"),
                                              std::size_t(e1 - e0));
  out.values = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::block_values"),
                                     std::size_t(e1 - e0));
  auto rm = A.row_map;
  auto orm = out.row_map;
  Kokkos::parallel_for(
      "kfactor::distributed::csr_rows", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, r1 - r0 + 1),
      KOKKOS_LAMBDA(ordinal_t i) { orm(i) = rm(r0 + i) - e0; });
  Kokkos::deep_copy(exec, out.entries, Kokkos::subview(A.entries, Kokkos::make_pair(e0, e1)));
  Kokkos::deep_copy(exec, out.values, Kokkos::subview(A.values, Kokkos::make_pair(e0, e1)));
  exec.fence();
  return out;
}

/// The entries of A in columns [c0, c1), as a CSR with all of A's rows and
/// c1 - c0 columns (ids shifted by -c0); order within rows kept.
template <class ExecutionSpace, class T, class Mem>
CsrMatrix<T, Mem> csr_column_block(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& A, ordinal_t c0, ordinal_t c1) {
  return select_entries(exec, A, c1 - c0, c0, KOKKOS_LAMBDA(ordinal_t, ordinal_t c) { return c >= c0 && c < c1; });
}

/// Nonzeros per row of A (host).
template <class T, class Mem>
std::vector<offset_t> row_counts(const CsrMatrix<T, Mem>& A) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A.row_map);
  std::vector<offset_t> c(static_cast<std::size_t>(A.num_rows()));
  for (std::size_t r = 0; r < c.size(); ++r) c[r] = h(r + 1) - h(r);
  return c;
}

/// Rows [r0, r1) and columns [c0, c1) of a dense matrix, copied (LayoutRight).
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> dense_block(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& A, std::int64_t r0,
                                std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  DenseMatrix<T, Mem> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::dense_block"), r1 - r0, c1 - c0);
  auto sub = Kokkos::subview(A, Kokkos::make_pair(r0, r1), Kokkos::make_pair(c0, c1));
  Kokkos::parallel_for(
      "kfactor::distributed::dense_block",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {out.extent(0), out.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { out(i, j) = sub(i, j); });
  exec.fence();
  return out;
}

}  // namespace kfactor::distributed::detail
