#pragma once
// Synthetic MNMF input shared by the benchmarks (bench_mnmf,
// bench_distributed): power-law rating matrices generated on the device and
// random symmetric graphs with the structure of kNN graphs.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/mnmf/knn_graph.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace kfactor::bench {

/// `draws` ratings of an m x n matrix in the execution space's memory: row
/// and column of each draw are floor(size * u^1.5) (power-law counts, heavy
/// rows and columns at low indices), duplicates removed (so nnz is a little
/// lower than draws), values 1..5.
template <class T, class Exec>
CsrMatrix<T, typename Exec::memory_space> power_law_ratings(const Exec& exec, std::int64_t m, std::int64_t n,
                                                            std::int64_t draws, std::uint64_t seed) {
  using Mem = typename Exec::memory_space;
  Kokkos::View<std::uint64_t*, Mem> keys("keys", draws);
  const CounterRng rng(seed, RngStream::user);
  Kokkos::parallel_for(
      "bench::power_law_ratings::draw", Kokkos::RangePolicy<Exec>(exec, 0, draws), KOKKOS_LAMBDA(std::int64_t p) {
        const double u1 = rng.uniform(std::uint64_t(3 * p)), u2 = rng.uniform(std::uint64_t(3 * p + 1));
        auto i = static_cast<std::int64_t>(double(m) * Kokkos::pow(u1, 1.5));
        auto j = static_cast<std::int64_t>(double(n) * Kokkos::pow(u2, 1.5));
        i = i < m ? i : m - 1;
        j = j < n ? j : n - 1;
        keys(p) = std::uint64_t(i) * std::uint64_t(n) + std::uint64_t(j);
      });
  Kokkos::sort(exec, keys);
  std::size_t U = 0;
  Kokkos::View<std::size_t*, Mem> pos("pos", draws);
  Kokkos::parallel_scan(
      "bench::power_law_ratings::unique", Kokkos::RangePolicy<Exec>(exec, 0, draws),
      KOKKOS_LAMBDA(std::int64_t p, std::size_t& u, bool final) {
        const bool first = p == 0 || keys(p) != keys(p - 1);
        if (final) pos(p) = first ? u : ~std::size_t(0);
        if (first) ++u;
      },
      U);
  Kokkos::View<ordinal_t*, Mem> rows("rows", U), cols("cols", U);
  Kokkos::View<T*, Mem> vals("vals", U);
  Kokkos::parallel_for(
      "bench::power_law_ratings::triplets", Kokkos::RangePolicy<Exec>(exec, 0, draws), KOKKOS_LAMBDA(std::int64_t p) {
        const std::size_t u = pos(p);
        if (u == ~std::size_t(0)) return;
        rows(u) = static_cast<ordinal_t>(keys(p) / std::uint64_t(n));
        cols(u) = static_cast<ordinal_t>(keys(p) % std::uint64_t(n));
        vals(u) = T(1 + int(5 * rng.uniform(std::uint64_t(3 * p + 2))));
      });
  keys = {};
  pos = {};
  return kfactor::detail::csr_from_triplets<Exec, T, Mem>(exec, rows, cols, vals, ordinal_t(m), ordinal_t(n));
}

/// A random symmetric graph over the rows of V with K neighbours per node
/// (OR), binary weights: a kNN graph's structure without its build cost.
template <class T, class Exec>
CsrMatrix<T, typename Exec::memory_space> random_graph(const Exec& exec,
                                                       const CsrMatrix<T, typename Exec::memory_space>& V, int K,
                                                       std::uint64_t seed) {
  using Mem = typename Exec::memory_space;
  const ordinal_t m = V.num_rows();
  K = std::min<int>(K, m - 1);
  Kokkos::View<ordinal_t**, Kokkos::LayoutRight, Mem> nbr("nbr", m, K);
  const CounterRng rng(seed, RngStream::graph);
  Kokkos::parallel_for(
      "bench::random_graph", Kokkos::RangePolicy<Exec>(exec, 0, m), KOKKOS_LAMBDA(ordinal_t i) {
        for (int k = 0; k < K; ++k) {
          auto l = static_cast<ordinal_t>(rng.uniform(std::uint64_t(i) * K + k) * (m - 1));
          nbr(i, k) = l >= i ? l + 1 : l;
        }
      });
  mnmf::GraphOptions g;
  g.neighbors = K;
  return mnmf::detail::graph_from_neighbors(exec, V, nbr, g, mnmf::detail::row_norms(exec, V));
}

}  // namespace kfactor::bench
