// Planted problems (core/planted.hpp, sddmm/planted.hpp) and the SDDMM output
// writer (io/sddmm_output.hpp): the generated data is what the factors say,
// observed at the asked density, the same for a seed and different across
// seeds; the written P reads back as S's pattern with the product's values.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/sddmm_output.hpp>
#include <kfactor/sddmm/planted.hpp>

#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <cmath>
#include <set>
#include <utility>

namespace {
using namespace kfactor;

/// |fraction - p| within 5 standard deviations of a binomial over n draws.
void expect_fraction(double observed, double p, double n) {
  EXPECT_NEAR(observed, p, 5 * std::sqrt(p * (1 - p) / n) + 1e-12);
}

TEST(Planted, NonnegativeIsTheExactProductOfSparseFactors) {
  const auto p = planted_nonnegative(53, 41, 6, 0.5, 9);
  ASSERT_EQ(p.W.size(), 53u * 6);
  ASSERT_EQ(p.H.size(), 6u * 41);
  ASSERT_EQ(p.A.size(), 53u * 41);
  std::size_t zeros = 0;
  for (double w : p.W) {
    EXPECT_GE(w, 0.0);
    EXPECT_LT(w, 1.0);
    zeros += w == 0.0;
  }
  for (double h : p.H) {
    EXPECT_GE(h, 0.0);
    zeros += h == 0.0;
  }
  expect_fraction(double(zeros) / double(p.W.size() + p.H.size()), 0.5, double(p.W.size() + p.H.size()));
  for (int i = 0; i < 53; ++i)
    for (int j = 0; j < 41; ++j) {
      long double s = 0;
      for (int k = 0; k < 6; ++k) s += (long double)p.W[i * 6 + k] * p.H[k * 41 + j];
      EXPECT_NEAR(p.A[i * 41 + j], double(s), 1e-12);
    }
  EXPECT_EQ(planted_nonnegative(53, 41, 6, 0.5, 9).A, p.A);
  EXPECT_NE(planted_nonnegative(53, 41, 6, 0.5, 10).A, p.A);
  // W and H come from disjoint counters: no column of H repeats a row of W.
  EXPECT_NE(std::vector<double>(p.W.begin(), p.W.begin() + 6), std::vector<double>(p.H.begin(), p.H.begin() + 6));
}

TEST(Planted, RatingsSampleTheProductWithBoundedNoise) {
  const int m = 120, n = 90, r = 4;
  const double density = 0.2, noise = 0.1;
  const auto p = planted_ratings(m, n, r, density, noise, 5);
  const auto& c = p.ratings;
  EXPECT_EQ(c.num_rows, m);
  EXPECT_EQ(c.num_cols, n);
  expect_fraction(double(c.nnz()) / (m * n), density, m * n);
  std::set<std::pair<int, int>> seen;
  double worst = 0, mean_err = 0;
  for (std::size_t e = 0; e < c.nnz(); ++e) {
    EXPECT_TRUE(seen.emplace(c.rows[e], c.cols[e]).second) << "position repeated";
    double v = 0;
    for (int k = 0; k < r; ++k) v += p.X[c.rows[e] * r + k] * p.Y[c.cols[e] * r + k];
    worst = std::max(worst, std::abs(c.values[e] - v));
    mean_err += c.values[e] - v;
  }
  EXPECT_LE(worst, noise / 2);
  EXPECT_GT(worst, noise / 4);  // the noise is there
  EXPECT_NEAR(mean_err / double(c.nnz()), 0.0, 5 * noise / std::sqrt(12.0 * double(c.nnz())));
  EXPECT_EQ(planted_ratings(m, n, r, density, noise, 5).ratings.values, c.values);
  EXPECT_THROW(planted_ratings(m, n, r, 1.5, noise, 5), UsageError);
  EXPECT_THROW(planted_ratings(m, n, r, density, std::nan(""), 5), UsageError);
  EXPECT_THROW(planted_ratings(0, n, r, density, noise, 5), UsageError);
}

TEST(Planted, GroupRatingsPutEveryUserNearItsGroup) {
  const int m = 60, n = 50, r = 5;
  const auto p = planted_group_ratings(m, n, r, 0.3, 3);
  expect_fraction(double(p.ratings.nnz()) / (m * n), 0.3, m * n);
  for (std::size_t e = 0; e < p.ratings.nnz(); ++e) {
    double v = 0;
    for (int k = 0; k < r; ++k) v += p.X[p.ratings.rows[e] * r + k] * p.Y[p.ratings.cols[e] * r + k];
    EXPECT_DOUBLE_EQ(p.ratings.values[e], v);
  }
  // A user's factor row is closer to every user of its group than to any
  // user of another group: the structure the kNN graphs must find.
  auto dist = [&](int a, int b) {
    double d = 0;
    for (int k = 0; k < r; ++k) d += std::pow(p.X[a * r + k] - p.X[b * r + k], 2);
    return d;
  };
  for (int a = 0; a < m; ++a) {
    double same = 0, other = 1e300;
    for (int b = 0; b < m; ++b)
      if (b != a) (b % r == a % r ? same = std::max(same, dist(a, b)) : other = std::min(other, dist(a, b)));
    EXPECT_LT(same, other) << "user " << a;
  }
}

template <class Space>
class SddmmPlanted : public ::testing::Test {};
TYPED_TEST_SUITE(SddmmPlanted, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

TYPED_TEST(SddmmPlanted, FactorsAreTheCounterDrawsOfTheirStreams) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const auto [A, B] = sddmm_random_factors<T>(exec, 31, 17, 5, 77);
  ASSERT_EQ(A.extent(0), 31u);
  ASSERT_EQ(B.extent(0), 17u);
  ASSERT_EQ(A.extent(1), 5u);
  auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
  auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
  const CounterRng ra(77, RngStream::factor_w), rb(77, RngStream::factor_h);
  for (std::size_t i = 0; i < 31; ++i)
    for (std::size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(hA(i, k), ra.uniform<T>(i * 5 + k, T(-1), T(1)));
      EXPECT_GE(hA(i, k), T(-1));
      EXPECT_LT(hA(i, k), T(1));
    }
  for (std::size_t j = 0; j < 17; ++j)
    for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(hB(j, k), rb.uniform<T>(j * 5 + k, T(-1), T(1)));
}

TEST(SddmmOutput, ReadsBackAsThePatternWithTheValues) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto p = planted_ratings(23, 19, 2, 0.3, 0.0, 4);
  const auto S = to_csr(exec, p.ratings);
  const auto hS = copy_to<Kokkos::HostSpace>(S);
  std::vector<double> P(S.nnz());
  for (std::size_t e = 0; e < P.size(); ++e) P[e] = 0.25 * double(e) - 3.0;  // exact in binary and in text
  const kfactor::test::TempDir dir("sddmm_output");
  const std::string path = dir.file("p.mtx");
  io::write_sddmm_output(path, S, P, "test");
  const auto back = io::read_matrix<double>(path);
  ASSERT_EQ(back.num_rows, 23);
  ASSERT_EQ(back.num_cols, 19);
  ASSERT_EQ(back.nnz(), S.nnz());
  std::size_t e = 0;
  for (int r = 0; r < 23; ++r)
    for (auto k = hS.row_map(r); k < hS.row_map(r + 1); ++k, ++e) {
      EXPECT_EQ(back.rows[e], r);
      EXPECT_EQ(back.cols[e], hS.entries(k));
      EXPECT_EQ(back.values[e], P[k]);
    }
  P.pop_back();
  EXPECT_THROW(io::write_sddmm_output(path, S, P), InputError);
}

}  // namespace
