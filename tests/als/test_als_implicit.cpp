// Implicit-feedback ALS: the half-steps against a float64 reference of
// dense per-row solves (exact and conjugate-gradient solvers, linear and log
// confidence, both lambda weightings, CSR and tiled builds), the objective
// against its dense definition, a non-increasing objective per half-step,
// exact continuation of a state, held-out interactions ranked above
// non-interacted items on a planted set, and the options.
#include <kfactor/als/als.hpp>
#include <kfactor/core/contract.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {
using namespace kfactor;

template <class View>
auto host(const View& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
}

/// Interaction counts on a random pattern: r in {0, 1, ..., 7} (zeros
/// stored: preference 0), row `empty_user` and column `empty_item` empty.
template <class T>
CooMatrix<T> counts(int m, int n, double density, std::uint64_t seed, int empty_user = -1, int empty_item = -1) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const std::uint64_t key = std::uint64_t(i) * n + j;
      if (i == empty_user || j == empty_item || rng.uniform(2 * key) >= density) continue;
      coo.rows.push_back(i);
      coo.cols.push_back(j);
      coo.values.push_back(T(std::floor(8 * rng.uniform(2 * key + 1))));
    }
  return coo;
}

/// The float64 reference: the model of Hu, Koren and Volinsky written out
/// densely, nothing shared with the library.
struct Reference {
  int m = 0, n = 0;
  std::vector<double> r;              ///< m x n, dense counts (0 where unobserved)
  std::vector<int> count_u, count_i;  ///< observed entries per row, per column
  double lambda = 0, alpha = 0, epsilon = 1;
  bool log = false, weight_nnz = false;

  template <class T>
  Reference(const CooMatrix<T>& coo, const als::Options& o)
      : m(int(coo.num_rows)),
        n(int(coo.num_cols)),
        r(std::size_t(m) * n, 0.0),
        count_u(m, 0),
        count_i(n, 0),
        lambda(o.lambda),
        alpha(o.alpha),
        epsilon(o.epsilon),
        log(o.confidence == als::Confidence::log),
        weight_nnz(o.weighting == als::LambdaWeighting::nnz) {
    for (std::size_t e = 0; e < coo.nnz(); ++e) {
      r[std::size_t(coo.rows[e]) * n + coo.cols[e]] = double(coo.values[e]);
      ++count_u[coo.rows[e]];
      ++count_i[coo.cols[e]];
    }
  }
  [[nodiscard]] double confidence(double v) const {
    return 1.0 + (log ? alpha * std::log(1.0 + v / epsilon) : alpha * v);
  }
  [[nodiscard]] double rating(int u, int i, bool users) const {
    return users ? r[std::size_t(u) * n + i] : r[std::size_t(i) * n + u];
  }

  /// The exact half-step: per row, (Y^T C_u Y + lambda_u I) x = Y^T C_u p_u
  /// with C_u the dense diagonal over every column, by Cholesky; rows
  /// without observed entries get zero. F: the other factor (rows x f).
  [[nodiscard]] std::vector<double> half_step(const std::vector<double>& F, int f, bool users) const {
    const int rows = users ? m : n, cols = users ? n : m;
    std::vector<double> out(std::size_t(rows) * f, 0.0);
    for (int u = 0; u < rows; ++u) {
      const int cnt = users ? count_u[u] : count_i[u];
      if (cnt == 0) continue;
      std::vector<double> A(std::size_t(f) * f, 0.0), b(f, 0.0);
      for (int i = 0; i < cols; ++i) {
        const double v = rating(u, i, users), c = confidence(v), p = v > 0 ? 1.0 : 0.0;
        for (int a = 0; a < f; ++a) {
          b[a] += c * p * F[std::size_t(i) * f + a];
          for (int bb = 0; bb < f; ++bb) A[a * f + bb] += c * F[std::size_t(i) * f + a] * F[std::size_t(i) * f + bb];
        }
      }
      for (int a = 0; a < f; ++a) A[a * f + a] += lambda * (weight_nnz ? cnt : 1);
      // Cholesky A = L L^T, then L L^T x = b.
      for (int j = 0; j < f; ++j) {
        double d = A[j * f + j];
        for (int k = 0; k < j; ++k) d -= A[j * f + k] * A[j * f + k];
        A[j * f + j] = std::sqrt(d);
        for (int i = j + 1; i < f; ++i) {
          double s = A[i * f + j];
          for (int k = 0; k < j; ++k) s -= A[i * f + k] * A[j * f + k];
          A[i * f + j] = s / A[j * f + j];
        }
      }
      for (int i = 0; i < f; ++i) {
        for (int k = 0; k < i; ++k) b[i] -= A[i * f + k] * b[k];
        b[i] /= A[i * f + i];
      }
      for (int i = f - 1; i >= 0; --i) {
        for (int k = i + 1; k < f; ++k) b[i] -= A[k * f + i] * b[k];
        b[i] /= A[i * f + i];
      }
      for (int a = 0; a < f; ++a) out[std::size_t(u) * f + a] = b[a];
    }
    return out;
  }

  /// The objective, summed over every (u, i).
  [[nodiscard]] double loss(const std::vector<double>& X, const std::vector<double>& Y, int f) const {
    double l = 0;
    for (int u = 0; u < m; ++u)
      for (int i = 0; i < n; ++i) {
        double d = 0;
        for (int k = 0; k < f; ++k) d += X[std::size_t(u) * f + k] * Y[std::size_t(i) * f + k];
        const double v = r[std::size_t(u) * n + i], p = v > 0 ? 1.0 : 0.0;
        l += confidence(v) * (p - d) * (p - d);
      }
    auto reg = [&](const std::vector<double>& F, const std::vector<int>& cnt) {
      double s = 0;
      for (std::size_t u = 0; u < cnt.size(); ++u) {
        double n2 = 0;
        for (int k = 0; k < f; ++k) n2 += F[u * f + k] * F[u * f + k];
        s += (weight_nnz ? cnt[u] : 1) * n2;
      }
      return s;
    };
    return l + lambda * (reg(X, count_u) + reg(Y, count_i));
  }
};

template <class T, class Mem>
std::vector<double> to_double(const DenseMatrix<T, Mem>& F) {
  const auto h = host(F);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t k = 0; k < h.extent(1); ++k) out[i * h.extent(1) + k] = double(h(i, k));
  return out;
}

/// max |a - b| / max |b|.
double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, mx = 0;
  for (std::size_t k = 0; k < b.size(); ++k) {
    d = std::max(d, std::abs(a[k] - b[k]));
    mx = std::max(mx, std::abs(b[k]));
  }
  return d / mx;
}

template <class P>
class AlsImplicit : public ::testing::Test {};
TYPED_TEST_SUITE(AlsImplicit, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// Every half-step equals the reference's exact solve from the same other
// factor (cholesky; cg with f steps, 2 f in float), and the reported loss the dense
// objective: 1e-6 relative in double (float: 1e-3).
TYPED_TEST(AlsImplicit, HalfStepsAndLossMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 37, n = 29, f = 6;
  const auto coo = counts<T>(m, n, 0.25, 3, 5, 7);
  auto problem = als::make_problem(exec, coo, 0.0, 1);
  const double tol = sizeof(T) == 8 ? 1e-6 : 1e-3;
  struct Variant {
    als::SolveMethod solver;
    als::Confidence confidence;
    als::LambdaWeighting weighting;
    als::Layout layout;
  };
  using als::Confidence, als::LambdaWeighting, als::Layout, als::SolveMethod;
  for (const Variant v : {Variant{SolveMethod::cholesky, Confidence::linear, LambdaWeighting::plain, Layout::csr},
                          Variant{SolveMethod::cholesky, Confidence::log, LambdaWeighting::nnz, Layout::csr},
                          Variant{SolveMethod::cholesky, Confidence::linear, LambdaWeighting::nnz, Layout::bals},
                          Variant{SolveMethod::cg, Confidence::linear, LambdaWeighting::plain, Layout::csr},
                          Variant{SolveMethod::cg, Confidence::log, LambdaWeighting::nnz, Layout::automatic}}) {
    als::Options o;
    o.implicit = true;
    o.rank = f;
    o.lambda = 0.5;
    o.alpha = 2.0;
    o.epsilon = 0.5;
    o.confidence = v.confidence;
    o.weighting = v.weighting;
    o.layout = v.layout;
    if (v.layout == Layout::bals) o.xb = 2, o.yb = 8;
    o.solver = v.solver;
    // f steps are exact in exact arithmetic; in float the directions lose
    // their conjugacy within f steps (3e-3 off from X = 0), so take 2 f.
    o.cg_steps = sizeof(T) == 8 ? f : 2 * f;
    const std::string what = std::string(als::to_string(v.solver)) + " " + als::to_string(v.confidence) + " " +
                             als::to_string(v.weighting) + " " + als::to_string(v.layout);
    const Reference ref(coo, o);
    auto s = als::init(exec, problem, o);
    for (int half = 0; half < 6; ++half) {
      const bool users = half % 2 == 0;
      const auto want = users ? ref.half_step(to_double(s.Y), f, true) : ref.half_step(to_double(s.X), f, false);
      if (users)
        als::user_half_step(exec, s);
      else
        als::item_half_step(exec, s);
      const auto got = to_double(users ? s.X : s.Y);
      EXPECT_LT(relative_difference(got, want), tol) << what << ", half-step " << half;
      const double l = ref.loss(to_double(s.X), to_double(s.Y), f);
      EXPECT_NEAR(als::loss(exec, problem, s), l, tol * l) << what << ", half-step " << half;
    }
    // The empty user and item stay zero.
    const auto X = to_double(s.X), Y = to_double(s.Y);
    for (int k = 0; k < f; ++k) {
      EXPECT_EQ(X[5 * f + k], 0.0) << what;
      EXPECT_EQ(Y[7 * f + k], 0.0) << what;
    }
  }
}

// The objective never increases over half-steps: exact solves, and three
// CG steps (each CG step lowers the row's quadratic objective).
TYPED_TEST(AlsImplicit, LossNeverIncreasesPerHalfStep) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = counts<T>(80, 60, 0.15, 12, 0, 0);
  auto problem = als::make_problem(exec, coo, 0.0, 1);
  for (auto solver : {als::SolveMethod::cholesky, als::SolveMethod::cg}) {
    als::Options o;
    o.implicit = true;
    o.rank = 12;
    o.lambda = 0.1;
    o.alpha = 10;
    o.weighting = als::LambdaWeighting::plain;
    o.solver = solver;
    o.layout = als::Layout::csr;
    auto s = als::init(exec, problem, o);
    als::user_half_step(exec, s);  // from X = 0: the first loss is X's optimum's
    double prev = als::loss(exec, problem, s);
    const double first = prev;
    for (int half = 1; half < 14; ++half) {
      if (half % 2 == 0)
        als::user_half_step(exec, s);
      else
        als::item_half_step(exec, s);
      const double cur = als::loss(exec, problem, s);
      EXPECT_LE(cur, prev * (1 + (sizeof(T) == 4 ? 1e-5 : 1e-12))) << als::to_string(solver) << " half-step " << half;
      prev = cur;
    }
    EXPECT_LT(prev, 0.9 * first) << als::to_string(solver);
  }
}

// A state continued by resume() equals the straight run bit for bit (the
// CG warm start is the state's X and Y), and the run reports the loss as
// its primary metric.
TYPED_TEST(AlsImplicit, ResumeContinuesExactly) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = counts<T>(50, 40, 0.2, 4);
  auto problem = als::make_problem(exec, coo, 0.1, 7);
  for (auto solver : {als::SolveMethod::cholesky, als::SolveMethod::cg}) {
    als::Options o;
    o.implicit = true;
    o.rank = 5;
    o.solver = solver;
    o.layout = als::Layout::csr;
    o.stop.max_iterations = 5;
    const auto straight = als::solve(exec, problem, o);
    EXPECT_TRUE(straight.report.metrics.has("loss"));
    EXPECT_FALSE(straight.report.metrics.has("test_rmse"));
    o.stop.max_iterations = 2;
    auto state = als::init(exec, problem, o);
    als::resume(exec, problem, o, state);
    state.reset_workspace();
    o.stop.max_iterations = 5;
    const Report rest = als::resume(exec, problem, o, state);
    EXPECT_EQ(rest.metrics.get("loss"), straight.report.metrics.get("loss")) << als::to_string(solver);
    const auto X1 = host(straight.state.X), X2 = host(state.X);
    for (std::size_t i = 0; i < X1.extent(0); ++i)
      for (std::size_t k = 0; k < X1.extent(1); ++k) ASSERT_EQ(X1(i, k), X2(i, k)) << als::to_string(solver);
    // The loss is the stop rule's metric: a target above it ends the run.
    o.stop.target = straight.report.metrics.get("loss") * 10;
    EXPECT_EQ(als::solve(exec, problem, o).report.stop_reason, "target_reached");
  }
}

/// Planted implicit interactions: users and items with rank-3 tastes; a
/// user interacts with the items of the top 20% of its scores, each with
/// probability 0.6, counts 1..5. Per user, every 4th interaction (by item
/// id) is held out.
template <class T>
struct Planted {
  CooMatrix<T> train;
  std::vector<std::vector<int>> held_out;  ///< per user
  std::vector<std::vector<bool>> seen;     ///< per user and item: an interaction (train or held out)
};
template <class T>
Planted<T> planted_interactions(int m, int n, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  const int r = 3;
  std::vector<double> X(std::size_t(m) * r), Y(std::size_t(n) * r);
  for (std::size_t k = 0; k < X.size(); ++k) X[k] = rng.uniform(k);
  for (std::size_t k = 0; k < Y.size(); ++k) Y[k] = rng.uniform(1000000 + k);
  Planted<T> p;
  p.train.num_rows = m;
  p.train.num_cols = n;
  p.held_out.resize(m);
  p.seen.assign(m, std::vector<bool>(n, false));
  for (int u = 0; u < m; ++u) {
    std::vector<double> s(n);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < r; ++k) s[i] += X[std::size_t(u) * r + k] * Y[std::size_t(i) * r + k];
    auto sorted = s;
    std::nth_element(sorted.begin(), sorted.begin() + n * 4 / 5, sorted.end());
    const double cut = sorted[n * 4 / 5];
    int kept = 0;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t key = 2000000 + 2 * (std::uint64_t(u) * n + i);
      if (s[i] < cut || rng.uniform(key) >= 0.6) continue;
      p.seen[u][i] = true;
      if (kept++ % 4 == 3) {
        p.held_out[u].push_back(i);
        continue;
      }
      p.train.rows.push_back(u);
      p.train.cols.push_back(i);
      p.train.values.push_back(T(1 + std::floor(5 * rng.uniform(key + 1))));
    }
  }
  return p;
}

// Implicit ALS ranks each user's held-out interactions above items it never
// interacted with: AUC over (held-out, random non-interacted) pairs > 0.8,
// for the exact and the CG solver.
TYPED_TEST(AlsImplicit, RanksHeldOutInteractionsAboveOthers) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 300, n = 200;
  const auto planted = planted_interactions<T>(m, n, 21);
  auto problem = als::make_problem(exec, planted.train, 0.0, 1);
  for (auto solver : {als::SolveMethod::cholesky, als::SolveMethod::cg}) {
    als::Options o;
    o.implicit = true;
    o.rank = 8;
    o.lambda = 0.1;
    o.alpha = 10;
    o.weighting = als::LambdaWeighting::plain;
    o.solver = solver;
    o.stop.max_iterations = 10;
    const auto res = als::solve(exec, problem, o);
    const auto X = to_double(res.state.X), Y = to_double(res.state.Y);
    auto score = [&](int u, int i) {
      double d = 0;
      for (int k = 0; k < o.rank; ++k) d += X[std::size_t(u) * o.rank + k] * Y[std::size_t(i) * o.rank + k];
      return d;
    };
    const CounterRng rng(5, RngStream::split);
    std::int64_t pairs = 0;
    double wins = 0;
    for (int u = 0; u < m; ++u)
      for (std::size_t h = 0; h < planted.held_out[u].size(); ++h)
        for (int draw = 0; draw < 20; ++draw) {
          const int j = int(rng.uniform(std::uint64_t(u) * 100000 + h * 100 + draw) * n) % n;
          if (planted.seen[u][j]) continue;
          const double a = score(u, planted.held_out[u][h]), b = score(u, j);
          wins += a > b ? 1.0 : a == b ? 0.5 : 0.0;
          ++pairs;
        }
    ASSERT_GT(pairs, 1000);
    EXPECT_GT(wins / double(pairs), 0.8) << als::to_string(solver);
  }
}

TEST(AlsImplicitOptions, RangesChoicesAndWhatDecidesTheIterates) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto refused = [](auto set, const std::string& name) {
    als::Options o;
    o.implicit = true;
    set(o);
    try {
      o.validate();
      ADD_FAILURE() << name << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  for (double a : {0.0, -1.0, nan, inf, 1e10}) refused([a](als::Options& o) { o.alpha = a; }, "alpha");
  for (double e : {0.0, -1.0, nan, inf}) refused([e](als::Options& o) { o.epsilon = e; }, "epsilon");
  for (int c : {0, -1, 1025}) refused([c](als::Options& o) { o.cg_steps = c; }, "cg_steps");
  refused([](als::Options& o) { o.solver = als::SolveMethod::cg, o.implicit = false; }, "implicit");
  refused([](als::Options& o) { o.solver = als::SolveMethod::cg, o.layout = als::Layout::bals; }, "bals");
  als::Options o;
  o.implicit = true;
  o.alpha = 1e-3;
  o.cg_steps = 1;
  EXPECT_NO_THROW(o.validate());
  EXPECT_THROW(als::parse_confidence("exp"), UsageError);
  EXPECT_THROW(als::parse_solve_method("lu"), UsageError);
  for (auto c : {als::Confidence::linear, als::Confidence::log}) EXPECT_EQ(als::parse_confidence(als::to_string(c)), c);
  for (auto s : {als::SolveMethod::cholesky, als::SolveMethod::cg})
    EXPECT_EQ(als::parse_solve_method(als::to_string(s)), s);
  // Explicit runs list `implicit` only; implicit runs what decides them.
  als::Options explicit_run;
  EXPECT_EQ(option_values(explicit_run).at("implicit"), "false");
  EXPECT_EQ(option_values(explicit_run).count("alpha"), 0u);
  auto v = option_values(o);
  EXPECT_EQ(v.at("implicit"), "true");
  EXPECT_EQ(v.count("alpha"), 1u);
  EXPECT_EQ(v.at("solver"), "cholesky");
  EXPECT_EQ(v.count("cg_steps"), 0u);
  EXPECT_EQ(v.count("epsilon"), 0u);
  o.solver = als::SolveMethod::cg;
  o.confidence = als::Confidence::log;
  v = option_values(o);
  EXPECT_EQ(v.at("cg_steps"), "1");
  EXPECT_EQ(v.at("confidence"), "log");
  EXPECT_EQ(v.count("epsilon"), 1u);
  o.alpha = 2e-3;
  EXPECT_NE(option_values(o), v);
}

// A negative rating is an input error naming the entry; explicit ALS takes it.
TEST(AlsImplicitInput, RefusesNegativeRatings) {
  const Kokkos::DefaultExecutionSpace exec;
  auto coo = counts<double>(20, 15, 0.3, 2);
  coo.values[3] = -2;
  auto problem = als::make_problem(exec, coo, 0.0, 1);
  als::Options o;
  o.rank = 3;
  EXPECT_NO_THROW(als::init(exec, problem, o));
  o.implicit = true;
  try {
    als::init(exec, problem, o);
    ADD_FAILURE() << "negative rating accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("user " + std::to_string(coo.rows[3]) + ", item " + std::to_string(coo.cols[3]) + " is -2"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("negative"), std::string::npos) << msg;
  }
}

}  // namespace
