// Batched small SPD Cholesky (kernels/batched_cholesky.hpp) against a float64
// host reference, for sizes that are not multiples of any block size.
#include <kfactor/core/random.hpp>
#include <kfactor/kernels/batched_cholesky.hpp>

#include "common/test_spaces.hpp"

#include <cmath>
#include <vector>

namespace {
using namespace kfactor;

template <class P>
class BatchedCholesky : public ::testing::Test {};
TYPED_TEST_SUITE(BatchedCholesky, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

TYPED_TEST(BatchedCholesky, SolvesSpdSystemsLikeFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  for (int n : {1, 2, 7, 33, 100, 130}) {
    const int batch = 5;
    // A = G G^T / n + I with G random: SPD, condition number modest.
    const CounterRng rng(11 + n, RngStream::user);
    std::vector<double> Ad(std::size_t(batch) * n * n), bd(std::size_t(batch) * n);
    Kokkos::View<T***, Kokkos::LayoutRight, Mem> A("A", batch, n, n);
    Kokkos::View<T**, Kokkos::LayoutRight, Mem> B("B", batch, n);
    auto Ah = Kokkos::create_mirror_view(A);
    auto Bh = Kokkos::create_mirror_view(B);
    for (int s = 0; s < batch; ++s) {
      std::vector<double> G(std::size_t(n) * n);
      for (int i = 0; i < n * n; ++i) G[i] = rng.uniform(std::uint64_t(s * 100000 + i)) - 0.5;
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          double v = i == j ? 1.0 : 0.0;
          for (int k = 0; k < n; ++k) v += G[i * n + k] * G[j * n + k] / n;
          // round to T first so the reference solves the same matrix
          Ah(s, i, j) = T(v);
          Ad[(std::size_t(s) * n + i) * n + j] = double(T(v));
        }
        Bh(s, i) = T(rng.uniform(std::uint64_t(9000000 + s * 1000 + i)) - 0.5);
        bd[std::size_t(s) * n + i] = double(Bh(s, i));
      }
      // poison the upper triangle: only the lower one may be read
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) Ah(s, i, j) = T(1e30);
    }
    Kokkos::deep_copy(A, Ah);
    Kokkos::deep_copy(B, Bh);
    EXPECT_EQ(batched_cholesky_solve(exec, A, B), 0);
    Kokkos::deep_copy(Bh, B);
    for (int s = 0; s < batch; ++s) {
      // residual of the float64 system with the returned x
      double rn = 0, bn = 0;
      for (int i = 0; i < n; ++i) {
        double r = bd[std::size_t(s) * n + i];
        for (int j = 0; j < n; ++j) r -= Ad[(std::size_t(s) * n + i) * n + j] * double(Bh(s, j));
        rn += r * r;
        bn += bd[std::size_t(s) * n + i] * bd[std::size_t(s) * n + i];
      }
      const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
      EXPECT_LT(std::sqrt(rn / bn), tol) << "n = " << n << " system " << s;
    }
  }
}

TYPED_TEST(BatchedCholesky, ReportsIndefiniteSystems) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int n = 6;
  Kokkos::View<T***, Kokkos::LayoutRight, Mem> A("A", 3, n, n);
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> B("B", 3, n);
  auto Ah = Kokkos::create_mirror_view(A);
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < n; ++i) Ah(s, i, i) = T(2);
  Ah(1, 3, 3) = T(-1);  // indefinite
  Ah(2, 0, 0) = T(0);   // singular (the zero-matrix case)
  Kokkos::deep_copy(A, Ah);
  Kokkos::deep_copy(B, T(1));
  EXPECT_EQ(batched_cholesky_solve(exec, A, B), 2);
  auto Bh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
  for (int i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(double(Bh(0, i)), 0.5);
}

TEST(BatchedCholesky, RejectsMismatchedShapes) {
  Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> A("A", 2, 3, 3);
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> B("B", 2, 4);
  EXPECT_THROW(batched_cholesky_solve(Kokkos::DefaultHostExecutionSpace{}, A, B), UsageError);
}

}  // namespace
