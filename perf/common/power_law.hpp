#pragma once
// Synthetic sparse input shared by the benchmarks: a power-law matrix shaped
// like a document-term matrix (20 Newsgroups-like by default in bench_nmf).
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace kfactor::bench {

/// Power-law sparse matrix: row degrees ~ (i+1)^-0.5 scaled to nnz (at most D/4), column
/// popularity ~ u^3 (a few columns are very popular), values in (0, 1].
template <class T>
CooMatrix<T> power_law(std::int64_t V, std::int64_t D, std::int64_t nnz, std::uint64_t seed) {
  CooMatrix<T> coo;
  coo.num_rows = V;
  coo.num_cols = D;
  std::vector<double> w(V);
  double total = 0;
  for (std::int64_t i = 0; i < V; ++i) total += (w[i] = std::pow(double(i + 1), -0.5));
  const CounterRng rng(seed, RngStream::user);
  std::uint64_t counter = 0;
  std::unordered_set<std::int64_t> seen;
  // Rows are shuffled by a multiplicative hash so heavy rows are spread out.
  for (std::int64_t r = 0; r < V; ++r) {
    const std::int64_t i = (r * 2654435761LL) % V;
    const auto deg = std::min<std::int64_t>(std::max<std::int64_t>(1, D / 4),
                                            std::max<std::int64_t>(1, std::llround(w[r] / total * double(nnz))));
    seen.clear();
    for (std::int64_t attempt = 0; static_cast<std::int64_t>(seen.size()) < deg && attempt < 50 * deg; ++attempt) {
      const double u = rng.uniform(counter++);
      const std::int64_t j = std::min<std::int64_t>(D - 1, static_cast<std::int64_t>(D * u * u * u));
      const std::int64_t jj = (j * 1000003LL) % D;  // a prime > D: a bijection
      if (!seen.insert(jj).second) continue;
      coo.rows.push_back(static_cast<ordinal_t>(i));
      coo.cols.push_back(static_cast<ordinal_t>(jj));
      coo.values.push_back(static_cast<T>(1.0 - rng.uniform(counter++)));
    }
  }
  return coo;
}

}  // namespace kfactor::bench
