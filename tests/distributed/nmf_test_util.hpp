#pragma once
// Planted inputs and factor comparisons shared by the distributed NMF tests.
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kfactor::test {

/// Planted non-negative V x D matrix of rank 5 plus noise (dense), or a
/// sparse one with skewed row and column counts (CSR): rows i < V/8 are 6x
/// denser, so nnz-balanced blocks differ from equal ones.
template <class T>
CooMatrix<T> planted(int V, int D, bool sparse, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  const int r = 5;
  CooMatrix<T> c;
  c.num_rows = V;
  c.num_cols = D;
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < D; ++j) {
      const std::uint64_t key = std::uint64_t(i) * D + j;
      if (sparse) {
        const double keep = (i < V / 8 ? 0.9 : 0.15) * (j < D / 6 ? 1.0 : 0.6);
        if (rng.uniform(3 * key) >= keep) continue;
      }
      double v = 0;
      for (int k = 0; k < r; ++k) v += rng.uniform((1ull << 40) + i * r + k) * rng.uniform((2ull << 40) + k * D + j);
      v += 0.05 * rng.uniform(3 * key + 1);
      c.rows.push_back(i);
      c.cols.push_back(j);
      c.values.push_back(T(v));
    }
  return c;
}

template <class T, class Mem>
double max_abs(const DenseMatrix<T, Mem>& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  double m = 0;
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) m = std::max(m, std::abs(double(h(i, j))));
  return m;
}

/// max |X - Y| / max |Y| (inf on a shape mismatch); 0 means bitwise equal.
template <class T, class Mem>
double rel_diff(const DenseMatrix<T, Mem>& X, const DenseMatrix<T, Mem>& Y) {
  if (X.extent(0) != Y.extent(0) || X.extent(1) != Y.extent(1)) return INFINITY;
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Y);
  double d = 0;
  for (std::size_t i = 0; i < hx.extent(0); ++i)
    for (std::size_t j = 0; j < hx.extent(1); ++j) d = std::max(d, std::abs(double(hx(i, j)) - double(hy(i, j))));
  return d / max_abs(Y);
}

}  // namespace kfactor::test
