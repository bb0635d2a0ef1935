#pragma once
/// \file
/// Checkpoint observer for distributed runs (KFACTOR_HAVE_MPI): every
/// `every` iterations, every rank calls kfactor::save_checkpoint(comm, ...)
/// with the State's row_blocks(), which writes one file with the full
/// factors (parallel HDF5 where available, else gathered to rank 0). The
/// file has the single-rank layout, so it restarts on any number of ranks,
/// one included (see kfactor/io/checkpoint.hpp).

#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>

namespace kfactor::distributed {

/// Collective observer (call the loop on every rank). The State must outlive
/// it and provide row_blocks(). Rank 0 holds the checkpoint's OutputLock
/// while the observer lives.
template <class State>
Observer checkpoint_observer(MPI_Comm comm, std::string path, int every, State& state, CheckpointMeta meta,
                             DistributedIo io = DistributedIo::automatic) {
  if (every <= 0) throw UsageError("checkpoint interval must be positive, got " + std::to_string(every));
  if (path.empty()) throw UsageError("checkpoint path is empty");
  // Rank 0 publishes the file, so rank 0 checks the target and holds the
  // path's lock for the run (see kfactor::checkpoint_observer).
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::shared_ptr<io::OutputLock> lock;
  std::exception_ptr error;
  if (rank == 0) try {
      io::check_write_target(path, meta.input_files);
      lock = std::make_shared<io::OutputLock>(path);
    } catch (...) {
      error = std::current_exception();
    }
  kfactor::detail::agree(comm, error);
  return [comm, path = std::move(path), every, &state, meta = std::move(meta), io, lock](const IterationEvent& e) {
    if (e.iteration % every == 0) save_checkpoint(comm, path, state, meta, state.row_blocks(), io);
    return ObserverAction::proceed;
  };
}

}  // namespace kfactor::distributed

#endif  // KFACTOR_HAVE_MPI
