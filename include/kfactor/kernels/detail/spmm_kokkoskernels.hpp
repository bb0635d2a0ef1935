#pragma once
/// \file
/// Kokkos Kernels path of kfactor::spmm: wraps kfactor's CSR (same members as
/// KokkosSparse::CrsMatrix) without copies and calls KokkosSparse::spmv with
/// rank-2 (multivector) operands, which is cuSPARSE SpMM on CUDA.

#include <kfactor/config.hpp>
#include <kfactor/core/matrix.hpp>

#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
#include <KokkosSparse_CrsMatrix.hpp>
#include <KokkosSparse_spmv.hpp>
#endif

namespace kfactor::detail {

#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_kokkoskernels(const ExecutionSpace& exec, typename CV::non_const_value_type alpha,
                        const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta,
                        const CV& C) {
  using Device = Kokkos::Device<ExecutionSpace, MemorySpace>;
  using Matrix = KokkosSparse::CrsMatrix<T, ordinal_t, Device, void, offset_t>;
  const Matrix M("kfactor::spmm", A.num_rows(), A.num_cols, static_cast<offset_t>(A.nnz()), A.values, A.row_map,
                 A.entries);
  KokkosSparse::spmv(exec, "N", alpha, M, B, beta, C);
}
#else
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_kokkoskernels(const ExecutionSpace&, typename CV::non_const_value_type, const CsrMatrix<T, MemorySpace>&,
                        const BV&, typename CV::non_const_value_type, const CV&) {
  static_assert(sizeof(BV) == 0, "spmm_kokkoskernels needs a build with Kokkos Kernels");
}
#endif

}  // namespace kfactor::detail
