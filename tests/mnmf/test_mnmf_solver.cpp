// MNMF solver tests: digest 003 section 6, items 1-6, 9-14; the solver
// contract, option ranges, restarts that refuse changed options, and lambda
// selection.
#include "common/restart_refusal.hpp"
#include "mnmf_test_utils.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/mnmf/model_selection.hpp>

#include <unistd.h>
#include <climits>
#include <cstdio>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>

namespace {
using namespace kfactor;
using namespace kfactor::mnmf;
using namespace kfactor::mnmf::test;

using HostExec = Kokkos::DefaultHostExecutionSpace;
using HostMem = HostExec::memory_space;
static_assert(kfactor::Solver<HostExec, Problem<float, HostMem>, Options, State<float, HostMem>>);
static_assert(kfactor::Solver<HostExec, Problem<double, HostMem>, Options, State<double, HostMem>>);

template <class P>
class MnmfTyped : public ::testing::Test {};
TYPED_TEST_SUITE(MnmfTyped, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

template <class S>
class MnmfSpace : public ::testing::Test {};
TYPED_TEST_SUITE(MnmfSpace, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

template <class Space, class T>
Problem<T, typename Space::memory_space> small_problem(const Space& exec, int m, int n, double density,
                                                       std::uint64_t seed, int K, bool knn = true,
                                                       std::set<int> empty_rows = {}, std::set<int> empty_cols = {}) {
  auto R = to_csr(exec, random_ratings<T>(m, n, density, seed, empty_rows, empty_cols));
  GraphOptions g;
  g.neighbors = K;
  if (knn) return make_problem(exec, R, knn_graph(exec, R, g), knn_graph(exec, transpose(exec, R), g));
  return make_problem(exec, R, to_csr(exec, random_graph<T>(m, K, seed + 1)),
                      to_csr(exec, random_graph<T>(n, K, seed + 2)));
}

// Items 1, 2, 3: the objective (eq. 20 with lambda; eq. 25 with lambda/2)
// never increases after a W or an H sweep; factors stay finite and >= 0;
// exact zeros stay zero.
TYPED_TEST(MnmfTyped, ObjectiveNonIncreasingPerSweep) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const double tol = sizeof(T) == 8 ? 1e-12 : 2e-5;
  auto problem = small_problem<Space, T>(exec, 60, 40, 0.3, 11, 3, true, {7}, {5});
  for (const auto obj : {Objective::euclid, Objective::kl}) {
    const std::vector<double> lambdas =
        obj == Objective::euclid ? std::vector<double>{0, 0.1, 1, 10, 100} : std::vector<double>{0, 0.1, 1, 10};
    for (const double lambda : lambdas) {
      Options o;
      o.objective = obj;
      o.rank = 8;
      o.lambda_w = o.lambda_h = lambda;
      o.seed = 5;
      auto s = init(exec, problem, o);
      // an exact zero stays zero
      Kokkos::deep_copy(Kokkos::subview(s.W, 3, 2), T(0));
      Kokkos::deep_copy(Kokkos::subview(s.H, 4, 1), T(0));
      // eq. 15's weighting (lambda instead of lambda/2 for KL), to show the
      // check can fail: the digest saw rises in most epochs at lambda = 1
      Options eq15 = o;
      eq15.lambda_w = eq15.lambda_h = 2 * lambda;
      double prev = objective(exec, problem, o, s), prev15 = objective(exec, problem, eq15, s);
      int rises = 0, rises15 = 0;
      for (int epoch = 0; epoch < 25; ++epoch) {
        update_w(exec, problem, o, s);
        const double a = objective(exec, problem, o, s), a15 = objective(exec, problem, eq15, s);
        update_h(exec, problem, o, s);
        const double b = objective(exec, problem, o, s), b15 = objective(exec, problem, eq15, s);
        if (a > prev * (1 + tol)) ++rises;
        if (b > a * (1 + tol)) ++rises;
        if (a15 > prev15 * (1 + tol)) ++rises15;
        if (b15 > a15 * (1 + tol)) ++rises15;
        ASSERT_TRUE(std::isfinite(a) && std::isfinite(b));
        prev = b;
        prev15 = b15;
      }
      EXPECT_EQ(rises, 0) << to_string(obj) << " lambda " << lambda;
      if (obj == Objective::kl && lambda == 1.0) EXPECT_GT(rises15, 0) << "eq. 15 weighting never rose";
      const auto W = to_vector(s.W), H = to_vector(s.H);
      EXPECT_TRUE(all_finite_nonnegative(W));
      EXPECT_TRUE(all_finite_nonnegative(H));
      EXPECT_EQ(W[3 * 8 + 2], T(0));
      EXPECT_EQ(H[4 * 8 + 1], T(0));
      EXPECT_LT(prev, objective(exec, problem, o, init(exec, problem, o)));
    }
  }
}

/// Dense host float64 reference of Table 1 (eqs 16-19), dense G, V, P, Q:
/// W <- W o ((G o V) H + lambda P W) / ((G o W H^T) H + lambda Q W)     (eu)
/// W <- W o ((G o V / WH^T) H + lambda P W) / (G H + lambda Q W)        (kl)
/// and the same for H with the transposes. lambda = 0 gives the masked-NMF
/// rules (eqs 9, 10). A zero denominator keeps the entry (the guard).
struct DenseRef {
  int m, n, r;
  std::vector<double> V, G, P, Pb;  // V, G: m x n; P: m x m; Pb: n x n

  static void update(bool kl, int m, int n, int r, const std::vector<double>& V, const std::vector<double>& G,
                     bool transposed, std::vector<double>& X, const std::vector<double>& Y,
                     const std::vector<double>& P, double lambda, double floor) {
    // rows of X index the first dimension of V (or of V^T when transposed)
    auto v = [&](int i, int j) { return transposed ? V[std::size_t(j) * n + i] : V[std::size_t(i) * n + j]; };
    auto g = [&](int i, int j) { return transposed ? G[std::size_t(j) * n + i] : G[std::size_t(i) * n + j]; };
    const int rows = transposed ? n : m, cols = transposed ? m : n;
    std::vector<double> WHt(std::size_t(rows) * cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        double s = 0;
        for (int k = 0; k < r; ++k) s += X[i * r + k] * Y[j * r + k];
        WHt[std::size_t(i) * cols + j] = s;
      }
    std::vector<double> out = X;
    for (int i = 0; i < rows; ++i) {
      double q = 0;
      for (int l = 0; l < rows; ++l) q += P.empty() ? 0.0 : P[std::size_t(i) * rows + l];
      for (int k = 0; k < r; ++k) {
        double num = 0, den = 0;
        for (int j = 0; j < cols; ++j) {
          const double wh = WHt[std::size_t(i) * cols + j];
          if (kl) {
            num += g(i, j) * v(i, j) / std::max(wh, floor) * Y[j * r + k];
            den += g(i, j) * Y[j * r + k];
          } else {
            num += g(i, j) * v(i, j) * Y[j * r + k];
            den += g(i, j) * wh * Y[j * r + k];
          }
        }
        if (lambda != 0) {
          double pw = 0;
          for (int l = 0; l < rows; ++l) pw += P[std::size_t(i) * rows + l] * X[l * r + k];
          num += lambda * pw;
          den += lambda * q * X[i * r + k];
        }
        if (den > 0) out[i * r + k] = X[i * r + k] * num / den;
      }
    }
    X = out;
  }
};

template <class T, class Mem>
std::vector<double> dense_of(const CsrMatrix<T, Mem>& A, bool pattern) {
  auto h = copy_to<Kokkos::HostSpace>(A);
  std::vector<double> D(std::size_t(A.num_rows()) * A.num_cols, 0.0);
  for (int i = 0; i < A.num_rows(); ++i)
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e)
      D[std::size_t(i) * A.num_cols + h.entries(e)] = pattern ? 1.0 : double(h.values(e));
  return D;
}

template <class Space>
void compare_with_dense(const Space& exec, Objective obj, double lambda, bool with_graph) {
  using T = double;
  const int m = 120, n = 80, r = 6;
  auto R = to_csr(exec, random_ratings<T>(m, n, 0.15, 21, {3}, {9}));
  auto P = to_csr(exec, random_graph<T>(m, 4, 22));
  auto Pb = to_csr(exec, random_graph<T>(n, 4, 23));
  auto problem = with_graph ? make_problem(exec, R, P, Pb) : make_problem(exec, R);
  Options o;
  o.objective = obj;
  o.rank = r;
  o.lambda_w = lambda;
  o.lambda_h = 2 * lambda;
  auto s = init(exec, problem, o);
  auto W = to_vector(s.W), H = to_vector(s.H);
  const auto V = dense_of(R, false), G = dense_of(R, true);
  const auto Pd = with_graph ? dense_of(P, false) : std::vector<double>{};
  const auto Pbd = with_graph ? dense_of(Pb, false) : std::vector<double>{};
  for (int epoch = 0; epoch < 6; ++epoch) {
    step(exec, problem, o, s);
    DenseRef::update(obj == Objective::kl, m, n, r, V, G, false, W, H, Pd, o.lambda_w, o.kl_floor);
    DenseRef::update(obj == Objective::kl, m, n, r, V, G, true, H, W, Pbd, o.lambda_h, o.kl_floor);
  }
  EXPECT_LT(rel_diff(to_vector(s.W), W), 1e-12) << to_string(obj) << " lambda " << lambda;
  EXPECT_LT(rel_diff(to_vector(s.H), H), 1e-12) << to_string(obj) << " lambda " << lambda;
}

// Item 4: with lambda = 0 the iterates are the masked-NMF rules (9), (10).
TYPED_TEST(MnmfSpace, LambdaZeroEqualsMaskedNmf) {
  const TypeParam exec;
  compare_with_dense(exec, Objective::euclid, 0.0, false);
  compare_with_dense(exec, Objective::kl, 0.0, false);
}

// Item 5: the sparse update equals the dense matrix form of Table 1.
TYPED_TEST(MnmfSpace, SparseUpdateEqualsDenseTable1) {
  const TypeParam exec;
  for (double lambda : {0.5, 5.0}) {
    compare_with_dense(exec, Objective::euclid, lambda, true);
    compare_with_dense(exec, Objective::kl, lambda, true);
  }
}

// Items 6, 11, 12, 14: the Kokkos solver equals the serial reference
// (bitwise on host spaces, to rounding on a device) for many ranks, including
// ranks that are not multiples of 32; same seed gives identical factors and
// history.
TYPED_TEST(MnmfSpace, MatchesSerialReferenceAnyRank) {
  using T = double;
  const TypeParam exec;
  constexpr bool host = is_host_space_v<TypeParam>;
  auto problem = small_problem<TypeParam, T>(exec, 70, 50, 0.2, 31, 4, false, {2}, {6});
  const auto Rs = to_serial(problem.ratings);
  for (int r : {1, 5, 32, 33, 100, 128, 257, 1024}) {
    // A rank needs at least as many users and items (init refuses more):
    // larger ranks get a larger, sparser problem with about as many ratings.
    const int m = std::max(70, r + 20), n = std::max(50, r + 10);
    const auto pr = small_problem<TypeParam, T>(exec, m, n, 700.0 / (double(m) * n), 31, 4, false, {2}, {6});
    const auto Rr = to_serial(pr.ratings), Rtr = to_serial(pr.ratings_t);
    const auto Pr = to_serial(pr.user_graph), Pbr = to_serial(pr.item_graph);
    const auto q = mnmf::detail::serial_degrees(Pr, m), qb = mnmf::detail::serial_degrees(Pbr, n);
    for (const auto obj : {Objective::euclid, Objective::kl}) {
      Options o;
      o.objective = obj;
      o.rank = r;
      o.lambda_w = 0.7;
      o.lambda_h = 1.3;
      auto s = init(exec, pr, o);
      auto W = to_vector(s.W), H = to_vector(s.H);
      std::vector<T> up, dn;
      const int epochs = r >= 257 ? 2 : 10;
      for (int e = 0; e < epochs; ++e) {
        step(exec, pr, o, s);
        mnmf::detail::serial_epoch(obj == Objective::kl, Rr, Rtr, W, H, r, Pr, q, T(o.lambda_w), Pbr, qb, T(o.lambda_h),
                                   T(o.kl_floor), up, dn);
      }
      // host: same summation order as the serial reference, except that
      // Kokkos may vectorize the r-reduction; a device reduces in a tree
      const double tol = host ? 1e-13 : 1e-12;
      EXPECT_LE(rel_diff(to_vector(s.W), W), tol) << to_string(obj) << " r " << r;
      EXPECT_LE(rel_diff(to_vector(s.H), H), tol) << to_string(obj) << " r " << r;
    }
  }
  // same seed, same everything
  Options o;
  o.rank = 7;
  o.lambda_w = o.lambda_h = 1;
  o.stop.max_iterations = 5;
  const auto a = solve(exec, problem, o), b = solve(exec, problem, o);
  EXPECT_EQ(to_vector(a.state.W), to_vector(b.state.W));
  EXPECT_EQ(to_vector(a.state.H), to_vector(b.state.H));
  ASSERT_EQ(a.report.history.rows.size(), 5u);
  EXPECT_EQ(a.report.history.rows, b.report.history.rows);
  // the reported train RMSE is the host computation
  const auto Wv = to_vector(a.state.W), Hv = to_vector(a.state.H);
  double sq = 0;
  for (int i = 0; i < Rs.rows; ++i)
    for (auto e = Rs.row_map[i]; e < Rs.row_map[i + 1]; ++e) {
      double p = 0;
      for (int k = 0; k < 7; ++k) p += Wv[i * 7 + k] * Hv[std::size_t(Rs.entries[e]) * 7 + k];
      sq += (Rs.values[e] - p) * (Rs.values[e] - p);
    }
  EXPECT_NEAR(a.report.metrics.get("train_rmse"), std::sqrt(sq / double(Rs.values.size())), 1e-12);
}

// Item 6: Jacobi semantics: permuting users and items permutes the result
// (no dependence on row order) up to rounding.
TYPED_TEST(MnmfSpace, IndependentOfRowOrder) {
  using T = double;
  const TypeParam exec;
  const int m = 50, n = 40, r = 5;
  auto coo = random_ratings<T>(m, n, 0.25, 41);
  auto gu = random_graph<T>(m, 3, 42), gi = random_graph<T>(n, 3, 43);
  std::vector<int> pm(m), pn(n);  // new index of old row
  std::iota(pm.begin(), pm.end(), 0);
  std::iota(pn.begin(), pn.end(), 0);
  const CounterRng rng(44, RngStream::user);
  for (int i = m - 1; i > 0; --i) std::swap(pm[i], pm[int(rng.uniform(std::uint64_t(i)) * (i + 1))]);
  for (int j = n - 1; j > 0; --j) std::swap(pn[j], pn[int(rng.uniform(std::uint64_t(1000 + j)) * (j + 1))]);
  auto permute = [](CooMatrix<T> c, const std::vector<int>& pr, const std::vector<int>& pc) {
    for (auto& x : c.rows) x = pr[x];
    for (auto& x : c.cols) x = pc[x];
    return c;
  };
  auto p1 = make_problem(exec, to_csr(exec, coo), to_csr(exec, gu), to_csr(exec, gi));
  auto p2 = make_problem(exec, to_csr(exec, permute(coo, pm, pn)), to_csr(exec, permute(gu, pm, pm)),
                         to_csr(exec, permute(gi, pn, pn)));
  for (const auto obj : {Objective::euclid, Objective::kl}) {
    Options o;
    o.objective = obj;
    o.rank = r;
    o.lambda_w = o.lambda_h = 2;
    auto s1 = init(exec, p1, o);
    auto s2 = init(exec, p2, o);
    auto W1 = to_vector(s1.W), H1 = to_vector(s1.H);
    std::vector<T> W2(W1.size()), H2(H1.size());
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < r; ++k) W2[pm[i] * r + k] = W1[i * r + k];
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < r; ++k) H2[pn[j] * r + k] = H1[j * r + k];
    from_vector(s2.W, W2);
    from_vector(s2.H, H2);
    for (int e = 0; e < 10; ++e) {
      step(exec, p1, o, s1);
      step(exec, p2, o, s2);
    }
    W1 = to_vector(s1.W);
    H1 = to_vector(s1.H);
    W2 = to_vector(s2.W);
    H2 = to_vector(s2.H);
    std::vector<T> W2back(W1.size()), H2back(H1.size());
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < r; ++k) W2back[i * r + k] = W2[pm[i] * r + k];
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < r; ++k) H2back[j * r + k] = H2[pn[j] * r + k];
    EXPECT_LT(rel_diff(W2back, W1), 1e-12) << to_string(obj);
    EXPECT_LT(rel_diff(H2back, H1), 1e-12) << to_string(obj);
    EXPECT_NEAR(objective(exec, p1, o, s1), objective(exec, p2, o, s2), 1e-10 * objective(exec, p1, o, s1));
  }
}

// Item 9: the edge sum 1/2 sum p_il |w_i - w_l|^2 equals
// Tr(W^T Q W) - Tr(W^T P W) and is >= 0.
TYPED_TEST(MnmfSpace, RoughnessEqualsLaplacianTrace) {
  using T = double;
  const TypeParam exec;
  auto problem = small_problem<TypeParam, T>(exec, 40, 30, 0.3, 51, 4, false);
  Options o;
  o.rank = 6;
  auto s = init(exec, problem, o);
  const auto W = to_vector(s.W);
  const auto P = to_serial(problem.user_graph);
  const auto q = mnmf::detail::serial_degrees(P, 40);
  double tq = 0, tp = 0;
  for (int i = 0; i < 40; ++i) {
    for (int k = 0; k < 6; ++k) tq += q[i] * W[i * 6 + k] * W[i * 6 + k];
    for (auto e = P.row_map[i]; e < P.row_map[i + 1]; ++e)
      for (int k = 0; k < 6; ++k) tp += P.values[e] * W[i * 6 + k] * W[std::size_t(P.entries[e]) * 6 + k];
  }
  const double rough = mnmf::detail::roughness(exec, problem.user_graph, s.W);
  EXPECT_GE(rough, 0.0);
  EXPECT_NEAR(rough, tq - tp, 1e-12 * tq);
  // the degree vector is the row sums
  const auto qd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, problem.user_degree);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(qd(i), q[i]);
}

// Item 10: after convergence from the same init, the roughness of W is
// non-increasing in lambda.
TYPED_TEST(MnmfSpace, RoughnessDecreasesWithLambda) {
  using T = double;
  const TypeParam exec;
  auto problem = small_problem<TypeParam, T>(exec, 40, 30, 0.3, 61, 3, true);
  for (const auto obj : {Objective::euclid, Objective::kl}) {
    double prev = std::numeric_limits<double>::infinity();
    for (double lambda : {0.0, 1.0, 10.0, 100.0}) {
      Options o;
      o.objective = obj;
      o.rank = 4;
      o.lambda_w = lambda;
      o.stop.max_iterations = 400;
      auto s = init(exec, problem, o);
      for (int e = 0; e < 400; ++e) step(exec, problem, o, s);
      const double rough = mnmf::detail::roughness(exec, problem.user_graph, s.W);
      EXPECT_LE(rough, prev * (1 + 1e-9)) << to_string(obj) << " lambda " << lambda;
      prev = rough;
    }
  }
}

// Item 13: guards: empty users and items at lambda = 0, a prediction of
// exactly 0 under KL; nothing becomes NaN or Inf.
TYPED_TEST(MnmfTyped, GuardsKeepEverythingFinite) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  auto R = to_csr(exec, random_ratings<T>(30, 20, 0.3, 71, {0, 4, 29}, {3, 19}));
  auto P = to_csr(exec, random_graph<T>(30, 2, 72));
  auto Pb = to_csr(exec, random_graph<T>(20, 2, 73));
  for (bool graph : {false, true}) {
    auto problem = graph ? make_problem(exec, R, P, Pb) : make_problem(exec, R);
    for (const auto obj : {Objective::euclid, Objective::kl}) {
      Options o;
      o.objective = obj;
      o.rank = 3;
      o.lambda_w = o.lambda_h = graph ? 1.0 : 0.0;
      auto s = init(exec, problem, o);
      // user 5 predicts exactly 0 everywhere (and so do the ratings of item 7's users... via H row 7)
      Kokkos::deep_copy(Kokkos::subview(s.W, 5, Kokkos::ALL), T(0));
      Kokkos::deep_copy(Kokkos::subview(s.H, 7, Kokkos::ALL), T(0));
      const auto W0 = to_vector(s.W);
      for (int e = 0; e < 20; ++e) step(exec, problem, o, s);
      const auto W = to_vector(s.W), H = to_vector(s.H);
      EXPECT_TRUE(all_finite_nonnegative(W)) << to_string(obj) << " graph " << graph;
      EXPECT_TRUE(all_finite_nonnegative(H)) << to_string(obj) << " graph " << graph;
      EXPECT_TRUE(std::isfinite(objective(exec, problem, o, s)));
      const auto m = evaluate(exec, problem, o, s);
      for (const auto& [name, v] : m.items) EXPECT_TRUE(std::isfinite(v)) << name;
      if (!graph) {
        // an empty user keeps its initial row (zero denominator guard)
        for (int k = 0; k < 3; ++k) EXPECT_EQ(W[0 * 3 + k], W0[0 * 3 + k]);
      }
      for (int k = 0; k < 3; ++k) EXPECT_EQ(W[5 * 3 + k], T(0));
    }
  }
}

// Every numeric option against 0, -1, NaN, Inf and an absurdly large value:
// validate() accepts exactly the values inside the declared range and names
// the option when it refuses one.
TEST(MnmfOptions, EveryNumericOptionHasARange) {
  EXPECT_NO_THROW(Options{}.validate());
  EXPECT_THROW(parse_objective("frobenius"), UsageError);
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity(), big_int = double(INT_MAX);
  struct Case {
    const char* name;
    std::function<void(Options&, double)> set;
    std::vector<std::pair<double, bool>> values;  // value, accepted
  };
  const std::vector<Case> cases = {
      {"rank",
       [](Options& o, double v) { o.rank = int(v); },
       {{0, false}, {-1, false}, {big_int, false}, {1024, true}}},
      {"lambda_w",
       [](Options& o, double v) { o.lambda_w = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {1e3, true}}},
      {"lambda_h",
       [](Options& o, double v) { o.lambda_h = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}}},
      {"stop.max_iterations",
       [](Options& o, double v) { o.stop.max_iterations = int(v); },
       {{0, true}, {-1, false}, {big_int, false}}},
      {"stop.tolerance",
       [](Options& o, double v) { o.stop.tolerance = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}}},
      {"stop.target", [](Options& o, double v) { o.stop.target = v; }, {{0, true}, {nan, true}, {inf, false}}},
      {"init_low",
       [](Options& o, double v) { o.init_low = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {1, true}}},
      {"init_high",
       [](Options& o, double v) { o.init_high = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {10, true}}},
      {"init_scale",
       [](Options& o, double v) { o.init_scale = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {2, true}}},
      {"kl_floor",
       [](Options& o, double v) { o.kl_floor = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {1e-9, true}}},
  };
  for (const auto& c : cases)
    for (const auto& [v, ok] : c.values) {
      SCOPED_TRACE(std::string(c.name) + " = " + std::to_string(v));
      Options o;
      c.set(o, v);
      if (ok) {
        EXPECT_NO_THROW(o.validate());
      } else {
        try {
          o.validate();
          ADD_FAILURE() << "accepted";
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
        }
      }
    }
  // The graph options: sigma NaN / Inf, neighbors 0 / -1 / huge.
  for (double sigma : {nan, inf, -inf}) {
    GraphOptions g;
    g.sigma = sigma;
    EXPECT_THROW(g.validate(), UsageError);
  }
  for (int k : {0, -1, INT_MAX}) {
    GraphOptions g;
    g.neighbors = k;
    EXPECT_THROW(g.validate(), UsageError);
  }
}

TYPED_TEST(MnmfSpace, BadInputsAreRejected) {
  using T = double;
  const TypeParam exec;
  CooMatrix<T> c;
  c.num_rows = 3;
  c.num_cols = 3;
  c.rows = {0, 1};
  c.cols = {1, 2};
  c.values = {1.0, -2.0};
  EXPECT_THROW(make_problem(exec, to_csr(exec, c)), InputError);
  c.values = {1.0, 2.0};
  CooMatrix<T> g;  // asymmetric graph
  g.num_rows = g.num_cols = 3;
  g.rows = {0};
  g.cols = {1};
  g.values = {1.0};
  EXPECT_THROW(make_problem(exec, to_csr(exec, c), to_csr(exec, g)), InputError);
  auto p = make_problem(exec, to_csr(exec, c));
  Options o;
  o.rank = 2;
  o.lambda_w = 1;
  EXPECT_THROW(solve(exec, p, o), UsageError);  // lambda without a graph
  // A rank above min(users, items) = 3, naming the rank.
  o.lambda_w = 0;
  o.rank = 4;
  try {
    init(exec, p, o);
    ADD_FAILURE() << "rank 4 accepted for 3 x 3 ratings";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
  o.rank = 3;
  EXPECT_NO_THROW(init(exec, p, o));
  // No ratings, or only zeros: nothing to factorize.
  c.values = {0.0, 0.0};
  EXPECT_THROW(make_problem(exec, to_csr(exec, c)), InputError);
  CooMatrix<T> none;
  none.num_rows = none.num_cols = 3;
  EXPECT_THROW(make_problem(exec, to_csr(exec, none)), InputError);
}

// A restart must repeat every option that decides the iterates: the
// checkpoint records Options::visit's list and load_checkpoint refuses a
// difference with a UsageError naming the option.
TYPED_TEST(MnmfSpace, RestartWithAChangedOptionIsRefusedNamingIt) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  using T = double;
  using Space = TypeParam;
  const Space exec;
  auto R = to_csr(exec, random_ratings<T>(40, 30, 0.3, 211));
  auto problem =
      make_problem(exec, R, to_csr(exec, random_graph<T>(40, 3, 212)), to_csr(exec, random_graph<T>(30, 3, 213)));
  Options o;
  o.rank = 5;
  o.lambda_w = o.lambda_h = 0.5;
  o.stop.max_iterations = 3;
  auto meta_of = [&](const Options& x) {
    return checkpoint_meta<T, Space>("mnmf", option_values(x), fingerprint(exec, problem.ratings), x.rank);
  };
  const std::string path = ::testing::TempDir() + "/kfactor_mnmf_options_" + std::to_string(::getpid()) + ".h5";
  auto first = solve(exec, problem, o);
  save_checkpoint(path, first.state, meta_of(o));
  // Same options with a longer stop rule: restored, and continues as one straight run.
  auto longer = o;
  longer.stop.max_iterations = 6;
  // Restored into a state that ran from another seed: load_checkpoint drops
  // the workspace derived from its old factors.
  auto other = o;
  other.seed += 1;
  auto state = solve(exec, problem, other).state;
  EXPECT_NO_THROW(load_checkpoint(path, state, meta_of(longer)));
  EXPECT_EQ(resume(exec, problem, longer, state).iterations, 6);
  const auto straight = solve(exec, problem, longer);
  EXPECT_EQ(to_vector(state.W), to_vector(straight.state.W));
  EXPECT_EQ(to_vector(state.H), to_vector(straight.state.H));
  const std::vector<kfactor::test::OptionChange<Options>> changes = {
      {"objective", [](Options& x) { x.objective = Objective::kl; }},
      {"lambda_w", [](Options& x) { x.lambda_w = 0.25; }},
      {"lambda_h", [](Options& x) { x.lambda_h = 0.25; }},
      {"seed", [](Options& x) { x.seed += 1; }},
      {"init_low", [](Options& x) { x.init_low = 0.25; }},
      {"init_high", [](Options& x) { x.init_high = 2; }},
      {"init_scale", [](Options& x) { x.init_scale = 1; }},
      {"kl_floor", [](Options& x) { x.kl_floor = 1e-9; }},
  };
  kfactor::test::expect_restart_refused(path, state, o, meta_of, changes);
  std::remove(path.c_str());
#endif
}

// select_lambda: every candidate's RMSE is that of its own solve, the lowest
// wins (the first on equal RMSEs), and the training-ratings form equals the
// split and graphs built by hand.
TYPED_TEST(MnmfSpace, SelectLambdaPicksTheLowestValidationRmse) {
  using T = double;
  const TypeParam exec;
  const auto train = random_ratings<T>(60, 45, 0.3, 301);
  GraphOptions g;
  g.neighbors = 4;
  Options o;
  o.rank = 4;
  o.stop.max_iterations = 8;
  const std::vector<double> grid = {0.0, 0.3, 3.0, 0.3};
  auto [fit, validation] = split_train_test(train, 0.2, 7);
  const auto R = to_csr(exec, fit);
  const auto problem =
      make_problem(exec, R, knn_graph(exec, R, g), knn_graph(exec, transpose(exec, R), g), to_csr(exec, validation));
  int seen = 0;
  const auto chosen = select_lambda(exec, problem, o, grid, [&](const LambdaCandidate&) { ++seen; });
  EXPECT_EQ(seen, 4);
  ASSERT_EQ(chosen.candidates.size(), grid.size());
  std::size_t best = 0;
  for (std::size_t c = 0; c < grid.size(); ++c) {
    auto oc = o;
    oc.lambda_w = oc.lambda_h = grid[c];
    EXPECT_EQ(chosen.candidates[c].lambda, grid[c]);
    EXPECT_EQ(chosen.candidates[c].validation_rmse, solve(exec, problem, oc).report.metrics.get("test_rmse"));
    if (chosen.candidates[c].validation_rmse < chosen.candidates[best].validation_rmse) best = c;
  }
  EXPECT_EQ(chosen.lambda, grid[best]);
  EXPECT_EQ(chosen.validation_rmse, chosen.candidates[best].validation_rmse);
  EXPECT_EQ(chosen.candidates[1].validation_rmse, chosen.candidates[3].validation_rmse);  // repeated lambda
  EXPECT_NE(best, 3u);  // equal RMSEs: the earlier candidate
  const auto from_train = select_lambda(exec, train, 0.2, 7, g, o, grid);
  EXPECT_EQ(from_train.lambda, chosen.lambda);
  EXPECT_EQ(from_train.validation_rmse, chosen.validation_rmse);
  EXPECT_THROW(select_lambda(exec, problem, o, {}), UsageError);
  EXPECT_THROW(select_lambda(exec, problem, o, {std::nan("")}), UsageError);
  EXPECT_THROW(select_lambda(exec, train, 0.0, 7, g, o, grid), UsageError);
  EXPECT_THROW(select_lambda(exec, make_problem(exec, R), o, {0.0}), UsageError);  // no validation ratings
}

}  // namespace

namespace {
using namespace kfactor;
using namespace kfactor::mnmf;
using namespace kfactor::mnmf::test;

template <class S>
class MnmfRestart : public ::testing::Test {};
TYPED_TEST_SUITE(MnmfRestart, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

// The solver-loop contract: the fields listed by State::visit decide the next
// iterate, so a state rebuilt from them continues bit for bit.
TYPED_TEST(MnmfRestart, StateRebuiltFromVisitContinuesBitForBit) {
  using T = double;
  using Mem = typename TypeParam::memory_space;
  const TypeParam exec;
  auto R = to_csr(exec, random_ratings<T>(40, 30, 0.3, 111));
  auto problem =
      make_problem(exec, R, to_csr(exec, random_graph<T>(40, 3, 112)), to_csr(exec, random_graph<T>(30, 3, 113)));
  for (const auto obj : {Objective::euclid, Objective::kl}) {
    Options o;
    o.objective = obj;
    o.rank = 6;
    o.lambda_w = o.lambda_h = 2;
    o.stop.max_iterations = 7;
    const auto straight = solve(exec, problem, o);
    o.stop.max_iterations = 3;
    auto first = solve(exec, problem, o);
    // copy every visited field into a fresh state (what a checkpoint does)
    State<T, Mem> restored;
    restored.W = DenseMatrix<T, Mem>("W", 40, 6);
    restored.H = DenseMatrix<T, Mem>("H", 30, 6);
    std::vector<std::function<void(State<T, Mem>&)>> copies;
    first.state.visit([&](const char* name, auto& x) {
      using X = std::decay_t<decltype(x)>;
      if constexpr (Kokkos::is_view_v<X>) {
        const std::string n = name;
        copies.push_back([n, x](State<T, Mem>& s) { Kokkos::deep_copy(n == "W" ? s.W : s.H, x); });
      } else {
        const X value = x;
        const std::string n = name;
        copies.push_back([n, value](State<T, Mem>& s) {
          if constexpr (std::is_same_v<X, int>)
            s.iteration = value;
          else
            s.seed = static_cast<std::uint64_t>(value);
        });
      }
    });
    ASSERT_EQ(copies.size(), 4u);
    for (auto& c : copies) c(restored);
    o.stop.max_iterations = 7;
    const auto resumed = resume(exec, problem, o, restored);
    EXPECT_EQ(restored.iteration, 7);
    EXPECT_EQ(resumed.iterations, 7);
    EXPECT_EQ(to_vector(restored.W), to_vector(straight.state.W));
    EXPECT_EQ(to_vector(restored.H), to_vector(straight.state.H));
    EXPECT_EQ(resumed.metrics.get("objective"), straight.report.metrics.get("objective"));
  }
}

}  // namespace
