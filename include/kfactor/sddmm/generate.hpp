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

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
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

/// Row-major sorted distinct (row, col) pairs with values drawn uniformly in
/// [lo, hi) (a pattern matrix when lo == hi == 1).
template <class T>
CooMatrix<T> power_law_pattern(const PowerLawSpec& spec, T lo = T(1), T hi = T(1)) {
  const std::int64_t m = spec.m, n = spec.n;
  auto cdf = [](std::int64_t len, double s, double off) {
    std::vector<double> c(static_cast<std::size_t>(len));
    double acc = 0;
    for (std::int64_t i = 0; i < len; ++i) c[i] = acc += 1.0 / std::pow(double(i) + off, s);
    for (auto& x : c) x /= acc;
    return c;
  };
  const auto cr = cdf(m, spec.s_r, spec.a_r), cc = cdf(n, spec.s_c, spec.a_c);
  const CounterRng rng(spec.seed, RngStream::graph);
  std::uint64_t ctr = 0;
  std::vector<std::int64_t> keys;
  const auto target = static_cast<std::size_t>(spec.target);
  std::size_t draw = static_cast<std::size_t>(double(target) * 1.1);
  while (keys.size() < target) {
    const std::size_t before = keys.size();
    keys.resize(before + draw);
    std::int64_t* out = keys.data() + before;
    const double* crp = cr.data();
    const double* ccp = cc.data();
    const std::uint64_t c0 = ctr;
    // Counter-based draws: the same keys whatever the host thread count.
    Kokkos::parallel_for(
        "kfactor::power_law_draw", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, draw),
        [=](std::size_t d) {
          auto r = static_cast<std::int64_t>(std::upper_bound(crp, crp + m, rng.uniform(c0 + 2 * d)) - crp);
          auto c = static_cast<std::int64_t>(std::upper_bound(ccp, ccp + n, rng.uniform(c0 + 2 * d + 1)) - ccp);
          out[d] = std::min(r, m - 1) * n + std::min(c, n - 1);
        });
    Kokkos::DefaultHostExecutionSpace().fence();
    ctr += 2 * draw;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    const double gained = double(keys.size() - before);
    const double deficit = double(target) - double(keys.size());
    draw = static_cast<std::size_t>(deficit / std::max(gained / double(draw), 0.02) * 1.05) + 1000;
  }
  if (keys.size() > target) {  // drop a random excess: keep the `target` smallest hashes
    std::vector<std::pair<std::uint64_t, std::int64_t>> h(keys.size());
    for (std::size_t e = 0; e < keys.size(); ++e) h[e] = {rng.bits((1ull << 62) + e), keys[e]};
    std::nth_element(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(target), h.end());
    h.resize(target);
    keys.resize(target);
    for (std::size_t e = 0; e < target; ++e) keys[e] = h[e].second;
  }
  auto permutation = [&](std::int64_t len, std::uint64_t base) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(len));
    std::iota(p.begin(), p.end(), 0);
    for (std::int64_t i = len - 1; i > 0; --i)
      std::swap(p[i], p[static_cast<std::int64_t>(rng.uniform(base + i) * double(i + 1))]);
    return p;
  };
  const auto pr = permutation(m, 1ull << 61), pc = permutation(n, (1ull << 61) + (1ull << 40));
  for (auto& k : keys) k = pr[k / n] * n + pc[k % n];
  std::sort(keys.begin(), keys.end());
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  coo.rows.resize(keys.size());
  coo.cols.resize(keys.size());
  coo.values.resize(keys.size());
  for (std::size_t e = 0; e < keys.size(); ++e) {
    coo.rows[e] = static_cast<ordinal_t>(keys[e] / n);
    coo.cols[e] = static_cast<ordinal_t>(keys[e] % n);
    coo.values[e] = lo == hi ? lo : rng.uniform<T>((1ull << 63) + e, lo, hi);
  }
  return coo;
}

}  // namespace kfactor
