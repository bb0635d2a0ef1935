#pragma once
// Shared benchmark plumbing: timing (median of repetitions after warm-up,
// fenced), machine metadata and one JSON record per measurement in the
// Report schema, so perf/plot.py reads every benchmark the same way.
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/timing.hpp>
#include <kfactor/io/report_json.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace kfactor::bench {

/// The non-empty items of `s` between separators ("32,128" -> {"32", "128"};
/// "4000x3000x150000" with 'x'): the benchmarks' list options.
/// Prints `usage` and exits with 0 when the arguments ask for help (--help
/// or -h). Called first in main: Kokkos would print its own options for
/// --help and go on.
inline void exit_on_help(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
  }
}

inline std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

/// Median wall time in seconds of `fn` over `reps` runs after `warmup` runs
/// (core/timing.hpp's time_runs: `exec` fenced around every run).
template <class ExecutionSpace, class Fn>
double median_seconds(const ExecutionSpace& exec, Fn&& fn, int reps = 20, int warmup = 3) {
  return time_runs(exec, reps, warmup, std::forward<Fn>(fn)).median;
}

#if defined(KOKKOS_ENABLE_CUDA)
namespace detail {
/// Keeps the stream busy for about `ns` nanoseconds (one thread).
__global__ inline void spin_kernel(long long ns) {
  const long long t0 = clock64();
  while (clock64() - t0 < ns * 2) {  // > 1 cycle per 0.5 ns up to 2 GHz: at least `ns`
  }
}
}  // namespace detail
#endif

/// Median device time in seconds of `fn` (CUDA events around each run on
/// exec's stream: the "kernel time" of the peers' tables); -1 on spaces
/// without events. A short spin kernel queued before the first event keeps
/// the stream busy while the host prepares `fn`'s launches, so the host's
/// launch latency stays outside the events (on an idle stream the first
/// event completes at once, and the time until the kernel starts counts).
template <class ExecutionSpace, class Fn>
double median_device_seconds(const ExecutionSpace& exec, Fn&& fn, int reps = 20, int warmup = 3) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
    for (int i = 0; i < warmup; ++i) fn();
    exec.fence();
    cudaEvent_t begin, end;
    cudaEventCreate(&begin);
    cudaEventCreate(&end);
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      detail::spin_kernel<<<1, 1, 0, exec.cuda_stream()>>>(100000);
      cudaEventRecord(begin, exec.cuda_stream());
      fn();
      cudaEventRecord(end, exec.cuda_stream());
      cudaEventSynchronize(end);
      float ms = 0.f;
      cudaEventElapsedTime(&ms, begin, end);
      t.push_back(1e-3 * ms);
    }
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
#endif
  (void)exec;
  (void)fn;
  (void)reps;
  (void)warmup;
  return -1.0;
}

/// Machine metadata attached to every record.
inline nlohmann::json machine() {
  const auto b = build_info();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  nlohmann::json m{{"host", host},
                   {"kfactor", b.version},
                   {"kokkos", b.kokkos_version},
                   {"spaces", b.execution_spaces},
                   {"default_space", b.default_space},
                   {"kokkos_kernels", b.kokkos_kernels},
                   {"hardware_threads", std::thread::hardware_concurrency()},
                   {"concurrency", Kokkos::DefaultExecutionSpace().concurrency()}};
  return m;
}

/// Appends one record (a Report plus `extra` fields and machine metadata) as a
/// JSON line to stdout, or to the file named by $KFACTOR_BENCH_OUT.
inline void emit(const Report& r, const nlohmann::json& extra = {}) {
  auto j = to_json(r);
  j["machine"] = machine();
  for (auto it = extra.begin(); extra.is_object() && it != extra.end(); ++it) j[it.key()] = it.value();
  const char* path = std::getenv("KFACTOR_BENCH_OUT");
  if (path && *path) {
    std::ofstream(path, std::ios::app) << j.dump() << "\n";
  } else {
    std::cout << j.dump() << std::endl;
  }
}

}  // namespace kfactor::bench
