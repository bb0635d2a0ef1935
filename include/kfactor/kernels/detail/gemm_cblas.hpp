#pragma once
/// \file
/// Host CBLAS (OpenBLAS) path of kfactor::gemm, for host execution spaces
/// with float or double operands that have a unit stride in one dimension.

#include <kfactor/config.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/blas_shape.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

#if defined(KFACTOR_HAVE_CBLAS)
#include <cblas.h>
#endif

namespace kfactor::detail {

template <class ExecutionSpace, class AV, class BV, class CV>
inline constexpr bool cblas_applicable_v =
#if defined(KFACTOR_HAVE_CBLAS)
    is_host_space_v<ExecutionSpace> &&
    (std::is_same_v<typename CV::non_const_value_type, float> ||
     std::is_same_v<typename CV::non_const_value_type, double>) &&
    std::is_same_v<typename AV::non_const_value_type, typename CV::non_const_value_type> &&
    std::is_same_v<typename BV::non_const_value_type, typename CV::non_const_value_type>;
#else
    false;
#endif

#if defined(KFACTOR_HAVE_CBLAS)
/// C = alpha op(A) op(B) + beta C through CBLAS, in C's storage order (an
/// operand stored the other way is its own transpose). Returns false (and
/// does nothing) when an operand has no unit stride; the caller falls back.
template <class ExecutionSpace, class AV, class BV, class CV>
bool gemm_cblas(const ExecutionSpace& exec, bool ta, bool tb, typename CV::non_const_value_type alpha, const AV& A,
                const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  using T = typename CV::non_const_value_type;
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(ta ? A.extent(0) : A.extent(1));
  if (m == 0 || n == 0) return true;
  const BlasShape sa = blas_shape(A), sb = blas_shape(B), sc = blas_shape(C);
  if (!sa.ok || !sb.ok || !sc.ok) return false;
  exec.fence();  // operands may still be written by earlier kernels
  if (k == 0) {
    // BLAS needs lda >= 1; with an empty inner dimension C = beta * C.
    Kokkos::parallel_for(
        "kfactor::gemm_scale", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {m, n}),
        KOKKOS_LAMBDA(int i, int j) { C(i, j) = beta == T(0) ? T(0) : beta * C(i, j); });
    exec.fence();
    return true;
  }
  const auto order = sc.row_major ? CblasRowMajor : CblasColMajor;
  const auto tA = (ta != (sa.row_major != sc.row_major)) ? CblasTrans : CblasNoTrans;
  const auto tB = (tb != (sb.row_major != sc.row_major)) ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(order, tA, tB, m, n, k, alpha, A.data(), sa.ld, B.data(), sb.ld, beta, C.data(), sc.ld);
  else
    cblas_dgemm(order, tA, tB, m, n, k, alpha, A.data(), sa.ld, B.data(), sb.ld, beta, C.data(), sc.ld);
  return true;
}

/// G = X^T X (K x K) through CBLAS syrk: one triangle (half of gemm's
/// flops), then mirrored so G is a full symmetric matrix. Returns false when
/// X or G has no unit stride.
template <class ExecutionSpace, class XV, class GV>
bool gram_cblas(const ExecutionSpace& exec, const XV& X, const GV& G) {
  using T = typename GV::non_const_value_type;
  const int n = static_cast<int>(X.extent(0)), K = static_cast<int>(X.extent(1));
  const BlasShape sx = blas_shape(X), sg = blas_shape(G);
  if (!sx.ok || !sg.ok || n == 0 || K == 0) return false;
  exec.fence();
  // In X's storage order: X^T X is syrk with trans = T for row-major X.
  const auto order = sx.row_major ? CblasRowMajor : CblasColMajor;
  const auto order_g = sg.row_major ? CblasRowMajor : CblasColMajor;
  if (order != order_g) return false;
  if constexpr (std::is_same_v<T, float>)
    cblas_ssyrk(order, CblasUpper, CblasTrans, K, n, 1.0f, X.data(), sx.ld, 0.0f, G.data(), sg.ld);
  else
    cblas_dsyrk(order, CblasUpper, CblasTrans, K, n, 1.0, X.data(), sx.ld, 0.0, G.data(), sg.ld);
  // K^2 / 2 copies on the calling thread: a parallel launch (waking the
  // pool's threads) cost more than the copies for the ranks NMF uses.
  for (int i = 1; i < K; ++i)
    for (int j = 0; j < i; ++j) G(i, j) = G(j, i);
  return true;
}
#endif

}  // namespace kfactor::detail
