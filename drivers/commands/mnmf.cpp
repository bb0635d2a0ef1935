// `kfactor mnmf`: manifold-regularized sparse NMF of a rating matrix
// (CUMNMF), Euclidean or KL, with kNN user/item graphs built on the device or
// loaded from Matrix Market files.
//
// Files go through kfactor::io (ratings keep their original ids; --format
// honoured); --checkpoint/--restart through io/checkpoint.hpp. Everything the
// run writes at its end (W, H, --save-graph-w/-h) is one output set (a
// `kfactor-set` stamp line in each, io::OutputSet). No output and no
// checkpoint may replace a file the run reads (--input, --test-input,
// --graph-w/-h; outputs: the restart checkpoint too): every target is
// checked before the run (io::check_run_files). Graphs loaded with
// --graph-w and --graph-h that both carry a stamp must come from one run.
//
// --distributed (under `mpiexec -n P kfactor mnmf --distributed ...`): every
// rank checks the run's files, reads the input and builds (or loads) the
// graphs, with errors agreed on every rank; the ranks compare the ratings'
// checksum, keep their users' and items' rows (kfactor/distributed/mnmf.hpp)
// and run the same epochs, with the same factors as one process; rank 0
// prints and writes the output set. Checkpoints hold the whole factors in the
// single-process layout, so a run restarts on any number of ranks, or
// without --distributed, and vice versa.
#include "../cli.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include <kfactor/mnmf/model_selection.hpp>

#include <kfactor/config.hpp>
#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/mnmf.hpp>

#include <mpi.h>
#endif

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace kfactor::cli {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Reads the rating matrix through io::read_input: a ratings file (CSV,
/// `::`, tab/space) or an HDF5 CSR file with ids keeps its original ids; any
/// other format (--format) has none (row/column index = id). Negative
/// ratings are refused where they are (MNMF is non-negative).
template <class T>
io::RatingData<T> read_ratings(const std::string& path, io::Format format) {
  io::ReadOptions ro;
  ro.non_negative = true;
  return io::read_input<T>(path, format, ro);
}

template <class T>
CsrMatrix<T, Mem> read_graph_mm(const std::string& path, std::int64_t n) {
  io::ReadOptions ro;
  ro.non_negative = true;  // graph weights, refused at their line
  const auto c = io::read_matrix<T>(path, io::Format::matrix_market, ro);
  if (c.num_rows != n || c.num_cols != n)
    throw InputError(path, 0,
                     "graph is " + std::to_string(c.num_rows) + " x " + std::to_string(c.num_cols) + ", expected " +
                         std::to_string(n) + " x " + std::to_string(n));
  return to_csr(Exec{}, c);
}

struct MnmfCli {
  CommonOptions common;
  std::string objective = "euclid";
  double lambda_w = 1.0, lambda_h = 1.0;
  int neighbors = 15;
  std::string weighting = "binary";
  double sigma = 0.0;
  std::string symmetrize = "or";
  double test_fraction = 0.1;
  std::string test_input;
  std::string unknown_test_ids = "drop";
  double validation_fraction = 0.0;
  std::vector<double> lambda_grid;
  std::string graph_w, graph_h, save_graph_w, save_graph_h;
  double knn_block_mb = 256;
  std::string checkpoint, restart;
  int checkpoint_every = 10;
  bool distributed = false;
};

/// The files the run reads: no output or checkpoint may replace one.
std::vector<std::string> input_files(const MnmfCli& c) {
  std::vector<std::string> files{c.common.input};
  for (const auto* f : {&c.test_input, &c.graph_w, &c.graph_h})
    if (!f->empty()) files.push_back(*f);
  return files;
}

/// The factor files' prefix and extension: --output PREFIX writes
/// PREFIX_W.mtx / PREFIX_H.mtx, --output PREFIX.csv writes PREFIX_W.csv /
/// PREFIX_H.csv with the original user / item ids.
std::pair<std::string, std::string> factor_prefix(const MnmfCli& c) {
  std::string prefix = c.common.output, ext = ".mtx";
  if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".csv") == 0) {
    prefix.resize(prefix.size() - 4);
    ext = ".csv";
  }
  return {prefix, ext};
}

/// What the run writes at its end, as (output-set member, path): the
/// factors (with --output), then the graphs --save-graph-w/-h name.
std::vector<std::pair<std::string, std::string>> output_files(const MnmfCli& c) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!c.common.output.empty()) {
    const auto [prefix, ext] = factor_prefix(c);
    files.emplace_back("W", prefix + "_W" + ext);
    files.emplace_back("H", prefix + "_H" + ext);
  }
  if (!c.save_graph_w.empty()) files.emplace_back("graph_w", c.save_graph_w);
  if (!c.save_graph_h.empty()) files.emplace_back("graph_h", c.save_graph_h);
  return files;
}

/// Refuses, before anything is read, an output or checkpoint that would
/// replace an input, an output over the restart checkpoint, and two targets
/// that are one file (UsageError naming both paths).
void check_files(const MnmfCli& c) {
  io::RunFiles files;
  files.inputs = input_files(c);
  for (const auto& [member, path] : output_files(c)) files.outputs.push_back(path);
  files.checkpoint = c.checkpoint;
  files.restart = c.restart;
  io::check_run_files(files);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// --knn-block-mb: GraphOptions::block_bytes_range in MiB.
constexpr double mib = 1024.0 * 1024.0;
constexpr Range<double> knn_block_mb_range{.lo = double(mnmf::GraphOptions::block_bytes_range.lo) / mib,
                                           .hi = double(mnmf::GraphOptions::block_bytes_range.hi) / mib};

/// What the parse cannot check option by option (each option's range it
/// did; the solver's and the graph's options are checked by their
/// validate()).
void validate(const MnmfCli& c) {
  if (!c.lambda_grid.empty() && !(c.validation_fraction > 0))
    throw UsageError("mnmf: --lambda-grid needs --validation-fraction > 0");
  if (!c.lambda_grid.empty() && c.distributed)
    throw UsageError("mnmf: --lambda-grid runs on one process; choose lambda without --distributed");
}

#if defined(KFACTOR_HAVE_MPI)
/// --distributed, on every rank of `comm`: the solver part of run() (the
/// report matters on rank 0); W and H receive the whole factors when
/// `whole` is set.
template <class T>
Report run_distributed(const MnmfCli& c, const mnmf::Options& o, const CsrMatrix<T, Mem>& R, const CsrMatrix<T, Mem>& P,
                       const CsrMatrix<T, Mem>& Pb, const CsrMatrix<T, Mem>& test, const CheckpointMeta& meta,
                       MPI_Comm comm, bool whole, DenseMatrix<T, Mem>& W, DenseMatrix<T, Mem>& H) {
  namespace dm = distributed::mnmf;
  const Exec exec;
  distributed::require_same(comm, meta.input.checksum, "the checksum of the training ratings of " + c.common.input);
  const auto problem = dm::make_problem(exec, comm, R, P, Pb, test);
  auto state = dm::init(exec, problem, o);
  Report restart;
  if (!c.restart.empty()) {
    note_restart(restart, c.restart,
                 warn_restart(load_checkpoint(comm, c.restart, state, meta, state.row_blocks()).setup_change));
    restart.info["restart_iteration"] = std::to_string(state.iteration);
  }
  // Collective: every rank calls it each iteration, so that all ranks stop
  // together on SIGINT/SIGTERM; rank 0 prints.
  Observer observer = progress_printer(c.common, 1, comm);
  if (!c.checkpoint.empty())
    observer = chain(observer, distributed::checkpoint_observer(comm, c.checkpoint, c.checkpoint_every, state, meta));
  Report r = dm::resume(exec, problem, o, state, observer);
  if (!c.checkpoint.empty()) save_checkpoint(comm, c.checkpoint, state, meta, state.row_blocks());
  for (auto& [k, v] : restart.info) r.info[k] = v;
  if (whole) {
    W = dm::gather_W(exec, state);
    H = dm::gather_H(exec, state);
  }
  return r;
}
#endif

template <class T>
void run(const MnmfCli& c) {
  validate(c);
  const Exec exec;
  int rank = 0;
  // A step that can fail on one rank alone (reading a file, building a
  // graph, writing) runs through `each`: with --distributed its error is
  // agreed, every rank throwing it. `on_rank0` runs the writes of rank 0.
  std::function<void(const std::function<void()>&)> each = [](const std::function<void()>& f) { f(); };
  std::function<void(const std::function<void()>&)> on_rank0 = each;
#if defined(KFACTOR_HAVE_MPI)
  MPI_Comm comm = MPI_COMM_WORLD;
  if (c.distributed) {
    MPI_Comm_rank(comm, &rank);
    each = [comm](const std::function<void()>& f) { distributed::agree(comm, f); };
    on_rank0 = [comm, rank](const std::function<void()>& f) {
      distributed::agree(comm, [&] {
        if (rank == 0) f();
      });
    };
  }
#else
  if (c.distributed) throw UsageError("mnmf: --distributed needs kfactor built with MPI");
#endif
  each([&] { check_files(c); });
  Report report;
  const auto t_read = std::chrono::steady_clock::now();
  const auto format = io::parse_format(c.common.format);
  io::RatingData<T> file;
  CooMatrix<T> train, test;
  each([&] {
    file = read_ratings<T>(c.common.input, format);
    const CooMatrix<T>& all = file.matrix;
    if (!c.test_input.empty()) {
      auto held = io::reindex_ratings(read_ratings<T>(c.test_input, format), file,
                                      io::parse_unknown_ids(c.unknown_test_ids), c.test_input);
      train = all;
      test = std::move(held.matrix);
      report.info["test_input"] = c.test_input;
      report.info["test_dropped_unknown_ids"] = std::to_string(held.dropped);
    } else if (c.test_fraction > 0) {
      std::tie(train, test) = split_train_test(all, c.test_fraction, c.common.seed);
    } else {
      train = all;
    }
  });
  report.timings.set("read", seconds_since(t_read));

  mnmf::GraphOptions g;
  g.neighbors = c.neighbors;
  g.weighting = mnmf::parse_weighting(c.weighting);
  g.sigma = c.sigma;
  g.symmetrization = mnmf::parse_symmetrization(c.symmetrize);
  g.block_bytes = static_cast<std::size_t>(c.knn_block_mb * mib);
  g.validate();

  mnmf::Options o;
  o.objective = mnmf::parse_objective(c.objective);
  o.rank = c.common.rank;
  o.lambda_w = c.lambda_w;
  o.lambda_h = c.lambda_h;
  o.seed = c.common.seed;
  o.stop.max_iterations = c.common.iters;
  o.validate();

  if (!c.lambda_grid.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto chosen =
        mnmf::select_lambda(exec, train, c.validation_fraction, c.common.seed + 1, g, o, c.lambda_grid,
                            [&](const mnmf::LambdaCandidate& x) {
                              if (!c.common.quiet)
                                std::fprintf(c.common.json ? stderr : stdout, "validation: lambda %g  rmse %.6g\n",
                                             x.lambda, x.validation_rmse);
                            });
    o.lambda_w = o.lambda_h = chosen.lambda;
    std::string tried;
    for (const auto& x : chosen.candidates)
      tried += (tried.empty() ? "" : ",") + std::to_string(x.lambda) + ":" + std::to_string(x.validation_rmse);
    report.info["lambda_selected"] = std::to_string(chosen.lambda);
    report.info["validation_rmse"] = tried;
    report.timings.set("model_selection", seconds_since(t0));
  }

  double graph_seconds = 0.0;
  const auto R = to_csr(exec, train);
  CsrMatrix<T, Mem> P, Pb;
  each([&] {
    // graphs over the rows of R (users) and of R^T (items): loaded or built
    const auto t0 = std::chrono::steady_clock::now();
    // Two saved graphs of one run, or of none: not the user graph of one run
    // with the item graph of another (other data, split or options).
    if (!c.graph_w.empty() && !c.graph_h.empty() && !io::read_output_stamp(c.graph_w).set.empty() &&
        !io::read_output_stamp(c.graph_h).set.empty())
      io::verify_output_set({c.graph_w, c.graph_h}, io::SetMembers::some);
    if (!c.graph_w.empty())
      P = read_graph_mm<T>(c.graph_w, R.num_rows());
    else if (o.lambda_w > 0 || !c.save_graph_w.empty())
      P = mnmf::knn_graph(exec, R, g);
    if (!c.graph_h.empty())
      Pb = read_graph_mm<T>(c.graph_h, R.num_cols);
    else if (o.lambda_h > 0 || !c.save_graph_h.empty())
      Pb = mnmf::knn_graph(exec, transpose(exec, R), g);
    exec.fence();
    graph_seconds = seconds_since(t0);
  });
  const auto user_graph = o.lambda_w > 0 ? P : CsrMatrix<T, Mem>{};
  const auto item_graph = o.lambda_h > 0 ? Pb : CsrMatrix<T, Mem>{};
  const auto held_out = test.nnz() > 0 ? to_csr(exec, test) : CsrMatrix<T, Mem>{};
  // The solver's options, and the driver's that decide the graphs and the
  // held-out split (the fingerprint covers the training ratings only).
  auto options = option_values(o);
  options["neighbors"] = std::to_string(c.neighbors);
  options["weighting"] = c.weighting;
  options["sigma"] = kfactor::detail::option_text(c.sigma);
  options["symmetrize"] = c.symmetrize;
  options["graph_w"] = c.graph_w;
  options["graph_h"] = c.graph_h;
  options["test_fraction"] = kfactor::detail::option_text(c.test_fraction);
  options["test_input"] = c.test_input;
  auto meta = checkpoint_meta<T, Exec>("mnmf", std::move(options), fingerprint(exec, R), o.rank);
  meta.input_files = input_files(c);  // a checkpoint may not replace an input
  Report r;
  DenseMatrix<T, Mem> W, H;
  if (c.distributed) {
#if defined(KFACTOR_HAVE_MPI)
    r = run_distributed(c, o, R, user_graph, item_graph, held_out, meta, comm, !c.common.output.empty(), W, H);
#endif
  } else {
    const auto problem = mnmf::make_problem(exec, R, user_graph, item_graph, held_out);
    auto state = mnmf::init(exec, problem, o);
    if (!c.restart.empty()) {
      note_restart(report, c.restart, warn_restart(load_checkpoint(c.restart, state, meta).setup_change));
      report.info["restart_iteration"] = std::to_string(state.iteration);
    }
    Observer observer = progress_printer(c.common);
    if (!c.checkpoint.empty())
      observer = chain(observer, checkpoint_observer(c.checkpoint, c.checkpoint_every, state, meta));
    r = mnmf::resume(exec, problem, o, state, observer);
    if (!c.checkpoint.empty()) save_checkpoint(c.checkpoint, state, meta);
    W = state.W;
    H = state.H;
  }
  for (const auto& [k, v] : report.timings.items) r.timings.set(k, v);
  r.timings.set("graph", graph_seconds);
  r.timings.set("solve", r.seconds);
  for (auto& [k, v] : report.info) r.info[k] = v;
  r.info["input"] = c.common.input;
  r.info["neighbors"] = std::to_string(c.neighbors);
  r.info["weighting"] = c.weighting;
  r.info["symmetrize"] = c.symmetrize;
  r.info["test_ratings"] = std::to_string(test.nnz());
  // All outputs together at the end: they are published as one set, by
  // rank 0 alone with --distributed.
  const auto outputs = output_files(c);
  if (!outputs.empty()) {
    on_rank0([&] {
      std::vector<std::string> members, protected_files = input_files(c);
      for (const auto& [member, path] : outputs) members.push_back(member);
      if (!c.restart.empty()) protected_files.push_back(c.restart);
      const io::OutputSet set(protected_files, members);
      for (const auto& [member, path] : outputs) {
        if (member == "W") {
          io::write_factor(path, W, file.user_ids, "kfactor mnmf user factor W", set[member]);
        } else if (member == "H") {
          io::write_factor(path, H, file.item_ids, "kfactor mnmf item factor H", set[member]);
        } else {
          const bool users = member == "graph_w";
          io::write_matrix_market(path, users ? P : Pb,
                                  users ? "kfactor mnmf user kNN graph" : "kfactor mnmf item kNN graph", set[member]);
        }
      }
    });
    if (!c.common.output.empty()) {
      const auto [prefix, ext] = factor_prefix(c);
      r.info["output"] = prefix + "_{W,H}" + ext;
    }
  }
  if (rank == 0) print_report(c.common, r);
}

const Registrar mnmf_command{Command{
    "mnmf", "manifold-regularized sparse NMF of ratings (CUMNMF): euclid|kl with kNN user/item graphs",
    [](CLI::App& cmd) -> std::function<void()> {
      auto c = std::make_shared<MnmfCli>();
      add_common_options(cmd, c->common, mnmf::Options::rank_range, mnmf::Options::max_iterations_range);
      cmd.add_option("--objective", c->objective,
                     "euclid (eq. 20; the default: ratings are real-valued scores) | kl (eq. 25: counts)")
          ->capture_default_str()
          ->check(CLI::IsMember({"euclid", "kl"}));
      add_number(cmd, "--lambda-w", c->lambda_w,
                 "weight of the user-graph term (default 1: the paper's order of magnitude; --lambda-grid "
                 "chooses it)",
                 mnmf::Options::lambda_range);
      add_number(cmd, "--lambda-h", c->lambda_h, "weight of the item-graph term (default 1, as --lambda-w)",
                 mnmf::Options::lambda_range);
      add_number(cmd, "--neighbors", c->neighbors, "K of the kNN graphs (default 15: the paper's)",
                 mnmf::GraphOptions::neighbors_range);
      cmd.add_option("--weighting", c->weighting, "binary|heat|dot (default binary: the paper's, no width to tune)")
          ->capture_default_str()
          ->check(CLI::IsMember({"binary", "heat", "dot"}));
      add_number(cmd, "--sigma", c->sigma,
                 "heat-kernel width (default 0, any value <= 0: the mean squared kNN distance, which adapts to the "
                 "data's scale)",
                 mnmf::GraphOptions::sigma_range);
      cmd.add_option("--symmetrize", c->symmetrize, "or|and (default or: every row keeps at least its K neighbours)")
          ->capture_default_str()
          ->check(CLI::IsMember({"or", "and"}));
      add_number(cmd, "--test-fraction", c->test_fraction,
                 "held-out fraction (default 0.1: a test RMSE at a small cost in training data; deterministic "
                 "from --seed)",
                 test_fraction_range);
      cmd.add_option("--test-input", c->test_input, "held-out ratings file (same ids; replaces --test-fraction)");
      cmd.add_option("--unknown-test-ids", c->unknown_test_ids,
                     "--test-input entries whose user or item the training file lacks: drop (the default: a held-out "
                     "file drawn on its own may hold new users, which no model can predict; the report counts them) "
                     "| reject (exit 3 naming the entry)")
          ->capture_default_str()
          ->check(CLI::IsMember({"drop", "reject"}));
      add_number(cmd, "--validation-fraction", c->validation_fraction,
                 "with --lambda-grid: fraction of the training ratings held out to choose lambda (default 0: no "
                 "selection)",
                 test_fraction_range);
      add_numbers(cmd, "--lambda-grid", c->lambda_grid,
                  "candidate lambdas (lambda_w = lambda_h) for validation (mnmf::select_lambda); none by default",
                  mnmf::Options::lambda_range);
      cmd.add_option("--graph-w", c->graph_w, "load the user graph (Matrix Market) instead of building it");
      cmd.add_option("--graph-h", c->graph_h, "load the item graph (Matrix Market) instead of building it");
      cmd.add_option("--save-graph-w", c->save_graph_w, "write the user graph as Matrix Market");
      cmd.add_option("--save-graph-h", c->save_graph_h, "write the item graph as Matrix Market");
      add_number(cmd, "--knn-block-mb", c->knn_block_mb,
                 "memory bound of the kNN query blocks (MiB; default 256: large blocks, small next to a GPU's "
                 "memory)",
                 knn_block_mb_range);
      cmd.add_option("--checkpoint", c->checkpoint,
                     "save the solver state (HDF5) here every --checkpoint-every "
                     "iterations and at the end");
      add_number(cmd, "--checkpoint-every", c->checkpoint_every,
                 "checkpoint interval (iterations; default 10: a small share of an epoch's time)",
                 checkpoint_every_range);
      cmd.add_option("--restart", c->restart,
                     "continue from this checkpoint (same input, options and rank) to --iters");
      cmd.add_flag("--distributed", c->distributed,
                   "run over the ranks of MPI_COMM_WORLD (mpiexec -n P kfactor mnmf --distributed ...): users and "
                   "items split over the ranks, factors all-gathered; the same factors as one process. Default off");
      return [c] {
        if (c->common.precision == "float")
          run<float>(*c);
        else
          run<double>(*c);
      };
    }}};

/// Planted problem: 400 users and 300 items in 5 taste groups (users of a
/// group share a factor row up to noise, so the kNN graphs see the groups),
/// 12% of the ratings observed, 20% of those held out.
Report demo(std::uint64_t seed) {
  const Exec exec;
  const int r = 5;
  const auto all = planted_group_ratings(400, 300, r, 0.12, seed).ratings;
  auto [train, test] = split_train_test(all, 0.2, seed);
  const auto t0 = std::chrono::steady_clock::now();
  const auto R = to_csr(exec, train);
  mnmf::GraphOptions g;
  g.neighbors = 10;
  const auto P = mnmf::knn_graph(exec, R, g);
  const auto Pb = mnmf::knn_graph(exec, transpose(exec, R), g);
  exec.fence();
  const double graph_seconds = seconds_since(t0);
  const auto problem = mnmf::make_problem(exec, R, P, Pb, to_csr(exec, test));
  mnmf::Options o;
  o.rank = r;
  o.lambda_w = o.lambda_h = 1.0;
  o.seed = seed;
  o.stop.max_iterations = 60;
  auto res = mnmf::solve(exec, problem, o);
  res.report.seconds += graph_seconds;
  res.report.timings.set("graph", graph_seconds);
  return res.report;
}

const Registrar mnmf_demo{Demo{"mnmf", demo}};

}  // namespace
}  // namespace kfactor::cli
