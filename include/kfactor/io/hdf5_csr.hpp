#pragma once
/// \file
/// HDF5 CSR: the binary input format for large runs. One HDF5 file holds a
/// sparse matrix in compressed sparse rows, laid out as scipy and h5py
/// expect:
///
/// | object | type | content |
/// | --- | --- | --- |
/// | `/indptr` | int64 (any integer type is read), rows + 1 | row r's entries are [indptr[r], indptr[r+1]) |
/// | `/indices` | int32 or int64, nnz | column of each entry, strictly increasing within a row |
/// | `/data` | float32 or float64, nnz | value of each entry |
/// | attribute `shape` on `/` | int64[2] | rows, cols |
/// | `/row_ids`, `/col_ids` (optional, both or neither) | int64, rows and cols | original ids, strictly increasing (a
/// ratings file's user and item ids) |
///
/// so that `scipy.sparse.csr_matrix((f['data'], f['indices'], f['indptr']),
/// shape=f.attrs['shape'])` reads it. `kfactor convert IN OUT.h5` writes one
/// from any text input (write_hdf5_csr()); every command that reads input
/// takes it (io/input.hpp). A distributed run reads only its rows: the
/// whole `/indptr`, then a hyperslab of `/indices` and `/data`
/// (Hdf5CsrReader; collective MPI-IO with parallel HDF5).
///
/// Checks (InputError naming the file and the dataset or attribute; nothing
/// is allocated from a size the file claims before the claim is checked
/// against ReadOptions::memory_limit): the shape attribute (integer, two
/// values, each in 0..2^31-1), each dataset present, one-dimensional, of an
/// integer (indptr, indices, ids) or floating-point (data, 4 or 8 bytes)
/// type and of the length the shape implies; indptr starts at 0, never
/// decreases and ends at nnz; per entry in file order, its column in range
/// and above the row's previous column, then its value finite (and within
/// float for T = float, non-negative under ReadOptions::non_negative); ids
/// strictly increasing. A row range is checked the same way on its rows, so
/// the first bad entry of the file is the first bad entry of the first range
/// that holds one. Files HDF5 cannot open (not HDF5, truncated) are
/// InputErrors naming the file.
///
/// Without HDF5 (KFACTOR_HAVE_HDF5 off) is_hdf5_file() still works and every
/// other entry point throws UsageError.

#include <kfactor/config.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/io/read.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#endif

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::io {

/// True when `path` is a regular file whose first bytes (or those at 512,
/// 1024, 2048, ...: after a user block) are the HDF5 signature.
bool is_hdf5_file(const std::string& path);

/// What a CSR file's header says (checked: see the file comment).
struct Hdf5CsrLayout {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  int index_bytes = 4;  ///< bytes per stored column index (4 or 8)
  int value_bytes = 8;  ///< bytes per stored value (4: float32, 8: float64)
  bool ids = false;     ///< the file holds /row_ids and /col_ids
};

/// How write_hdf5_csr() writes.
struct Hdf5CsrWriteOptions {
  bool single_precision = false;    ///< `/data` as float32 instead of float64
  std::vector<std::string> inputs;  ///< files the target may not replace (check_write_target)
};

/// Writes `A` (sorted by (row, column), no duplicates: what the readers
/// return) with optional ids (both empty, or one per row and one per column)
/// as an HDF5 CSR file, atomically (io/write.hpp: a temporary beside the
/// target, renamed over it; nothing is left behind on failure).
/// UsageError for a target write.hpp refuses or an A that is not canonical;
/// RuntimeFailure when writing fails.
template <class T>
void write_hdf5_csr(const std::string& path, const CooMatrix<T>& A, const std::vector<std::int64_t>& row_ids = {},
                    const std::vector<std::int64_t>& col_ids = {}, const Hdf5CsrWriteOptions& options = {});

/// Reads a whole CSR file: the matrix (sorted, as every reader's) and its
/// ids (empty when the file has none). `info` gets format h5csr, a detail
/// naming the stored types, and entries_read = nnz.
template <class T>
RatingData<T> read_hdf5_csr(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);

/// Rows [first_row, first_row + row_map.size() - 1) of a CSR file.
template <class T>
struct CsrRows {
  std::int64_t num_rows = 0, num_cols = 0;  ///< the whole matrix's shape
  std::int64_t first_row = 0;
  std::vector<std::int64_t> row_map;  ///< local offsets, row_map[0] == 0
  std::vector<ordinal_t> cols;
  std::vector<T> values;
};

/// An open CSR file, read in parts: layout and ids, the whole row map, then
/// rows by hyperslab. Opened by one process, or by every rank of a
/// communicator: then, with parallel HDF5 (KFACTOR_HAVE_PARALLEL_HDF5), the
/// file goes through the MPI-IO driver and every read is collective (every
/// rank makes the same calls in the same order, each for its own rows);
/// without it each rank opens the file read-only on its own.
class Hdf5CsrReader {
 public:
  /// Opens `path` and checks its layout (shape, datasets, types, lengths).
  explicit Hdf5CsrReader(const std::string& path, const ReadOptions& opt = {});
#if defined(KFACTOR_HAVE_MPI)
  /// Collective over `comm` (see the class comment).
  Hdf5CsrReader(const std::string& path, MPI_Comm comm, const ReadOptions& opt = {});
#endif
  ~Hdf5CsrReader();
  Hdf5CsrReader(Hdf5CsrReader&&) noexcept;
  Hdf5CsrReader& operator=(Hdf5CsrReader&&) noexcept;

  [[nodiscard]] const Hdf5CsrLayout& layout() const;
  [[nodiscard]] const std::string& path() const;
  /// What read_hdf5_csr() reports: format h5csr, a detail naming the stored
  /// types, entries_read = nnz.
  [[nodiscard]] ReadInfo info() const;
  /// The whole `/indptr` (rows + 1 offsets), checked; read once.
  const std::vector<std::int64_t>& row_map();
  /// `/row_ids` and `/col_ids` (empty when the file has none), checked.
  std::vector<std::int64_t> row_ids();
  std::vector<std::int64_t> col_ids();
  /// Rows [r0, r1): the row map's part, then only their entries of
  /// `/indices` and `/data` (checked entry by entry, see the file comment).
  template <class T>
  CsrRows<T> read_rows(std::int64_t r0, std::int64_t r1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace detail {
/// Thrown by a collective Hdf5CsrReader on the ranks whose own part of a
/// step succeeded when another rank's failed (that rank throws its error):
/// an error reporter picks the failing rank's error over this one.
class FailedElsewhere : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};
}  // namespace detail

/// Rows [r0, r1) of the CSR file `path` (Hdf5CsrReader::read_rows).
template <class T>
CsrRows<T> read_hdf5_csr_rows(const std::string& path, std::int64_t r0, std::int64_t r1, const ReadOptions& opt = {});

#define KFACTOR_HDF5_CSR_EXTERN(T)                                                                                  \
  extern template void write_hdf5_csr<T>(const std::string&, const CooMatrix<T>&, const std::vector<std::int64_t>&, \
                                         const std::vector<std::int64_t>&, const Hdf5CsrWriteOptions&);             \
  extern template RatingData<T> read_hdf5_csr<T>(const std::string&, const ReadOptions&, ReadInfo*);                \
  extern template CsrRows<T> Hdf5CsrReader::read_rows<T>(std::int64_t, std::int64_t);                               \
  extern template CsrRows<T> read_hdf5_csr_rows<T>(const std::string&, std::int64_t, std::int64_t, const ReadOptions&);
KFACTOR_HDF5_CSR_EXTERN(float)
KFACTOR_HDF5_CSR_EXTERN(double)
#undef KFACTOR_HDF5_CSR_EXTERN

}  // namespace kfactor::io
