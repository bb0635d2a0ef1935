#include <kfactor/core/solver.hpp>

#include <gtest/gtest.h>

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

}  // namespace
