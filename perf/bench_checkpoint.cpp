// bench_checkpoint: save/load throughput of HDF5 checkpoints (device factors
// copied through host mirrors, written atomically with fsync) and of the
// input fingerprint, for float and double factors in the default space.
//   bench_checkpoint --help prints the options.
#include "common/bench.hpp"

#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

template <class T, class Mem>
struct BenchState {
  kfactor::DenseMatrix<T, Mem> W, Ht;
  int iteration = 7;
  std::uint64_t counter = 99;
  kfactor::MetricHistory history;
  template <class F>
  void visit(F&& f) {
    f("W", W);
    f("Ht", Ht);
    f("iteration", iteration);
    f("counter", counter);
    f("history", history);
  }
};

template <class T>
void run(std::int64_t rows, int rank, int reps, const std::string& dir) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  Exec exec;
  BenchState<T, Mem> s;
  s.W = kfactor::DenseMatrix<T, Mem>("W", rows, rank);
  s.Ht = kfactor::DenseMatrix<T, Mem>("Ht", rows / 2, rank);
  kfactor::fill_uniform(exec, s.W, 1, kfactor::RngStream::factor_w, T(0), T(1));
  kfactor::fill_uniform(exec, s.Ht, 1, kfactor::RngStream::factor_h, T(0), T(1));
  kfactor::Metrics m0;
  m0.set("relative_error", 0.5);
  for (int i = 1; i <= 100; ++i) s.history.append(i, m0);
  exec.fence();
  kfactor::CheckpointMeta meta;
  meta.solver = "bench";
  meta.precision = kfactor::precision_name<T>();
  meta.rank = rank;
  meta.backend = kfactor::backend_name<Exec>();
  const std::string path = dir + "/bench_checkpoint_" + meta.precision + ".h5";
  const double bytes = double(s.W.size() + s.Ht.size()) * sizeof(T);

  const double t_fp =
      kfactor::bench::median_seconds(exec, [&] { meta.input = kfactor::fingerprint(exec, s.W); }, reps, 1);
  const double t_save = kfactor::bench::median_seconds(exec, [&] { kfactor::save_checkpoint(path, s, meta); }, reps, 1);
  auto t = s;
  t.W = kfactor::DenseMatrix<T, Mem>("W2", rows, rank);
  t.Ht = kfactor::DenseMatrix<T, Mem>("Ht2", rows / 2, rank);
  const double t_load = kfactor::bench::median_seconds(exec, [&] { kfactor::load_checkpoint(path, t, meta); }, reps, 1);
  std::filesystem::remove(path);

  kfactor::Report r;
  r.command = "checkpoint";
  r.backend = kfactor::backend_name<Exec>();
  r.precision = meta.precision;
  r.rows = rows;
  r.cols = rank;
  r.rank = rank;
  r.seconds = t_save + t_load;
  r.metrics.set("save_gbps", bytes / t_save * 1e-9);
  r.metrics.set("load_gbps", bytes / t_load * 1e-9);
  r.metrics.set("fingerprint_gbps", double(s.W.size()) * sizeof(T) / t_fp * 1e-9);
  r.timings.set("save", t_save);
  r.timings.set("load", t_load);
  r.timings.set("fingerprint", t_fp);
  r.info["bytes"] = std::to_string(static_cast<long long>(bytes));
  r.info["dir"] = dir;
  kfactor::bench::emit(r);
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_checkpoint [--rows M] [--rank K] [--reps R] [--dir DIR]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  std::int64_t rows = 200000;
  int rank = 32, reps = 5;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows")
      rows = std::atoll(argv[i + 1]);
    else if (a == "--rank")
      rank = std::atoi(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--dir")
      dir = argv[i + 1];
  }
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    run<float>(rows, rank, reps, dir);
    run<double>(rows, rank, reps, dir);
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "bench_checkpoint: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
