// `kfactor mnmf`: manifold-regularized sparse NMF of a rating matrix
// (CUMNMF), Euclidean or KL, with kNN user/item graphs built on the device or
// loaded from Matrix Market files.
//
// File reading and writing here is a minimal local stand-in until io/ is
// merged: read_ratings() (CSV/TSV/space-separated `user item rating [...]`
// with an optional header, or a Matrix Market coordinate file), and
// read_graph_mm()/write_graph_mm()/write_dense_mm(). The lead can swap these
// four functions for io/ calls without touching the rest.
#include "../cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace kfactor::cli {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Ratings with the id <-> index maps of the file they came from.
struct RatingFile {
  CooMatrix<double> coo;
  std::map<std::string, int> users, items;
};

bool is_matrix_market(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return first.rfind("%%MatrixMarket", 0) == 0;
}

/// `user item rating` triplets (comma, tab or space separated; extra columns
/// ignored; a first line that does not parse is a header). Ids are any
/// tokens, numbered 0.. in sorted order (numeric ids numerically). With
/// `like`, ids are mapped through its maps and unknown ids are dropped
/// (counted in *dropped).
RatingFile read_ratings(const std::string& path, const RatingFile* like = nullptr, std::size_t* dropped = nullptr) {
  RatingFile f;
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  if (is_matrix_market(path)) {
    std::string line;
    std::getline(in, line);
    const bool symmetric = line.find("symmetric") != std::string::npos;
    while (std::getline(in, line) && (line.empty() || line[0] == '%')) {
    }
    std::istringstream hs(line);
    std::int64_t m = 0, n = 0, nnz = 0;
    if (!(hs >> m >> n >> nnz)) throw InputError(path, 0, "bad Matrix Market size line");
    f.coo.num_rows = m;
    f.coo.num_cols = n;
    std::int64_t lineno = 2;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty() || line[0] == '%') continue;
      std::istringstream ss(line);
      std::int64_t i, j;
      double v = 1.0;
      if (!(ss >> i >> j)) throw InputError(path, lineno, "bad entry");
      ss >> v;
      f.coo.rows.push_back(int(i - 1));
      f.coo.cols.push_back(int(j - 1));
      f.coo.values.push_back(v);
      if (symmetric && i != j) {
        f.coo.rows.push_back(int(j - 1));
        f.coo.cols.push_back(int(i - 1));
        f.coo.values.push_back(v);
      }
    }
    validate_coo(f.coo, path);
    return f;
  }
  std::vector<std::string> us, is;
  std::vector<double> vs;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    for (auto& ch : line)
      if (ch == ',' || ch == '\t' || ch == ';') ch = ' ';
    std::istringstream ss(line);
    std::string u, it, v;
    if (!(ss >> u >> it >> v)) throw InputError(path, lineno, "expected `user item rating`");
    double val = 0;
    try {
      std::size_t used = 0;
      val = std::stod(v, &used);
      if (used != v.size()) throw std::invalid_argument(v);
    } catch (const std::exception&) {
      if (lineno == 1) continue;  // header
      throw InputError(path, lineno, "rating '" + v + "' is not a number");
    }
    if (!std::isfinite(val) || val < 0) throw InputError(path, lineno, "rating must be finite and >= 0");
    us.push_back(u);
    is.push_back(it);
    vs.push_back(val);
  }
  auto numbering = [](const std::vector<std::string>& ids) {
    std::vector<std::string> u(ids);
    std::sort(u.begin(), u.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;  // numeric ids in numeric order
    });
    u.erase(std::unique(u.begin(), u.end()), u.end());
    std::map<std::string, int> m;
    for (std::size_t k = 0; k < u.size(); ++k) m[u[k]] = int(k);
    return m;
  };
  f.users = like ? like->users : numbering(us);
  f.items = like ? like->items : numbering(is);
  f.coo.num_rows = static_cast<std::int64_t>(f.users.size());
  f.coo.num_cols = static_cast<std::int64_t>(f.items.size());
  std::map<std::pair<int, int>, double> seen;  // duplicates: the last one wins
  for (std::size_t e = 0; e < vs.size(); ++e) {
    auto a = f.users.find(us[e]), b = f.items.find(is[e]);
    if (a == f.users.end() || b == f.items.end()) {
      if (dropped) ++*dropped;
      continue;
    }
    seen[{a->second, b->second}] = vs[e];
  }
  for (auto& [k, v] : seen) {
    f.coo.rows.push_back(k.first);
    f.coo.cols.push_back(k.second);
    f.coo.values.push_back(v);
  }
  return f;
}

template <class T>
CsrMatrix<T, Mem> read_graph_mm(const std::string& path, std::int64_t n) {
  auto f = read_ratings(path);
  if (f.coo.num_rows != n || f.coo.num_cols != n)
    throw InputError(path, 0, "graph is " + std::to_string(f.coo.num_rows) + " x " + std::to_string(f.coo.num_cols) +
                                  ", expected " + std::to_string(n) + " x " + std::to_string(n));
  std::map<std::pair<int, int>, double> seen;
  for (std::size_t e = 0; e < f.coo.nnz(); ++e) seen[{f.coo.rows[e], f.coo.cols[e]}] = f.coo.values[e];
  CooMatrix<T> c;
  c.num_rows = c.num_cols = n;
  for (auto& [k, v] : seen) {
    c.rows.push_back(k.first);
    c.cols.push_back(k.second);
    c.values.push_back(T(v));
  }
  return to_csr(Exec{}, c);
}

template <class T>
void write_graph_mm(const std::string& path, const CsrMatrix<T, Mem>& G) {
  auto h = copy_to<Kokkos::HostSpace>(G);
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw RuntimeFailure("cannot write " + path);
  std::fprintf(out, "%%%%MatrixMarket matrix coordinate real general\n%% kfactor mnmf kNN graph\n%d %d %zu\n",
               G.num_rows(), G.num_cols, G.nnz());
  for (int i = 0; i < G.num_rows(); ++i)
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e)
      std::fprintf(out, "%d %d %.17g\n", i + 1, h.entries(e) + 1, double(h.values(e)));
  std::fclose(out);
}

template <class T>
void write_dense_mm(const std::string& path, const DenseMatrix<T, Mem>& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw RuntimeFailure("cannot write " + path);
  std::fprintf(out, "%%%%MatrixMarket matrix array real general\n%zu %zu\n", X.extent(0), X.extent(1));
  for (std::size_t k = 0; k < X.extent(1); ++k)  // array format is column-major
    for (std::size_t i = 0; i < X.extent(0); ++i) std::fprintf(out, "%.9g\n", double(h(i, k)));
  std::fclose(out);
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
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
void run(const MnmfCli& c) {
  const Exec exec;
  Report report;
  const auto t_read = std::chrono::steady_clock::now();
  const RatingFile file = read_ratings(c.common.input);
  CooMatrix<T> all;
  all.num_rows = file.coo.num_rows;
  all.num_cols = file.coo.num_cols;
  all.rows = file.coo.rows;
  all.cols = file.coo.cols;
  all.values.assign(file.coo.values.begin(), file.coo.values.end());
  CooMatrix<T> train, test;
  std::size_t dropped = 0;
  if (!c.test_input.empty()) {
    const RatingFile tf = read_ratings(c.test_input, file.users.empty() ? nullptr : &file, &dropped);
    train = all;
    test.num_rows = all.num_rows;
    test.num_cols = all.num_cols;
    test.rows = tf.coo.rows;
    test.cols = tf.coo.cols;
    test.values.assign(tf.coo.values.begin(), tf.coo.values.end());
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
  if (!c.save_graph_w.empty()) write_graph_mm(c.save_graph_w, P);
  if (!c.save_graph_h.empty()) write_graph_mm(c.save_graph_h, Pb);
  const auto problem = mnmf::make_problem(exec, R, o.lambda_w > 0 ? P : CsrMatrix<T, Mem>{},
                                          o.lambda_h > 0 ? Pb : CsrMatrix<T, Mem>{},
                                          test.nnz() > 0 ? to_csr(exec, test) : CsrMatrix<T, Mem>{});
  auto result = mnmf::solve(exec, problem, o, progress_printer(c.common));
  Report& r = result.report;
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
    write_dense_mm(c.common.output + "_W.mtx", result.state.W);
    write_dense_mm(c.common.output + "_H.mtx", result.state.H);
    r.info["output"] = c.common.output + "_{W,H}.mtx";
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
