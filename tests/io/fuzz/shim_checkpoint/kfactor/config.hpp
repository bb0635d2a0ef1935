// The checkpoint fuzz build's stand-in for the generated config.hpp: HDF5
// only (serial reads; no MPI, no Kokkos Kernels).
#pragma once
#define KFACTOR_VERSION_STRING "fuzz"
#define KFACTOR_HAVE_HDF5
