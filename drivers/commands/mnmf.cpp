// `kfactor mnmf`: manifold-regularized sparse NMF of a rating matrix
// (CUMNMF), Euclidean or KL, with kNN user/item graphs built on the device or
// loaded from Matrix Market files.
//
// Files go through kfactor::io (ratings keep their original ids; --format
// honoured); --checkpoint/--restart through io/checkpoint.hpp.
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

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>

namespace kfactor::cli {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Reads the rating matrix through io::read_input: a ratings file (CSV,
/// `::`, tab/space) or an HDF5 CSR file with ids keeps its original ids; any
/// other format (--format) has none (row/column index = id). Negative
/// ratings are refused (MNMF is non-negative).
template <class T>
io::RatingData<T> read_ratings(const std::string& path, io::Format format) {
  io::RatingData<T> f = io::read_input<T>(path, format);
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
}

template <class T>
void run(const MnmfCli& c) {
  validate(c);
  const Exec exec;
  Report report;
  const auto t_read = std::chrono::steady_clock::now();
  const auto format = io::parse_format(c.common.format);
  const io::RatingData<T> file = read_ratings<T>(c.common.input, format);
  const CooMatrix<T>& all = file.matrix;
  CooMatrix<T> train, test;
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
  {
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
  }
  if (!c.save_graph_w.empty()) io::write_matrix_market(c.save_graph_w, P, "kfactor mnmf user kNN graph");
  if (!c.save_graph_h.empty()) io::write_matrix_market(c.save_graph_h, Pb, "kfactor mnmf item kNN graph");
  const auto problem =
      mnmf::make_problem(exec, R, o.lambda_w > 0 ? P : CsrMatrix<T, Mem>{}, o.lambda_h > 0 ? Pb : CsrMatrix<T, Mem>{},
                         test.nnz() > 0 ? to_csr(exec, test) : CsrMatrix<T, Mem>{});
  auto state = mnmf::init(exec, problem, o);
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
  const auto meta = checkpoint_meta<T, Exec>("mnmf", std::move(options), fingerprint(exec, problem.ratings), o.rank);
  if (!c.restart.empty()) {
    load_checkpoint(c.restart, state, meta);
    report.info["restart"] = c.restart;
    report.info["restart_iteration"] = std::to_string(state.iteration);
  }
  Observer observer = progress_printer(c.common);
  if (!c.checkpoint.empty())
    observer = chain(observer, checkpoint_observer(c.checkpoint, c.checkpoint_every, state, meta));
  Report r = mnmf::resume(exec, problem, o, state, observer);
  if (!c.checkpoint.empty()) save_checkpoint(c.checkpoint, state, meta);
  for (const auto& [k, v] : report.timings.items) r.timings.set(k, v);
  r.timings.set("graph", graph_seconds);
  r.timings.set("solve", r.seconds);
  for (auto& [k, v] : report.info) r.info[k] = v;
  r.info["input"] = c.common.input;
  r.info["neighbors"] = std::to_string(c.neighbors);
  r.info["weighting"] = c.weighting;
  r.info["symmetrize"] = c.symmetrize;
  r.info["test_ratings"] = std::to_string(test.nnz());
  if (!c.common.output.empty()) {
    // --output PREFIX writes PREFIX_W.mtx / PREFIX_H.mtx; PREFIX.csv writes
    // PREFIX_W.csv / PREFIX_H.csv with the original user / item ids
    std::string prefix = c.common.output, ext = ".mtx";
    if (prefix.size() > 4 && prefix.compare(prefix.size() - 4, 4, ".csv") == 0) {
      prefix.resize(prefix.size() - 4);
      ext = ".csv";
    }
    io::write_factor(prefix + "_W" + ext, state.W, file.user_ids, "kfactor mnmf user factor W");
    io::write_factor(prefix + "_H" + ext, state.H, file.item_ids, "kfactor mnmf item factor H");
    r.info["output"] = prefix + "_{W,H}" + ext;
  }
  print_report(c.common, r);
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
