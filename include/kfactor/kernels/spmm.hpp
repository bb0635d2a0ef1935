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
///      (one launch on a device: a team thread per row, vector lanes over
///      the k columns; teams on chunks of the rows of more than
///      detail::heavy_row_nnz nonzeros, which one thread alone would
///      serialise). For the
///      row-major factors kfactor uses, Kokkos Kernels 4.7 falls back to a
///      native kernel that ran at 28 GFLOP/s on the H100 (1M nonzeros,
///      k = 128), so the portable kernel is the faster choice there.
/// A solver that multiplies on one pattern many times (implicit ALS's CG
/// half-steps) builds a kfactor::SpmmPlan once and passes it: the portable device
/// kernel's split of the long rows otherwise costs three reductions read back
/// on the host and five allocations per product, more than the product itself
/// on inputs of a few hundred thousand nonzeros. Without a plan only rows of
/// more than detail::heavy_row_nnz_unplanned nonzeros are split.
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

/// What kfactor::spmm derives from A's row offsets alone, kept across
/// products on that pattern (any values) with C of the plan's width: the rows
/// of more than detail::heavy_row_nnz nonzeros cut into chunks, the chunks'
/// partial sums and a count of finished chunks per row. Holds A's row offsets,
/// so that another pattern cannot take their address while the plan lives.
/// Products with one plan share its partial sums and counts: run them in
/// order on one execution space instance.
template <class T, class MemorySpace>
class SpmmPlan {
 public:
  SpmmPlan() = default;
  /// The plan of A's pattern for products k columns wide.
  template <class ExecutionSpace>
  SpmmPlan(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A, int k)
      : row_map_(A.row_map),
        rows_(A.num_rows()),
        cols_(A.num_cols),
        width_(k),
        work_(detail::heavy_row_work<T>(exec, A, std::size_t(k), detail::heavy_row_nnz)) {}

  /// Whether products of A (C: `k` columns) may use this plan.
  [[nodiscard]] bool fits(const CsrMatrix<T, MemorySpace>& A, std::size_t k) const {
    return row_map_.data() == A.row_map.data() && rows_ == A.num_rows() && cols_ == A.num_cols &&
           std::size_t(width_) == k;
  }
  /// A's heavy-row chunks, their partial sums and counts.
  [[nodiscard]] const detail::HeavyRowWork<T, MemorySpace>& work() const { return work_; }

 private:
  Kokkos::View<offset_t*, MemorySpace> row_map_;
  ordinal_t rows_ = 0, cols_ = 0;
  int width_ = 0;
  detail::HeavyRowWork<T, MemorySpace> work_;
};

namespace detail {
template <class T, class MemorySpace, class BV, class CV>
void check_spmm_shapes(const CsrMatrix<T, MemorySpace>& A, const BV& B, const CV& C) {
  static_assert(BV::rank() == 2 && CV::rank() == 2, "spmm takes rank-2 dense operands");
  if (static_cast<std::size_t>(A.num_cols) != B.extent(0) || static_cast<std::size_t>(A.num_rows()) != C.extent(0) ||
      B.extent(1) != C.extent(1))
    throw UsageError("spmm: A is " + std::to_string(A.num_rows()) + " x " + std::to_string(A.num_cols) + ", B is " +
                     std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)) + ", C is " +
                     std::to_string(C.extent(0)) + " x " + std::to_string(C.extent(1)));
}
}  // namespace detail

template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm(const ExecutionSpace& exec, typename CV::non_const_value_type alpha, const CsrMatrix<T, MemorySpace>& A,
          const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  detail::check_spmm_shapes(A, B, C);
  if constexpr (spmm_uses_kokkoskernels_v<BV, CV>)
    detail::spmm_kokkoskernels(exec, alpha, A, B, beta, C);
  else
    detail::spmm_portable(exec, alpha, A, B, beta, C);
}

/// The same with the plan of A's pattern (UsageError if it does not fit A
/// and C's width). Same sums in the same order as without it.
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm(const ExecutionSpace& exec, const SpmmPlan<T, MemorySpace>& plan, typename CV::non_const_value_type alpha,
          const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta, const CV& C) {
  detail::check_spmm_shapes(A, B, C);
  if (!plan.fits(A, C.extent(1)))
    throw UsageError("spmm: the plan was built for another pattern or width (C has " + std::to_string(C.extent(1)) +
                     " columns)");
  if constexpr (spmm_uses_kokkoskernels_v<BV, CV>)
    detail::spmm_kokkoskernels(exec, alpha, A, B, beta, C);
  else if constexpr (std::is_same_v<typename CV::non_const_value_type, T>)
    detail::spmm_portable(exec, alpha, A, B, beta, C, &plan.work());
  else
    detail::spmm_portable(exec, alpha, A, B, beta, C);
}

}  // namespace kfactor
