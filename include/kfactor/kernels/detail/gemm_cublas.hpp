#pragma once
/// \file
/// cuBLAS path of kfactor::gemm for the Cuda execution space, float and
/// double. Any operand with unit stride in one dimension qualifies, including
/// column blocks of a row-major matrix (ALO's tile products), which Kokkos
/// Kernels' TPL layer does not send to cuBLAS. The call runs on the execution
/// space instance's stream; the handle is created on first use and destroyed
/// before Kokkos finalizes.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/kernels/detail/blas_shape.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#if defined(KFACTOR_HAVE_CUBLAS)
#include <cublas_v2.h>
#endif

namespace kfactor::detail {

template <class ExecutionSpace, class AV, class BV, class CV>
inline constexpr bool cublas_applicable_v =
#if defined(KFACTOR_HAVE_CUBLAS)
    std::is_same_v<ExecutionSpace, Kokkos::Cuda> &&
    (std::is_same_v<typename CV::non_const_value_type, float> ||
     std::is_same_v<typename CV::non_const_value_type, double>) &&
    std::is_same_v<typename AV::non_const_value_type, typename CV::non_const_value_type> &&
    std::is_same_v<typename BV::non_const_value_type, typename CV::non_const_value_type>;
#else
    false;
#endif

#if defined(KFACTOR_HAVE_CUBLAS)
inline cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw RuntimeFailure("gemm: cublasCreate failed");
    Kokkos::push_finalize_hook([h] { cublasDestroy(h); });
    return h;
  }();
  return handle;
}

/// C = alpha op(A) op(B) + beta C through cuBLAS. Returns false (and does
/// nothing) when an operand has no unit stride; the caller then falls back.
template <class AV, class BV, class CV>
bool gemm_cublas(const Kokkos::Cuda& exec, bool ta, bool tb, typename CV::non_const_value_type alpha, const AV& A,
                 const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  using T = typename CV::non_const_value_type;
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(ta ? A.extent(0) : A.extent(1));
  if (m == 0 || n == 0) return true;
  if (k == 0) return false;  // C = beta C: the portable kernel does it without cuBLAS's ld rules
  const BlasShape sa = blas_shape(A), sb = blas_shape(B), sc = blas_shape(C);
  if (!sa.ok || !sb.ok || !sc.ok) return false;
  // cuBLAS is column-major. A row-major C is computed as C^T = op(B)^T op(A)^T.
  // An operand stored row-major is, read column-major, its own transpose.
  const bool swap = sc.row_major;
  auto op = [&](bool t, const BlasShape& s) { return (t != swap) != s.row_major ? CUBLAS_OP_T : CUBLAS_OP_N; };
  const T* first = swap ? B.data() : A.data();
  const T* second = swap ? A.data() : B.data();
  const auto op1 = swap ? op(tb, sb) : op(ta, sa);
  const auto op2 = swap ? op(ta, sa) : op(tb, sb);
  const int ld1 = swap ? sb.ld : sa.ld, ld2 = swap ? sa.ld : sb.ld;
  const int rows = swap ? n : m, cols = swap ? m : n;
  auto handle = cublas_handle();
  cublasSetStream(handle, exec.cuda_stream());
  cublasStatus_t status;
  if constexpr (std::is_same_v<T, float>)
    status = cublasSgemm(handle, op1, op2, rows, cols, k, &alpha, first, ld1, second, ld2, &beta, C.data(), sc.ld);
  else
    status = cublasDgemm(handle, op1, op2, rows, cols, k, &alpha, first, ld1, second, ld2, &beta, C.data(), sc.ld);
  if (status != CUBLAS_STATUS_SUCCESS)
    throw RuntimeFailure("gemm: cuBLAS failed with status " + std::to_string(static_cast<int>(status)) + " (" +
                         std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k) + ")");
  return true;
}
#endif

}  // namespace kfactor::detail
