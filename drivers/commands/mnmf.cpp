// `kfactor mnmf`: manifold-regularized sparse NMF of a rating matrix
// (CUMNMF), Euclidean or KL, with kNN user/item graphs built on the device or
// loaded from Matrix Market files.
//
// Files go through kfactor::io (ratings keep their original ids; --format
// honoured); --checkpoint/--restart through io/checkpoint.hpp.
#include "../cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kfactor::cli {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Ratings with the original ids of the file they came from (empty for a
/// file without ids, e.g. Matrix Market: row/column index = id).
template <class T>
struct RatingFile {
  CooMatrix<T> coo;
  std::vector<std::int64_t> user_ids, item_ids;
};

/// Reads the rating matrix through io/: a ratings file (CSV, `::`, tab/space)
/// keeps its original ids; any other format (--format) is read by
/// io::parse_matrix. Negative ratings are refused (MNMF is non-negative).
template <class T>
RatingFile<T> read_ratings(const std::string& path, io::Format format) {
  const std::string text = io::read_file(path);
  if (format == io::Format::automatic) format = io::detect_format(text, path);
  RatingFile<T> f;
  if (format == io::Format::ratings) {
    auto d = io::parse_ratings<T>(text, path);
    f.coo = std::move(d.matrix);
    f.user_ids = std::move(d.user_ids);
    f.item_ids = std::move(d.item_ids);
  } else {
    f.coo = io::parse_matrix<T>(text, path, format);
  }
  if (io::has_negative(f.coo)) throw InputError(path, 0, "ratings must be >= 0 (MNMF is non-negative)");
  return f;
}

/// Held-out ratings `test` re-indexed to the training file's ids (entries
/// with an id the training file lacks are dropped and counted).
template <class T>
CooMatrix<T> align_to(const RatingFile<T>& train, const RatingFile<T>& test, std::size_t& dropped) {
  auto index = [](const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& own, ordinal_t k,
                  std::int64_t extent) -> std::int64_t {
    const std::int64_t id = own.empty() ? k : own[static_cast<std::size_t>(k)];
    if (ids.empty()) return id < extent ? id : -1;
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    return it != ids.end() && *it == id ? it - ids.begin() : -1;
  };
  CooMatrix<T> c;
  c.num_rows = train.coo.num_rows;
  c.num_cols = train.coo.num_cols;
  for (std::size_t e = 0; e < test.coo.nnz(); ++e) {
    const auto i = index(train.user_ids, test.user_ids, test.coo.rows[e], c.num_rows);
    const auto j = index(train.item_ids, test.item_ids, test.coo.cols[e], c.num_cols);
    if (i < 0 || j < 0) {
      ++dropped;
      continue;
    }
    c.rows.push_back(static_cast<ordinal_t>(i));
    c.cols.push_back(static_cast<ordinal_t>(j));
    c.values.push_back(test.coo.values[e]);
  }
  return c;
}

template <class T>
CsrMatrix<T, Mem> read_graph_mm(const std::string& path, std::int64_t n) {
  const auto c = io::read_matrix<T>(path, io::Format::matrix_market);
  if (c.num_rows != n || c.num_cols != n)
    throw InputError(path, 0, "graph is " + std::to_string(c.num_rows) + " x " + std::to_string(c.num_cols) +
                                  ", expected " + std::to_string(n) + " x " + std::to_string(n));
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

template <class T>
void run(const MnmfCli& c) {
  const Exec exec;
  Report report;
  const auto t_read = std::chrono::steady_clock::now();
  const auto format = io::parse_format(c.common.format);
  const RatingFile<T> file = read_ratings<T>(c.common.input, format);
  const CooMatrix<T>& all = file.coo;
  CooMatrix<T> train, test;
  std::size_t dropped = 0;
  if (!c.test_input.empty()) {
    const RatingFile<T> tf = read_ratings<T>(c.test_input, format);
    train = all;
    test = align_to(file, tf, dropped);
    report.info["test_input"] = c.test_input;
    report.info["test_dropped_unknown_ids"] = std::to_string(dropped);
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

  mnmf::Options o;
  o.objective = mnmf::parse_objective(c.objective);
  o.rank = c.common.rank;
  o.lambda_w = c.lambda_w;
  o.lambda_h = c.lambda_h;
  o.seed = c.common.seed;
  o.stop.max_iterations = c.common.iters;
  o.validate();

  double graph_seconds = 0.0;
  // graphs over the rows of R (users) and of R^T (items): loaded or built
  auto make_graphs = [&](const CsrMatrix<T, Mem>& R, bool need_w, bool need_h, bool allow_files) {
    CsrMatrix<T, Mem> P, Pb;
    const auto t0 = std::chrono::steady_clock::now();
    if (allow_files && !c.graph_w.empty())
      P = read_graph_mm<T>(c.graph_w, R.num_rows());
    else if (need_w)
      P = mnmf::knn_graph(exec, R, g);
    if (allow_files && !c.graph_h.empty())
      Pb = read_graph_mm<T>(c.graph_h, R.num_cols);
    else if (need_h)
      Pb = mnmf::knn_graph(exec, transpose(exec, R), g);
    exec.fence();
    graph_seconds += seconds_since(t0);
    return std::make_pair(P, Pb);
  };

  if (c.validation_fraction > 0 && !c.lambda_grid.empty()) {
    // choose lambda (lambda_w = lambda_h) on a validation split of the training ratings
    auto [fit, validation] = split_train_test(train, c.validation_fraction, c.common.seed + 1);
    const auto Rfit = to_csr(exec, fit);
    const auto [P, Pb] = make_graphs(Rfit, true, true, false);
    const auto problem = mnmf::make_problem(exec, Rfit, P, Pb, to_csr(exec, validation));
    double best = 1e300, best_lambda = 0;
    std::string tried;
    for (double lambda : c.lambda_grid) {
      auto ov = o;
      ov.lambda_w = ov.lambda_h = lambda;
      const double rmse = mnmf::solve(exec, problem, ov).report.metrics.get("test_rmse");
      tried += (tried.empty() ? "" : ",") + std::to_string(lambda) + ":" + std::to_string(rmse);
      if (!c.common.quiet)
        std::fprintf(c.common.json ? stderr : stdout, "validation: lambda %g  rmse %.6g\n", lambda, rmse);
      if (rmse < best) {
        best = rmse;
        best_lambda = lambda;
      }
    }
    o.lambda_w = o.lambda_h = best_lambda;
    report.info["lambda_selected"] = std::to_string(best_lambda);
    report.info["validation_rmse"] = tried;
  }

  const auto R = to_csr(exec, train);
  const bool need_w = o.lambda_w > 0 || !c.save_graph_w.empty();
  const bool need_h = o.lambda_h > 0 || !c.save_graph_h.empty();
  const auto [P, Pb] = make_graphs(R, need_w, need_h, true);
  if (!c.save_graph_w.empty()) io::write_matrix_market(c.save_graph_w, P, "kfactor mnmf user kNN graph");
  if (!c.save_graph_h.empty()) io::write_matrix_market(c.save_graph_h, Pb, "kfactor mnmf item kNN graph");
  const auto problem = mnmf::make_problem(exec, R, o.lambda_w > 0 ? P : CsrMatrix<T, Mem>{},
                                          o.lambda_h > 0 ? Pb : CsrMatrix<T, Mem>{},
                                          test.nnz() > 0 ? to_csr(exec, test) : CsrMatrix<T, Mem>{});
  // The solver loop runs here (not through mnmf::solve, which takes the State
  // by value) so the checkpoint observer sees the State being iterated.
  auto state = mnmf::init(exec, problem, o);
  const nlohmann::json options_json = {
      {"objective", mnmf::to_string(o.objective)}, {"rank", o.rank},
      {"lambda_w", o.lambda_w}, {"lambda_h", o.lambda_h},
      {"seed", o.seed}, {"init_low", o.init_low},
      {"init_high", o.init_high}, {"init_scale", o.init_scale},
      {"kl_floor", o.kl_floor}, {"precision", c.common.precision},
      {"test_fraction", c.test_fraction}, {"test_input", c.test_input},
      {"validation_fraction", c.validation_fraction}, {"lambda_grid", c.lambda_grid},
      {"neighbors", c.neighbors}, {"weighting", c.weighting},
      {"sigma", c.sigma}, {"symmetrize", c.symmetrize},
      {"graph_w", c.graph_w}, {"graph_h", c.graph_h}};
  const auto meta =
      checkpoint_meta<T, Exec>("mnmf", options_json.dump(), fingerprint(exec, problem.ratings), o.rank);
  if (!c.restart.empty()) {
    load_checkpoint(c.restart, state, meta);
    report.info["restart"] = c.restart;
    report.info["restart_iteration"] = std::to_string(state.iteration);
  }
  Observer observer = progress_printer(c.common);
  if (!c.checkpoint.empty())
    observer = chain(observer, checkpoint_observer(c.checkpoint, c.checkpoint_every, state, meta));
  double solve_seconds = 0.0;
  const StopReason reason = run_solver_loop(
      state.iteration, state.history, o.stop, "objective", observer, [&] { mnmf::step(exec, problem, o, state); },
      [&] { return mnmf::evaluate(exec, problem, o, state); }, [](const Metrics&) { return false; },
      &solve_seconds);
  if (!c.checkpoint.empty()) save_checkpoint(c.checkpoint, state, meta);
  // the report of a zero-iteration solve continuing the final state
  auto result = mnmf::solve(exec, problem, o, state);
  Report& r = result.report;
  r.seconds = solve_seconds;
  r.stop_reason = to_string(reason);
  r.timings = report.timings;
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
      cmd.add_option("--objective", c->objective, "euclid (eq. 20) | kl (eq. 25)")
          ->capture_default_str()
          ->check(CLI::IsMember({"euclid", "kl"}));
      cmd.add_option("--lambda-w", c->lambda_w, "weight of the user-graph term")->capture_default_str();
      cmd.add_option("--lambda-h", c->lambda_h, "weight of the item-graph term")->capture_default_str();
      cmd.add_option("--neighbors", c->neighbors, "K of the kNN graphs")->capture_default_str();
      cmd.add_option("--weighting", c->weighting, "binary|heat|dot")
          ->capture_default_str()
          ->check(CLI::IsMember({"binary", "heat", "dot"}));
      cmd.add_option("--sigma", c->sigma, "heat-kernel width (<= 0: mean squared kNN distance)")->capture_default_str();
      cmd.add_option("--symmetrize", c->symmetrize, "or|and")->capture_default_str()->check(CLI::IsMember({"or", "and"}));
      cmd.add_option("--test-fraction", c->test_fraction, "held-out fraction (deterministic from --seed)")
          ->capture_default_str();
      cmd.add_option("--test-input", c->test_input, "held-out ratings file (same ids; replaces --test-fraction)");
      cmd.add_option("--validation-fraction", c->validation_fraction,
                     "with --lambda-grid: fraction of the training ratings used to choose lambda")
          ->capture_default_str();
      cmd.add_option("--lambda-grid", c->lambda_grid, "candidate lambdas (lambda_w = lambda_h) for validation")
          ->delimiter(',');
      cmd.add_option("--graph-w", c->graph_w, "load the user graph (Matrix Market) instead of building it");
      cmd.add_option("--graph-h", c->graph_h, "load the item graph (Matrix Market) instead of building it");
      cmd.add_option("--save-graph-w", c->save_graph_w, "write the user graph as Matrix Market");
      cmd.add_option("--save-graph-h", c->save_graph_h, "write the item graph as Matrix Market");
      cmd.add_option("--knn-block-mb", c->knn_block_mb, "memory bound of the kNN query blocks (MiB)")
          ->capture_default_str();
      cmd.add_option("--checkpoint", c->checkpoint, "save the solver state (HDF5) here every --checkpoint-every "
                                                    "iterations and at the end");
      cmd.add_option("--checkpoint-every", c->checkpoint_every, "checkpoint interval (iterations)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
      cmd.add_option("--restart", c->restart, "continue from this checkpoint (same input, options and rank) to --iters");
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
  const int m = 400, n = 300, r = 5, groups = 5;
  const CounterRng rng(seed, RngStream::user);
  std::uint64_t ctr = 0;
  std::vector<double> W(m * r), H(n * r);
  for (int i = 0; i < m; ++i)
    for (int k = 0; k < r; ++k) W[i * r + k] = (k == i % groups ? 1.5 : 0.2) + 0.2 * rng.uniform(ctr++);
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < r; ++k) H[j * r + k] = (k == j % groups ? 2.0 : 0.3) + 0.2 * rng.uniform(ctr++);
  CooMatrix<double> all;
  all.num_rows = m;
  all.num_cols = n;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      if (rng.uniform(ctr++) < 0.12) {
        double v = 0;
        for (int k = 0; k < r; ++k) v += W[i * r + k] * H[j * r + k];
        all.rows.push_back(i);
        all.cols.push_back(j);
        all.values.push_back(v);
      }
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
