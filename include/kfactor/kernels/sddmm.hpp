#pragma once
/// \file
/// SDDMM building blocks: out_e = s_e * <A_i, B_j> at every stored nonzero
/// e = (i, j) of a CSR S (M x N), with A (M x K) and B (N x K) row-major.
///
/// Layout: A and B are LayoutRight (one row of K features contiguous) because
/// every kernel reads whole rows per nonzero; `out` holds one value per stored
/// nonzero, in S's CSR order (so (S.row_map, S.entries, out) is the CSR of P).
///
/// This header holds the plain reference kernel (one thread per nonzero) and
/// the launchers of the tuned kernels (detail/sddmm_kernels.hpp). The planned,
/// tuned entry points are in kfactor/sddmm/sddmm.hpp (kfactor::sddmm,
/// kfactor::SddmmPlan).

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>
#include <kfactor/kernels/detail/sddmm_traits.hpp>

#include <string>

namespace kfactor {

namespace detail {

/// Shape checks shared by every SDDMM entry point (UsageError on mismatch).
template <class T, class Mem, class AV, class BV, class OV>
void check_sddmm_shapes(const CsrMatrix<T, Mem>& S, const AV& A, const BV& B, const OV& out) {
  const auto m = static_cast<std::size_t>(S.num_rows()), n = static_cast<std::size_t>(S.num_cols);
  if (A.extent(1) == 0 || B.extent(1) == 0)
    throw UsageError("sddmm: K (the columns of A and B) must be >= 1, got " + std::to_string(A.extent(1)));
  if (A.extent(0) != m || B.extent(0) != n || A.extent(1) != B.extent(1))
    throw UsageError("sddmm: S is " + std::to_string(m) + " x " + std::to_string(n) + " but A is " +
                     std::to_string(A.extent(0)) + " x " + std::to_string(A.extent(1)) + " and B is " +
                     std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)) + " (need A: M x K, B: N x K)");
  if (out.extent(0) != S.nnz())
    throw UsageError("sddmm: out has " + std::to_string(out.extent(0)) + " entries, S has " + std::to_string(S.nnz()) +
                     " nonzeros");
}

}  // namespace detail

/// Reference SDDMM: one thread per nonzero, no tiling. `scaled` false gives
/// the unscaled variant (the dot product at every structural nonzero,
/// whatever s_e is, zero and negative included).
template <class ExecutionSpace, class T, class Mem, class AV, class BV>
void sddmm_reference(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& S, const AV& A, const BV& B,
                     const Kokkos::View<T*, Mem>& out, bool scaled = true) {
  using TI = typename AV::non_const_value_type;
  static_assert(std::is_same_v<TI, typename BV::non_const_value_type>, "sddmm: A and B need one element type");
  detail::check_sddmm_shapes(S, A, B, out);
  detail::sddmm_reference_kernel<ExecutionSpace, T, TI, Mem>(
      exec, S.row_map, S.entries, S.values, Kokkos::View<const TI**, Kokkos::LayoutRight, Mem>(A),
      Kokkos::View<const TI**, Kokkos::LayoutRight, Mem>(B), out, scaled);
}

}  // namespace kfactor
