#pragma once
/// \file
/// madd(a, b, c) = c + a b with one rounding wherever the target has a fused
/// multiply-add, and with two where it has none. Compilers contract c + a * b
/// into an FMA or not depending on the surrounding code, so two kernels that
/// run the same arithmetic can differ in the last bit; kernels whose results
/// must be the same bits on every code path (the ALS half-step: tiled and
/// plain traversals, any batch) spell their multiply-adds with madd.
#include <Kokkos_Core.hpp>

namespace kfactor {

template <class T>
KOKKOS_FORCEINLINE_FUNCTION T madd(T a, T b, T c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return Kokkos::fma(a, b, c);
#else
  return c + a * b;
#endif
}

}  // namespace kfactor
