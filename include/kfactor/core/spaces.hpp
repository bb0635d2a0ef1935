#pragma once
/// \file
/// The execution spaces this build of Kokkos enables, as one type list, and
/// small helpers that name them. Tests are typed over EnabledExecutionSpaces;
/// nothing else in kfactor branches on the backend outside kernels/ dispatch.

#include <Kokkos_Core.hpp>

#include <cctype>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kfactor {

/// Every execution space enabled in this Kokkos build, device spaces first
/// (Debian's Kokkos 5 has OpenMP only; a CUDA build adds Kokkos::Cuda).
using EnabledExecutionSpaces = decltype(std::tuple_cat(
#if defined(KOKKOS_ENABLE_CUDA)
    std::declval<std::tuple<Kokkos::Cuda>>(),
#endif
#if defined(KOKKOS_ENABLE_HIP)
    std::declval<std::tuple<Kokkos::HIP>>(),
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
    std::declval<std::tuple<Kokkos::OpenMP>>(),
#endif
#if defined(KOKKOS_ENABLE_THREADS)
    std::declval<std::tuple<Kokkos::Threads>>(),
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
    std::declval<std::tuple<Kokkos::Serial>>(),
#endif
    std::declval<std::tuple<>>()));

/// The memory space a kernel running in ExecutionSpace reads and writes.
template <class ExecutionSpace>
using MemorySpaceOf = typename ExecutionSpace::memory_space;

/// True when ExecutionSpace runs on the host (its memory is host-accessible).
template <class ExecutionSpace>
inline constexpr bool is_host_space_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible;

/// Short lowercase name of an execution space ("cuda", "openmp", "serial").
template <class ExecutionSpace>
std::string backend_name() {
  std::string name = ExecutionSpace::name();
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace kfactor
