// `kfactor als`: ALS (CSR or BALS tiled half-steps) on explicit ratings, or
// with --implicit on interaction counts (confidence-weighted, exact or CG
// half-steps; kfactor/als/als.hpp), read through
// kfactor::io, with HDF5 checkpoints and exact restart; `kfactor predict`
// scores (user, item) pairs from the factor files it writes; a Demo entry on
// planted low-rank ratings.
//
// Input: --format auto|ratings|mm (auto: io::detect_format). Rating files
// keep their original 64-bit user and item ids (io::read_ratings remaps them
// to 0..n-1 in ascending order); Matrix Market rows and columns are their
// 0-based indices. The held-out set is a --test-fraction of the ratings,
// a --test-input file, or a per-user --split (kfactor/als/split.hpp:
// leave-k-out:K, or leave-last-k-out:K from the ratings' timestamp column;
// with --distributed each rank splits its own users). --output PREFIX
// writes PREFIX_X.csv and PREFIX_Y.csv
// (io::write_factor: `id,f0,...` with the original ids) as one output set
// (a `# kfactor-set` stamp line first); neither they nor a checkpoint may
// replace an input file (nor the factors the restart checkpoint): every
// target is checked before the run (io::check_run_files).
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
// --distributed (under `mpiexec -n P kfactor als --distributed ...`): each
// rank reads only its part of the ratings (distributed::read_rows: a
// line-aligned byte range of a text file, or its rows of an HDF5 CSR file;
// errors agreed on every rank) and keeps its users' and items' rows
// (kfactor/distributed/als.hpp). --factor-layout replicated
// all-gathers X and Y on every rank (bit for bit the single-rank factors);
// blocked never holds a whole factor on a rank (blocks rotate around a ring;
// equal up to reduction-order rounding); auto (default) picks blocked when
// the replicas exceed --factor-memory-budget MiB. Rank 0 prints and writes
// (the factors gathered to it alone); checkpoints hold the full factors in
// the single-rank layout and restart on any number of ranks, either layout.
#include "cli.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/als/split.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/ranking_file.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include <kfactor/config.hpp>
#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/read.hpp>

#include <mpi.h>
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace kfactor::cli {
namespace {

/// How the ratings are read: with --implicit they are interaction counts,
/// so the reader refuses a negative one at its line (the solver's own check
/// could name only its row and column, not the file's ids).
io::ReadOptions rating_read_options(bool implicit) {
  io::ReadOptions ro;
  ro.non_negative = implicit;
  return ro;
}

/// Reads `path` through kfactor::io: rating files keep their original ids,
/// other formats (Matrix Market, edge lists) leave the id lists empty (the id
/// is the index).
template <class T>
io::RatingData<T> read_input(const std::string& path, const std::string& format_name, bool implicit) {
  io::RatingData<T> R = io::read_input<T>(path, io::parse_format(format_name), rating_read_options(implicit));
  if (R.matrix.nnz() == 0) throw InputError(path + ": no ratings");
  return R;
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
  bool implicit = false;
  double alpha = als::Options{}.alpha;
  std::string confidence = "linear";
  double epsilon = als::Options{}.epsilon;
  std::string solver = "cholesky";
  int cg_steps = als::Options{}.cg_steps;
  int eval_k = als::Options{}.eval_k;
  std::string split;                          ///< "" (fraction or --test-input), leave-k-out:K or leave-last-k-out:K
  std::optional<als::PerUserSplit> per_user;  ///< --split, parsed
};

/// The report's name of a --split run: the split, and the seed that chooses it.
std::string split_info(const als::PerUserSplit& s) {
  return als::to_string(s) + (s.kind == als::SplitKind::leave_k_out ? ", seed " + std::to_string(s.seed) : "");
}

/// --factor-memory-budget in MiB: up to 1 TiB per rank, more than any
/// device holds.
constexpr Range<double> factor_memory_budget_range{.lo = 0.0, .hi = 1048576.0};

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
  o.implicit = a.implicit;
  o.alpha = a.alpha;
  o.confidence = als::parse_confidence(a.confidence);
  o.epsilon = a.epsilon;
  o.solver = als::parse_solve_method(a.solver);
  o.cg_steps = a.cg_steps;
  o.eval_k = a.eval_k;
  o.validate();
  return o;
}

/// Training ratings (with ids) and the problem with its splits.
template <class T>
struct AlsInput {
  io::RatingData<T> R;
  als::Problem<T, Kokkos::DefaultExecutionSpace::memory_space> problem;
  double read_seconds = 0.0;
};

template <class T>
AlsInput<T> read_als_input(const AlsCli& a) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto t0 = std::chrono::steady_clock::now();
  AlsInput<T> in;
  in.R = read_input<T>(a.common.input, a.common.format, a.implicit);
  std::optional<CooMatrix<T>> given;
  if (!a.test_input.empty())
    given = io::reindex_ratings(read_input<T>(a.test_input, a.common.format, a.implicit), in.R, io::UnknownIds::reject,
                                a.test_input)
                .matrix;
  in.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (a.per_user) {
    // The held-out interactions are the problem's test set, as a given one.
    const auto [train, test] = als::split_per_user(
        in.R.matrix, *a.per_user, in.R.timestamps.empty() ? nullptr : &in.R.timestamps, a.common.input);
    in.problem = als::make_problem(exec, train, 0.0, a.split_seed, &test);
    return in;
  }
  in.problem = als::make_problem(exec, in.R.matrix, a.test_fraction, a.split_seed, given ? &*given : nullptr);
  return in;
}

/// The files the run reads: no output or checkpoint may replace one.
std::vector<std::string> input_files(const AlsCli& a) {
  std::vector<std::string> files{a.common.input};
  if (!a.test_input.empty()) files.push_back(a.test_input);
  return files;
}

/// Refuses, before anything is read, an output or checkpoint that would
/// replace an input, an output over the restart checkpoint, and two targets
/// that are one file (UsageError naming both paths).
void check_files(const AlsCli& a) {
  io::RunFiles files;
  files.inputs = input_files(a);
  if (!a.common.output.empty()) files.outputs = {a.common.output + "_X.csv", a.common.output + "_Y.csv"};
  files.checkpoint = a.checkpoint;
  files.restart = a.restart;
  io::check_run_files(files);
}

/// Writes PREFIX_X.csv and PREFIX_Y.csv as one output set (io::OutputSet:
/// a reader can tell that they come from the same run); returns their names.
template <class T, class... P>
std::string write_factors(const AlsCli& a, const Kokkos::View<T**, P...>& X, const Kokkos::View<T**, P...>& Y,
                          const io::RatingData<T>& R) {
  const std::string fx = a.common.output + "_X.csv", fy = a.common.output + "_Y.csv";
  auto protected_files = input_files(a);
  if (!a.restart.empty()) protected_files.push_back(a.restart);
  const io::OutputSet set(protected_files, {"X", "Y"});
  io::write_factor(fx, X, R.user_ids, {}, set["X"]);
  io::write_factor(fy, Y, R.item_ids, {}, set["Y"]);
  return fx + ", " + fy;
}

template <class T>
void run_als(const AlsCli& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  check_files(a);
  const AlsInput<T> in = read_als_input<T>(a);
  const io::RatingData<T>& R = in.R;
  const auto& problem = in.problem;
  const als::Options o = make_options(a);
  const bool checkpointing = !a.checkpoint.empty() || !a.restart.empty();
  CheckpointMeta meta;
  if (checkpointing) {
    meta = checkpoint_meta<T, Space>("als", option_values(o), fingerprint(exec, problem.train), o.rank);
    meta.input_files = input_files(a);
  }

  auto state = als::init(exec, problem, o);
  std::string setup_change;
  if (!a.restart.empty()) setup_change = warn_restart(load_checkpoint(a.restart, state, meta).setup_change);
  Observer observer = progress_printer(a.common);
  if (!a.checkpoint.empty())
    observer = chain(observer, checkpoint_observer(a.checkpoint, a.checkpoint_every, state, meta));
  Report report = als::resume(exec, problem, o, state, observer);
  if (!a.checkpoint.empty()) save_checkpoint(a.checkpoint, state, meta);
  report.timings.set("read", in.read_seconds);
  report.info["input"] = a.common.input;
  if (a.per_user) report.info["split"] = split_info(*a.per_user);
  if (!a.restart.empty()) note_restart(report, a.restart, setup_change);
  if (!a.checkpoint.empty()) report.info["checkpoint"] = a.checkpoint;
  if (!a.common.output.empty()) report.info["factors"] = write_factors(a, state.X, state.Y, R);
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
  // Each rank parses only its part of the ratings (distributed::read_rows);
  // distribute() splits, balances and transposes them without any rank
  // holding them all: the same LocalProblem as from the whole file.
  distributed::agree(comm, [&] { check_files(a); });
  const auto t0 = std::chrono::steady_clock::now();
  const io::Format format = io::parse_format(a.common.format);
  auto some_ratings = [&](const auto& rows, const std::string& path) {
    distributed::agree(comm, [&] {
      if (rows.global_nnz == 0) throw InputError(path + ": no ratings");
    });
  };
  const io::ReadOptions ro = rating_read_options(a.implicit);
  const auto ratings = distributed::read_rows<T>(comm, a.common.input, format, ro);
  some_ratings(ratings, a.common.input);
  std::optional<distributed::RowSlice<T>> given;
  if (!a.test_input.empty()) {
    const auto held = distributed::read_rows<T>(comm, a.test_input, format, ro);
    some_ratings(held, a.test_input);
    given = distributed::reindex_rows(comm, held, ratings, io::UnknownIds::reject, a.test_input);
  }
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  io::RatingData<T> ids;
  ids.user_ids = ratings.row_ids;
  ids.item_ids = ratings.col_ids;
  // --split: each rank splits its users; the held-out part is the given test set, as on one rank.
  std::optional<distributed::RowSlice<T>> train;
  if (a.per_user) std::tie(train, given) = da::split_per_user(comm, ratings, *a.per_user, a.common.input);
  const auto lp = distributed::agree(comm, [&] {
    return da::distribute(exec, comm, train ? *train : ratings, a.test_fraction, a.split_seed,
                          given ? &*given : nullptr);
  });
  const auto fp = distributed::fingerprint(exec, comm, lp.train, lp.user_begin(), lp.users);
  da::Options o = make_options(a);
  o.factor_layout = da::parse_factor_layout(a.factor_layout);
  o.factor_memory_budget = static_cast<std::size_t>(a.factor_memory_budget_mb * 1048576.0);
  {
    // The factor layout changes only rounding: not among the checkpoint's
    // options, but every rank must run the same one.
    std::string all =
        a.factor_layout + " " + std::to_string(o.factor_memory_budget) + " " + std::to_string(o.stop.max_iterations);
    for (const auto& [k, v] : option_values(o)) all += " " + k + "=" + v;
    distributed::require_same(comm, std::hash<std::string>{}(all), "the als options");
  }
  CheckpointMeta meta = checkpoint_meta<T, Space>("als", option_values(o), fp, o.rank);
  meta.input_files = input_files(a);
  auto state = distributed::agree(comm, [&] { return da::init(exec, comm, lp, o); });
  std::string setup_change;
  if (!a.restart.empty())
    setup_change = warn_restart(load_checkpoint(comm, a.restart, state, meta, state.row_blocks()).setup_change);
  Observer observer = progress_printer(a.common, 1, comm);
  if (!a.checkpoint.empty())
    observer = chain(observer, distributed::checkpoint_observer(comm, a.checkpoint, a.checkpoint_every, state, meta));
  Report report = da::resume(exec, lp, o, state, observer);
  if (!a.checkpoint.empty()) save_checkpoint(comm, a.checkpoint, state, meta, state.row_blocks());
  report.timings.set("read", read_seconds);
  report.info["input"] = a.common.input;
  if (a.per_user) report.info["split"] = split_info(*a.per_user);
  if (!a.restart.empty()) note_restart(report, a.restart, setup_change);
  if (!a.checkpoint.empty()) report.info["checkpoint"] = a.checkpoint;
  // Only rank 0 holds the whole factors, and only to write them.
  const auto factors = a.common.output.empty() ? decltype(da::gather_factors_to(exec, state, 0)){}
                                               : da::gather_factors_to(exec, state, 0);
  const auto& X = factors.first;
  const auto& Y = factors.second;
  distributed::agree(comm, [&] {
    if (rank != 0 || a.common.output.empty()) return;
    report.info["factors"] = write_factors(a, X, Y, ids);
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
    "als",
    "ALS matrix factorization of explicit ratings (CSR or BALS tiled half-steps, batched Cholesky), or of implicit "
    "feedback with --implicit",
    [](CLI::App& cmd) -> std::function<void()> {
      auto a = std::make_shared<AlsCli>();
      a->common.iters = 10;
      a->common.precision = "float";
      add_common_options(cmd, a->common, als::Options::rank_range);
      add_number(cmd, "--lambda", a->lambda,
                 "regularization lambda; default 0.1: the best test RMSE of 0.05, 0.1 and 0.15 on MovieLens "
                 "latest-small at f = 10 with nnz weighting",
                 als::Options::lambda_range);
      cmd.add_option("--lambda-weighting", a->weighting,
                     "nnz (lambda * n_u, ALS-WR) or plain (lambda); default nnz, as ALS-WR, cuMF and Spark use")
          ->capture_default_str()
          ->check(CLI::IsMember({"nnz", "plain"}));
      auto* test_fraction = add_number(cmd, "--test-fraction", a->test_fraction,
                                       "held-out fraction for test RMSE; default 0.1, the usual 90/10 split (0 with "
                                       "--implicit, whose metric is the training objective)",
                                       test_fraction_range);
      add_number(cmd, "--split-seed", a->split_seed, "seed of the held-out split; default 42, any fixed seed",
                 seed_range);
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
      add_number(cmd, "--xb", a->xb, "BALS tile rows; default 0: autotuned per half-step", als::Options::xb_range);
      add_number(cmd, "--yb", a->yb, "BALS tile columns; default 0: autotuned per half-step", als::Options::yb_range);
      add_number(cmd, "--batch-rows", a->batch_rows,
                 "rows per batch of normal equations; default 0: as many as fit 32 MiB on hosts, 1 GiB on devices "
                 "(the result does not depend on it)",
                 als::Options::batch_rows_range);
      add_number(cmd, "--tolerance", a->tolerance,
                 "stop when the test RMSE (with --implicit: the loss) changes by <= this (relative); default 0: off, "
                 "run --iters",
                 StopRule::tolerance_range);
      cmd.add_option("--checkpoint", a->checkpoint, "save the state to this HDF5 file (atomically); default none");
      add_number(cmd, "--checkpoint-every", a->checkpoint_every,
                 "iterations between checkpoints (and at the end); default 1: a crash loses one iteration",
                 checkpoint_every_range);
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
      add_number(cmd, "--factor-memory-budget", a->factor_memory_budget_mb,
                 "--distributed --factor-layout auto: MiB per rank the replicas of X and Y may take; default 2048, "
                 "a small share of a GPU's memory",
                 factor_memory_budget_range);
      cmd.add_flag("--implicit", a->implicit,
                   "implicit feedback (Hu, Koren, Volinsky 2008): ratings are interaction counts >= 0, every "
                   "unobserved pair counts as preference 0 with confidence 1; default off (explicit ratings)");
      add_number(cmd, "--alpha", a->alpha,
                 "--implicit: confidence scale, c = 1 + alpha r (or log); default 40, the paper's choice",
                 als::Options::alpha_range);
      cmd.add_option("--confidence", a->confidence,
                     "--implicit: linear (c = 1 + alpha r) or log (c = 1 + alpha log(1 + r / epsilon), for counts "
                     "spanning orders of magnitude); default linear")
          ->capture_default_str()
          ->check(CLI::IsMember({"linear", "log"}));
      add_number(cmd, "--epsilon", a->epsilon, "--implicit --confidence log: the count scale epsilon; default 1",
                 als::Options::epsilon_range);
      cmd.add_option("--solver", a->solver,
                     "--implicit: cholesky (exact half-steps, O(n_u f^2 + f^3) per row) or cg (--cg-steps "
                     "conjugate-gradient steps from the current factors, O(n_u f) per step and row; cheaper at large "
                     "f); default cholesky")
          ->capture_default_str()
          ->check(CLI::IsMember({"cholesky", "cg"}));
      add_number(cmd, "--cg-steps", a->cg_steps,
                 "--implicit --solver cg: steps per half-step; default 3 (Takacs et al. 2011: enough for the "
                 "objective to fall as with exact solves)",
                 als::Options::cg_steps_range);
      add_number(cmd, "--eval-k", a->eval_k,
                 "--implicit with a held-out set: K of precision@K, recall@K, MAP@K, nDCG@K in the report; default "
                 "10, the usual cut-off (clamped to the item count)",
                 als::eval_k_range);
      auto* split = cmd.add_option(
          "--split", a->split,
          "a per-user held-out set instead of --test-fraction: leave-k-out:K holds out K interactions of every user "
          "with more than K (chosen by --split-seed), leave-last-k-out:K the K latest by timestamp (a ratings file "
          "with a timestamp column: user item rating timestamp); default none");
      return [a, test_fraction, split] {
        if (split->count() > 0) {
          try {
            a->per_user = als::parse_per_user_split(a->split, a->split_seed);
          } catch (const UsageError& e) {
            throw UsageError(std::string("--") + e.what());
          }
          if (test_fraction->count() > 0 || !a->test_input.empty())
            throw UsageError("--split replaces --test-fraction and --test-input: give one of them");
          a->test_fraction = 0.0;
        }
        if (a->implicit && test_fraction->count() == 0) a->test_fraction = 0.0;
        if (a->common.precision == "float")
          run_als_command<float>(*a);
        else
          run_als_command<double>(*a);
      };
    }}};

struct PredictCli : OutputOptions {
  std::string factors, pairs;
};

const Registrar predict_command{
    Command{"predict",
            "score (user, item) pairs with factors written by `kfactor als --output PREFIX`; prints `user item score` "
            "for each distinct pair in ascending (user, item) order (nan for an unknown id)",
            [](CLI::App& cmd) -> std::function<void()> {
              auto p = std::make_shared<PredictCli>();
              cmd.add_option("--factors", p->factors, "PREFIX of PREFIX_X.csv and PREFIX_Y.csv")->required();
              cmd.add_option("--pairs", p->pairs, "ratings-style file of `user item [rating ...]` lines")->required();
              add_output_options(cmd, *p);
              return [p] {
                const io::FactorPair model = io::read_factor_pair(p->factors);
                const io::FactorFile& X = model.X;
                const io::FactorFile& Y = model.Y;
                io::ReadOptions ro;
                ro.duplicates = io::DuplicatePolicy::last;
                const auto pairs = io::read_ratings<double>(p->pairs, ro);
                const auto& c = pairs.matrix;
                nlohmann::json users = nlohmann::json::array(), items = nlohmann::json::array(),
                               scores = nlohmann::json::array();
                std::size_t unknown = 0;
                for (std::size_t e = 0; e < c.nnz(); ++e) {
                  const std::int64_t u = pairs.user_ids[c.rows[e]], i = pairs.item_ids[c.cols[e]];
                  const auto xu = X.find(u);
                  const auto yi = Y.find(i);
                  double s = std::numeric_limits<double>::quiet_NaN();
                  if (xu && yi) {
                    const auto x = X.row(*xu), y = Y.row(*yi);
                    s = 0;
                    for (std::size_t k = 0; k < x.size(); ++k) s += x[k] * y[k];
                  } else {
                    ++unknown;
                  }
                  if (p->json) {
                    users.push_back(u);
                    items.push_back(i);
                    // JSON has no nan: an unknown id scores null.
                    scores.push_back(std::isnan(s) ? nlohmann::json(nullptr) : nlohmann::json(s));
                  } else {
                    std::printf("%lld\t%lld\t%.6g\n", (long long)u, (long long)i, s);
                  }
                }
                if (p->json) {
                  const nlohmann::json j = {{"command", "predict"}, {"factors", p->factors}, {"pairs", p->pairs},
                                            {"rank", X.rank},       {"count", c.nnz()},      {"unknown", unknown},
                                            {"user", users},        {"item", items},         {"score", scores}};
                  std::printf("%s\n", j.dump().c_str());
                }
              };
            }}};

/// Planted rank-5 ratings (2,000 x 1,000, 5% observed, noise 0.1), f = 8.
Report als_demo(std::uint64_t seed) {
  using T = float;
  const Kokkos::DefaultExecutionSpace exec;
  const CooMatrix<double> planted = planted_ratings(2000, 1000, 5, 0.05, 0.1, seed).ratings;
  CooMatrix<T> coo;
  coo.num_rows = planted.num_rows;
  coo.num_cols = planted.num_cols;
  coo.rows = planted.rows;
  coo.cols = planted.cols;
  coo.values.assign(planted.values.begin(), planted.values.end());
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
