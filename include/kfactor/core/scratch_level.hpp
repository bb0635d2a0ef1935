#pragma once
/// \file
/// with_scratch_level(level, body): calls body(std::integral_constant<int, L>{})
/// for L = level (0 or 1), so team code takes its scratch through
/// team_scratch(L) with L known at compile time. With a run-time level the
/// CUDA compiler cannot tell level-0 scratch (shared memory) from level-1
/// scratch (global memory) and makes every access a generic 64-bit load:
/// the ALS team Cholesky ran 55K warp instructions per system at f = 100,
/// its address arithmetic outnumbering its multiply-adds.
#include <Kokkos_Core.hpp>

#include <type_traits>

namespace kfactor {

template <class Body>
KOKKOS_FORCEINLINE_FUNCTION decltype(auto) with_scratch_level(int level, Body&& body) {
  if (level == 0) return body(std::integral_constant<int, 0>{});
  return body(std::integral_constant<int, 1>{});
}

}  // namespace kfactor
