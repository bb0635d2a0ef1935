#pragma once
/// \file
/// BALS reordering (Algorithm 3, done right): rows and columns sorted by
/// descending nonzero count, ties kept in original order (stable sort), as
/// explicit permutations. The printed listing is an O(m^2) selection with no
/// permutation output; a stable sort gives the same order in O(m log m).

#include <kfactor/core/convert.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <numeric>
#include <vector>

namespace kfactor::als {

/// new_to_old[i] is the original id of new position i; old_to_new inverts it.
struct Permutation {
  std::vector<ordinal_t> new_to_old;
  std::vector<ordinal_t> old_to_new;
};

/// Stable descending-count order of `counts`.
inline Permutation order_by_count(const std::vector<std::int64_t>& counts) {
  Permutation p;
  p.new_to_old.resize(counts.size());
  std::iota(p.new_to_old.begin(), p.new_to_old.end(), ordinal_t(0));
  std::stable_sort(p.new_to_old.begin(), p.new_to_old.end(),
                   [&](ordinal_t a, ordinal_t b) { return counts[a] > counts[b]; });
  p.old_to_new.resize(counts.size());
  for (std::size_t i = 0; i < counts.size(); ++i) p.old_to_new[p.new_to_old[i]] = ordinal_t(i);
  return p;
}

/// Row and column permutations of a host CSR by descending nonzero count.
template <class T>
std::pair<Permutation, Permutation> count_orderings(const CsrMatrix<T, Kokkos::HostSpace>& A) {
  std::vector<std::int64_t> rc(A.num_rows()), cc(A.num_cols, 0);
  for (ordinal_t r = 0; r < A.num_rows(); ++r) {
    rc[r] = std::int64_t(A.row_map(r + 1) - A.row_map(r));
    for (auto e = A.row_map(r); e < A.row_map(r + 1); ++e) ++cc[A.entries(e)];
  }
  return {order_by_count(rc), order_by_count(cc)};
}

/// P_r A P_c^T as a sorted CSR in ExecutionSpace's memory: row i of the result
/// is row rows.new_to_old[i] of A, column j is column cols.new_to_old[j].
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> permute(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                  const Permutation& rows, const Permutation& cols) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::View<ordinal_t*, MemorySpace> r2n(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::perm_r"),
                                            rows.old_to_new.size());
  Kokkos::View<ordinal_t*, MemorySpace> c2n(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::perm_c"),
                                            cols.old_to_new.size());
  Kokkos::deep_copy(
      exec, r2n,
      Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(rows.old_to_new.data(), rows.old_to_new.size()));
  Kokkos::deep_copy(
      exec, c2n,
      Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(cols.old_to_new.data(), cols.old_to_new.size()));
  auto orig_rows = expand_rows(exec, A);
  Kokkos::View<ordinal_t*, MemorySpace> nr(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::perm_rows"),
                                           A.nnz());
  Kokkos::View<ordinal_t*, MemorySpace> nc(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::perm_cols"),
                                           A.nnz());
  auto entries = A.entries;
  Kokkos::parallel_for(
      "kfactor::als::permute", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.nnz()), KOKKOS_LAMBDA(offset_t e) {
        nr(e) = r2n(orig_rows(e));
        nc(e) = c2n(entries(e));
      });
  auto out = kfactor::detail::csr_from_triplets<ExecutionSpace, T, MemorySpace>(
      exec, Kokkos::View<const ordinal_t*, MemorySpace>(nr), Kokkos::View<const ordinal_t*, MemorySpace>(nc),
      Kokkos::View<const T*, MemorySpace>(A.values), A.num_rows(), A.num_cols);
  exec.fence();
  return out;
}

}  // namespace kfactor::als
