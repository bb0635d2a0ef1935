// `kfactor mnmf`: manifold-regularized sparse NMF of a rating matrix
// (CUMNMF), Euclidean or KL, with kNN user/item graphs built on the device or
// loaded from Matrix Market files.
//
// Files go through kfactor::io (ratings keep their original ids; --format
// honoured); --checkpoint/--restart through io/checkpoint.hpp.
//
// --distributed (under `mpiexec -n P kfactor mnmf --distributed ...`): every
// rank reads the input and builds (or loads) the graphs, with errors agreed
// on every rank; the ranks compare the ratings' checksum, keep their users'
// and items' rows (kfactor/distributed/mnmf.hpp) and run the same epochs,
// with the same factors as one process; rank 0 prints and writes the
// outputs (and the saved graphs). Checkpoints hold the whole factors in the
// single-process layout, so a run restarts on any number of ranks, or
// without --distributed, and vice versa.
#include "../cli.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/io/checkpoint.hpp>
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

namespace kfactor::cli {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Reads the rating matrix through io/: a ratings file (CSV, `::`, tab/space)
/// keeps its original ids; any other format (--format) is read by
/// io::parse_matrix and has none (row/column index = id). Negative ratings
/// are refused (MNMF is non-negative).
template <class T>
io::RatingData<T> read_ratings(const std::string& path, io::Format format) {
  const std::string text = io::read_file(path);
  if (format == io::Format::automatic) format = io::detect_format(text, path);
  io::RatingData<T> f;
  if (format == io::Format::ratings)
    f = io::parse_ratings<T>(text, path);
  else
    f.matrix = io::parse_matrix<T>(text, path, format);
  if (io::has_negative(f.matrix)) throw InputError(path, 0, "ratings must be >= 0 (MNMF is non-negative)");
  return f;
}

template <class T>
CsrMatrix<T, Mem> read_graph_mm(const std::string& path, std::int64_t n) {
  const auto c = io::read_matrix<T>(path, io::Format::matrix_market);
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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Range checks of the driver's own numeric options (the solver's and the
/// graph's are checked by their validate()).
void validate(const MnmfCli& c) {
  if (!(c.test_fraction >= 0.0 && c.test_fraction < 1.0)) throw UsageError("mnmf: --test-fraction must be in [0, 1)");
  if (!(c.validation_fraction >= 0.0 && c.validation_fraction < 1.0))
    throw UsageError("mnmf: --validation-fraction must be in [0, 1)");
  if (!(c.knn_block_mb >= 0.001 && c.knn_block_mb <= double(1 << 30)))
    throw UsageError("mnmf: --knn-block-mb must be in [0.001, 2^30]");
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
    load_checkpoint(comm, c.restart, state, meta, state.row_blocks());
    restart.info["restart"] = c.restart;
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
  g.block_bytes = static_cast<std::size_t>(c.knn_block_mb * (1 << 20));
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
  on_rank0([&] {
    if (!c.save_graph_w.empty()) io::write_matrix_market(c.save_graph_w, P, "kfactor mnmf user kNN graph");
    if (!c.save_graph_h.empty()) io::write_matrix_market(c.save_graph_h, Pb, "kfactor mnmf item kNN graph");
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
  const auto meta = checkpoint_meta<T, Exec>("mnmf", std::move(options), fingerprint(exec, R), o.rank);
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
      load_checkpoint(c.restart, state, meta);
      report.info["restart"] = c.restart;
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
  on_rank0([&] {
    if (!c.common.output.empty()) {
      // --output PREFIX writes PREFIX_W.mtx / PREFIX_H.mtx; PREFIX.csv writes
      // PREFIX_W.csv / PREFIX_H.csv with the original user / item ids
      std::string prefix = c.common.output, ext = ".mtx";
      if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".csv") == 0) {
        prefix.resize(prefix.size() - 4);
        ext = ".csv";
      }
      io::write_factor(prefix + "_W" + ext, W, file.user_ids, "kfactor mnmf user factor W");
      io::write_factor(prefix + "_H" + ext, H, file.item_ids, "kfactor mnmf item factor H");
      r.info["output"] = prefix + "_{W,H}" + ext;
    }
  });
  if (rank == 0) print_report(c.common, r);
}

const Registrar mnmf_command{Command{
    "mnmf", "manifold-regularized sparse NMF of ratings (CUMNMF): euclid|kl with kNN user/item graphs",
    [](CLI::App& cmd) -> std::function<void()> {
      auto c = std::make_shared<MnmfCli>();
      add_common_options(cmd, c->common);
      cmd.add_option("--objective", c->objective,
                     "euclid (eq. 20; the default: ratings are real-valued scores) | kl (eq. 25: counts)")
          ->capture_default_str()
          ->check(CLI::IsMember({"euclid", "kl"}));
      cmd.add_option("--lambda-w", c->lambda_w,
                     "weight of the user-graph term, [0, 1e12] (default 1: the paper's order of magnitude; "
                     "--lambda-grid chooses it)")
          ->capture_default_str();
      cmd.add_option("--lambda-h", c->lambda_h, "weight of the item-graph term, [0, 1e12] (default 1, as --lambda-w)")
          ->capture_default_str();
      cmd.add_option("--neighbors", c->neighbors, "K of the kNN graphs, 1..1024 (default 15: the paper's)")
          ->capture_default_str();
      cmd.add_option("--weighting", c->weighting, "binary|heat|dot (default binary: the paper's, no width to tune)")
          ->capture_default_str()
          ->check(CLI::IsMember({"binary", "heat", "dot"}));
      cmd.add_option("--sigma", c->sigma,
                     "heat-kernel width, finite (default 0, any value <= 0: the mean squared kNN distance, "
                     "which adapts to the data's scale)")
          ->capture_default_str();
      cmd.add_option("--symmetrize", c->symmetrize, "or|and (default or: every row keeps at least its K neighbours)")
          ->capture_default_str()
          ->check(CLI::IsMember({"or", "and"}));
      cmd.add_option("--test-fraction", c->test_fraction,
                     "held-out fraction, [0, 1) (default 0.1: a test RMSE at a small cost in training data; "
                     "deterministic from --seed)")
          ->capture_default_str();
      cmd.add_option("--test-input", c->test_input, "held-out ratings file (same ids; replaces --test-fraction)");
      cmd.add_option("--unknown-test-ids", c->unknown_test_ids,
                     "--test-input entries whose user or item the training file lacks: drop (the default: a held-out "
                     "file drawn on its own may hold new users, which no model can predict; the report counts them) "
                     "| reject (exit 3 naming the entry)")
          ->capture_default_str()
          ->check(CLI::IsMember({"drop", "reject"}));
      cmd.add_option("--validation-fraction", c->validation_fraction,
                     "with --lambda-grid: fraction of the training ratings held out to choose lambda, [0, 1) "
                     "(default 0: no selection)")
          ->capture_default_str();
      cmd.add_option("--lambda-grid", c->lambda_grid,
                     "candidate lambdas (lambda_w = lambda_h) for validation (mnmf::select_lambda); none by default")
          ->delimiter(',');
      cmd.add_option("--graph-w", c->graph_w, "load the user graph (Matrix Market) instead of building it");
      cmd.add_option("--graph-h", c->graph_h, "load the item graph (Matrix Market) instead of building it");
      cmd.add_option("--save-graph-w", c->save_graph_w, "write the user graph as Matrix Market");
      cmd.add_option("--save-graph-h", c->save_graph_h, "write the item graph as Matrix Market");
      cmd.add_option("--knn-block-mb", c->knn_block_mb,
                     "memory bound of the kNN query blocks (MiB), [0.001, 2^30] (default 256: large blocks, "
                     "small next to a GPU's memory)")
          ->capture_default_str();
      cmd.add_option("--checkpoint", c->checkpoint,
                     "save the solver state (HDF5) here every --checkpoint-every "
                     "iterations and at the end");
      cmd.add_option("--checkpoint-every", c->checkpoint_every,
                     "checkpoint interval (iterations; default 10: a small share of an epoch's time)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
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
