// Writing checkpoints: CheckpointWriter. The file is built in memory (HDF5's
// core driver), sealed, and written by an io::detail::AtomicFile, so HDF5
// never writes to disk itself: a full disk or a file size limit is an
// ordinary write error (RuntimeFailure, previous checkpoint intact, no
// temporary left) rather than a failure inside HDF5's cache, and the seal is
// computed without reading the file back. The cost is one host copy of the
// file while it is written. Distributed saves add writer_mpi.cpp.
#include <kfactor/config.hpp>

#include "writer.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kfactor::detail {

namespace {
void check_name(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    throw UsageError("checkpoint field name '" + name + "' is empty or contains '/'");
}

/// Bob Jenkins' lookup3 hashlittle(), HDF5's metadata checksum.
std::uint32_t lookup3(const unsigned char* k, std::size_t length) {
  auto rot = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  auto word = [&](const unsigned char* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
  };
  std::uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + static_cast<std::uint32_t>(length);
  while (length > 12) {
    a += word(k), b += word(k + 4), c += word(k + 8);
    a -= c, a ^= rot(c, 4), c += b;
    b -= a, b ^= rot(a, 6), a += c;
    c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b;
    b -= a, b ^= rot(a, 19), a += c;
    c -= b, c ^= rot(b, 4), b += a;
    length -= 12, k += 12;
  }
  if (length == 0) return c;
  unsigned char tail[12] = {};
  std::memcpy(tail, k, length);
  a += word(tail), b += word(tail + 4), c += word(tail + 8);
  c ^= b, c -= rot(b, 14);
  a ^= c, a -= rot(c, 11);
  b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16);
  a ^= c, a -= rot(c, 4);
  b ^= a, b -= rot(a, 14);
  c ^= b, c -= rot(b, 24);
  return c;
}

/// HDF5 1.10 hands out a file image whose version 2/3 superblock carries a
/// stale checksum (the file on disk after H5Fclose has the right one; 1.14
/// fixed it): recompute it over signature, version, sizes, flags and the four
/// addresses.
void repair_superblock_checksum(unsigned char* superblock, std::size_t size) {
  if (size < 12 || superblock[8] < 2) return;  // versions 0 and 1 have no checksum
  const std::size_t covered = 12 + 4 * std::size_t(superblock[9]);
  if (size < covered + 4) return;
  const std::uint32_t sum = lookup3(superblock, covered);
  for (int i = 0; i < 4; ++i) superblock[covered + i] = static_cast<unsigned char>(sum >> (8 * i));
}

}  // namespace

void WriterCore::claim_target() {
  io::check_write_target(path, meta.input_files);
  lock.emplace(path);
  target = io::resolve_write_target(path);
  io::detail::remove_stale_temporaries(target);
}

h5::PropertyList WriterCore::memory_access() {
  auto fapl = ckpt::file_access(h5::Mode::write);
  h5::check(H5Pset_fapl_core(fapl, 1 << 20, /*backing_store=*/false), h5::Mode::write, "selecting the core driver");
  return fapl;
}

void WriterCore::open_file(hid_t fapl) {
  auto fcpl = h5::untimed_creation(H5P_FILE_CREATE, h5::Mode::write);  // the root group's times
  h5::check(H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), h5::Mode::write,
            "tracking link creation order");
  h5::check(H5Pset_userblock(fcpl, ckpt::seal_block), h5::Mode::write, "reserving the seal's user block");
  // With the core driver the name only identifies the file inside HDF5.
  file =
      h5::File(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl), h5::Mode::write, "checkpoint: cannot create " + tmp);
  auto gcpl = ckpt::ordered_group_creation(h5::Mode::write);
  write_meta();
  state = h5::Group(H5Gcreate2(file, "state", H5P_DEFAULT, gcpl, H5P_DEFAULT), h5::Mode::write,
                    "checkpoint: creating /state in " + tmp);
}

void WriterCore::write_meta() {
  using h5::write_attribute;
  write_attribute(file, "format", std::string(ckpt::format_magic));
  write_attribute(file, "format_version", static_cast<std::int64_t>(meta.format_version));
  write_attribute(file, "solver", meta.solver);
  write_attribute(file, "precision", meta.precision);
  write_attribute(file, "rank", meta.rank);
  write_attribute(file, "backend", meta.backend);
  write_attribute(file, "iteration", meta.iteration);
  write_attribute(file, "mpi_ranks", static_cast<std::int64_t>(mpi_size));
  if (!meta.execution_space.empty()) {
    write_attribute(file, "execution_space", meta.execution_space);
    write_attribute(file, "concurrency", static_cast<std::int64_t>(meta.concurrency));
  }
  write_attribute(file, "options", nlohmann::json(meta.options).dump());
  write_attribute(file, "kfactor_version", std::string(KFACTOR_VERSION_STRING));
  auto gcpl = h5::untimed_creation(H5P_GROUP_CREATE, h5::Mode::write);
  h5::Group input(H5Gcreate2(file, "input", H5P_DEFAULT, gcpl, H5P_DEFAULT), h5::Mode::write,
                  "checkpoint: creating /input");
  write_attribute(input, "rows", meta.input.rows);
  write_attribute(input, "cols", meta.input.cols);
  write_attribute(input, "nnz", meta.input.nnz);
  write_attribute(input, "checksum", meta.input.checksum);
}

void WriterCore::write_dataset(hid_t group, const FieldBlock& b, std::uint64_t checksum) {
  std::vector<hsize_t> dims;
  if (b.rank >= 1) dims.push_back(static_cast<hsize_t>(b.global_rows));
  if (b.rank == 2) dims.push_back(static_cast<hsize_t>(b.cols));
  auto fspace = h5::dataspace(h5::Mode::write, dims);
  auto dcpl = h5::untimed_creation(H5P_DATASET_CREATE, h5::Mode::write);
  h5::Dataset ds(H5Dcreate2(group, b.name.c_str(), ckpt::file_type(b.type), fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                 h5::Mode::write, "checkpoint: creating dataset '" + b.name + "'");
  h5::write_attribute(ds, "checksum", checksum);
  if (b.global_rows * b.cols == 0) return;
  if (collective) {
    dist->write_rows(*this, ds, fspace, b);
    return;
  }
  h5::check(H5Dwrite(ds, ckpt::native_type(b.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, b.data), h5::Mode::write,
            "checkpoint: writing dataset '" + b.name + "'");
}

void WriterCore::close_file() {
  h5::check(H5Fflush(file, H5F_SCOPE_GLOBAL), h5::Mode::write, "checkpoint: flushing " + tmp);
  state.reset();
  history.reset();
  h5::check(file.reset(), h5::Mode::write, "checkpoint: closing " + tmp);
}

void WriterCore::publish_image() {
  h5::check(H5Fflush(file, H5F_SCOPE_GLOBAL), h5::Mode::write, "checkpoint: flushing " + tmp);
  const auto ranges = ckpt::raw_ranges(file, h5::Mode::write, path);
  // The image HDF5 hands out starts at the superblock; the file has the
  // user block (the seal's place) before it.
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size < 0) h5::fail(h5::Mode::write, "checkpoint: sizing the file image of " + path);
  std::vector<unsigned char> image(ckpt::seal_block + static_cast<std::size_t>(size));
  if (H5Fget_file_image(file, image.data() + ckpt::seal_block, static_cast<std::size_t>(size)) != size)
    h5::fail(h5::Mode::write, "checkpoint: copying the file image of " + path);
  if (std::memcmp(image.data() + ckpt::seal_block, "\x89HDF\r\n\x1a\n", 8) != 0)
    h5::fail(h5::Mode::write, "checkpoint: the file image of " + path + " does not start with a superblock");
  repair_superblock_checksum(image.data() + ckpt::seal_block, static_cast<std::size_t>(size));
  close_file();
  ckpt::seal_image(image, ranges);
  io::detail::AtomicFile out(path, meta.input_files);
  out.write(image.data(), image.size());
  out.commit();
}

CheckpointWriter::CheckpointWriter(const std::string& path, const CheckpointMeta& meta) : impl_(new Impl) {
  auto& m = *impl_;
  m.path = path;
  m.meta = meta;
  m.tmp = path;
  m.claim_target();
  auto fapl = WriterCore::memory_access();
  m.open_file(fapl);
}

CheckpointWriter::~CheckpointWriter() {
  if (!impl_ || impl_->committed) return;
  if (impl_->dist) {
    impl_->dist->abandon(*impl_);
    return;
  }
  impl_->state.reset();
  impl_->history.reset();
  impl_->file.reset();
}

void CheckpointWriter::write_field(const FieldBlock& block) {
  auto& m = *impl_;
  check_name(block.name);
  if (std::find(m.names.begin(), m.names.end(), block.name) != m.names.end())
    throw UsageError("checkpoint: the State lists field '" + block.name + "' twice");
  m.names.push_back(block.name);
  if (m.dist) {
    m.dist->write_field(m, block);
    return;
  }
  m.write_dataset(m.state, block, block_checksum(block.data, block.type, 0, block.local_rows * block.cols));
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
  auto blocks = ckpt::history_blocks(it, values, n, c);
  FieldBlock &bi = blocks.first, &bv = blocks.second;
  std::uint64_t si = block_checksum(it.data(), bi.type, 0, n), sv = block_checksum(values.data(), bv.type, 0, n * c);
  auto write = [&] {
    auto gcpl = ckpt::ordered_group_creation(h5::Mode::write);
    m.history = h5::Group(H5Gcreate2(m.file, "history", H5P_DEFAULT, gcpl, H5P_DEFAULT), h5::Mode::write,
                          "checkpoint: creating /history");
    h5::write_attribute(m.history, "names", h.names);
    m.write_dataset(m.history, bi, si);
    m.write_dataset(m.history, bv, sv);
  };
  if (m.dist) {
    m.dist->write_history(m, si, sv, write);
    return;
  }
  write();
}

void CheckpointWriter::commit() {
  auto& m = *impl_;
  if (m.dist) {
    m.dist->commit(m);
  } else {
    m.publish_image();
  }
  m.committed = true;
}

}  // namespace kfactor::detail
