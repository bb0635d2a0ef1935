#pragma once
/// \file
/// Reference quality metrics, accumulated in double whatever the factors' type.
///
/// Factors are passed as W (m x K) and Ht (n x K), so the model is W Ht^T;
/// any layout works (an NMF H of K x n in LayoutRight is the same memory as
/// an Ht of n x K in LayoutLeft). Solvers compute their in-loop metrics more
/// cheaply from products they already have; these functions are the ground
/// truth for tests and final reports.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/range.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

namespace kfactor {

namespace detail {
template <class A, class B>
KOKKOS_INLINE_FUNCTION double row_dot(const A& W, std::size_t i, const B& Ht, std::size_t j) {
  double s = 0.0;
  for (std::size_t k = 0; k < W.extent(1); ++k) s += double(W(i, k)) * double(Ht(j, k));
  return s;
}

template <class WView, class HView>
void check_factor_shapes(std::int64_t m, std::int64_t n, const WView& W, const HView& Ht) {
  if (static_cast<std::int64_t>(W.extent(0)) != m || static_cast<std::int64_t>(Ht.extent(0)) != n ||
      W.extent(1) != Ht.extent(1))
    throw UsageError("factor shapes " + std::to_string(W.extent(0)) + " x " + std::to_string(W.extent(1)) + " and " +
                     std::to_string(Ht.extent(0)) + " x " + std::to_string(Ht.extent(1)) + " do not fit a " +
                     std::to_string(m) + " x " + std::to_string(n) + " matrix");
}

/// sum_{k,l} (W^T W)_{kl} (Ht^T Ht)_{kl} = ||W Ht^T||_F^2, in double.
template <class ExecutionSpace, class WView, class HView>
double model_norm2(const ExecutionSpace& exec, const WView& W, const HView& Ht) {
  const int K = static_cast<int>(W.extent(1));
  using Team = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  double total = 0.0;
  // One team per (k, l) pair with k <= l; each reduces both Gram entries.
  Kokkos::parallel_reduce(
      "kfactor::model_norm2", Kokkos::TeamPolicy<ExecutionSpace>(exec, K * K, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team& team, double& acc) {
        const int k = team.league_rank() / K, l = team.league_rank() % K;
        if (l < k) return;
        double gw = 0.0, gh = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, W.extent(0)),
            [&](std::size_t i, double& s) { s += double(W(i, k)) * double(W(i, l)); }, gw);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, Ht.extent(0)),
            [&](std::size_t j, double& s) { s += double(Ht(j, k)) * double(Ht(j, l)); }, gh);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { acc += (k == l ? 1.0 : 2.0) * gw * gh; });
      },
      total);
  return total;
}
}  // namespace detail

/// ||A - W Ht^T||_F / ||A||_F for dense A, streamed without forming W Ht^T.
template <class ExecutionSpace, class AView, class WView, class HView>
double relative_error(const ExecutionSpace& exec, const AView& A, const WView& W, const HView& Ht) {
  static_assert(AView::rank() == 2, "dense A must be rank 2");
  detail::check_factor_shapes(A.extent(0), A.extent(1), W, Ht);
  double num = 0.0, den = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::relative_error_dense",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {A.extent(0), A.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j, double& n, double& d) {
        const double a = A(i, j);
        const double r = a - detail::row_dot(W, i, Ht, j);
        n += r * r;
        d += a * a;
      },
      num, den);
  if (den == 0.0) throw InputError("relative error is undefined for an all-zero matrix");
  return std::sqrt(num / den);
}

/// ||A - W Ht^T||_F / ||A||_F for sparse A (every unstored entry is zero):
/// sum over nonzeros of (a - w.h)^2 - (w.h)^2, plus ||W Ht^T||^2 from the two
/// K x K Grams. The last term cancels against the others when the error is
/// small; in double it is exact to about 1e-7 relative.
template <class ExecutionSpace, class T, class MemorySpace, class WView, class HView>
double relative_error(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A, const WView& W, const HView& Ht) {
  detail::check_factor_shapes(A.num_rows(), A.num_cols, W, Ht);
  auto row_map = A.row_map;
  auto entries = A.entries;
  auto values = A.values;
  double num = 0.0, den = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::relative_error_sparse", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.num_rows()),
      KOKKOS_LAMBDA(ordinal_t i, double& n, double& d) {
        for (auto e = row_map(i); e < row_map(i + 1); ++e) {
          const double a = values(e);
          const double p = detail::row_dot(W, i, Ht, entries(e));
          n += (a - p) * (a - p) - p * p;
          d += a * a;
        }
      },
      num, den);
  if (den == 0.0) throw InputError("relative error is undefined for an all-zero matrix");
  num += detail::model_norm2(exec, W, Ht);
  return std::sqrt(Kokkos::max(num, 0.0) / den);
}

/// Root-mean-square and mean absolute error of the predictions at the
/// stored entries of a rating matrix R.
struct RatingErrors {
  double rmse = 0.0;
  double mae = 0.0;
  std::size_t count = 0;
};

/// `predictions`: one per stored entry of R, in R's order (the solvers
/// compute them with an SDDMM on R's pattern, kfactor::sddmm_unscaled).
template <class ExecutionSpace, class T, class MemorySpace>
RatingErrors rating_errors(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                           const Kokkos::View<T*, MemorySpace>& predictions) {
  if (predictions.extent(0) != R.nnz())
    throw UsageError("rating_errors: " + std::to_string(predictions.extent(0)) + " predictions for " +
                     std::to_string(R.nnz()) + " ratings");
  auto values = R.values;
  double sq = 0.0, ab = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::rating_errors", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(std::size_t e, double& s, double& a) {
        const double r = double(values(e)) - double(predictions(e));
        s += r * r;
        a += Kokkos::abs(r);
      },
      sq, ab);
  RatingErrors out;
  out.count = R.nnz();
  if (out.count > 0) {
    out.rmse = std::sqrt(sq / double(out.count));
    out.mae = ab / double(out.count);
  }
  return out;
}

/// The fractions split_train_test takes: all ratings in the test set would
/// leave none to train on.
inline constexpr Range<double> test_fraction_range{.lo = 0.0, .hi = 1.0, .hi_open = true, .note = "0: none"};

/// Deterministic train/test split: entry (i, j) goes to the test set when a
/// counter-based draw keyed by (seed, i * num_cols + j) falls below
/// `test_fraction` (in test_fraction_range; UsageError otherwise), so the
/// split does not depend on file order.
template <class T>
std::pair<CooMatrix<T>, CooMatrix<T>> split_train_test(const CooMatrix<T>& all, double test_fraction,
                                                       std::uint64_t seed) {
  check_range("", "test fraction", test_fraction, test_fraction_range);
  CooMatrix<T> train, test;
  for (auto* part : {&train, &test}) {
    part->num_rows = all.num_rows;
    part->num_cols = all.num_cols;
  }
  const CounterRng rng(seed, RngStream::split);
  for (std::size_t e = 0; e < all.nnz(); ++e) {
    const auto key = static_cast<std::uint64_t>(all.rows[e]) * static_cast<std::uint64_t>(all.num_cols) +
                     static_cast<std::uint64_t>(all.cols[e]);
    auto& part = rng.uniform(key) < test_fraction ? test : train;
    part.rows.push_back(all.rows[e]);
    part.cols.push_back(all.cols[e]);
    if (!all.values.empty()) part.values.push_back(all.values[e]);
  }
  return {std::move(train), std::move(test)};
}

}  // namespace kfactor
