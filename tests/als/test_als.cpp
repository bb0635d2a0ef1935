// The ALS solver (digest checklist 6, 8-11, 13, 14, 16), planted recovery, empty
// users/items, MovieLens latest-small.
#include <kfactor/als/als.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/io/read.hpp>

#include "common/test_spaces.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace {
using namespace kfactor;

/// Ratings of a planted rank-r model on a random pattern (row/column
/// densities vary), with `empty_user` and `empty_item` given no ratings.
template <class T>
CooMatrix<T> planted(int m, int n, int r, double density, double noise, std::uint64_t seed, int empty_user = -1,
                     int empty_item = -1) {
  const CounterRng rng(seed, RngStream::user);
  std::vector<double> X0(std::size_t(m) * r), Y0(std::size_t(n) * r);
  for (std::size_t i = 0; i < X0.size(); ++i) X0[i] = rng.uniform(std::uint64_t(i));
  for (std::size_t i = 0; i < Y0.size(); ++i) Y0[i] = rng.uniform(std::uint64_t(1000000 + i));
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const double p = density * (0.3 + 1.4 * double((i * 7 + j * 3) % 11) / 10.0);
      if (i == empty_user || j == empty_item || rng.uniform(std::uint64_t(5000000) + std::uint64_t(i) * n + j) >= p)
        continue;
      double v = 0;
      for (int k = 0; k < r; ++k) v += X0[std::size_t(i) * r + k] * Y0[std::size_t(j) * r + k];
      v += noise * (rng.uniform(std::uint64_t(90000000) + std::uint64_t(i) * n + j) - 0.5);
      coo.rows.push_back(i);
      coo.cols.push_back(j);
      coo.values.push_back(T(v));
    }
  return coo;
}

template <class P>
class Als : public ::testing::Test {};
TYPED_TEST_SUITE(Als, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

template <class View>
auto host(const View& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
}

// solve(exec, problem, options, state) continues a State in place: 2 + 3
// iterations equal 5 straight ones bit for bit, with the history and the
// iteration counter carried on; a state of another rank is refused.
TYPED_TEST(Als, SolveContinuesAGivenState) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = planted<T>(60, 40, 3, 0.3, 0.1, 11);
  auto problem = als::make_problem(exec, coo, 0.2, 7);
  als::Options o;
  o.rank = 5;
  o.lambda = 0.05;
  o.xb = 4;
  o.yb = 16;
  o.stop.max_iterations = 5;
  const auto straight = als::solve(exec, problem, o);
  auto state = als::init(exec, problem, o);
  o.stop.max_iterations = 2;
  const Report part = als::resume(exec, problem, o, state);
  EXPECT_EQ(state.iteration, 2);
  EXPECT_EQ(part.iterations, 2);
  o.stop.max_iterations = 5;
  int seen = 0;
  const Report rest = als::resume(exec, problem, o, state, [&](const IterationEvent& e) {
    EXPECT_EQ(e.iteration, 3 + seen++);
    return ObserverAction::proceed;
  });
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(rest.iterations, 5);
  EXPECT_EQ(rest.history.size(), 5u);
  EXPECT_EQ(rest.info.at("continued_from"), "2");
  EXPECT_EQ(rest.metrics.get("test_rmse"), straight.report.metrics.get("test_rmse"));
  const auto X1 = host(straight.state.X), X2 = host(state.X);
  const auto Y1 = host(straight.state.Y), Y2 = host(state.Y);
  for (std::size_t i = 0; i < X1.extent(0); ++i)
    for (std::size_t k = 0; k < X1.extent(1); ++k) ASSERT_EQ(X1(i, k), X2(i, k));
  for (std::size_t i = 0; i < Y1.extent(0); ++i)
    for (std::size_t k = 0; k < Y1.extent(1); ++k) ASSERT_EQ(Y1(i, k), Y2(i, k));
  als::Options other = o;
  other.rank = 4;
  EXPECT_THROW(als::resume(exec, problem, other, state), UsageError);
}

// 8 (and 9's matrix): the tiled normal equations equal a float64 CSR
// reference, for f not divisible by the register block; tiled and CSR paths
// agree bit for bit.
TYPED_TEST(Als, NormalEquationsMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int m = 23, n = 31;
  const auto coo = planted<T>(m, n, 3, 0.35, 0.5, 3, 4, 6);
  const auto R = to_csr(exec, coo);
  const auto Rh = copy_to<Kokkos::HostSpace>(R);
  for (int f : {10, 13, 100}) {
    DenseMatrix<T, Mem> Y("Y", n, f);
    fill_uniform(exec, Y, 5, RngStream::factor_h, T(-1), T(1));
    const auto Yh = host(Y);
    const double lambda = 0.3;
    for (bool weight : {true, false}) {
      std::vector<std::vector<T>> got_A, got_b;
      for (int variant = 0; variant < 3; ++variant) {
        const bool tiled = variant > 0;
        const int xb = variant == 2 ? 4 : 3, yb = variant == 2 ? 8 : 5;
        auto S = als::detail::make_structure(exec, R, Rh, tiled, xb, yb, {}, {});
        const int xbe = tiled ? xb : 1;
        const ordinal_t blocks = (m + xbe - 1) / xbe;
        // Batch-local index of each row: blocks in launch (schedule) order.
        const auto sched = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.schedule);
        ASSERT_EQ(ordinal_t(sched.extent(0)), blocks);
        std::vector<std::size_t> lb(m, std::size_t(-1));
        std::int64_t prev_load = std::numeric_limits<std::int64_t>::max();
        for (ordinal_t k = 0; k < blocks; ++k) {
          std::int64_t load = 0;
          for (int rho = 0; rho < xbe; ++rho)
            if (sched(k) * xbe + rho < m) {
              const ordinal_t u = sched(k) * xbe + rho;
              ASSERT_EQ(lb[u], std::size_t(-1)) << "row " << u << " scheduled twice";
              lb[u] = std::size_t(k) * xbe + rho;
              load += Rh.row_map(u + 1) - Rh.row_map(u);
            }
          EXPECT_LE(load, prev_load) << "launch position " << k << ": not longest first";
          prev_load = load;
        }
        Kokkos::View<T***, Kokkos::LayoutRight, Mem> A("A", blocks * xbe, f, f);
        Kokkos::View<T**, Kokkos::LayoutRight, Mem> b("b", blocks * xbe, f);
        if (tiled)
          als::detail::build_normal_equations<true>(exec, S, Y, f, T(lambda), weight, 0, blocks, A, b);
        else
          als::detail::build_normal_equations<false>(exec, S, Y, f, T(lambda), weight, 0, blocks, A, b);
        const auto Ah = host(A);
        const auto bh = host(b);
        std::vector<T> fa, fb;
        for (int u = 0; u < m; ++u) {
          const double w = weight ? double(Rh.row_map(u + 1) - Rh.row_map(u)) : 1.0;
          for (int i = 0; i < f; ++i) {
            double bref = 0, scale = 1;
            for (auto e = Rh.row_map(u); e < Rh.row_map(u + 1); ++e) {
              bref += double(Rh.values(e)) * double(Yh(Rh.entries(e), i));
              scale += std::abs(double(Rh.values(e)) * double(Yh(Rh.entries(e), i)));
            }
            const double tol = (sizeof(T) == 4 ? 2e-6 : 1e-14) * scale * 4;
            ASSERT_NEAR(double(bh(lb[u], i)), bref, tol) << "f " << f << " row " << u;
            fb.push_back(bh(lb[u], i));
            for (int j = 0; j <= i; ++j) {
              double aref = i == j ? lambda * w : 0.0, s = 1;
              for (auto e = Rh.row_map(u); e < Rh.row_map(u + 1); ++e) {
                aref += double(Yh(Rh.entries(e), i)) * double(Yh(Rh.entries(e), j));
                s += std::abs(double(Yh(Rh.entries(e), i)) * double(Yh(Rh.entries(e), j)));
              }
              ASSERT_NEAR(double(Ah(lb[u], i, j)), aref, (sizeof(T) == 4 ? 2e-6 : 1e-14) * s * 4)
                  << "f " << f << " row " << u << " (" << i << "," << j << ")";
              fa.push_back(Ah(lb[u], i, j));
            }
          }
        }
        got_A.push_back(fa);
        got_b.push_back(fb);
      }
      EXPECT_EQ(got_A[0], got_A[1]);
      EXPECT_EQ(got_A[0], got_A[2]);
      EXPECT_EQ(got_b[0], got_b[1]);
      EXPECT_EQ(got_b[0], got_b[2]);
    }
  }
}

/// Y (n x f, host) that counts, per row, how often the build reads its first
/// entry: every staging of a Y row starts there, so the counts are the
/// Y-row loads.
struct CountingY {
  using array_layout = Kokkos::LayoutRight;
  using non_const_value_type = double;
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> y;
  Kokkos::View<int*, Kokkos::HostSpace> loads;
  KOKKOS_INLINE_FUNCTION const double& operator()(ordinal_t i, int j) const {
    if (j == 0) Kokkos::atomic_inc(&loads(i));
    return y(i, j);
  }
  KOKKOS_INLINE_FUNCTION std::size_t stride(int r) const { return y.stride(r); }
  KOKKOS_INLINE_FUNCTION const double* data() const { return y.data(); }
};

// 6: the tiled build loads each distinct column of a tile once for the
// tile's xb rows: tile_ptr[last] Y-row loads per half-step, where the CSR
// build loads one per nonzero. Every Y row is loaded once per tile column
// block row that holds it.
TEST(AlsYRowLoads, TiledBuildLoadsEachTileColumnOnce) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const Host exec;
  const int m = 37, n = 29, f = 10, xb = 4, yb = 8;
  const auto coo = planted<double>(m, n, 3, 0.4, 0.1, 21);
  const auto R = to_csr(exec, coo);
  const auto Rh = copy_to<Kokkos::HostSpace>(R);
  CountingY Y{Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace>("Y", n, f),
              Kokkos::View<int*, Kokkos::HostSpace>("loads", n)};
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < f; ++k) Y.y(j, k) = 0.1 * ((j * 7 + k * 3) % 11) - 0.5;
  const ordinal_t blocks = (m + xb - 1) / xb;
  Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> A("A", blocks * xb, f, f);
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> b("b", blocks * xb, f);
  const auto S = als::detail::make_structure(exec, R, Rh, true, xb, yb, {}, {});
  als::detail::build_normal_equations<true>(exec, S, Y, f, 0.1, true, 0, blocks, A, b);
  exec.fence();
  const std::int64_t distinct = S.tile_ptr(S.tile_ptr.extent(0) - 1);
  ASSERT_GT(S.stats.redundancy, 0) << "the pattern must share columns within tiles";
  std::int64_t total = 0;
  for (int j = 0; j < n; ++j) {
    // Row blocks of xb rows holding column j: the tiles that stage Y row j.
    std::int64_t tiles_with_j = 0;
    for (int g = 0; g < blocks; ++g) {
      bool has = false;
      for (int u = g * xb; u < std::min(m, (g + 1) * xb) && !has; ++u)
        for (auto e = Rh.row_map(u); e < Rh.row_map(u + 1); ++e) has = has || Rh.entries(e) == j;
      tiles_with_j += has ? 1 : 0;
    }
    EXPECT_EQ(Y.loads(j), tiles_with_j) << "Y row " << j;
    total += Y.loads(j);
  }
  EXPECT_EQ(total, distinct);
  EXPECT_EQ(total, std::int64_t(R.nnz()) - S.stats.redundancy);
  EXPECT_LT(total, std::int64_t(R.nnz()));
}

// 9, 10: a half-step solves (Y_u^T Y_u + lambda w_u I) x = Y_u^T r_u exactly
// (gradient of the half-step objective ~ 0); users without ratings get 0.
TYPED_TEST(Als, HalfStepSolvesNormalEquationsAndZeroesEmptyRows) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 140, n = 131;  // f up to 130 needs min(m, n) >= 130
  const auto coo = planted<T>(m, n, 4, 0.12, 0.3, 8, 5, 7);
  for (auto weighting : {als::LambdaWeighting::nnz, als::LambdaWeighting::plain})
    for (bool tiled : {false, true})
      for (int f : {7, 20, 130}) {  // 130: normal equations too large for scratch (double)
        auto problem = als::make_problem(exec, coo, 0.0, 1);
        als::Options o;
        o.rank = f;
        o.lambda = 0.1;
        o.weighting = weighting;
        o.layout = tiled ? als::Layout::bals : als::Layout::csr;
        o.xb = tiled ? 2 : 0;
        o.yb = tiled ? 6 : 0;
        auto s = als::init(exec, problem, o);
        als::user_half_step(exec, s);
        const auto X = host(s.X);
        const auto Y = host(s.Y);
        const auto R = copy_to<Kokkos::HostSpace>(problem.train);
        for (int u = 0; u < m; ++u) {
          const auto len = R.row_map(u + 1) - R.row_map(u);
          if (len == 0) {
            for (int k = 0; k < f; ++k) EXPECT_EQ(X(u, k), T(0));
            continue;
          }
          const double w = weighting == als::LambdaWeighting::nnz ? double(len) : 1.0;
          double gn = 0, bn = 0;
          for (int i = 0; i < f; ++i) {
            double g = o.lambda * w * double(X(u, i)), b = 0;
            for (auto e = R.row_map(u); e < R.row_map(u + 1); ++e) {
              double p = 0;
              for (int k = 0; k < f; ++k) p += double(Y(R.entries(e), k)) * double(X(u, k));
              g += double(Y(R.entries(e), i)) * p;
              b += double(R.values(e)) * double(Y(R.entries(e), i));
            }
            g -= b;
            gn += g * g;
            bn += b * b;
          }
          EXPECT_LT(std::sqrt(gn / bn), sizeof(T) == 4 ? 1e-3 : 1e-10) << "user " << u;
        }
        for (int k = 0; k < f; ++k) EXPECT_EQ(X(5, k), T(0));
        als::item_half_step(exec, s);
        const auto Y2 = host(s.Y);
        for (int k = 0; k < f; ++k) EXPECT_EQ(Y2(7, k), T(0));
        for (std::size_t i = 0; i < Y2.extent(0); ++i)
          for (int k = 0; k < f; ++k) ASSERT_TRUE(std::isfinite(double(Y2(i, k))));
      }
}

// 11: the objective never increases after a half-step.
TYPED_TEST(Als, LossNeverIncreases) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = planted<T>(60, 45, 5, 0.25, 1.0, 12, 0, 0);
  for (auto weighting : {als::LambdaWeighting::nnz, als::LambdaWeighting::plain}) {
    auto problem = als::make_problem(exec, coo, 0.0, 1);
    als::Options o;
    o.rank = 8;
    o.lambda = 0.05;
    o.weighting = weighting;
    o.xb = 2;
    o.yb = 8;
    auto s = als::init(exec, problem, o);
    double prev = als::loss(exec, problem, s);
    for (int half = 0; half < 16; ++half) {
      if (half % 2 == 0)
        als::user_half_step(exec, s);
      else
        als::item_half_step(exec, s);
      const double cur = als::loss(exec, problem, s);
      EXPECT_LE(cur, prev * (1 + (sizeof(T) == 4 ? 1e-5 : 1e-12))) << "half-step " << half;
      prev = cur;
    }
  }
}

template <class T, class Mem>
std::vector<T> flat(const DenseMatrix<T, Mem>& X) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  return std::vector<T>(h.data(), h.data() + h.size());
}

// 14: bitwise identical for any batch size (multiples of xb), and the same
// bits from the CSR path and any tile.
TYPED_TEST(Als, BatchSizeAndTileChangeNothingBitwise) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = planted<T>(70, 53, 4, 0.2, 0.5, 21, 3, 9);
  auto problem = als::make_problem(exec, coo, 0.1, 4);
  std::vector<T> X0, Y0;
  int run = 0;
  for (auto [tiled, xb, yb, batch] : std::vector<std::tuple<bool, int, int, int>>{{true, 4, 8, 0},
                                                                                  {true, 4, 8, 4},
                                                                                  {true, 4, 8, 12},
                                                                                  {true, 4, 8, 28},
                                                                                  {false, 0, 0, 0},
                                                                                  {false, 0, 0, 1},
                                                                                  {false, 0, 0, 13},
                                                                                  {true, 1, 64, 3},
                                                                                  {true, 8, 5, 16}}) {
    als::Options o;
    o.rank = 11;
    o.stop.max_iterations = 3;
    o.layout = tiled ? als::Layout::bals : als::Layout::csr;
    o.xb = xb;
    o.yb = yb;
    o.batch_rows = batch;
    auto r = als::solve(exec, problem, o);
    if (run++ == 0) {
      X0 = flat(r.state.X);
      Y0 = flat(r.state.Y);
    } else {
      EXPECT_EQ(flat(r.state.X), X0) << "tiled " << tiled << " tile " << xb << "x" << yb << " batch " << batch;
      EXPECT_EQ(flat(r.state.Y), Y0) << "tiled " << tiled << " tile " << xb << "x" << yb << " batch " << batch;
    }
  }
}

// Rows with at least Tuning::split_from ratings are cut into segments, each
// summed by its own team, the segments' sums added in order:
// the half-step still solves its normal equations, matches the tiled path
// (never split) to rounding, and is the same bits for any batch, including
// batches that end inside the long rows.
TYPED_TEST(Als, LongRowsCutIntoSegmentsStillSolveExactly) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const int m = 40, n = 5000;  // f = 37 needs min(m, n) >= 37
  const auto sparse = planted<T>(m, n, 3, 0.05, 0.3, 41);
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  for (std::size_t e = 0; e < sparse.values.size(); ++e)
    if (sparse.rows[e] >= 3) {
      coo.rows.push_back(sparse.rows[e]);
      coo.cols.push_back(sparse.cols[e]);
      coo.values.push_back(sparse.values[e]);
    }
  for (int u = 0; u < 3; ++u)  // three long rows (5000, 3500, 2000 ratings): 3, 2 and 1 segments of <= 2048
    for (int j = 0; j < n - 1500 * u; ++j) {
      coo.rows.push_back(u);
      coo.cols.push_back(j);
      coo.values.push_back(T(1 + (u * 7 + j * 13) % 5));
    }
  auto problem = als::make_problem(exec, coo, 0.0, 1);
  std::vector<std::vector<T>> xs;
  for (auto [tiled, batch] : std::vector<std::pair<bool, int>>{{false, 0}, {false, 2}, {false, 1}, {true, 0}}) {
    als::Options o;
    o.rank = 37;
    o.lambda = 0.1;
    o.layout = tiled ? als::Layout::bals : als::Layout::csr;
    o.xb = tiled ? 1 : 0;
    o.yb = tiled ? 64 : 0;
    o.batch_rows = batch;
    auto s = als::init(exec, problem, o);
    als::user_half_step(exec, s);
    const auto X = host(s.X);
    const auto Y = host(s.Y);
    const auto R = copy_to<Kokkos::HostSpace>(problem.train);
    for (int u = 0; u < 3; ++u) {
      const double w = double(R.row_map(u + 1) - R.row_map(u));
      double gn = 0, bn = 0;
      for (int i = 0; i < o.rank; ++i) {
        double g = o.lambda * w * double(X(u, i)), b = 0;
        for (auto e = R.row_map(u); e < R.row_map(u + 1); ++e) {
          double p = 0;
          for (int k = 0; k < o.rank; ++k) p += double(Y(R.entries(e), k)) * double(X(u, k));
          g += double(Y(R.entries(e), i)) * p;
          b += double(R.values(e)) * double(Y(R.entries(e), i));
        }
        gn += (g - b) * (g - b);
        bn += b * b;
      }
      EXPECT_LT(std::sqrt(gn / bn), sizeof(T) == 4 ? 1e-3 : 1e-10) << "user " << u << " tiled " << tiled;
    }
    xs.push_back(flat(s.X));
  }
  EXPECT_EQ(xs[0], xs[1]);  // batch size: same bits
  EXPECT_EQ(xs[0], xs[2]);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < xs[0].size(); ++i) {
    num += (double(xs[0][i]) - double(xs[3][i])) * (double(xs[0][i]) - double(xs[3][i]));
    den += double(xs[3][i]) * double(xs[3][i]);
  }
  EXPECT_LT(std::sqrt(num / den), sizeof(T) == 4 ? 1e-3 : 1e-10);
}

// 13: reordered and plain runs agree up to rounding in the original ids.
TYPED_TEST(Als, ReorderedEqualsPlainInOriginalIds) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = planted<T>(66, 48, 4, 0.25, 0.5, 31, 2, 11);
  auto problem = als::make_problem(exec, coo, 0.1, 4);
  std::vector<std::vector<T>> xs, ys;
  for (auto [tiled, reorder] : std::vector<std::pair<bool, bool>>{{false, false}, {false, true}, {true, true}}) {
    als::Options o;
    o.rank = 6;
    o.stop.max_iterations = 3;
    o.lambda = 0.1;
    o.layout = tiled ? als::Layout::bals : als::Layout::csr;
    o.reorder = reorder;
    o.xb = tiled ? 4 : 0;
    o.yb = tiled ? 8 : 0;
    auto r = als::solve(exec, problem, o);
    xs.push_back(flat(r.state.X));
    ys.push_back(flat(r.state.Y));
    EXPECT_EQ(r.report.info.at("reorder"), reorder ? "yes" : "no");
  }
  const double tol = sizeof(T) == 4 ? 2e-3 : 1e-9;
  for (int v = 1; v < 3; ++v) {
    double dx = 0, nx = 0;
    for (std::size_t i = 0; i < xs[0].size(); ++i) {
      dx = std::max(dx, std::abs(double(xs[v][i]) - double(xs[0][i])));
      nx = std::max(nx, std::abs(double(xs[0][i])));
    }
    EXPECT_LT(dx, tol * nx) << "variant " << v;
    double dy = 0, ny = 0;
    for (std::size_t i = 0; i < ys[0].size(); ++i) {
      dy = std::max(dy, std::abs(double(ys[v][i]) - double(ys[0][i])));
      ny = std::max(ny, std::abs(double(ys[0][i])));
    }
    EXPECT_LT(dy, tol * ny) << "variant " << v;
  }
}

// Planted low-rank ratings are recovered (held-out RMSE near zero), with the
// autotuned tile; report fields are filled.
TYPED_TEST(Als, RecoversPlantedLowRankRatings) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = planted<T>(150, 120, 3, 0.3, 0.0, 41);
  auto problem = als::make_problem(exec, coo, 0.1, 42);
  als::Options o;
  o.rank = 3;
  o.stop.max_iterations = 25;
  o.lambda = 1e-4;
  o.reorder = true;
  o.layout = als::Layout::bals;
  auto r = als::solve(exec, problem, o);
  EXPECT_EQ(r.report.metrics.items.front().first, "test_rmse");
  EXPECT_LT(r.report.metrics.get("test_rmse"), 0.02);
  EXPECT_LT(r.report.metrics.get("train_rmse"), 0.02);
  EXPECT_EQ(r.report.iterations, 25);
  EXPECT_EQ(r.report.history.size(), 25u);
  EXPECT_EQ(r.report.info.at("layout_user"), "bals");
  EXPECT_EQ(r.report.info.at("layout_item"), "bals");
  EXPECT_TRUE(r.report.info.count("users_tile"));
  EXPECT_TRUE(r.report.info.count("items_vacant_segments_pct"));
  EXPECT_TRUE(r.report.info.count("autotune_users"));
  EXPECT_GT(r.report.timings.get("preprocess"), 0.0);
}

TYPED_TEST(Als, GivenTestSetIsScored) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto all = planted<T>(50, 40, 2, 0.4, 0.0, 51);
  auto [train, test] = split_train_test(all, 0.2, 9);
  auto problem = als::make_problem(exec, train, 0.0, 0, &test);
  als::Options o;
  o.rank = 2;
  o.stop.max_iterations = 15;
  o.lambda = 1e-4;
  o.xb = 2;
  o.yb = 16;
  auto r = als::solve(exec, problem, o);
  EXPECT_EQ(r.report.metrics.items.front().first, "given_test_rmse");
  // Every given entry, cold ones included (their factor row is zero), in double on the host.
  const auto X = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.state.X);
  const auto Y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.state.Y);
  const auto G = copy_to<Kokkos::HostSpace>(problem.given_test);
  double sq = 0.0;
  for (ordinal_t i = 0; i < G.num_rows(); ++i)
    for (auto e = G.row_map(i); e < G.row_map(i + 1); ++e) {
      double p = 0.0;
      for (int k = 0; k < o.rank; ++k) p += double(X(i, k)) * double(Y(G.entries(e), k));
      sq += (double(G.values(e)) - p) * (double(G.values(e)) - p);
    }
  const double rmse_all = std::sqrt(sq / double(G.nnz()));
  EXPECT_NEAR(r.report.metrics.get("given_test_rmse_all"), rmse_all,
              (std::is_same_v<T, float> ? 1e-5 : 1e-12) * rmse_all);
  EXPECT_LT(r.report.metrics.get("given_test_rmse"), 0.5);
  EXPECT_FALSE(r.report.metrics.has("test_rmse"));
}

// The solver contract of core/contract.hpp, on the host space, float and double.
using HostExec = Kokkos::DefaultHostExecutionSpace;
static_assert(kfactor::Solver<HostExec, als::Problem<float, HostExec::memory_space>, als::Options,
                              als::State<float, HostExec::memory_space>>);
static_assert(kfactor::Solver<HostExec, als::Problem<double, HostExec::memory_space>, als::Options,
                              als::State<double, HostExec::memory_space>>);

/// Expects validate() to throw UsageError naming `name` for each of `bad`,
/// and to pass for each of `good`, with the option set by `set`.
template <class V, class Set>
void expect_range(const char* name, Set&& set, const std::vector<V>& bad, const std::vector<V>& good) {
  for (const V v : bad) {
    als::Options o;
    set(o, v);
    try {
      o.validate();
      ADD_FAILURE() << name << " = " << v << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  for (const V v : good) {
    als::Options o;
    set(o, v);
    EXPECT_NO_THROW(o.validate()) << name << " = " << v;
  }
}

// Every numeric option has a declared range: 0, -1, NaN, Inf and absurdly
// large values are refused where they make no sense, naming the option.
TEST(AlsOptions, EveryNumericOptionHasARange) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  EXPECT_NO_THROW(als::Options{}.validate());
  expect_range<int>("rank", [](als::Options& o, int v) { o.rank = v; }, {0, -1, 1025, std::numeric_limits<int>::max()},
                    {1, 1024});
  expect_range<double>("lambda", [](als::Options& o, double v) { o.lambda = v; }, {0.0, -1.0, nan, inf, 1e7, 1e300},
                       {1e-12, 0.1, 1e6});
  expect_range<int>("xb", [](als::Options& o, int v) { o.xb = v, o.yb = 8; }, {-1, 65, 1 << 30}, {1, 64});
  expect_range<int>("yb", [](als::Options& o, int v) { o.xb = 2, o.yb = v; }, {-1, 65537, 1 << 30}, {1, 65536});
  expect_range<int>("xb and yb", [](als::Options& o, int v) { o.xb = v; }, {4}, {0});
  expect_range<int>("not with layout csr", [](als::Options& o, int v) { o.xb = o.yb = v, o.layout = als::Layout::csr; },
                    {4}, {0});
  expect_range<std::int64_t>("batch_rows", [](als::Options& o, std::int64_t v) { o.batch_rows = v; },
                             {-1, std::int64_t(1) << 31, std::numeric_limits<std::int64_t>::max()}, {0, 1, 1 << 20});
  expect_range<std::size_t>("max_batch_bytes", [](als::Options& o, std::size_t v) { o.max_batch_bytes = v; },
                            {std::size_t(-1), (std::size_t(1) << 40) + 1}, {0, 1, std::size_t(1) << 30});
  expect_range<std::int64_t>("autotune_sample_nnz", [](als::Options& o, std::int64_t v) { o.autotune_sample_nnz = v; },
                             {-1, std::int64_t(1) << 31}, {0, 1000});
  expect_range<int>("max_iterations", [](als::Options& o, int v) { o.stop.max_iterations = v; }, {-1}, {0, 1, 1000000});
  expect_range<double>("tolerance", [](als::Options& o, double v) { o.stop.tolerance = v; }, {-1.0, nan, inf},
                       {0.0, 1e-6});
  expect_range<double>("target", [](als::Options& o, double v) { o.stop.target = v; }, {inf, -inf}, {nan, 0.0, 0.8});
  EXPECT_THROW(als::parse_weighting("both"), UsageError);
  EXPECT_EQ(als::parse_weighting("plain"), als::LambdaWeighting::plain);
  EXPECT_THROW(als::parse_layout("tiled"), UsageError);
  for (auto l : {als::Layout::automatic, als::Layout::bals, als::Layout::csr})
    EXPECT_EQ(als::parse_layout(als::to_string(l)), l);
}

// option_values lists what decides the iterates, and not the stop rule, the
// tile or the batch size (which change no bit).
TEST(AlsOptions, OptionValuesListWhatDecidesTheIterates) {
  als::Options o;
  o.layout = als::Layout::csr;
  const auto v = option_values(o);
  EXPECT_EQ(v.at("layout"), "csr");
  EXPECT_EQ(v.at("weighting"), "nnz");
  EXPECT_EQ(v.at("rank"), "10");
  EXPECT_EQ(v.count("seed"), 1u);
  EXPECT_EQ(v.count("max_iterations"), 0u);
  EXPECT_EQ(v.count("batch_rows"), 0u);
  als::Options other = o;
  other.stop.max_iterations = 50;
  other.batch_rows = 7;
  EXPECT_EQ(option_values(other), v);
  other.lambda = 0.2;
  EXPECT_NE(option_values(other), v);
}

// layout auto times CSR against the tiles on a sample, per half-step, and
// says what each half-step got; the run equals the one with that layout
// given explicitly.
TEST(AlsLayout, AutomaticRecordsItsChoicePerHalfStep) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto coo = planted<double>(120, 90, 3, 0.3, 0.1, 61);
  auto problem = als::make_problem(exec, coo, 0.1, 3);
  als::Options o;
  o.rank = 6;
  o.stop.max_iterations = 3;
  const auto a = als::solve(exec, problem, o);
  for (const char* side : {"user", "item"}) {
    const std::string got = a.report.info.at(std::string("layout_") + side);
    EXPECT_TRUE(got == "csr" || got == "bals") << got;
    EXPECT_NE(a.report.info.at(std::string("autotune_") + side + "s").find("csr:"), std::string::npos);
  }
  EXPECT_EQ(a.report.info.at("layout"), "auto");
  o.layout = als::Layout::csr;
  const auto c = als::solve(exec, problem, o);
  EXPECT_EQ(c.report.info.at("layout_user"), "csr");
  EXPECT_EQ(c.report.info.count("autotune_users"), 0u);
  // Rows here are short (no segments): every structure gives the same bits.
  EXPECT_EQ(flat(a.state.X), flat(c.state.X));
  EXPECT_EQ(flat(a.state.Y), flat(c.state.Y));
}

TEST(AlsInput, RefusesEmptyAllZeroAndTooHighRank) {
  const Kokkos::DefaultHostExecutionSpace exec;
  CooMatrix<double> coo;
  coo.num_rows = 3;
  coo.num_cols = 4;
  EXPECT_THROW(als::make_problem(exec, coo, 0.0, 1), InputError);  // no ratings
  coo.rows = {0, 1, 2};
  coo.cols = {1, 0, 3};
  coo.values = {0, 0, 0};
  EXPECT_THROW(als::make_problem(exec, coo, 0.0, 1), InputError);  // nothing to fit
  coo.values = {1, 0, 2};
  const auto problem = als::make_problem(exec, coo, 0.0, 1);
  EXPECT_THROW(als::make_problem(exec, coo, 1.0, 1), UsageError);
  EXPECT_THROW(als::make_problem(exec, coo, std::nan(""), 1), UsageError);
  als::Options o;
  o.rank = 4;  // > min(3, 4)
  EXPECT_THROW(als::init(exec, problem, o), UsageError);
  o.rank = 3;
  EXPECT_NO_THROW(als::init(exec, problem, o));
}

// launch_schedule: blocks of xb rows by descending rating count (ties in
// block order), and the number of leading blocks with at least long_from.
TEST(AlsSchedule, LongestBlocksFirstAndLongCount) {
  const Kokkos::DefaultHostExecutionSpace exec;
  Kokkos::View<int*, Kokkos::HostSpace> count("count", 7);
  const int c[7] = {1, 5, 0, 5, 9, 2, 3};
  for (int r = 0; r < 7; ++r) count(r) = c[r];
  const auto one = als::detail::launch_schedule(exec, count, 1, 5);
  const std::vector<ordinal_t> want1{4, 1, 3, 6, 5, 0, 2};
  ASSERT_EQ(one.order.extent(0), want1.size());
  for (std::size_t k = 0; k < want1.size(); ++k) EXPECT_EQ(one.order(k), want1[k]) << "position " << k;
  EXPECT_EQ(one.long_blocks, 3);
  // Segments of at most 5 ratings: loads 9, 5, 5 -> 2, 1, 1.
  EXPECT_EQ(one.segment_ptr, (std::vector<std::int64_t>{0, 2, 3, 4}));
  // Blocks of two rows: loads 6, 5, 11, 3 (the last block is one row).
  const auto two = als::detail::launch_schedule(exec, count, 2, 100);
  const std::vector<ordinal_t> want2{2, 0, 1, 3};
  ASSERT_EQ(two.order.extent(0), want2.size());
  for (std::size_t k = 0; k < want2.size(); ++k) EXPECT_EQ(two.order(k), want2[k]) << "position " << k;
  EXPECT_EQ(two.long_blocks, 0);
  EXPECT_EQ(two.segment_ptr, (std::vector<std::int64_t>{0}));
}

TEST(AlsInput, RejectsDuplicateRatings) {
  CooMatrix<double> coo;
  coo.num_rows = 3;
  coo.num_cols = 4;
  coo.rows = {0, 2, 1, 2};
  coo.cols = {1, 3, 0, 3};
  coo.values = {1, 2, 3, 4};
  try {
    als::make_problem(Kokkos::DefaultHostExecutionSpace{}, coo, 0.0, 1);
    ADD_FAILURE() << "duplicate (2, 3) accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3)"), std::string::npos) << e.what();
  }
}

TEST(AlsInput, RejectsNonFiniteRatings) {
  CooMatrix<double> coo;
  coo.num_rows = 2;
  coo.num_cols = 2;
  coo.rows = {0, 1};
  coo.cols = {1, 0};
  coo.values = {1.0, std::nan("")};
  EXPECT_THROW(als::make_problem(Kokkos::DefaultExecutionSpace{}, coo, 0.0, 1), InputError);
}

// MovieLens latest-small through kfactor::io (ids remapped in ascending
// order): f = 10, 10 iterations, lambda = 0.1 (nnz weighting, the default),
// the default split (10% held out, seed 42, split_train_test): test RMSE
// <= 0.90 (measured 0.8574; 0.8756 with first-appearance ids; lambda 0.05: 0.922,
// 0.15: 0.869). test_rmse drops the ~4% cold held-out entries (movies rated
// once); with them, predicted as 0, the RMSE is 1.11.
TEST(AlsMovieLens, LatestSmallTestRmseAtF10) {
  const auto path = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "MovieLens latest-small not found";
  const auto coo = io::read_ratings<float>(path).matrix;
  ASSERT_EQ(coo.num_rows, 610);
  ASSERT_EQ(coo.num_cols, 9724);
  ASSERT_EQ(coo.nnz(), 100836u);
  const Kokkos::DefaultExecutionSpace exec;
  auto problem = als::make_problem(exec, coo, 0.1, 42);
  als::Options o;
  o.rank = 10;
  o.stop.max_iterations = 10;
  o.lambda = 0.1;
  auto r = als::solve(exec, problem, o);
  std::printf("preprocess %.3f s, autotune %.3f s, iterations %.3f s, tiles %s / %s\n",
              r.report.timings.get("preprocess"), r.report.timings.get("autotune"), r.report.timings.get("iterations"),
              r.report.info["users_tile"].c_str(), r.report.info["items_tile"].c_str());
  const double rmse = r.report.metrics.get("test_rmse");
  std::printf(
      "MovieLens latest-small f=10 10 iterations: test RMSE %.4f (train %.4f, all test entries %.4f, cold %.4f)\n",
      rmse, r.report.metrics.get("train_rmse"), r.report.metrics.get("test_rmse_all"),
      r.report.metrics.get("test_cold_fraction"));
  EXPECT_LE(rmse, 0.90);
  EXPECT_GT(rmse, 0.5);
}

}  // namespace

namespace {
// 16: GFLOP/s counts S1 = nnz f (f + 1) and S2 = 2 nnz f per half-step, two half-steps.
TEST(AlsFlops, PerIterationDefinition) {
  EXPECT_DOUBLE_EQ(kfactor::als::flops_per_iteration(1000, 10), 2.0 * (1000.0 * 10 * 11 + 2.0 * 1000 * 10));
  EXPECT_DOUBLE_EQ(kfactor::als::flops_per_iteration(99000000, 100), 2.0 * (99e6 * 100 * 101 + 2 * 99e6 * 100));
}
}  // namespace
