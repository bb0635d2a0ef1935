#pragma once
// The checkpoint file format shared by the writer (writer.cpp,
// writer_mpi.cpp) and the reader (checkpoint.cpp): element types in memory
// and in the file, file access properties, and the integrity seal.
//
// The seal. HDF5 parses whatever a file claims, and Debian's libhdf5 hangs or
// crashes on some damaged metadata (found by tests/io/fuzz/fuzz_checkpoint: a
// corrupt global heap makes H5Aread of a string attribute loop forever). So
// no checkpoint reaches HDF5 unchecked: every file starts with an HDF5 user
// block (HDF5, h5py and h5dump skip it) holding a seal: the file's size, a
// 64-bit hash of every byte after the user block except the datasets' raw
// data, and the raw-data ranges left out (raw data has its own per-dataset
// checksum, so a damaged value is still reported by field). The reader checks
// the hash before H5Fopen, then checks that the left-out ranges are exactly
// the raw data of the datasets it finds in the file: a range list that left
// out anything else (metadata, an attribute) is refused.
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/detail/checkpoint_fields.hpp>
#include <kfactor/io/detail/hdf5.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::detail::ckpt {

inline hid_t native_type(CheckpointType t) {
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
inline hid_t file_type(CheckpointType t) {
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

constexpr const char* format_magic = "kfactor-checkpoint";

/// File access for every checkpoint file (serial, in-memory or MPI-IO).
inline h5::PropertyList file_access(h5::Mode mode) {
  h5::PropertyList fapl(H5Pcreate(H5P_FILE_ACCESS), mode, "creating file access properties");
  h5::check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST), mode, "setting format bounds");
  h5::check(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), mode, "setting the close degree");
  // Temporaries are private and readers only read: no HDF5 locks (they fail
  // on some network file systems; kfactor's own OutputLock guards writers).
  h5::check(H5Pset_file_locking(fapl, false, true), mode, "disabling file locking");
  return fapl;
}

inline h5::PropertyList ordered_group_creation(h5::Mode mode) {
  auto gcpl = h5::untimed_creation(H5P_GROUP_CREATE, mode);
  h5::check(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), mode,
            "tracking link creation order");
  return gcpl;
}

inline std::string dimensions(int rank, std::int64_t rows, std::int64_t cols) {
  if (rank == 0) return "a scalar";
  if (rank == 1) return "a vector of " + std::to_string(rows);
  return std::to_string(rows) + " x " + std::to_string(cols);
}

// ---- seal layout ----------------------------------------------------------------------

constexpr hsize_t seal_block = 4096;  // user block size (a power of two >= 512)
constexpr char seal_magic[16] = {'\x89', 'K', 'F', 'A', 'C', 'T',  'O',  'R',
                                 '-',    'S', 'E', 'A', 'L', '\r', '\n', '\x1a'};
constexpr std::uint64_t seal_version = 1;
constexpr std::size_t seal_header = 16 + 4 * 8;  // magic, version, file size, hash, range count
constexpr std::size_t seal_max_ranges = (seal_block - seal_header) / 16;

struct RawRange {
  std::uint64_t offset = 0, length = 0;
  friend bool operator==(const RawRange&, const RawRange&) = default;
};

inline void put_u64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

/// The hash the seal records, fed span by span in file order.
class SealHash {
 public:
  explicit SealHash(std::uint64_t length) : h_(CounterRng::mix(length)) {}
  void add(const unsigned char* p, std::size_t n, std::uint64_t offset) {
    for (std::size_t i = 0; i < n; ++i) h_ = CounterRng::mix(h_ ^ (std::uint64_t(p[i]) | ((offset + i) << 8)));
  }
  [[nodiscard]] std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_;
};

/// Calls span(from, to) for the parts of [begin, end) outside `ranges`
/// (sorted, disjoint, inside [begin, end)); stops at the first false.
template <class Span>
bool for_each_sealed_span(std::uint64_t begin, std::uint64_t end, const std::vector<RawRange>& ranges, Span&& span) {
  std::uint64_t at = begin;
  for (const auto& r : ranges) {
    if (!span(at, r.offset)) return false;
    at = r.offset + r.length;
  }
  return span(at, end);
}

/// The raw-data ranges of every dataset under /state and /history of an
/// open file, sorted, at most seal_max_ranges (any further ones are hashed).
/// `mode` says which exception a failure becomes.
std::vector<RawRange> raw_ranges(hid_t file, h5::Mode mode, const std::string& where);

/// Writes the seal of the file image `image` (the user block first) into
/// its user block; `ranges` are its raw_ranges().
void seal_image(std::vector<unsigned char>& image, const std::vector<RawRange>& ranges);

/// Writes the seal into the user block of the closed file `path` (a file
/// written in place by parallel HDF5); `ranges` are its raw_ranges().
void seal_file(const std::string& path, const std::vector<RawRange>& ranges);

/// InputError unless the file `path` carries a valid seal; returns the
/// raw-data ranges the seal leaves out (the caller checks them against the
/// file's datasets once HDF5 has opened it).
std::vector<RawRange> check_seal(const std::string& path);

/// The two /history datasets over host buffers: iteration (n) and values (n x c).
std::pair<FieldBlock, FieldBlock> history_blocks(std::vector<std::int32_t>& it, std::vector<double>& values,
                                                 std::int64_t n, std::int64_t c);

}  // namespace kfactor::detail::ckpt
