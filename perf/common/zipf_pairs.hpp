#pragma once
// (user, item) pairs drawn on the device from two Zipf laws, shared by the
// explicit and implicit ALS benchmarks: inverse-CDF sampling keyed by the
// counter-based RNG, so a seed gives the same pairs on every backend.
#include <kfactor/core/random.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace kfactor::bench {

/// Zipf-Mandelbrot(alpha, shift) CDF over k ids: p_i ~ (i + 1 + shift)^-alpha.
inline std::vector<double> zipf_cdf(std::int64_t k, double alpha, double shift = 0.0) {
  std::vector<double> c(k);
  double s = 0;
  for (std::int64_t i = 0; i < k; ++i) c[i] = (s += std::pow(double(i + 1) + shift, -alpha));
  for (auto& v : c) v /= s;
  return c;
}

/// A host vector copied into a new View of the execution space's memory.
template <class Space, class V>
Kokkos::View<V*, typename Space::memory_space> to_device(const Space& exec, const std::vector<V>& v, const char* name) {
  Kokkos::View<V*, typename Space::memory_space> d(name, v.size());
  Kokkos::deep_copy(
      exec, d, Kokkos::View<const V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  exec.fence();
  return d;
}

/// `draws` keys u * n + i (unsorted, with repeats), u and i drawn by inverse
/// CDF from `cdf_u` (m ids) and `cdf_i` (n ids) with the counters 2e and
/// 2e + 1 of `seed`'s user stream; each id is mapped through its permutation
/// (`perm_u`, `perm_i`), or kept where that View is empty.
template <class Space, class Perm>
Kokkos::View<std::uint64_t*, typename Space::memory_space> zipf_pair_keys(
    const Space& exec, const Kokkos::View<double*, typename Space::memory_space>& cdf_u,
    const Kokkos::View<double*, typename Space::memory_space>& cdf_i, const Perm& perm_u, const Perm& perm_i,
    std::int64_t draws, std::uint64_t seed) {
  using Mem = typename Space::memory_space;
  Kokkos::View<std::uint64_t*, Mem> keys("keys", draws);
  const CounterRng rng(seed, RngStream::user);
  const std::int64_t nu = cdf_u.extent(0), ni = cdf_i.extent(0);
  const bool permute_u = perm_u.extent(0) > 0, permute_i = perm_i.extent(0) > 0;
  Kokkos::parallel_for(
      "bench::zipf_pairs", Kokkos::RangePolicy<Space>(exec, 0, draws), KOKKOS_LAMBDA(std::int64_t e) {
        auto search = [](const Kokkos::View<double*, Mem>& c, std::int64_t k, double x) {
          std::int64_t lo = 0, hi = k - 1;
          while (lo < hi) {
            const std::int64_t mid = (lo + hi) / 2;
            if (c(mid) < x)
              lo = mid + 1;
            else
              hi = mid;
          }
          return lo;
        };
        const std::int64_t u = search(cdf_u, nu, rng.uniform(std::uint64_t(2 * e)));
        const std::int64_t i = search(cdf_i, ni, rng.uniform(std::uint64_t(2 * e + 1)));
        keys(e) = std::uint64_t(permute_u ? std::int64_t(perm_u(u)) : u) * std::uint64_t(ni) +
                  std::uint64_t(permute_i ? std::int64_t(perm_i(i)) : i);
      });
  return keys;
}

}  // namespace kfactor::bench
