// GoogleTest main for every kfactor test: Kokkos (and MPI, in MPI tests)
// initialised once around the whole run.
#include <kfactor/config.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#endif

int main(int argc, char** argv) {
#if defined(KFACTOR_HAVE_MPI)
  MPI_Init(&argc, &argv);
#endif
  ::testing::InitGoogleTest(&argc, argv);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    result = RUN_ALL_TESTS();
  }
#if defined(KFACTOR_HAVE_MPI)
  MPI_Finalize();
#endif
  return result;
}
