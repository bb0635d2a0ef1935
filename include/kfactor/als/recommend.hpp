#pragma once
/// \file
/// Serving a factor model R ~ X Y^T (als::solve, or factor files read back):
/// top-N items per user, similar items or users by cosine similarity, and
/// factor rows for users that were not in the training data (fold-in).
///
/// recommend() scores a batch of users against every item with one GEMM
/// (kfactor::gemm) at a time, so no users x items matrix is ever held: a
/// batch holds at most `max_batch_bytes` of scores (0: 32 MiB on hosts,
/// 1 GiB on devices; at least one user). Then each user's row is reduced to
/// its N best items on the device (detail/top_n.hpp: higher score first, the
/// lower item index among equal scores, so results are deterministic and do
/// not depend on the batch size or the backend's team shape). Items a user
/// already has (its row of a `seen` matrix, typically the training
/// interactions) are scored -inf before the selection and never returned.
/// Each user gets min(N, items) items, or all its unexcluded items when
/// fewer; N larger than the item count is clamped to it, N < 1 is a
/// UsageError.

#include <kfactor/als/als.hpp>
#include <kfactor/als/detail/top_n.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::als {

/// The N best items for each of `user_rows` (rows of X): row b of the result
/// ranks items for user user_rows[b] by x_u . y_i (file comment). `seen`
/// (X's rows x Y's rows; null: nothing excluded) lists the items to leave
/// out per user. UsageError for N < 1, a row outside X, mismatched ranks or
/// a `seen` of another shape.
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> recommend(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& X,
                               const DenseMatrix<T, MemorySpace>& Y, const std::vector<ordinal_t>& user_rows, int N,
                               const CsrMatrix<T, MemorySpace>* seen = nullptr, std::size_t max_batch_bytes = 0) {
  if (seen && seen->num_cols > ordinal_t(Y.extent(0)))
    throw UsageError("recommend: the seen items have " + std::to_string(seen->num_cols) + " columns, more than the " +
                     std::to_string(Y.extent(0)) + " items");
  return detail::top_n(exec, X, Y, user_rows, N, detail::Exclusions<T, MemorySpace>{seen, false}, max_batch_bytes);
}

/// F with each row scaled to unit Euclidean norm (norms in double); a zero
/// row stays zero.
template <class ExecutionSpace, class T, class MemorySpace>
DenseMatrix<T, MemorySpace> normalize_rows(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& F) {
  DenseMatrix<T, MemorySpace> out(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::normalized"),
                                  F.extent(0), F.extent(1));
  Kokkos::parallel_for(
      "kfactor::als::normalize_rows", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, F.extent(0)),
      KOKKOS_LAMBDA(std::size_t r) {
        double s = 0.0;
        for (std::size_t k = 0; k < F.extent(1); ++k) s += double(F(r, k)) * double(F(r, k));
        const double inv = s > 0.0 ? 1.0 / Kokkos::sqrt(s) : 0.0;
        for (std::size_t k = 0; k < F.extent(1); ++k) out(r, k) = T(double(F(r, k)) * inv);
      });
  return out;
}

/// The N rows of F most similar to each of `rows` by cosine similarity
/// (rows normalized once; a zero row has similarity 0 with every row),
/// the row itself excluded; ordered as recommend(). UsageError for N < 1 or
/// a row outside F.
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> similar_rows(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& F,
                                  const std::vector<ordinal_t>& rows, int N, std::size_t max_batch_bytes = 0) {
  const auto U = normalize_rows(exec, F);
  return detail::top_n(exec, U, U, rows, N, detail::Exclusions<T, MemorySpace>{nullptr, true}, max_batch_bytes);
}

/// similar_rows of the item factor Y: items like each of `item_rows`.
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> similar_items(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& Y,
                                   const std::vector<ordinal_t>& item_rows, int N, std::size_t max_batch_bytes = 0) {
  return similar_rows(exec, Y, item_rows, N, max_batch_bytes);
}

/// similar_rows of the user factor X: users like each of `user_rows`.
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> similar_users(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& X,
                                   const std::vector<ordinal_t>& user_rows, int N, std::size_t max_batch_bytes = 0) {
  return similar_rows(exec, X, user_rows, N, max_batch_bytes);
}

/// Factor rows for new users from their interactions (row u of
/// `interactions`: user u's ratings or counts over Y's items) with Y fixed:
/// one user half-step of ALS under `options` (explicit or implicit, its
/// lambda, weighting and confidence; the solver's own code, on CSR), so a
/// training user folded in with its training row gets the row the solver's
/// next user half-step would give it. With options.solver cg the steps start
/// from zero rows (the solver starts from its current X). A user without
/// interactions gets the zero row. UsageError when options.rank is not Y's
/// rank or an item index is outside Y; InputError as make_problem (NaN,
/// duplicate pairs; implicit: negative counts).
template <class ExecutionSpace, class T, class MemorySpace>
DenseMatrix<T, MemorySpace> fold_in(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& Y,
                                    const Options& options, const CooMatrix<T>& interactions) {
  Options o = options;
  o.layout = Layout::csr;  // one half-step: a tile would not repay its build
  o.xb = o.yb = 0;
  o.reorder = false;
  o.validate();
  if (std::size_t(o.rank) != Y.extent(1))
    throw UsageError("fold_in: options.rank " + std::to_string(o.rank) + " differs from Y's rank " +
                     std::to_string(Y.extent(1)));
  if (interactions.num_cols > std::int64_t(Y.extent(0)))
    throw UsageError("fold_in: the interactions have " + std::to_string(interactions.num_cols) +
                     " columns, more than Y's " + std::to_string(Y.extent(0)) + " items");
  DenseMatrix<T, MemorySpace> X("kfactor::als::fold_in", std::size_t(interactions.num_rows), Y.extent(1));
  bool any = false;
  for (const T v : interactions.values) any = any || v != T(0);
  if (!any) return X;  // nothing to fold in: every row is the zero row
  CooMatrix<T> R = interactions;
  R.num_cols = std::int64_t(Y.extent(0));
  const auto problem = make_problem(exec, R, 0.0, 0);
  const auto plan = prepare(exec, problem, o);
  detail::Workspace<T, MemorySpace> ws;
  detail::plan_half_step(exec, detail::Side::users, *plan, Y, X, ws);
  exec.fence();
  return X;
}

}  // namespace kfactor::als
