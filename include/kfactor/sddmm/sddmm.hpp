#pragma once
/// \file
/// Sampled dense-dense matrix multiplication (cuSDDMM, Nisa et al. 2018, plus
/// a load-balanced row-split kernel), the module's public entry:
///
///   kfactor::sddmm(exec, S, A, B, out)           out_e = s_e <A_i, B_j>
///   kfactor::sddmm_unscaled(exec, S, A, B, out)  out_e = <A_i, B_j> at every stored (i, j)
///   kfactor::SddmmPlan<Space, T, TI>             build once from S, apply many times
///   kfactor::sddmm_autotune(...)                 search around the model's choice
///   kfactor::balanced_column_blocks(...)         the distributed split of S's columns
///
/// S is a CSR (M x N) with sorted rows; A (M x K) and B (N x K) are row-major
/// (kfactor::DenseMatrix); out has one entry per stored nonzero in S's order,
/// so (S.row_map, S.entries, out) is the result P. Negative values and
/// explicit zeros of S are nonzeros like any other. GFLOP/s convention:
/// 2 K nnz / t (the scaling multiply is not counted).
///
/// Errors: UsageError for shape mismatches and K = 0; InputError for NaN/Inf
/// in S, A or B and for malformed patterns (out-of-range or unsorted column
/// indices).

#include <kfactor/kernels/sddmm.hpp>
#include <kfactor/sddmm/autotune.hpp>
#include <kfactor/sddmm/options.hpp>
#include <kfactor/sddmm/partition.hpp>
#include <kfactor/sddmm/plan.hpp>

namespace kfactor {

/// One-shot SDDMM (builds a plan and applies it once). Callers that apply
/// one pattern many times should keep a SddmmPlan instead.
template <class ExecutionSpace, class T, class Mem, class AV, class BV>
void sddmm(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& S, const AV& A, const BV& B,
           const Kokkos::View<T*, Mem>& out, const SddmmOptions& options = {}) {
  using TI = typename AV::non_const_value_type;
  detail::check_sddmm_shapes(S, A, B, out);
  SddmmPlan<ExecutionSpace, T, TI> plan(exec, S, static_cast<int>(A.extent(1)), options);
  plan(exec, A, B, out, true);
}

/// Unscaled variant: the dot product at every structural nonzero.
template <class ExecutionSpace, class T, class Mem, class AV, class BV>
void sddmm_unscaled(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& S, const AV& A, const BV& B,
                    const Kokkos::View<T*, Mem>& out, const SddmmOptions& options = {}) {
  using TI = typename AV::non_const_value_type;
  detail::check_sddmm_shapes(S, A, B, out);
  SddmmPlan<ExecutionSpace, T, TI> plan(exec, S, static_cast<int>(A.extent(1)), options);
  plan(exec, A, B, out, false);
}

/// P = S o (A B^T) as a CSR sharing S's row map and column indices.
template <class ExecutionSpace, class T, class Mem, class AV, class BV>
CsrMatrix<T, Mem> sddmm(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& S, const AV& A, const BV& B,
                        const SddmmOptions& options = {}) {
  Kokkos::View<T*, Mem> out(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::sddmm_out"), S.nnz());
  sddmm(exec, S, A, B, out, options);
  return CsrMatrix<T, Mem>(S.row_map, S.entries, out, S.num_cols);
}

}  // namespace kfactor
