// kNN graph tests (digest 003 section 6, item 8) and the memory bound (item 7).
#include "mnmf_test_utils.hpp"

#include <impl/Kokkos_Profiling.hpp>

#include <map>

namespace {
using namespace kfactor;
using namespace kfactor::mnmf;
using namespace kfactor::mnmf::test;

template <class S>
class KnnTest : public ::testing::Test {};
TYPED_TEST_SUITE(KnnTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

/// Brute-force host reference of the pinned definition (knn_graph.hpp):
/// dense rows, d2 = max(0, (|a|^2 + |b|^2) - 2 a.b), the K smallest (d2, l),
/// l != i, OR / AND symmetrization, weights per undirected edge.
std::map<std::pair<int, int>, double> reference_graph(const std::vector<std::vector<double>>& rows, int K, Weighting w,
                                                      double sigma, Symmetrization sym) {
  const int m = int(rows.size());
  K = std::min(K, m - 1);
  auto dot = [&](int a, int b) {
    double s = 0;
    for (std::size_t j = 0; j < rows[a].size(); ++j)
      if (rows[a][j] != 0 && rows[b][j] != 0) s += rows[a][j] * rows[b][j];
    return s;
  };
  std::vector<double> nrm(m);
  for (int i = 0; i < m; ++i) {
    double s = 0;
    for (double v : rows[i]) s += v * v;
    nrm[i] = s;
  }
  auto d2 = [&](int a, int b) { return std::max(0.0, (nrm[a] + nrm[b]) - 2.0 * dot(a, b)); };
  std::map<std::pair<int, int>, int> count;
  for (int i = 0; i < m; ++i) {
    std::vector<std::pair<double, int>> c;
    for (int l = 0; l < m; ++l)
      if (l != i) c.push_back({d2(i, l), l});
    std::sort(c.begin(), c.end());
    for (int k = 0; k < K; ++k) count[{std::min(i, c[k].second), std::max(i, c[k].second)}] += 1;
  }
  std::map<std::pair<int, int>, double> edges;
  double total = 0;
  for (auto [e, c] : count)
    if (sym == Symmetrization::union_or || c == 2) {
      edges[e] = 0;
      total += d2(e.first, e.second);
    }
  if (w == Weighting::heat && !(sigma > 0)) sigma = edges.empty() ? 1.0 : total / double(edges.size());
  std::map<std::pair<int, int>, double> out;
  for (auto& [e, v] : edges) {
    const double wt = w == Weighting::binary ? 1.0
                      : w == Weighting::heat ? std::exp(-d2(e.first, e.second) / sigma)
                                             : dot(e.first, e.second);
    out[e] = wt;
    out[{e.second, e.first}] = wt;
  }
  return out;
}

TYPED_TEST(KnnTest, EqualsBruteForceReference) {
  using T = double;
  const TypeParam exec;
  const int m = 70, n = 30;
  auto coo = random_ratings<T>(m, n, 0.25, 81, {10, 40}, {});
  // duplicated rows make exact distance ties; the tie rule picks the lower index
  {
    auto c2 = coo;
    c2.rows.clear();
    c2.cols.clear();
    c2.values.clear();
    for (std::size_t e = 0; e < coo.nnz(); ++e) {
      if (coo.rows[e] >= 60) continue;
      c2.rows.push_back(coo.rows[e]);
      c2.cols.push_back(coo.cols[e]);
      c2.values.push_back(coo.values[e]);
      if (coo.rows[e] < 10) {  // rows 60..69 copy rows 0..9
        c2.rows.push_back(coo.rows[e] + 60);
        c2.cols.push_back(coo.cols[e]);
        c2.values.push_back(coo.values[e]);
      }
    }
    coo = c2;
  }
  std::vector<std::vector<double>> dense(m, std::vector<double>(n, 0.0));
  for (std::size_t e = 0; e < coo.nnz(); ++e) dense[coo.rows[e]][coo.cols[e]] = coo.values[e];
  auto V = to_csr(exec, coo);
  for (const auto w : {Weighting::binary, Weighting::heat, Weighting::dot})
    for (const auto sym : {Symmetrization::union_or, Symmetrization::intersection_and})
      for (int K : {1, 3, 5, 15})
        for (std::size_t block : {std::size_t(1) << 30, std::size_t(2000)}) {
          GraphOptions g;
          g.neighbors = K;
          g.weighting = w;
          g.symmetrization = sym;
          g.sigma = w == Weighting::heat && K == 3 ? 20.0 : 0.0;
          g.block_bytes = block;  // 2000 bytes: one query per block
          const auto P = knn_graph(exec, V, g);
          const auto ref = reference_graph(dense, K, w, g.sigma, sym);
          const auto h = copy_to<Kokkos::HostSpace>(P);
          ASSERT_EQ(P.num_rows(), m);
          ASSERT_EQ(P.num_cols, m);
          ASSERT_EQ(P.nnz(), ref.size()) << to_string(w) << " " << to_string(sym) << " K " << K;
          std::map<std::pair<int, int>, double> got;
          for (int i = 0; i < m; ++i) {
            int deg = 0;
            for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) {
              got[{i, h.entries(e)}] = h.values(e);
              EXPECT_NE(h.entries(e), i) << "self-loop";
              ++deg;
            }
            if (sym == Symmetrization::union_or) EXPECT_GE(deg, K);
          }
          for (auto& [e, v] : ref) {
            ASSERT_TRUE(got.count(e)) << "missing edge " << e.first << "-" << e.second;
            EXPECT_NEAR(got[e], v, 1e-12 * std::max(1.0, std::abs(v)));
            EXPECT_EQ(got[e], (got[std::make_pair(e.second, e.first)])) << "P != P^T";
          }
          // q_ii = row sums
          auto problem = make_problem(exec, to_csr(exec, random_ratings<T>(m, 5, 0.5, 3)), P);
          const auto q = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, problem.user_degree);
          for (int i = 0; i < m; ++i) {
            double s = 0;
            for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) s += h.values(e);
            EXPECT_EQ(q(i), s);
          }
        }
}

TYPED_TEST(KnnTest, FloatGraphMatchesDouble) {
  const TypeParam exec;
  auto cd = random_ratings<double>(40, 25, 0.3, 91);
  auto cf = random_ratings<float>(40, 25, 0.3, 91);
  GraphOptions g;
  g.neighbors = 4;
  const auto hd = copy_to<Kokkos::HostSpace>(knn_graph(exec, to_csr(exec, cd), g));
  const auto hf = copy_to<Kokkos::HostSpace>(knn_graph(exec, to_csr(exec, cf), g));
  ASSERT_EQ(hd.entries.extent(0), hf.entries.extent(0));
  for (std::size_t e = 0; e < hd.entries.extent(0); ++e) EXPECT_EQ(hd.entries(e), hf.entries(e));
}

// Item 7: no allocation grows as m^2, n^2 or m*n. Every Kokkos allocation of
// graph building, init, epochs and evaluation is recorded through the Kokkos
// Tools allocation callbacks.
std::uint64_t g_live = 0, g_peak = 0, g_largest = 0, g_count = 0;
std::map<const void*, std::uint64_t> g_sizes;
void on_alloc(Kokkos_Profiling_SpaceHandle, const char*, const void* ptr, std::uint64_t size) {
  g_sizes[ptr] = size;
  g_live += size;
  g_peak = std::max(g_peak, g_live);
  g_largest = std::max(g_largest, size);
  ++g_count;
}
void on_dealloc(Kokkos_Profiling_SpaceHandle, const char*, const void* ptr, std::uint64_t size) {
  g_live -= size;
  g_sizes.erase(ptr);
}

TYPED_TEST(KnnTest, MemoryIsLinearInTheData) {
  using T = double;
  const TypeParam exec;
  const int m = 4000, n = 2000, r = 8, K = 5;
  // about 5 ratings per user, generated sparsely
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(101, RngStream::user);
  for (int i = 0; i < m; ++i) {
    std::set<int> cols;
    for (int d = 0; d < 5; ++d) cols.insert(int(rng.uniform(std::uint64_t(i) * 8 + d) * n));
    for (int j : cols) {
      coo.rows.push_back(i);
      coo.cols.push_back(j);
      coo.values.push_back(T(1 + (i + j) % 5));
    }
  }
  const std::uint64_t nnz = coo.nnz();
  g_live = g_peak = g_largest = g_count = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_alloc);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_dealloc);
  {
    auto R = to_csr(exec, coo);
    GraphOptions g;
    g.neighbors = K;
    g.block_bytes = std::size_t(1) << 20;
    auto P = knn_graph(exec, R, g);
    auto Pb = knn_graph(exec, transpose(exec, R), g);
    auto problem = make_problem(exec, R, P, Pb);
    Options o;
    o.rank = r;
    o.lambda_w = o.lambda_h = 1;
    o.stop.max_iterations = 2;
    auto res = solve(exec, problem, o);
    EXPECT_TRUE(std::isfinite(res.report.metrics.get("objective")));
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  ASSERT_GT(g_count, 10u) << "the allocation callbacks did not fire";
  const std::uint64_t linear = 8 * (nnz + std::uint64_t(m + n) * (r + K + 1));
  // the largest buffer: a kNN block (<= 1 MiB + one query row) or a linear array
  EXPECT_LE(g_largest, std::max<std::uint64_t>(4 * linear / 10, (1u << 20) + 8 * (m + n)));
  EXPECT_LT(g_largest, 8ull * m * n / 50);
  EXPECT_LT(g_largest, 8ull * n * n / 10);
  EXPECT_LE(g_peak, 16 * linear + (2u << 20)) << "peak " << g_peak << " linear " << linear;
  EXPECT_LT(g_peak, 8ull * m * n / 10);
}

}  // namespace
