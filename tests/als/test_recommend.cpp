// Serving a factor model: recommend() and similar_items() against float64
// brute force (ties included, filtered items never returned, exactly N or
// all that remain, independent of the batch size; the top N of item blocks
// merged: the whole top N), fold_in() against the
// solver's own user half-step, the ranking metrics against hand-computed
// values and a plain reference, and implicit ALS against a popularity
// ranking on a planted set.
#include <kfactor/als/als.hpp>
#include <kfactor/als/ranking_metrics.hpp>
#include <kfactor/als/recommend.hpp>
#include <kfactor/als/split.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace {
using namespace kfactor;

template <class View>
auto host(const View& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
}

/// A factor of m x f values on a grid of step 1/2 in [-2, 2] (scores are
/// exact in float and double, so equal scores are frequent and exact), or
/// uniform in [-1, 1).
template <class T, class Space>
DenseMatrix<T, typename Space::memory_space> factor(const Space& exec, int m, int f, std::uint64_t seed, bool grid) {
  const CounterRng rng(seed, RngStream::user);
  auto h = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>("h", m, f);
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < f; ++k) {
      const double u = rng.uniform(std::uint64_t(i) * f + k);
      h(i, k) = grid ? T(std::floor(u * 9) / 2 - 2) : T(2 * u - 1);
    }
  DenseMatrix<T, typename Space::memory_space> d("d", m, f);
  Kokkos::deep_copy(exec, d, h);
  exec.fence();
  return d;
}

/// Random `seen` pattern (density p), m x n, with row `full` holding every item.
template <class T>
CooMatrix<T> pattern(int m, int n, double p, std::uint64_t seed, int full = -1) {
  const CounterRng rng(seed, RngStream::split);
  CooMatrix<T> c;
  c.num_rows = m;
  c.num_cols = n;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      if (i == full || rng.uniform(std::uint64_t(i) * n + j) < p) {
        c.rows.push_back(i);
        c.cols.push_back(j);
        c.values.push_back(T(1));
      }
  return c;
}

/// Brute force in float64: (score, item) of the top n of q . F_j over the
/// allowed j, by descending score then ascending item.
template <class A, class B>
std::vector<std::pair<double, int>> brute_top(const A& Q, int q, const B& F, int n, const std::vector<bool>& skip,
                                              bool cosine) {
  const int f = int(Q.extent(1));
  auto norm = [&](const auto& M, int r) {
    double s = 0;
    for (int k = 0; k < f; ++k) s += double(M(r, k)) * double(M(r, k));
    return s > 0 ? 1 / std::sqrt(s) : 0.0;
  };
  std::vector<std::pair<double, int>> all;
  for (int j = 0; j < int(F.extent(0)); ++j) {
    if (!skip.empty() && skip[j]) continue;
    double s = 0;
    for (int k = 0; k < f; ++k) s += double(Q(q, k)) * double(F(j, k));
    if (cosine) s *= norm(Q, q) * norm(F, j);
    all.emplace_back(s, j);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  if (int(all.size()) > n) all.resize(n);
  return all;
}

template <class T>
class Recommend : public ::testing::Test {};
TYPED_TEST_SUITE(Recommend, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// Grid factors (many exact ties) and random ones, with and without a
// filter, N below, at and above the item count, and three batch sizes: the
// result equals brute force, never holds a filtered item, and returns
// min(N, unfiltered items) in descending score.
TYPED_TEST(Recommend, EqualsBruteForceWithTiesAndFilters) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 37, n = 53, f = 4;
  for (bool grid : {true, false}) {
    const auto X = factor<T>(exec, m, f, 1, grid), Y = factor<T>(exec, n, f, 2, grid);
    const auto Xh = host(X), Yh = host(Y);
    const auto seen_coo = pattern<T>(m, n, 0.3, 3, /*full=*/5);
    const auto seen = to_csr(exec, seen_coo);
    std::vector<std::vector<bool>> skip(m, std::vector<bool>(n, false));
    for (std::size_t e = 0; e < seen_coo.nnz(); ++e) skip[seen_coo.rows[e]][seen_coo.cols[e]] = true;
    std::vector<ordinal_t> users{0, 5, 36, 3, 3, 17};
    for (int N : {1, 10, n, n + 7})
      for (bool filter : {false, true})
        for (std::size_t bytes : {std::size_t(1), std::size_t(2000), std::size_t(0)}) {
          SCOPED_TRACE(std::string(grid ? "grid" : "random") + " N " + std::to_string(N) + " filter " +
                       std::to_string(filter) + " bytes " + std::to_string(bytes));
          const auto top = als::recommend(exec, X, Y, users, N, filter ? &seen : nullptr, bytes);
          const auto items = host(top.items);
          const auto scores = host(top.scores);
          const auto count = host(top.count);
          ASSERT_EQ(top.width(), std::size_t(std::min(N, n)));
          for (std::size_t b = 0; b < users.size(); ++b) {
            const int u = users[b];
            const auto ref = brute_top(Xh, u, Yh, N, filter ? skip[u] : std::vector<bool>{}, false);
            ASSERT_EQ(count(b), int(ref.size())) << "user " << u;
            for (int r = 0; r < count(b); ++r) {
              EXPECT_EQ(items(b, r), ref[r].second) << "user " << u << " rank " << r;
              EXPECT_NEAR(double(scores(b, r)), ref[r].first, grid ? 0.0 : 1e-5) << "user " << u << " rank " << r;
              if (filter) EXPECT_FALSE(skip[u][items(b, r)]);
              if (r > 0) EXPECT_GE(scores(b, r - 1), scores(b, r));
            }
            for (int r = count(b); r < int(top.width()); ++r) EXPECT_EQ(items(b, r), -1);
          }
          if (filter) EXPECT_EQ(count(1), 0);  // user 5 has seen every item
          // Several threads per row (their lists merged): the same result.
          const auto teams = als::detail::top_n(
              exec, X, Y, users, N,
              als::detail::Exclusions<T, typename Space::memory_space>{filter ? &seen : nullptr, false}, bytes, 2);
          const auto ti = host(teams.items);
          for (std::size_t b = 0; b < users.size(); ++b)
            for (int r = 0; r < int(top.width()); ++r) EXPECT_EQ(ti(b, r), items(b, r)) << b << " " << r;
        }
  }
}

TYPED_TEST(Recommend, SimilarItemsEqualBruteForceCosine) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int n = 61, f = 5;
  const auto Y = factor<T>(exec, n, f, 7, false);
  const auto Yh = host(Y);
  std::vector<ordinal_t> rows(n);
  std::iota(rows.begin(), rows.end(), 0);
  const int N = 8;
  const auto top = als::similar_items(exec, Y, rows, N, 4096);
  const auto items = host(top.items);
  const auto scores = host(top.scores);
  for (int q = 0; q < n; ++q) {
    std::vector<bool> skip(n, false);
    skip[q] = true;
    const auto ref = brute_top(Yh, q, Yh, N, skip, true);
    for (int r = 0; r < N; ++r) {
      EXPECT_NE(items(q, r), q);
      EXPECT_NEAR(double(scores(q, r)), ref[r].first, 1e-5) << q << " " << r;
      // Items may swap only where their cosines agree to rounding.
      if (items(q, r) != ref[r].second) EXPECT_NEAR(ref[r].first, ref[std::min(r + 1, N - 1)].first, 1e-5);
    }
  }
}

TEST(RecommendInput, RefusesBadArguments) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const Space exec;
  const auto X = factor<double>(exec, 4, 2, 1, false), Y = factor<double>(exec, 6, 2, 2, false);
  EXPECT_THROW(als::recommend(exec, X, Y, {0}, 0), UsageError);
  EXPECT_THROW(als::recommend(exec, X, Y, {0}, -3), UsageError);
  EXPECT_THROW(als::recommend(exec, X, Y, {4}, 2), UsageError);
  EXPECT_THROW(als::recommend(exec, X, Y, {-1}, 2), UsageError);
  const auto Y3 = factor<double>(exec, 6, 3, 2, false);
  EXPECT_THROW(als::recommend(exec, X, Y3, {0}, 2), UsageError);
  // N above the item count is clamped to it.
  EXPECT_EQ(als::recommend(exec, X, Y, {0, 1}, 100).width(), 6u);
}

// fold_in of the training users' own rows gives the rows the solver's user
// half-step computes from the same Y (explicit, implicit exact).
TYPED_TEST(Recommend, FoldInReproducesTheUserHalfStep) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 40, n = 30;
  auto coo = pattern<T>(m, n, 0.3, 11);
  const CounterRng rng(12, RngStream::user);
  for (std::size_t e = 0; e < coo.nnz(); ++e) coo.values[e] = T(1 + std::floor(5 * rng.uniform(e)));
  for (bool implicit : {false, true}) {
    SCOPED_TRACE(implicit ? "implicit" : "explicit");
    als::Options o;
    o.rank = 4;
    o.implicit = implicit;
    o.layout = als::Layout::csr;
    o.stop.max_iterations = 2;
    const auto problem = als::make_problem(exec, coo, 0.0, 1);
    auto res = als::solve(exec, problem, o);
    als::user_half_step(exec, res.state);  // X from the final Y
    const auto Xf = als::fold_in(exec, res.state.Y, o, coo);
    const auto a = host(res.state.X), b = host(Xf);
    const double tol = sizeof(T) == 4 ? 1e-4 : 1e-10;
    for (int u = 0; u < m; ++u)
      for (int k = 0; k < o.rank; ++k) EXPECT_NEAR(double(b(u, k)), double(a(u, k)), tol) << u << " " << k;
  }
  // A user without interactions folds in as the zero row.
  als::Options o;
  o.rank = 3;
  CooMatrix<T> none;
  none.num_rows = 2;
  none.num_cols = n;
  const auto Z = host(als::fold_in(exec, factor<T>(exec, n, 3, 1, false), o, none));
  for (int u = 0; u < 2; ++u)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(Z(u, k), T(0));
  EXPECT_THROW(als::fold_in(exec, factor<T>(exec, n, 4, 1, false), o, none), UsageError);  // rank 3 vs 4
}

/// Reference metrics, written out as the `implicit` library's loop.
struct RefMetrics {
  double precision = 0, recall = 0, map = 0, ndcg = 0, auc = 0;
};
RefMetrics reference_metrics(const std::vector<std::vector<int>>& ranked, const std::vector<std::set<int>>& likes,
                             int K, int n_items) {
  double relevant = 0, pr_div = 0, recall = 0, map = 0, ndcg = 0, auc = 0, total = 0;
  for (std::size_t u = 0; u < likes.size(); ++u) {
    if (likes[u].empty()) continue;
    const double P = double(likes[u].size());
    const int cut = std::min<int>(K, int(likes[u].size()));
    pr_div += cut;
    double idcg = 0;
    for (int i = 0; i < cut; ++i) idcg += 1 / std::log2(i + 2.0);
    double hit = 0, miss = 0, ap = 0, dcg = 0, a = 0;
    for (int i = 0; i < std::min<int>(K, int(ranked[u].size())); ++i)
      if (likes[u].count(ranked[u][i])) {
        hit += 1;
        ap += hit / (i + 1);
        dcg += 1 / std::log2(i + 2.0);
      } else {
        miss += 1;
        a += hit;
      }
    const double neg = n_items - P;
    a += (hit + P) / 2 * (neg - miss);
    relevant += hit;
    recall += hit / P;
    map += ap / cut;
    ndcg += dcg / idcg;
    auc += a / (P * neg);
    total += 1;
  }
  return {relevant / pr_div, recall / total, map / total, ndcg / total, auc / total};
}

/// TopN on `Space` from ranked lists (padded with -1).
template <class T, class Space>
als::TopN<T, typename Space::memory_space> make_top(const Space& exec, const std::vector<std::vector<int>>& ranked,
                                                    int width) {
  als::TopN<T, typename Space::memory_space> t;
  t.items = decltype(t.items)("items", ranked.size(), width);
  t.scores = decltype(t.scores)("scores", ranked.size(), width);
  t.count = decltype(t.count)("count", ranked.size());
  auto i = host(t.items);
  auto c = host(t.count);
  for (std::size_t u = 0; u < ranked.size(); ++u) {
    c(u) = int(ranked[u].size());
    for (int r = 0; r < width; ++r) i(u, r) = r < int(ranked[u].size()) ? ranked[u][r] : -1;
  }
  Kokkos::deep_copy(exec, t.items, i);
  Kokkos::deep_copy(exec, t.count, c);
  exec.fence();
  return t;
}

template <class T, class Space>
CsrMatrix<T, typename Space::memory_space> likes_csr(const Space& exec, const std::vector<std::set<int>>& likes,
                                                     int n) {
  CooMatrix<T> c;
  c.num_rows = std::int64_t(likes.size());
  c.num_cols = n;
  for (std::size_t u = 0; u < likes.size(); ++u)
    for (int i : likes[u]) {
      c.rows.push_back(int(u));
      c.cols.push_back(i);
      c.values.push_back(T(1));
    }
  return to_csr(exec, c);
}

// Two users, 6 items, K = 3, computed by hand:
//  user 0: ranked [2, 0, 4], test {0, 4, 5}: hits at ranks 2 and 3.
//    precision: 2 of min(3, 3); AP = (1/2 + 2/3) / 3 = 7/18;
//    DCG = 1/log2(3) + 1/log2(4), IDCG = 1 + 1/log2(3) + 1/log2(4);
//    AUC: miss at rank 1 adds 0; then (2 + 3)/2 * (3 - 1) = 5; / (3 * 3) = 5/9.
// The top N of blocks of items, each with its own training items excluded
// (local indices), merged in any block order: entry for entry the top N
// over all items (grid factors: many exact ties, which the merge breaks by
// global index as the whole selection does).
TYPED_TEST(Recommend, MergedBlockListsEqualTheWholeList) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int m = 29, n = 53, f = 3;
  const auto X = factor<T>(exec, m, f, 4, true), Y = factor<T>(exec, n, f, 5, true);
  const auto seen_coo = pattern<T>(m, n, 0.3, 6, /*full=*/2);
  const auto seen = to_csr(exec, seen_coo);
  const std::vector<ordinal_t> users{0, 2, 28, 7, 7, 13};
  const std::vector<ordinal_t> bounds{0, 7, 8, 30, 53};
  for (int N : {1, 5, n + 3}) {
    SCOPED_TRACE("N " + std::to_string(N));
    const auto whole = als::recommend(exec, X, Y, users, N, &seen);
    auto merged = als::detail::empty_top_n<T, Mem>(exec, users.size());
    for (int k = 0; k < 4; ++k) {
      const int q = (k + 2) % 4;  // blocks 2, 3, 0, 1: the ring order of rank 2
      const ordinal_t c0 = bounds[q], c1 = bounds[q + 1];
      DenseMatrix<T, Mem> Yq("Yq", std::size_t(c1 - c0), std::size_t(f));
      Kokkos::deep_copy(exec, Yq, Kokkos::subview(Y, Kokkos::make_pair(std::size_t(c0), std::size_t(c1)), Kokkos::ALL));
      CooMatrix<T> block;
      block.num_rows = m;
      block.num_cols = c1 - c0;
      for (std::size_t e = 0; e < seen_coo.nnz(); ++e)
        if (seen_coo.cols[e] >= c0 && seen_coo.cols[e] < c1) {
          block.rows.push_back(seen_coo.rows[e]);
          block.cols.push_back(seen_coo.cols[e] - c0);
          block.values.push_back(T(1));
        }
      const auto bseen = to_csr(exec, block);
      const auto part = als::recommend(exec, X, Yq, users, N, &bseen);
      merged = als::detail::merge_top_n(exec, merged, part, c0, N);
    }
    ASSERT_EQ(merged.width(), whole.width());
    const auto wi = host(whole.items), mi = host(merged.items);
    const auto ws = host(whole.scores), ms = host(merged.scores);
    const auto wc = host(whole.count), mc = host(merged.count);
    for (std::size_t b = 0; b < users.size(); ++b) {
      EXPECT_EQ(mc(b), wc(b)) << "user " << users[b];
      for (int r = 0; r < int(whole.width()); ++r) {
        EXPECT_EQ(mi(b, r), wi(b, r)) << "user " << users[b] << " rank " << r;
        EXPECT_EQ(ms(b, r), ws(b, r)) << "user " << users[b] << " rank " << r;
      }
    }
    EXPECT_EQ(mc(1), 0);  // user 2 has seen every item
  }
}

//  user 1: ranked [1, 3, 5], test {1}: hit at rank 1.
//    precision: 1 of min(3, 1); AP = 1; nDCG = 1;
//    AUC: misses add 1 + 1; then (1 + 1)/2 * (5 - 2) = 3; 5 / (1 * 5) = 1.
//  user 2: no test items, left out.
TYPED_TEST(Recommend, RankingMetricsByHand) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const std::vector<std::vector<int>> ranked{{2, 0, 4}, {1, 3, 5}, {0, 1, 2}};
  const std::vector<std::set<int>> likes{{0, 4, 5}, {1}, {}};
  const auto top = make_top<T>(exec, ranked, 3);
  const auto test = likes_csr<T>(exec, likes, 6);
  const auto r = als::ranking_metrics(exec, top, {0, 1, 2}, test, 3, 6);
  EXPECT_EQ(r.users, 2);
  EXPECT_NEAR(r.precision, 3.0 / 4.0, 1e-12);
  EXPECT_NEAR(r.recall, (2.0 / 3.0 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(r.map, (7.0 / 18.0 + 1.0) / 2, 1e-12);
  const double dcg0 = 1 / std::log2(3.0) + 0.5, idcg0 = 1 + dcg0;
  EXPECT_NEAR(r.ndcg, (dcg0 / idcg0 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(r.auc, (5.0 / 9.0 + 1.0) / 2, 1e-12);
  // k = 1: user 0 misses, user 1 hits.
  const auto r1 = als::ranking_metrics(exec, top, {0, 1, 2}, test, 1, 6);
  EXPECT_NEAR(r1.precision, 0.5, 1e-12);
  EXPECT_NEAR(r1.map, 0.5, 1e-12);
  EXPECT_THROW(als::ranking_metrics(exec, top, {0, 1, 2}, test, 4, 6), UsageError);
  EXPECT_THROW(als::ranking_metrics(exec, top, {0, 1, 2}, test, 0, 6), UsageError);
}

// Random factors, training and test sets: the full pipeline (recommend with
// the training items filtered, then the metrics) equals the reference loop
// on brute-force rankings.
TYPED_TEST(Recommend, RankingMetricsEqualReferenceOnRandomCases) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 50, n = 40, f = 3;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto X = factor<T>(exec, m, f, seed, true), Y = factor<T>(exec, n, f, seed + 10, true);
    const auto Xh = host(X), Yh = host(Y);
    const auto train_coo = pattern<T>(m, n, 0.2, seed + 20);
    auto test_coo = pattern<T>(m, n, 0.1, seed + 30);
    std::vector<std::vector<bool>> skip(m, std::vector<bool>(n, false));
    for (std::size_t e = 0; e < train_coo.nnz(); ++e) skip[train_coo.rows[e]][train_coo.cols[e]] = true;
    std::vector<std::set<int>> likes(m);
    CooMatrix<T> test = test_coo;
    test.rows.clear();
    test.cols.clear();
    test.values.clear();
    for (std::size_t e = 0; e < test_coo.nnz(); ++e)
      if (!skip[test_coo.rows[e]][test_coo.cols[e]]) {
        likes[test_coo.rows[e]].insert(test_coo.cols[e]);
        test.rows.push_back(test_coo.rows[e]);
        test.cols.push_back(test_coo.cols[e]);
        test.values.push_back(T(1));
      }
    for (int K : {1, 5, 10}) {
      std::vector<std::vector<int>> ranked(m);
      for (int u = 0; u < m; ++u)
        for (const auto& [s, j] : brute_top(Xh, u, Yh, K, skip[u], false)) ranked[u].push_back(j);
      const auto ref = reference_metrics(ranked, likes, K, n);
      const auto got = als::ranking_metrics(exec, X, Y, to_csr(exec, train_coo), to_csr(exec, test), K, 1000);
      EXPECT_NEAR(got.precision, ref.precision, 1e-12) << K;
      EXPECT_NEAR(got.recall, ref.recall, 1e-12) << K;
      EXPECT_NEAR(got.map, ref.map, 1e-12) << K;
      EXPECT_NEAR(got.ndcg, ref.ndcg, 1e-12) << K;
      EXPECT_NEAR(got.auc, ref.auc, 1e-12) << K;
    }
  }
}

/// Five groups of users and items; a user interacts with items of its own
/// group (probability 0.3) and rarely with others (0.01); item popularity
/// is flat within the groups, so popularity cannot tell the groups apart.
template <class T>
CooMatrix<T> grouped_interactions(int m, int n, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<T> c;
  c.num_rows = m;
  c.num_cols = n;
  for (int u = 0; u < m; ++u)
    for (int i = 0; i < n; ++i) {
      const std::uint64_t key = 2 * (std::uint64_t(u) * n + i);
      const double p = (u % 5 == i % 5) ? 0.3 : 0.01;
      if (rng.uniform(key) >= p) continue;
      c.rows.push_back(u);
      c.cols.push_back(i);
      c.values.push_back(T(1 + std::floor(4 * rng.uniform(key + 1))));
    }
  return c;
}

// Implicit ALS on the grouped set, evaluated on a leave-2-out split, ranks
// above a popularity ranking (the same filter of training items) on
// precision@10 and nDCG@10; evaluate() reports the same numbers.
TYPED_TEST(Recommend, ImplicitAlsBeatsPopularity) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 300, n = 200, K = 10;
  const auto all = grouped_interactions<T>(m, n, 5);
  const auto [train, test] = als::leave_k_out(all, 2, 9);
  auto problem = als::make_problem(exec, train, 0.0, 0, &test);
  als::Options o;
  o.implicit = true;
  o.rank = 8;
  o.alpha = 10;
  o.stop.max_iterations = 8;
  o.eval_k = K;
  const auto res = als::solve(exec, problem, o);
  const auto als_m = als::ranking_metrics(exec, res.state.X, res.state.Y, problem.train, problem.given_test, K);
  EXPECT_EQ(res.report.metrics.get("precision_at_k"), als_m.precision);
  EXPECT_EQ(res.report.metrics.get("ndcg_at_k"), als_m.ndcg);
  EXPECT_EQ(res.report.history.rows.size(), 8u);
  // Popularity: X = 1 column of ones, Y = the items' training counts.
  std::vector<double> pop(n, 0.0);
  for (std::size_t e = 0; e < train.nnz(); ++e) pop[train.cols[e]] += 1;
  DenseMatrix<T, typename Space::memory_space> ones("ones", m, 1), counts("counts", n, 1);
  Kokkos::deep_copy(exec, ones, T(1));
  auto ch = host(counts);
  for (int i = 0; i < n; ++i) ch(i, 0) = T(pop[i]);
  Kokkos::deep_copy(exec, counts, ch);
  const auto pop_m = als::ranking_metrics(exec, ones, counts, problem.train, problem.given_test, K);
  EXPECT_EQ(als_m.users, pop_m.users);
  EXPECT_GT(als_m.users, 250);
  EXPECT_GT(als_m.precision, 2 * pop_m.precision) << als_m.precision << " vs " << pop_m.precision;
  EXPECT_GT(als_m.ndcg, 2 * pop_m.ndcg) << als_m.ndcg << " vs " << pop_m.ndcg;
  EXPECT_GT(als_m.auc, pop_m.auc);
}

}  // namespace
