#pragma once
/// \file
/// Model selection for MNMF: the graph weight lambda (lambda_w = lambda_h)
/// chosen from a grid by the RMSE on held-out validation ratings.
///
/// ```
///   // fit: the ratings the models are fitted on; validation: held out from them
///   auto problem = kfactor::mnmf::make_problem(exec, to_csr(exec, fit), P, Pb, to_csr(exec, validation));
///   auto chosen = kfactor::mnmf::select_lambda(exec, problem, options, {0, 0.1, 1, 10});
///   options.lambda_w = options.lambda_h = chosen.lambda;
/// ```
/// or, from the training ratings alone, select_lambda(exec, train, fraction,
/// seed, graph_options, options, grid), which splits a validation part off
/// (split_train_test) and builds both kNN graphs on the rest.
///
/// Every candidate is a full solve() from init() with `options` (its seed and
/// stop rule), so the choice is deterministic for one seed. The lowest
/// validation RMSE wins; on equal RMSEs the earlier candidate of the grid.

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kfactor::mnmf {

/// One evaluated candidate.
struct LambdaCandidate {
  double lambda = 0.0;
  double validation_rmse = 0.0;
};

/// The outcome: the chosen lambda, its RMSE, and every candidate in grid order.
struct LambdaSelection {
  double lambda = 0.0;
  double validation_rmse = 0.0;
  std::vector<LambdaCandidate> candidates;
};

/// The validation fractions select_lambda takes from the training ratings:
/// some must be held out, and some left to fit on.
inline constexpr Range<double> validation_fraction_range{.lo = 0.0, .hi = 1.0, .lo_open = true, .hi_open = true};

/// Called after each candidate (progress output); may be empty.
using LambdaObserver = std::function<void(const LambdaCandidate&)>;

namespace detail {
inline void check_grid(const std::vector<double>& grid) {
  if (grid.empty()) throw UsageError("mnmf: the lambda grid is empty");
  for (double l : grid) check_range("mnmf", "every lambda of the grid", l, Options::lambda_range);
}
}  // namespace detail

/// Solves `problem` once per lambda of `grid` (lambda_w = lambda_h = lambda,
/// the other options as given) and returns the lambda with the lowest
/// test_rmse on the problem's held-out ratings. UsageError for an empty grid,
/// a lambda outside Options::lambda_range, a problem without held-out ratings, or a
/// lambda > 0 without both graphs.
template <class ExecutionSpace, class T, class MemorySpace>
LambdaSelection select_lambda(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                              const Options& options, const std::vector<double>& grid,
                              const LambdaObserver& observer = {}) {
  detail::check_grid(grid);
  if (!problem.has_test()) throw UsageError("mnmf: lambda selection needs held-out validation ratings in the problem");
  LambdaSelection out;
  for (double lambda : grid) {
    auto o = options;
    o.lambda_w = o.lambda_h = lambda;
    const double rmse = solve(exec, problem, o).report.metrics.get("test_rmse");
    out.candidates.push_back({lambda, rmse});
    if (observer) observer(out.candidates.back());
    if (out.candidates.size() == 1 || rmse < out.validation_rmse) {
      out.lambda = lambda;
      out.validation_rmse = rmse;
    }
  }
  return out;
}

/// The same from the training ratings: `validation_fraction` of them
/// (split_train_test with `seed`) is held out, the kNN user and item graphs
/// (`graph`) are built on the rest, and select_lambda runs on that problem.
/// UsageError for a fraction outside validation_fraction_range.
template <class ExecutionSpace, class T>
LambdaSelection select_lambda(const ExecutionSpace& exec, const CooMatrix<T>& train, double validation_fraction,
                              std::uint64_t seed, const GraphOptions& graph, const Options& options,
                              const std::vector<double>& grid, const LambdaObserver& observer = {}) {
  check_range("mnmf", "validation_fraction", validation_fraction, validation_fraction_range);
  detail::check_grid(grid);
  auto [fit, validation] = split_train_test(train, validation_fraction, seed);
  const auto R = to_csr(exec, fit);
  const auto P = knn_graph(exec, R, graph);
  const auto Pb = knn_graph(exec, transpose(exec, R), graph);
  const auto problem = make_problem(exec, R, P, Pb, to_csr(exec, validation));
  return select_lambda(exec, problem, options, grid, observer);
}

}  // namespace kfactor::mnmf
