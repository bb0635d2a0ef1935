#pragma once
/// \file
/// C = alpha * A * B + beta * C with A a kfactor::CsrMatrix (m x n) and B
/// (n x k), C (m x k) dense rank-2 Views (row-major is the layout the portable
/// kernel is written for; any layout is correct). Dispatch, decided at compile
/// time like kernels/gemm.hpp:
///   1. Kokkos Kernels (KokkosSparse::spmv on multivectors) when kfactor was
///      configured with it and B and C are column-major, the layout its
///      vendor (cuSPARSE) path takes;
///   2. the portable Kokkos kernel in detail/spmm_portable.hpp otherwise
///      (team per chunk of rows, vector lanes over the k columns; a team per
///      row for rows of more than 512 nonzeros, the popular columns of
///      power-law inputs, which one thread alone would serialise). For the
///      row-major factors kfactor uses, Kokkos Kernels 4.7 falls back to a
///      native kernel that ran at 28 GFLOP/s on the H100 (1M nonzeros,
///      k = 128), so the portable kernel is the faster choice there.
/// A^T * B is not offered: the transposed product scatters (atomics on a GPU,
/// nondeterministic sums); callers that need it store kfactor::transpose(A)
/// once and call spmm on it (what kfactor::nmf does).

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/spmm_kokkoskernels.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <string>
#include <type_traits>

namespace kfactor {

template <class BV, class CV>
inline constexpr bool spmm_uses_kokkoskernels_v =
#if defined(KFACTOR_HAVE_KOKKOSKERNELS)
    std::is_same_v<typename BV::array_layout, Kokkos::LayoutLeft> &&
    std::is_same_v<typename CV::array_layout, Kokkos::LayoutLeft>;
#else
    false;
#endif

/// Which implementation kfactor::spmm uses for these dense operand types.
template <class BV, class CV>
std::string spmm_path() {
  return spmm_uses_kokkoskernels_v<BV, CV> ? "kokkos-kernels" : "portable";
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
  if constexpr (spmm_uses_kokkoskernels_v<BV, CV>)
    detail::spmm_kokkoskernels(exec, alpha, A, B, beta, C);
  else
    detail::spmm_portable(exec, alpha, A, B, beta, C);
}

}  // namespace kfactor
