#include <kfactor/core/solver.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace {
using namespace kfactor;

// A toy "solver" whose metric halves every step until it reaches a floor.
struct Toy {
  int iteration = 0;
  MetricHistory history;
  double value = 1.0;
  StopReason run(const StopRule& rule, const Observer& obs, double target = -1.0) {
    return run_solver_loop(
        iteration, history, rule, "error", obs, [&] { value = std::max(value * 0.5, 1e-3); },
        [&] {
          Metrics m;
          m.set("error", value);
          m.set("other", 2 * value);
          return m;
        },
        [&](const Metrics& m) { return m.get("error") <= target; });
  }
};

TEST(SolverLoop, StopsAtMaxIterationsAndRecordsHistory) {
  Toy t;
  EXPECT_EQ(t.run({5, 0.0}, nullptr), StopReason::max_iterations);
  EXPECT_EQ(t.iteration, 5);
  ASSERT_EQ(t.history.size(), 5u);
  EXPECT_EQ(t.history.names, (std::vector<std::string>{"error", "other"}));
  EXPECT_DOUBLE_EQ(t.history.rows[4][0], 1.0 / 32);
  EXPECT_EQ(t.history.iterations.back(), 5);
}

TEST(SolverLoop, ConvergesWhenTheMetricStalls) {
  Toy t;
  EXPECT_EQ(t.run({1000, 1e-9}, nullptr), StopReason::converged);
  EXPECT_LT(t.iteration, 20);
  EXPECT_DOUBLE_EQ(t.value, 1e-3);
}

TEST(SolverLoop, ObserverCanStopAndRestartContinuesCounting) {
  Toy t;
  int calls = 0;
  auto obs = [&](const IterationEvent& e) {
    ++calls;
    EXPECT_EQ(e.iteration, calls);
    EXPECT_TRUE(e.metrics->has("error"));
    return e.iteration == 3 ? ObserverAction::stop : ObserverAction::proceed;
  };
  EXPECT_EQ(t.run({10, 0.0}, obs), StopReason::observer);
  EXPECT_EQ(t.iteration, 3);
  EXPECT_EQ(t.run({6, 0.0}, nullptr), StopReason::max_iterations);
  EXPECT_EQ(t.iteration, 6);
  EXPECT_EQ(t.history.size(), 6u);
}

TEST(SolverLoop, TargetStops) {
  Toy t;
  EXPECT_EQ(t.run({100, 0.0}, nullptr, 0.1), StopReason::target_reached);
  EXPECT_EQ(t.iteration, 4);  // 0.0625 <= 0.1
}

TEST(SolverLoop, StopRuleTargetStops) {
  Toy t;
  StopRule rule{100, 0.0};
  rule.target = 0.1;
  EXPECT_EQ(t.run(rule, nullptr), StopReason::target_reached);
  EXPECT_EQ(t.iteration, 4);  // 1/16 is the first value <= 0.1
}

// Overflowed factors must end the run with a RuntimeFailure naming the
// iteration, not finish with NaN results (and exit 0).
TEST(SolverLoop, NonFiniteMetricEndsTheRun) {
  for (const double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    int iteration = 0;
    MetricHistory history;
    int step = 0;
    auto run = [&] {
      run_solver_loop(
          iteration, history, StopRule{10, 0.0}, "error", nullptr, [&] { ++step; },
          [&] {
            Metrics m;
            m.set("error", step < 3 ? 0.5 : bad);
            return m;
          },
          [](const Metrics&) { return false; });
    };
    try {
      run();
      FAIL() << "a non-finite metric was accepted";
    } catch (const RuntimeFailure& e) {
      EXPECT_NE(std::string(e.what()).find("iteration 3"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("error"), std::string::npos) << e.what();
    }
    EXPECT_EQ(history.size(), 2u) << "the non-finite row is not recorded";
  }
}

// A run of a million iterations keeps a bounded history: the first and the
// newest iteration, evenly thinned between them.
TEST(SolverLoop, HistoryStaysBoundedOverAMillionIterations) {
  int iteration = 0;
  MetricHistory history;
  run_solver_loop(
      iteration, history, StopRule{1000000, 0.0}, "error", nullptr, [] {},
      [&] {
        Metrics m;
        m.set("error", 1.0 / (iteration + 1));
        return m;
      },
      [](const Metrics&) { return false; });
  EXPECT_EQ(iteration, 1000000);
  EXPECT_LT(history.size(), 2 * MetricHistory::max_rows);
  EXPECT_GE(history.size(), MetricHistory::max_rows);
  EXPECT_EQ(history.iterations.front(), 1);
  EXPECT_EQ(history.iterations.back(), 1000000);
  EXPECT_DOUBLE_EQ(history.last().get("error"), 1.0 / 1000001);  // evaluated after the counter moved
  for (std::size_t r = 1; r < history.size(); ++r) EXPECT_LT(history.iterations[r - 1], history.iterations[r]);
}

}  // namespace
