#include <kfactor/core/random.hpp>
#include <kfactor/kernels/gemm.hpp>

#include "common/test_spaces.hpp"

#include <cmath>

namespace {
using namespace kfactor;

template <class P>
class GemmTest : public ::testing::Test {};
TYPED_TEST_SUITE(GemmTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// Every path (dispatch, portable, and cblas where it applies) against a
// float64 host reference, for all transposes, odd shapes, alpha and beta.
TYPED_TEST(GemmTest, AllPathsMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int m = 37, n = 21, k = 19;
  const T alpha = T(-1.25), beta = T(0.5);
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Kokkos::View<T**, Kokkos::LayoutRight, Mem> A("A", ta ? k : m, ta ? m : k);
      Kokkos::View<T**, Kokkos::LayoutLeft, Mem> B("B", tb ? n : k, tb ? k : n);
      Kokkos::View<T**, Kokkos::LayoutRight, Mem> C0("C0", m, n);
      fill_uniform(exec, A, 1, RngStream::user, T(-1), T(1));
      fill_uniform(exec, B, 2, RngStream::user, T(-1), T(1));
      fill_uniform(exec, C0, 3, RngStream::user, T(-1), T(1));
      auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
      auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
      auto hC0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C0);
      auto check = [&](auto&& run, const char* path) {
        Kokkos::View<T**, Kokkos::LayoutRight, Mem> C("C", m, n);
        Kokkos::deep_copy(C, C0);
        run(C);
        auto hC = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double s = 0;
            for (int l = 0; l < k; ++l) s += double(ta ? hA(l, i) : hA(i, l)) * double(tb ? hB(j, l) : hB(l, j));
            const double ref = double(alpha) * s + double(beta) * hC0(i, j);
            ASSERT_NEAR(hC(i, j), ref, tol * (1 + std::abs(ref))) << path << " ta=" << ta << " tb=" << tb;
          }
      };
      const Trans opa = ta ? Trans::transpose : Trans::none, opb = tb ? Trans::transpose : Trans::none;
      check([&](auto& C) { gemm(exec, opa, opb, alpha, A, B, beta, C); }, "dispatch");
      check([&](auto& C) { detail::gemm_portable(exec, ta, tb, alpha, A, B, beta, C); }, "portable");
      if constexpr (detail::cblas_applicable_v<Space, decltype(A), decltype(B), decltype(A)>)
        check([&](auto& C) { detail::gemm_cblas(exec, ta, tb, alpha, A, B, beta, C); }, "cblas");
    }
}

TEST(Gemm, ShapeMismatchIsAUsageError) {
  DenseMatrix<double> A("A", 3, 4), B("B", 5, 2), C("C", 3, 2);
  EXPECT_THROW(gemm(Kokkos::DefaultExecutionSpace{}, Trans::none, Trans::none, 1.0, A, B, 0.0, C), UsageError);
}

}  // namespace
