#pragma once
/// \file
/// Reading an input on the ranks of a communicator so that no rank parses,
/// or holds, all of it: the input side of the distributed nmf and als
/// (KFACTOR_HAVE_MPI only). Every function here is collective.
///
/// **Text with entry lines** (Matrix Market coordinate, edge lists, ratings,
/// the Boolean format): every rank reads the header from the file's start
/// (and detects the format); the body is cut into P byte ranges at line
/// boundaries, rank p's starting at the first line boundary at or after
/// body + p (size - body) / P; each rank reads and parses only its range,
/// with the whole-file reader's own code (kfactor/io/detail/text_ranges.hpp),
/// after an exclusive scan of the ranges' line and entry-line counts, so that
/// every message names the line of the whole file. What the whole-file reader
/// checks after its last line is checked once, on the sums (the counts a
/// header claims, an edge list's shape and count line, the number of distinct
/// ids); ratings' ids are merged into the same sorted maps on every rank.
/// Then every entry moves to the rank that owns its row (an all-to-all; rows
/// in P equal contiguous blocks) and arrives in file order, so that the
/// duplicate policy and the conversion to T run there on whole rows exactly
/// as in one process (a ratings file's timestamps travel with their entries
/// and are merged as the whole-file reader merges them). Errors are the
/// whole-file reader's: the same kind, file, line and message, thrown on
/// every rank; where several parts of the file are bad, the one the
/// sequential reader meets first wins (the checks run in its order, and
/// within a check the first range with a failure). Memory per rank: its
/// byte range, then its entries (24 bytes each while they move, 32 with
/// timestamps), the ratings' id maps and the shape's row counts. The memory
/// limit (io::ReadOptions) applies to each rank's range; the whole-file
/// claims of a header are checked as the whole-file reader checks them.
///
/// **HDF5 CSR** (io/hdf5_csr.hpp): every rank reads `/indptr` whole, takes
/// the rows of the nnz-balanced blocks of the row counts
/// (kfactor::distributed::balanced_column_blocks) and reads only their
/// entries, by hyperslab (io::Hdf5CsrReader: collective MPI-IO with parallel
/// HDF5), and the id maps.
///
/// **Dense layouts** (Matrix Market array, dense text) have no entry lines
/// to split; every rank reads such a file whole and keeps its rows (the
/// dense solvers hold a dense input whole anyway).
///
/// The rows then go where a solver wants them: move_rows() (the nnz-balanced
/// row blocks of distributed nmf and als), transpose_rows() (the rank's
/// rows of A^T for a column block: the second copy of A the 1D layouts keep)
/// and move_blocks() (the rank's block of a 2D processor grid), all
/// all-to-alls of the entries. distributed::nmf::make_problem and
/// distributed::als::distribute take a RowSlice and do both; the result is
/// the same, bit for bit, as when every rank reads the whole file and keeps
/// its blocks.

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::distributed {

/// This rank's share of a sparse matrix held by the ranks of a
/// communicator: entries with GLOBAL row and column indices, sorted by
/// (row, column); `entries.num_rows` and `num_cols` are the whole matrix's
/// shape. With row_bounds (P + 1 boundaries) the entries are those of rows
/// [row_bounds[rank], row_bounds[rank + 1]); without, of any rows
/// (reindex_rows(); move_rows() groups them).
template <class T>
struct RowSlice {
  CooMatrix<T> entries;
  std::vector<ordinal_t> row_bounds;
  /// Original ids of every row and column (a ratings file's users and
  /// items, ascending; the same on every rank); empty: an index is its id.
  std::vector<std::int64_t> row_ids, col_ids;
  /// timestamps[e]: entry e's timestamp, as io::RatingData::timestamps, when
  /// info.timestamps (read_rows of a ratings file with a timestamp column);
  /// empty otherwise. The moves and reindex_rows() leave it empty.
  std::vector<std::int64_t> timestamps;
  std::int64_t global_nnz = 0;  ///< entries on all ranks
  io::ReadInfo info;            ///< the whole-file reader's (lines, entries read, duplicates: of the whole input)
  int rank = 0, size = 1;
  [[nodiscard]] ordinal_t first_row() const { return row_bounds.empty() ? 0 : row_bounds[rank]; }
  [[nodiscard]] ordinal_t local_rows() const {
    return row_bounds.empty() ? 0 : row_bounds[rank + 1] - row_bounds[rank];
  }
};

/// io::probe_input on every rank, its errors agreed (thrown on every rank
/// as one process throws them): whether `path` is dense, before reading it.
io::InputKind probe_input(MPI_Comm comm, const std::string& path, io::Format format = io::Format::automatic,
                          const io::ReadOptions& opt = {});

/// Reads `path` in `format` (automatic: HDF5 CSR by its signature, else
/// io::detect_format on the text) on every rank of `comm`, each rank
/// reading only its part (see the file comment). Values in T as
/// io::read_input<T> gives them. Errors as io::read_input's, on every rank.
template <class T>
RowSlice<T> read_rows(MPI_Comm comm, const std::string& path, io::Format format = io::Format::automatic,
                      const io::ReadOptions& opt = {});

/// The same matrix with rank p holding rows [bounds[p], bounds[p + 1]).
template <class T>
RowSlice<T> move_rows(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& bounds);

/// The same matrix on a pr x pc grid of blocks (pr = row_bounds.size() - 1,
/// pc = col_bounds.size() - 1, pr pc = P): rank p = i pc + j gets the
/// entries of rows [row_bounds[i], row_bounds[i + 1]) and columns
/// [col_bounds[j], col_bounds[j + 1]), returned as that block alone (indices
/// less the block's first row and column; num_rows and num_cols the
/// block's), sorted by (row, column). One all-to-all of the entries; the
/// owner of an entry is the grid's block of its row and column, as the
/// owner in move_rows() is the row block of its row.
template <class T>
CooMatrix<T> move_blocks(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& row_bounds,
                         const std::vector<ordinal_t>& col_bounds);

/// Entries per row, and per column, of the whole matrix (on every rank).
template <class T>
std::vector<offset_t> global_row_counts(MPI_Comm comm, const RowSlice<T>& slice);
template <class T>
std::vector<offset_t> global_column_counts(MPI_Comm comm, const RowSlice<T>& slice);

/// A^T partitioned by `col_bounds`: rank p holds rows [col_bounds[p],
/// col_bounds[p + 1]) of A^T (columns of A), sorted by (column, row); the
/// id maps swap places.
template <class T>
RowSlice<T> transpose_rows(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& col_bounds);

/// io::reindex_ratings on every rank's part: `heldout`'s entries in
/// `training`'s index space (both with id maps, or without: index = id),
/// unknown ids rejected or dropped. Errors as reindex_ratings' on the whole
/// held-out matrix (entries numbered in its order, the first unknown one
/// reported). The result is not grouped by rows (no row_bounds).
template <class T>
RowSlice<T> reindex_rows(MPI_Comm comm, const RowSlice<T>& heldout, const RowSlice<T>& training, io::UnknownIds policy,
                         const std::string& source);

/// The same slice with values converted to U.
template <class U, class T>
RowSlice<U> convert_values(const RowSlice<T>& slice) {
  RowSlice<U> out;
  out.entries.num_rows = slice.entries.num_rows;
  out.entries.num_cols = slice.entries.num_cols;
  out.entries.rows = slice.entries.rows;
  out.entries.cols = slice.entries.cols;
  out.entries.values.assign(slice.entries.values.begin(), slice.entries.values.end());
  out.row_bounds = slice.row_bounds;
  out.row_ids = slice.row_ids;
  out.col_ids = slice.col_ids;
  out.timestamps = slice.timestamps;
  out.global_nnz = slice.global_nnz;
  out.info = slice.info;
  out.rank = slice.rank;
  out.size = slice.size;
  return out;
}

/// This rank's rows as a CSR in `exec`'s memory (local row ids 0..local
/// rows - 1; the same as distributed::detail::csr_rows on the whole matrix).
template <class ExecutionSpace, class T>
CsrMatrix<T, typename ExecutionSpace::memory_space> local_csr(const ExecutionSpace& exec, const RowSlice<T>& slice) {
  CooMatrix<T> local;
  local.num_rows = slice.local_rows();
  local.num_cols = slice.entries.num_cols;
  local.rows.resize(slice.entries.nnz());
  const ordinal_t r0 = slice.first_row();
  for (std::size_t e = 0; e < local.rows.size(); ++e) local.rows[e] = slice.entries.rows[e] - r0;
  local.cols = slice.entries.cols;
  local.values = slice.entries.values;
  return to_csr(exec, local);
}

/// kfactor::fingerprint of the whole global_rows x global_cols matrix from
/// every rank's block `local`: its entries at rows from `first_row` and
/// columns from `first_col` of the whole matrix (the ranks' blocks together
/// are all entries once: row blocks, or the blocks of a processor grid). The
/// checksum is a wrapping sum of per-entry hashes, so the parts add up
/// exactly.
template <class ExecutionSpace, class T, class MemorySpace>
InputFingerprint fingerprint(const ExecutionSpace& exec, MPI_Comm comm, const CsrMatrix<T, MemorySpace>& local,
                             std::int64_t first_row, std::int64_t first_col, std::int64_t global_rows,
                             std::int64_t global_cols) {
  auto row_map = local.row_map;
  auto entries = local.entries;
  auto values = local.values;
  const auto ncols = static_cast<std::uint64_t>(global_cols);
  const auto r0 = static_cast<std::uint64_t>(first_row), c0 = static_cast<std::uint64_t>(first_col);
  std::uint64_t sum = 0;
  Kokkos::parallel_reduce(
      "kfactor::distributed::fingerprint", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, local.num_rows()),
      KOKKOS_LAMBDA(ordinal_t r, std::uint64_t& s) {
        for (auto e = row_map(r); e < row_map(r + 1); ++e)
          s += kfactor::detail::entry_hash(
              (r0 + static_cast<std::uint64_t>(r)) * ncols + c0 + static_cast<std::uint64_t>(entries(e)),
              static_cast<double>(values(e)));
      },
      sum);
  // Gathered and added here: the wrap-around of unsigned addition is
  // defined in C++, not for an MPI sum.
  const auto parts = detail::Collectives(comm).allgather_host(
      std::vector<std::uint64_t>{sum, static_cast<std::uint64_t>(local.nnz())});
  std::uint64_t total[2] = {0, 0};
  for (std::size_t k = 0; k < parts.size(); ++k) total[k % 2] += parts[k];
  InputFingerprint f;
  f.rows = global_rows;
  f.cols = global_cols;
  f.nnz = static_cast<std::int64_t>(total[1]);
  f.checksum = kfactor::detail::finish_fingerprint(total[0], f.rows, f.cols, f.nnz);
  return f;
}

/// The same from every rank's rows `local` (whole rows from `first_row`; the
/// ranks' rows together are all rows once).
template <class ExecutionSpace, class T, class MemorySpace>
InputFingerprint fingerprint(const ExecutionSpace& exec, MPI_Comm comm, const CsrMatrix<T, MemorySpace>& local,
                             std::int64_t first_row, std::int64_t global_rows) {
  return fingerprint(exec, comm, local, first_row, 0, global_rows, local.num_cols);
}

#define KFACTOR_DISTRIBUTED_READ_EXTERN(T)                                                                      \
  extern template RowSlice<T> read_rows<T>(MPI_Comm, const std::string&, io::Format, const io::ReadOptions&);   \
  extern template RowSlice<T> move_rows<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&);        \
  extern template CooMatrix<T> move_blocks<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&,      \
                                              const std::vector<ordinal_t>&);                                   \
  extern template std::vector<offset_t> global_row_counts<T>(MPI_Comm, const RowSlice<T>&);                     \
  extern template std::vector<offset_t> global_column_counts<T>(MPI_Comm, const RowSlice<T>&);                  \
  extern template RowSlice<T> transpose_rows<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&);   \
  extern template RowSlice<T> reindex_rows<T>(MPI_Comm, const RowSlice<T>&, const RowSlice<T>&, io::UnknownIds, \
                                              const std::string&);
KFACTOR_DISTRIBUTED_READ_EXTERN(float)
KFACTOR_DISTRIBUTED_READ_EXTERN(double)
#undef KFACTOR_DISTRIBUTED_READ_EXTERN

}  // namespace kfactor::distributed

#endif  // KFACTOR_HAVE_MPI
