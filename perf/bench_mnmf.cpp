// bench_mnmf: time per MNMF epoch (W sweep + H sweep) on synthetic power-law
// rating matrices, for the Kokkos solver in the default execution space and
// for the plain serial C++ reference of the same algorithm
// (tests/mnmf/serial_reference.hpp, one thread), at several ranks, with the
// graph terms (lambda > 0) and without (lambda = 0); kNN graph build time is
// reported separately.
//
//   bench_mnmf --help prints the options.
//
// Presets: ml10m = 71,567 x 10,681 with 10M draws; netflix = 480,189 x 17,770
// with 99M draws (duplicates removed, so nnz is a little lower), drawn by
// bench::power_law_ratings (perf/common/mnmf_data.hpp).
// --knn: which graphs come from knn_graph (timed); the others are random
// symmetric graphs with K neighbours per node (same structure, no build cost).
// One JSON record per measurement (perf/common/bench.hpp), a table on stderr.
#include <kfactor/core/convert.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include "../tests/mnmf/serial_reference.hpp"

#include "common/bench.hpp"
#include "common/mnmf_data.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

// A named namespace: nvcc does not allow extended (device) lambdas in
// functions of an unnamed namespace on every version.
namespace kfactor_bench_mnmf {
using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Args {
  std::string preset = "ml10m";
  std::int64_t m = 0, n = 0, nnz = 0;
  std::vector<int> ranks{32, 128, 512};
  std::vector<int> serial_ranks{32};
  std::string objective = "euclid";
  double lambda = 1.0;
  int neighbors = 15;
  std::string knn = "all";
  int reps = 3;
  std::string precision = "double";
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ','))
    if (!tok.empty()) v.push_back(std::stoi(tok));
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError("missing value after " + k);
      return argv[++i];
    };
    if (k == "--preset")
      a.preset = val();
    else if (k == "--m")
      a.m = std::stoll(val());
    else if (k == "--n")
      a.n = std::stoll(val());
    else if (k == "--nnz")
      a.nnz = std::stoll(val());
    else if (k == "--ranks")
      a.ranks = parse_list(val());
    else if (k == "--serial-ranks")
      a.serial_ranks = parse_list(val());
    else if (k == "--objective")
      a.objective = val();
    else if (k == "--lambda")
      a.lambda = std::stod(val());
    else if (k == "--neighbors")
      a.neighbors = std::stoi(val());
    else if (k == "--knn")
      a.knn = val();
    else if (k == "--reps")
      a.reps = std::stoi(val());
    else if (k == "--precision")
      a.precision = val();
    else if (k.rfind("--kokkos", 0) == 0)
      continue;
    else
      throw UsageError("unknown option " + k);
  }
  if (a.preset == "ml10m") {
    if (!a.m) a.m = 71567;
    if (!a.n) a.n = 10681;
    if (!a.nnz) a.nnz = 10000054;
  } else if (a.preset == "netflix") {
    if (!a.m) a.m = 480189;
    if (!a.n) a.n = 17770;
    if (!a.nnz) a.nnz = 99072112;
  } else if (!a.m || !a.n || !a.nnz) {
    throw UsageError("give --preset ml10m|netflix or --m --n --nnz");
  }
  return a;
}

double now_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
mnmf::detail::SerialCsr<T> to_serial(const CsrMatrix<T, Mem>& A) {
  mnmf::detail::SerialCsr<T> s;
  auto h = copy_to<Kokkos::HostSpace>(A);
  s.rows = A.num_rows();
  s.cols = A.num_cols;
  s.row_map.assign(h.row_map.data(), h.row_map.data() + h.row_map.extent(0));
  s.entries.assign(h.entries.data(), h.entries.data() + h.entries.extent(0));
  s.values.assign(h.values.data(), h.values.data() + h.values.extent(0));
  return s;
}

template <class T>
void run(const Args& a) {
  const Exec exec;
  auto t0 = std::chrono::steady_clock::now();
  const auto R = bench::power_law_ratings<T>(exec, a.m, a.n, a.nnz, 2018);
  exec.fence();
  const double gen_seconds = now_since(t0);
  const auto Rt = transpose(exec, R);
  std::fprintf(stderr, "bench_mnmf %s: %lld x %lld, nnz %zu (generated in %.2f s) on %s, %s\n", a.preset.c_str(),
               (long long)a.m, (long long)a.n, R.nnz(), gen_seconds, backend_name<Exec>().c_str(), a.precision.c_str());

  Report base;
  base.backend = backend_name<Exec>();
  base.precision = a.precision;
  base.rows = a.m;
  base.cols = a.n;
  base.nnz = static_cast<std::int64_t>(R.nnz());
  base.info["preset"] = a.preset;

  // graphs
  mnmf::GraphOptions g;
  g.neighbors = a.neighbors;
  auto build = [&](const CsrMatrix<T, Mem>& V, bool knn, const char* which) {
    const auto t = std::chrono::steady_clock::now();
    auto G = knn ? mnmf::knn_graph(exec, V, g) : bench::random_graph<T>(exec, V, a.neighbors, 7);
    exec.fence();
    const double s = now_since(t);
    if (knn) {
      Report r = base;
      r.command = "mnmf_knn";
      r.seconds = s;
      r.info["graph"] = which;
      r.info["neighbors"] = std::to_string(a.neighbors);
      r.info["edges"] = std::to_string(G.nnz());
      bench::emit(r);
    }
    std::fprintf(stderr, "  %s graph (%s): %zu stored edges, %.3f s\n", which, knn ? "kNN" : "random", G.nnz(), s);
    return G;
  };
  const auto P = build(R, a.knn == "all", "user");
  const auto Pb = build(Rt, a.knn == "all" || a.knn == "items", "item");
  const auto problem = mnmf::make_problem(exec, R, P, Pb);

  std::vector<mnmf::Objective> objectives;
  if (a.objective == "euclid" || a.objective == "both") objectives.push_back(mnmf::Objective::euclid);
  if (a.objective == "kl" || a.objective == "both") objectives.push_back(mnmf::Objective::kl);

  std::fprintf(stderr, "  %-7s %-6s %5s %8s %12s %12s\n", "variant", "obj", "rank", "lambda", "s/epoch", "graph cost");
  for (const auto obj : objectives)
    for (int r : a.ranks) {
      double with = 0, without = 0;
      for (double lambda : {a.lambda, 0.0}) {
        mnmf::Options o;
        o.objective = obj;
        o.rank = r;
        o.lambda_w = o.lambda_h = lambda;
        auto s = mnmf::init(exec, problem, o);
        const double sec = bench::median_seconds(exec, [&] { mnmf::step(exec, problem, o, s); }, a.reps, 1);
        (lambda > 0 ? with : without) = sec;
        Report rep = base;
        rep.command = "mnmf_epoch";
        rep.rank = r;
        rep.seconds = sec;
        rep.info["variant"] = "kokkos";
        rep.info["objective"] = mnmf::to_string(obj);
        rep.info["lambda"] = std::to_string(lambda);
        bench::emit(rep);
      }
      std::fprintf(stderr, "  %-7s %-6s %5d %8g %12.4f\n", "kokkos", mnmf::to_string(obj), r, a.lambda, with);
      std::fprintf(stderr, "  %-7s %-6s %5d %8g %12.4f %+11.1f%%\n", "kokkos", mnmf::to_string(obj), r, 0.0, without,
                   100.0 * (with - without) / without);
    }

  // serial reference (one thread, std::vector), one epoch, lambda > 0
  if (!a.serial_ranks.empty() && a.serial_ranks[0] > 0) {
    const auto Rs = to_serial(R), Rts = to_serial(Rt), Ps = to_serial(P), Pbs = to_serial(Pb);
    const auto q = mnmf::detail::serial_degrees(Ps, a.m), qb = mnmf::detail::serial_degrees(Pbs, a.n);
    for (const auto obj : objectives)
      for (int r : a.serial_ranks) {
        mnmf::Options o;
        o.objective = obj;
        o.rank = r;
        o.lambda_w = o.lambda_h = a.lambda;
        auto s = mnmf::init(exec, problem, o);
        auto Wh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, s.W);
        auto Hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, s.H);
        std::vector<T> W(Wh.data(), Wh.data() + Wh.size()), H(Hh.data(), Hh.data() + Hh.size()), up, dn;
        const auto t = std::chrono::steady_clock::now();
        mnmf::detail::serial_epoch(obj == mnmf::Objective::kl, Rs, Rts, W, H, r, Ps, q, T(a.lambda), Pbs, qb,
                                   T(a.lambda), T(o.kl_floor), up, dn);
        const double sec = now_since(t);
        Report rep = base;
        rep.command = "mnmf_epoch";
        rep.rank = r;
        rep.seconds = sec;
        rep.info["variant"] = "serial";
        rep.info["objective"] = mnmf::to_string(obj);
        rep.info["lambda"] = std::to_string(a.lambda);
        bench::emit(rep);
        std::fprintf(stderr, "  %-7s %-6s %5d %8g %12.4f\n", "serial", mnmf::to_string(obj), r, a.lambda, sec);
      }
  }
}

}  // namespace kfactor_bench_mnmf

/// The options (--help).
constexpr const char* usage = R"(bench_mnmf [--preset ml10m|netflix] [--m M --n N --nnz NNZ] [--ranks 32,128,512]
           [--objective euclid|kl|both] [--lambda 1] [--neighbors 15]
           [--knn all|items|none] [--serial-ranks 32] [--reps 3] [--precision double|float]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    using namespace kfactor_bench_mnmf;
    const Args a = parse(argc, argv);
    if (a.precision == "float")
      run<float>(a);
    else
      run<double>(a);
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "bench_mnmf: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
