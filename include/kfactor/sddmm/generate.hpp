#pragma once
/// \file
/// Synthetic power-law sparsity patterns (Chung-Lu style), the C++ port of
/// ../shared/peers/sddmm_matrices.py with the same parameters: row i drawn with
/// probability proportional to 1/(i + a_r)^s_r, column j with 1/(j + a_c)^s_c,
/// pairs de-duplicated and more drawn until `target` distinct nonzeros exist,
/// a random excess dropped, then row and column ids randomly permuted and the
/// entries sorted row-major.
///
/// The random stream is kfactor's CounterRng, not numpy's PCG64, so the
/// instance differs from the script's (same distribution, same M, N, nnz);
/// perf/bench_sddmm.cpp can also read the script's .rows.bin/.cols.bin files.

#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>
#include <Kokkos_StdAlgorithms.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kfactor {

struct PowerLawSpec {
  std::int64_t m = 0, n = 0, target = 0;
  double s_r = 1.0, a_r = 1.0, s_c = 1.0, a_c = 1.0;
  std::uint64_t seed = 1;
};

/// The peers' matrices: "m1_nytimes_like" (300,000 x 102,660, 69,000,000 nnz)
/// and "m2_webgoogle_like" (916,428 square, 5,100,000 nnz).
inline PowerLawSpec peer_matrix_spec(const std::string& name) {
  if (name == "m1_nytimes_like") return {300000, 102660, 69000000, 1.0, 2000.0, 1.0, 60.0, 20261122};
  if (name == "m2_webgoogle_like") return {916428, 916428, 5100000, 1.0, 2000.0, 1.0, 90.0, 20261123};
  return {};
}

namespace detail {
/// std::upper_bound's index, callable on a device: the first i in [0, len)
/// with c[i] > u (len if none).
KOKKOS_INLINE_FUNCTION std::int64_t upper_index(const double* c, std::int64_t len, double u) {
  std::int64_t first = 0, count = len;
  while (count > 0) {
    const std::int64_t step = count / 2;
    if (!(u < c[first + step])) {
      first += step + 1;
      count -= step + 1;
    } else {
      count = step;
    }
  }
  return first;
}
}  // namespace detail

/// Row-major sorted distinct (row, col) pairs with values drawn uniformly in
/// [lo, hi) (a pattern matrix when lo == hi == 1). The draws, sorts and
/// de-duplication run in the default execution space (M1's 76M draws take
/// 45 s on one host core); the instance does not depend on the space.
template <class T>
CooMatrix<T> power_law_pattern(const PowerLawSpec& spec, T lo = T(1), T hi = T(1)) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  namespace KE = Kokkos::Experimental;
  const Exec exec;
  const std::int64_t m = spec.m, n = spec.n;
  auto cdf = [](std::int64_t len, double s, double off) {
    Kokkos::View<double*, Kokkos::HostSpace> c("kfactor::power_law_cdf", static_cast<std::size_t>(len));
    double acc = 0;
    for (std::int64_t i = 0; i < len; ++i) c(i) = acc += 1.0 / std::pow(double(i) + off, s);
    for (std::int64_t i = 0; i < len; ++i) c(i) /= acc;
    return Kokkos::create_mirror_view_and_copy(Mem{}, c);
  };
  const auto cr = cdf(m, spec.s_r, spec.a_r), cc = cdf(n, spec.s_c, spec.a_c);
  const CounterRng rng(spec.seed, RngStream::graph);
  std::uint64_t ctr = 0;
  Kokkos::View<std::int64_t*, Mem> keys("kfactor::power_law_keys", 0);
  std::size_t count = 0;
  const auto target = static_cast<std::size_t>(spec.target);
  std::size_t draw = static_cast<std::size_t>(double(target) * 1.1);
  while (count < target) {
    const std::size_t before = count;
    Kokkos::resize(Kokkos::WithoutInitializing, keys, before + draw);
    const std::uint64_t c0 = ctr;
    // Counter-based draws: the same keys in every space and thread count.
    Kokkos::parallel_for(
        "kfactor::power_law_draw", Kokkos::RangePolicy<Exec>(exec, 0, draw), KOKKOS_LAMBDA(std::size_t d) {
          const std::int64_t r = detail::upper_index(cr.data(), m, rng.uniform(c0 + 2 * d));
          const std::int64_t c = detail::upper_index(cc.data(), n, rng.uniform(c0 + 2 * d + 1));
          keys(before + d) = Kokkos::min(r, m - 1) * n + Kokkos::min(c, n - 1);
        });
    ctr += 2 * draw;
    Kokkos::sort(exec, keys);
    count = static_cast<std::size_t>(KE::distance(KE::begin(keys), KE::unique(exec, keys)));
    Kokkos::resize(Kokkos::WithoutInitializing, keys, count);
    const double gained = double(count - before);
    const double deficit = double(target) - double(count);
    draw = static_cast<std::size_t>(deficit / std::max(gained / double(draw), 0.02) * 1.05) + 1000;
  }
  if (count > target) {  // drop a random excess: keep the keys with the `target` smallest hashes
    Kokkos::View<std::uint64_t*, Mem> hash(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::power_law_hash"),
                                           count);
    auto hashes_of = KOKKOS_LAMBDA(std::size_t e) { return rng.bits((std::uint64_t(1) << 62) + e); };
    Kokkos::parallel_for(
        "kfactor::power_law_hash", Kokkos::RangePolicy<Exec>(exec, 0, count),
        KOKKOS_LAMBDA(std::size_t e) { hash(e) = hashes_of(e); });
    Kokkos::sort(exec, hash);
    std::uint64_t threshold = 0;
    Kokkos::deep_copy(exec, threshold, Kokkos::subview(hash, target - 1));
    exec.fence();
    Kokkos::View<std::int64_t*, Mem> kept(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::power_law_keys"),
                                          target);
    // A stable compaction keeps the keys sorted; a (2^-64-rare) tie at the
    // threshold keeps the smaller keys.
    Kokkos::parallel_scan(
        "kfactor::power_law_keep", Kokkos::RangePolicy<Exec>(exec, 0, count),
        KOKKOS_LAMBDA(std::size_t e, std::size_t& slot, bool final) {
          if (hashes_of(e) > threshold) return;
          if (final && slot < target) kept(slot) = keys(e);
          ++slot;
        });
    keys = kept;
    count = target;
  }
  auto permutation = [&](std::int64_t len, std::uint64_t base) {
    Kokkos::View<std::int64_t*, Kokkos::HostSpace> p("kfactor::power_law_permutation", static_cast<std::size_t>(len));
    for (std::int64_t i = 0; i < len; ++i) p(i) = i;
    for (std::int64_t i = len - 1; i > 0; --i)
      std::swap(p(i), p(static_cast<std::int64_t>(rng.uniform(base + i) * double(i + 1))));
    return Kokkos::create_mirror_view_and_copy(Mem{}, p);
  };
  const auto pr = permutation(m, std::uint64_t(1) << 61),
             pc = permutation(n, (std::uint64_t(1) << 61) + (std::uint64_t(1) << 40));
  Kokkos::parallel_for(
      "kfactor::power_law_relabel", Kokkos::RangePolicy<Exec>(exec, 0, count),
      KOKKOS_LAMBDA(std::size_t e) { keys(e) = pr(keys(e) / n) * n + pc(keys(e) % n); });
  Kokkos::sort(exec, keys);
  const auto hk = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, keys);
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  coo.rows.resize(count);
  coo.cols.resize(count);
  coo.values.resize(count);
  for (std::size_t e = 0; e < count; ++e) {
    coo.rows[e] = static_cast<ordinal_t>(hk(e) / n);
    coo.cols[e] = static_cast<ordinal_t>(hk(e) % n);
    coo.values[e] = lo == hi ? lo : rng.uniform<T>((std::uint64_t(1) << 63) + e, lo, hi);
  }
  return coo;
}

}  // namespace kfactor
