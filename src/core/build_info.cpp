#include <kfactor/config.hpp>
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/spaces.hpp>

#include <tuple>

namespace kfactor {

namespace {
template <class... Spaces>
std::string space_names(std::tuple<Spaces...>*) {
  std::string out;
  ((out += (out.empty() ? "" : ",") + backend_name<Spaces>()), ...);
  return out;
}
}  // namespace

BuildInfo build_info() {
  BuildInfo b;
  b.version = KFACTOR_VERSION_STRING;
  b.kokkos_version = std::to_string(KOKKOS_VERSION / 10000) + "." + std::to_string(KOKKOS_VERSION / 100 % 100) + "." +
                     std::to_string(KOKKOS_VERSION % 100);
  b.execution_spaces = space_names(static_cast<EnabledExecutionSpaces*>(nullptr));
  b.default_space = backend_name<Kokkos::DefaultExecutionSpace>();
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
  b.kokkos_kernels = true;
#endif
#if defined(KFACTOR_HAVE_CBLAS)
  b.cblas = true;
#endif
#if defined(KFACTOR_HAVE_MPI)
  b.mpi = true;
#endif
#if defined(KFACTOR_HAVE_NCCL)
  b.nccl = true;
#endif
#if defined(KFACTOR_HAVE_HDF5)
  b.hdf5 = true;
#endif
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  b.parallel_hdf5 = true;
#endif
  return b;
}

}  // namespace kfactor
