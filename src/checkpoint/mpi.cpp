// The MPI helpers of the distributed checkpoint templates
// (include/kfactor/io/checkpoint.hpp): row blocks, tiling checks, agreed
// errors. Built with MPI, with or without HDF5.
#include <kfactor/distributed/collective.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::detail {

void apply_row_block(FieldBlock& b, const RowBlocks& blocks) {
  const auto it = blocks.find(b.name);
  if (it == blocks.end()) return;
  if (b.rank == 0) throw UsageError("checkpoint: scalar field '" + b.name + "' cannot be row-partitioned");
  const RowBlock& rb = it->second;
  if (rb.first_row < 0 || rb.global_rows < 0 || rb.first_row + b.local_rows > rb.global_rows)
    throw UsageError("checkpoint: rows [" + std::to_string(rb.first_row) + ", " +
                     std::to_string(rb.first_row + b.local_rows) + ") of field '" + b.name + "' exceed its " +
                     std::to_string(rb.global_rows) + " rows");
  b.partitioned = true;
  b.first_row = rb.first_row;
  b.global_rows = rb.global_rows;
}

void check_tiling(MPI_Comm comm, const FieldBlock& b) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  long long mine[3] = {b.first_row, b.local_rows, b.global_rows};
  std::vector<long long> all(3 * static_cast<std::size_t>(size));
  MPI_Allgather(mine, 3, MPI_LONG_LONG, all.data(), 3, MPI_LONG_LONG, comm);
  // The blocks in row order (a 2D processor grid owns a factor's row blocks
  // out of rank order); empty blocks first among equal starts.
  std::vector<int> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return std::pair(all[3 * x], all[3 * x + 1]) < std::pair(all[3 * y], all[3 * y + 1]);
  });
  long long next = 0;
  for (const int r : order) {
    const long long first = all[3 * r], rows = all[3 * r + 1], global = all[3 * r + 2];
    if (global != b.global_rows || first != next)
      throw UsageError("checkpoint: the row blocks of field '" + b.name + "' do not tile its rows (rank " +
                       std::to_string(r) + " starts at row " + std::to_string(first) + ", expected " +
                       std::to_string(next) + ", of " + std::to_string(global) + ")");
    next += rows;
  }
  if (next != b.global_rows)
    throw UsageError("checkpoint: the row blocks of field '" + b.name + "' cover " + std::to_string(next) + " of " +
                     std::to_string(b.global_rows) + " rows");
}

void agree(MPI_Comm comm, const std::exception_ptr& local_error) {
  distributed::agree(comm, [&] {
    if (local_error) std::rethrow_exception(local_error);
  });
}

std::uint64_t allreduce_sum(MPI_Comm comm, std::uint64_t local) {
  std::uint64_t out = 0;
  MPI_Allreduce(&local, &out, 1, MPI_UINT64_T, MPI_SUM, comm);
  return out;
}

}  // namespace kfactor::detail
