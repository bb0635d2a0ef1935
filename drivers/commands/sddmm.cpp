// `kfactor sddmm`: P = S o (A B^T) at S's nonzeros, timed; and its demo entry.
// --output writes P as an output set of one member (a `kfactor-set` stamp
// line, io::OutputSet); neither it nor --tune-cache may be the input file,
// nor --output the tune cache: checked before anything is read
// (io::check_run_files). With --distributed --gather 0 each rank writes its
// own part instead (distributed::part_path names it,
// SddmmRankPlan::write_part writes it), checked the same way on every rank.
// --gather without --distributed is a usage error: one process always holds
// the whole product, so there is nothing to choose.
#include "cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/core/timing.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/sddmm_output.hpp>
#include <kfactor/sddmm/generate.hpp>
#include <kfactor/sddmm/planted.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/output.hpp>
#include <kfactor/distributed/sddmm.hpp>

#include <mpi.h>
#endif

namespace kfactor::cli {
// A named namespace (not an anonymous one): CUDA's extended lambdas need an
// enclosing function with external linkage.
namespace sddmm_command_detail {

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

/// The command's one file-reading call: kfactor::io::read_input in the
/// --format given (auto: detected from the content and name; Matrix Market,
/// edge lists, ratings, bmf, dense, HDF5 CSR). The readers' InputErrors go
/// to main (exit 3).
CooMatrix<double> read_sddmm_input(const std::string& path, const std::string& format) {
  return io::read_input<double>(path, io::parse_format(format)).matrix;
}

/// Untimed runs before the timed ones: the first builds caches and pages in
/// the inputs.
constexpr int warmup_runs = 3;

/// --reps: a million repetitions of even the smallest product is hours.
constexpr Range<int> reps_range{.lo = 1, .hi = 1000000};
/// --gather: 1 gathers P on rank 0, 0 leaves it distributed.
constexpr Range<int> gather_range{.lo = 0, .hi = 1, .note = "1: gathered on rank 0, 0: one part per rank"};
/// A generated pattern's rows and columns are ordinal_t indices; its
/// nonzeros are bounded by rows * cols / 2 (load_or_generate).
constexpr Range<std::int64_t> generated_extent_range{.lo = 1, .hi = std::numeric_limits<ordinal_t>::max()};
constexpr Range<std::int64_t> generated_nnz_range{.lo = 0};

struct SddmmCliOptions {
  CommonOptions common;
  int reps = 20;
  bool autotune = false;
  bool check = false;
  std::string kernel = "auto";
  bool no_tiles = false;
  int tile_cols = 0, tk = 0, chunk = 0, lanes = 0, panel_rows = 0;
  double l2_hints = -1;  ///< SddmmOptions::hot_cache_fraction
  std::string generate = "powerlaw";
  std::int64_t rows = 20000, cols = 10000, nnz = 1000000;
  std::string tune_cache;
  std::string output;                     ///< Matrix Market file of P at S's pattern (or each rank's part of it)
  bool distributed = false;               ///< under mpiexec: S's columns split over the ranks
  std::string column_split = "balanced";  ///< with --distributed: balanced|timed|equal
  int gather = 1;                         ///< with --distributed: 0 leaves P distributed (one part per rank)
};

/// The files the run reads: --input, when given.
std::vector<std::string> input_files(const SddmmCliOptions& o) {
  if (o.common.input.empty()) return {};
  return {o.common.input};
}

/// The files the run must leave alone: the input and the tune cache.
std::vector<std::string> protected_files(const SddmmCliOptions& o) {
  std::vector<std::string> files = input_files(o);
  if (!o.tune_cache.empty()) files.push_back(o.tune_cache);
  return files;
}

/// Refuses the output file `output` (--output, or this rank's part of it)
/// or --tune-cache over the input, and the output over the tune cache
/// (UsageError naming both paths).
void check_files(const SddmmCliOptions& o, const std::string& output) {
  io::RunFiles files;
  files.inputs = input_files(o);
  if (!output.empty()) files.outputs = {output};
  if (!o.tune_cache.empty()) files.appended = {o.tune_cache};
  io::check_run_files(files);
}

/// P at S's pattern to --output, an output set of one member.
template <class T, class MemorySpace, class Values>
void write_output(const SddmmCliOptions& o, const CsrMatrix<T, MemorySpace>& S, const Values& P,
                  const std::string& comment) {
  const io::OutputSet set(protected_files(o), {"P"});
  io::write_sddmm_output(o.output, S, P, comment, set["P"]);
}

/// --check's measure: the largest difference between `got` and the
/// reference `want` (host-indexable, `n` values each), relative to 1 + |want|.
template <class Got, class Want>
double worst_relative_diff(const Got& got, const Want& want, std::size_t n) {
  double worst = 0;
  for (std::size_t e = 0; e < n; ++e)
    worst = std::max(worst, std::abs(double(got[e]) - double(want[e])) / (1.0 + std::abs(double(want[e]))));
  return worst;
}

/// The plan options the command line asks for.
SddmmOptions plan_options(const SddmmCliOptions& o) {
  SddmmOptions opt;
  opt.kernel = parse_sddmm_kernel(o.kernel);
  opt.column_tiles = !o.no_tiles;
  opt.tile_cols = o.tile_cols;
  opt.tk = o.tk;
  opt.chunk = o.chunk;
  opt.vector_length = o.lanes;
  opt.panel_rows = o.panel_rows;
  opt.hot_cache_fraction = o.l2_hints;
  opt.check_inputs = false;  // inputs are generated; keep the timing to the kernel
  opt.validate();
  return opt;
}

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

  const auto factors = sddmm_random_factors<TI>(exec, S.num_rows(), S.num_cols, K, o.common.seed);
  const auto& A = factors.first;
  const auto& B = factors.second;
  SddmmOptions opt = plan_options(o);
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
  const auto times = time_runs(exec, o.reps, warmup_runs, [&] { plan(exec, A, B, out); });
  const double t = times.median;
  const double flops = 2.0 * double(S.nnz()) * K;
  r.iterations = static_cast<int>(times.samples.size());
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
    r.metrics.set("max_diff_vs_reference", worst_relative_diff(h, hr, h.extent(0)));
  }
  const auto& in = plan.info();
  r.info["kernel"] = to_string(in.kernel);
  r.info["staged"] = in.transposed ? "B" : "A";
  r.info["tile_cols"] = std::to_string(in.tile_cols);
  r.info["tiles"] = std::to_string(in.tiles);
  r.info["model_tile_cols"] = std::to_string(in.model_tile_cols);
  r.info["density"] = std::to_string(in.density);
  r.info["vector_length"] = std::to_string(in.vector_length);
  r.info["l2_hot_rows"] = std::to_string(in.hot_rows);
  r.info["chunk"] = std::to_string(in.chunk);
  r.info["tk"] = std::to_string(in.tk);
  r.info["options"] = sddmm_options_string(opt);
  if (!o.output.empty()) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
    write_output(o, S, h, "kfactor sddmm: P = S o (A B^T), K = " + std::to_string(K));
    r.info["output"] = o.output;
  }
  return r;
}

#if defined(KFACTOR_HAVE_MPI)
/// `--distributed` under mpiexec: every rank reads S (inside agree(), so a
/// bad file on any rank ends every rank with that error), the ranks check
/// that they hold the same S, K and seed, then each runs its column block
/// (distributed::SddmmRankPlan). The apply time of a repetition is the
/// slowest rank's; rank 0 gathers P for --output and --check and returns the
/// report (other ranks return none).
template <class T, class TI>
std::optional<Report> run_sddmm_distributed(const SddmmCliOptions& o, const CooMatrix<double>& coo, MPI_Comm comm) {
  const Space exec;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int K = o.common.rank;
  auto S = distributed::agree(comm, [&] {
    CooMatrix<T> ct{coo.num_rows, coo.num_cols, coo.rows, coo.cols, {}};
    ct.values.reserve(coo.nnz());
    for (double v : coo.values) ct.values.push_back(static_cast<T>(v));
    return to_csr(exec, ct);
  });
  const auto fp = fingerprint(exec, S);
  distributed::require_same(comm, static_cast<std::uint64_t>(fp.rows), "the input's rows");
  distributed::require_same(comm, static_cast<std::uint64_t>(fp.cols), "the input's columns");
  distributed::require_same(comm, static_cast<std::uint64_t>(fp.nnz), "the input's nonzeros");
  distributed::require_same(comm, fp.checksum, "the input's checksum (same shape, other entries)");
  distributed::require_same(comm, static_cast<std::uint64_t>(K), "the rank K");
  distributed::require_same(comm, o.common.seed, "--seed");

  using RankPlan = distributed::SddmmRankPlan<Space, T, TI>;
  const auto t_plan = std::chrono::steady_clock::now();
  struct Setup {
    SddmmOptions opt;
    std::pair<DenseMatrix<TI, Mem>, DenseMatrix<TI, Mem>> factors;
    std::unique_ptr<RankPlan> plan;
  };
  Setup setup = distributed::agree(comm, [&] {
    Setup s;
    s.opt = plan_options(o);
    s.factors = sddmm_random_factors<TI>(exec, S.num_rows(), S.num_cols, K, o.common.seed);
    s.plan = std::make_unique<RankPlan>(exec, comm, S, K, s.opt, parse_column_split(o.column_split));
    return s;
  });
  const auto& A = setup.factors.first;
  const auto& B = setup.factors.second;
  const auto& plan = setup.plan;
  const auto& opt = setup.opt;
  double plan_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_plan).count();
  auto B_local = Kokkos::subview(B, Kokkos::make_pair(plan->begin(), plan->end()), Kokkos::ALL);
  Kokkos::View<T*, Mem> out = distributed::agree(comm, [&] { return Kokkos::View<T*, Mem>("out", plan->local_nnz()); });
  // Every repetition starts together and counts as its slowest rank.
  struct SlowestRank {
    MPI_Comm comm;
    void start() const { MPI_Barrier(comm); }
    double finish(double seconds) const {
      double slowest = 0;
      MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      return slowest;
    }
  };
  const auto times =
      time_runs(exec, o.reps, warmup_runs, [&] { plan->apply(exec, A, B_local, out); }, SlowestRank{comm});
  const double t = times.median;
  double plan_max = 0;
  MPI_Reduce(&plan_seconds, &plan_max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  // Per-rank balance, gathered on rank 0.
  long long mine[2] = {static_cast<long long>(plan->local_nnz()), static_cast<long long>(plan->end() - plan->begin())};
  std::vector<long long> all(2 * static_cast<std::size_t>(size));
  MPI_Gather(mine, 2, MPI_LONG_LONG, all.data(), 2, MPI_LONG_LONG, 0, comm);

  Report r;
  const bool gathered = o.gather != 0;
  const std::string comment =
      "kfactor sddmm --distributed (" + std::to_string(size) + " ranks): P = S o (A B^T), K = " + std::to_string(K);
  std::vector<T> P;
  if (gathered && (!o.output.empty() || o.check)) P = plan->gather(out, 0);
  // Left distributed: each rank checks its own block against the reference
  // on that block, and writes its own part; nothing is gathered.
  double worst_over_ranks = 0;
  if (!gathered && o.check) {
    const double worst = distributed::agree(comm, [&] {
      Kokkos::View<T*, Mem> ref("ref", plan->local_nnz());
      if (plan->local_nnz() > 0) sddmm_reference(exec, plan->local(), A, B_local, ref);
      const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
      const auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ref);
      return worst_relative_diff(h, hr, h.extent(0));
    });
    MPI_Reduce(&worst, &worst_over_ranks, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  }
  if (!gathered && !o.output.empty()) {
    const std::string columns = plan->begin() == plan->end() ? "no columns of S"
                                                             : "columns " + std::to_string(plan->begin() + 1) + " to " +
                                                                   std::to_string(plan->end()) + " of S";
    plan->write_part(o.output, out, comment + "\nrank " + std::to_string(rank) + "'s part: " + columns,
                     protected_files(o));
  }
  if (rank == 0) {
    r.command = "sddmm";
    r.backend = backend_name<Space>();
    r.precision = o.common.precision;
    r.rows = S.num_rows();
    r.cols = S.num_cols;
    r.nnz = static_cast<std::int64_t>(S.nnz());
    r.rank = K;
    r.iterations = static_cast<int>(times.samples.size());
    r.seconds = t;
    const double flops = 2.0 * double(S.nnz()) * K;
    r.metrics.set("gflops", t > 0 ? flops / t * 1e-9 : 0.0);
    r.metrics.set("apply_seconds", t);
    long long most = 0;
    std::string nnz_list, col_list;
    for (int p = 0; p < size; ++p) {
      most = std::max(most, all[2 * p]);
      nnz_list += (p ? "," : "") + std::to_string(all[2 * p]);
      col_list += (p ? "," : "") + std::to_string(all[2 * p + 1]);
    }
    const double mean = double(S.nnz()) / size;
    r.metrics.set("nnz_imbalance", mean > 0 ? double(most) / mean : 1.0);
    r.timings.set("plan_build_max", plan_max);
    r.timings.set("apply_median_max_over_ranks", t);
    r.info["ranks"] = std::to_string(size);
    r.info["rank_nnz"] = nnz_list;
    r.info["rank_columns"] = col_list;
    r.info["options"] = sddmm_options_string(opt);
    r.info["column_split"] = o.column_split;
    r.info["gather"] = gathered ? "1" : "0";
    if (o.check && gathered) {
      Kokkos::View<T*, Mem> ref("ref", S.nnz());
      sddmm_reference(exec, S, A, B, ref);
      auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ref);
      r.metrics.set("max_diff_vs_reference", worst_relative_diff(P, hr, P.size()));
    } else if (o.check) {
      r.metrics.set("max_diff_vs_reference", worst_over_ranks);
    }
    if (!o.output.empty()) r.info["output"] = o.output;
    if (!o.output.empty() && !gathered) r.info["output_parts"] = std::to_string(size);
    // Only rank 0 writes the gathered P: a failure here is this rank's alone
    // (main() then ends the job).
    if (!o.output.empty() && gathered) write_output(o, S, P, comment);
  }
  // Every rank leaves together (a rank-0 write failure aborts the others here).
  MPI_Barrier(comm);
  if (rank != 0) return std::nullopt;
  return r;
}
#endif

Report dispatch(const SddmmCliOptions& o, const CooMatrix<double>& coo) {
  const auto& p = o.common.precision;
  if (p == "double") return run_sddmm<double, double>(o, coo);
  if (p == "bf16") return run_sddmm<float, Kokkos::Experimental::bhalf_t>(o, coo);
  if (p == "fp16") return run_sddmm<float, Kokkos::Experimental::half_t>(o, coo);
  return run_sddmm<float, float>(o, coo);
}

#if defined(KFACTOR_HAVE_MPI)
std::optional<Report> dispatch_distributed(const SddmmCliOptions& o, const CooMatrix<double>& coo, MPI_Comm comm) {
  const auto& p = o.common.precision;
  if (p == "double") return run_sddmm_distributed<double, double>(o, coo, comm);
  if (p == "bf16") return run_sddmm_distributed<float, Kokkos::Experimental::bhalf_t>(o, coo, comm);
  if (p == "fp16") return run_sddmm_distributed<float, Kokkos::Experimental::half_t>(o, coo, comm);
  return run_sddmm_distributed<float, float>(o, coo, comm);
}
#endif

/// S from --input, or generated (every rank generates the same one).
CooMatrix<double> load_or_generate(const SddmmCliOptions& o, std::string& source) {
  if (!o.common.input.empty()) {
    source = o.common.input;
    return read_sddmm_input(o.common.input, o.common.format);
  }
  PowerLawSpec spec = peer_matrix_spec(o.generate);
  if (spec.m == 0) {
    spec = {o.rows, o.cols, o.nnz, 1.0, 200.0, 1.0, 60.0, o.common.seed};
    // In doubles: rows * cols may exceed 2^63.
    if (double(o.nnz) > double(o.rows) * double(o.cols) / 2)
      throw UsageError("sddmm: --nnz must be at most --rows * --cols / 2 = " +
                       number_text(double(o.rows) * double(o.cols) / 2) + ", got " + std::to_string(o.nnz));
  }
  source = "generated:" + o.generate;
  return power_law_pattern<double>(spec, -1.0, 1.0);
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
      cmd.add_option("--format", o->common.format, "input format")->capture_default_str()->check(format_choices());
      add_number(cmd, "-k,--rank", o->common.rank, "inner dimension K", sddmm_rank_range);
      cmd.add_option("--precision", o->common.precision, "float|double|bf16|fp16 (bf16/fp16: A and B stored so)")
          ->capture_default_str()
          ->check(CLI::IsMember({"float", "double", "bf16", "fp16"}));
      add_number(cmd, "--reps", o->reps, "timed repetitions (median reported) after 3 warm-ups", reps_range);
      add_number(cmd, "--seed", o->common.seed, "seed of the random A and B", seed_range);
      cmd.add_flag("--autotune", o->autotune, "search around the model's configuration first");
      cmd.add_option("--tune-cache", o->tune_cache, "autotune cache file (appended)");
      cmd.add_flag("--check", o->check, "compare with the reference kernel");
      cmd.add_option("--kernel", o->kernel, "the kernel (auto: the model's choice)")
          ->capture_default_str()
          ->check(CLI::IsMember({"auto", "reference", "rowsplit", "nzsplit", "sm_l2", "sm_sm", "panels"}));
      cmd.add_flag("--no-tiles", o->no_tiles, "no column tiles");
      add_number(cmd, "--tile-cols", o->tile_cols, "column-tile width T_j", SddmmOptions::tile_cols_range);
      add_number(cmd, "--tk", o->tk, "SM-L2 K-slice", SddmmOptions::tk_range);
      add_number(cmd, "--chunk", o->chunk, "row-split items' max nonzeros", SddmmOptions::chunk_range);
      add_number(cmd, "--lanes", o->lanes, "vector lanes per item", SddmmOptions::vector_length_range);
      add_number(cmd, "--panel-rows", o->panel_rows, "panels: staged rows per panel (0: as many as 32 KB hold)",
                 SddmmOptions::panel_rows_range);
      add_number(cmd, "--l2-hints", o->l2_hints,
                 "nzsplit, 32 lanes, CUDA: fraction of L2 kept for the most used streamed rows (-1: 0.5 when one "
                 "tile exceeds twice the cache)",
                 SddmmOptions::hot_cache_fraction_range);
      cmd.add_option("--generate", o->generate, "without --input: the generated pattern")
          ->capture_default_str()
          ->check(CLI::IsMember({"powerlaw", "m1_nytimes_like", "m2_webgoogle_like"}));
      add_number(cmd, "--rows", o->rows, "generated rows", generated_extent_range);
      add_number(cmd, "--cols", o->cols, "generated columns", generated_extent_range);
      add_number(cmd, "--nnz", o->nnz, "generated nonzeros, at most rows * cols / 2", generated_nnz_range);
      add_output_options(cmd, o->common);
      cmd.add_option("-o,--output", o->output, "write P (S's pattern, the product's values) as Matrix Market");
      cmd.add_flag("--distributed", o->distributed,
                   "under mpiexec: split S's columns over the ranks (balanced by nonzeros); rank 0 reports");
      cmd.add_option("--column-split", o->column_split,
                     "with --distributed: balanced (equal nonzeros per rank), timed (equal measured time: up to "
                     "four timed rounds re-weigh the nonzeros) or equal (equal columns, the naive split)")
          ->check(CLI::IsMember({"balanced", "timed", "equal"}))
          ->capture_default_str();
      auto* gather = add_number(cmd, "--gather", o->gather,
                                "with --distributed and --output/--check: 1 gathers P on rank 0, 0 leaves it "
                                "distributed (each rank writes --output's part .rankR, or {rank} replaced, and "
                                "checks its own block)",
                                gather_range);
      return [o, gather] {
        if (o->distributed) {
#if defined(KFACTOR_HAVE_MPI)
          if (o->autotune) throw UsageError("sddmm: --autotune is not available with --distributed");
          MPI_Comm comm = MPI_COMM_WORLD;
          int rank = 0;
          MPI_Comm_rank(comm, &rank);
          std::string source;
          // Every rank reads the file itself, and checks the output it
          // writes; an error on any rank is every rank's.
          auto coo = distributed::agree(comm, [&] {
            check_files(*o, o->gather || o->output.empty() ? o->output : distributed::part_path(o->output, rank));
            return load_or_generate(*o, source);
          });
          auto r = dispatch_distributed(*o, coo, comm);
          if (r) {
            r->info["input"] = source;
            print_report(o->common, *r);
          }
          return;
#else
          throw UsageError("sddmm: --distributed needs a kfactor built with MPI");
#endif
        }
        if (gather->count() > 0) throw UsageError("sddmm: --gather needs --distributed");
        check_files(*o, o->output);
        std::string source;
        auto coo = load_or_generate(*o, source);
        Report r = dispatch(*o, coo);
        r.info["input"] = source;
        print_report(o->common, r);
      };
    }}};

const Registrar sddmm_demo{
    Demo{"sddmm", [](std::uint64_t seed) {
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
