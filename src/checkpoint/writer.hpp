#pragma once
// The checkpoint writer's state, shared by the serial writer (writer.cpp)
// and its distributed part (writer_mpi.cpp, compiled with MPI only).
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/write.hpp>

#include "format.hpp"

#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kfactor::detail {

struct WriterCore;

/// What a distributed save adds to the serial writer; a serial save has none.
class DistributedWrite {
 public:
  virtual ~DistributedWrite() = default;
  /// Writes a field (partitioned or replicated) the distributed way.
  virtual void write_field(WriterCore& m, const FieldBlock& block) = 0;
  /// Agrees on the history checksums and runs `write` where the file is.
  virtual void write_history(WriterCore& m, std::uint64_t& si, std::uint64_t& sv,
                             const std::function<void()>& write) = 0;
  /// Collective: closes, seals and publishes the file; errors agreed.
  virtual void commit(WriterCore& m) = 0;
  /// Parallel HDF5: writes this rank's rows of `b` into the dataset `ds`.
  virtual void write_rows(WriterCore& m, hid_t ds, hid_t fspace, const FieldBlock& b) = 0;
  /// Drops a save that was not committed: closes the file and removes the
  /// temporary, without waiting for ranks that are not dropping it too.
  virtual void abandon(WriterCore& m) noexcept = 0;
};

struct WriterCore {
  h5::Quiet quiet;
  std::string path, target, tmp;
  CheckpointMeta meta;
  std::optional<io::OutputLock> lock;
  bool committed = false;
  bool has_file = true;     // this rank writes the file (serial: yes; gather: rank 0; collective: all)
  bool collective = false;  // parallel HDF5 file on disk shared by all ranks; else an in-memory image
  int mpi_rank = 0, mpi_size = 1;
  std::unique_ptr<DistributedWrite> dist;
  std::exception_ptr deferred;  // gather mode: rank 0's failure, reported at commit
  h5::File file;
  h5::Group state, history;
  std::vector<std::string> names;
  bool history_written = false;

  /// Checks and locks the target (the rank that publishes the file only).
  void claim_target();
  /// Creates the file: in memory (the image is written by publish_image())
  /// unless `fapl` selects another driver (parallel HDF5).
  void open_file(hid_t fapl);
  /// An in-memory file access list (the core driver, no backing store).
  static h5::PropertyList memory_access();
  void write_meta();
  /// Creates dataset `b.name` in `group` shaped like `b` (global rows) and
  /// writes this rank's part.
  void write_dataset(hid_t group, const FieldBlock& b, std::uint64_t checksum);
  /// Closes the in-memory file and writes its sealed image atomically.
  void publish_image();
  /// Flushes and closes the file (groups first).
  void close_file();
};

struct CheckpointWriter::Impl : WriterCore {};

}  // namespace kfactor::detail
