// Checkpoints in a build without HDF5: every entry point throws
// RuntimeFailure (src/checkpoint/CMakeLists.txt compiles this file instead
// of the HDF5 reader and writer).
#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

namespace kfactor {
namespace detail {

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

}  // namespace detail

CheckpointInfo inspect_checkpoint(const std::string&, bool) { detail::no_hdf5(); }

}  // namespace kfactor
