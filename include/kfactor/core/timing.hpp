#pragma once
/// \file
/// Timing of repeated runs on an execution space: the one helper behind the
/// SDDMM autotuner, the benchmarks and `kfactor sddmm`. Every run is fenced,
/// since a kernel launch returns before the kernel ends on a device; the
/// median is the figure to report (robust to one slow run: a page fault, a
/// clock ramp), the minimum the figure to compare candidates whose noise is
/// one-sided.

#include <kfactor/core/error.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kfactor {

/// Wall times of the timed runs, in seconds.
struct TimingStats {
  double median = 0.0;
  double min = 0.0;
  std::vector<double> samples;  ///< in run order
};

/// How time_runs() brackets each timed run. The default does nothing; a
/// distributed caller starts every run together (a barrier) and reports the
/// slowest rank's time (a max-reduction), so that all ranks see one sample.
struct LocalRuns {
  void start() const {}
  [[nodiscard]] double finish(double seconds) const { return seconds; }
};

/// Runs `fn()` `warmup` times, fences `exec`, then times `reps` runs, each
/// fenced: the sample is sync.finish(seconds from just after sync.start() to
/// the end of the fence). Throws UsageError unless reps >= 1 and warmup >= 0.
template <class ExecutionSpace, class Fn, class Sync = LocalRuns>
TimingStats time_runs(const ExecutionSpace& exec, int reps, int warmup, Fn&& fn, Sync&& sync = {}) {
  if (reps < 1) throw UsageError("time_runs: reps must be >= 1, got " + std::to_string(reps));
  if (warmup < 0) throw UsageError("time_runs: warmup must be >= 0, got " + std::to_string(warmup));
  for (int i = 0; i < warmup; ++i) fn();
  exec.fence();
  TimingStats s;
  s.samples.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    sync.start();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    exec.fence();
    s.samples.push_back(sync.finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  std::vector<double> sorted = s.samples;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  // The upper median for an even count: the same run the callers reported
  // before (t[size / 2]), so figures stay comparable.
  s.median = sorted[sorted.size() / 2];
  return s;
}

}  // namespace kfactor
