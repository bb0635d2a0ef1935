#pragma once
// Helpers shared by the distributed tests (they run under mpiexec).
#include <mpi.h>

#include <unistd.h>

#include <filesystem>
#include <string>

namespace kfactor::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// A directory every rank sees (named after rank 0's pid); collective.
/// Rank 0 removes it when the test is done.
inline std::filesystem::path shared_dir(const std::string& tag) {
  long pid = world_rank() == 0 ? long(getpid()) : 0;
  MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  auto d = std::filesystem::temp_directory_path() / ("kfactor_" + tag + "_" + std::to_string(pid));
  if (world_rank() == 0) std::filesystem::create_directories(d);
  MPI_Barrier(MPI_COMM_WORLD);
  return d;
}

/// The first n ranks of the world (MPI_COMM_NULL on the others).
inline MPI_Comm first_ranks(int n) {
  MPI_Comm c;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < n ? 0 : MPI_UNDEFINED, world_rank(), &c);
  return c;
}

}  // namespace kfactor::test
