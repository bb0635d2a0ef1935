#pragma once
// Shared helpers of the MNMF tests: random rating matrices, random symmetric
// graphs, host copies, and conversions to the serial reference's CSR.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include "serial_reference.hpp"

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

namespace kfactor::mnmf::test {

/// m x n ratings in {0.5, 1.0, ..., 5.0} with the given density; rows in
/// `empty_rows` and columns in `empty_cols` get no ratings.
template <class T>
CooMatrix<T> random_ratings(int m, int n, double density, std::uint64_t seed, std::set<int> empty_rows = {},
                            std::set<int> empty_cols = {}) {
  CooMatrix<T> c;
  c.num_rows = m;
  c.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const std::uint64_t key = std::uint64_t(i) * n + j;
      if (empty_rows.count(i) || empty_cols.count(j) || rng.uniform(2 * key) >= density) continue;
      c.rows.push_back(i);
      c.cols.push_back(j);
      c.values.push_back(T(0.5 * (1 + int(rng.uniform(2 * key + 1) * 10))));
    }
  return c;
}

/// Random symmetric graph, no self-loops, about `deg` neighbours per node,
/// weights in (0.1, 1.1] or 1 when binary.
template <class T>
CooMatrix<T> random_graph(int n, int deg, std::uint64_t seed, bool binary = false) {
  std::set<std::pair<int, int>> edges;
  const CounterRng rng(seed, RngStream::graph);
  std::uint64_t c = 0;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < deg; ++d) {
      const int l = int(rng.uniform(c++) * n);
      if (l != i) edges.insert({std::min(i, l), std::max(i, l)});
    }
  CooMatrix<T> g;
  g.num_rows = g.num_cols = n;
  for (auto [a, b] : edges) {
    const T w = binary ? T(1) : T(0.1 + rng.uniform(c++));
    g.rows.push_back(a);
    g.cols.push_back(b);
    g.values.push_back(w);
    g.rows.push_back(b);
    g.cols.push_back(a);
    g.values.push_back(w);
  }
  return g;
}

template <class T, class Mem>
detail::SerialCsr<T> to_serial(const CsrMatrix<T, Mem>& A) {
  detail::SerialCsr<T> s;
  if (A.row_map.extent(0) == 0) return s;
  auto h = copy_to<Kokkos::HostSpace>(A);
  s.rows = A.num_rows();
  s.cols = A.num_cols;
  s.row_map.assign(h.row_map.data(), h.row_map.data() + h.row_map.extent(0));
  s.entries.assign(h.entries.data(), h.entries.data() + h.entries.extent(0));
  s.values.assign(h.values.data(), h.values.data() + h.values.extent(0));
  return s;
}

template <class View>
std::vector<typename View::non_const_value_type> to_vector(const View& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  std::vector<typename View::non_const_value_type> v(X.size());
  for (std::size_t i = 0; i < X.extent(0); ++i)
    for (std::size_t k = 0; k < X.extent(1); ++k) v[i * X.extent(1) + k] = h(i, k);
  return v;
}

template <class T, class Mem>
void from_vector(const DenseMatrix<T, Mem>& X, const std::vector<T>& v) {
  auto h = Kokkos::create_mirror_view(X);
  for (std::size_t i = 0; i < X.extent(0); ++i)
    for (std::size_t k = 0; k < X.extent(1); ++k) h(i, k) = v[i * X.extent(1) + k];
  Kokkos::deep_copy(X, h);
}

/// max |a - b| / max |b|
template <class T>
double rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double num = 0, den = 0;
  for (std::size_t p = 0; p < a.size(); ++p) {
    num = std::max(num, std::abs(double(a[p]) - double(b[p])));
    den = std::max(den, std::abs(double(b[p])));
  }
  return den > 0 ? num / den : num;
}

template <class T>
bool all_finite_nonnegative(const std::vector<T>& v) {
  for (auto x : v)
    if (!std::isfinite(double(x)) || x < T(0)) return false;
  return true;
}

}  // namespace kfactor::mnmf::test
