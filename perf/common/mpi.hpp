#pragma once
// Plumbing of the benchmarks that run under mpiexec (bench_distributed,
// bench_sddmm_mpi). Include only where KFACTOR_HAVE_MPI is defined.
#include <mpi.h>

#include <chrono>
#include <thread>

namespace kfactor::bench {

/// Waits for every rank of MPI_COMM_WORLD without spinning: ranks left out
/// of a smaller sub-communicator would otherwise steal a core from the ones
/// being timed.
inline void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace kfactor::bench
