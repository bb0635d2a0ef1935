#pragma once
/// \file
/// C = alpha * op(A) * op(B) + beta * C for rank-2 Views, with vendor dispatch
/// decided at compile time, in this one place:
///   1. host CBLAS (OpenBLAS) for host execution spaces with float/double
///      operands that have a unit stride in one dimension (a tuned host BLAS; Kokkos Kernels' own host
///      GEMM without a BLAS TPL ran at 51 GFLOP/s on 16 cores, far below it);
///   2. cuBLAS for the Cuda space when every operand has a unit stride (column
///      blocks of row-major factors included, which Kokkos Kernels would not
///      send to cuBLAS);
///   3. Kokkos Kernels, for contiguous operands, when kfactor was configured
///      with it;
///   4. the portable Kokkos kernel in detail/gemm_portable.hpp otherwise.
/// Solvers call kfactor::gemm and never see which one ran; gemm_path() names
/// it for reports, and tests call each available path directly.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/gemm_cblas.hpp>
#include <kfactor/kernels/detail/gemm_cublas.hpp>
#include <kfactor/kernels/detail/gemm_portable.hpp>
#include <kfactor/kernels/detail/gemm_skinny.hpp>

#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
#include <KokkosBlas3_gemm.hpp>
#endif

#include <string>
#include <type_traits>

namespace kfactor {

enum class Trans : char { none = 'N', transpose = 'T' };

namespace detail {
template <class AV, class BV, class CV>
void check_gemm_shapes(Trans ta, Trans tb, const AV& A, const BV& B, const CV& C) {
  const auto m = ta == Trans::none ? A.extent(0) : A.extent(1);
  const auto k = ta == Trans::none ? A.extent(1) : A.extent(0);
  const auto kb = tb == Trans::none ? B.extent(0) : B.extent(1);
  const auto n = tb == Trans::none ? B.extent(1) : B.extent(0);
  if (k != kb || C.extent(0) != m || C.extent(1) != n)
    throw UsageError("gemm: op(A) is " + std::to_string(m) + " x " + std::to_string(k) + ", op(B) is " +
                     std::to_string(kb) + " x " + std::to_string(n) + ", C is " + std::to_string(C.extent(0)) + " x " +
                     std::to_string(C.extent(1)));
}
}  // namespace detail

/// Which implementation kfactor::gemm uses for these operand types.
template <class ExecutionSpace, class AV, class BV, class CV>
std::string gemm_path() {
  if constexpr (detail::cblas_applicable_v<ExecutionSpace, AV, BV, CV>) return "cblas";
  if constexpr (detail::cublas_applicable_v<ExecutionSpace, AV, BV, CV>) return "cublas";
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
  return "kokkos-kernels";
#else
  return "portable";
#endif
}

template <class ExecutionSpace, class AV, class BV, class CV>
void gemm(const ExecutionSpace& exec, Trans ta, Trans tb, typename CV::non_const_value_type alpha, const AV& A,
          const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  detail::check_gemm_shapes(ta, tb, A, B, C);
  const bool tA = ta == Trans::transpose, tB = tb == Trans::transpose;
#if defined(KFACTOR_HAVE_CBLAS)
  if constexpr (detail::cblas_applicable_v<ExecutionSpace, AV, BV, CV>)
    if (detail::gemm_cblas(exec, tA, tB, alpha, A, B, beta, C)) return;
#endif
#if defined(KFACTOR_HAVE_CUBLAS)
  if constexpr (detail::cublas_applicable_v<ExecutionSpace, AV, BV, CV>)
    if (detail::gemm_cublas(exec, tA, tB, alpha, A, B, beta, C)) return;
#endif
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
  // Only contiguous operands: Kokkos Kernels 4.7's gemv shortcut (n = 1)
  // computes wrong results for column blocks of row-major matrices
  // (GemmTest.ColumnBlocksOfRowMajorFactors caught it on CUDA and OpenMP).
  if (A.span_is_contiguous() && B.span_is_contiguous() && C.span_is_contiguous()) {
    const char tac = static_cast<char>(ta), tbc = static_cast<char>(tb);
    KokkosBlas::gemm(exec, &tac, &tbc, alpha, A, B, beta, C);
    return;
  }
#endif
  detail::gemm_portable(exec, tA, tB, alpha, A, B, beta, C);
}

/// C = op(A) B for a large A and a narrow B and C (C's columns: the rank of
/// a factor), op(A) = A (ta = none) or A^T, all three row-major (LayoutRight).
/// On a host space with C at most detail::skinny_max_columns wide, kernels
/// that stream A once from its own storage (detail/gemm_skinny.hpp: a BLAS
/// packs A for each such product, a copy that cost more than its kernel);
/// otherwise kfactor::gemm.
template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_skinny(const ExecutionSpace& exec, Trans ta, const AV& A, const BV& B, const CV& C) {
  using T = typename CV::non_const_value_type;
  detail::check_gemm_shapes(ta, Trans::none, A, B, C);
  if constexpr (is_host_space_v<ExecutionSpace> && std::is_same_v<typename AV::array_layout, Kokkos::LayoutRight> &&
                std::is_same_v<typename BV::array_layout, Kokkos::LayoutRight> &&
                std::is_same_v<typename CV::array_layout, Kokkos::LayoutRight>) {
    if (C.extent(1) <= std::size_t(detail::skinny_max_columns) && C.extent(0) > 0 && C.extent(1) > 0) {
      if (ta == Trans::none) {
        detail::gemm_skinny_nn(exec, A, B, C);
        return;
      }
      if (detail::gemm_skinny_tn_fits(exec, C)) {
        detail::gemm_skinny_tn(exec, A, B, C);
        return;
      }
    }
  }
  gemm(exec, ta, Trans::none, T(1), A, B, T(0), C);
}

/// G = X^T X for X (n x K) and G (K x K): the Gram matrix of X's columns,
/// exactly symmetric. Host CBLAS computes one triangle (syrk, half of gemm's
/// flops) and mirrors it; other paths run kfactor::gemm.
template <class ExecutionSpace, class XV, class GV>
void gram(const ExecutionSpace& exec, const XV& X, const GV& G) {
  detail::check_gemm_shapes(Trans::transpose, Trans::none, X, X, G);
#if defined(KFACTOR_HAVE_CBLAS)
  if constexpr (detail::cblas_applicable_v<ExecutionSpace, XV, XV, GV>)
    if (detail::gram_cblas(exec, X, G)) return;
#endif
  gemm(exec, Trans::transpose, Trans::none, typename GV::non_const_value_type(1), X, X,
       typename GV::non_const_value_type(0), G);
}

}  // namespace kfactor
