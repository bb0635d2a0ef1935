// The scikit-learn options of kfactor::nmf against float64 host references
// written here: NNDSVD starts (exact on an orthogonal rank-K input, the
// fills of nndsvda/nndsvdar), the penalised coordinate rules of hals/alo and
// MU, beta-divergence MU (KL, IS: the divergence never rises, sparse and
// dense agree), masked data (missing absent) and transform.
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/nmf/nmf.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace {
using namespace kfactor;

/// A row-major host matrix in double.
struct Mat {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int r, int c) : rows(r), cols(c), v(std::size_t(r) * c, 0.0) {}
  double& operator()(int i, int j) { return v[std::size_t(i) * cols + j]; }
  double operator()(int i, int j) const { return v[std::size_t(i) * cols + j]; }
};

Mat random_mat(int r, int c, std::uint64_t seed, double lo = 0.05, double hi = 1.0) {
  const CounterRng rng(seed, RngStream::user);
  Mat m(r, c);
  for (std::size_t e = 0; e < m.v.size(); ++e) m.v[e] = lo + (hi - lo) * rng.uniform(e);
  return m;
}

/// A with entries of probability 1 - density set to zero (the sparse inputs).
Mat sparsify(Mat a, double density, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  for (std::size_t e = 0; e < a.v.size(); ++e)
    if (rng.uniform(e + 7777) >= density) a.v[e] = 0.0;
  return a;
}

template <class Space>
DenseMatrix<double, typename Space::memory_space> dev(const Mat& m) {
  DenseMatrix<double, typename Space::memory_space> d("d", m.rows, m.cols);
  auto h = Kokkos::create_mirror_view(d);
  for (int i = 0; i < m.rows; ++i)
    for (int j = 0; j < m.cols; ++j) h(i, j) = m(i, j);
  Kokkos::deep_copy(d, h);
  return d;
}

template <class V>
Mat to_mat(const V& d) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, d);
  Mat m(int(d.extent(0)), int(d.extent(1)));
  for (int i = 0; i < m.rows; ++i)
    for (int j = 0; j < m.cols; ++j) m(i, j) = h(i, j);
  return m;
}

/// The stored entries of `a` (its non-zeros) as a CSR in Space.
template <class Space>
CsrMatrix<double, typename Space::memory_space> csr_of(const Space& exec, const Mat& a) {
  CooMatrix<double> coo;
  coo.num_rows = a.rows;
  coo.num_cols = a.cols;
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < a.cols; ++j)
      if (a(i, j) != 0.0) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
        coo.values.push_back(a(i, j));
      }
  return to_csr(exec, coo);
}

double rel_diff(const Mat& x, const Mat& y) {
  double n = 0, d = 0;
  for (std::size_t e = 0; e < x.v.size(); ++e) {
    n += (x.v[e] - y.v[e]) * (x.v[e] - y.v[e]);
    d += y.v[e] * y.v[e];
  }
  return std::sqrt(n / d);
}

/// y(i, j) = W_i . Ht_j
double model(const Mat& W, const Mat& Ht, int i, int j) {
  double s = 0;
  for (int k = 0; k < W.cols; ++k) s += W(i, k) * Ht(j, k);
  return s;
}

Mat transpose(const Mat& a) {
  Mat t(a.cols, a.rows);
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < a.cols; ++j) t(j, i) = a(i, j);
  return t;
}

/// scikit-learn's coordinate step for every column of X (rows of the
/// factor updated, K columns) against the fixed F, on the entries of `a`
/// (rows of a are X's rows) where mask is true; penalties l1, l2; floor eps.
void ref_cd_half(const Mat& a, const std::vector<char>& mask, Mat& X, const Mat& F, double l1, double l2, double eps) {
  const int K = X.cols;
  for (int r = 0; r < X.rows; ++r)
    for (int t = 0; t < K; ++t) {
      double num = 0, den = 0;
      for (int c = 0; c < a.cols; ++c) {
        if (!mask[std::size_t(r) * a.cols + c]) continue;
        double rest = 0;
        for (int j = 0; j < K; ++j)
          if (j != t) rest += X(r, j) * F(c, j);
        num += (a(r, c) - rest) * F(c, t);
        den += F(c, t) * F(c, t);
      }
      X(r, t) = std::max(eps, (num - l1) / (den + l2));
    }
}

/// One epoch (H then W) of ref_cd_half; mask empty: every entry.
void ref_cd_epoch(const Mat& A, std::vector<char> mask, Mat& W, Mat& Ht, double alpha_w, double alpha_h, double l1r,
                  double eps) {
  if (mask.empty()) mask.assign(A.v.size(), 1);
  const double V = A.rows, D = A.cols;
  std::vector<char> maskt(mask.size());
  for (int i = 0; i < A.rows; ++i)
    for (int j = 0; j < A.cols; ++j) maskt[std::size_t(j) * A.rows + i] = mask[std::size_t(i) * A.cols + j];
  ref_cd_half(transpose(A), maskt, Ht, W, alpha_h * l1r * V, alpha_h * (1 - l1r) * V, eps);
  ref_cd_half(A, mask, W, Ht, alpha_w * l1r * D, alpha_w * (1 - l1r) * D, eps);
}

/// scikit-learn's MU step of X against F on a (rows of a are X's rows) for
/// beta = 2, 1, 0, over the entries where mask is true.
void ref_mu_half(const Mat& a, const std::vector<char>& mask, Mat& X, const Mat& F, int beta, double l1, double l2,
                 double eps) {
  Mat num(X.rows, X.cols), den(X.rows, X.cols);
  for (int r = 0; r < a.rows; ++r)
    for (int c = 0; c < a.cols; ++c) {
      if (!mask[std::size_t(r) * a.cols + c]) continue;
      const double y = model(X, F, r, c), m = std::max(y, eps), av = a(r, c);
      const double n = beta == 2 ? av : beta == 1 ? av / m : av / (m * m);
      const double d = beta == 2 ? m : beta == 1 ? 1.0 : 1.0 / m;
      for (int k = 0; k < X.cols; ++k) {
        num(r, k) += n * F(c, k);
        den(r, k) += d * F(c, k);
      }
    }
  for (int r = 0; r < X.rows; ++r)
    for (int k = 0; k < X.cols; ++k) {
      const double q = num(r, k) / (den(r, k) + l1 + l2 * X(r, k) + eps);
      X(r, k) *= beta == 0 ? std::sqrt(q) : q;
    }
}

/// One MU epoch: W then H with `w_first` (the solver's order for beta
/// losses and masked data), else H then W (Frobenius on every entry).
void ref_mu_epoch(const Mat& A, std::vector<char> mask, Mat& W, Mat& Ht, int beta, double alpha_w, double alpha_h,
                  double l1r, double eps, bool w_first) {
  if (mask.empty()) mask.assign(A.v.size(), 1);
  std::vector<char> maskt(mask.size());
  for (int i = 0; i < A.rows; ++i)
    for (int j = 0; j < A.cols; ++j) maskt[std::size_t(j) * A.rows + i] = mask[std::size_t(i) * A.cols + j];
  const double V = A.rows, D = A.cols;
  if (w_first) ref_mu_half(A, mask, W, Ht, beta, alpha_w * l1r * D, alpha_w * (1 - l1r) * D, eps);
  ref_mu_half(transpose(A), maskt, Ht, W, beta, alpha_h * l1r * V, alpha_h * (1 - l1r) * V, eps);
  if (!w_first) ref_mu_half(A, mask, W, Ht, beta, alpha_w * l1r * D, alpha_w * (1 - l1r) * D, eps);
}

/// The beta-divergence of A from W Ht^T over the masked entries.
double ref_divergence(const Mat& A, const std::vector<char>& mask, const Mat& W, const Mat& Ht, int beta, double eps) {
  double s = 0;
  for (int i = 0; i < A.rows; ++i)
    for (int j = 0; j < A.cols; ++j) {
      if (!mask.empty() && !mask[std::size_t(i) * A.cols + j]) continue;
      const double y = model(W, Ht, i, j), m = std::max(y, eps), a = A(i, j);
      if (beta == 2)
        s += 0.5 * (a - y) * (a - y);
      else if (beta == 1)
        s += a > 0 ? a * std::log(a / m) - a + m : m;
      else
        s += a / m - std::log(a / m) - 1;
    }
  return s;
}

nmf::Options opts(nmf::Algorithm alg, int K) {
  nmf::Options o;
  o.algorithm = alg;
  o.rank = K;
  o.stop.max_iterations = 0;
  o.seed = 11;
  o.epsilon = 1e-12;
  return o;
}

template <class Space>
class NmfOptionsTest : public ::testing::Test {};
TYPED_TEST_SUITE(NmfOptionsTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

/// Orthogonal non-negative rank-K: disjoint row blocks of W*, disjoint
/// column blocks of H*, block scales 4, 3, 2, 1 (distinct singular values):
/// every singular vector is one-signed, so NNDSVD is exact.
Mat orthogonal_rank_k(int V, int D, int K) {
  const Mat u = random_mat(V, 1, 3, 0.5, 1.0), w = random_mat(D, 1, 4, 0.5, 1.0);
  Mat A(V, D);
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < D; ++j)
      if (i % K == j % K) A(i, j) = (K - i % K) * u(i, 0) * w(j, 0);
  return A;
}

TYPED_TEST(NmfOptionsTest, NndsvdIsExactOnAnOrthogonalRankKInput) {
  using Space = TypeParam;
  const Space exec;
  const int V = 60, D = 48, K = 4;
  const Mat A = orthogonal_rank_k(V, D, K);
  const auto dense = nmf::make_problem(exec, dev<Space>(A));
  const auto sparse = nmf::make_problem(exec, csr_of(exec, A));
  for (auto alg : {nmf::Algorithm::alo, nmf::Algorithm::hals, nmf::Algorithm::mu}) {
    auto o = opts(alg, K);
    o.init = nmf::Init::nndsvd;
    auto sd = nmf::init(exec, dense, o);
    auto ss = nmf::init(exec, sparse, o);
    EXPECT_LT(nmf::evaluate(exec, dense, o, sd).get("relative_error"), 1e-6) << nmf::to_string(alg);
    EXPECT_LT(nmf::evaluate(exec, sparse, o, ss).get("relative_error"), 1e-6) << nmf::to_string(alg);
    EXPECT_LT(rel_diff(to_mat(ss.W), to_mat(sd.W)), 1e-8);
  }
  // The random start of the same input is far from it.
  const auto o = opts(nmf::Algorithm::alo, K);
  auto sr = nmf::init(exec, dense, o);
  EXPECT_GT(nmf::evaluate(exec, dense, o, sr).get("relative_error"), 0.1);
}

TYPED_TEST(NmfOptionsTest, NndsvdaAndNndsvdarFillTheZeros) {
  using Space = TypeParam;
  const Space exec;
  const Mat A = sparsify(random_mat(50, 40, 21), 0.3, 22);
  double mean = 0;
  for (double x : A.v) mean += x;
  mean /= double(A.v.size());
  const auto P = nmf::make_problem(exec, csr_of(exec, A));
  auto o = opts(nmf::Algorithm::mu, 6);  // mu: the factors are kept as drawn
  o.init = nmf::Init::nndsvd;
  auto s0 = nmf::init(exec, P, o);
  o.init = nmf::Init::nndsvda;
  const auto sa = nmf::init(exec, P, o);
  o.init = nmf::Init::nndsvdar;
  const auto sr = nmf::init(exec, P, o);
  std::size_t zeros = 0;
  for (auto [X0, Xa, Xr] :
       {std::tuple{to_mat(s0.W), to_mat(sa.W), to_mat(sr.W)}, std::tuple{to_mat(s0.Ht), to_mat(sa.Ht), to_mat(sr.Ht)}})
    for (std::size_t e = 0; e < X0.v.size(); ++e) {
      if (X0.v[e] == 0.0) {
        ++zeros;
        EXPECT_NEAR(Xa.v[e], mean, 1e-12 * mean);  // the mean of A, summed in another order
        EXPECT_GT(Xr.v[e], 0.0);
        EXPECT_LT(Xr.v[e], mean / 100);
      } else {
        EXPECT_GE(X0.v[e], 1e-6);
        EXPECT_EQ(Xa.v[e], X0.v[e]);
        EXPECT_EQ(Xr.v[e], X0.v[e]);
      }
    }
  EXPECT_GT(zeros, 20u);  // NNDSVD keeps one sign of each component: many zeros
  // The NNDSVD start is better than the random one on this input.
  auto r = opts(nmf::Algorithm::mu, 6);
  auto s = nmf::init(exec, P, r);
  o.init = nmf::Init::nndsvd;
  EXPECT_LT(nmf::evaluate(exec, P, o, s0).get("relative_error"), nmf::evaluate(exec, P, r, s).get("relative_error"));
}

TYPED_TEST(NmfOptionsTest, PenalizedRulesMatchTheReference) {
  using Space = TypeParam;
  const Space exec;
  const int K = 4;
  const Mat A = sparsify(random_mat(30, 26, 31), 0.5, 32);
  const Mat W0 = random_mat(30, K, 33), H0 = random_mat(26, K, 34);
  const auto dense = nmf::make_problem(exec, dev<Space>(A));
  const auto sparse = nmf::make_problem(exec, csr_of(exec, A));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    SCOPED_TRACE(nmf::to_string(alg));
    auto o = opts(alg, K);
    o.tile = 3;
    o.init = nmf::Init::custom;
    o.alpha_w = 0.01;
    o.alpha_h = 0.02;
    o.l1_ratio = 0.3;
    auto sd = nmf::init_with(exec, dense, o, dev<Space>(W0), dev<Space>(H0));
    auto ss = nmf::init_with(exec, sparse, o, dev<Space>(W0), dev<Space>(H0));
    Mat W = W0, Ht = H0;
    for (int e = 0; e < 4; ++e) {
      nmf::step(exec, dense, o, sd);
      ++sd.iteration;
      nmf::step(exec, sparse, o, ss);
      ++ss.iteration;
      if (alg == nmf::Algorithm::mu)
        ref_mu_epoch(A, {}, W, Ht, 2, o.alpha_w, o.alpha_h, o.l1_ratio, o.epsilon, false);
      else
        ref_cd_epoch(A, {}, W, Ht, o.alpha_w, o.alpha_h, o.l1_ratio, o.epsilon);
    }
    EXPECT_LT(rel_diff(to_mat(sd.W), W), 1e-10);
    EXPECT_LT(rel_diff(to_mat(sd.Ht), Ht), 1e-10);
    EXPECT_LT(rel_diff(to_mat(ss.W), W), 1e-10);
    EXPECT_LT(rel_diff(to_mat(ss.Ht), Ht), 1e-10);
    EXPECT_NEAR(nmf::evaluate(exec, dense, o, sd).get("relative_error"), relative_error(exec, dense.A, sd.W, sd.Ht),
                1e-10);
  }
}

TYPED_TEST(NmfOptionsTest, BetaLossesMatchTheReferenceAndNeverRise) {
  using Space = TypeParam;
  const Space exec;
  const int K = 3;
  const Mat Apos = random_mat(28, 24, 41, 0.1, 2.0);
  const Mat W0 = random_mat(28, K, 42), H0 = random_mat(24, K, 43);
  for (auto loss : {nmf::BetaLoss::kl, nmf::BetaLoss::is}) {
    SCOPED_TRACE(nmf::to_string(loss));
    const int beta = loss == nmf::BetaLoss::kl ? 1 : 0;
    const auto P = nmf::make_problem(exec, dev<Space>(Apos));
    auto o = opts(nmf::Algorithm::mu, K);
    o.init = nmf::Init::custom;
    o.beta_loss = loss;
    o.alpha_w = 0.001;
    o.l1_ratio = 0.5;
    auto s = nmf::init_with(exec, P, o, dev<Space>(W0), dev<Space>(H0));
    Mat W = W0, Ht = H0;
    const double d0 = nmf::evaluate(exec, P, o, s).get("divergence");
    EXPECT_NEAR(d0, ref_divergence(Apos, {}, W, Ht, beta, o.epsilon), 1e-10 * d0);
    for (int e = 0; e < 3; ++e) {
      nmf::step(exec, P, o, s);
      ++s.iteration;
      ref_mu_epoch(Apos, {}, W, Ht, beta, o.alpha_w, o.alpha_h, o.l1_ratio, o.epsilon, true);
    }
    EXPECT_LT(rel_diff(to_mat(s.W), W), 1e-10);
    EXPECT_LT(rel_diff(to_mat(s.Ht), Ht), 1e-10);
    // Without a penalty each MU half step never raises the divergence.
    o.alpha_w = 0;
    auto u = nmf::init_with(exec, P, o, dev<Space>(W0), dev<Space>(H0));
    double prev = nmf::evaluate(exec, P, o, u).get("divergence");
    for (int e = 0; e < 30; ++e) {
      nmf::step(exec, P, o, u);
      ++u.iteration;
      const double d = nmf::evaluate(exec, P, o, u).get("divergence");
      EXPECT_LE(d, prev * (1 + 1e-12)) << "epoch " << e;
      prev = d;
    }
    EXPECT_LT(prev, 0.5 * d0);
  }
  // KL on a sparse input: the zeros in closed form equal the dense run.
  const Mat A = sparsify(Apos, 0.3, 44);
  const auto dense = nmf::make_problem(exec, dev<Space>(A));
  const auto sparse = nmf::make_problem(exec, csr_of(exec, A));
  auto o = opts(nmf::Algorithm::mu, K);
  o.init = nmf::Init::custom;
  o.beta_loss = nmf::BetaLoss::kl;
  auto sd = nmf::init_with(exec, dense, o, dev<Space>(W0), dev<Space>(H0));
  auto ss = nmf::init_with(exec, sparse, o, dev<Space>(W0), dev<Space>(H0));
  for (int e = 0; e < 5; ++e) {
    nmf::step(exec, dense, o, sd);
    ++sd.iteration;
    nmf::step(exec, sparse, o, ss);
    ++ss.iteration;
  }
  EXPECT_LT(rel_diff(to_mat(ss.W), to_mat(sd.W)), 1e-10);
  const double dd = nmf::evaluate(exec, dense, o, sd).get("divergence");
  EXPECT_NEAR(nmf::evaluate(exec, sparse, o, ss).get("divergence"), dd, 1e-10 * dd);
  EXPECT_NEAR(dd, ref_divergence(A, {}, to_mat(sd.W), to_mat(sd.Ht), 1, o.epsilon), 1e-10 * dd);
  // Itakura-Saito is undefined at zeros: refused, dense and sparse.
  o.beta_loss = nmf::BetaLoss::is;
  o.init = nmf::Init::random;
  EXPECT_THROW(nmf::init(exec, dense, o), InputError);
  EXPECT_THROW(nmf::init(exec, sparse, o), InputError);
  // ... unless the unstored entries are absent.
  o.missing = nmf::Missing::absent;
  EXPECT_NO_THROW(nmf::init(exec, sparse, o));
  // hals and alo minimise the Frobenius loss only.
  o.algorithm = nmf::Algorithm::hals;
  EXPECT_THROW(o.validate(), UsageError);
}

TYPED_TEST(NmfOptionsTest, MissingAbsentFitsTheStoredEntriesOnly) {
  using Space = TypeParam;
  const Space exec;
  const int K = 3, V = 32, D = 27;
  // The mask is the sparsity pattern: stored entries are observed. Two
  // dense completions that differ off the mask have the same reference.
  const Mat full1 = random_mat(V, D, 51), full2 = random_mat(V, D, 52);
  const Mat A = sparsify(full1, 0.4, 53);
  std::vector<char> mask(A.v.size());
  Mat A2 = full2;
  for (std::size_t e = 0; e < A.v.size(); ++e) {
    mask[e] = A.v[e] != 0.0;
    if (mask[e]) A2.v[e] = A.v[e];
  }
  const auto P = nmf::make_problem(exec, csr_of(exec, A));
  const Mat W0 = random_mat(V, K, 54), H0 = random_mat(D, K, 55);
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    SCOPED_TRACE(nmf::to_string(alg));
    auto o = opts(alg, K);
    o.init = nmf::Init::custom;
    o.missing = nmf::Missing::absent;
    o.alpha_h = 0.001;
    auto s = nmf::init_with(exec, P, o, dev<Space>(W0), dev<Space>(H0));
    Mat W = W0, Ht = H0, W2 = W0, Ht2 = H0;
    double err = 0;
    for (int e = 0; e < 3; ++e) {
      nmf::step(exec, P, o, s);
      ++s.iteration;
      if (alg == nmf::Algorithm::mu) {
        ref_mu_epoch(A, mask, W, Ht, 2, 0, o.alpha_h, 0, o.epsilon, true);
        ref_mu_epoch(A2, mask, W2, Ht2, 2, 0, o.alpha_h, 0, o.epsilon, true);
      } else {
        ref_cd_epoch(A, mask, W, Ht, 0, o.alpha_h, 0, o.epsilon);
        ref_cd_epoch(A2, mask, W2, Ht2, 0, o.alpha_h, 0, o.epsilon);
      }
      err = nmf::evaluate(exec, P, o, s).get("relative_error");
    }
    EXPECT_EQ(W.v, W2.v);  // the reference ignores what lies off the mask
    EXPECT_LT(rel_diff(to_mat(s.W), W), 1e-10);
    EXPECT_LT(rel_diff(to_mat(s.Ht), Ht), 1e-10);
    const double norm2 = ref_divergence(A, mask, Mat(V, K), Mat(D, K), 2, 0) * 2;
    EXPECT_NEAR(err, std::sqrt(2 * ref_divergence(A, mask, W, Ht, 2, 0) / norm2), 1e-10);
    // Reading the unstored entries as zeros is another fit.
    o.missing = nmf::Missing::zero;
    auto z = nmf::init_with(exec, P, o, dev<Space>(W0), dev<Space>(H0));
    for (int e = 0; e < 3; ++e) {
      nmf::step(exec, P, o, z);
      ++z.iteration;
    }
    EXPECT_GT(rel_diff(to_mat(z.W), W), 1e-2);
  }
}

TYPED_TEST(NmfOptionsTest, TransformReproducesTheFit) {
  using Space = TypeParam;
  const Space exec;
  const int V = 50, D = 40, K = 4;
  const Mat W = random_mat(V, K, 61, 0.0, 1.0), Ht = random_mat(D, K, 62, 0.0, 1.0);
  Mat A(V, D);
  for (int i = 0; i < V; ++i)
    for (int j = 0; j < D; ++j) A(i, j) = model(W, Ht, i, j) + 0.05 * random_mat(1, 1, 100 + i * D + j)(0, 0);
  const auto P = nmf::make_problem(exec, dev<Space>(A));
  for (auto alg : {nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    SCOPED_TRACE(nmf::to_string(alg));
    auto o = opts(alg, K);
    o.stop.max_iterations = 300;
    const auto fit = nmf::solve(exec, P, o);
    const double e_fit = fit.report.metrics.get("relative_error");
    const auto t = nmf::transform(exec, P, o, fit.state.W);
    const double e_t = t.report.metrics.get("relative_error");
    EXPECT_LT(e_fit, 0.1);
    EXPECT_LE(e_t, e_fit * 1.01 + 1e-9);
    EXPECT_EQ(to_mat(t.state.W).v, to_mat(fit.state.W).v);  // W stays fixed
    // inverse_transform is W H.
    const Mat WH = to_mat(nmf::inverse_transform(exec, t.state.W, t.state.Ht));
    double n = 0, d = 0;
    for (std::size_t e = 0; e < A.v.size(); ++e) {
      n += (A.v[e] - WH.v[e]) * (A.v[e] - WH.v[e]);
      d += A.v[e] * A.v[e];
    }
    EXPECT_NEAR(std::sqrt(n / d), e_t, 1e-10);
    if (alg != nmf::Algorithm::alo) continue;
    // With W fixed each column is its own problem, so a single column (fewer
    // columns than K) transforms too, to the same H column as within A.
    Mat a0(V, 1);
    for (int i = 0; i < V; ++i) a0(i, 0) = A(i, 0);
    const auto one = nmf::transform(exec, nmf::make_problem(exec, dev<Space>(a0)), o, fit.state.W);
    const Mat h0 = to_mat(one.state.Ht), h = to_mat(t.state.Ht);
    for (int k = 0; k < K; ++k) EXPECT_NEAR(h0(0, k), h(0, k), 1e-3 * (1 + std::abs(h(0, k))));
  }
}

TEST(NmfOptions, ParseVisitAndValidate) {
  EXPECT_EQ(nmf::parse_init("nndsvdar"), nmf::Init::nndsvdar);
  EXPECT_THROW(nmf::parse_init("svd"), UsageError);
  EXPECT_EQ(nmf::parse_beta_loss("is"), nmf::BetaLoss::is);
  EXPECT_THROW(nmf::parse_beta_loss("itakura"), UsageError);
  EXPECT_EQ(nmf::parse_missing("absent"), nmf::Missing::absent);
  EXPECT_THROW(nmf::parse_missing("nan"), UsageError);
  nmf::Options o;
  o.alpha_w = 0.5;
  o.l1_ratio = 0.25;
  o.beta_loss = nmf::BetaLoss::frobenius;
  const auto v = option_values(o);
  for (const char* name : {"init", "alpha_w", "alpha_h", "l1_ratio", "beta_loss", "missing", "fix_w"})
    EXPECT_EQ(v.count(name), 1u) << name;
  EXPECT_EQ(v.at("alpha_w"), "0.5");
  o.l1_ratio = 1.5;
  EXPECT_THROW(o.validate(), UsageError);
  o.l1_ratio = 0;
  o.alpha_h = -1;
  EXPECT_THROW(o.validate(), UsageError);
  using Exec = Kokkos::DefaultHostExecutionSpace;
  const Exec exec;
  const auto P = nmf::make_problem(exec, dev<Exec>(random_mat(10, 8, 1)));
  nmf::Options c;
  c.rank = 2;
  c.init = nmf::Init::custom;
  EXPECT_THROW(nmf::init(exec, P, c), UsageError);  // custom takes init_with
}

}  // namespace
