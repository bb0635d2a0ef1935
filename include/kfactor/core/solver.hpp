#pragma once
/// \file
/// The solver-loop contract shared by nmf, als, bmf and mnmf.
///
/// Every solver family `X` provides, in namespace kfactor::X (checked at
/// compile time by the concept kfactor::Solver in core/contract.hpp):
/// ```
///   struct Options;       // plain data: `StopRule stop` plus the family's own
///                         // fields; validate() throws UsageError naming the
///                         // field; visit(f) const lists every field that
///                         // decides the iterates (checkpoints compare them)
///   struct Problem<...>;  // the data of one run, built by make_problem(exec, ...)
///   struct State<...>;    // everything that decides the next iterate: factors,
///                         // `int iteration`, RNG seed, `MetricHistory history`;
///                         // visit(f) lists its checkpointed fields and has no
///                         // side effects; buffers derived from the fields live
///                         // in a workspace that reset_workspace() drops after
///                         // the fields were replaced (checkpoint restore)
///   init(exec, problem, options)                     -> State
///   step(exec, problem, options, state&)             one iteration; no I/O, no printing
///   evaluate(exec, problem, options, state&)         -> Metrics
///   solve(exec, problem, options, observer = {})     -> Result<State> {state, report}
///   resume(exec, problem, options, state&, observer = {}) -> Report
/// ```
/// solve() is init() then resume(); resume() runs step, evaluate, observer and
/// the stop rules through run_solver_loop(), so progress output, checkpoints
/// and an application's own early stop all plug in through the Observer. The
/// library never prints.

#include <kfactor/core/error.hpp>
#include <kfactor/core/range.hpp>

#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kfactor {

/// Named scalar metrics of one iteration, in a fixed order per solver.
struct Metrics {
  std::vector<std::pair<std::string, double>> items;

  void set(const std::string& name, double value) {
    for (auto& [n, v] : items)
      if (n == name) {
        v = value;
        return;
      }
    items.emplace_back(name, value);
  }
  [[nodiscard]] bool has(const std::string& name) const {
    for (const auto& [n, v] : items)
      if (n == name) return true;
    return false;
  }
  /// Value of `name`; NaN when absent.
  [[nodiscard]] double get(const std::string& name) const {
    for (const auto& [n, v] : items)
      if (n == name) return v;
    return std::nan("");
  }
};

/// Metric history as a table: one row per evaluated iteration, bounded.
///
/// A run of millions of iterations must not grow memory (and checkpoints)
/// without bound, so once the table holds 2 * max_rows rows every other row
/// but the newest is dropped: the table keeps the first iteration, the newest
/// one and an evenly thinned record between them (at most 2 * max_rows rows).
struct MetricHistory {
  static constexpr std::size_t max_rows = 2048;

  std::vector<std::string> names;
  std::vector<int> iterations;
  std::vector<std::vector<double>> rows;  ///< rows[r][c] is names[c] at iterations[r]

  void append(int iteration, const Metrics& m) {
    if (names.empty())
      for (const auto& [n, v] : m.items) names.push_back(n);
    std::vector<double> row(names.size(), std::nan(""));
    for (std::size_t c = 0; c < names.size(); ++c) row[c] = m.get(names[c]);
    iterations.push_back(iteration);
    rows.push_back(std::move(row));
    if (rows.size() >= 2 * max_rows) thin();
  }
  [[nodiscard]] std::size_t size() const { return rows.size(); }
  /// Metrics of the last row (empty when none).
  [[nodiscard]] Metrics last() const {
    Metrics m;
    if (!rows.empty())
      for (std::size_t c = 0; c < names.size(); ++c) m.set(names[c], rows.back()[c]);
    return m;
  }

 private:
  void thin() {
    std::size_t kept = 0;
    for (std::size_t r = 0; r < rows.size(); ++r)
      if (r % 2 == 0 || r + 1 == rows.size()) {
        iterations[kept] = iterations[r];
        rows[kept] = std::move(rows[r]);
        ++kept;
      }
    iterations.resize(kept);
    rows.resize(kept);
  }
};

/// What the observer sees after each iteration.
struct IterationEvent {
  int iteration = 0;     ///< iterations completed so far (1-based after the first step)
  double seconds = 0.0;  ///< wall time of the loop so far (this run only)
  const Metrics* metrics = nullptr;
};

enum class ObserverAction { proceed, stop };

/// Called after every evaluated iteration; may save checkpoints, print, or stop.
using Observer = std::function<ObserverAction(const IterationEvent&)>;

/// Why a solve returned.
enum class StopReason { max_iterations, converged, target_reached, observer };

inline const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::max_iterations: return "max_iterations";
    case StopReason::converged: return "converged";
    case StopReason::target_reached: return "target_reached";
    case StopReason::observer: return "observer";
  }
  return "unknown";
}

/// The stop rules every solver honours (Options::stop of every family).
struct StopRule {
  int max_iterations = 100;
  /// Stop when |m_t - m_{t-1}| <= tolerance * |m_{t-1}| for the solver's
  /// primary metric (0 disables).
  double tolerance = 0.0;
  /// Stop when the primary metric is <= target (NaN disables; a solver whose
  /// metric cannot go below 0 treats 0 as "never").
  double target = std::nan("");

  /// Any count: a tolerance, a target or an observer may end the run first.
  static constexpr Range<int> max_iterations_range{.lo = 0, .note = "0: initialize only"};
  /// A relative change: a tolerance of 1 or more stops at the second iterate.
  static constexpr Range<double> tolerance_range{.lo = 0.0, .hi = 1.0, .note = "0 disables the rule"};
  /// Any finite value (or NaN to disable the rule); families narrow it.
  static constexpr Range<double> target_range{};

  /// Throws UsageError naming the field and its range: max_iterations in
  /// max_iterations_range, tolerance in tolerance_range, target in
  /// target_range or NaN.
  void validate() const {
    check_range("", "stop.max_iterations", max_iterations, max_iterations_range);
    check_range("", "stop.tolerance", tolerance, tolerance_range);
    if (!std::isnan(target)) check_range("", "stop.target", target, target_range);
  }
};

/// Combines two observers: both see every event; stop if either asks.
inline Observer chain(Observer a, Observer b) {
  if (!a) return b;
  if (!b) return a;
  return [a = std::move(a), b = std::move(b)](const IterationEvent& e) {
    const auto ra = a(e);
    const auto rb = b(e);
    return ra == ObserverAction::stop || rb == ObserverAction::stop ? ObserverAction::stop : ObserverAction::proceed;
  };
}

/// The loop: while the state's iteration < max_iterations, `step()`, then
/// `evaluate()` (returns Metrics), record it, call the observer, and stop on
/// convergence of `primary`, on `primary <= rule.target`, on a family's own
/// `extra_stop(metrics)` (returns true to stop) or on the observer's request.
/// `iteration` is a reference to the state's own counter so a restarted state
/// continues where it left off; `history` is the state's history.
template <class StepFn, class EvaluateFn, class ExtraStopFn>
StopReason run_solver_loop(int& iteration, MetricHistory& history, const StopRule& rule, const std::string& primary,
                           const Observer& observer, StepFn&& step, EvaluateFn&& evaluate, ExtraStopFn&& extra_stop,
                           double* seconds_out = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  if (seconds_out) *seconds_out = 0.0;
  StopReason reason = StopReason::max_iterations;
  double previous = history.size() > 0 ? history.last().get(primary) : std::nan("");
  while (iteration < rule.max_iterations) {
    step();
    ++iteration;
    const Metrics m = evaluate();
    // Overflowed factors give NaN or Inf metrics: stop before anything (a
    // checkpoint, the caller's outputs) takes such a state for a result.
    for (const auto& [name, value] : m.items)
      if (std::isinf(value) || (name == primary && std::isnan(value)))
        throw RuntimeFailure("iteration " + std::to_string(iteration) + ": " + name + " is " +
                             (std::isnan(value) ? "NaN" : "infinite") +
                             ": the factors overflowed; scale the input so that its values are well inside the "
                             "floating-point range (e.g. divide by its largest value)");
    history.append(iteration, m);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (seconds_out) *seconds_out = seconds;
    if (observer && observer(IterationEvent{iteration, seconds, &m}) == ObserverAction::stop) {
      reason = StopReason::observer;
      break;
    }
    const double current = m.get(primary);
    if ((!std::isnan(rule.target) && current <= rule.target) || extra_stop(m)) {
      reason = StopReason::target_reached;
      break;
    }
    if (rule.tolerance > 0 && std::isfinite(previous) && std::isfinite(current) &&
        std::abs(current - previous) <= rule.tolerance * std::abs(previous)) {
      reason = StopReason::converged;
      break;
    }
    previous = current;
  }
  return reason;
}

}  // namespace kfactor
