// Distributed checkpoint saves (built with MPI only): the collective
// constructor of CheckpointWriter and what it adds to the serial writer.
// Partitioned fields are written either collectively with parallel HDF5
// (every rank writes its row hyperslab into one file on disk, which rank 0
// then seals and publishes) or gathered to rank 0, which builds the file in
// memory and publishes it like a serial save. Every failure is agreed, so
// all ranks throw together.
//
// Failures of the collective file. Parallel HDF5 cannot go on once a
// collective call failed on some ranks only (they leave it at different
// points and the next collective never matches), so every collective step
// is agreed before the next one begins. A full disk would first show inside
// MPI-IO's collective writes, where one rank's error leaves the others
// waiting; so rank 0 reserves the file's blocks on disk (fallocate) before
// each collective write, up to the dataset's end plus room for the metadata
// that follows, and a full disk is an ordinary, agreed error. After an
// agreed failure the partial file is emptied before the ranks close it
// together, so that HDF5's closing flush finds room, and then removed. A
// rank that fails alone, between steps, closes nothing (see abandon()).
#include <kfactor/config.hpp>

#include "writer.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>

namespace kfactor::detail {

namespace {

class MpiWrite final : public DistributedWrite {
 public:
  explicit MpiWrite(MPI_Comm comm) : comm_(comm) {}

  void write_field(WriterCore& m, const FieldBlock& block) override {
    const std::int64_t count = block.local_rows * block.cols;
    if (!block.partitioned) {
      // Replicated: rank 0's value and checksum.
      std::uint64_t sum = block_checksum(block.data, block.type, 0, count);
      MPI_Bcast(&sum, 1, MPI_UINT64_T, 0, comm_);
      if (m.collective) {
        step([&] { m.write_dataset(m.state, block, sum); });
      } else if (m.has_file && !m.deferred) {
        try {
          m.write_dataset(m.state, block, sum);
        } catch (...) {
          m.deferred = std::current_exception();
        }
      }
      return;
    }
    const std::uint64_t sum =
        allreduce_sum(comm_, block_checksum(block.data, block.type, block.first_row * block.cols, count));
    if (m.collective) {
      step([&] { m.write_dataset(m.state, block, sum); });
      return;
    }
    // Gather to rank 0, every rank's rows at their place (check_tiling made
    // the blocks tile the rows, not necessarily in rank order).
    const std::size_t w = size_of(block.type);
    const long long bytes = static_cast<long long>(count) * static_cast<long long>(w);
    const long long mine[2] = {bytes, static_cast<long long>(block.first_row * block.cols) * static_cast<long long>(w)};
    std::vector<long long> all(2 * static_cast<std::size_t>(m.mpi_size));
    MPI_Gather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, 0, comm_);
    std::vector<int> counts(static_cast<std::size_t>(m.mpi_size)), displs(counts.size());
    long long total = 0;
    int too_big = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      if (all[2 * r + 1] > INT_MAX || all[2 * r] > INT_MAX) too_big = 1;
      counts[r] = static_cast<int>(all[2 * r]);
      displs[r] = static_cast<int>(all[2 * r + 1]);
      total += all[2 * r];
    }
    if (total > INT_MAX) too_big = 1;
    MPI_Bcast(&too_big, 1, MPI_INT, 0, comm_);
    if (too_big)
      throw RuntimeFailure("checkpoint: field '" + block.name +
                           "' is too large (>2 GiB) to gather to rank 0; use parallel HDF5 (collective writes)");
    std::vector<unsigned char> whole(m.mpi_rank == 0 ? static_cast<std::size_t>(total) : 0);
    MPI_Gatherv(block.data, static_cast<int>(bytes), MPI_BYTE, whole.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                comm_);
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
  }

  void write_history(WriterCore& m, std::uint64_t& si, std::uint64_t& sv, const std::function<void()>& write) override {
    MPI_Bcast(&si, 1, MPI_UINT64_T, 0, comm_);
    MPI_Bcast(&sv, 1, MPI_UINT64_T, 0, comm_);
    if (m.collective) {
      step(write);  // attributes are written collectively: every rank passes rank 0's names
    } else if (m.has_file && !m.deferred) {
      try {
        write();
      } catch (...) {
        m.deferred = std::current_exception();
      }
    }
  }

  void commit(WriterCore& m) override {
    // Rank 0 publishes the file only once every rank got here: a rank that
    // failed on the way leaves the previous checkpoint in place.
    if (m.collective)
      step([&] { m.close_file(); });
    else
      settle(m.deferred);
    std::exception_ptr error;
    if (m.mpi_rank == 0) try {
        if (m.collective) {
          unreserve(m);
          std::vector<ckpt::RawRange> ranges;
          {
            auto fapl = ckpt::file_access(h5::Mode::write);
            h5::File f(H5Fopen(m.tmp.c_str(), H5F_ACC_RDONLY, fapl), h5::Mode::write, "checkpoint: reopening " + m.tmp);
            ranges = ckpt::raw_ranges(f, h5::Mode::write, m.tmp);
          }
          ckpt::seal_file(m.tmp, ranges);
          io::detail::publish_file(m.tmp, m.target, "checkpoint " + m.path);
        } else {
          m.publish_image();
        }
      } catch (...) {
        error = std::current_exception();
      }
    settle(error);
  }

  void abandon(WriterCore& m) noexcept override {
    if (m.collective && !failed_together_ && std::uncaught_exceptions() > 0) {
      // This rank unwinds from an error that the others may not share (one
      // thrown between the writer's agreed steps): they may be waiting in
      // one of the file's collectives, and closing it would wait for them
      // forever, before the error can end the job (distributed::abort_job).
      // Every rank knows the temporary's name: remove it here, and leave the
      // handles open (HDF5 closes them at MPI_Finalize, together, should
      // every rank have failed alike).
      ::unlink(m.tmp.c_str());
      m.state.release();
      m.history.release();
      m.file.release();
      return;
    }
    // Every rank is here (an agreed failure, or no failure at all): close
    // the file together, where every rank holds it open (a create that
    // failed on some ranks only leaves nothing to close together). After a
    // full disk HDF5's closing flush needs room for the metadata it still
    // holds; the partial file's raw data, now of no use, gives it back.
    if (m.collective) {
      int open = m.file.valid() ? 1 : 0, everywhere = 0;
      MPI_Allreduce(&open, &everywhere, 1, MPI_INT, MPI_MIN, comm_);
      if (m.mpi_rank == 0) (void)::truncate(m.tmp.c_str(), 0);
      if (!everywhere) {
        m.state.release();
        m.history.release();
        m.file.release();
      }
    }
    m.state.reset();
    m.history.reset();
    m.file.reset();
    if (m.collective && m.mpi_rank == 0) ::unlink(m.tmp.c_str());
  }

  void write_rows([[maybe_unused]] WriterCore& m, [[maybe_unused]] hid_t ds, [[maybe_unused]] hid_t fspace,
                  [[maybe_unused]] const FieldBlock& b) override {
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
    // Every rank writes its rows (replicated fields: rank 0 all, others none).
    std::int64_t first = b.first_row, rows = b.local_rows;
    if (!b.partitioned) {
      first = 0;
      rows = m.mpi_rank == 0 ? b.global_rows : 0;
    }
    // Parallel HDF5 allocates a dataset's space when it creates it; the
    // same offset on every rank.
    const haddr_t offset = H5Dget_offset(ds);
    if (offset != HADDR_UNDEF) data_end_ = std::max<hsize_t>(data_end_, offset + H5Dget_storage_size(ds));
    step([&] { reserve(m, data_end_ + metadata_room); });
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
    h5::check(H5Dwrite(ds, ckpt::native_type(b.type), mspace, fspace, dxpl, b.data), h5::Mode::write,
              "checkpoint: writing dataset '" + b.name + "'");
#else
    throw RuntimeFailure("checkpoint: collective writes need parallel HDF5");
#endif
  }

  /// Agrees on one step's outcome: every rank throws if any failed.
  void settle(const std::exception_ptr& error) {
    try {
      agree(comm_, error);
    } catch (...) {
      failed_together_ = true;
      throw;
    }
  }

  /// Runs one collective step of the shared file, then settles it.
  template <class F>
  void step(F&& f) {
    std::exception_ptr error;
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
    settle(error);
  }

 private:
  /// Rank 0: allocates the disk blocks of the file up to `end` (bytes from
  /// its start) without changing its size, so that the writes that follow
  /// cannot meet a full disk. File systems without fallocate keep the plain
  /// behaviour.
  static void reserve(const WriterCore& m, hsize_t end) {
    if (m.mpi_rank != 0) return;
    const int fd = ::open(m.tmp.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw RuntimeFailure("checkpoint " + m.path + ": cannot open " + m.tmp + ": " + std::strerror(errno));
    const int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(end));
    const int err = errno;
    ::close(fd);
    if (rc != 0 && err != EOPNOTSUPP && err != ENOSYS)
      throw RuntimeFailure("checkpoint " + m.path + ": cannot write " + std::to_string(end) + " bytes to " + m.tmp +
                           ": " + std::strerror(err));
  }

  /// Rank 0, after the close: gives back the blocks reserved past the
  /// file's end (truncating to its own size frees them on tmpfs and ext4).
  static void unreserve(const WriterCore& m) {
    struct stat st{};
    if (::stat(m.tmp.c_str(), &st) == 0) (void)::truncate(m.tmp.c_str(), st.st_size);
  }

  /// Room reserved past the end of the last dataset for the metadata HDF5
  /// places after it and writes when the file closes (about 3 KiB in a
  /// solver's checkpoint).
  static constexpr hsize_t metadata_room = 16 * 1024;

  MPI_Comm comm_;
  bool failed_together_ = false;  // a step failed and every rank knows it
  hsize_t data_end_ = 0;          // the end of the last dataset's raw data in the file
};

/// Rank 0's string on every rank.
std::string broadcast(MPI_Comm comm, std::string s) {
  long long n = static_cast<long long>(s.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, comm);
  s.resize(static_cast<std::size_t>(n));
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
  return s;
}

}  // namespace

CheckpointWriter::CheckpointWriter(const std::string& path, const CheckpointMeta& meta, MPI_Comm comm, DistributedIo io)
    : impl_(new Impl) {
  auto& m = *impl_;
  m.path = path;
  m.meta = meta;
  auto dist = std::make_unique<MpiWrite>(comm);
  MpiWrite& w = *dist;
  m.dist = std::move(dist);
  MPI_Comm_rank(comm, &m.mpi_rank);
  MPI_Comm_size(comm, &m.mpi_size);
  // Attributes are written collectively: every rank must pass the same value.
  MPI_Bcast(&m.meta.concurrency, 1, MPI_INT, 0, comm);
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  m.collective = io != DistributedIo::gather;
#else
  if (io == DistributedIo::collective)
    throw UsageError("checkpoint: collective writes need parallel HDF5; this build has a serial HDF5");
#endif
  m.has_file = m.collective || m.mpi_rank == 0;
  std::exception_ptr error;
  if (m.mpi_rank == 0) try {
      m.claim_target();
      m.tmp = m.collective ? io::detail::temp_path_for(m.target, ::getpid()) : m.path;
    } catch (...) {
      error = std::current_exception();
    }
  agree(comm, error);
  m.tmp = broadcast(comm, m.tmp);
  try {
    w.step([&] {
      if (m.collective) {
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)  // m.collective is never set without it
        auto fapl = ckpt::file_access(h5::Mode::write);
        h5::check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), h5::Mode::write, "selecting the MPI-IO driver");
        h5::check(H5Pset_all_coll_metadata_ops(fapl, true), h5::Mode::write, "collective metadata reads");
        h5::check(H5Pset_coll_metadata_write(fapl, true), h5::Mode::write, "collective metadata writes");
        m.open_file(fapl);
#endif
      } else if (m.has_file) {
        auto fapl = WriterCore::memory_access();
        m.open_file(fapl);
      }
    });
  } catch (...) {
    w.abandon(m);  // the destructor does not run for a constructor that throws
    throw;
  }
}

}  // namespace kfactor::detail
