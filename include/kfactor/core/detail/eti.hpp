#pragma once
/// \file
/// Explicit-instantiation helpers. KFACTOR_ETI_FOR_EACH(M) expands M(Space, T)
/// for every enabled concrete execution space and T in {float, double}.
/// Headers declare `extern template` with it; src/<module>/*.cpp instantiate.

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#define KFACTOR_ETI_CUDA(M, T) M(Kokkos::Cuda, T)
#else
#define KFACTOR_ETI_CUDA(M, T)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
#define KFACTOR_ETI_OPENMP(M, T) M(Kokkos::OpenMP, T)
#else
#define KFACTOR_ETI_OPENMP(M, T)
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
#define KFACTOR_ETI_SERIAL(M, T) M(Kokkos::Serial, T)
#else
#define KFACTOR_ETI_SERIAL(M, T)
#endif

#define KFACTOR_ETI_FOR_EACH_SPACE(M, T) KFACTOR_ETI_CUDA(M, T) KFACTOR_ETI_OPENMP(M, T) KFACTOR_ETI_SERIAL(M, T)
#define KFACTOR_ETI_FOR_EACH(M) KFACTOR_ETI_FOR_EACH_SPACE(M, float) KFACTOR_ETI_FOR_EACH_SPACE(M, double)
