// HDF5 checkpoints: the compiled half of include/kfactor/io/checkpoint.hpp.
// The templates there turn a State into FieldBlocks; this file writes them to
// one HDF5 file (serially, collectively with parallel HDF5, or gathered to
// rank 0) and reads them back with every check the header promises.
#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <nlohmann/json.hpp>

#if defined(KFACTOR_HAVE_HDF5)
#include <kfactor/io/detail/hdf5.hpp>
#endif

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

namespace kfactor {

std::string to_string(const InputFingerprint& f) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.checksum));
  return std::to_string(f.rows) + " x " + std::to_string(f.cols) + ", nnz " + std::to_string(f.nnz) +
         ", checksum 0x" + hex;
}

RowBlock balanced_row_block(std::int64_t global_rows, int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks || global_rows < 0)
    throw UsageError("balanced_row_block: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                     " for " + std::to_string(global_rows) + " rows");
  const std::int64_t base = global_rows / nranks, extra = global_rows % nranks;
  RowBlock b;
  b.global_rows = global_rows;
  b.first_row = rank * base + std::min<std::int64_t>(rank, extra);
  return b;
}

std::map<std::string, std::string> options_from_json_text(const std::string& json_text) {
  std::map<std::string, std::string> out;
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_object())
    for (const auto& [key, value] : j.items()) out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  return out;
}

namespace detail {

const char* to_string(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8: return "int8";
    case CheckpointType::u8: return "uint8";
    case CheckpointType::i16: return "int16";
    case CheckpointType::u16: return "uint16";
    case CheckpointType::i32: return "int32";
    case CheckpointType::u32: return "uint32";
    case CheckpointType::i64: return "int64";
    case CheckpointType::u64: return "uint64";
    case CheckpointType::f32: return "float32";
    case CheckpointType::f64: return "float64";
  }
  return "unknown";
}

std::size_t size_of(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8:
    case CheckpointType::u8: return 1;
    case CheckpointType::i16:
    case CheckpointType::u16: return 2;
    case CheckpointType::i32:
    case CheckpointType::u32:
    case CheckpointType::f32: return 4;
    default: return 8;
  }
}

std::uint64_t block_checksum(const void* data, CheckpointType type, std::int64_t first_index, std::int64_t count) {
  const std::size_t w = size_of(type);
  const auto* p = static_cast<const unsigned char*>(data);
  auto term = [=](std::int64_t e) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, p + static_cast<std::size_t>(e) * w, w);  // little-endian hosts: zero-extended
    const auto index = static_cast<std::uint64_t>(first_index + e);
    return CounterRng::mix(CounterRng::mix(index) ^ (bits * 0x9E3779B97F4A7C15ULL + w));
  };
  std::uint64_t sum = 0;
  // Wrapping sums are associative and commutative: any split gives the same value.
  if (count > 65536 && Kokkos::is_initialized()) {
    Kokkos::parallel_reduce(
        "kfactor::checkpoint_checksum", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, count),
        [=](std::int64_t e, std::uint64_t& s) { s += term(e); }, sum);
  } else {
    for (std::int64_t e = 0; e < count; ++e) sum += term(e);
  }
  return sum;
}

namespace {

void check_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw UsageError("checkpoint field name '" + name + "' is empty or contains '/'");
}

std::string dimensions(int rank, std::int64_t rows, std::int64_t cols) {
  if (rank == 0) return "a scalar";
  if (rank == 1) return "a vector of " + std::to_string(rows);
  return std::to_string(rows) + " x " + std::to_string(cols);
}

void fsync_path(const std::string& p, bool directory) {
  const int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) {
    if (directory) return;  // best effort for the directory entry
    throw RuntimeFailure("checkpoint: cannot reopen " + p + " to sync it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw RuntimeFailure("checkpoint: fsync of " + p + " failed: " + std::strerror(err));
}

/// Removes `path.tmp.<pid>` files left by writers that were killed (their
/// process no longer exists), so repeated preemption does not fill the disk.
void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const auto pid = static_cast<pid_t>(std::stol(digits));
    if (pid != ::getpid() && ::kill(pid, 0) == -1 && errno == ESRCH) stale.push_back(it->path());
  }
  for (const auto& f : stale) fs::remove(f, ec);
}

/// fsync the temporary, rename it over the target, fsync the directory.
void publish(const std::string& tmp, const std::string& path) {
  fsync_path(tmp, false);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw RuntimeFailure("checkpoint: cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  auto dir = std::filesystem::path(path).parent_path();
  fsync_path(dir.empty() ? std::string(".") : dir.string(), true);
}

}  // namespace

#if defined(KFACTOR_HAVE_HDF5)

namespace {

hid_t native_type(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8: return H5T_NATIVE_INT8;
    case CheckpointType::u8: return H5T_NATIVE_UINT8;
    case CheckpointType::i16: return H5T_NATIVE_INT16;
    case CheckpointType::u16: return H5T_NATIVE_UINT16;
    case CheckpointType::i32: return H5T_NATIVE_INT32;
    case CheckpointType::u32: return H5T_NATIVE_UINT32;
    case CheckpointType::i64: return H5T_NATIVE_INT64;
    case CheckpointType::u64: return H5T_NATIVE_UINT64;
    case CheckpointType::f32: return H5T_NATIVE_FLOAT;
    case CheckpointType::f64: return H5T_NATIVE_DOUBLE;
  }
  return H5T_NATIVE_DOUBLE;
}

/// Little-endian standard types in the file, whatever the host.
hid_t file_type(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8: return H5T_STD_I8LE;
    case CheckpointType::u8: return H5T_STD_U8LE;
    case CheckpointType::i16: return H5T_STD_I16LE;
    case CheckpointType::u16: return H5T_STD_U16LE;
    case CheckpointType::i32: return H5T_STD_I32LE;
    case CheckpointType::u32: return H5T_STD_U32LE;
    case CheckpointType::i64: return H5T_STD_I64LE;
    case CheckpointType::u64: return H5T_STD_U64LE;
    case CheckpointType::f32: return H5T_IEEE_F32LE;
    case CheckpointType::f64: return H5T_IEEE_F64LE;
  }
  return H5T_IEEE_F64LE;
}

/// The CheckpointType of a stored type; false for anything else.
bool stored_type(hid_t t, CheckpointType& out) {
  const auto cls = H5Tget_class(t);
  const auto size = H5Tget_size(t);
  if (cls == H5T_FLOAT) {
    if (size == 4) out = CheckpointType::f32;
    else if (size == 8) out = CheckpointType::f64;
    else return false;
    return true;
  }
  if (cls != H5T_INTEGER) return false;
  const bool s = H5Tget_sign(t) == H5T_SGN_2;
  switch (size) {
    case 1: out = s ? CheckpointType::i8 : CheckpointType::u8; return true;
    case 2: out = s ? CheckpointType::i16 : CheckpointType::u16; return true;
    case 4: out = s ? CheckpointType::i32 : CheckpointType::u32; return true;
    case 8: out = s ? CheckpointType::i64 : CheckpointType::u64; return true;
    default: return false;
  }
}

constexpr const char* format_magic = "kfactor-checkpoint";

h5::PropertyList file_access(h5::Mode mode) {
  h5::PropertyList fapl(H5Pcreate(H5P_FILE_ACCESS), mode, "creating file access properties");
  h5::check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST), mode, "setting format bounds");
  h5::check(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), mode, "setting the close degree");
  // Our temporaries are private and readers only read: no locks (they fail on some network file systems).
  h5::check(H5Pset_file_locking(fapl, false, true), mode, "disabling file locking");
  return fapl;
}

h5::PropertyList ordered_group_creation(h5::Mode mode) {
  h5::PropertyList gcpl(H5Pcreate(H5P_GROUP_CREATE), mode, "creating group properties");
  h5::check(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), mode,
            "tracking link creation order");
  return gcpl;
}


// ---- integrity seal ----------------------------------------------------------------
//
// HDF5 parses whatever a file claims, and Debian's libhdf5 hangs or crashes on
// some damaged metadata (found by tests/io/fuzz/fuzz_checkpoint: a corrupt
// global heap makes H5Aread of a string attribute loop forever). So no
// checkpoint reaches HDF5 unchecked: every file starts with an HDF5 user
// block (HDF5, h5py and h5dump skip it) holding a seal: the file's size and a
// 64-bit hash of every byte after the user block except the datasets' raw
// data, whose ranges it lists (raw data has its own per-dataset checksum, so
// a damaged value is still reported by field). The seal is checked before
// H5Fopen; it reads the metadata bytes only, not the raw data.

constexpr hsize_t seal_block = 4096;  // user block size (a power of two >= 512)
constexpr char seal_magic[16] = {'\x89', 'K', 'F', 'A', 'C', 'T', 'O', 'R', '-', 'S', 'E', 'A', 'L', '\r', '\n', '\x1a'};
constexpr std::uint64_t seal_version = 1;
constexpr std::size_t seal_header = 16 + 4 * 8;  // magic, version, file size, hash, range count
constexpr std::size_t seal_max_ranges = (seal_block - seal_header) / 16;

struct RawRange {
  std::uint64_t offset = 0, length = 0;
};

void put_u64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

/// Hash of the bytes of `fd` in [begin, end) outside `ranges` (sorted,
/// disjoint, inside [begin, end)). Returns false on a read error.
bool hash_outside(int fd, std::uint64_t begin, std::uint64_t end, const std::vector<RawRange>& ranges,
                  std::uint64_t& out) {
  std::uint64_t h = CounterRng::mix(end - begin);
  std::vector<unsigned char> buf(1 << 16);
  auto hash_span = [&](std::uint64_t from, std::uint64_t to) {
    while (from < to) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
      const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(from));
      if (got <= 0) return false;
      for (ssize_t i = 0; i < got; ++i)
        h = CounterRng::mix(h ^ (std::uint64_t(buf[static_cast<std::size_t>(i)]) | ((from + std::uint64_t(i)) << 8)));
      from += static_cast<std::uint64_t>(got);
    }
    return true;
  };
  std::uint64_t at = begin;
  for (const auto& r : ranges) {
    if (!hash_span(at, r.offset)) return false;
    at = r.offset + r.length;
  }
  if (!hash_span(at, end)) return false;
  out = h;
  return true;
}

/// The raw-data ranges of every dataset under /state and /history of the
/// closed file `path` (kfactor's own, just written: trusted).
std::vector<RawRange> raw_ranges(const std::string& path) {
  std::vector<RawRange> ranges;
  auto fapl = file_access(h5::Mode::write);
  h5::File f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), h5::Mode::write, "checkpoint: reopening " + path);
  for (const char* group : {"state", "history"}) {
    if (!h5::exists(f, group)) continue;
    h5::Group g(H5Gopen2(f, group, H5P_DEFAULT), h5::Mode::write, std::string("checkpoint: opening /") + group);
    std::vector<std::string> names;
    auto cb = [](hid_t, const char* name, const h5::link_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    };
    hsize_t idx = 0;
    h5::check(h5::link_iterate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names), h5::Mode::write,
              "checkpoint: listing a group");
    for (const auto& n : names) {
      h5::Dataset ds(H5Dopen2(g, n.c_str(), H5P_DEFAULT), h5::Mode::write, "checkpoint: opening " + n);
      const haddr_t off = H5Dget_offset(ds);
      const hsize_t len = H5Dget_storage_size(ds);
      if (off != HADDR_UNDEF && len > 0) ranges.push_back({static_cast<std::uint64_t>(off), len});  // H5Dget_offset counts from the file start, user block included
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const RawRange& a, const RawRange& b) { return a.offset < b.offset; });
  if (ranges.size() > seal_max_ranges) ranges.resize(seal_max_ranges);  // the rest is hashed
  return ranges;
}

/// Writes the seal into the user block of the closed file `path`.
void seal_file(const std::string& path) {
  const auto ranges = raw_ranges(path);
  const int fd = ::open(path.c_str(), O_RDWR);
  if (fd < 0) throw RuntimeFailure("checkpoint: cannot reopen " + path + " to seal it: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::uint64_t hash = 0;
  if (size < static_cast<off_t>(seal_block) || !hash_outside(fd, seal_block, static_cast<std::uint64_t>(size), ranges, hash))
    throw RuntimeFailure("checkpoint: cannot read back " + path + " to seal it");
  std::vector<unsigned char> block(seal_block, 0);
  std::memcpy(block.data(), seal_magic, sizeof seal_magic);
  put_u64(block.data() + 16, seal_version);
  put_u64(block.data() + 24, static_cast<std::uint64_t>(size));
  put_u64(block.data() + 32, hash);
  put_u64(block.data() + 40, ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    put_u64(block.data() + seal_header + 16 * i, ranges[i].offset);
    put_u64(block.data() + seal_header + 16 * i + 8, ranges[i].length);
  }
  if (::pwrite(fd, block.data(), block.size(), 0) != static_cast<ssize_t>(block.size()))
    throw RuntimeFailure("checkpoint: cannot write the seal of " + path + ": " + std::strerror(errno));
}

/// InputError unless `path` carries a valid seal (see above).
void check_seal(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw InputError(path + ": cannot open the checkpoint: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::vector<unsigned char> block(seal_block, 0);
  const ssize_t got = size > 0 ? ::pread(fd, block.data(), block.size(), 0) : 0;
  if (got < static_cast<ssize_t>(sizeof seal_magic) || std::memcmp(block.data(), seal_magic, sizeof seal_magic) != 0)
    throw InputError(path + ": not a readable kfactor checkpoint (no kfactor seal at its start: another kind of file, "
                            "a checkpoint of an older kfactor, or a damaged one)");
  if (got < static_cast<ssize_t>(seal_block))
    throw InputError(path + ": truncated checkpoint (" + std::to_string(size) + " bytes)");
  const auto version = get_u64(block.data() + 16);
  if (version != seal_version)
    throw InputError(path + ": checkpoint seal version " + std::to_string(version) + " is not supported");
  const auto want_size = get_u64(block.data() + 24);
  if (want_size != static_cast<std::uint64_t>(size))
    throw InputError(path + ": truncated or corrupt checkpoint (" + std::to_string(size) + " bytes; it was written with " +
                     std::to_string(want_size) + ")");
  const auto n = get_u64(block.data() + 40);
  if (n > seal_max_ranges) throw InputError(path + ": corrupt checkpoint seal (range count)");
  std::vector<RawRange> ranges(static_cast<std::size_t>(n));
  std::uint64_t at = seal_block;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    ranges[i] = {get_u64(block.data() + seal_header + 16 * i), get_u64(block.data() + seal_header + 16 * i + 8)};
    if (ranges[i].offset < at || ranges[i].length > want_size || ranges[i].offset > want_size - ranges[i].length)
      throw InputError(path + ": corrupt checkpoint seal (data ranges)");
    at = ranges[i].offset + ranges[i].length;
  }
  std::uint64_t hash = 0;
  if (!hash_outside(fd, seal_block, want_size, ranges, hash))
    throw InputError(path + ": cannot read the checkpoint: " + std::strerror(errno));
  if (hash != get_u64(block.data() + 32))
    throw InputError(path + ": corrupt checkpoint (its HDF5 metadata fails the kfactor seal's checksum)");
}
}  // namespace

// ---- writer ----------------------------------------------------------------------

struct CheckpointWriter::Impl {
  h5::Quiet quiet;
  std::string path, tmp;
  CheckpointMeta meta;
  bool committed = false;
  bool has_file = true;     // this rank writes the file (serial: yes; gather: rank 0; collective: all)
  bool collective = false;  // parallel HDF5 file shared by all ranks
#if defined(KFACTOR_HAVE_MPI)
  MPI_Comm comm = MPI_COMM_SELF;
  bool distributed = false;
#endif
  int mpi_rank = 0, mpi_size = 1;
  std::exception_ptr deferred;  // gather mode: rank 0's failure, reported at commit
  h5::File file;
  h5::Group state, history;
  std::vector<std::string> names;
  bool history_written = false;

  void open_file(hid_t fapl) {
    h5::PropertyList fcpl(H5Pcreate(H5P_FILE_CREATE), h5::Mode::write, "creating file creation properties");
    h5::check(H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), h5::Mode::write,
              "tracking link creation order");
    h5::check(H5Pset_userblock(fcpl, seal_block), h5::Mode::write, "reserving the seal's user block");
    file = h5::File(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl), h5::Mode::write,
                    "checkpoint: cannot create " + tmp);
    auto gcpl = ordered_group_creation(h5::Mode::write);
    write_meta();
    state = h5::Group(H5Gcreate2(file, "state", H5P_DEFAULT, gcpl, H5P_DEFAULT), h5::Mode::write,
                      "checkpoint: creating /state in " + tmp);
  }

  void write_meta() {
    using h5::write_attribute;
    write_attribute(file, "format", std::string(format_magic));
    write_attribute(file, "format_version", static_cast<std::int64_t>(meta.format_version));
    write_attribute(file, "solver", meta.solver);
    write_attribute(file, "precision", meta.precision);
    write_attribute(file, "rank", meta.rank);
    write_attribute(file, "backend", meta.backend);
    write_attribute(file, "iteration", meta.iteration);
    write_attribute(file, "mpi_ranks", static_cast<std::int64_t>(mpi_size));
    write_attribute(file, "options", nlohmann::json(meta.options).dump());
    write_attribute(file, "kfactor_version", std::string(KFACTOR_VERSION_STRING));
    h5::Group input(H5Gcreate2(file, "input", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), h5::Mode::write,
                    "checkpoint: creating /input");
    write_attribute(input, "rows", meta.input.rows);
    write_attribute(input, "cols", meta.input.cols);
    write_attribute(input, "nnz", meta.input.nnz);
    write_attribute(input, "checksum", meta.input.checksum);
  }

  /// Creates dataset `name` in `group` shaped like `b` (global rows) and
  /// writes this rank's part; `whole` is false when only rank 0's data counts.
  void write_dataset(hid_t group, const FieldBlock& b, std::uint64_t checksum) {
    std::vector<hsize_t> dims;
    if (b.rank >= 1) dims.push_back(static_cast<hsize_t>(b.global_rows));
    if (b.rank == 2) dims.push_back(static_cast<hsize_t>(b.cols));
    auto fspace = h5::dataspace(h5::Mode::write, dims);
    h5::Dataset ds(H5Dcreate2(group, b.name.c_str(), file_type(b.type), fspace, H5P_DEFAULT, H5P_DEFAULT,
                              H5P_DEFAULT),
                   h5::Mode::write, "checkpoint: creating dataset '" + b.name + "'");
    h5::write_attribute(ds, "checksum", checksum);
    const std::int64_t total = b.global_rows * b.cols;
    if (total == 0) return;
    if (!collective) {
      h5::check(H5Dwrite(ds, native_type(b.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data), h5::Mode::write,
                "checkpoint: writing dataset '" + b.name + "'");
      return;
    }
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
    // Collective: every rank writes its rows (replicated fields: rank 0 all, others none).
    std::int64_t first = b.first_row, rows = b.local_rows;
    if (!b.partitioned) {
      first = 0;
      rows = mpi_rank == 0 ? b.global_rows : 0;
    }
    h5::PropertyList dxpl(H5Pcreate(H5P_DATASET_XFER), h5::Mode::write, "creating transfer properties");
    h5::check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), h5::Mode::write, "collective transfer");
    const hsize_t count_elems = static_cast<hsize_t>(std::max<std::int64_t>(rows * b.cols, 1));
    auto mspace = h5::dataspace(h5::Mode::write, {count_elems});
    if (rows == 0) {
      h5::check(H5Sselect_none(fspace), h5::Mode::write, "selecting none");
      h5::check(H5Sselect_none(mspace), h5::Mode::write, "selecting none");
    } else if (b.rank >= 1) {
      hsize_t start[2] = {static_cast<hsize_t>(first), 0};
      hsize_t count[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(b.cols)};
      h5::check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr), h5::Mode::write,
                "selecting rows of '" + b.name + "'");
    }
    h5::check(H5Dwrite(ds, native_type(b.type), mspace, fspace, dxpl, b.data), h5::Mode::write,
              "checkpoint: writing dataset '" + b.name + "'");
#endif
  }
};

CheckpointWriter::CheckpointWriter(const std::string& path, const CheckpointMeta& meta) : impl_(new Impl) {
  impl_->path = path;
  impl_->tmp = path + ".tmp." + std::to_string(::getpid());
  impl_->meta = meta;
  remove_stale_temporaries(path);
  try {
    auto fapl = file_access(h5::Mode::write);
    impl_->open_file(fapl);
  } catch (...) {
    impl_->state.reset();
    impl_->file.reset();
    std::remove(impl_->tmp.c_str());
    throw;
  }
}

#if defined(KFACTOR_HAVE_MPI)
CheckpointWriter::CheckpointWriter(const std::string& path, const CheckpointMeta& meta, MPI_Comm comm,
                                   DistributedIo io)
    : impl_(new Impl) {
  auto& m = *impl_;
  m.path = path;
  m.meta = meta;
  m.comm = comm;
  m.distributed = true;
  MPI_Comm_rank(comm, &m.mpi_rank);
  MPI_Comm_size(comm, &m.mpi_size);
  long long pid = ::getpid();
  MPI_Bcast(&pid, 1, MPI_LONG_LONG, 0, comm);
  m.tmp = path + ".tmp." + std::to_string(pid);
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  m.collective = io != DistributedIo::gather;
#else
  if (io == DistributedIo::collective)
    throw UsageError("checkpoint: collective writes need parallel HDF5; this build has a serial HDF5");
#endif
  if (m.collective) {
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
    std::exception_ptr error;
    try {
      if (m.mpi_rank == 0) remove_stale_temporaries(path);
      auto fapl = file_access(h5::Mode::write);
      h5::check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), h5::Mode::write, "selecting the MPI-IO driver");
      h5::check(H5Pset_all_coll_metadata_ops(fapl, true), h5::Mode::write, "collective metadata reads");
      h5::check(H5Pset_coll_metadata_write(fapl, true), h5::Mode::write, "collective metadata writes");
      m.open_file(fapl);
    } catch (...) {
      error = std::current_exception();
    }
    agree(comm, error);
#endif
  } else {
    m.has_file = m.mpi_rank == 0;
    std::exception_ptr error;
    if (m.has_file) try {
        remove_stale_temporaries(path);
        auto fapl = file_access(h5::Mode::write);
        m.open_file(fapl);
      } catch (...) {
        error = std::current_exception();
      }
    agree(comm, error);
  }
}
#endif

CheckpointWriter::~CheckpointWriter() {
  if (!impl_ || impl_->committed) return;
  impl_->state.reset();
  impl_->history.reset();
  impl_->file.reset();
  if (impl_->mpi_rank == 0) std::remove(impl_->tmp.c_str());
}

void CheckpointWriter::write_field(const FieldBlock& block) {
  auto& m = *impl_;
  check_name(block.name);
  if (std::find(m.names.begin(), m.names.end(), block.name) != m.names.end())
    throw UsageError("checkpoint: the State lists field '" + block.name + "' twice");
  m.names.push_back(block.name);
  const std::int64_t count = block.local_rows * block.cols;
#if defined(KFACTOR_HAVE_MPI)
  if (m.distributed) {
    if (block.partitioned) {
      std::uint64_t sum = block_checksum(block.data, block.type, block.first_row * block.cols, count);
      sum = allreduce_sum(m.comm, sum);
      if (m.collective) {
        m.write_dataset(m.state, block, sum);
        return;
      }
      // Gather to rank 0 in rank order (check_tiling made the blocks contiguous and ordered).
      const std::size_t w = size_of(block.type);
      const long long bytes = static_cast<long long>(count) * static_cast<long long>(w);
      std::vector<long long> all(static_cast<std::size_t>(m.mpi_size));
      MPI_Gather(&bytes, 1, MPI_LONG_LONG, all.data(), 1, MPI_LONG_LONG, 0, m.comm);
      std::vector<int> counts(all.size()), displs(all.size());
      long long total = 0;
      int too_big = 0;
      for (std::size_t r = 0; r < all.size(); ++r) {
        if (total > INT_MAX || all[r] > INT_MAX) too_big = 1;
        counts[r] = static_cast<int>(all[r]);
        displs[r] = static_cast<int>(total);
        total += all[r];
      }
      if (total > INT_MAX) too_big = 1;
      MPI_Bcast(&too_big, 1, MPI_INT, 0, m.comm);
      if (too_big)
        throw RuntimeFailure("checkpoint: field '" + block.name +
                             "' is too large (>2 GiB) to gather to rank 0; use parallel HDF5 (collective writes)");
      std::vector<unsigned char> whole(m.mpi_rank == 0 ? static_cast<std::size_t>(total) : 0);
      MPI_Gatherv(block.data, static_cast<int>(bytes), MPI_BYTE, whole.data(), counts.data(), displs.data(), MPI_BYTE,
                  0, m.comm);
      if (m.has_file && !m.deferred) try {
          FieldBlock full = block;
          full.partitioned = false;
          full.first_row = 0;
          full.local_rows = block.global_rows;
          full.data = whole.data();
          m.write_dataset(m.state, full, sum);
        } catch (...) {
          m.deferred = std::current_exception();
        }
      return;
    }
    // Replicated: rank 0's value and checksum.
    std::uint64_t sum = block_checksum(block.data, block.type, 0, count);
    MPI_Bcast(&sum, 1, MPI_UINT64_T, 0, m.comm);
    if (m.collective) {
      m.write_dataset(m.state, block, sum);
    } else if (m.has_file && !m.deferred) {
      try {
        m.write_dataset(m.state, block, sum);
      } catch (...) {
        m.deferred = std::current_exception();
      }
    }
    return;
  }
#endif
  m.write_dataset(m.state, block, block_checksum(block.data, block.type, 0, count));
}

/// The two /history datasets over host buffers: iteration (n) and values (n x c).
static std::pair<FieldBlock, FieldBlock> history_blocks(std::vector<std::int32_t>& it, std::vector<double>& values,
                                                 std::int64_t n, std::int64_t c) {
  FieldBlock bi;
  bi.name = "iteration";
  bi.type = CheckpointType::i32;
  bi.rank = 1;
  bi.global_rows = bi.local_rows = n;
  bi.data = it.data();
  FieldBlock bv;
  bv.name = "values";
  bv.type = CheckpointType::f64;
  bv.rank = 2;
  bv.global_rows = bv.local_rows = n;
  bv.cols = c;
  bv.data = values.data();
  return {bi, bv};
}

void CheckpointWriter::write_history(const MetricHistory& h) {
  auto& m = *impl_;
  if (m.history_written) throw UsageError("checkpoint: the State lists more than one MetricHistory");
  m.history_written = true;
  const std::int64_t n = static_cast<std::int64_t>(h.rows.size()), c = static_cast<std::int64_t>(h.names.size());
  if (static_cast<std::int64_t>(h.iterations.size()) != n)
    throw UsageError("checkpoint: MetricHistory has " + std::to_string(h.iterations.size()) + " iterations for " +
                     std::to_string(n) + " rows");
  std::vector<std::int32_t> it(h.iterations.begin(), h.iterations.end());
  std::vector<double> values(static_cast<std::size_t>(n * c));
  for (std::int64_t r = 0; r < n; ++r) {
    if (static_cast<std::int64_t>(h.rows[r].size()) != c)
      throw UsageError("checkpoint: MetricHistory row " + std::to_string(r) + " has " +
                       std::to_string(h.rows[r].size()) + " values for " + std::to_string(c) + " names");
    std::copy(h.rows[r].begin(), h.rows[r].end(), values.begin() + r * c);
  }
  auto blocks = history_blocks(it, values, n, c);
  FieldBlock &bi = blocks.first, &bv = blocks.second;
  std::uint64_t si = block_checksum(it.data(), bi.type, 0, n), sv = block_checksum(values.data(), bv.type, 0, n * c);
  auto write = [&] {
    auto gcpl = ordered_group_creation(h5::Mode::write);
    m.history = h5::Group(H5Gcreate2(m.file, "history", H5P_DEFAULT, gcpl, H5P_DEFAULT), h5::Mode::write,
                          "checkpoint: creating /history");
    h5::write_attribute(m.history, "names", h.names);
    m.write_dataset(m.history, bi, si);
    m.write_dataset(m.history, bv, sv);
  };
#if defined(KFACTOR_HAVE_MPI)
  if (m.distributed) {
    MPI_Bcast(&si, 1, MPI_UINT64_T, 0, m.comm);
    MPI_Bcast(&sv, 1, MPI_UINT64_T, 0, m.comm);
    if (m.collective) {
      // Attributes are written collectively: every rank must pass rank 0's names.
      write();
    } else if (m.has_file && !m.deferred) {
      try {
        write();
      } catch (...) {
        m.deferred = std::current_exception();
      }
    }
    return;
  }
#endif
  write();
}

void CheckpointWriter::commit() {
  auto& m = *impl_;
  auto close_all = [&] {
    h5::check(H5Fflush(m.file, H5F_SCOPE_GLOBAL), h5::Mode::write, "checkpoint: flushing " + m.tmp);
    m.state.reset();
    m.history.reset();
    h5::check(m.file.reset(), h5::Mode::write, "checkpoint: closing " + m.tmp);
  };
#if defined(KFACTOR_HAVE_MPI)
  if (m.distributed) {
    std::exception_ptr error = m.deferred;
    if (m.collective) {
      try {
        close_all();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    } else if (m.has_file && !error) {
      try {
        close_all();
      } catch (...) {
        error = std::current_exception();
      }
    }
    agree(m.comm, error);
    if (m.mpi_rank == 0) try {
        seal_file(m.tmp);
        publish(m.tmp, m.path);
      } catch (...) {
        error = std::current_exception();
      }
    agree(m.comm, error);
    m.committed = true;
    return;
  }
#endif
  close_all();
  seal_file(m.tmp);
  publish(m.tmp, m.path);
  m.committed = true;
}

// ---- reader ----------------------------------------------------------------------

struct CheckpointReader::Impl {
  h5::Quiet quiet;
  std::string path;
  CheckpointMeta meta;
  h5::File file;
  h5::Group state;

  [[noreturn]] void bad(const std::string& what) const { throw InputError(path + ": " + what); }

  h5::Dataset open_dataset(hid_t group, const std::string& name, const std::string& where) const {
    if (!h5::exists(group, name)) bad(where + " '" + name + "' is missing from the checkpoint");
    return h5::Dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), h5::Mode::read,
                       path + ": cannot open " + where + " '" + name + "' (corrupt file)");
  }

  FieldInfo info(hid_t group, const std::string& name, const std::string& where) const {
    auto ds = open_dataset(group, name, where);
    FieldInfo f;
    f.name = name;
    h5::Datatype t(H5Dget_type(ds), h5::Mode::read, path + ": type of '" + name + "'");
    if (!stored_type(t, f.type)) bad(where + " '" + name + "' has an element type kfactor does not store");
    h5::Dataspace s(H5Dget_space(ds), h5::Mode::read, path + ": shape of '" + name + "'");
    const int nd = H5Sget_simple_extent_ndims(s);
    if (nd < 0 || nd > 2) bad(where + " '" + name + "' has rank " + std::to_string(nd) + " (0, 1 or 2 expected)");
    hsize_t dims[2] = {1, 1};
    if (nd > 0) H5Sget_simple_extent_dims(s, dims, nullptr);
    // Sizes are checked before anyone allocates for them: a corrupt header
    // may claim any shape, but kfactor writes every element, so a dataset
    // must store at least rows * cols elements.
    constexpr hsize_t max_extent = hsize_t(1) << 62;
    if (dims[0] > max_extent || dims[1] > max_extent)
      bad(where + " '" + name + "' claims an impossible shape (corrupt file)");
    f.rank = nd;
    f.rows = static_cast<std::int64_t>(dims[0]);
    f.cols = nd == 2 ? static_cast<std::int64_t>(dims[1]) : 1;
    std::int64_t elements = 0, bytes = 0;
    if (__builtin_mul_overflow(f.rows, f.cols, &elements) ||
        __builtin_mul_overflow(elements, static_cast<std::int64_t>(size_of(f.type)), &bytes))
      bad(where + " '" + name + "' claims " + dimensions(nd, f.rows, f.cols) + " elements, more than 2^63 bytes (corrupt file)");
    const hsize_t stored = H5Dget_storage_size(ds);
    if (stored < static_cast<hsize_t>(bytes))
      bad(where + " '" + name + "' claims " + dimensions(nd, f.rows, f.cols) + " " + to_string(f.type) + " elements (" +
          std::to_string(bytes) + " bytes) but stores " + std::to_string(stored) + " bytes (truncated or corrupt file)");
    f.checksum = h5::read_uint_attribute(ds, "checksum", path + ": " + where + " '" + name + "'");
    return f;
  }

  std::uint64_t read(hid_t group, const FieldBlock& b, const std::string& where) const {
    auto ds = open_dataset(group, b.name, where);
    const std::int64_t count = b.local_rows * b.cols;
    if (count > 0) {
      if (b.rank == 0 || (b.first_row == 0 && b.local_rows == b.global_rows)) {
        h5::check(H5Dread(ds, native_type(b.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data), h5::Mode::read,
                  path + ": reading " + where + " '" + b.name + "' (truncated or corrupt file)");
      } else {
        h5::Dataspace fspace(H5Dget_space(ds), h5::Mode::read, path + ": shape of '" + b.name + "'");
        hsize_t start[2] = {static_cast<hsize_t>(b.first_row), 0};
        hsize_t cnt[2] = {static_cast<hsize_t>(b.local_rows), static_cast<hsize_t>(b.cols)};
        h5::check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, cnt, nullptr), h5::Mode::read,
                  path + ": selecting rows of '" + b.name + "'");
        auto mspace = h5::dataspace(h5::Mode::read, {static_cast<hsize_t>(count)});
        h5::check(H5Dread(ds, native_type(b.type), mspace, fspace, H5P_DEFAULT, b.data), h5::Mode::read,
                  path + ": reading rows of " + where + " '" + b.name + "' (truncated or corrupt file)");
      }
    }
    return block_checksum(b.data, b.type, b.first_row * b.cols, count);
  }
};

CheckpointReader::CheckpointReader(const std::string& path) : impl_(new Impl) {
  auto& m = *impl_;
  m.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": checkpoint file does not exist");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a checkpoint file");
  check_seal(path);
  auto fapl = file_access(h5::Mode::read);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) {
    const std::string detail = h5::last_error();
    throw InputError(path + ": not a readable HDF5 file (truncated or corrupt checkpoint)" +
                     (detail.empty() ? std::string() : " (HDF5: " + detail + ")"));
  }
  m.file = h5::File(f, h5::Mode::read, path);
  const std::string where = path;
  if (!h5::has_attribute(m.file, "format") ||
      h5::read_string_attribute(m.file, "format", where) != format_magic)
    throw InputError(path + ": not a kfactor checkpoint (no format=\"kfactor-checkpoint\" attribute)");
  const auto version = h5::read_int_attribute(m.file, "format_version", where);
  if (version != checkpoint_format_version)
    throw InputError(path + ": checkpoint format version " + std::to_string(version) +
                     " is not supported (this build reads version " + std::to_string(checkpoint_format_version) +
                     ")");
  m.meta.format_version = static_cast<int>(version);
  m.meta.solver = h5::read_string_attribute(m.file, "solver", where);
  m.meta.precision = h5::read_string_attribute(m.file, "precision", where);
  m.meta.rank = h5::read_int_attribute(m.file, "rank", where);
  m.meta.backend = h5::read_string_attribute(m.file, "backend", where);
  m.meta.iteration = h5::read_int_attribute(m.file, "iteration", where);
  m.meta.mpi_ranks = static_cast<int>(h5::read_int_attribute(m.file, "mpi_ranks", where));
  {
    const auto text = h5::read_string_attribute(m.file, "options", where);
    const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) m.bad("attribute 'options' is not a JSON object (corrupt checkpoint)");
    for (const auto& [key, value] : j.items())
      m.meta.options[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  if (!h5::exists(m.file, "input")) m.bad("group /input is missing (corrupt checkpoint)");
  h5::Group input(H5Gopen2(m.file, "input", H5P_DEFAULT), h5::Mode::read, path + ": opening /input");
  m.meta.input.rows = h5::read_int_attribute(input, "rows", path + ": /input");
  m.meta.input.cols = h5::read_int_attribute(input, "cols", path + ": /input");
  m.meta.input.nnz = h5::read_int_attribute(input, "nnz", path + ": /input");
  m.meta.input.checksum = h5::read_uint_attribute(input, "checksum", path + ": /input");
  if (!h5::exists(m.file, "state")) m.bad("group /state is missing (corrupt checkpoint)");
  m.state = h5::Group(H5Gopen2(m.file, "state", H5P_DEFAULT), h5::Mode::read, path + ": opening /state");
}

CheckpointReader::~CheckpointReader() = default;

const std::string& CheckpointReader::path() const { return impl_->path; }
const CheckpointMeta& CheckpointReader::meta() const { return impl_->meta; }

void CheckpointReader::expect(const CheckpointMeta& e) const {
  const auto& s = impl_->meta;
  const auto& p = impl_->path;
  if (e.format_version != s.format_version)
    throw InputError(p + ": checkpoint format version " + std::to_string(s.format_version) + ", expected " +
                     std::to_string(e.format_version));
  if (!e.solver.empty() && e.solver != s.solver)
    throw InputError(p + ": checkpoint was written by solver '" + s.solver + "', not '" + e.solver + "'");
  if (!e.precision.empty() && e.precision != s.precision)
    throw InputError(p + ": checkpoint holds " + s.precision + " factors; this run uses " + e.precision +
                     " (restart with --precision " + s.precision + ")");
  if (e.rank != 0 && e.rank != s.rank)
    throw InputError(p + ": checkpoint has rank K = " + std::to_string(s.rank) + "; this run asks for K = " +
                     std::to_string(e.rank));
  if (!e.input.empty() && !(e.input == s.input))
    throw InputError(p + ": checkpoint was written for another input matrix (" + to_string(s.input) +
                     "); this input is " + to_string(e.input));
  for (const auto& [name, value] : e.options) {
    const auto it = s.options.find(name);
    if (it == s.options.end())
      throw UsageError(p + ": checkpoint does not record option '" + name +
                       "'; it was written by another version of this solver (start a new run)");
    if (it->second != value)
      throw UsageError(p + ": checkpoint was written with " + name + " = " + it->second + "; this run has " + name +
                       " = " + value + " (restart with the same value, or start a new run without the checkpoint)");
  }
}

std::vector<std::string> CheckpointReader::field_names() const {
  std::vector<std::string> names;
  auto cb = [](hid_t, const char* name, const h5::link_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  hsize_t idx = 0;
  if (h5::link_iterate(impl_->state, H5_INDEX_CRT_ORDER, H5_ITER_INC, &idx, cb, &names) < 0) {
    names.clear();
    idx = 0;
    h5::check(h5::link_iterate(impl_->state, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names), h5::Mode::read,
              impl_->path + ": listing /state");
  }
  return names;
}

FieldInfo CheckpointReader::field(const std::string& name) const {
  if (!h5::exists(impl_->state, name)) {
    std::string have;
    for (const auto& n : field_names()) have += (have.empty() ? "" : ", ") + n;
    impl_->bad("field '" + name + "' is missing from the checkpoint (it has: " + have + ")");
  }
  return impl_->info(impl_->state, name, "field");
}

void CheckpointReader::check_field(const FieldBlock& want) const {
  const FieldInfo f = field(want.name);
  if (f.type != want.type)
    impl_->bad("field '" + want.name + "' is stored as " + to_string(f.type) + " but the state holds " +
               to_string(want.type));
  const std::int64_t rows = want.partitioned ? want.global_rows : want.local_rows;
  if (f.rank != want.rank || f.rows != rows || f.cols != want.cols)
    impl_->bad("field '" + want.name + "' is stored as " + dimensions(f.rank, f.rows, f.cols) +
               " but the state holds " + dimensions(want.rank, rows, want.cols) +
               (want.partitioned ? " (rows over all ranks)" : ""));
}

std::uint64_t CheckpointReader::read_field(const FieldBlock& want) const {
  check_field(want);
  return impl_->read(impl_->state, want, "field");
}

void CheckpointReader::verify_checksum(const std::string& name, std::uint64_t sum) const {
  if (field(name).checksum != sum)
    impl_->bad("field '" + name + "' fails its checksum (corrupt checkpoint)");
}

bool CheckpointReader::has_history() const { return h5::exists(impl_->file, "history"); }

MetricHistory CheckpointReader::read_history() const {
  auto& m = *impl_;
  if (!has_history()) m.bad("group /history is missing");
  h5::Group g(H5Gopen2(m.file, "history", H5P_DEFAULT), h5::Mode::read, m.path + ": opening /history");
  MetricHistory h;
  h.names = h5::read_strings_attribute(g, "names", m.path + ": /history");
  const FieldInfo fi = m.info(g, "iteration", "history dataset");
  const FieldInfo fv = m.info(g, "values", "history dataset");
  const auto c = static_cast<std::int64_t>(h.names.size());
  if (fi.type != CheckpointType::i32 || fi.rank != 1 || fv.type != CheckpointType::f64 || fv.rank != 2 ||
      fv.rows != fi.rows || fv.cols != c)
    m.bad("/history datasets have inconsistent shapes (corrupt checkpoint)");
  const std::int64_t n = fi.rows;
  std::vector<std::int32_t> it(static_cast<std::size_t>(n));
  std::vector<double> values(static_cast<std::size_t>(n * c));
  auto blocks = history_blocks(it, values, n, c);
  FieldBlock &bi = blocks.first, &bv = blocks.second;
  if (m.read(g, bi, "history dataset") != fi.checksum || m.read(g, bv, "history dataset") != fv.checksum)
    m.bad("/history fails its checksum (corrupt checkpoint)");
  h.iterations.assign(it.begin(), it.end());
  for (std::int64_t r = 0; r < n; ++r) h.rows.emplace_back(values.begin() + r * c, values.begin() + (r + 1) * c);
  return h;
}

#else  // no HDF5

struct CheckpointWriter::Impl {};
struct CheckpointReader::Impl {
  std::string path;
  CheckpointMeta meta;
};
namespace {
[[noreturn]] void no_hdf5() { throw RuntimeFailure("kfactor was built without HDF5: checkpoints are unavailable"); }
}  // namespace
CheckpointWriter::CheckpointWriter(const std::string&, const CheckpointMeta&) { no_hdf5(); }
#if defined(KFACTOR_HAVE_MPI)
CheckpointWriter::CheckpointWriter(const std::string&, const CheckpointMeta&, MPI_Comm, DistributedIo) { no_hdf5(); }
#endif
CheckpointWriter::~CheckpointWriter() = default;
void CheckpointWriter::write_field(const FieldBlock&) { no_hdf5(); }
void CheckpointWriter::write_history(const MetricHistory&) { no_hdf5(); }
void CheckpointWriter::commit() { no_hdf5(); }
CheckpointReader::CheckpointReader(const std::string&) { no_hdf5(); }
CheckpointReader::~CheckpointReader() = default;
const std::string& CheckpointReader::path() const { return impl_->path; }
const CheckpointMeta& CheckpointReader::meta() const { return impl_->meta; }
void CheckpointReader::expect(const CheckpointMeta&) const { no_hdf5(); }
std::vector<std::string> CheckpointReader::field_names() const { no_hdf5(); }
FieldInfo CheckpointReader::field(const std::string&) const { no_hdf5(); }
void CheckpointReader::check_field(const FieldBlock&) const { no_hdf5(); }
std::uint64_t CheckpointReader::read_field(const FieldBlock&) const { no_hdf5(); }
void CheckpointReader::verify_checksum(const std::string&, std::uint64_t) const { no_hdf5(); }
bool CheckpointReader::has_history() const { no_hdf5(); }
MetricHistory CheckpointReader::read_history() const { no_hdf5(); }

#endif

// ---- MPI helpers -------------------------------------------------------------------

#if defined(KFACTOR_HAVE_MPI)
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
  long long next = 0;
  for (int r = 0; r < size; ++r) {
    const long long first = all[3 * r], rows = all[3 * r + 1], global = all[3 * r + 2];
    if (global != b.global_rows || first != next)
      throw UsageError("checkpoint: the row blocks of field '" + b.name +
                       "' do not tile its rows in rank order (rank " + std::to_string(r) + " starts at row " +
                       std::to_string(first) + ", expected " + std::to_string(next) + ", of " +
                       std::to_string(global) + ")");
    next += rows;
  }
  if (next != b.global_rows)
    throw UsageError("checkpoint: the row blocks of field '" + b.name + "' cover " + std::to_string(next) + " of " +
                     std::to_string(b.global_rows) + " rows");
}

void agree(MPI_Comm comm, const std::exception_ptr& local_error) {
  int mine = local_error ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
  if (local_error) std::rethrow_exception(local_error);
  if (any) throw RuntimeFailure("checkpoint: the operation failed on another MPI rank");
}

std::uint64_t allreduce_sum(MPI_Comm comm, std::uint64_t local) {
  std::uint64_t out = 0;
  MPI_Allreduce(&local, &out, 1, MPI_UINT64_T, MPI_SUM, comm);
  return out;
}
#endif

}  // namespace detail

CheckpointInfo inspect_checkpoint(const std::string& path, bool verify) {
  detail::CheckpointReader r(path);
  CheckpointInfo info;
  info.meta = r.meta();
  for (const auto& name : r.field_names()) {
    auto f = r.field(name);
    if (verify) {
      detail::FieldBlock b;
      b.name = name;
      b.type = f.type;
      b.rank = f.rank;
      b.global_rows = b.local_rows = f.rows;
      b.cols = f.cols;
      std::vector<unsigned char> buf(static_cast<std::size_t>(f.rows * f.cols) * detail::size_of(f.type) + 1);
      b.data = buf.data();
      r.verify_checksum(name, r.read_field(b));
    }
    info.fields.push_back(std::move(f));
  }
  if (r.has_history()) {
    const auto h = r.read_history();
    info.history_names = h.names;
    info.history_rows = h.size();
  }
  return info;
}

}  // namespace kfactor
