// NMF solver tests: the ALO-NMF digest's checklist (items 1-12), planted
// recovery, input errors, float runs and exact continuation through visit().
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/nmf/nmf.hpp>

#include "common/test_spaces.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace {
using namespace kfactor;

// The solver contract of core/solver.hpp, for the host space, float and
// double, dense and CSR input.
template <class T>
using HostProblemDense = nmf::Problem<DenseMatrix<T, Kokkos::DefaultHostExecutionSpace::memory_space>>;
template <class T>
using HostProblemCsr = nmf::Problem<CsrMatrix<T, Kokkos::DefaultHostExecutionSpace::memory_space>>;
template <class T>
using HostState = nmf::State<T, Kokkos::DefaultHostExecutionSpace::memory_space>;
static_assert(Solver<Kokkos::DefaultHostExecutionSpace, HostProblemDense<float>, nmf::Options, HostState<float>>);
static_assert(Solver<Kokkos::DefaultHostExecutionSpace, HostProblemDense<double>, nmf::Options, HostState<double>>);
static_assert(Solver<Kokkos::DefaultHostExecutionSpace, HostProblemCsr<float>, nmf::Options, HostState<float>>);
static_assert(Solver<Kokkos::DefaultHostExecutionSpace, HostProblemCsr<double>, nmf::Options, HostState<double>>);

template <class T>
using HostMatrix = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>;

/// Host COO of a random non-negative sparse matrix (density `p`, values in (0, 1]).
template <class T>
CooMatrix<T> random_sparse(int m, int n, double p, std::uint64_t seed) {
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const auto key = std::uint64_t(i) * n + j;
      if (rng.uniform(2 * key) < p) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
        coo.values.push_back(T(1.0 - rng.uniform(2 * key + 1)));
      }
    }
  return coo;
}

template <class T>
HostMatrix<T> coo_to_host_dense(const CooMatrix<T>& coo) {
  HostMatrix<T> A("A", coo.num_rows, coo.num_cols);
  for (std::size_t e = 0; e < coo.nnz(); ++e) A(coo.rows[e], coo.cols[e]) = coo.values[e];
  return A;
}

/// Exact rank-K non-negative matrix W* H* with about half of the planted
/// entries zero (so the factorisation is essentially unique).
template <class T>
HostMatrix<T> planted(int m, int n, int K, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  std::vector<double> W(std::size_t(m) * K), H(std::size_t(K) * n);
  for (std::size_t e = 0; e < W.size(); ++e) W[e] = rng.uniform(e) < 0.5 ? 0.0 : rng.uniform(e + 1000000);
  for (std::size_t e = 0; e < H.size(); ++e) H[e] = rng.uniform(e + 2000000) < 0.5 ? 0.0 : rng.uniform(e + 3000000);
  HostMatrix<T> A("A", m, n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += W[std::size_t(i) * K + k] * H[std::size_t(k) * n + j];
      A(i, j) = T(s);
    }
  return A;
}

template <class Space, class T>
DenseMatrix<T, typename Space::memory_space> to_space(const HostMatrix<T>& h) {
  DenseMatrix<T, typename Space::memory_space> d("d", h.extent(0), h.extent(1));
  Kokkos::deep_copy(d, h);
  return d;
}

/// A host copy (never an alias, even when v is host memory).
template <class V>
auto host(const V& v) {
  auto h = Kokkos::create_mirror(Kokkos::HostSpace{}, v);
  Kokkos::deep_copy(h, v);
  return h;
}

/// ||X - Y||_F / ||Y||_F on the host.
template <class X, class Y>
double rel_diff(const X& x, const Y& y) {
  auto hx = host(x);
  auto hy = host(y);
  double n = 0, d = 0;
  for (std::size_t i = 0; i < hx.extent(0); ++i)
    for (std::size_t j = 0; j < hx.extent(1); ++j) {
      const double a = hx(i, j), b = hy(i, j);
      n += (a - b) * (a - b);
      d += b * b;
    }
  return std::sqrt(n / d);
}

nmf::Options options(nmf::Algorithm a, int K, int tile = 0) {
  nmf::Options o;
  o.algorithm = a;
  o.rank = K;
  o.tile = tile;
  o.seed = 5;
  return o;
}

/// One HALS epoch on the host in double: exact coordinate descent on H
/// (given W), then on W (given the new H), column by column in place
/// (scikit-learn's rule): X_k <- max(eps, (B_k - sum_{j != k} X_j G_jk) / G_kk).
void reference_epoch(const HostMatrix<double>& A, HostMatrix<double>& W, HostMatrix<double>& Ht, double eps) {
  const int V = A.extent(0), D = A.extent(1), K = W.extent(1);
  // X (n x K) from the right-hand side B (n x K) and the Gram G of the other factor.
  auto half = [&](HostMatrix<double>& X, const std::vector<double>& B, const std::vector<double>& G) {
    for (int k = 0; k < K; ++k)
      for (std::size_t r = 0; r < X.extent(0); ++r) {
        double s = B[r * K + k];
        for (int j = 0; j < K; ++j)
          if (j != k) s -= X(r, j) * G[std::size_t(j) * K + k];
        X(r, k) = std::max(eps, s / G[std::size_t(k) * K + k]);
      }
  };
  auto gram = [&](const HostMatrix<double>& X) {
    std::vector<double> G(std::size_t(K) * K);
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b) {
        double s = 0;
        for (std::size_t v = 0; v < X.extent(0); ++v) s += X(v, a) * X(v, b);
        G[std::size_t(a) * K + b] = s;
      }
    return G;
  };
  std::vector<double> R(std::size_t(D) * K), P(std::size_t(V) * K);
  for (int d = 0; d < D; ++d)
    for (int k = 0; k < K; ++k) {
      double s = 0;
      for (int v = 0; v < V; ++v) s += A(v, d) * W(v, k);
      R[std::size_t(d) * K + k] = s;
    }
  half(Ht, R, gram(W));  // H first
  for (int v = 0; v < V; ++v)
    for (int k = 0; k < K; ++k) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += A(v, d) * Ht(d, k);
      P[std::size_t(v) * K + k] = s;
    }
  half(W, P, gram(Ht));
}

template <class S>
class NmfTest : public ::testing::Test {};
TYPED_TEST_SUITE(NmfTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

template <class P>
class NmfScalarTest : public ::testing::Test {};
TYPED_TEST_SUITE(NmfScalarTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// One hals epoch equals exact coordinate descent run on the host in double:
// H first, then W, both without normalisation; sparse and dense input (on a
// host the dense H half takes its product from gemm_skinny, the others are
// computed in the sweep's launch).
TYPED_TEST(NmfTest, HalsEpochMatchesHostCoordinateDescent) {
  using Space = TypeParam;
  const Space exec;
  const auto coo = random_sparse<double>(40, 30, 0.3, 1);
  const auto hA = coo_to_host_dense(coo);
  const auto o = options(nmf::Algorithm::hals, 6);
  auto run = [&](const auto& A) {
    auto s = nmf::init(exec, A, o);
    HostMatrix<double> W("W", 40, 6), Ht("Ht", 30, 6);
    Kokkos::deep_copy(W, host(s.W));
    Kokkos::deep_copy(Ht, host(s.Ht));
    for (int e = 0; e < 3; ++e) {
      nmf::step(exec, A, o, s);
      ++s.iteration;
      reference_epoch(hA, W, Ht, std::numeric_limits<double>::epsilon());
      EXPECT_LT(rel_diff(s.W, W), 1e-12) << "epoch " << e;
      EXPECT_LT(rel_diff(s.Ht, Ht), 1e-12) << "epoch " << e;
    }
  };
  run(nmf::make_problem(exec, to_csr(exec, coo)));
  run(nmf::make_problem(exec, to_space<Space>(hA)));
}

// Checklist 1: one alo epoch equals one hals epoch for T in {1, K, a divisor,
// a non-divisor}, dense and sparse.
TYPED_TEST(NmfTest, AloEpochEqualsHalsEpoch) {
  using Space = TypeParam;
  const Space exec;
  const int K = 12;
  const auto coo = random_sparse<double>(70, 50, 0.25, 2);
  const auto Acsr = nmf::make_problem(exec, to_csr(exec, coo));
  const auto Adense = nmf::make_problem(exec, to_space<Space>(coo_to_host_dense(coo)));
  auto run = [&](const auto& A) {
    auto ref = nmf::init(exec, A, options(nmf::Algorithm::hals, K));
    nmf::step(exec, A, options(nmf::Algorithm::hals, K), ref);
    for (int T : {0, 1, K, 4, 5}) {
      const auto o = options(nmf::Algorithm::alo, K, T);
      auto s = nmf::init(exec, A, o);
      nmf::step(exec, A, o, s);
      EXPECT_LT(rel_diff(s.W, ref.W), 1e-11) << "T=" << T;
      EXPECT_LT(rel_diff(s.Ht, ref.Ht), 1e-11) << "T=" << T;
    }
  };
  run(Acsr);
  run(Adense);
}

// Checklist 2: the phase-1/3 GEMMs subtract. ALO's tile matrix N holds 1 on
// the diagonal (the base X(r, i)), 0 for the other columns of i's tile (the
// in-tile sweep applies them) and -Gs(i, j) for every column j outside it,
// for a non-symmetric scaled Gram and a clamped last tile; with +Gs the
// epoch would leave HALS (checklist 1's test).
TYPED_TEST(NmfTest, AloTileMatrixSubtractsTheColumnsOutsideTheTile) {
  using Space = TypeParam;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int K = 7;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> Gs("Gs", K, K), N("N", K, K);
  fill_uniform(exec, Gs, 31, RngStream::user, 0.5, 2.0);
  const auto hG = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Gs);
  for (int tile : {1, 3, K}) {
    nmf::detail::alo_tile_matrix(exec, Gs, tile, N);
    const auto hN = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, N);
    for (int j = 0; j < K; ++j)
      for (int i = 0; i < K; ++i) {
        const double want = j == i ? 1.0 : j / tile == i / tile ? 0.0 : -hG(i, j);
        ASSERT_EQ(hN(j, i), want) << "tile " << tile << ", N(" << j << ", " << i << ")";
      }
  }
}

// Checklist 3 and 5: multi-epoch alo/hals error traces agree while no column
// collapsed; W, H >= eps after every epoch, min_column_norm is the smallest
// column norm of W.
TYPED_TEST(NmfTest, AloAndHalsTracesAgreeAndInvariantsHold) {
  using Space = TypeParam;
  const Space exec;
  const int K = 8, V = 60, D = 45;
  const auto A = nmf::make_problem(exec, to_space<Space>(planted<double>(V, D, 10, 3)));
  auto oh = options(nmf::Algorithm::hals, K), oa = options(nmf::Algorithm::alo, K, 3);
  auto sh = nmf::init(exec, A, oh), sa = nmf::init(exec, A, oa);
  const double eps = std::numeric_limits<double>::epsilon();
  const double collapse = 1e3 * eps * std::sqrt(double(V));
  int collapsed_at = -1;
  for (int e = 0; e < 40; ++e) {
    nmf::step(exec, A, oh, sh);
    ++sh.iteration;
    nmf::step(exec, A, oa, sa);
    ++sa.iteration;
    const auto mh = nmf::evaluate(exec, A, oh, sh), ma = nmf::evaluate(exec, A, oa, sa);
    if (std::min(mh.get("min_column_norm"), ma.get("min_column_norm")) < collapse) {
      collapsed_at = e;
      break;
    }
    EXPECT_NEAR(ma.get("relative_error"), mh.get("relative_error"), 1e-8) << "epoch " << e;
    auto W = host(sa.W);
    auto Ht = host(sa.Ht);
    double smallest = std::numeric_limits<double>::infinity();
    for (int k = 0; k < K; ++k) {
      double n = 0;
      for (int v = 0; v < V; ++v) {
        EXPECT_GE(W(v, k), eps);
        n += W(v, k) * W(v, k);
      }
      smallest = std::min(smallest, std::sqrt(n));
      for (int d = 0; d < D; ++d) EXPECT_GE(Ht(d, k), eps);
    }
    EXPECT_NEAR(ma.get("min_column_norm"), smallest, 1e-12 * smallest) << "epoch " << e;
  }
  if (collapsed_at >= 0)
    std::printf("note: a W column collapsed at epoch %d (traces compared before it)\n", collapsed_at);
  EXPECT_NE(collapsed_at, 0);
}

// Checklist 6: the error does not increase over 300 fp64 epochs (exact
// coordinate descent and MU both descend). And the rule does not depend on
// how W H is split: with W0's columns scaled by 4 and H0's rows by 1/4 (the
// same model; the digest's FAST-HALS overshot from it), every epoch gives the
// same W H, W's columns still 4 times the unscaled run's.
TYPED_TEST(NmfTest, ErrorNonIncreasingAndIndependentOfTheStartsScale) {
  using Space = TypeParam;
  const Space exec;
  const auto coo = random_sparse<double>(50, 40, 0.3, 4);
  const auto A = nmf::make_problem(exec, to_csr(exec, coo));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    auto o = options(alg, 6, 4);
    o.stop.max_iterations = 300;
    auto r = nmf::solve(exec, A, o);
    ASSERT_EQ(r.report.history.size(), 300u);
    for (std::size_t i = 1; i < r.report.history.size(); ++i)
      ASSERT_LE(r.report.history.rows[i][0], r.report.history.rows[i - 1][0] * (1 + 1e-12))
          << nmf::to_string(alg) << " epoch " << i;
  }
  const int K = 5;
  const auto P = nmf::make_problem(exec, to_space<Space>(planted<double>(40, 30, K, 9)));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo}) {
    const auto o = options(alg, K, 2);
    auto s0 = nmf::init(exec, P, o);
    auto W0 = host(s0.W);
    auto Ht0 = host(s0.Ht);
    for (std::size_t i = 0; i < W0.extent(0); ++i)
      for (int k = 0; k < K; ++k) W0(i, k) *= 4.0;
    for (std::size_t i = 0; i < Ht0.extent(0); ++i)
      for (int k = 0; k < K; ++k) Ht0(i, k) /= 4.0;
    auto s = nmf::init_with(exec, P, o, to_space<Space>(W0), to_space<Space>(Ht0));
    for (int e = 0; e < 5; ++e) {
      nmf::step(exec, P, o, s0);
      ++s0.iteration;
      nmf::step(exec, P, o, s);
      ++s.iteration;
      auto W = host(s0.W);
      for (std::size_t i = 0; i < W.extent(0); ++i)
        for (int k = 0; k < K; ++k) W(i, k) *= 4.0;
      EXPECT_LT(rel_diff(s.W, W), 1e-12) << nmf::to_string(alg) << " epoch " << e;
      EXPECT_NEAR(nmf::evaluate(exec, P, o, s).get("relative_error"),
                  nmf::evaluate(exec, P, o, s0).get("relative_error"), 1e-12)
          << nmf::to_string(alg) << " epoch " << e;
    }
  }
}

// Checklist 7: the cheap error equals the explicit one (core/metrics.hpp), dense and CSR.
TYPED_TEST(NmfTest, CheapErrorEqualsExplicitError) {
  using Space = TypeParam;
  const Space exec;
  const auto coo = random_sparse<double>(45, 38, 0.3, 5);
  const auto Acsr = nmf::make_problem(exec, to_csr(exec, coo));
  const auto Adense = nmf::make_problem(exec, to_space<Space>(coo_to_host_dense(coo)));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    auto o = options(alg, 7, 3);
    auto s = nmf::init(exec, Acsr, o);
    auto sd = nmf::init(exec, Adense, o);
    for (int e = 0; e < 5; ++e) {
      nmf::step(exec, Acsr, o, s);
      ++s.iteration;
      nmf::step(exec, Adense, o, sd);
      ++sd.iteration;
      const double cheap = nmf::evaluate(exec, Acsr, o, s).get("relative_error");
      EXPECT_NEAR(cheap, relative_error(exec, Adense.A, s.W, s.Ht), 1e-10);
      EXPECT_NEAR(cheap, relative_error(exec, Acsr.A, s.W, s.Ht), 1e-10);
      EXPECT_NEAR(nmf::evaluate(exec, Adense, o, sd).get("relative_error"), relative_error(exec, Adense.A, sd.W, sd.Ht),
                  1e-10);
    }
  }
}

// Checklist 8: A -> cA leaves W and the error unchanged and scales H by c.
TYPED_TEST(NmfTest, ScalingInvariance) {
  using Space = TypeParam;
  const Space exec;
  auto hA = planted<double>(40, 35, 6, 6);
  HostMatrix<double> hB("B", 40, 35);
  const double c = 4.0;
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 35; ++j) hB(i, j) = c * hA(i, j);
  const auto A = nmf::make_problem(exec, to_space<Space>(hA)), B = nmf::make_problem(exec, to_space<Space>(hB));
  auto o = options(nmf::Algorithm::alo, 5, 2);
  o.stop.max_iterations = 10;
  auto ra = nmf::solve(exec, A, o), rb = nmf::solve(exec, B, o);
  EXPECT_LT(rel_diff(rb.state.W, ra.state.W), 1e-10);
  auto Ha = host(ra.state.Ht);
  for (std::size_t i = 0; i < Ha.extent(0); ++i)
    for (std::size_t j = 0; j < Ha.extent(1); ++j) Ha(i, j) *= c;
  EXPECT_LT(rel_diff(rb.state.Ht, Ha), 1e-10);
  EXPECT_NEAR(rb.report.metrics.get("relative_error"), ra.report.metrics.get("relative_error"), 1e-10);
}

// Checklist 9: permuting rows (columns) of A permutes the rows of W (of Ht).
TYPED_TEST(NmfTest, PermutationEquivariance) {
  using Space = TypeParam;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int V = 36, D = 30, K = 5;
  auto hA = planted<double>(V, D, 6, 7);
  std::vector<int> pr(V), pc(D);
  std::iota(pr.begin(), pr.end(), 0);
  std::iota(pc.begin(), pc.end(), 0);
  for (int i = 0; i < V; ++i) std::swap(pr[i], pr[(i * 7 + 3) % V]);
  for (int j = 0; j < D; ++j) std::swap(pc[j], pc[(j * 11 + 5) % D]);
  HostMatrix<double> hB("B", V, D);
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < D; ++j) hB(i, j) = hA(pr[i], pc[j]);
  const auto A = nmf::make_problem(exec, to_space<Space>(hA)), B = nmf::make_problem(exec, to_space<Space>(hB));
  auto o = options(nmf::Algorithm::alo, K, 2);
  auto sa = nmf::init(exec, A, o);
  auto W0 = host(sa.W);
  auto H0 = host(sa.Ht);
  HostMatrix<double> pW("pW", V, K), pH("pH", D, K);
  for (int i = 0; i < V; ++i)
    for (int k = 0; k < K; ++k) pW(i, k) = W0(pr[i], k);
  for (int j = 0; j < D; ++j)
    for (int k = 0; k < K; ++k) pH(j, k) = H0(pc[j], k);
  auto sb = nmf::init_with(exec, B, o, to_space<Space>(pW), to_space<Space>(pH));
  for (int e = 0; e < 8; ++e) {
    nmf::step(exec, A, o, sa);
    ++sa.iteration;
    nmf::step(exec, B, o, sb);
    ++sb.iteration;
  }
  auto Wa = host(sa.W);
  auto Ha = host(sa.Ht);
  for (int i = 0; i < V; ++i)
    for (int k = 0; k < K; ++k) pW(i, k) = Wa(pr[i], k);
  for (int j = 0; j < D; ++j)
    for (int k = 0; k < K; ++k) pH(j, k) = Ha(pc[j], k);
  EXPECT_LT(rel_diff(sb.W, pW), 1e-10);
  EXPECT_LT(rel_diff(sb.Ht, pH), 1e-10);
  (void)Mem{};
}

// Checklist 10: dense and CSR inputs give the same iterates, also for a
// skewed CSR whose first rows and columns hold most of the entries (a host
// sweep splits a CSR's rows among its threads by their entries).
TYPED_TEST(NmfTest, DenseAndCsrGiveTheSameIterates) {
  using Space = TypeParam;
  const Space exec;
  CooMatrix<double> skewed;
  skewed.num_rows = 300;
  skewed.num_cols = 200;
  const CounterRng rng(12, RngStream::user);
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 200; ++j) {
      const auto key = std::uint64_t(i) * 200 + j;
      if (rng.uniform(2 * key) < (i < 4 || j < 3 ? 0.9 : 0.01)) {
        skewed.rows.push_back(i);
        skewed.cols.push_back(j);
        skewed.values.push_back(1.0 - rng.uniform(2 * key + 1));
      }
    }
  for (const auto& coo : {random_sparse<double>(55, 44, 0.2, 8), skewed}) {
    const auto Acsr = nmf::make_problem(exec, to_csr(exec, coo));
    const auto Adense = nmf::make_problem(exec, to_space<Space>(coo_to_host_dense(coo)));
    for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
      auto o = options(alg, 6, 4);
      o.stop.max_iterations = 3;
      auto rs = nmf::solve(exec, Acsr, o), rd = nmf::solve(exec, Adense, o);
      EXPECT_LT(rel_diff(rs.state.W, rd.state.W), 1e-12) << nmf::to_string(alg) << " " << coo.num_rows;
      EXPECT_LT(rel_diff(rs.state.Ht, rd.state.Ht), 1e-12) << nmf::to_string(alg) << " " << coo.num_rows;
    }
  }
}

// A planted exact non-negative rank-K matrix is recovered to relative error
// 1e-3 within 600 alo epochs (documented budget) for 10 seeds.
TYPED_TEST(NmfTest, PlantedLowRankRecovered) {
  using Space = TypeParam;
  const Space exec;
  const int K = 4;
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const auto A = nmf::make_problem(exec, to_space<Space>(planted<double>(50, 40, K, 100 + seed)));
    auto o = options(nmf::Algorithm::alo, K, 2);
    o.seed = seed;
    o.stop.max_iterations = 600;
    auto r = nmf::solve(exec, A, o, [](const IterationEvent& e) {
      return e.metrics->get("relative_error") < 1e-3 ? ObserverAction::stop : ObserverAction::proceed;
    });
    EXPECT_LT(r.report.metrics.get("relative_error"), 1e-3) << "seed " << seed;
    EXPECT_LT(relative_error(exec, A.A, r.state.W, r.state.Ht), 1e-3) << "seed " << seed;
  }
}

// float and double: every algorithm lowers the error, with finite factors.
TYPED_TEST(NmfScalarTest, AllAlgorithmsConverge) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto coo = random_sparse<T>(60, 50, 0.25, 10);
  const auto A = nmf::make_problem(exec, to_csr(exec, coo));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    auto o = options(alg, 8, 3);
    o.stop.max_iterations = 50;
    auto r = nmf::solve(exec, A, o);
    const double first = r.report.history.rows.front()[0], last = r.report.metrics.get("relative_error");
    EXPECT_TRUE(std::isfinite(last));
    EXPECT_LT(last, first) << nmf::to_string(alg);
    // The cheap error is exact to ~1e-3 absolute in float, ~1e-10 in double.
    EXPECT_NEAR(last, relative_error(exec, A.A, r.state.W, r.state.Ht), sizeof(T) == 4 ? 2e-3 : 1e-10);
  }
}

// Input errors are clear: bad data is an InputError from make_problem, a
// rank above min(V, D) a UsageError from init.
TYPED_TEST(NmfTest, BadInputsAreRejected) {
  using Space = TypeParam;
  const Space exec;
  auto hA = planted<double>(10, 8, 2, 11);
  auto expect_message = [&](auto&& fn, const char* needle) {
    try {
      fn();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    HostMatrix<double> c("c", 10, 8);
    Kokkos::deep_copy(c, hA);
    c(3, 4) = bad;
    const auto A = to_space<Space>(c);
    EXPECT_THROW(nmf::make_problem(exec, A), InputError) << bad;
    expect_message([&] { nmf::make_problem(exec, A); }, "1 negative, NaN or infinite");
  }
  {
    HostMatrix<double> z("z", 10, 8);
    const auto A = to_space<Space>(z);
    EXPECT_THROW(nmf::make_problem(exec, A), InputError);
    expect_message([&] { nmf::make_problem(exec, A); }, "all zero");
    EXPECT_THROW(nmf::make_problem(exec, DenseMatrix<double, typename Space::memory_space>("e", 0, 8)), InputError);
  }
  {
    const auto A = nmf::make_problem(exec, to_space<Space>(hA));
    auto big = options(nmf::Algorithm::hals, 9);
    EXPECT_THROW(nmf::init(exec, A, big), UsageError);
    expect_message([&] { nmf::init(exec, A, big); }, "exceeds min(rows, cols)");
    EXPECT_NO_THROW(nmf::init(exec, A, options(nmf::Algorithm::hals, 8)));  // K = min(V, D) fits
    auto bad = options(nmf::Algorithm::alo, 3);
    bad.rank = 0;
    EXPECT_THROW(nmf::init(exec, A, bad), UsageError);
    bad = options(nmf::Algorithm::alo, 3);
    bad.epsilon = -1;
    EXPECT_THROW(nmf::solve(exec, A, bad), UsageError);
  }
  {
    auto coo = random_sparse<double>(12, 10, 0.3, 12);
    coo.values[2] = -0.5;
    const auto A = to_csr(exec, coo);
    EXPECT_THROW(nmf::make_problem(exec, A), InputError);
    coo.values.assign(coo.values.size(), 0.0);
    EXPECT_THROW(nmf::make_problem(exec, to_csr(exec, coo)), InputError);
  }
  EXPECT_THROW(nmf::parse_algorithm("bpp"), UsageError);
}

// make_problem's one pass over the values (8 lanes, long blocks on a host)
// against a float64 reference: ||A||^2, the sum and the zeros of a dense
// input whose rows end in a partial block and a partial lane group, and of a
// CSR input with a partial last block; a bad value in the last column (a
// tail lane) is counted like any other.
TYPED_TEST(NmfTest, ProblemStatisticsMatchFloat64Reference) {
  using Space = TypeParam;
  const Space exec;
  const auto coo = random_sparse<double>(13, 1037, 0.6, 41);
  const auto hA = coo_to_host_dense(coo);
  double norm2 = 0, sum = 0;
  std::int64_t zeros = 0;
  for (int i = 0; i < 13; ++i)
    for (int j = 0; j < 1037; ++j) {
      norm2 += hA(i, j) * hA(i, j);
      sum += hA(i, j);
      zeros += hA(i, j) == 0.0;
    }
  ASSERT_GT(zeros, 0);
  const auto dense = nmf::make_problem(exec, to_space<Space>(hA));
  EXPECT_NEAR(dense.norm2, norm2, 1e-12 * norm2);
  EXPECT_NEAR(dense.sum, sum, 1e-12 * sum);
  EXPECT_EQ(dense.zeros, zeros);
  const auto csr = nmf::make_problem(exec, to_csr(exec, coo));
  EXPECT_NEAR(csr.norm2, norm2, 1e-12 * norm2);
  EXPECT_NEAR(csr.sum, sum, 1e-12 * sum);
  EXPECT_EQ(csr.zeros, 0);  // random_sparse stores no zeros
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    HostMatrix<double> c("c", 13, 1037);
    Kokkos::deep_copy(c, hA);
    c(12, 1036) = bad;
    try {
      nmf::make_problem(exec, to_space<Space>(c));
      ADD_FAILURE() << "no error for " << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("1 negative, NaN or infinite"), std::string::npos) << e.what();
    }
  }
}

// Every numeric option has a declared range: 0, -1, NaN, Inf and an absurdly
// large value are refused where they make no sense, with the field named;
// the edges of each range pass.
TEST(NmfOptions, EveryNumericOptionHasARange) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto refused = [](const nmf::Options& o, const char* field) {
    try {
      o.validate();
      ADD_FAILURE() << field << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  auto with = [](auto&& set) {
    nmf::Options o;
    o.rank = 16;
    set(o);
    return o;
  };
  EXPECT_NO_THROW(nmf::Options{}.validate());
  // rank in [1, max_rank]
  for (int v : {0, -1, nmf::max_rank + 1, std::numeric_limits<int>::max()})
    refused(with([&](nmf::Options& o) { o.rank = v; }), "rank");
  for (int v : {1, nmf::max_rank}) EXPECT_NO_THROW(with([&](nmf::Options& o) { o.rank = v; }).validate()) << v;
  // tile in [0, rank]
  for (int v : {-1, 17, std::numeric_limits<int>::max()}) refused(with([&](nmf::Options& o) { o.tile = v; }), "tile");
  for (int v : {0, 1, 16}) EXPECT_NO_THROW(with([&](nmf::Options& o) { o.tile = v; }).validate()) << v;
  // epsilon in [0, max_epsilon]
  for (double v : {-1.0, nan, inf, -inf, 1.0, 1e300}) refused(with([&](nmf::Options& o) { o.epsilon = v; }), "epsilon");
  for (double v : {0.0, 1e-300, nmf::max_epsilon})
    EXPECT_NO_THROW(with([&](nmf::Options& o) { o.epsilon = v; }).validate()) << v;
  // stop.max_iterations >= 0 (any int above: tolerance, target or an observer end the run)
  refused(with([](nmf::Options& o) { o.stop.max_iterations = -1; }), "max_iterations");
  for (int v : {0, 1, std::numeric_limits<int>::max()})
    EXPECT_NO_THROW(with([&](nmf::Options& o) { o.stop.max_iterations = v; }).validate()) << v;
  // stop.tolerance in [0, 1)
  for (double v : {-1.0, nan, inf, 1.0, 1e300})
    refused(with([&](nmf::Options& o) { o.stop.tolerance = v; }), "tolerance");
  for (double v : {0.0, 1e-12, 0.5})
    EXPECT_NO_THROW(with([&](nmf::Options& o) { o.stop.tolerance = v; }).validate()) << v;
  // stop.target in [0, 1] or NaN
  for (double v : {-1.0, inf, -inf, 1.5, 1e300}) refused(with([&](nmf::Options& o) { o.stop.target = v; }), "target");
  for (double v : {nan, 0.0, 1e-6, 1.0})
    EXPECT_NO_THROW(with([&](nmf::Options& o) { o.stop.target = v; }).validate()) << v;
  // every seed
  for (std::uint64_t v : {std::uint64_t(0), ~std::uint64_t(0)})
    EXPECT_NO_THROW(with([&](nmf::Options& o) { o.seed = v; }).validate());
}

// Options::visit lists what decides the iterates: the tile only for alo and
// as given (0, the space's default, differs from an explicit tile: a host
// resolves it to K, a device to default_tile), not the stop rule.
TEST(NmfOptions, VisitListsWhatDecidesTheIterates) {
  nmf::Options o;
  o.rank = 128;
  o.stop.max_iterations = 7;
  auto v = option_values(o);
  EXPECT_EQ(v.at("algorithm"), "alo");
  EXPECT_EQ(v.at("rank"), "128");
  EXPECT_EQ(v.at("tile"), "0");
  EXPECT_EQ(v.at("seed"), "42");
  EXPECT_EQ(v.count("max_iterations") + v.count("stop.max_iterations"), 0u);
  o.stop.max_iterations = 99;
  EXPECT_EQ(option_values(o), v);
  o.tile = 16;
  EXPECT_EQ(option_values(o).at("tile"), "16");
  o.algorithm = nmf::Algorithm::hals;
  EXPECT_EQ(option_values(o).count("tile"), 0u);
  EXPECT_EQ(option_values(o).at("algorithm"), "hals");
}

// The State contract: copying the visited fields into a fresh state and
// continuing gives bit-identical iterates.
TYPED_TEST(NmfTest, VisitedFieldsContinueBitForBit) {
  using Space = TypeParam;
  const Space exec;
  const auto coo = random_sparse<double>(40, 33, 0.3, 13);
  const auto A = nmf::make_problem(exec, to_csr(exec, coo));
  auto o = options(nmf::Algorithm::alo, 5, 2);
  o.stop.max_iterations = 4;
  auto r = nmf::solve(exec, A, o);
  auto fresh = nmf::init(exec, A, options(nmf::Algorithm::alo, 5, 2));  // different seed-independent start
  std::vector<std::function<void()>> copies;
  // Collect the source fields by name (through the const visit), then
  // assign into the fresh state.
  std::map<std::string, std::function<void(DenseMatrix<double, typename Space::memory_space>&)>> views;
  std::map<std::string, double> scalars;
  std::as_const(r.state).visit([&](const char* name, const auto& x) {
    if constexpr (requires { x.extent(0); }) {
      auto src = x;
      views[name] = [src](auto& dst) { Kokkos::deep_copy(dst, src); };
    } else {
      scalars[name] = double(x);
    }
  });
  fresh.visit([&](const char* name, auto& x) {
    if constexpr (requires { x.extent(0); })
      views.at(name)(x);
    else
      x = static_cast<std::remove_reference_t<decltype(x)>>(scalars.at(name));
  });
  fresh.reset_workspace();
  EXPECT_EQ(fresh.iteration, 4);
  o.stop.max_iterations = 7;
  nmf::resume(exec, A, o, r.state);
  nmf::resume(exec, A, o, fresh);
  EXPECT_EQ(rel_diff(fresh.W, r.state.W), 0.0);
  EXPECT_EQ(rel_diff(fresh.Ht, r.state.Ht), 0.0);
}

// reset_workspace() after the fields were replaced (what a checkpoint restore
// does) drops the products cached from the old fields: the state then
// continues exactly like the one the fields came from. Without it the next
// epoch would reuse the Gram W^T W of the replaced W.
TYPED_TEST(NmfTest, ResetWorkspaceDropsProductsOfReplacedFields) {
  using Space = TypeParam;
  const Space exec;
  const auto A = nmf::make_problem(exec, to_csr(exec, random_sparse<double>(40, 33, 0.3, 14)));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo}) {
    auto oa = options(alg, 5, 2), ob = oa;
    ob.seed = 6;
    oa.stop.max_iterations = ob.stop.max_iterations = 3;
    auto a = nmf::solve(exec, A, oa).state;
    auto b = nmf::solve(exec, A, ob).state;
    ASSERT_GT(rel_diff(a.W, b.W), 1e-3);  // different factors at the same iteration
    Kokkos::deep_copy(a.W, b.W);
    Kokkos::deep_copy(a.Ht, b.Ht);
    a.reset_workspace();
    oa.stop.max_iterations = ob.stop.max_iterations = 5;
    nmf::resume(exec, A, oa, a);
    nmf::resume(exec, A, ob, b);
    EXPECT_EQ(rel_diff(a.W, b.W), 0.0) << nmf::to_string(alg);
    EXPECT_EQ(rel_diff(a.Ht, b.Ht), 0.0) << nmf::to_string(alg);
  }
}

// load_checkpoint drops the workspace of the State it restores into: a state
// that ran from another seed (its cached products belong to other factors)
// continues, once restored, exactly like the run that was saved.
TYPED_TEST(NmfTest, LoadCheckpointDropsTheWorkspace) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  using Space = TypeParam;
  const Space exec;
  const auto csr = to_csr(exec, random_sparse<double>(40, 33, 0.3, 15));
  const auto A = nmf::make_problem(exec, csr);
  const std::string path = ::testing::TempDir() + "/kfactor_nmf_workspace_" + std::to_string(::getpid()) + ".h5";
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo}) {
    auto oa = options(alg, 5, 2), ob = oa;
    ob.seed = 6;
    oa.stop.max_iterations = ob.stop.max_iterations = 3;
    const auto meta = checkpoint_meta<double, Space>("nmf", option_values(oa), fingerprint(exec, csr), oa.rank);
    auto a = nmf::solve(exec, A, oa).state;
    save_checkpoint(path, a, meta);
    auto b = nmf::solve(exec, A, ob).state;
    ASSERT_GT(rel_diff(a.W, b.W), 1e-3);
    load_checkpoint(path, b, meta);
    oa.stop.max_iterations = 5;
    nmf::resume(exec, A, oa, a);
    nmf::resume(exec, A, oa, b);
    EXPECT_EQ(rel_diff(b.W, a.W), 0.0) << nmf::to_string(alg);
    EXPECT_EQ(rel_diff(b.Ht, a.Ht), 0.0) << nmf::to_string(alg);
  }
  std::remove(path.c_str());
#endif
}

// Checklist 11/12: the tile model and the data-movement formulas; a user tile is honoured.
TEST(NmfModel, TileModelAndDataMovement) {
  EXPECT_NEAR(nmf::alo_tile_model(256, 33.0), 19.82, 0.005);
  EXPECT_NEAR(nmf::alo_tile_model(256, 4.125e6), 16.01, 0.005);
  EXPECT_THROW(nmf::alo_tile_model(256, 4.0), UsageError);
  EXPECT_THROW(nmf::alo_tile_model(256, 2.0), UsageError);
  EXPECT_EQ(nmf::default_tile(64), 8);
  EXPECT_EQ(nmf::default_tile(128), 16);
  EXPECT_EQ(nmf::default_tile(256), 16);
  EXPECT_EQ(nmf::default_tile(512), 32);
  EXPECT_EQ(nmf::default_tile(1024), 64);
  EXPECT_EQ(nmf::default_tile(16), 4);
  EXPECT_EQ(nmf::default_tile(3), 2);
  EXPECT_EQ(nmf::resolve_tile(64, 5, false), 5);
  EXPECT_EQ(nmf::resolve_tile(64, 5, true), 5);
  EXPECT_EQ(nmf::resolve_tile(4, 9, false), 4);
  EXPECT_EQ(nmf::resolve_tile(64, 0, false), 8);
  EXPECT_EQ(nmf::resolve_tile(64, 0, true), 64);
  EXPECT_EQ(nmf::resolve_tile(128, 0, true), 16);
  EXPECT_DOUBLE_EQ(nmf::hals_w_data_movement(11554, 256), 775015680.0);
  EXPECT_NEAR(nmf::alo_w_data_movement(11554, 256, 16, 33), 338840257.0, 2.0);
}

TYPED_TEST(NmfTest, ReportNamesTileAndMetrics) {
  using Space = TypeParam;
  const Space exec;
  const auto A = nmf::make_problem(exec, to_space<Space>(planted<double>(30, 25, 3, 14)));
  auto o = options(nmf::Algorithm::alo, 6, 5);
  o.stop.max_iterations = 3;
  auto r = nmf::solve(exec, A, o);
  EXPECT_EQ(r.report.info.at("tile"), "5");
  EXPECT_EQ(r.report.metrics.items.at(0).first, "relative_error");
  EXPECT_EQ(r.report.iterations, 3);
  o.stop.tolerance = 0.5;
  o.stop.max_iterations = 100;
  auto r2 = nmf::solve(exec, A, o);
  EXPECT_EQ(r2.report.stop_reason, "converged");
  o.stop.tolerance = 0.0;
  o.stop.target = 0.5;
  auto r3 = nmf::solve(exec, A, o);
  EXPECT_EQ(r3.report.stop_reason, "target_reached");
  EXPECT_LE(r3.report.metrics.get("relative_error"), 0.5);
  EXPECT_LT(r3.report.iterations, 100);
}

}  // namespace

namespace {
// ALO's phase-1/3 GEMMs run on column subviews of the row-major factors; they
// must stay LayoutRight (strided rows) so the vendor paths take them.
TEST(NmfModel, ColumnSubviewsKeepBlasLayout) {
  using Mem = Kokkos::DefaultExecutionSpace::memory_space;
  kfactor::DenseMatrix<double, Mem> W("W", 10, 8);
  auto sub = Kokkos::subview(W, Kokkos::ALL, Kokkos::make_pair(2, 5));
  auto blk = Kokkos::subview(W, Kokkos::make_pair(1, 4), Kokkos::make_pair(2, 5));
  static_assert(std::is_same_v<decltype(sub)::array_layout, Kokkos::LayoutRight>);
  static_assert(std::is_same_v<decltype(blk)::array_layout, Kokkos::LayoutRight>);
  EXPECT_EQ(sub.stride(0), 8u);
  EXPECT_EQ(blk.stride(0), 8u);
}
}  // namespace
