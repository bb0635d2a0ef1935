#pragma once
/// \file
/// async_copy<Bytes>(dst, src): copies 4, 8 or 16 bytes from global memory
/// into team scratch. On CUDA devices of compute capability 8.0 and later it
/// is cp.async: the copy bypasses registers and the thread goes on at once,
/// so a team can stage its next chunk of data while it computes on the
/// current one. Elsewhere (and into level-1 scratch, which is global
/// memory) it is a plain copy. async_copy_wait() waits until
/// the calling thread's copies have landed; a team barrier after it makes
/// them visible to the whole team.
#include <Kokkos_Core.hpp>

namespace kfactor {

template <int Bytes>
KOKKOS_FORCEINLINE_FUNCTION void async_copy(void* dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  struct alignas(Bytes) Chunk {
    unsigned char b[Bytes];
  };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (__isShared(dst)) {  // level-1 team scratch lives in global memory: plain copy below
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    if constexpr (Bytes == 16)
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
    else
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(s), "l"(src), "n"(Bytes));
    return;
  }
#endif
  *static_cast<Chunk*>(dst) = *static_cast<const Chunk*>(src);
}

KOKKOS_FORCEINLINE_FUNCTION void async_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace kfactor
