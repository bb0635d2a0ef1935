// `kfactor bmf`: Boolean matrix factorization (CuBin), and its demo entry.
//
// Input through kfactor::io (any --format; ratings keep their user/item ids);
// an entry is a one when its value is >= --threshold (when given) or nonzero.
// Factors: PREFIX_A.mtx / PREFIX_B.mtx (coordinate, value 1 per set bit), or
// for ratings input PREFIX_A.csv / PREFIX_B.csv (one line per user / item with
// its original id, then the k bits), written as one output set (a
// `kfactor-set` stamp line in each, io::OutputSet). --checkpoint/--restart
// save and continue the exact State (io/checkpoint.hpp). No output and no
// checkpoint may replace the input (nor an output the restart checkpoint):
// every target is checked before the run (io::check_run_files).
//
// --distributed (under `mpiexec -n P kfactor bmf --distributed ...`): every
// rank reads the input and checks the run's files (errors agreed on every
// rank), the ranks compare its checksum, keep their rows of C
// (kfactor/distributed/bmf.hpp) and run the same search, with the same
// factors for one seed as one process; rank 0 prints progress and the report
// and writes the output set. Checkpoints hold the whole factors in the
// single-process layout, so a run restarts on any number of ranks, or
// without --distributed, and vice versa.
#include "cli.hpp"

#include <kfactor/bmf/bmf.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/io/bit_factor.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include <kfactor/config.hpp>
#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/bmf.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/collective.hpp>

#include <mpi.h>
#endif

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::cli {
namespace {

/// The ones of the input (value >= threshold, or nonzero), with the ratings'
/// original ids when the input was a ratings file.
struct BooleanInput {
  CooMatrix<double> ones;                      ///< values all 1
  std::vector<std::int64_t> row_ids, col_ids;  ///< empty unless ratings
};

BooleanInput read_boolean_input(const std::string& path, const std::string& format_name, double threshold,
                                bool has_threshold) {
  auto r = io::read_input<double>(path, io::parse_format(format_name));
  BooleanInput in;
  const CooMatrix<double> m = std::move(r.matrix);
  in.row_ids = std::move(r.user_ids);
  in.col_ids = std::move(r.item_ids);
  in.ones.num_rows = m.num_rows;
  in.ones.num_cols = m.num_cols;
  for (std::size_t e = 0; e < m.nnz(); ++e) {
    const double v = m.values.empty() ? 1.0 : m.values[e];
    if (has_threshold ? v >= threshold : v != 0.0) {
      in.ones.rows.push_back(m.rows[e]);
      in.ones.cols.push_back(m.cols[e]);
      in.ones.values.push_back(1.0);
    }
  }
  return in;
}

constexpr double mib = 1024.0 * 1024.0;

struct BmfCliOptions {
  CommonOptions common;
  bmf::Options solver;
  double threshold = 0.0;
  std::string init = bmf::to_string(bmf::Options{}.init), dense_c = "auto", order = "columns-first";
  double dense_limit_mb = 1024;
  double target_error = 0.0;
  std::string checkpoint, restart;
  int checkpoint_every = 100;
  bool distributed = false;
};

/// PREFIX_A / PREFIX_B with the extension the input decides (.csv for
/// ratings, which keep their ids; else .mtx).
std::pair<std::string, std::string> output_names(const BmfCliOptions& o, const BooleanInput& input) {
  const std::string ext = input.row_ids.empty() ? ".mtx" : ".csv";
  return {o.common.output + "_A" + ext, o.common.output + "_B" + ext};
}

/// Refuses, before the run, an output or checkpoint that would replace the
/// input, an output over the restart checkpoint, and two targets that are
/// one file (UsageError naming both paths).
void check_files(const BmfCliOptions& o, const BooleanInput& input) {
  io::RunFiles files;
  files.inputs = {o.common.input};
  if (!o.common.output.empty()) {
    const auto [a, b] = output_names(o, input);
    files.outputs = {a, b};
  }
  files.checkpoint = o.checkpoint;
  files.restart = o.restart;
  io::check_run_files(files);
}

/// A and B as one output set.
template <class Factor>
std::string write_factors(const BmfCliOptions& o, const BooleanInput& input, const Factor& A, const Factor& B) {
  const auto [apath, bpath] = output_names(o, input);
  std::vector<std::string> protected_files{o.common.input};
  if (!o.restart.empty()) protected_files.push_back(o.restart);
  const io::OutputSet set(protected_files, {"A", "B"});
  if (!input.row_ids.empty()) {
    io::write_bit_factor_csv(apath, A, false, input.row_ids, set["A"]);
    io::write_bit_factor_csv(bpath, B, true, input.col_ids, set["B"]);
    return o.common.output + "_{A,B}.csv";
  }
  io::write_bit_factor_matrix_market(apath, A, "kfactor bmf factor A (m x k)", set["A"]);
  io::write_bit_factor_matrix_market(bpath, B, "kfactor bmf factor B (k x n)", set["B"]);
  return o.common.output + "_{A,B}.mtx";
}

/// --distributed, on every rank of MPI_COMM_WORLD (rank 0 prints and writes).
void run_bmf_distributed(const BmfCliOptions& o, bool has_threshold) {
#if defined(KFACTOR_HAVE_MPI)
  using Space = Kokkos::DefaultExecutionSpace;
  namespace db = distributed::bmf;
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const Space exec;
  const auto& s = o.solver;
  const auto t0 = std::chrono::steady_clock::now();
  const auto input = distributed::agree(comm, [&] {
    auto in = read_boolean_input(o.common.input, o.common.format, o.threshold, has_threshold);
    check_files(o, in);
    return in;
  });
  const Kokkos::DefaultHostExecutionSpace host;
  const auto fp = fingerprint(host, to_csr(host, input.ones));
  distributed::require_same(comm, fp.checksum, "the checksum of " + o.common.input);
  const auto problem = db::make_problem(exec, comm, input.ones, s);
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto meta = checkpoint_meta<std::uint64_t, Space>("bmf", option_values(s), fp, s.rank);
  meta.precision = "bits";
  meta.input_files = {o.common.input};  // a checkpoint may not replace the input
  const auto t1 = std::chrono::steady_clock::now();
  auto state = db::init(exec, problem, s);
  std::string setup_change;
  if (!o.restart.empty())
    setup_change = warn_restart(load_checkpoint(comm, o.restart, state, meta, state.row_blocks()).setup_change);
  const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  // Collective: every rank calls it each iteration, so that all ranks stop
  // together on SIGINT/SIGTERM; rank 0 prints.
  Observer observer = progress_printer(o.common, 100, comm);
  if (!o.checkpoint.empty())
    observer = chain(std::move(observer),
                     distributed::checkpoint_observer(comm, o.checkpoint, o.checkpoint_every, state, meta));
  Report report = db::resume(exec, problem, s, state, observer);
  if (!o.checkpoint.empty()) {
    save_checkpoint(comm, o.checkpoint, state, meta, state.row_blocks());
    report.info["checkpoint"] = o.checkpoint;
  }
  if (!o.restart.empty()) note_restart(report, o.restart, setup_change);
  report.timings.set("read", read_s);
  report.timings.set("init", init_s);
  report.info["input"] = o.common.input;
  if (!o.common.output.empty()) {
    const auto A = db::factor_a(exec, state), B = db::factor_b(state);
    // Rank 0 writes the set; its error ends every rank alike.
    distributed::agree(comm, [&] {
      if (rank == 0) report.info["output"] = write_factors(o, input, A, B);
    });
  }
  if (rank == 0) print_report(o.common, report);
#else
  (void)o;
  (void)has_threshold;
  throw UsageError("bmf: --distributed needs kfactor built with MPI");
#endif
}

const Registrar bmf_command{Command{
    "bmf", "Boolean matrix factorization C ~ A o B (CuBin: parallel random bit-flip search)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<BmfCliOptions>();
      o->common.rank = 20;
      o->common.iters = 10000;
      add_common_options(cmd, o->common, bmf::Options::rank_range, bmf::Options::max_iterations_range);
      auto& s = o->solver;
      auto* thr = add_number(cmd, "--threshold", o->threshold,
                             "a value is a one when >= t (ratings, mm, dense); default: nonzero, so a pattern or 0/1 "
                             "file reads as is",
                             Range<double>{});
      thr->default_str("");
      add_number(cmd, "--batch,-L", s.batch,
                 "lines changed in parallel per half-iteration (CuBin's linesAtOnce; the default proposes every "
                 "line of the thesis files each iteration)",
                 bmf::Options::batch_range);
      add_number(cmd, "--flip-prob", s.flip_prob,
                 "probability of flipping each bit of a proposed line (default 1/8: CuBin's code)",
                 bmf::Options::flip_prob_range);
      add_number(cmd, "--temperature", s.temperature, "Metropolis start temperature T0 (default 0: greedy, CuBin's)",
                 bmf::Options::temperature_range);
      add_number(cmd, "--temp-step", s.temp_step,
                 "multiply T by --temp-factor every this many iterations (default: never)",
                 bmf::Options::temp_step_range);
      add_number(cmd, "--temp-factor", s.temp_factor, "cooling factor (default 0.99: slow cooling)",
                 bmf::Options::temp_factor_range);
      add_number(cmd, "--weight-ones", s.weight_ones,
                 "cost of a missed one (a spurious one costs 1; default 1: the plain Hamming error)",
                 bmf::Options::weight_ones_range);
      cmd.add_option("--init", o->init,
                     "initial factors: cover (greedy Asso-like cover of C's ones; the default: after 300 "
                     "iterations at k = 20 the search ends at E_rec 6.45e-3 on APatio and 3.95e-3 on AOffice from "
                     "it, against 7.31e-3 and 4.21e-3 from CuBin's density100, the best of the others) | dost|"
                     "density100|density (CuBin's modes 1-3) | rows (B's rows = random rows of C)")
          ->capture_default_str()
          ->check(CLI::IsMember({"dost", "density100", "density", "rows", "cover"}));
      add_number(cmd, "--cover-candidates", s.cover_candidates,
                 "--init cover: candidate lines per factor line (default 64: more costs time, gains little)",
                 bmf::Options::cover_candidates_range);
      cmd.add_option("--dense-c", o->dense_c,
                     "store C as dense bits: auto|on|off (default auto: dense up to --dense-limit-mb; same factors "
                     "either way)")
          ->capture_default_str()
          ->check(CLI::IsMember({"auto", "on", "off"}));
      add_number(cmd, "--dense-limit-mb", o->dense_limit_mb,
                 "auto: dense bits up to this many MiB (default 1024: fits any GPU)",
                 Range<double>{.lo = 0.0, .hi = double(bmf::Options::dense_limit_bytes_range.hi) / mib});
      cmd.add_option("--order", o->order, "columns-first (B then A: CuBin's code, the default) | rows-first")
          ->capture_default_str()
          ->check(CLI::IsMember({"columns-first", "rows-first"}));
      add_number(cmd, "--proposal-group", s.proposal_group,
                 "lines i with equal i / G share one flip mask (default 1: independent proposals)",
                 bmf::Options::proposal_group_range);
      add_number(cmd, "--target-error", o->target_error,
                 "stop when the relative error is <= this (default 0: only an exact factorization)",
                 bmf::Options::target_range);
      add_number(cmd, "--every-line-changed", s.every_line_changed,
                 "no-improvement stop after (max(m,n)/L+1)*this iterations (default 1000: CuBin's)",
                 bmf::Options::every_line_changed_range);
      cmd.add_option("--checkpoint", o->checkpoint, "save the solver state to this HDF5 file (and at the end)");
      auto* every = add_number(cmd, "--checkpoint-every", o->checkpoint_every,
                               "iterations between checkpoints (default 100: a small share of the run time)",
                               checkpoint_every_range);
      cmd.add_option("--restart", o->restart,
                     "continue from this checkpoint (same input, rank and options) to --iters");
      cmd.add_flag("--distributed", o->distributed,
                   "run over the ranks of MPI_COMM_WORLD (mpiexec -n P kfactor bmf --distributed ...): rows of C "
                   "and A split over the ranks, B replicated; the same factors for one seed as one process. "
                   "Default off");
      return [o, thr, every] {
        if (every->count() > 0 && o->checkpoint.empty()) throw UsageError("bmf: --checkpoint-every needs --checkpoint");
        auto& s = o->solver;
        s.rank = o->common.rank;
        s.stop.max_iterations = o->common.iters;
        s.stop.target = o->target_error;
        s.seed = o->common.seed;
        s.init = bmf::parse_init(o->init);
        s.dense_c = bmf::parse_dense_c(o->dense_c);
        s.order = bmf::parse_order(o->order);
        s.dense_limit_bytes = std::size_t(o->dense_limit_mb * mib);
        s.validate();
        if (o->distributed) {
          run_bmf_distributed(*o, thr->count() > 0);
          return;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const auto input = read_boolean_input(o->common.input, o->common.format, o->threshold, thr->count() > 0);
        check_files(*o, input);
        using Space = Kokkos::DefaultExecutionSpace;
        const Space exec;
        const auto problem = bmf::make_problem(exec, input.ones, s);
        const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

        CheckpointMeta meta;
        if (!o->checkpoint.empty() || !o->restart.empty()) {
          meta = checkpoint_meta<std::uint64_t, Space>(
              "bmf", option_values(s),
              fingerprint(Kokkos::DefaultHostExecutionSpace{}, to_csr(Kokkos::DefaultHostExecutionSpace{}, input.ones)),
              s.rank);
          meta.precision = "bits";
          meta.input_files = {o->common.input};  // a checkpoint may not replace the input
        }
        const auto t1 = std::chrono::steady_clock::now();
        auto state = bmf::init(exec, problem, s);
        std::string setup_change;
        if (!o->restart.empty()) setup_change = warn_restart(load_checkpoint(o->restart, state, meta).setup_change);
        const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        Observer observer = progress_printer(o->common, 100);
        if (!o->checkpoint.empty())
          observer = chain(std::move(observer), checkpoint_observer(o->checkpoint, o->checkpoint_every, state, meta));
        Report report = bmf::resume(exec, problem, s, state, observer);
        if (!o->checkpoint.empty()) {
          save_checkpoint(o->checkpoint, state, meta);
          report.info["checkpoint"] = o->checkpoint;
        }
        if (!o->restart.empty()) note_restart(report, o->restart, setup_change);
        report.timings.set("read", read_s);
        report.timings.set("init", init_s);
        report.info["input"] = o->common.input;
        if (!o->common.output.empty())
          report.info["output"] = write_factors(*o, input, bmf::factor_a(state), bmf::factor_b(state));
        print_report(o->common, report);
      };
    }}};

// Demo: a planted 3000 x 2000 Boolean matrix, k = 10, 3% of its ones flipped
// off and as many zeros flipped on; greedy, every line proposed each
// iteration (about 3 s on one core; reaches ~2x the planted factors' error).
const Registrar bmf_demo{Demo{"bmf", [](std::uint64_t seed) {
                                const auto p = bmf::make_planted(3000, 2000, 10, 0.05, 0.03, seed);
                                bmf::Options o;
                                o.rank = 10;
                                o.seed = seed;
                                o.stop.max_iterations = 1500;
                                o.batch = 4000;
                                o.flip_prob = 0.1;
                                o.init = bmf::Init::dost;
                                o.every_line_changed = 100;

                                using Space = Kokkos::DefaultExecutionSpace;
                                const auto prob = bmf::make_problem(Space{}, p.rows, p.cols, p.one_rows, p.one_cols, o);
                                auto r = bmf::solve(Space{}, prob, o);
                                const auto truth = bmf::full_error(Space{}, prob, copy_to<Space::memory_space>(p.A),
                                                                   copy_to<Space::memory_space>(p.Bt));
                                r.report.metrics.set("planted_relative_error", truth.relative());
                                return r.report;
                              }}};

}  // namespace
}  // namespace kfactor::cli
