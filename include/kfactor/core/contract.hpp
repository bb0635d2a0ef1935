#pragma once
/// \file
/// The solver contract of core/solver.hpp as a C++20 concept, so that every
/// family (nmf, als, bmf, mnmf) is checked against it at compile time
/// (tests/core/test_contract.cpp), and the pieces every family shares:
/// Result, and the option listing checkpoints compare on restart.

#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>

#include <concepts>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>

namespace kfactor {

/// What solve() returns: the final state (factors, iteration, history) and
/// the report of the run.
template <class State>
struct Result {
  State state;
  Report report;
};

namespace detail {

/// Accepts any field a State's or Options' visit() lists.
struct AnyFieldVisitor {
  template <class V>
  void operator()(const char*, V&&) const {}
};

template <class V>
std::string option_text(const V& v) {
  if constexpr (std::is_same_v<V, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_enum_v<V>) {
    return to_string(v);  // every option enum has a to_string() beside it
  } else if constexpr (std::is_floating_point_v<V>) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  } else if constexpr (std::is_arithmetic_v<V>) {
    return std::to_string(v);
  } else {
    return std::string(v);
  }
}

}  // namespace detail

/// The options that decide the iterates, as name -> text (17 significant
/// digits for reals), from Options::visit(). Checkpoints store this map and
/// a restart refuses any difference, naming the option.
template <class Options>
std::map<std::string, std::string> option_values(const Options& options) {
  std::map<std::string, std::string> out;
  options.visit([&](const char* name, const auto& value) { out[name] = detail::option_text(value); });
  return out;
}

/// The solver contract (see core/solver.hpp). `Exec` is an execution space,
/// `Problem`, `Options` and `State` the family's types; the free functions are
/// found by argument-dependent lookup in the family's namespace.
template <class Exec, class Problem, class Options, class State>
concept Solver = requires(const Exec& exec, const Problem& problem, const Options& options, State& state,
                          const State& cstate, const Observer& observer) {
  { options.validate() };
  { options.stop } -> std::convertible_to<StopRule>;
  { options.visit(detail::AnyFieldVisitor{}) };
  { state.iteration } -> std::convertible_to<int>;
  { state.history } -> std::convertible_to<MetricHistory>;
  { state.visit(detail::AnyFieldVisitor{}) };
  { cstate.visit(detail::AnyFieldVisitor{}) };
  { state.reset_workspace() };
  { init(exec, problem, options) } -> std::same_as<State>;
  { step(exec, problem, options, state) };
  { evaluate(exec, problem, options, state) } -> std::same_as<Metrics>;
  { solve(exec, problem, options, observer) } -> std::same_as<Result<State>>;
  { solve(exec, problem, options) } -> std::same_as<Result<State>>;
  { resume(exec, problem, options, state, observer) } -> std::same_as<Report>;
  { resume(exec, problem, options, state) } -> std::same_as<Report>;
};

}  // namespace kfactor
