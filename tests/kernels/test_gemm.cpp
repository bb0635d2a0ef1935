#include <kfactor/core/random.hpp>
#include <kfactor/kernels/gemm.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

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
#if defined(KFACTOR_HAVE_CBLAS)
      if constexpr (detail::cblas_applicable_v<Space, decltype(A), decltype(B), decltype(A)>)
        check([&](auto& C) { ASSERT_TRUE(detail::gemm_cblas(exec, ta, tb, alpha, A, B, beta, C)); }, "cblas");
#endif
#if defined(KFACTOR_HAVE_CUBLAS)
      if constexpr (detail::cublas_applicable_v<Space, decltype(A), decltype(B), decltype(A)>)
        check([&](auto& C) { ASSERT_TRUE(detail::gemm_cublas(exec, ta, tb, alpha, A, B, beta, C)); }, "cublas");
#endif
    }
}

// Column blocks of row-major factors (strided views), alpha -1 and beta 1,
// output aliasing the parent of an input, block widths 1 and wider, every
// path.
TYPED_TEST(GemmTest, ColumnBlocksOfRowMajorFactors) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  using Kokkos::ALL;
  using Kokkos::make_pair;
  const Space exec;
  const int m = 45, K = 13;
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> X0("X0", m, K), G("G", K, K);
  fill_uniform(exec, X0, 4, RngStream::user, T(0), T(1));
  fill_uniform(exec, G, 5, RngStream::user, T(-1), T(1));
  auto hX0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X0);
  auto hG = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, G);
  for (int width : {1, 3, 5})
    for (int t0 : {width, 2 * width}) {
      const int t1 = std::min(K, t0 + width);
      auto run_path = [&](auto&& product, const char* path) {
        Kokkos::View<T**, Kokkos::LayoutRight, Mem> X("X", m, K);
        Kokkos::deep_copy(X, X0);
        // Phase-1 shape: X[:, 0:t0) -= X0[:, t0:t1) G[t0:t1, 0:t0); phase-3
        // shape: X[:, t1:K) -= X[:, t0:t1) G[t0:t1, t1:K) (same parent).
        product(Kokkos::subview(X0, ALL, make_pair(t0, t1)), Kokkos::subview(G, make_pair(t0, t1), make_pair(0, t0)),
                Kokkos::subview(X, ALL, make_pair(0, t0)));
        product(Kokkos::subview(X, ALL, make_pair(t0, t1)), Kokkos::subview(G, make_pair(t0, t1), make_pair(t1, K)),
                Kokkos::subview(X, ALL, make_pair(t1, K)));
        auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < K; ++j) {
            double ref = hX0(i, j);
            if (j < t0)
              for (int l = t0; l < t1; ++l) ref -= double(hX0(i, l)) * double(hG(l, j));
            if (j >= t1)
              for (int l = t0; l < t1; ++l) ref -= double(hX0(i, l)) * double(hG(l, j));
            ASSERT_NEAR(hX(i, j), ref, tol * (1 + std::abs(ref))) << path << " width " << width << " t0 " << t0;
          }
      };
      run_path([&](const auto& A, const auto& B,
                   const auto& C) { gemm(exec, Trans::none, Trans::none, T(-1), A, B, T(1), C); },
               "dispatch");
      run_path([&](const auto& A, const auto& B,
                   const auto& C) { detail::gemm_portable(exec, false, false, T(-1), A, B, T(1), C); },
               "portable");
#if defined(KFACTOR_HAVE_CBLAS)
      if constexpr (detail::cblas_applicable_v<Space, decltype(X0), decltype(G), decltype(X0)>)
        run_path([&](const auto& A, const auto& B,
                     const auto& C) { ASSERT_TRUE(detail::gemm_cblas(exec, false, false, T(-1), A, B, T(1), C)); },
                 "cblas");
#endif
#if defined(KFACTOR_HAVE_CUBLAS)
      if constexpr (detail::cublas_applicable_v<Space, decltype(X0), decltype(G), decltype(X0)>)
        run_path([&](const auto& A, const auto& B,
                     const auto& C) { ASSERT_TRUE(detail::gemm_cublas(exec, false, false, T(-1), A, B, T(1), C)); },
                 "cublas");
#endif
    }
}

// ALO's tile products (nmf/detail/nmf_impl.hpp alo_update): the device form
// Acc = X N[:, t0:t1) and the host form At = B^T + N[:, t0:t1)^T X^T (both
// operands transposed, beta 1), for tiles of width 1, a divisor and the
// clamped last tile, through the dispatch.
TYPED_TEST(GemmTest, AloTileProducts) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  using Kokkos::ALL;
  using Kokkos::make_pair;
  const Space exec;
  const int n = 41, K = 11;
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> X("X", n, K), N("N", K, K);
  fill_uniform(exec, X, 6, RngStream::user, T(0), T(1));
  fill_uniform(exec, N, 7, RngStream::user, T(-1), T(1));
  auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  auto hN = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, N);
  for (const auto& [t0, t1] : {std::pair{3, 4}, std::pair{4, 8}, std::pair{8, 11}}) {
    const int w = t1 - t0;
    Kokkos::View<T**, Kokkos::LayoutRight, Mem> Acc("Acc", n, w), At("At", w, n);
    fill_uniform(exec, At, 8, RngStream::user, T(-1), T(1));
    auto hAt0 = Kokkos::create_mirror(Kokkos::HostSpace{}, At);  // a copy, also on host spaces
    Kokkos::deep_copy(hAt0, At);
    const auto Nt = Kokkos::subview(N, ALL, make_pair(t0, t1));
    gemm(exec, Trans::none, Trans::none, T(1), X, Nt, T(0), Acc);
    gemm(exec, Trans::transpose, Trans::transpose, T(1), Nt, X, T(1), At);
    auto hAcc = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Acc);
    auto hAt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, At);
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < w; ++c) {
        double ref = 0;
        for (int j = 0; j < K; ++j) ref += double(hX(r, j)) * double(hN(j, t0 + c));
        ASSERT_NEAR(hAcc(r, c), ref, tol * (1 + std::abs(ref))) << "device form, tile " << t0;
        ASSERT_NEAR(hAt(c, r), ref + hAt0(c, r), tol * (1 + std::abs(ref))) << "host form, tile " << t0;
      }
  }
}

// kfactor::gram (host: syrk of one triangle, mirrored) against a float64
// reference and against gemm; exactly symmetric; on a column block too.
TYPED_TEST(GemmTest, GramIsSymmetricAndMatchesReference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int n = 53, K = 17;
  const double tol = sizeof(T) == 4 ? 1e-5 : 1e-13;
  Kokkos::View<T**, Kokkos::LayoutRight, Mem> X("X", n, K + 3), G("G", K, K), G2("G2", K, K);
  fill_uniform(exec, X, 9, RngStream::user, T(-1), T(1));
  const auto Xb = Kokkos::subview(X, Kokkos::ALL, Kokkos::make_pair(2, 2 + K));
  gram(exec, Xb, G);
  gemm(exec, Trans::transpose, Trans::none, T(1), Xb, Xb, T(0), G2);
  auto hX = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  auto hG = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, G);
  auto hG2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, G2);
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j) {
      double ref = 0;
      for (int r = 0; r < n; ++r) ref += double(hX(r, 2 + i)) * double(hX(r, 2 + j));
      ASSERT_NEAR(hG(i, j), ref, tol * (1 + std::abs(ref))) << i << "," << j;
      ASSERT_NEAR(hG(i, j), hG2(i, j), tol * (1 + std::abs(ref)));
      ASSERT_EQ(hG(i, j), hG(j, i));
    }
  EXPECT_THROW(gram(exec, Xb, Kokkos::View<T**, Kokkos::LayoutRight, Mem>("bad", K, K + 1)), UsageError);
}

// Entry (i, j) of op(A) B in float64 (A^T when ta), and the sum of its
// terms' magnitudes (the scale of its rounding).
template <class HA, class HB>
std::pair<double, double> skinny_reference(const HA& hA, const HB& hB, bool ta, int i, int j) {
  double ref = 0, mag = 0;
  for (int l = 0; l < int(hB.extent(0)); ++l) {
    const double p = double(ta ? hA(l, i) : hA(i, l)) * double(hB(l, j));
    ref += p;
    mag += std::abs(p);
  }
  return {ref, mag};
}

// kfactor::gemm_skinny (op(A) B with narrow B and C) against a float64
// reference: widths below, at and past a 16-column block and past the
// widest skinny shape (the BLAS then), row counts that leave partial blocks
// of rows and of the threads' shares, both transposes, on fresh random
// values; C's earlier contents are overwritten.
TYPED_TEST(GemmTest, SkinnyProductsMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-13;
  const int k = 203, m = 91;
  std::uint64_t seed = 20;
  for (const int n : {1, 5, 16, 37, 64, 70})
    for (const bool ta : {false, true}) {
      Kokkos::View<T**, Kokkos::LayoutRight, Mem> A("A", ta ? k : m, ta ? m : k), B("B", k, n), C("C", m, n);
      fill_uniform(exec, A, ++seed, RngStream::user, T(0), T(1));
      fill_uniform(exec, B, ++seed, RngStream::user, T(-1), T(1));
      Kokkos::deep_copy(C, T(7));
      gemm_skinny(exec, ta ? Trans::transpose : Trans::none, A, B, C);
      auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
      auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
      auto hC = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          const auto [ref, mag] = skinny_reference(hA, hB, ta, i, j);
          ASSERT_NEAR(hC(i, j), ref, tol * (1 + mag)) << "n=" << n << " ta=" << ta << " at " << i << "," << j;
        }
    }
  DenseMatrix<T, Mem> A("A", 4, 3), B("B", 5, 2), C("C", 4, 2);
  EXPECT_THROW(gemm_skinny(exec, Trans::none, A, B, C), UsageError);
}

// The host skinny kernels take the narrow operand in slices (B's rows in
// A B, C's rows in A^T B) when it exceeds a byte budget: at budgets that
// leave one, several and a partial last slice, each product matches a
// float64 reference and gives the same bits when repeated.
TYPED_TEST(GemmTest, SkinnySlicesMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  if constexpr (!is_host_space_v<Space>) {
    GTEST_SKIP() << "host kernels";
  } else {
    const Space exec;
    const double tol = sizeof(T) == 4 ? 2e-5 : 1e-13;
    const int k = 203, m = 91;
    std::uint64_t seed = 40;
    for (const int n : {5, 16, 37, 64})
      for (const bool ta : {false, true}) {
        Kokkos::View<T**, Kokkos::LayoutRight, Mem> A("A", ta ? k : m, ta ? m : k), B("B", k, n);
        fill_uniform(exec, A, ++seed, RngStream::user, T(0), T(1));
        fill_uniform(exec, B, ++seed, RngStream::user, T(-1), T(1));
        auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
        auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
        auto product = [&](std::size_t block_bytes) {
          Kokkos::View<T**, Kokkos::LayoutRight, Mem> C("C", m, n);
          Kokkos::deep_copy(C, T(7));
          if (ta)
            detail::gemm_skinny_tn(exec, A, B, C, block_bytes);
          else
            detail::gemm_skinny_nn(exec, A, B, C, block_bytes);
          return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C);
        };
        const std::size_t line = std::size_t(n) * sizeof(T);
        for (const std::size_t lines : {std::size_t(8), std::size_t(24), std::size_t(50), std::size_t(1000)}) {
          const auto C = product(lines * line), again = product(lines * line);
          for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
              const auto [ref, mag] = skinny_reference(hA, hB, ta, i, j);
              ASSERT_NEAR(C(i, j), ref, tol * (1 + mag))
                  << "n=" << n << " ta=" << ta << " slices of " << lines << " at " << i << "," << j;
              ASSERT_EQ(again(i, j), C(i, j)) << "repeated, n=" << n << " ta=" << ta << " at " << i << "," << j;
            }
        }
      }
  }
}

TEST(Gemm, ShapeMismatchIsAUsageError) {
  DenseMatrix<double> A("A", 3, 4), B("B", 5, 2), C("C", 3, 2);
  EXPECT_THROW(gemm(Kokkos::DefaultExecutionSpace{}, Trans::none, Trans::none, 1.0, A, B, 0.0, C), UsageError);
}

}  // namespace
