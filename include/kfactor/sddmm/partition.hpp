#pragma once
/// \file
/// The distributed SDDMM's building block: S's columns split into P
/// contiguous blocks balanced by nonzeros (the paper's non-symmetric
/// partition, §IV-C). Rank p owns columns [b_p, b_{p+1}) of S and the same
/// rows of B; A is replicated. Parts may be empty (P > N).

#include <kfactor/core/matrix.hpp>
#include <kfactor/sddmm/options.hpp>

#include <Kokkos_Core.hpp>

#include <vector>

namespace kfactor {

/// Nonzeros per column of S (host vector of length N).
template <class T, class Mem>
std::vector<offset_t> column_counts(const CsrMatrix<T, Mem>& S) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.entries);
  std::vector<offset_t> counts(static_cast<std::size_t>(S.num_cols), 0);
  for (std::size_t e = 0; e < h.extent(0); ++e) ++counts[static_cast<std::size_t>(h(e))];
  return counts;
}

/// P + 1 boundaries of contiguous column blocks of S balanced by nonzeros:
/// each block has at most nnz / P + (max column count) nonzeros.
template <class T, class Mem>
std::vector<ordinal_t> balanced_column_blocks(const CsrMatrix<T, Mem>& S, int parts) {
  return balanced_column_blocks(column_counts(S), parts);
}

}  // namespace kfactor
