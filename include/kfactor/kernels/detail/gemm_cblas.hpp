#pragma once
/// \file
/// Host CBLAS (OpenBLAS) path of kfactor::gemm, for host execution spaces
/// with contiguous float or double operands in LayoutRight or LayoutLeft.

#include <kfactor/config.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

#if defined(KFACTOR_HAVE_CBLAS)
#include <cblas.h>
#endif

namespace kfactor::detail {

template <class V>
inline constexpr bool is_blas_layout_v = std::is_same_v<typename V::array_layout, Kokkos::LayoutRight> ||
                                         std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft>;

template <class ExecutionSpace, class AV, class BV, class CV>
inline constexpr bool cblas_applicable_v =
#if defined(KFACTOR_HAVE_CBLAS)
    is_host_space_v<ExecutionSpace> &&
    (std::is_same_v<typename CV::non_const_value_type, float> ||
     std::is_same_v<typename CV::non_const_value_type, double>) &&
    std::is_same_v<typename AV::non_const_value_type, typename CV::non_const_value_type> &&
    std::is_same_v<typename BV::non_const_value_type, typename CV::non_const_value_type> &&
    is_blas_layout_v<AV> && is_blas_layout_v<BV> && is_blas_layout_v<CV>;
#else
    false;
#endif

#if defined(KFACTOR_HAVE_CBLAS)
/// Leading dimension of a contiguous rank-2 view in the layout it has.
template <class V>
int blas_ld(const V& X) {
  if constexpr (std::is_same_v<typename V::array_layout, Kokkos::LayoutRight>)
    return static_cast<int>(X.extent(1) > 0 ? X.stride(0) : 1);
  else
    return static_cast<int>(X.extent(0) > 0 ? X.stride(1) : 1);
}

/// Expresses every operand in C's layout order: a LayoutLeft operand seen from
/// a row-major call is the transpose of a LayoutRight one.
template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_cblas(const ExecutionSpace& exec, bool ta, bool tb, typename CV::non_const_value_type alpha, const AV& A,
                const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  using T = typename CV::non_const_value_type;
  constexpr bool c_right = std::is_same_v<typename CV::array_layout, Kokkos::LayoutRight>;
  constexpr bool a_right = std::is_same_v<typename AV::array_layout, Kokkos::LayoutRight>;
  constexpr bool b_right = std::is_same_v<typename BV::array_layout, Kokkos::LayoutRight>;
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(ta ? A.extent(0) : A.extent(1));
  if (m == 0 || n == 0) return;
  exec.fence();  // operands may still be written by earlier kernels
  const auto order = c_right ? CblasRowMajor : CblasColMajor;
  const auto tA = (ta != (a_right != c_right)) ? CblasTrans : CblasNoTrans;
  const auto tB = (tb != (b_right != c_right)) ? CblasTrans : CblasNoTrans;
  const int lda = blas_ld(A), ldb = blas_ld(B), ldc = blas_ld(C);
  if (k == 0) {
    // BLAS needs lda >= 1; with an empty inner dimension C = beta * C.
    Kokkos::parallel_for(
        "kfactor::gemm_scale", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {m, n}),
        KOKKOS_LAMBDA(int i, int j) { C(i, j) = beta == T(0) ? T(0) : beta * C(i, j); });
    exec.fence();
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(order, tA, tB, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  else
    cblas_dgemm(order, tA, tB, m, n, k, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
}
#else
template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_cblas(const ExecutionSpace&, bool, bool, typename CV::non_const_value_type, const AV&, const BV&,
                typename CV::non_const_value_type, const CV&) {
  static_assert(sizeof(AV) == 0, "gemm_cblas needs a build with CBLAS");
}
#endif

}  // namespace kfactor::detail
