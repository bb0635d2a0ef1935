// Reading checkpoints: the element-type helpers, the seal check and
// CheckpointReader, the compiled half of include/kfactor/io/checkpoint.hpp's
// load side (the writer is writer.cpp and writer_mpi.cpp). This file is
// self-contained on purpose: the checkpoint fuzz target (tests/io/fuzz)
// compiles it alone against HDF5.
#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

#include "format.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace kfactor {
namespace detail {

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

namespace ckpt {

std::pair<FieldBlock, FieldBlock> history_blocks(std::vector<std::int32_t>& it, std::vector<double>& values,
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

std::vector<RawRange> raw_ranges(hid_t file, h5::Mode mode, const std::string& where) {
  std::vector<RawRange> ranges;
  for (const char* group : {"state", "history"}) {
    if (!h5::exists(file, group)) continue;
    h5::Group g(H5Gopen2(file, group, H5P_DEFAULT), mode, where + ": opening /" + group);
    std::vector<std::string> names;
    auto cb = [](hid_t, const char* name, const h5::link_info_t*, void* out) -> herr_t {
      static_cast<std::vector<std::string>*>(out)->emplace_back(name);
      return 0;
    };
    hsize_t idx = 0;
    h5::check(h5::link_iterate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, cb, &names), mode, where + ": listing /" + group);
    for (const auto& n : names) {
      h5::Dataset ds(H5Dopen2(g, n.c_str(), H5P_DEFAULT), mode, where + ": opening " + n);
      // H5Dget_offset counts from the file start, user block included.
      const haddr_t off = H5Dget_offset(ds);
      const hsize_t len = H5Dget_storage_size(ds);
      if (off != HADDR_UNDEF && len > 0) ranges.push_back({static_cast<std::uint64_t>(off), len});
    }
  }
  std::sort(ranges.begin(), ranges.end(), [](const RawRange& a, const RawRange& b) { return a.offset < b.offset; });
  if (ranges.size() > seal_max_ranges) ranges.resize(seal_max_ranges);  // the rest is hashed
  return ranges;
}

namespace {

/// Hash of the bytes of `fd` in [seal_block, size) outside `ranges`; false on
/// a read error.
bool hash_file(int fd, std::uint64_t size, const std::vector<RawRange>& ranges, std::uint64_t& out) {
  SealHash h(size - seal_block);
  std::vector<unsigned char> buf(1 << 16);
  const bool ok = for_each_sealed_span(seal_block, size, ranges, [&](std::uint64_t from, std::uint64_t to) {
    while (from < to) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
      const ssize_t got = ::pread(fd, buf.data(), want, static_cast<off_t>(from));
      if (got <= 0) return false;
      h.add(buf.data(), static_cast<std::size_t>(got), from);
      from += static_cast<std::uint64_t>(got);
    }
    return true;
  });
  out = h.value();
  return ok;
}

void fill_seal_block(unsigned char* block, std::uint64_t size, std::uint64_t hash,
                     const std::vector<RawRange>& ranges) {
  std::memset(block, 0, seal_block);
  std::memcpy(block, seal_magic, sizeof seal_magic);
  put_u64(block + 16, seal_version);
  put_u64(block + 24, size);
  put_u64(block + 32, hash);
  put_u64(block + 40, ranges.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    put_u64(block + seal_header + 16 * i, ranges[i].offset);
    put_u64(block + seal_header + 16 * i + 8, ranges[i].length);
  }
}

}  // namespace

void seal_image(std::vector<unsigned char>& image, const std::vector<RawRange>& ranges) {
  const std::uint64_t size = image.size();
  if (size < seal_block) throw RuntimeFailure("checkpoint: the file image is smaller than its user block");
  SealHash h(size - seal_block);
  for_each_sealed_span(seal_block, size, ranges, [&](std::uint64_t from, std::uint64_t to) {
    h.add(image.data() + from, static_cast<std::size_t>(to - from), from);
    return true;
  });
  fill_seal_block(image.data(), size, h.value(), ranges);
}

void seal_file(const std::string& path, const std::vector<RawRange>& ranges) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw RuntimeFailure("checkpoint: cannot reopen " + path + " to seal it: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::uint64_t hash = 0;
  if (size < static_cast<off_t>(seal_block) || !hash_file(fd, static_cast<std::uint64_t>(size), ranges, hash))
    throw RuntimeFailure("checkpoint: cannot read back " + path + " to seal it");
  std::vector<unsigned char> block(seal_block);
  fill_seal_block(block.data(), static_cast<std::uint64_t>(size), hash, ranges);
  if (::pwrite(fd, block.data(), block.size(), 0) != static_cast<ssize_t>(block.size()))
    throw RuntimeFailure("checkpoint: cannot write the seal of " + path + ": " + std::strerror(errno));
}

std::vector<RawRange> check_seal(const std::string& path) {
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
    throw InputError(path +
                     ": not a readable kfactor checkpoint (no kfactor seal at its start: another kind of file, "
                     "a checkpoint of an older kfactor, or a damaged one)");
  if (got < static_cast<ssize_t>(seal_block))
    throw InputError(path + ": truncated checkpoint (" + std::to_string(size) + " bytes)");
  const auto version = get_u64(block.data() + 16);
  if (version != seal_version)
    throw InputError(path + ": checkpoint seal version " + std::to_string(version) + " is not supported");
  const auto want_size = get_u64(block.data() + 24);
  if (want_size != static_cast<std::uint64_t>(size))
    throw InputError(path + ": truncated or corrupt checkpoint (" + std::to_string(size) +
                     " bytes; it was written with " + std::to_string(want_size) + ")");
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
  if (!hash_file(fd, want_size, ranges, hash))
    throw InputError(path + ": cannot read the checkpoint: " + std::strerror(errno));
  if (hash != get_u64(block.data() + 32))
    throw InputError(path + ": corrupt checkpoint (its HDF5 metadata fails the kfactor seal's checksum)");
  return ranges;
}

}  // namespace ckpt

namespace {
/// The CheckpointType of a stored type; false for anything else.
bool stored_type(hid_t t, CheckpointType& out) {
  const auto cls = H5Tget_class(t);
  const auto size = H5Tget_size(t);
  if (cls == H5T_FLOAT) {
    if (size == 4)
      out = CheckpointType::f32;
    else if (size == 8)
      out = CheckpointType::f64;
    else
      return false;
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
}  // namespace

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
      bad(where + " '" + name + "' claims " + ckpt::dimensions(nd, f.rows, f.cols) +
          " elements, more than 2^63 bytes (corrupt file)");
    const hsize_t stored = H5Dget_storage_size(ds);
    if (stored < static_cast<hsize_t>(bytes))
      bad(where + " '" + name + "' claims " + ckpt::dimensions(nd, f.rows, f.cols) + " " + to_string(f.type) +
          " elements (" + std::to_string(bytes) + " bytes) but stores " + std::to_string(stored) +
          " bytes (truncated or corrupt file)");
    f.checksum = h5::read_uint_attribute(ds, "checksum", path + ": " + where + " '" + name + "'");
    return f;
  }

  std::uint64_t read(hid_t group, const FieldBlock& b, const std::string& where) const {
    auto ds = open_dataset(group, b.name, where);
    const std::int64_t count = b.local_rows * b.cols;
    if (count > 0) {
      if (b.rank == 0 || (b.first_row == 0 && b.local_rows == b.global_rows)) {
        h5::check(H5Dread(ds, ckpt::native_type(b.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data), h5::Mode::read,
                  path + ": reading " + where + " '" + b.name + "' (truncated or corrupt file)");
      } else {
        h5::Dataspace fspace(H5Dget_space(ds), h5::Mode::read, path + ": shape of '" + b.name + "'");
        hsize_t start[2] = {static_cast<hsize_t>(b.first_row), 0};
        hsize_t cnt[2] = {static_cast<hsize_t>(b.local_rows), static_cast<hsize_t>(b.cols)};
        h5::check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, cnt, nullptr), h5::Mode::read,
                  path + ": selecting rows of '" + b.name + "'");
        auto mspace = h5::dataspace(h5::Mode::read, {static_cast<hsize_t>(count)});
        h5::check(H5Dread(ds, ckpt::native_type(b.type), mspace, fspace, H5P_DEFAULT, b.data), h5::Mode::read,
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
  // Only a regular file: a FIFO would block the reads below until a writer
  // comes, a device would never end.
  if (const auto st = std::filesystem::status(path, ec); !std::filesystem::is_regular_file(st))
    throw InputError(path + (std::filesystem::is_directory(st) ? ": is a directory" : ": is not a regular file") +
                     ", not a checkpoint file");
  const auto sealed_ranges = ckpt::check_seal(path);
  auto fapl = ckpt::file_access(h5::Mode::read);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0) {
    const std::string detail = h5::last_error();
    throw InputError(path + ": not a readable HDF5 file (truncated or corrupt checkpoint)" +
                     (detail.empty() ? std::string() : " (HDF5: " + detail + ")"));
  }
  m.file = h5::File(f, h5::Mode::read, path);
  const std::string where = path;
  // The seal hashed everything but these ranges: they must be the datasets' raw data, nothing else.
  if (ckpt::raw_ranges(m.file, h5::Mode::read, path) != sealed_ranges)
    m.bad("the ranges its seal leaves out are not the raw data of its datasets (corrupt checkpoint)");
  if (!h5::has_attribute(m.file, "format") || h5::read_string_attribute(m.file, "format", where) != ckpt::format_magic)
    throw InputError(path + ": not a kfactor checkpoint (no format=\"kfactor-checkpoint\" attribute)");
  const auto version = h5::read_int_attribute(m.file, "format_version", where);
  if (version != checkpoint_format_version)
    throw InputError(path + ": checkpoint format version " + std::to_string(version) +
                     " is not supported (this build reads version " + std::to_string(checkpoint_format_version) + ")");
  m.meta.format_version = static_cast<int>(version);
  m.meta.solver = h5::read_string_attribute(m.file, "solver", where);
  m.meta.precision = h5::read_string_attribute(m.file, "precision", where);
  m.meta.rank = h5::read_int_attribute(m.file, "rank", where);
  m.meta.backend = h5::read_string_attribute(m.file, "backend", where);
  m.meta.iteration = h5::read_int_attribute(m.file, "iteration", where);
  m.meta.mpi_ranks = static_cast<int>(h5::read_int_attribute(m.file, "mpi_ranks", where));
  // Optional: files written before kfactor recorded the execution setup lack
  // both and load as before (CheckpointMeta::execution_space).
  if (h5::has_attribute(m.file, "execution_space")) {
    m.meta.execution_space = h5::read_string_attribute(m.file, "execution_space", where);
    m.meta.concurrency = static_cast<int>(h5::read_int_attribute(m.file, "concurrency", where));
  }
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
    throw InputError(p + ": checkpoint has rank K = " + std::to_string(s.rank) +
                     "; this run asks for K = " + std::to_string(e.rank));
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
    impl_->bad("field '" + want.name + "' is stored as " + ckpt::dimensions(f.rank, f.rows, f.cols) +
               " but the state holds " + ckpt::dimensions(want.rank, rows, want.cols) +
               (want.partitioned ? " (rows over all ranks)" : ""));
}

std::uint64_t CheckpointReader::read_field(const FieldBlock& want) const {
  check_field(want);
  return impl_->read(impl_->state, want, "field");
}

void CheckpointReader::verify_checksum(const std::string& name, std::uint64_t sum) const {
  if (field(name).checksum != sum) impl_->bad("field '" + name + "' fails its checksum (corrupt checkpoint)");
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
  auto blocks = ckpt::history_blocks(it, values, n, c);
  FieldBlock &bi = blocks.first, &bv = blocks.second;
  if (m.read(g, bi, "history dataset") != fi.checksum || m.read(g, bv, "history dataset") != fv.checksum)
    m.bad("/history fails its checksum (corrupt checkpoint)");
  h.iterations.assign(it.begin(), it.end());
  for (std::int64_t r = 0; r < n; ++r) h.rows.emplace_back(values.begin() + r * c, values.begin() + (r + 1) * c);
  return h;
}

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
