// Distributed checkpoint saves (built with MPI only): the collective
// constructor of CheckpointWriter and what it adds to the serial writer.
// Partitioned fields are written either collectively with parallel HDF5
// (every rank writes its row hyperslab into one file on disk, which rank 0
// then seals and publishes) or gathered to rank 0, which builds the file in
// memory and publishes it like a serial save. Every failure is agreed, so
// all ranks throw together.
#include <kfactor/config.hpp>

#include "writer.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

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
    const std::uint64_t sum =
        allreduce_sum(comm_, block_checksum(block.data, block.type, block.first_row * block.cols, count));
    if (m.collective) {
      m.write_dataset(m.state, block, sum);
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
      write();  // attributes are written collectively: every rank passes rank 0's names
    } else if (m.has_file && !m.deferred) {
      try {
        write();
      } catch (...) {
        m.deferred = std::current_exception();
      }
    }
  }

  void commit(WriterCore& m) override {
    std::exception_ptr error = m.deferred;
    if (m.collective) {
      try {
        m.close_file();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      agree(comm_, error);
      if (m.mpi_rank == 0) try {
          std::vector<ckpt::RawRange> ranges;
          {
            auto fapl = ckpt::file_access(h5::Mode::write);
            h5::File f(H5Fopen(m.tmp.c_str(), H5F_ACC_RDONLY, fapl), h5::Mode::write, "checkpoint: reopening " + m.tmp);
            ranges = ckpt::raw_ranges(f, h5::Mode::write, m.tmp);
          }
          ckpt::seal_file(m.tmp, ranges);
          io::detail::publish_file(m.tmp, m.target, "checkpoint " + m.path);
        } catch (...) {
          error = std::current_exception();
        }
    } else if (m.has_file && !error) {
      try {
        m.publish_image();
      } catch (...) {
        error = std::current_exception();
      }
    }
    agree(comm_, error);
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

 private:
  MPI_Comm comm_;
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
  m.dist = std::make_unique<MpiWrite>(comm);
  MPI_Comm_rank(comm, &m.mpi_rank);
  MPI_Comm_size(comm, &m.mpi_size);
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
  } catch (...) {
    error = std::current_exception();
  }
  agree(comm, error);
}

}  // namespace kfactor::detail
