#pragma once
/// \file
/// How distributed runs split a matrix's rows or columns over P ranks:
/// contiguous blocks, either of equal size (balanced_row_block) or balanced
/// by nonzeros (balanced_column_blocks). Pure arithmetic on counts, shared by
/// the distributed solvers, the distributed SDDMM and checkpoints; no MPI.

#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kfactor::distributed {

/// The rows of one row-partitioned field held by this rank:
/// [first_row, first_row + rows held) of a field of global_rows rows.
struct RowBlock {
  std::int64_t global_rows = 0;
  std::int64_t first_row = 0;
};
/// Row-partitioned fields by name (see kfactor::save_checkpoint(comm, ...)).
using RowBlocks = std::map<std::string, RowBlock>;

/// Balanced contiguous split of `global_rows` over `nranks`: the first
/// global_rows % nranks ranks get one row more. UsageError unless
/// 0 <= rank < nranks and global_rows >= 0.
RowBlock balanced_row_block(std::int64_t global_rows, int nranks, int rank);

/// Contiguous column blocks balanced by nonzeros (the non-symmetric
/// partition of distributed SDDMM, NMF and ALS): boundaries b_0 = 0 <= b_1
/// <= ... <= b_P = N, part p owning columns [b_p, b_{p+1}). b_p is the first
/// column c whose prefix count (nonzeros in columns < c) reaches p * nnz / P,
/// computed in exact integer arithmetic, so every part has at most
/// nnz / P + (max column count) nonzeros. Parts may be empty (P > N, or heavy
/// columns). UsageError when parts < 1.
std::vector<ordinal_t> balanced_column_blocks(const std::vector<offset_t>& column_counts, int parts);

/// Nonzeros per column of S (host vector of length N).
template <class T, class Mem>
std::vector<offset_t> column_counts(const CsrMatrix<T, Mem>& S) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.entries);
  std::vector<offset_t> counts(static_cast<std::size_t>(S.num_cols), 0);
  for (std::size_t e = 0; e < h.extent(0); ++e) ++counts[static_cast<std::size_t>(h(e))];
  return counts;
}

}  // namespace kfactor::distributed
