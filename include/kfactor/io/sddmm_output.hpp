#pragma once
/// \file
/// The file an SDDMM run writes: P = S o (A B^T), S's pattern with the
/// product's values, as Matrix Market coordinate (1-based, row by row, S's
/// CSR order), so that any reader gets P as a sparse matrix of S's shape.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/io/write.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kfactor::io {

/// Writes the values `values_in_csr_order` (host-indexable with operator[]
/// or operator(), one per nonzero of S in S's CSR order: a host View, a
/// std::vector) at S's pattern to `path`; `out` as for write_matrix_market
/// (the run's inputs, an OutputSet member). Throws InputError when the count
/// differs from S's nonzeros, and write_matrix_market's errors.
template <class T, class MemorySpace, class Values>
void write_sddmm_output(const std::string& path, const CsrMatrix<T, MemorySpace>& S, const Values& values_in_csr_order,
                        const std::string& comment = {}, const OutputOptions& out = {}) {
  const std::size_t nnz = S.nnz();
  if (static_cast<std::size_t>(values_in_csr_order.size()) != nnz)
    throw InputError(path + ": " + std::to_string(values_in_csr_order.size()) + " product values for " +
                     std::to_string(nnz) + " nonzeros of S");
  Kokkos::View<T*, Kokkos::HostSpace> values(Kokkos::view_alloc(Kokkos::WithoutInitializing, "P values"), nnz);
  for (std::size_t e = 0; e < nnz; ++e) values(e) = static_cast<T>(values_in_csr_order[e]);
  const CsrMatrix<T, Kokkos::HostSpace> P(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.row_map),
                                          Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.entries), values,
                                          S.num_cols);
  write_matrix_market(path, P, comment, out);
}

}  // namespace kfactor::io
