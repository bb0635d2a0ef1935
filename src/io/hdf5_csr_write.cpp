// Writing HDF5 CSR files (include/kfactor/io/hdf5_csr.hpp): the datasets
// scipy reads, into a temporary published over the target (io/write.hpp).
#include <kfactor/io/detail/hdf5.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/write.hpp>

#include <unistd.h>

#include <limits>
#include <type_traits>

namespace kfactor::io {

namespace h5 = kfactor::detail::h5;

namespace {

constexpr std::int64_t max_dim = std::numeric_limits<ordinal_t>::max();

/// A 1-D dataset `name` of file type `file_type` holding `n` elements of
/// `mem_type` from `data`.
void write_column(hid_t file, const std::string& where, const char* name, hid_t file_type, hid_t mem_type,
                  const void* data, std::int64_t n) {
  const hsize_t dim = static_cast<hsize_t>(n);
  auto space = h5::dataspace(h5::Mode::write, {dim});
  auto dcpl = h5::untimed_creation(H5P_DATASET_CREATE, h5::Mode::write);
  h5::Dataset ds(H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), h5::Mode::write,
                 where + ": creating dataset /" + name);
  if (n > 0)
    h5::check(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), h5::Mode::write,
              where + ": writing dataset /" + name);
  h5::check(ds.reset(), h5::Mode::write, where + ": closing dataset /" + name);
}

}  // namespace

template <class T>
void write_hdf5_csr(const std::string& path, const CooMatrix<T>& A, const std::vector<std::int64_t>& row_ids,
                    const std::vector<std::int64_t>& col_ids, const Hdf5CsrWriteOptions& options) {
  if (A.num_rows < 0 || A.num_cols < 0 || A.num_rows > max_dim || A.num_cols > max_dim)
    throw UsageError(path + ": cannot write a " + std::to_string(A.num_rows) + " x " + std::to_string(A.num_cols) +
                     " matrix");
  if (A.cols.size() != A.nnz() || A.values.size() != A.nnz())
    throw UsageError(path + ": the matrix needs one column and one value per entry");
  if (row_ids.empty() != col_ids.empty() ||
      (!row_ids.empty() && (std::int64_t(row_ids.size()) != A.num_rows || std::int64_t(col_ids.size()) != A.num_cols)))
    throw UsageError(path + ": ids need one per row and one per column (or none)");
  std::vector<std::int64_t> indptr(static_cast<std::size_t>(A.num_rows + 1), 0);
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    const ordinal_t r = A.rows[e], c = A.cols[e];
    if (r < 0 || r >= A.num_rows || c < 0 || c >= A.num_cols ||
        (e > 0 && !(A.rows[e - 1] < r || (A.rows[e - 1] == r && A.cols[e - 1] < c))))
      throw UsageError(path + ": entry " + std::to_string(e) +
                       " is out of range or out of (row, column) order: write canonical matrices (as read)");
    ++indptr[static_cast<std::size_t>(r) + 1];
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(A.num_rows); ++r) indptr[r + 1] += indptr[r];

  check_write_target(path, options.inputs);
  const std::string target = resolve_write_target(path);
  detail::remove_stale_temporaries(target);
  const std::string tmp = detail::temp_path_for(target, static_cast<long long>(::getpid()));
  const std::string where = "HDF5 CSR file " + path;
  const h5::Quiet quiet;
  try {
    {
      h5::PropertyList fapl(H5Pcreate(H5P_FILE_ACCESS), h5::Mode::write, where + ": file access properties");
      h5::check(H5Pset_file_locking(fapl, false, true), h5::Mode::write, where + ": disabling file locking");
      auto fcpl = h5::untimed_creation(H5P_FILE_CREATE, h5::Mode::write);
      h5::File file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl), h5::Mode::write,
                    where + ": cannot create " + tmp);
      {
        const hsize_t two = 2;
        auto space = h5::dataspace(h5::Mode::write, {two});
        h5::Attribute a(H5Acreate2(file, "shape", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), h5::Mode::write,
                        where + ": creating attribute 'shape'");
        const std::int64_t shape[2] = {A.num_rows, A.num_cols};
        h5::check(H5Awrite(a, H5T_NATIVE_INT64, shape), h5::Mode::write, where + ": writing attribute 'shape'");
      }
      const auto nnz = static_cast<std::int64_t>(A.nnz());
      write_column(file, where, "indptr", H5T_STD_I64LE, H5T_NATIVE_INT64, indptr.data(), A.num_rows + 1);
      write_column(file, where, "indices", H5T_STD_I32LE, H5T_NATIVE_INT32, A.cols.data(), nnz);
      write_column(file, where, "data", options.single_precision ? H5T_IEEE_F32LE : H5T_IEEE_F64LE,
                   std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, A.values.data(), nnz);
      if (!row_ids.empty()) {
        write_column(file, where, "row_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, row_ids.data(), A.num_rows);
        write_column(file, where, "col_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, col_ids.data(), A.num_cols);
      }
      h5::check(H5Fflush(file, H5F_SCOPE_LOCAL), h5::Mode::write, where + ": flushing");
      h5::check(file.reset(), h5::Mode::write, where + ": closing");
    }
    detail::publish_file(tmp, target, where);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

template void write_hdf5_csr<float>(const std::string&, const CooMatrix<float>&, const std::vector<std::int64_t>&,
                                    const std::vector<std::int64_t>&, const Hdf5CsrWriteOptions&);
template void write_hdf5_csr<double>(const std::string&, const CooMatrix<double>&, const std::vector<std::int64_t>&,
                                     const std::vector<std::int64_t>&, const Hdf5CsrWriteOptions&);

}  // namespace kfactor::io
