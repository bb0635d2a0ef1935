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

#include <string>
#include <utility>

namespace kfactor::distributed {

/// Collective observer (call the loop on every rank). The State must outlive
/// it and provide row_blocks().
template <class State>
Observer checkpoint_observer(MPI_Comm comm, std::string path, int every, State& state, CheckpointMeta meta,
                             DistributedIo io = DistributedIo::automatic) {
  if (every <= 0) throw UsageError("checkpoint interval must be positive, got " + std::to_string(every));
  if (path.empty()) throw UsageError("checkpoint path is empty");
  return [comm, path = std::move(path), every, &state, meta = std::move(meta), io](const IterationEvent& e) {
    if (e.iteration % every == 0) save_checkpoint(comm, path, state, meta, state.row_blocks(), io);
    return ObserverAction::proceed;
  };
}

}  // namespace kfactor::distributed

#endif  // KFACTOR_HAVE_MPI
