// Row and column partitions (include/kfactor/distributed/partition.hpp).
#include <kfactor/core/error.hpp>
#include <kfactor/distributed/partition.hpp>

#include <algorithm>
#include <string>

namespace kfactor::distributed {

RowBlock balanced_row_block(std::int64_t global_rows, int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks || global_rows < 0)
    throw UsageError("balanced_row_block: rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " for " +
                     std::to_string(global_rows) + " rows (need 0 <= rank < ranks and rows >= 0)");
  const std::int64_t base = global_rows / nranks, extra = global_rows % nranks;
  RowBlock b;
  b.global_rows = global_rows;
  b.first_row = rank * base + std::min<std::int64_t>(rank, extra);
  return b;
}

std::vector<ordinal_t> balanced_column_blocks(const std::vector<offset_t>& column_counts, int parts) {
  if (parts < 1) throw UsageError("balanced_column_blocks: need at least one part, got " + std::to_string(parts));
  const auto n = static_cast<ordinal_t>(column_counts.size());
  offset_t nnz = 0;
  for (auto c : column_counts) nnz += c;
  std::vector<ordinal_t> b(static_cast<std::size_t>(parts) + 1, n);
  b[0] = 0;
  // prefix = nonzeros in columns < col; part p starts at the first col with
  // prefix * P >= p * nnz (128-bit products: no overflow for any nnz).
  ordinal_t col = 0;
  offset_t prefix = 0;
  for (int p = 1; p < parts; ++p) {
    const unsigned __int128 target = static_cast<unsigned __int128>(p) * nnz;
    while (col < n && static_cast<unsigned __int128>(prefix) * parts < target) prefix += column_counts[col++];
    b[p] = col;
  }
  b[parts] = n;
  return b;
}

}  // namespace kfactor::distributed
