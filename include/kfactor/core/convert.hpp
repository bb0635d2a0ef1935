#pragma once
/// \file
/// Conversions between matrix forms, run in an execution space:
/// COO -> CSR, CSR -> CSR transpose, deep copies to another space.
/// Every result is deterministic: rows are sorted by column, whatever the
/// thread count or backend.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kfactor {

namespace detail {

/// Sorted CSR from device triplets; `rows`/`cols`/`vals` have one entry per
/// nonzero, any order, no duplicate (row, col) pairs.
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> csr_from_triplets(const ExecutionSpace& exec,
                                            Kokkos::View<const ordinal_t*, MemorySpace> rows,
                                            Kokkos::View<const ordinal_t*, MemorySpace> cols,
                                            Kokkos::View<const T*, MemorySpace> vals, ordinal_t num_rows,
                                            ordinal_t num_cols) {
  using size_type = offset_t;
  const size_type nnz = rows.extent(0);
  Kokkos::View<std::uint64_t*, MemorySpace> keys(Kokkos::view_alloc(exec, "kfactor::csr_keys"), nnz);
  Kokkos::View<size_type*, MemorySpace> perm(Kokkos::view_alloc(exec, "kfactor::csr_perm"), nnz);
  const auto ncols64 = static_cast<std::uint64_t>(num_cols);
  Kokkos::parallel_for(
      "kfactor::csr_keys", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nnz), KOKKOS_LAMBDA(size_type e) {
        keys(e) = static_cast<std::uint64_t>(rows(e)) * ncols64 + static_cast<std::uint64_t>(cols(e));
        perm(e) = e;
      });
  if (nnz > 1) Kokkos::Experimental::sort_by_key(exec, keys, perm);

  CsrMatrix<T, MemorySpace> out;
  out.num_cols = num_cols;
  out.row_map = Kokkos::View<size_type*, MemorySpace>(Kokkos::view_alloc(exec, "kfactor::row_map"),
                                                      static_cast<size_type>(num_rows) + 1);
  out.entries = Kokkos::View<ordinal_t*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::entries"), nnz);
  out.values =
      Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::values"), nnz);
  auto row_map = out.row_map;
  auto entries = out.entries;
  auto values = out.values;
  const bool has_values = vals.extent(0) == nnz;
  Kokkos::parallel_for(
      "kfactor::csr_scatter", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nnz), KOKKOS_LAMBDA(size_type e) {
        const auto src = perm(e);
        entries(e) = cols(src);
        values(e) = has_values ? vals(src) : T(1);
        const auto r = static_cast<ordinal_t>(keys(e) / ncols64);
        // The first nonzero of each row (and every empty row before it) sets the offsets.
        const ordinal_t prev = e == 0 ? -1 : static_cast<ordinal_t>(keys(e - 1) / ncols64);
        for (ordinal_t q = prev + 1; q <= r; ++q) row_map(q) = e;
      });
  Kokkos::parallel_for(
      "kfactor::csr_tail", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, static_cast<size_type>(num_rows) + 1),
      KOKKOS_LAMBDA(size_type q) {
        // Rows after the last nonzero's row point at nnz.
        const ordinal_t last_row = nnz == 0 ? -1 : static_cast<ordinal_t>(keys(nnz - 1) / ncols64);
        if (static_cast<std::int64_t>(q) > last_row) row_map(q) = nnz;
      });
  return out;
}

}  // namespace detail

/// Checks that every index is inside the declared shape; throws InputError.
template <class T>
void validate_coo(const CooMatrix<T>& coo, const std::string& what = "matrix") {
  if (coo.num_rows < 0 || coo.num_cols < 0 || coo.num_rows > std::numeric_limits<ordinal_t>::max() ||
      coo.num_cols > std::numeric_limits<ordinal_t>::max())
    throw InputError(what + ": shape " + std::to_string(coo.num_rows) + " x " + std::to_string(coo.num_cols) +
                     " is outside 0..2^31-1");
  if (coo.rows.size() != coo.cols.size() || (!coo.values.empty() && coo.values.size() != coo.rows.size()))
    throw InputError(what + ": triplet arrays have different lengths");
  for (std::size_t e = 0; e < coo.rows.size(); ++e) {
    if (coo.rows[e] < 0 || coo.rows[e] >= coo.num_rows || coo.cols[e] < 0 || coo.cols[e] >= coo.num_cols)
      throw InputError(what + ": entry " + std::to_string(e) + " at (" + std::to_string(coo.rows[e]) + ", " +
                       std::to_string(coo.cols[e]) + ") is outside its " + std::to_string(coo.num_rows) + " x " +
                       std::to_string(coo.num_cols) + " shape");
  }
}

/// CSR in ExecutionSpace's memory from host triplets (no duplicate pairs;
/// an empty `values` means a pattern matrix, stored as ones). The triplets are
/// already on the host, so the CSR is assembled there (a counting sort by row,
/// then each row sorted by column: O(nnz log row length)) and copied once.
template <class ExecutionSpace, class T>
CsrMatrix<T, typename ExecutionSpace::memory_space> to_csr(const ExecutionSpace& exec, const CooMatrix<T>& coo) {
  using MemorySpace = typename ExecutionSpace::memory_space;
  validate_coo(coo);
  const std::size_t nnz = coo.nnz();
  const auto m = static_cast<std::size_t>(coo.num_rows);
  CsrMatrix<T, Kokkos::HostSpace> h;
  h.num_cols = static_cast<ordinal_t>(coo.num_cols);
  h.row_map = Kokkos::View<offset_t*, Kokkos::HostSpace>("kfactor::row_map", m + 1);
  h.entries = Kokkos::View<ordinal_t*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::entries"), nnz);
  h.values =
      Kokkos::View<T*, Kokkos::HostSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::values"), nnz);
  for (std::size_t e = 0; e < nnz; ++e) ++h.row_map(static_cast<std::size_t>(coo.rows[e]) + 1);
  for (std::size_t i = 0; i < m; ++i) h.row_map(i + 1) += h.row_map(i);
  std::vector<offset_t> cursor(h.row_map.data(), h.row_map.data() + m);
  std::vector<std::pair<ordinal_t, T>> row;
  for (std::size_t e = 0; e < nnz; ++e) {
    const auto slot = cursor[static_cast<std::size_t>(coo.rows[e])]++;
    h.entries(slot) = coo.cols[e];
    h.values(slot) = coo.values.empty() ? T(1) : coo.values[e];
  }
  for (std::size_t i = 0; i < m; ++i) {
    const auto b = h.row_map(i), n = h.row_map(i + 1) - b;
    bool sorted = true;
    for (offset_t q = 1; q < n && sorted; ++q) sorted = h.entries(b + q - 1) < h.entries(b + q);
    if (sorted) continue;
    row.resize(n);
    for (offset_t q = 0; q < n; ++q) row[q] = {h.entries(b + q), h.values(b + q)};
    std::stable_sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (offset_t q = 0; q < n; ++q) std::tie(h.entries(b + q), h.values(b + q)) = row[q];
  }
  CsrMatrix<T, MemorySpace> out;
  out.num_cols = h.num_cols;
  out.row_map = Kokkos::create_mirror_view_and_copy(MemorySpace{}, h.row_map);
  out.entries = Kokkos::create_mirror_view_and_copy(MemorySpace{}, h.entries);
  out.values = Kokkos::create_mirror_view_and_copy(MemorySpace{}, h.values);
  exec.fence();
  return out;
}

/// Row index of every nonzero, expanded from the row map.
template <class ExecutionSpace, class T, class MemorySpace>
Kokkos::View<ordinal_t*, MemorySpace> expand_rows(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  Kokkos::View<ordinal_t*, MemorySpace> rows(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::rows"),
                                             A.nnz());
  auto row_map = A.row_map;
  Kokkos::parallel_for(
      "kfactor::expand_rows", Kokkos::TeamPolicy<ExecutionSpace>(exec, A.num_rows(), Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Kokkos::TeamPolicy<ExecutionSpace>::member_type& team) {
        const auto r = team.league_rank();
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, row_map(r), row_map(r + 1)),
                             [&](offset_t e) { rows(e) = r; });
      });
  return rows;
}

/// The entries (r, c) of A with keep(r, c), as a CSR with A's rows and
/// `num_cols` columns, column ids shifted by -col_shift; order within rows
/// kept (a count, a scan and a fill, all in exec).
template <class ExecutionSpace, class T, class MemorySpace, class Keep>
CsrMatrix<T, MemorySpace> select_entries(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                         ordinal_t num_cols, ordinal_t col_shift, const Keep& keep) {
  const ordinal_t m = A.num_rows();
  CsrMatrix<T, MemorySpace> out;
  out.num_cols = num_cols;
  out.row_map = Kokkos::View<offset_t*, MemorySpace>("kfactor::select_row_map", std::size_t(m) + 1);
  auto rm = A.row_map;
  auto ent = A.entries;
  auto val = A.values;
  auto orm = out.row_map;
  Kokkos::parallel_for(
      "kfactor::select_count", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m), KOKKOS_LAMBDA(ordinal_t r) {
        offset_t c = 0;
        for (offset_t e = rm(r); e < rm(r + 1); ++e) c += keep(r, ent(e)) ? 1 : 0;
        orm(r + 1) = c;
      });
  Kokkos::parallel_scan(
      "kfactor::select_scan", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m + 1),
      KOKKOS_LAMBDA(ordinal_t i, offset_t & acc, bool final) {
        acc += orm(i);
        if (final) orm(i) = acc;
      });
  offset_t total = 0;
  Kokkos::deep_copy(exec, total, Kokkos::subview(orm, m));
  exec.fence();
  out.entries = Kokkos::View<ordinal_t*, MemorySpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::select_entries"), std::size_t(total));
  out.values = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::select_values"),
                                             std::size_t(total));
  auto oe = out.entries;
  auto ov = out.values;
  Kokkos::parallel_for(
      "kfactor::select_fill", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m), KOKKOS_LAMBDA(ordinal_t r) {
        offset_t o = orm(r);
        for (offset_t e = rm(r); e < rm(r + 1); ++e)
          if (keep(r, ent(e))) {
            oe(o) = ent(e) - col_shift;
            ov(o) = val(e);
            ++o;
          }
      });
  exec.fence();
  return out;
}

/// A^T as a sorted CSR in the same space (the CSC of A). Assembled on the
/// host by a stable counting sort over columns (walking A's rows in order
/// leaves every column's rows sorted), then copied back: O(nnz), deterministic
/// and identical on every backend. Solvers transpose once, in preprocessing.
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> transpose(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  exec.fence();
  const auto rm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A.row_map);
  const auto en = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A.entries);
  const auto va = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A.values);
  const std::size_t nnz = A.nnz(), n = static_cast<std::size_t>(A.num_cols);
  const ordinal_t m = A.num_rows();
  Kokkos::View<offset_t*, Kokkos::HostSpace> row_map("kfactor::row_map", n + 1);
  Kokkos::View<ordinal_t*, Kokkos::HostSpace> entries(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::entries"), nnz);
  Kokkos::View<T*, Kokkos::HostSpace> values(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::values"), nnz);
  const bool has_values = va.extent(0) == nnz;
  for (std::size_t e = 0; e < nnz; ++e) ++row_map(static_cast<std::size_t>(en(e)) + 1);
  for (std::size_t c = 0; c < n; ++c) row_map(c + 1) += row_map(c);
  std::vector<offset_t> cursor(row_map.data(), row_map.data() + n);
  for (ordinal_t r = 0; r < m; ++r)
    for (auto e = rm(r); e < rm(r + 1); ++e) {
      const auto slot = cursor[static_cast<std::size_t>(en(e))]++;
      entries(slot) = r;
      values(slot) = has_values ? va(e) : T(1);
    }
  CsrMatrix<T, MemorySpace> out;
  out.num_cols = m;
  out.row_map = Kokkos::create_mirror_view_and_copy(MemorySpace{}, row_map);
  out.entries = Kokkos::create_mirror_view_and_copy(MemorySpace{}, entries);
  out.values = Kokkos::create_mirror_view_and_copy(MemorySpace{}, values);
  return out;
}

/// Deep copy of a CSR into another memory space (e.g. a host mirror).
template <class DstMemorySpace, class T, class SrcMemorySpace>
CsrMatrix<T, DstMemorySpace> copy_to(const CsrMatrix<T, SrcMemorySpace>& A) {
  CsrMatrix<T, DstMemorySpace> out;
  out.num_cols = A.num_cols;
  out.row_map = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.row_map);
  out.entries = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.entries);
  out.values = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.values);
  return out;
}

/// Dense row-major copy of a CSR (tests and small inputs only: V x D memory).
template <class ExecutionSpace, class T, class MemorySpace>
DenseMatrix<T, MemorySpace> to_dense(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  DenseMatrix<T, MemorySpace> D(Kokkos::view_alloc(exec, "kfactor::dense"), A.num_rows(), A.num_cols);
  auto row_map = A.row_map;
  auto entries = A.entries;
  auto values = A.values;
  Kokkos::parallel_for(
      "kfactor::to_dense", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.num_rows()), KOKKOS_LAMBDA(ordinal_t r) {
        for (auto e = row_map(r); e < row_map(r + 1); ++e) D(r, entries(e)) = values(e);
      });
  return D;
}

}  // namespace kfactor
