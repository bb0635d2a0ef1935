// time_runs (core/timing.hpp): warm-up runs untimed, every timed run fenced
// and bracketed by the sync policy, median and minimum of the samples.
#include <kfactor/core/timing.hpp>

#include "common/test_spaces.hpp"

#include <chrono>
#include <thread>

namespace {
using namespace kfactor;

// The kernel lives in a free function: nvcc refuses an extended device lambda
// whose enclosing function (a TYPED_TEST body) is a private member.
template <class Space>
TimingStats time_increments(const Space& exec, const Kokkos::View<int, typename Space::memory_space>& count, int reps,
                            int warmup) {
  // Defined here, not inside the host lambda below: nvcc allows no extended
  // lambda inside another lambda.
  const auto increment = KOKKOS_LAMBDA(int) { count() += 1; };
  return time_runs(exec, reps, warmup,
                   [&] { Kokkos::parallel_for(Kokkos::RangePolicy<Space>(exec, 0, 1), increment); });
}

template <class Space>
class Timing : public ::testing::Test {};
TYPED_TEST_SUITE(Timing, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(Timing, RunsWarmupsAndRepsAndOrdersTheStatistics) {
  using Space = TypeParam;
  const Space exec;
  Kokkos::View<int, typename Space::memory_space> count("count");
  const auto s = time_increments(exec, count, 7, 2);
  int runs = 0;
  Kokkos::deep_copy(runs, count);
  EXPECT_EQ(runs, 9);
  ASSERT_EQ(s.samples.size(), 7u);
  for (double t : s.samples) {
    EXPECT_GE(t, s.min);
    EXPECT_GE(t, 0.0);
  }
  EXPECT_LE(s.min, s.median);
  // The median is one of the samples with as many below it as above it (the
  // upper one of an even count).
  int below = 0, above = 0;
  for (double t : s.samples) {
    below += t < s.median;
    above += t > s.median;
  }
  EXPECT_LE(below, 3);
  EXPECT_LE(above, 3);
}

TEST(Timing, MeasuresTheRunAndAppliesTheSyncPolicy) {
  struct Counting {
    int* starts;
    double finish(double seconds) const { return 10.0 + seconds; }
    void start() const { ++*starts; }
  };
  int starts = 0, calls = 0;
  const auto s = time_runs(
      Kokkos::DefaultHostExecutionSpace{}, 3, 1,
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      },
      Counting{&starts});
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(starts, 3);
  // Every sample went through finish() and holds the 2 ms sleep.
  for (double t : s.samples) {
    EXPECT_GE(t, 10.002);
    EXPECT_LT(t, 11.0);
  }
  EXPECT_GE(s.min, 10.002);
}

TEST(Timing, RefusesNoRunsAndNegativeWarmups) {
  const Kokkos::DefaultHostExecutionSpace exec;
  EXPECT_THROW(time_runs(exec, 0, 1, [] {}), UsageError);
  EXPECT_THROW(time_runs(exec, -1, 1, [] {}), UsageError);
  EXPECT_THROW(time_runs(exec, 1, -1, [] {}), UsageError);
}

}  // namespace
