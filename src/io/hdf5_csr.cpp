// Reading HDF5 CSR files (include/kfactor/io/hdf5_csr.hpp): the layout and
// entry checks, whole and row-range reads. Host code only (no Kokkos calls),
// so the fuzz target (tests/io/fuzz/fuzz_h5csr.cpp) compiles this file alone
// against HDF5. hdf5_csr_mpi.cpp adds the MPI-IO access, hdf5_csr_write.cpp
// the writer.
#include <kfactor/io/hdf5_csr.hpp>

#include "hdf5_csr_impl.hpp"
#include "text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
#include <type_traits>
#include <utility>

namespace kfactor::io {

namespace h5 = kfactor::detail::h5;

namespace {

constexpr std::int64_t max_dim = std::numeric_limits<ordinal_t>::max();

/// InputError naming the file, with HDF5's innermost message when it has one.
[[noreturn]] void bad(const std::string& path, const std::string& what) {
  std::string msg = what;
  const std::string hdf5 = h5::last_error();
  if (!hdf5.empty()) msg += " (HDF5: " + hdf5 + ")";
  throw InputError(path, 0, msg);
}

std::string num(double v) { return kfactor::io::detail::num(v); }

/// Takes ownership of `id`, or, when HDF5 could not give one, InputError
/// naming the file and `what`.
template <class Handle>
Handle take(hid_t id, const std::string& path, const std::string& what) {
  if (id < 0) bad(path, what);
  return Handle(id, h5::Mode::read, what);
}

/// One-dimensional dataset `name` of class `cls`, with its length and
/// element size; InputError naming it when it is missing or different.
struct Column {
  h5::Dataset ds;
  std::int64_t length = 0;
  int bytes = 0;
};

Column open_column(hid_t file, const std::string& path, const char* name, H5T_class_t cls, const char* what) {
  const std::string where = std::string("dataset /") + name;
  if (!h5::exists(file, name)) bad(path, where + " is missing (" + what + ")");
  Column c;
  c.ds = take<h5::Dataset>(H5Dopen2(file, name, H5P_DEFAULT), path, where + ": not a dataset");
  const auto t = take<h5::Datatype>(H5Dget_type(c.ds), path, where + ": no type");
  const auto s = take<h5::Dataspace>(H5Dget_space(c.ds), path, where + ": no dataspace");
  const H5T_class_t got = H5Tget_class(t);
  const std::size_t size = H5Tget_size(t);
  if (cls == H5T_INTEGER && got != H5T_INTEGER) bad(path, where + " must hold integers (" + what + ")");
  if (cls == H5T_INTEGER && size > 8) bad(path, where + " has " + std::to_string(size) + "-byte integers (at most 8)");
  if (cls == H5T_FLOAT && (got != H5T_FLOAT || (size != 4 && size != 8)))
    bad(path, where + " must hold float32 or float64 values (" + what + ")");
  const int rank = H5Sget_simple_extent_ndims(s);
  if (rank != 1) bad(path, where + " must be one-dimensional, has rank " + std::to_string(rank));
  hsize_t dim = 0;
  if (H5Sget_simple_extent_dims(s, &dim, nullptr) < 0) bad(path, where + ": cannot read its length");
  c.length = static_cast<std::int64_t>(std::min<hsize_t>(dim, std::numeric_limits<std::int64_t>::max()));
  c.bytes = static_cast<int>(size);
  return c;
}

/// Reads elements [offset, offset + count) of a 1-D dataset as `mem_type`
/// into `out` (an empty selection when count is 0: collective reads need
/// every rank).
void read_part(const std::string& path, const char* name, hid_t ds, hid_t mem_type, hid_t dxpl, std::int64_t offset,
               std::int64_t count, void* out) {
  const auto file_space =
      take<h5::Dataspace>(H5Dget_space(ds), path, std::string("dataset /") + name + ": no dataspace");
  const hsize_t n = static_cast<hsize_t>(std::max<std::int64_t>(count, 1));
  const auto mem_space =
      take<h5::Dataspace>(H5Screate_simple(1, &n, nullptr), path, std::string("dataset /") + name + ": memory space");
  double none = 0;  // the buffer of an empty selection (never written)
  if (count == 0) {
    H5Sselect_none(file_space);
    H5Sselect_none(mem_space);
    out = &none;
  } else {
    const hsize_t start = static_cast<hsize_t>(offset), c = static_cast<hsize_t>(count);
    if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, &start, nullptr, &c, nullptr) < 0)
      bad(path, std::string("dataset /") + name + ": cannot select its part");
  }
  if (H5Dread(ds, mem_type, mem_space, file_space, dxpl, out) < 0)
    bad(path, std::string("dataset /") + name + ": cannot read it (damaged file?)");
}

/// Checks that the bytes a read needs fit the memory limit before they are allocated.
/// Set in the child of Impl::probe: the child opens the file itself.
bool in_probe = false;

/// Seconds a probe may take: opening a valid file's metadata takes
/// milliseconds, even on a network file system.
constexpr int probe_seconds = 60;

void check_memory(const std::string& path, const ReadOptions& opt, double bytes, const std::string& claim) {
  const std::uint64_t limit = kfactor::io::detail::memory_limit_or_physical(opt.memory_limit);
  if (bytes > static_cast<double>(limit))
    bad(path, claim + ": about " + kfactor::io::detail::gib(bytes) + ", more than the memory limit of " +
                  kfactor::io::detail::gib(double(limit)));
}

}  // namespace

bool hdf5_csr_probe = true;

h5::PropertyList hdf5_csr_file_access() {
  h5::PropertyList fapl(H5Pcreate(H5P_FILE_ACCESS), h5::Mode::read, "creating file access properties");
  h5::check(H5Pset_file_locking(fapl, false, true), h5::Mode::read, "disabling file locking");
  return fapl;
}

void check_regular_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(path, 0, "not a regular file");
}

/// HDF5 is not hardened against damaged files: on some its own checks fail
/// an assertion (abort) or it loops (the fuzz target found both). So before
/// this process lets HDF5 open a file, a forked child opens it, with the
/// serial driver, and runs every check of Impl's constructor (the metadata
/// this reader walks; the data chunks are read later, here). A child that is
/// killed by a signal, exits other than by the checks' verdict, or does not
/// finish within probe_seconds means a damaged file, reported as an
/// InputError without this process touching it. A child whose checks threw
/// exits 1 and this process runs the same checks to report that error.
void Hdf5CsrReader::Impl::probe(const std::string& path, const ReadOptions& opt) {
  if (in_probe || !hdf5_csr_probe) return;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) return;  // no process to spare: open it here, as without the probe
  if (child == 0) {
    in_probe = true;
    // The child dies quietly: no crash handlers of the parent (sanitizers,
    // debuggers), no HDF5 assertion text on the user's terminal.
    for (const int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    int code = 0;
    try {
      const Impl checked(path, opt, hdf5_csr_file_access(), h5::PropertyList());
    } catch (...) {
      code = 1;
    }
    ::_exit(code);  // no atexit handlers, no flush of the parent's buffers
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(probe_seconds);
  for (auto pause = std::chrono::microseconds(50);; pause = std::min(2 * pause, std::chrono::microseconds(20000))) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) return;  // reaped elsewhere: no verdict, open it here
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      throw InputError(path, 0,
                       "HDF5 did not finish opening the file in " + std::to_string(probe_seconds) +
                           " s (a damaged file makes HDF5 loop)");
    }
    std::this_thread::sleep_for(pause);
  }
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 1)) return;
  throw InputError(
      path, 0,
      WIFSIGNALED(status)
          ? "HDF5 crashed opening the file (signal " + std::to_string(WTERMSIG(status)) + "): the file is damaged"
          : "HDF5 failed opening the file (status " + std::to_string(status) + "): the file is damaged");
}

Hdf5CsrReader::Impl::Impl(const std::string& p, const ReadOptions& o, hid_t fapl, h5::PropertyList transfer)
    : path(p), opt(o), dxpl(std::move(transfer)) {
  const h5::Quiet quiet;
  check_regular_file(path);
  probe(path, opt);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) bad(path, "not a readable HDF5 file (damaged or truncated?)");
  file = h5::File(f, h5::Mode::read, path);
  // shape
  if (!h5::has_attribute(file, "shape")) bad(path, "attribute 'shape' is missing (the matrix shape, int64[2])");
  {
    const auto a = take<h5::Attribute>(H5Aopen(file, "shape", H5P_DEFAULT), path, "attribute 'shape': cannot open");
    const auto t = take<h5::Datatype>(H5Aget_type(a), path, "attribute 'shape': no type");
    const auto s = take<h5::Dataspace>(H5Aget_space(a), path, "attribute 'shape': no dataspace");
    if (H5Tget_class(t) != H5T_INTEGER || H5Tget_size(t) > 8) bad(path, "attribute 'shape' must hold integers");
    const hssize_t n = H5Sget_simple_extent_npoints(s);
    if (n != 2) bad(path, "attribute 'shape' must hold 2 values (rows, cols), has " + std::to_string(n));
    std::int64_t shape[2] = {0, 0};
    if (H5Aread(a, H5T_NATIVE_INT64, shape) < 0) bad(path, "attribute 'shape': cannot read it");
    for (int k = 0; k < 2; ++k)
      if (shape[k] < 0 || shape[k] > max_dim)
        bad(path, std::string("attribute 'shape': ") + (k == 0 ? "rows " : "cols ") + std::to_string(shape[k]) +
                      " out of range 0..2147483647");
    layout.rows = shape[0];
    layout.cols = shape[1];
  }
  const Column indptr = open_column(file, path, "indptr", H5T_INTEGER, "the row offsets");
  const Column indices = open_column(file, path, "indices", H5T_INTEGER, "the column of each entry");
  const Column data = open_column(file, path, "data", H5T_FLOAT, "the value of each entry");
  if (indptr.length != layout.rows + 1)
    bad(path, "dataset /indptr has " + std::to_string(indptr.length) + " values; the shape's rows + 1 is " +
                  std::to_string(layout.rows + 1));
  if (data.length != indices.length)
    bad(path, "dataset /data has " + std::to_string(data.length) + " values but /indices has " +
                  std::to_string(indices.length));
  layout.nnz = indices.length;
  layout.index_bytes = indices.bytes <= 4 ? 4 : 8;
  layout.value_bytes = data.bytes;
  const bool has_rows = h5::exists(file, "row_ids"), has_cols = h5::exists(file, "col_ids");
  if (has_rows != has_cols)
    bad(path, std::string("dataset /") + (has_rows ? "col_ids" : "row_ids") +
                  " is missing (a file with original ids holds /row_ids and /col_ids)");
  if (has_rows) {
    for (const char* name : {"row_ids", "col_ids"}) {
      const Column c = open_column(file, path, name, H5T_INTEGER, "original ids");
      const std::int64_t want = name[0] == 'r' ? layout.rows : layout.cols;
      if (c.length != want)
        bad(path, std::string("dataset /") + name + " has " + std::to_string(c.length) + " ids for " +
                      std::to_string(want) + (name[0] == 'r' ? " rows" : " columns"));
    }
    layout.ids = true;
  }
}

Hdf5CsrReader::Hdf5CsrReader(const std::string& path, const ReadOptions& opt) {
  const h5::Quiet quiet;
  auto fapl = hdf5_csr_file_access();
  impl_ = std::make_unique<Impl>(
      path, opt, fapl, h5::PropertyList(H5Pcreate(H5P_DATASET_XFER), h5::Mode::read, "creating transfer properties"));
}

Hdf5CsrReader::~Hdf5CsrReader() = default;
Hdf5CsrReader::Hdf5CsrReader(Hdf5CsrReader&&) noexcept = default;
Hdf5CsrReader& Hdf5CsrReader::operator=(Hdf5CsrReader&&) noexcept = default;

const Hdf5CsrLayout& Hdf5CsrReader::layout() const { return impl_->layout; }
const std::string& Hdf5CsrReader::path() const { return impl_->path; }

ReadInfo Hdf5CsrReader::info() const {
  const auto& l = impl_->layout;
  ReadInfo info;
  info.format = Format::h5csr;
  info.detail = "HDF5 CSR, int" + std::to_string(8 * l.index_bytes) + " indices, float" +
                std::to_string(8 * l.value_bytes) + " values" + (l.ids ? ", with ids" : "");
  info.entries_read = l.nnz;
  return info;
}

const std::vector<std::int64_t>& Hdf5CsrReader::row_map() {
  Impl& m = *impl_;
  if (m.row_map_read) return m.row_map;
  const h5::Quiet quiet;
  const auto& l = m.layout;
  m.prepare([&] {
    check_memory(m.path, m.opt, 8.0 * double(l.rows + 1),
                 "dataset /indptr claims " + std::to_string(l.rows + 1) + " offsets");
    m.row_map.resize(static_cast<std::size_t>(l.rows + 1));
  });
  const auto ds = take<h5::Dataset>(H5Dopen2(m.file, "indptr", H5P_DEFAULT), m.path, "dataset /indptr: cannot open");
  read_part(m.path, "indptr", ds, H5T_NATIVE_INT64, m.dxpl, 0, l.rows + 1, m.row_map.data());
  if (m.row_map[0] != 0) bad(m.path, "dataset /indptr: /indptr[0] is " + std::to_string(m.row_map[0]) + ", not 0");
  for (std::int64_t r = 0; r < l.rows; ++r) {
    const auto a = m.row_map[static_cast<std::size_t>(r)], b = m.row_map[static_cast<std::size_t>(r + 1)];
    if (b < a)
      bad(m.path, "dataset /indptr decreases: /indptr[" + std::to_string(r + 1) + "] = " + std::to_string(b) +
                      " after " + std::to_string(a) + " (row offsets never decrease)");
  }
  if (m.row_map.back() != l.nnz)
    bad(m.path, "dataset /indptr ends at " + std::to_string(m.row_map.back()) + " but /indices and /data hold " +
                    std::to_string(l.nnz) + " entries");
  m.row_map_read = true;
  return m.row_map;
}

std::vector<std::int64_t> Hdf5CsrReader::Impl::read_ids(const char* name, std::int64_t n) {
  Impl& m = *this;
  if (!m.layout.ids) return {};
  const h5::Quiet quiet;
  std::vector<std::int64_t> ids;
  prepare([&] {
    check_memory(m.path, m.opt, 8.0 * double(n),
                 std::string("dataset /") + name + " claims " + std::to_string(n) + " ids");
    ids.resize(static_cast<std::size_t>(n));
  });
  const auto ds =
      take<h5::Dataset>(H5Dopen2(m.file, name, H5P_DEFAULT), m.path, std::string("dataset /") + name + ": cannot open");
  read_part(m.path, name, ds, H5T_NATIVE_INT64, m.dxpl, 0, n, ids.data());
  for (std::size_t k = 1; k < ids.size(); ++k)
    if (ids[k] <= ids[k - 1])
      bad(m.path, std::string("dataset /") + name + ": ids must increase strictly, /" + name + "[" + std::to_string(k) +
                      "] = " + std::to_string(ids[k]) + " after " + std::to_string(ids[k - 1]));
  return ids;
}

std::vector<std::int64_t> Hdf5CsrReader::row_ids() { return impl_->read_ids("row_ids", impl_->layout.rows); }
std::vector<std::int64_t> Hdf5CsrReader::col_ids() { return impl_->read_ids("col_ids", impl_->layout.cols); }

template <class T>
CsrRows<T> Hdf5CsrReader::read_rows(std::int64_t r0, std::int64_t r1) {
  Impl& m = *impl_;
  const auto& l = m.layout;
  if (r0 < 0 || r1 < r0 || r1 > l.rows)
    throw UsageError(m.path + ": rows [" + std::to_string(r0) + ", " + std::to_string(r1) + ") of a matrix of " +
                     std::to_string(l.rows) + " rows");
  const auto& rm = row_map();
  const h5::Quiet quiet;
  const std::int64_t e0 = rm[static_cast<std::size_t>(r0)], e1 = rm[static_cast<std::size_t>(r1)], count = e1 - e0;
  CsrRows<T> out;
  std::vector<std::int64_t> wide;  // 64-bit stored columns, checked before narrowing
  std::vector<double> stored;      // float64 values read for T = float, checked before narrowing
  const bool narrow_values = l.value_bytes == 8 && std::is_same_v<T, float>;
  m.prepare([&] {
    // The entries, their buffers in the stored types, and the row map.
    check_memory(
        m.path, m.opt,
        double(count) * double(sizeof(ordinal_t) + sizeof(T) + l.index_bytes + l.value_bytes) +
            8.0 * double(r1 - r0 + 1),
        "rows " + std::to_string(r0) + ".." + std::to_string(r1 - 1) + " hold " + std::to_string(count) + " entries");
    out.row_map.resize(static_cast<std::size_t>(r1 - r0 + 1));
    out.cols.resize(static_cast<std::size_t>(count));
    out.values.resize(static_cast<std::size_t>(count));
    if (l.index_bytes == 8) wide.resize(static_cast<std::size_t>(count));
    if (narrow_values) stored.resize(static_cast<std::size_t>(count));
  });
  out.num_rows = l.rows;
  out.num_cols = l.cols;
  out.first_row = r0;
  for (std::int64_t r = r0; r <= r1; ++r)
    out.row_map[static_cast<std::size_t>(r - r0)] = rm[static_cast<std::size_t>(r)] - e0;
  {
    const auto ds =
        take<h5::Dataset>(H5Dopen2(m.file, "indices", H5P_DEFAULT), m.path, "dataset /indices: cannot open");
    // Stored in at most 32 bits: HDF5 converts into the column array itself.
    if (wide.empty())
      read_part(m.path, "indices", ds, H5T_NATIVE_INT32, m.dxpl, e0, count, out.cols.data());
    else
      read_part(m.path, "indices", ds, H5T_NATIVE_INT64, m.dxpl, e0, count, wide.data());
  }
  {
    const auto ds = take<h5::Dataset>(H5Dopen2(m.file, "data", H5P_DEFAULT), m.path, "dataset /data: cannot open");
    if (narrow_values)
      read_part(m.path, "data", ds, H5T_NATIVE_DOUBLE, m.dxpl, e0, count, stored.data());
    else
      read_part(m.path, "data", ds, std::is_same_v<T, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, m.dxpl, e0, count,
                out.values.data());
  }
  // Entry by entry, in file order: the column, then the value.
  const auto entry = [&](const char* dataset, std::int64_t k, std::int64_t r) {
    return std::string("dataset /") + dataset + ": /" + dataset + "[" + std::to_string(e0 + k) + "] (row " +
           std::to_string(r);
  };
  constexpr double float_max = std::numeric_limits<float>::max();
  for (std::int64_t r = r0; r < r1; ++r) {
    const auto b = out.row_map[static_cast<std::size_t>(r - r0)];
    const auto end = out.row_map[static_cast<std::size_t>(r - r0 + 1)];
    for (auto k = b; k < end; ++k) {
      const auto e = static_cast<std::size_t>(k);
      const std::int64_t c = wide.empty() ? out.cols[e] : wide[e];
      if (c < 0 || c >= l.cols)
        bad(m.path, entry("indices", k, r) + ") is column " + std::to_string(c) + ", out of range 0.." +
                        std::to_string(l.cols - 1));
      out.cols[e] = static_cast<ordinal_t>(c);
      if (k > b && c <= out.cols[e - 1])
        bad(m.path, entry("indices", k, r) + ") is column " + std::to_string(c) + " after column " +
                        std::to_string(out.cols[e - 1]) +
                        "; columns must increase strictly within a row (scipy: A.sum_duplicates())");
      const double v = narrow_values ? stored[e] : static_cast<double>(out.values[e]);
      if (!std::isfinite(v)) bad(m.path, entry("data", k, r) + ", column " + std::to_string(c) + ") is NaN or Inf");
      if (std::is_same_v<T, float> && std::fabs(v) > float_max)
        bad(m.path, entry("data", k, r) + ", column " + std::to_string(c) + ") = " + num(v) +
                        " does not fit in single precision (float)");
      if (m.opt.non_negative && v < 0)
        bad(m.path, entry("data", k, r) + ", column " + std::to_string(c) + ") = " + num(v) +
                        " is negative (this input must be non-negative)");
      if (narrow_values) out.values[e] = static_cast<T>(v);
    }
  }
  return out;
}

template <class T>
CsrRows<T> read_hdf5_csr_rows(const std::string& path, std::int64_t r0, std::int64_t r1, const ReadOptions& opt) {
  Hdf5CsrReader reader(path, opt);
  return reader.read_rows<T>(r0, r1);
}

template <class T>
RatingData<T> read_hdf5_csr(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  Hdf5CsrReader reader(path, opt);
  const Hdf5CsrLayout l = reader.layout();
  RatingData<T> out;
  {
    CsrRows<T> rows = reader.read_rows<T>(0, l.rows);
    auto& A = out.matrix;
    A.num_rows = l.rows;
    A.num_cols = l.cols;
    A.rows.resize(rows.cols.size());
    for (std::int64_t r = 0; r < l.rows; ++r)
      std::fill(A.rows.begin() + rows.row_map[static_cast<std::size_t>(r)],
                A.rows.begin() + rows.row_map[static_cast<std::size_t>(r + 1)], static_cast<ordinal_t>(r));
    A.cols = std::move(rows.cols);
    A.values = std::move(rows.values);
  }
  out.user_ids = reader.row_ids();
  out.item_ids = reader.col_ids();
  if (info) *info = reader.info();
  return out;
}

#define KFACTOR_HDF5_CSR_INSTANTIATE(T)                                                       \
  template RatingData<T> read_hdf5_csr<T>(const std::string&, const ReadOptions&, ReadInfo*); \
  template CsrRows<T> Hdf5CsrReader::read_rows<T>(std::int64_t, std::int64_t);                \
  template CsrRows<T> read_hdf5_csr_rows<T>(const std::string&, std::int64_t, std::int64_t, const ReadOptions&);
KFACTOR_HDF5_CSR_INSTANTIATE(float)
KFACTOR_HDF5_CSR_INSTANTIATE(double)

}  // namespace kfactor::io
