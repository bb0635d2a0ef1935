#pragma once
/// \file
/// Tuning traits of the SDDMM kernels, keyed on the execution space: the cache
/// size the tile model uses, the team-scratch budget, and whether the space is
/// a GPU (lane groups within warps) or a CPU (lanes are a SIMD loop, one team
/// per core).

#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>
#include <cstddef>

namespace kfactor::detail {

template <class ExecutionSpace>
struct SddmmTraits {
  static constexpr bool gpu = !is_host_space_v<ExecutionSpace>;

  /// Bytes of the cache the column-tile model fills: the GPU's L2, or the
  /// host's last-level cache (shared by the cores that work on one tile).
  static std::size_t cache_bytes(const ExecutionSpace& exec) {
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
      const auto l2 = exec.cuda_device_prop().l2CacheSize;
      if (l2 > 0) return static_cast<std::size_t>(l2);
    }
#endif
    (void)exec;
    if constexpr (gpu) {
      return std::size_t(50) << 20;  // H100's L2
    } else {
      long c = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
      c = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
      if (c <= 0) c = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
      return c > 0 ? static_cast<std::size_t>(c) : (std::size_t(4) << 20);
    }
  }

  /// Default team-scratch budget per team (the paper used half of the P100's
  /// 64 KB per block so that two blocks share an SM).
  static std::size_t scratch_bytes() {
    const auto max0 = static_cast<std::size_t>(Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0));
    const std::size_t want = gpu ? std::size_t(48) << 10 : std::size_t(32) << 10;
    const std::size_t usable = max0 > 512 ? max0 - 256 : max0;  // slack for the views' alignment padding
    return want < usable ? want : usable;
  }

  /// Lane groups per team (GPU: 256 threads per block).
  static int team_size(int vector_length) {
    if constexpr (gpu) {
      const int ts = 256 / vector_length;
      return ts > 0 ? ts : 1;
    } else {
      (void)vector_length;
      return 1;
    }
  }

  /// Row-split work items per team (GPU: one per lane group; CPU: a batch,
  /// so that the dynamic schedule's overhead is paid per batch).
  static int items_per_team(int team_size) { return gpu ? team_size : 64; }
};

}  // namespace kfactor::detail
