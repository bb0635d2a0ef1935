#pragma once
/// \file
/// What this build of kfactor was configured with, for `kfactor --version`,
/// reports and benchmark metadata.

#include <string>

namespace kfactor {

struct BuildInfo {
  std::string version;           ///< kfactor's version
  std::string kokkos_version;    ///< e.g. "5.2.2"
  std::string execution_spaces;  ///< enabled spaces, comma separated
  std::string default_space;     ///< Kokkos::DefaultExecutionSpace's name
  bool kokkos_kernels = false, cblas = false, mpi = false, nccl = false, hdf5 = false, parallel_hdf5 = false;
};

BuildInfo build_info();

}  // namespace kfactor
