#pragma once
/// \file
/// kfactor's one random number generator: counter-based, header-only.
///
/// A value depends only on (seed, stream, counter), never on thread count,
/// scheduling or backend, so factors initialised from the same seed are
/// identical everywhere. The mixing function is SplitMix64's finaliser
/// (a bijection on 64-bit words with full avalanche) applied to the seed, the
/// stream and the counter in turn. Kokkos' random pools are not reproducible
/// across thread counts and are not used for anything a test compares.

#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kfactor {

/// Named streams, so that independent uses of one seed never share values.
enum class RngStream : std::uint64_t {
  factor_w = 1,    ///< left factor (W, X, A of BMF)
  factor_h = 2,    ///< right factor (H, Y, B of BMF)
  split = 3,       ///< train/test split
  proposal = 4,    ///< BMF bit-flip proposals
  acceptance = 5,  ///< Metropolis acceptance draws
  graph = 6,       ///< kNN tie-breaking or sampling
  user = 1000,     ///< first stream free for applications
};

/// Counter-based generator keyed by (seed, stream).
struct CounterRng {
  std::uint64_t key = 0;

  KOKKOS_INLINE_FUNCTION static constexpr std::uint64_t mix(std::uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  KOKKOS_INLINE_FUNCTION constexpr CounterRng() = default;
  KOKKOS_INLINE_FUNCTION constexpr CounterRng(std::uint64_t seed, std::uint64_t stream)
      : key(mix(mix(seed) ^ (stream * 0xD1B54A32D192ED03ULL))) {}
  KOKKOS_INLINE_FUNCTION constexpr CounterRng(std::uint64_t seed, RngStream stream)
      : CounterRng(seed, static_cast<std::uint64_t>(stream)) {}

  /// 64 random bits for `counter`.
  KOKKOS_INLINE_FUNCTION constexpr std::uint64_t bits(std::uint64_t counter) const { return mix(key ^ mix(counter)); }
  /// Uniform double in [0, 1) with 53 random bits.
  KOKKOS_INLINE_FUNCTION constexpr double uniform(std::uint64_t counter) const {
    return static_cast<double>(bits(counter) >> 11) * 0x1.0p-53;
  }
  /// Uniform float in [0, 1) with 24 random bits.
  KOKKOS_INLINE_FUNCTION constexpr float uniformf(std::uint64_t counter) const {
    return static_cast<float>(bits(counter) >> 40) * 0x1.0p-24f;
  }
  /// Uniform in [lo, hi) of type T (float draws float bits, others double).
  template <class T>
  KOKKOS_INLINE_FUNCTION constexpr T uniform(std::uint64_t counter, T lo, T hi) const {
    if constexpr (sizeof(T) <= 4)
      return lo + (hi - lo) * static_cast<T>(uniformf(counter));
    else
      return lo + (hi - lo) * static_cast<T>(uniform(counter));
  }
};

/// Fills a rank-2 view with uniform values in [lo, hi): entry (i, j) takes
/// counter i * extent(1) + j, whatever the view's layout or space.
template <class ExecutionSpace, class View>
void fill_uniform(const ExecutionSpace& exec, const View& X, std::uint64_t seed, RngStream stream,
                  typename View::non_const_value_type lo, typename View::non_const_value_type hi) {
  static_assert(View::rank() == 2, "fill_uniform takes a rank-2 view");
  using T = typename View::non_const_value_type;
  const CounterRng rng(seed, stream);
  const std::uint64_t ncols = X.extent(1);
  Kokkos::parallel_for(
      "kfactor::fill_uniform",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {X.extent(0), X.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j) { X(i, j) = rng.uniform<T>(i * ncols + j, lo, hi); });
}

}  // namespace kfactor
