// `kfactor als`: ALS (CSR or BALS tiled half-steps) on explicit ratings, read through
// kfactor::io, with HDF5 checkpoints and exact restart; `kfactor predict`
// scores (user, item) pairs from the factor files it writes; a Demo entry on
// planted low-rank ratings.
//
// Input: --format auto|ratings|mm (auto: io::detect_format). Rating files
// keep their original 64-bit user and item ids (io::read_ratings remaps them
// to 0..n-1 in ascending order); Matrix Market rows and columns are their
// 0-based indices. --output PREFIX writes PREFIX_X.csv and PREFIX_Y.csv
// (io::write_factor: `id,f0,...` with the original ids).
//
// Checkpoints: --checkpoint FILE saves the State every --checkpoint-every
// iterations and at the end; --restart FILE continues a saved run to --iters.
// The checkpoint records the options that decide the iterates
// (kfactor::option_values: rank, lambda, weighting, layout, reorder, seed)
// and the fingerprint of the training matrix (which the held-out split
// decides); the library refuses a restart whose options or input differ,
// naming what changed (exit 2 or 3), and the checkpoint is not touched.
// With --layout auto the structure is timed per run; give --layout csr or
// bals for runs you mean to restart bit for bit on another machine.
//
// --distributed (under `mpiexec -n P kfactor als --distributed ...`): every
// rank reads the input (errors agreed on every rank) and keeps its users'
// and items' rows (kfactor/distributed/als.hpp). --factor-layout replicated
// all-gathers X and Y on every rank (bit for bit the single-rank factors);
// blocked never holds a whole factor on a rank (blocks rotate around a ring;
// equal up to reduction-order rounding); auto (default) picks blocked when
// the replicas exceed --factor-memory-budget MiB. Rank 0 prints and writes
// (the factors gathered to it alone); checkpoints hold the full factors in
// the single-rank layout and restart on any number of ranks, either layout.
#include "cli.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include <kfactor/config.hpp>
#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/collective.hpp>

#include <mpi.h>
#endif

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kfactor::cli {
namespace {

/// Ratings with their original ids (empty: ids are the 0-based indices).
template <class T>
struct Ratings {
  CooMatrix<T> coo;
  std::vector<std::int64_t> user_ids, item_ids;
};

/// Reads `path` through kfactor::io: rating files keep their ids, other
/// formats (Matrix Market, edge lists) give indices.
template <class T>
Ratings<T> read_input(const std::string& path, const std::string& format_name) {
  const std::string text = io::read_file(path);
  io::Format f = io::parse_format(format_name);
  if (f == io::Format::automatic) f = io::detect_format(text, path);
  Ratings<T> R;
  if (f == io::Format::ratings) {
    auto d = io::parse_ratings<T>(text, path);
    R.coo = std::move(d.matrix);
    R.user_ids = std::move(d.user_ids);
    R.item_ids = std::move(d.item_ids);
  } else {
    R.coo = io::parse_matrix<T>(text, path, f);
  }
  if (R.coo.nnz() == 0) throw InputError(path + ": no ratings");
  return R;
}

/// Index of `id` in the ascending `ids` (empty: the id is the index, < n).
std::int64_t index_of(const std::vector<std::int64_t>& ids, std::int64_t id, std::int64_t n) {
  if (ids.empty()) return id >= 0 && id < n ? id : -1;
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? std::int64_t(it - ids.begin()) : -1;
}

/// A test set re-indexed into the training ratings' id space; unknown ids are
/// an InputError.
template <class T>
CooMatrix<T> to_training_ids(const Ratings<T>& test, const Ratings<T>& train, const std::string& path) {
  CooMatrix<T> out;
  out.num_rows = train.coo.num_rows;
  out.num_cols = train.coo.num_cols;
  for (std::size_t e = 0; e < test.coo.nnz(); ++e) {
    const std::int64_t uid = test.user_ids.empty() ? test.coo.rows[e] : test.user_ids[test.coo.rows[e]];
    const std::int64_t iid = test.item_ids.empty() ? test.coo.cols[e] : test.item_ids[test.coo.cols[e]];
    const auto u = index_of(train.user_ids, uid, train.coo.num_rows);
    const auto i = index_of(train.item_ids, iid, train.coo.num_cols);
    if (u < 0 || i < 0)
      throw InputError(path + ": " + (u < 0 ? "user " + std::to_string(uid) : "item " + std::to_string(iid)) +
                       " is not in the training ratings");
    out.rows.push_back(ordinal_t(u));
    out.cols.push_back(ordinal_t(i));
    out.values.push_back(test.coo.values[e]);
  }
  return out;
}

struct AlsCli {
  CommonOptions common;
  double lambda = 0.1;
  std::string weighting = "nnz";
  double test_fraction = 0.1;
  std::uint64_t split_seed = 42;
  std::string test_input;
  std::string layout = "auto";
  bool reorder = false;
  int xb = 0, yb = 0;
  std::int64_t batch_rows = 0;
  double tolerance = 0.0;
  std::string checkpoint, restart;
  int checkpoint_every = 1;
  bool distributed = false;
  std::string factor_layout = "auto";
  double factor_memory_budget_mb = 2048;
};

void print_info(const CommonOptions& o, const Report& r) {
  if (o.json) return;
  for (const auto& [k, v] : r.info) std::printf("  %-22s %s\n", k.c_str(), v.c_str());
}

als::Options make_options(const AlsCli& a) {
  als::Options o;
  o.rank = a.common.rank;
  o.stop.max_iterations = a.common.iters;
  o.stop.tolerance = a.tolerance;
  o.seed = a.common.seed;
  o.lambda = a.lambda;
  o.weighting = als::parse_weighting(a.weighting);
  o.layout = als::parse_layout(a.layout);
  o.reorder = a.reorder;
  o.xb = a.xb;
  o.yb = a.yb;
  o.batch_rows = a.batch_rows;
  o.validate();
  return o;
}

/// Training ratings (with ids) and the problem with its splits.
template <class T>
struct AlsInput {
  Ratings<T> R;
  als::Problem<T, Kokkos::DefaultExecutionSpace::memory_space> problem;
  double read_seconds = 0.0;
};

template <class T>
AlsInput<T> read_als_input(const AlsCli& a) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto t0 = std::chrono::steady_clock::now();
  AlsInput<T> in;
  in.R = read_input<T>(a.common.input, a.common.format);
  std::optional<CooMatrix<T>> given;
  if (!a.test_input.empty()) given = to_training_ids(read_input<T>(a.test_input, a.common.format), in.R, a.test_input);
  in.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  in.problem = als::make_problem(exec, in.R.coo, a.test_fraction, a.split_seed, given ? &*given : nullptr);
  return in;
}

template <class T>
void run_als(const AlsCli& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  const AlsInput<T> in = read_als_input<T>(a);
  const Ratings<T>& R = in.R;
  const auto& problem = in.problem;
  const als::Options o = make_options(a);
  const bool checkpointing = !a.checkpoint.empty() || !a.restart.empty();
  CheckpointMeta meta;
  if (checkpointing)
    meta = checkpoint_meta<T, Space>("als", option_values(o), fingerprint(exec, problem.train), o.rank);

  auto state = als::init(exec, problem, o);
  if (!a.restart.empty()) {
    load_checkpoint(a.restart, state, meta);
    state.reset_workspace();
  }
  Observer observer = progress_printer(a.common);
  if (!a.checkpoint.empty())
    observer = chain(observer, checkpoint_observer(a.checkpoint, a.checkpoint_every, state, meta));
  Report report = als::resume(exec, problem, o, state, observer);
  if (!a.checkpoint.empty()) save_checkpoint(a.checkpoint, state, meta);
  report.timings.set("read", in.read_seconds);
  report.info["input"] = a.common.input;
  if (!a.restart.empty()) report.info["restart"] = a.restart;
  if (!a.checkpoint.empty()) report.info["checkpoint"] = a.checkpoint;
  if (!a.common.output.empty()) {
    const std::string fx = a.common.output + "_X.csv", fy = a.common.output + "_Y.csv";
    io::write_factor(fx, state.X, R.user_ids);
    io::write_factor(fy, state.Y, R.item_ids);
    report.info["factors"] = fx + ", " + fy;
  }
  print_report(a.common, report);
  print_info(a.common, report);
}

#if defined(KFACTOR_HAVE_MPI)
/// --distributed, on every rank of MPI_COMM_WORLD.
template <class T>
void run_als_distributed(const AlsCli& a, MPI_Comm comm) {
  using Space = Kokkos::DefaultExecutionSpace;
  namespace da = distributed::als;
  const Space exec;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const AlsInput<T> in = distributed::agree(comm, [&] { return read_als_input<T>(a); });
  da::Options o = make_options(a);
  o.factor_layout = da::parse_factor_layout(a.factor_layout);
  if (!(a.factor_memory_budget_mb >= 0 && a.factor_memory_budget_mb <= 1048576.0))
    throw UsageError("--factor-memory-budget must be in 0..1048576 MiB");
  o.factor_memory_budget = static_cast<std::size_t>(a.factor_memory_budget_mb * 1048576.0);
  const auto fp = fingerprint(exec, in.problem.train);
  distributed::require_same(comm, fp.checksum, "the checksum of " + a.common.input);
  {
    // The factor layout changes only rounding: not among the checkpoint's
    // options, but every rank must run the same one.
    std::string all = a.factor_layout + " " + std::to_string(o.factor_memory_budget) + " " +
                      std::to_string(o.stop.max_iterations);
    for (const auto& [k, v] : option_values(o)) all += " " + k + "=" + v;
    distributed::require_same(comm, std::hash<std::string>{}(all), "the als options");
  }
  const CheckpointMeta meta = checkpoint_meta<T, Space>("als", option_values(o), fp, o.rank);
  const auto lp = distributed::agree(comm, [&] { return da::distribute(exec, comm, in.problem); });
  auto state = distributed::agree(comm, [&] { return da::init(exec, comm, lp, o); });
  if (!a.restart.empty()) {
    load_checkpoint(comm, a.restart, state, meta, state.row_blocks());
    state.reset_workspace();
  }
  Observer observer = rank == 0 ? progress_printer(a.common) : Observer{};
  if (!a.checkpoint.empty())
    observer = chain(observer, distributed::checkpoint_observer(comm, a.checkpoint, a.checkpoint_every, state, meta));
  Report report = da::resume(exec, lp, o, state, observer);
  if (!a.checkpoint.empty()) save_checkpoint(comm, a.checkpoint, state, meta, state.row_blocks());
  report.timings.set("read", in.read_seconds);
  report.info["input"] = a.common.input;
  if (!a.restart.empty()) report.info["restart"] = a.restart;
  if (!a.checkpoint.empty()) report.info["checkpoint"] = a.checkpoint;
  // Only rank 0 holds the whole factors, and only to write them.
  const auto factors = a.common.output.empty() ? decltype(da::gather_factors_to(exec, state, 0)){}
                                               : da::gather_factors_to(exec, state, 0);
  const auto& X = factors.first;
  const auto& Y = factors.second;
  distributed::agree(comm, [&] {
    if (rank != 0 || a.common.output.empty()) return;
    const std::string fx = a.common.output + "_X.csv", fy = a.common.output + "_Y.csv";
    io::write_factor(fx, X, in.R.user_ids);
    io::write_factor(fy, Y, in.R.item_ids);
    report.info["factors"] = fx + ", " + fy;
  });
  if (rank == 0) {
    print_report(a.common, report);
    print_info(a.common, report);
  }
}
#endif

template <class T>
void run_als_command(const AlsCli& a) {
  if (!a.distributed) return run_als<T>(a);
#if defined(KFACTOR_HAVE_MPI)
  run_als_distributed<T>(a, MPI_COMM_WORLD);
#else
  throw UsageError("als: --distributed needs kfactor built with MPI");
#endif
}

const Registrar als_command{Command{
    "als", "ALS matrix factorization of explicit ratings (CSR or BALS tiled half-steps, batched Cholesky)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto a = std::make_shared<AlsCli>();
      a->common.iters = 10;
      a->common.precision = "float";
      add_common_options(cmd, a->common);
      cmd.add_option("--lambda", a->lambda,
                     "regularization lambda, in (0, 1e6]; default 0.1: the best test RMSE of 0.05, 0.1 and 0.15 on "
                     "MovieLens latest-small at f = 10 with nnz weighting")
          ->capture_default_str();
      cmd.add_option("--lambda-weighting", a->weighting,
                     "nnz (lambda * n_u, ALS-WR) or plain (lambda); default nnz, as ALS-WR, cuMF and Spark use")
          ->capture_default_str()
          ->check(CLI::IsMember({"nnz", "plain"}));
      cmd.add_option("--test-fraction", a->test_fraction,
                     "held-out fraction for test RMSE, in [0, 1) (0: none); default 0.1, the usual 90/10 split")
          ->capture_default_str();
      cmd.add_option("--split-seed", a->split_seed, "seed of the held-out split; default 42, any fixed seed")
          ->capture_default_str();
      cmd.add_option("--test-input", a->test_input,
                     "a test ratings file in the same id space (same --format); default none");
      cmd.add_option("--layout", a->layout,
                     "half-step structure: auto, bals (tiled) or csr; default auto: CSR unless a BALS tile is 10% "
                     "faster on a timed sample (CSR measured 6-7x faster on GPUs, 1.4x on 2 CPU cores)")
          ->capture_default_str()
          ->check(CLI::IsMember({"auto", "bals", "csr"}));
      cmd.add_flag("--reorder,!--no-reorder", a->reorder,
                   "visit rows and columns by descending count; default off: it changes only rounding and costs a "
                   "permuted copy of R");
      cmd.add_option("--xb", a->xb, "BALS tile rows, in 0..64; default 0: autotuned per half-step")
          ->capture_default_str();
      cmd.add_option("--yb", a->yb, "BALS tile columns, in 0..65536; default 0: autotuned per half-step")
          ->capture_default_str();
      cmd.add_option("--batch-rows", a->batch_rows,
                     "rows per batch of normal equations, in 0..2^31-1; default 0: as many as fit 32 MiB on hosts, "
                     "1 GiB on devices (the result does not depend on it)")
          ->capture_default_str();
      cmd.add_option("--tolerance", a->tolerance,
                     "stop when the test RMSE changes by <= this (relative), >= 0; default 0: off, run --iters")
          ->capture_default_str();
      cmd.add_option("--checkpoint", a->checkpoint, "save the state to this HDF5 file (atomically); default none");
      cmd.add_option("--checkpoint-every", a->checkpoint_every,
                     "iterations between checkpoints (and at the end); default 1: a crash loses one iteration")
          ->capture_default_str()
          ->check(CLI::Range(1, 1000000));
      cmd.add_option("--restart", a->restart, "continue the run saved in this checkpoint up to --iters; default none");
      cmd.add_flag("--distributed", a->distributed,
                   "run over the ranks of MPI_COMM_WORLD (mpiexec -n P kfactor als --distributed ...): users and "
                   "items split by nonzeros; same factors as one rank (bit for bit with replicated factors); "
                   "default off");
      cmd.add_option("--factor-layout", a->factor_layout,
                     "--distributed: replicated (X and Y all-gathered on every rank), blocked (no rank holds a whole "
                     "factor: blocks rotate around a ring), or auto; default auto: blocked only when the replicas "
                     "exceed --factor-memory-budget, since replicated needs fewer messages")
          ->capture_default_str()
          ->check(CLI::IsMember({"replicated", "blocked", "auto"}));
      cmd.add_option("--factor-memory-budget", a->factor_memory_budget_mb,
                     "--distributed --factor-layout auto: MiB per rank the replicas of X and Y may take, in "
                     "0..1048576; default 2048, a small share of a GPU's memory")
          ->capture_default_str();
      return [a] {
        if (a->common.precision == "float")
          run_als_command<float>(*a);
        else
          run_als_command<double>(*a);
      };
    }}};

struct PredictCli {
  std::string factors, pairs;
};

/// A factor file written by io::write_factor_csv: header `id,f0,...`, then
/// `id,v0,...` lines. Returns id -> row.
std::unordered_map<std::int64_t, std::vector<double>> read_factor_csv(const std::string& path) {
  const std::string text = io::read_file(path);
  std::unordered_map<std::int64_t, std::vector<double>> out;
  std::size_t width = 0;
  std::int64_t lineno = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto fail = [&](const std::string& why) { return InputError(path + ":" + std::to_string(lineno) + ": " + why); };
    std::vector<std::string_view> fields;
    for (std::size_t p = 0;;) {
      const auto q = line.find(',', p);
      fields.push_back(line.substr(p, q == std::string_view::npos ? std::string_view::npos : q - p));
      if (q == std::string_view::npos) break;
      p = q + 1;
    }
    if (lineno == 1) {
      if (fields.size() < 2 || fields[0] != "id") throw fail("expected the header `id,f0,...` of a factor CSV");
      width = fields.size() - 1;
      continue;
    }
    if (fields.size() != width + 1) throw fail("expected " + std::to_string(width + 1) + " fields");
    std::int64_t id = 0;
    auto r = std::from_chars(fields[0].data(), fields[0].data() + fields[0].size(), id);
    if (r.ec != std::errc() || r.ptr != fields[0].data() + fields[0].size()) throw fail("bad id");
    std::vector<double> v(width);
    for (std::size_t k = 0; k < width; ++k) {
      const auto& f = fields[k + 1];
      auto rv = std::from_chars(f.data(), f.data() + f.size(), v[k]);
      if (rv.ec != std::errc() || rv.ptr != f.data() + f.size() || !std::isfinite(v[k])) throw fail("bad value");
    }
    if (!out.emplace(id, std::move(v)).second) throw fail("id " + std::to_string(id) + " repeated");
  }
  if (width == 0) throw InputError(path + ": empty factor file");
  return out;
}

const Registrar predict_command{Command{
    "predict",
    "score (user, item) pairs with factors written by `kfactor als --output PREFIX`; prints `user item score` "
    "for each distinct pair in ascending (user, item) order (nan for an unknown id)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto p = std::make_shared<PredictCli>();
      cmd.add_option("--factors", p->factors, "PREFIX of PREFIX_X.csv and PREFIX_Y.csv")->required();
      cmd.add_option("--pairs", p->pairs, "ratings-style file of `user item [rating ...]` lines")->required();
      return [p] {
        const auto X = read_factor_csv(p->factors + "_X.csv");
        const auto Y = read_factor_csv(p->factors + "_Y.csv");
        if (X.begin()->second.size() != Y.begin()->second.size())
          throw InputError(p->factors + "_X.csv and _Y.csv have different ranks");
        io::ReadOptions ro;
        ro.duplicates = io::DuplicatePolicy::last;
        const auto pairs = io::read_ratings<double>(p->pairs, ro);
        const auto& c = pairs.matrix;
        for (std::size_t e = 0; e < c.nnz(); ++e) {
          const std::int64_t u = pairs.user_ids[c.rows[e]], i = pairs.item_ids[c.cols[e]];
          const auto xu = X.find(u);
          const auto yi = Y.find(i);
          if (xu == X.end() || yi == Y.end()) {
            std::printf("%lld\t%lld\tnan\n", (long long)u, (long long)i);
            continue;
          }
          double s = 0;
          for (std::size_t k = 0; k < xu->second.size(); ++k) s += xu->second[k] * yi->second[k];
          std::printf("%lld\t%lld\t%.6g\n", (long long)u, (long long)i, s);
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
  o.stop.max_iterations = 10;
  o.lambda = 0.01;
  o.seed = seed;
  return als::solve(exec, problem, o).report;
}

const Registrar als_demo_entry{Demo{"als", als_demo}};

}  // namespace
}  // namespace kfactor::cli
