// `kfactor sddmm`: P = S o (A B^T) at S's nonzeros, timed; and its demo entry.
#include "cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
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

/// The command's one file-reading call (a local reader until io/ is merged):
/// Matrix Market coordinate (real / integer / pattern; general / symmetric)
/// or a whitespace edge list ("u v [w]", 0-based; '#' and '%' comments; a
/// first line holding a single count is skipped). Duplicates keep the first.
CooMatrix<double> read_sddmm_input(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  CooMatrix<double> coo;
  std::string line;
  std::int64_t lineno = 0;
  bool mm = false, symmetric = false, pattern = false, have_size = false;
  std::int64_t maxr = -1, maxc = -1;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.rfind("%%MatrixMarket", 0) == 0) {
      mm = true;
      std::string lower = line;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      if (lower.find("coordinate") == std::string::npos) throw InputError(path, 1, "only coordinate Matrix Market");
      symmetric = lower.find("symmetric") != std::string::npos;
      pattern = lower.find("pattern") != std::string::npos;
      continue;
    }
    if (line.empty() || line[0] == '%' || line[0] == '#') continue;
    std::istringstream ls(line);
    if (mm && !have_size) {
      std::int64_t r, c, nz;
      if (!(ls >> r >> c >> nz)) throw InputError(path, lineno, "bad size line");
      coo.num_rows = r;
      coo.num_cols = c;
      have_size = true;
      continue;
    }
    std::int64_t u, v;
    double w = 1.0;
    if (!(ls >> u)) continue;
    if (!(ls >> v)) {
      if (lineno == 1) continue;  // a count line
      throw InputError(path, lineno, "expected 'row col [value]'");
    }
    if (!(mm && pattern)) ls >> w;
    if (mm) --u, --v;
    if (u < 0 || v < 0) throw InputError(path, lineno, "negative index");
    if (!std::isfinite(w)) throw InputError(path, lineno, "value is NaN or Inf");
    coo.rows.push_back(static_cast<ordinal_t>(u));
    coo.cols.push_back(static_cast<ordinal_t>(v));
    coo.values.push_back(w);
    if (symmetric && u != v) {
      coo.rows.push_back(static_cast<ordinal_t>(v));
      coo.cols.push_back(static_cast<ordinal_t>(u));
      coo.values.push_back(w);
    }
    maxr = std::max({maxr, u, symmetric ? v : u});
    maxc = std::max({maxc, v, symmetric ? u : v});
  }
  if (!mm) {
    coo.num_rows = maxr + 1;
    coo.num_cols = maxc + 1;
  }
  // Merge duplicates (keep the first).
  std::vector<std::size_t> order(coo.nnz());
  for (std::size_t e = 0; e < order.size(); ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(coo.rows[a], coo.cols[a]) < std::tie(coo.rows[b], coo.cols[b]);
  });
  CooMatrix<double> out;
  out.num_rows = coo.num_rows;
  out.num_cols = coo.num_cols;
  for (std::size_t q = 0; q < order.size(); ++q) {
    const auto e = order[q];
    if (q > 0 && coo.rows[e] == coo.rows[order[q - 1]] && coo.cols[e] == coo.cols[order[q - 1]]) continue;
    out.rows.push_back(coo.rows[e]);
    out.cols.push_back(coo.cols[e]);
    out.values.push_back(coo.values[e]);
  }
  return out;
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
      cmd.add_option("-i,--input", o->common.input, "sparse matrix S (Matrix Market or edge list); none: generate");
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
          coo = read_sddmm_input(o->common.input);
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
