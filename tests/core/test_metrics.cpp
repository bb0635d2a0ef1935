#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/random.hpp>

#include "common/test_spaces.hpp"

#include <cmath>

namespace {
using namespace kfactor;

template <class P>
class MetricsTest : public ::testing::Test {};
TYPED_TEST_SUITE(MetricsTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

/// float64 host reference of ||A - W Ht^T|| / ||A|| on a dense host copy.
template <class AH, class WH, class HH>
double reference_error(const AH& A, const WH& W, const HH& Ht) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < A.extent(0); ++i)
    for (std::size_t j = 0; j < A.extent(1); ++j) {
      double p = 0;
      for (std::size_t k = 0; k < W.extent(1); ++k) p += double(W(i, k)) * double(Ht(j, k));
      num += (A(i, j) - p) * (A(i, j) - p);
      den += double(A(i, j)) * A(i, j);
    }
  return std::sqrt(num / den);
}

TYPED_TEST(MetricsTest, DenseAndSparseErrorsMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int m = 31, n = 23, K = 5;
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(3, RngStream::user);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      if (rng.uniform(std::uint64_t(i * n + j)) < 0.3) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
        coo.values.push_back(T(1 + rng.uniform(std::uint64_t(1e6 + i * n + j))));
      }
  auto A = to_csr(exec, coo);
  auto Ad = to_dense(exec, A);
  DenseMatrix<T, Mem> W("W", m, K), Ht("Ht", n, K);
  fill_uniform(exec, W, 1, RngStream::factor_w, T(0), T(1));
  fill_uniform(exec, Ht, 1, RngStream::factor_h, T(0), T(1));
  const double ref = reference_error(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Ad),
                                     Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, W),
                                     Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Ht));
  EXPECT_NEAR(relative_error(exec, Ad, W, Ht), ref, 1e-12 * ref);
  EXPECT_NEAR(relative_error(exec, A, W, Ht), ref, 1e-9 * ref);
}

TYPED_TEST(MetricsTest, RatingErrorsMatchHostReference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  CooMatrix<T> coo;
  coo.num_rows = 4;
  coo.num_cols = 3;
  coo.rows = {0, 1, 3, 3};
  coo.cols = {2, 0, 1, 2};
  coo.values = {T(3), T(1), T(5), T(2)};
  auto R = to_csr(exec, coo);
  Kokkos::View<T*, typename Space::memory_space> predictions("predictions", 4);
  auto h = Kokkos::create_mirror_view(predictions);
  const T p[4] = {T(2), T(2), T(2.5), T(2)};
  for (int e = 0; e < 4; ++e) h(e) = p[e];
  Kokkos::deep_copy(predictions, h);
  // residuals 1, -1, 2.5, 0
  const auto e = rating_errors(exec, R, predictions);
  EXPECT_EQ(e.count, 4u);
  EXPECT_NEAR(e.rmse, std::sqrt((1 + 1 + 6.25 + 0) / 4.0), 1e-12);
  EXPECT_NEAR(e.mae, (1 + 1 + 2.5 + 0) / 4.0, 1e-12);
  EXPECT_THROW(rating_errors(exec, R, Kokkos::View<T*, typename Space::memory_space>("short", 3)), UsageError);
}

TEST(Metrics, AllZeroMatrixIsAnInputError) {
  using Space = Kokkos::DefaultExecutionSpace;
  DenseMatrix<double> A("A", 3, 3), W("W", 3, 1), Ht("Ht", 3, 1);
  EXPECT_THROW(relative_error(Space{}, A, W, Ht), InputError);
  DenseMatrix<double> Wbad("W", 2, 1);
  EXPECT_THROW(relative_error(Space{}, A, Wbad, Ht), UsageError);
}

TEST(Metrics, SplitIsDeterministicAndIndependentOfOrder) {
  CooMatrix<float> all;
  all.num_rows = 200;
  all.num_cols = 100;
  for (int i = 0; i < 200; ++i)
    for (int j = 0; j < 100; j += 3) {
      all.rows.push_back(i);
      all.cols.push_back(j);
      all.values.push_back(float(i + j));
    }
  auto [train, test] = split_train_test(all, 0.2, 11);
  EXPECT_EQ(train.nnz() + test.nnz(), all.nnz());
  EXPECT_NEAR(test.nnz() / double(all.nnz()), 0.2, 0.02);
  CooMatrix<float> reversed = all;
  std::reverse(reversed.rows.begin(), reversed.rows.end());
  std::reverse(reversed.cols.begin(), reversed.cols.end());
  std::reverse(reversed.values.begin(), reversed.values.end());
  auto [train2, test2] = split_train_test(reversed, 0.2, 11);
  ASSERT_EQ(test2.nnz(), test.nnz());
  for (std::size_t e = 0; e < test.nnz(); ++e) {
    const auto r = test.nnz() - 1 - e;
    EXPECT_EQ(test.rows[e], test2.rows[r]);
    EXPECT_EQ(test.cols[e], test2.cols[r]);
  }
  EXPECT_THROW(split_train_test(all, 1.0, 1), UsageError);
}

}  // namespace
