#pragma once
/// \file
/// C = alpha * A * B + beta * C with A a kfactor::CsrMatrix (m x n) and B
/// (n x k), C (m x k) dense rank-2 Views (row-major is the layout the portable
/// kernel is written for; any layout is correct). Dispatch, decided at compile
/// time like kernels/gemm.hpp:
///   1. Kokkos Kernels (KokkosSparse::spmv on multivectors, cuSPARSE SpMM on
///      CUDA) when kfactor was configured with it;
///   2. the portable Kokkos kernel in detail/spmm_portable.hpp otherwise
///      (team per chunk of rows, vector lanes over the k columns).
/// A^T * B is not offered: the transposed product scatters (atomics on a GPU,
/// nondeterministic sums); callers that need it store kfactor::transpose(A)
/// once and call spmm on it (what kfactor::nmf does).

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/spmm_kokkoskernels.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <string>

namespace kfactor {

/// Which implementation kfactor::spmm uses in this build.
inline std::string spmm_path() {
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
  return "kokkos-kernels";
#else
  return "portable";
#endif
}

template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm(const ExecutionSpace& exec, typename CV::non_const_value_type alpha, const CsrMatrix<T, MemorySpace>& A,
          const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  static_assert(BV::rank() == 2 && CV::rank() == 2, "spmm takes rank-2 dense operands");
  if (static_cast<std::size_t>(A.num_cols) != B.extent(0) || static_cast<std::size_t>(A.num_rows()) != C.extent(0) ||
      B.extent(1) != C.extent(1))
    throw UsageError("spmm: A is " + std::to_string(A.num_rows()) + " x " + std::to_string(A.num_cols) + ", B is " +
                     std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)) + ", C is " +
                     std::to_string(C.extent(0)) + " x " + std::to_string(C.extent(1)));
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
  detail::spmm_kokkoskernels(exec, alpha, A, B, beta, C);
#else
  detail::spmm_portable(exec, alpha, A, B, beta, C);
#endif
}

}  // namespace kfactor
