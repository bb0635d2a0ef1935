// `kfactor sddmm`: P = S o (A B^T) at S's nonzeros, timed; and its demo entry.
#include "cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/sddmm/generate.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>

namespace kfactor::cli {
// A named namespace (not an anonymous one): CUDA's extended lambdas need an
// enclosing function with external linkage.
namespace sddmm_command_detail {

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

/// The command's one file-reading call: kfactor::io::read_matrix in the
/// --format given (auto: detected from the content and name; Matrix Market,
/// edge lists, ratings, bmf, dense). The readers' InputErrors go to main (exit 3).
CooMatrix<double> read_sddmm_input(const std::string& path, const std::string& format) {
  return io::read_matrix<double>(path, io::parse_format(format));
}

struct SddmmCliOptions {
  CommonOptions common;
  int reps = 20;
  bool autotune = false;
  bool check = false;
  std::string kernel = "auto";
  bool no_tiles = false;
  int tile_cols = 0, tk = 0, chunk = 0, lanes = 0;
  std::string generate = "powerlaw";
  std::int64_t rows = 20000, cols = 10000, nnz = 1000000;
  std::string tune_cache;
};

template <class T, class TI>
Report run_sddmm(const SddmmCliOptions& o, const CooMatrix<double>& coo) {
  const Space exec;
  Report r;
  r.command = "sddmm";
  r.backend = backend_name<Space>();
  r.precision = o.common.precision;
  CooMatrix<T> ct{coo.num_rows, coo.num_cols, coo.rows, coo.cols, {}};
  ct.values.reserve(coo.nnz());
  for (double v : coo.values) ct.values.push_back(static_cast<T>(v));
  auto S = to_csr(exec, ct);
  const int K = o.common.rank;
  r.rows = S.num_rows();
  r.cols = S.num_cols;
  r.nnz = static_cast<std::int64_t>(S.nnz());
  r.rank = K;

  using Acc = detail::sddmm_acc_t<TI>;
  DenseMatrix<Acc, Mem> A0("A0", S.num_rows(), K), B0("B0", S.num_cols, K);
  fill_uniform(exec, A0, o.common.seed, RngStream::factor_w, Acc(-1), Acc(1));
  fill_uniform(exec, B0, o.common.seed, RngStream::factor_h, Acc(-1), Acc(1));
  DenseMatrix<TI, Mem> A("A", S.num_rows(), K), B("B", S.num_cols, K);
  Kokkos::parallel_for(
      "cast", Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>(exec, {0, 0}, {A.extent(0), A.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k) { A(i, k) = static_cast<TI>(A0(i, k)); });
  Kokkos::parallel_for(
      "cast", Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>(exec, {0, 0}, {B.extent(0), B.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k) { B(i, k) = static_cast<TI>(B0(i, k)); });

  SddmmOptions opt;
  opt.kernel = parse_sddmm_kernel(o.kernel);
  opt.column_tiles = !o.no_tiles;
  opt.tile_cols = o.tile_cols;
  opt.tk = o.tk;
  opt.chunk = o.chunk;
  opt.vector_length = o.lanes;
  opt.check_inputs = false;  // inputs are generated; keep the timing to the kernel
  opt.validate();
  if (o.autotune) {
    const auto t0 = std::chrono::steady_clock::now();
    auto tuned = sddmm_autotune<Space, T, TI>(exec, S, K, opt, o.tune_cache, 5);
    r.timings.set("autotune", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    opt = tuned.best;
    opt.check_inputs = false;
    r.info["autotune"] = tuned.from_cache ? "cached" : std::to_string(tuned.trials.size()) + " trials";
  }
  SddmmPlan<Space, T, TI> plan(exec, S, K, opt);
  Kokkos::View<T*, Mem> out("out", S.nnz());
  auto apply = [&] { plan(exec, A, B, out); };
  for (int w = 0; w < 3; ++w) apply();
  exec.fence();
  std::vector<double> times;
  for (int rep = 0; rep < std::max(o.reps, 1); ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    apply();
    exec.fence();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double t = times[times.size() / 2];
  const double flops = 2.0 * double(S.nnz()) * K;
  r.iterations = static_cast<int>(times.size());
  r.seconds = t;
  r.metrics.set("gflops", t > 0 ? flops / t * 1e-9 : 0.0);
  r.metrics.set("apply_seconds", t);
  r.timings.set("plan_build", plan.info().build_seconds);
  r.timings.set("apply_median", t);
  if (o.check) {
    Kokkos::View<T*, Mem> ref("ref", S.nnz());
    sddmm_reference(exec, S, A, B, ref);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
    auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ref);
    double worst = 0;
    for (std::size_t e = 0; e < h.extent(0); ++e)
      worst = std::max(worst, std::abs(double(h(e)) - double(hr(e))) / (1.0 + std::abs(double(hr(e)))));
    r.metrics.set("max_diff_vs_reference", worst);
  }
  const auto& in = plan.info();
  r.info["kernel"] = to_string(in.kernel);
  r.info["staged"] = in.transposed ? "B" : "A";
  r.info["tile_cols"] = std::to_string(in.tile_cols);
  r.info["tiles"] = std::to_string(in.tiles);
  r.info["model_tile_cols"] = std::to_string(in.model_tile_cols);
  r.info["density"] = std::to_string(in.density);
  r.info["vector_length"] = std::to_string(in.vector_length);
  r.info["chunk"] = std::to_string(in.chunk);
  r.info["tk"] = std::to_string(in.tk);
  r.info["options"] = sddmm_options_string(opt);
  return r;
}

Report dispatch(const SddmmCliOptions& o, const CooMatrix<double>& coo) {
  const auto& p = o.common.precision;
  if (p == "double") return run_sddmm<double, double>(o, coo);
  if (p == "bf16") return run_sddmm<float, Kokkos::Experimental::bhalf_t>(o, coo);
  if (p == "fp16") return run_sddmm<float, Kokkos::Experimental::half_t>(o, coo);
  return run_sddmm<float, float>(o, coo);
}

}  // namespace sddmm_command_detail

namespace {
using namespace sddmm_command_detail;

const Registrar sddmm_command{Command{
    "sddmm", "sampled dense-dense product P = S o (A B^T) at S's nonzeros; GFLOP/s = 2 nnz K / t",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<SddmmCliOptions>();
      o->common.rank = 32;
      o->common.precision = "float";
      cmd.add_option("-i,--input", o->common.input, "sparse matrix S (any io/ format); none: generate");
      cmd.add_option("--format", o->common.format, "input format: auto|mm|edges|ratings|bmf|dense")
          ->capture_default_str();
      cmd.add_option("-k,--rank", o->common.rank, "inner dimension K")->capture_default_str()->check(CLI::PositiveNumber);
      cmd.add_option("--precision", o->common.precision, "float|double|bf16|fp16 (bf16/fp16: A and B stored so)")
          ->capture_default_str()
          ->check(CLI::IsMember({"float", "double", "bf16", "fp16"}));
      cmd.add_option("--reps", o->reps, "timed repetitions (median reported) after 3 warm-ups")->capture_default_str();
      cmd.add_option("--seed", o->common.seed, "seed of the random A and B")->capture_default_str();
      cmd.add_flag("--autotune", o->autotune, "search around the model's configuration first");
      cmd.add_option("--tune-cache", o->tune_cache, "autotune cache file (appended)");
      cmd.add_flag("--check", o->check, "compare with the reference kernel");
      cmd.add_option("--kernel", o->kernel, "auto|reference|rowsplit|sm_l2|sm_sm")->capture_default_str();
      cmd.add_flag("--no-tiles", o->no_tiles, "no column tiles");
      cmd.add_option("--tile-cols", o->tile_cols, "column-tile width T_j (0: model)");
      cmd.add_option("--tk", o->tk, "SM-L2 K-slice (multiple of 32; 0: auto)");
      cmd.add_option("--chunk", o->chunk, "row-split items' max nonzeros (0: auto)");
      cmd.add_option("--lanes", o->lanes, "vector lanes per item (0: auto)");
      cmd.add_option("--generate", o->generate, "without --input: powerlaw|m1_nytimes_like|m2_webgoogle_like")
          ->capture_default_str();
      cmd.add_option("--rows", o->rows, "generated rows")->capture_default_str();
      cmd.add_option("--cols", o->cols, "generated columns")->capture_default_str();
      cmd.add_option("--nnz", o->nnz, "generated nonzeros")->capture_default_str();
      cmd.add_flag("--json", o->common.json, "print exactly one JSON report");
      return [o] {
        CooMatrix<double> coo;
        std::string source;
        if (!o->common.input.empty()) {
          coo = read_sddmm_input(o->common.input, o->common.format);
          source = o->common.input;
        } else {
          PowerLawSpec spec = peer_matrix_spec(o->generate);
          if (spec.m == 0) {
            if (o->generate != "powerlaw") throw UsageError("sddmm: unknown --generate " + o->generate);
            spec = {o->rows, o->cols, o->nnz, 1.0, 200.0, 1.0, 60.0, o->common.seed};
            if (o->nnz > o->rows * o->cols / 2) throw UsageError("sddmm: --nnz must be at most rows * cols / 2");
          }
          coo = power_law_pattern<double>(spec, -1.0, 1.0);
          source = "generated:" + o->generate;
        }
        Report r = dispatch(*o, coo);
        r.info["input"] = source;
        print_report(o->common, r);
      };
    }}};

const Registrar sddmm_demo{Demo{"sddmm", [](std::uint64_t seed) {
  // A planted check: the tuned kernel against the reference kernel on a
  // power-law pattern; the metric is their largest relative difference.
  SddmmCliOptions o;
  o.common.rank = 32;
  o.common.precision = "float";
  o.common.seed = seed;
  o.reps = 5;
  o.check = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto coo = power_law_pattern<double>({4000, 3000, 150000, 1.0, 200.0, 1.0, 60.0, seed}, -1.0, 1.0);
  Report r = dispatch(o, coo);
  Metrics m;
  m.set("max_diff_vs_reference", r.metrics.get("max_diff_vs_reference"));
  m.set("gflops", r.metrics.get("gflops"));
  r.metrics = m;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}}};

}  // namespace
}  // namespace kfactor::cli
