// `kfactor als`: ALS (BALS tiled format) on explicit ratings; `kfactor predict`
// scores (user, item) pairs from the factor files it writes; a Demo entry on
// planted low-rank ratings.
//
// File reading is one call, read_ratings(path, format) below: a small local
// reader (rating CSV with or without header, MovieLens "::" files,
// whitespace-separated `user item rating [timestamp]`, Matrix Market
// coordinate) until the io/ readers are merged; the lead can swap it for
// io/'s reader. Ids are kept as strings and re-indexed densely in order of
// first appearance; factors are written with the original ids.
#include "cli.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/core/error.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace kfactor::cli {
namespace {

/// Ratings with their original id tables.
struct Ratings {
  CooMatrix<double> coo;
  std::vector<std::string> user_ids, item_ids;
  std::unordered_map<std::string, int> user_index, item_index;
};

int intern(std::unordered_map<std::string, int>& idx, std::vector<std::string>& ids, const std::string& key, bool add) {
  auto it = idx.find(key);
  if (it != idx.end()) return it->second;
  if (!add) return -1;
  const int v = int(ids.size());
  idx.emplace(key, v);
  ids.push_back(key);
  return v;
}

std::vector<std::string> split_fields(const std::string& line, const std::string& format) {
  std::vector<std::string> out;
  if (format == "movielens" || line.find("::") != std::string::npos) {
    std::size_t p = 0;
    while (true) {
      const auto q = line.find("::", p);
      out.push_back(line.substr(p, q == std::string::npos ? std::string::npos : q - p));
      if (q == std::string::npos) break;
      p = q + 2;
    }
    return out;
  }
  std::string cur;
  for (char c : line) {
    if (c == ',' || c == '\t' || c == ' ' || c == ';') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// Reads ratings (or, with `base`, a test set in base's id space: unknown ids
/// are an InputError). Formats: auto|csv|movielens|tsv|mm.
Ratings read_ratings(const std::string& path, std::string format, const Ratings* base = nullptr) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  Ratings R;
  if (base) {
    R.user_ids = base->user_ids;
    R.item_ids = base->item_ids;
    R.user_index = base->user_index;
    R.item_index = base->item_index;
  }
  std::string line;
  std::int64_t lineno = 0;
  bool mm = format == "mm";
  bool mm_header_done = false;
  std::unordered_map<std::uint64_t, std::size_t> seen;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.rfind("%%MatrixMarket", 0) == 0) {
      mm = true;
      continue;
    }
    if (line.empty() || line[0] == '%' || line[0] == '#') continue;
    auto f = split_fields(line, format);
    if (mm && !mm_header_done) {  // size line
      mm_header_done = true;
      continue;
    }
    if (f.size() < 3) throw InputError(path, lineno, "expected `user item rating`");
    double v = 0;
    try {
      std::size_t used = 0;
      v = std::stod(f[2], &used);
      if (used != f[2].size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      if (lineno == 1 || (R.coo.nnz() == 0 && !mm)) continue;  // header line
      throw InputError(path, lineno, "rating '" + f[2] + "' is not a number");
    }
    if (!std::isfinite(v)) throw InputError(path, lineno, "rating is not finite");
    const int u = intern(R.user_index, R.user_ids, f[0], base == nullptr);
    const int i = intern(R.item_index, R.item_ids, f[1], base == nullptr);
    if (u < 0 || i < 0) throw InputError(path, lineno, "user or item id not in the training ratings");
    const std::uint64_t key = (std::uint64_t(u) << 32) | std::uint32_t(i);
    auto [it, fresh] = seen.emplace(key, R.coo.nnz());
    if (!fresh) {  // duplicate pair: the last rating wins
      R.coo.values[it->second] = v;
      continue;
    }
    R.coo.rows.push_back(u);
    R.coo.cols.push_back(i);
    R.coo.values.push_back(v);
  }
  R.coo.num_rows = std::int64_t(R.user_ids.size());
  R.coo.num_cols = std::int64_t(R.item_ids.size());
  if (R.coo.nnz() == 0) throw InputError(path, 0, "no ratings");
  return R;
}

template <class T, class Mem>
void write_factor(const std::string& path, const DenseMatrix<T, Mem>& F, const std::vector<std::string>& ids) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, F);
  std::ofstream out(path);
  if (!out) throw RuntimeFailure("cannot write " + path);
  out.precision(sizeof(T) == 4 ? 9 : 17);
  for (std::size_t r = 0; r < h.extent(0); ++r) {
    out << ids[r];
    for (std::size_t k = 0; k < h.extent(1); ++k) out << '\t' << h(r, k);
    out << '\n';
  }
}

struct AlsCli {
  CommonOptions common;
  double lambda = 0.1;
  std::string weighting = "nnz";
  double test_fraction = 0.1;
  std::uint64_t split_seed = 42;
  std::string test_input;
  bool tiled = true;
  bool reorder = false;
  int xb = 0, yb = 0;
  std::int64_t batch_rows = 0;
  double tolerance = 0.0;
};

void print_info(const CommonOptions& o, const Report& r) {
  if (o.json) return;
  for (const auto& [k, v] : r.info) std::printf("  %-22s %s\n", k.c_str(), v.c_str());
}

template <class T>
void run_als(const AlsCli& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  const auto t0 = std::chrono::steady_clock::now();
  Ratings R = read_ratings(a.common.input, a.common.format);
  std::unique_ptr<Ratings> given;
  if (!a.test_input.empty()) given = std::make_unique<Ratings>(read_ratings(a.test_input, a.common.format, &R));
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto convert = [](const CooMatrix<double>& c) {
    CooMatrix<T> o;
    o.num_rows = c.num_rows;
    o.num_cols = c.num_cols;
    o.rows = c.rows;
    o.cols = c.cols;
    o.values.assign(c.values.begin(), c.values.end());
    return o;
  };
  const auto all = convert(R.coo);
  CooMatrix<T> given_coo;
  if (given) {
    given_coo = convert(given->coo);
    given_coo.num_rows = all.num_rows;
    given_coo.num_cols = all.num_cols;
  }
  auto problem = als::make_problem(exec, all, a.test_fraction, a.split_seed, given ? &given_coo : nullptr);
  als::Options o;
  o.rank = a.common.rank;
  o.max_iterations = a.common.iters;
  o.seed = a.common.seed;
  o.lambda = a.lambda;
  o.weighting = als::parse_weighting(a.weighting);
  o.tiled = a.tiled;
  o.reorder = a.reorder;
  o.xb = a.xb;
  o.yb = a.yb;
  o.batch_rows = a.batch_rows;
  o.tolerance = a.tolerance;
  auto res = als::solve(exec, problem, o, progress_printer(a.common));
  res.report.timings.set("read", read_s);
  res.report.info["input"] = a.common.input;
  if (!a.common.output.empty()) {
    write_factor(a.common.output + "_X.tsv", res.state.X, R.user_ids);
    write_factor(a.common.output + "_Y.tsv", res.state.Y, R.item_ids);
    res.report.info["factors"] = a.common.output + "_X.tsv, " + a.common.output + "_Y.tsv";
  }
  print_report(a.common, res.report);
  print_info(a.common, res.report);
}

const Registrar als_command{Command{
    "als", "ALS matrix factorization of explicit ratings (BALS tiled format, batched Cholesky)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto a = std::make_shared<AlsCli>();
      a->common.iters = 10;
      a->common.precision = "float";
      add_common_options(cmd, a->common);
      cmd.add_option("--lambda", a->lambda, "regularization lambda (> 0)")->capture_default_str();
      cmd.add_option("--lambda-weighting", a->weighting, "nnz (lambda * n_u, ALS-WR) or plain (lambda)")
          ->capture_default_str()
          ->check(CLI::IsMember({"nnz", "plain"}));
      cmd.add_option("--test-fraction", a->test_fraction, "held-out fraction for test RMSE (0: none)")
          ->capture_default_str();
      cmd.add_option("--split-seed", a->split_seed, "seed of the held-out split")->capture_default_str();
      cmd.add_option("--test-input", a->test_input, "a test ratings file in the same id space");
      cmd.add_flag("--tiled,!--no-tiled", a->tiled, "BALS tiled format (default) or plain CSR");
      cmd.add_flag("--reorder,!--no-reorder", a->reorder, "visit rows and columns by descending count");
      cmd.add_option("--xb", a->xb, "BALS tile rows (0: autotune)")->capture_default_str();
      cmd.add_option("--yb", a->yb, "BALS tile columns (0: autotune)")->capture_default_str();
      cmd.add_option("--batch-rows", a->batch_rows, "rows per batch of normal equations (0: automatic)")
          ->capture_default_str();
      cmd.add_option("--tolerance", a->tolerance, "stop when test RMSE changes by <= this (relative)")
          ->capture_default_str();
      return [a] {
        if (a->common.format == "auto" || a->common.format == "ratings") a->common.format = "auto";
        if (a->common.precision == "float")
          run_als<float>(*a);
        else
          run_als<double>(*a);
      };
    }}};

struct PredictCli {
  std::string factors, pairs;
};

std::unordered_map<std::string, std::vector<double>> read_factor(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  std::unordered_map<std::string, std::vector<double>> out;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream ls(line);
    std::string id;
    if (!std::getline(ls, id, '\t')) continue;
    std::vector<double> v;
    double x;
    while (ls >> x) v.push_back(x);
    if (!out.empty() && v.size() != out.begin()->second.size()) throw InputError(path, lineno, "rank differs");
    out[id] = std::move(v);
  }
  return out;
}

const Registrar predict_command{Command{
    "predict", "score (user, item) pairs with factors written by `kfactor als --output PREFIX`",
    [](CLI::App& cmd) -> std::function<void()> {
      auto p = std::make_shared<PredictCli>();
      cmd.add_option("--factors", p->factors, "PREFIX of PREFIX_X.tsv and PREFIX_Y.tsv")->required();
      cmd.add_option("--pairs", p->pairs, "file of `user item` lines (csv, tab or space separated)")->required();
      return [p] {
        const auto X = read_factor(p->factors + "_X.tsv");
        const auto Y = read_factor(p->factors + "_Y.tsv");
        std::ifstream in(p->pairs);
        if (!in) throw InputError(p->pairs, 0, "cannot open");
        std::string line;
        std::int64_t lineno = 0;
        while (std::getline(in, line)) {
          ++lineno;
          const auto f = split_fields(line, "auto");
          if (f.size() < 2) continue;
          const auto xu = X.find(f[0]);
          const auto yi = Y.find(f[1]);
          if (xu == X.end() || yi == Y.end()) {
            if (lineno == 1) continue;  // header
            std::printf("%s\t%s\tnan\n", f[0].c_str(), f[1].c_str());
            continue;
          }
          double s = 0;
          for (std::size_t k = 0; k < xu->second.size(); ++k) s += xu->second[k] * yi->second[k];
          std::printf("%s\t%s\t%.6g\n", f[0].c_str(), f[1].c_str(), s);
        }
      };
    }}};

/// Planted rank-5 ratings (2,000 x 1,000, 5% observed, noise 0.1), f = 8.
Report als_demo(std::uint64_t seed) {
  using T = float;
  const Kokkos::DefaultExecutionSpace exec;
  const int m = 2000, n = 1000, r = 5;
  const CounterRng rng(seed, RngStream::user);
  std::vector<double> X0(std::size_t(m) * r), Y0(std::size_t(n) * r);
  for (std::size_t i = 0; i < X0.size(); ++i) X0[i] = rng.uniform(std::uint64_t(i));
  for (std::size_t i = 0; i < Y0.size(); ++i) Y0[i] = rng.uniform(std::uint64_t(1) << 40 | i);
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  for (int u = 0; u < m; ++u)
    for (int i = 0; i < n; ++i) {
      const std::uint64_t key = std::uint64_t(u) * n + i;
      if (rng.uniform(std::uint64_t(2) << 40 | key) >= 0.05) continue;
      double v = 0;
      for (int k = 0; k < r; ++k) v += X0[std::size_t(u) * r + k] * Y0[std::size_t(i) * r + k];
      coo.rows.push_back(u);
      coo.cols.push_back(i);
      coo.values.push_back(T(v + 0.1 * (rng.uniform(std::uint64_t(3) << 40 | key) - 0.5)));
    }
  auto problem = als::make_problem(exec, coo, 0.1, seed);
  als::Options o;
  o.rank = 8;
  o.max_iterations = 10;
  o.lambda = 0.01;
  o.seed = seed;
  o.xb = 4;
  o.yb = 128;
  return als::solve(exec, problem, o).report;
}

const Registrar als_demo_entry{Demo{"als", als_demo}};

}  // namespace
}  // namespace kfactor::cli
