// bench_nmf: time per NMF epoch (hals, alo, mu) on a dense uniform matrix and a
// sparse power-law matrix (20 Newsgroups-like by default), for a list of ranks,
// with a products / H-update / W-update breakdown (the paper's Table 2) and an
// ALO tile sweep (the paper's Fig. 4). One JSON record per measurement through
// perf/common/bench.hpp; a summary table on stderr.
//
//   bench_nmf --help prints the options.
// --input adds a case on a real matrix read through kfactor::io (CSR).
#include "common/bench.hpp"
#include "common/power_law.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/nmf/nmf.hpp>

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {
using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Args {
  std::string dense = "2000x1000";
  std::string sparse = "26214x11314x1018191";
  std::vector<int> ks = {16, 64, 128, 256};
  std::vector<std::string> algs = {"hals", "alo", "mu"};
  std::string precision = "float";
  int iters = 5;
  std::vector<int> tiles = {2, 4, 8, 16, 32, 64};
  int tile_k = 0;  // 0: the largest K of --ks
  std::uint64_t seed = 1;
  std::string input;  // optional real matrix (kfactor::io)
  std::string format = "auto";
};

std::vector<int> split_ints(const std::string& s, char sep) {
  std::vector<int> out;
  for (const auto& x : bench::split(s, sep)) out.push_back(std::stoi(x));
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dense")
      a.dense = v;
    else if (k == "--sparse")
      a.sparse = v;
    else if (k == "--ks")
      a.ks = split_ints(v, ',');
    else if (k == "--algs")
      a.algs = bench::split(v, ',');
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else if (k == "--tiles")
      a.tiles = split_ints(v, ',');
    else if (k == "--tile-k")
      a.tile_k = std::stoi(v);
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--input")
      a.input = v;
    else if (k == "--format")
      a.format = v;
    else {
      std::fprintf(stderr, "bench_nmf: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

struct Timing {
  double per_iter = 0, products = 0, h = 0, w = 0, error = 0;
};

template <class Problem>
Timing time_epochs(const Exec& exec, const Problem& A, nmf::Options o, int iters) {
  Timing t;
  auto state = nmf::init(exec, A, o);
  nmf::step(exec, A, o, state);  // warm-up
  ++state.iteration;
  exec.fence();
  auto t0 = std::chrono::steady_clock::now();
  for (int e = 0; e < iters; ++e) {
    nmf::step(exec, A, o, state);
    ++state.iteration;
  }
  exec.fence();
  t.per_iter = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
  o.timing_breakdown = true;
  state.ws->t_products = state.ws->t_h = state.ws->t_w = 0;
  for (int e = 0; e < iters; ++e) {
    nmf::step(exec, A, o, state);
    ++state.iteration;
  }
  t.products = state.ws->t_products / iters;
  t.h = state.ws->t_h / iters;
  t.w = state.ws->t_w / iters;
  t.error = nmf::evaluate(exec, A, o, state).get("relative_error");
  return t;
}

template <class T, class Matrix>
void run_case(const Exec& exec, const Args& args, const Matrix& input, const std::string& kind, std::int64_t V,
              std::int64_t D, std::int64_t nnz) {
  const auto A = nmf::make_problem(exec, input);
  const char* prec = sizeof(T) == 4 ? "float" : "double";
  auto record = [&](const std::string& alg, int K, int tile, const Timing& t, const std::string& what) {
    Report r;
    r.command = "bench_nmf";
    r.backend = backend_name<Exec>();
    r.precision = prec;
    r.rows = V;
    r.cols = D;
    r.nnz = nnz;
    r.rank = K;
    r.iterations = args.iters;
    r.seconds = t.per_iter;
    r.metrics.set("relative_error", t.error);
    r.timings.set("per_iteration", t.per_iter);
    r.timings.set("products", t.products);
    r.timings.set("h_update", t.h);
    r.timings.set("w_update", t.w);
    r.info["algorithm"] = alg;
    r.info["input"] = kind;
    if (alg == "alo") r.info["tile"] = std::to_string(tile);
    // Useful flops of one epoch (sparse products counted by nnz, unlike the
    // paper's Table 3): R and P, the Grams S and Q, the two column sweeps.
    const double v = double(V), d = double(D), k = double(K), z = double(nnz);
    const double flops =
        4.0 * z * k + 2.0 * (v + d) * k * k + (2 * d * k * k + 3 * d * k) + (2 * v * k * k + 7 * v * k);
    bench::emit(
        r, nlohmann::json{
               {"benchmark", what}, {"case", kind}, {"flops_per_epoch", flops}, {"gflops", flops / t.per_iter * 1e-9}});
    std::fprintf(stderr,
                 "%-10s %-6s %-7s %-6s K=%-5d T=%-4s %10.3f ms/iter  products %9.3f  H %9.3f  W %9.3f ms  err %.4f\n",
                 what.c_str(), kind.c_str(), prec, alg.c_str(), K, alg == "alo" ? std::to_string(tile).c_str() : "-",
                 1e3 * t.per_iter, 1e3 * t.products, 1e3 * t.h, 1e3 * t.w, t.error);
  };
  for (int K : args.ks) {
    if (K > std::min(V, D)) continue;
    for (const auto& alg : args.algs) {
      nmf::Options o;
      o.algorithm = nmf::parse_algorithm(alg);
      o.rank = K;
      o.seed = args.seed;
      const Timing t = time_epochs(exec, A, o, args.iters);
      record(alg, K, nmf::resolve_tile(K, 0, kfactor::is_host_space_v<Exec>), t, "epoch");
    }
  }
  const int tk = args.tile_k > 0 ? args.tile_k : args.ks.back();
  if (tk <= std::min(V, D))
    for (int tile : args.tiles) {
      if (tile > tk) continue;
      nmf::Options o;
      o.algorithm = nmf::Algorithm::alo;
      o.rank = tk;
      o.tile = tile;
      o.seed = args.seed;
      record("alo", tk, tile, time_epochs(exec, A, o, args.iters), "tile_sweep");
    }
}

template <class T>
void run(const Exec& exec, const Args& args) {
  if (args.dense != "none") {
    const auto d = bench::split(args.dense, 'x');
    const std::int64_t V = std::stoll(d.at(0)), D = std::stoll(d.at(1));
    DenseMatrix<T, Mem> A(Kokkos::view_alloc(Kokkos::WithoutInitializing, "A"), V, D);
    fill_uniform(exec, A, args.seed, RngStream::user, T(0), T(1));
    run_case<T>(exec, args, A, "dense", V, D, V * D);
  }
  if (args.sparse != "none") {
    const auto d = bench::split(args.sparse, 'x');
    const auto coo = bench::power_law<T>(std::stoll(d.at(0)), std::stoll(d.at(1)), std::stoll(d.at(2)), args.seed);
    auto A = to_csr(exec, coo);
    run_case<T>(exec, args, A, "sparse", coo.num_rows, coo.num_cols, static_cast<std::int64_t>(coo.nnz()));
  }
  if (!args.input.empty()) {
    const auto coo = io::read_matrix<T>(args.input, io::parse_format(args.format));
    auto A = to_csr(exec, coo);
    run_case<T>(exec, args, A, "file", coo.num_rows, coo.num_cols, static_cast<std::int64_t>(coo.nnz()));
  }
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_nmf [--dense VxD|none] [--sparse VxDxNNZ|none] [--ks 16,64,128,256]
          [--algs hals,alo,mu] [--precision float|double|both] [--iters N]
          [--tiles 4,8,16,32,64] [--tile-k K] [--seed S]
          [--input FILE [--format auto|mm|edges|ratings|bmf|dense]]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  const Args args = parse(argc, argv);
  const Exec exec;
  try {
    if (args.precision == "float" || args.precision == "both") run<float>(exec, args);
    if (args.precision == "double" || args.precision == "both") run<double>(exec, args);
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "bench_nmf: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
