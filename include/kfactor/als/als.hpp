#pragma once
/// \file
/// kfactor::als: alternating least squares for explicit ratings (BALS: Chen,
/// Fang, Liu, Yang, TPDS 2021), following the solver contract of
/// core/solver.hpp (checked by kfactor::Solver in core/contract.hpp).
///
/// Model: R (m x n, sparse, explicit ratings) ~ X Y^T with X m x f and Y n x f
/// (DenseMatrix, LayoutRight: a row of f features is contiguous, which the
/// per-row kernels gather). Objective
///   L = sum_{(u,i) in Omega} (r_ui - x_u . y_i)^2
///       + lambda * (sum_u w_u |x_u|^2 + sum_i w_i |y_i|^2),
/// with w_u = n_u (ratings of u; `LambdaWeighting::nnz`, the default, as in
/// ALS-WR, cuMF_als and Spark; the paper's eq. 2) or w_u = 1
/// (`LambdaWeighting::plain`, the paper's eqs. 3-4). One iteration is two
/// exact half-steps: x_u = (Y_u^T Y_u + lambda w_u I)^{-1} Y_u^T r_u for every
/// user, then the same for every item with X fixed, so L never increases.
///
/// **Implicit feedback** (Options::implicit; Hu, Koren, Volinsky, ICDM
/// 2008): R holds interaction counts r_ui >= 0 (views, plays, clicks).
/// Preference p_ui = [r_ui > 0], confidence c_ui = 1 + alpha r_ui (linear)
/// or 1 + alpha log(1 + r_ui / epsilon) (log), and the objective runs over
/// every (u, i), rated or not:
///   L = sum_{all u,i} c_ui (p_ui - x_u . y_i)^2
///       + lambda * (sum_u w_u |x_u|^2 + sum_i w_i |y_i|^2),
/// w_u as above (`plain` is the paper's objective). Its half-step solves,
/// per row, (Y^T Y + Y^T (C_u - I) Y + lambda w_u I) x_u = Y^T C_u p_u. Y^T Y
/// is one GEMM per half-step and the rest touches only the row's observed
/// entries, so a row costs O(n_u f^2 + f^3) (Options::solver cholesky: the
/// batched build and Cholesky of explicit ALS, its Gram started from Y^T Y
/// and weighted by c - 1 per entry, any layout) or O(cg_steps n_u f) plus a
/// share of an m x f x f GEMM per step (cg: conjugate gradients from the
/// current x_u, batched over all rows through an SDDMM and an SpMM on R's
/// pattern; never an f x f matrix per row; always on CSR, whatever the
/// layout). The exact solve never increases L; cg with f steps reaches it
/// up to rounding, and 3 steps (the default, as in Takacs, Pilaszy, Tikk,
/// RecSys 2011) are a cheaper inexact descent step. The primary metric is
/// L itself ("loss"), evaluated without the m x n sum:
///   sum_{(u,i) observed, r > 0} [c (1 - x.y)^2 - (x.y)^2]
///   plus trace((X^T X)(Y^T Y)) plus the regularization.
/// Negative ratings are refused (InputError); zero ratings count as
/// unobserved (p = 0, c = 1).
///
/// Users or items without ratings: their factor row is defined as the zero
/// vector (the minimizer under `plain`, and one of the minimizers, the one of
/// least norm, under `nnz`, where they do not enter L at all); no Cholesky of
/// a zero matrix is attempted. lambda must be positive.
///
/// Normal equations are built and solved in team code (detail/half_step.hpp),
/// in batches of rows bounded by `max_batch_bytes` (or `batch_rows`); the
/// batch size changes nothing in the result. Row blocks are visited longest
/// first, so the longest rows do not trail behind a launch. With `reorder`,
/// rows and columns are visited in descending-count order (reorder.hpp) while
/// factors stay in original ids.
///
/// **Traversal structure (Options::layout).** Each half-step runs on plain
/// CSR or on the BALS tiled format (bals_format.hpp; a second structure on
/// R^T for the item half-step). BALS stages the distinct Y rows of an
/// xb x yb tile once in team scratch for the tile's xb rows, so it wins only
/// where (a) rows of a row block share many columns (dense, short-tailed
/// blocks: redundancy = nnz - distinct tile columns is large) and (b) the
/// staging saves global-memory traffic the hardware does not already save.
/// The paper measured 10-50% over its baselines on GPUs with 48 KB of shared
/// memory per block and little L2, where both held. On current hardware they
/// mostly do not: measured on Netflix-like ratings on an H200, plain CSR took
/// 33.9 ms per iteration at f = 32 and 132.9 ms at f = 100 against 246.8 and
/// 833.1 ms tiled (7.3x and 6.3x slower); on 2 CPU cores at f = 64 on
/// MovieLens latest-small CSR took 0.140 s per iteration against 0.199 s; at
/// YahooMusic-like f = 128 the tiled structure cannot be allocated at all
/// (its segment array grows with m n / yb on a wide, very sparse R^T). Sparse
/// rating matrices have few shared columns per tile, and large L1/L2 caches
/// serve the repeated Y rows that BALS stages by hand, while the tiles pay
/// for vacant segments, scratch padding and a second copy of R.
/// `Layout::automatic` (the default) therefore times CSR against the
/// candidate tiles on a strided sample of each half-step (the autotuner
/// below) and keeps a tile only when it is at least 10% faster than CSR on
/// the sample; `Layout::bals` always tiles (autotuned xb x yb unless given;
/// a half-step with no tile within the segment bound still runs on CSR);
/// `Layout::csr` never tiles. The report's info["layout_user"] and
/// info["layout_item"] say which structure each half-step got. Tiled and CSR
/// give the same bits except in rows of at least 2048 ratings (CSR sums them
/// in segments: equal up to rounding), so give `layout` explicitly (not
/// automatic) for runs you mean to restart bit for bit on another machine.

#include <kfactor/als/bals_format.hpp>
#include <kfactor/als/detail/half_step.hpp>
#include <kfactor/als/detail/implicit.hpp>
#include <kfactor/als/ranking_metrics.hpp>
#include <kfactor/als/reorder.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/core/timing.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace kfactor::als {

enum class LambdaWeighting { nnz, plain };

inline const char* to_string(LambdaWeighting w) { return w == LambdaWeighting::nnz ? "nnz" : "plain"; }
inline LambdaWeighting parse_weighting(const std::string& s) {
  if (s == "nnz") return LambdaWeighting::nnz;
  if (s == "plain") return LambdaWeighting::plain;
  throw UsageError("lambda weighting must be nnz or plain, got '" + s + "'");
}

/// Traversal structure of the half-steps (file comment).
enum class Layout {
  automatic,  ///< per half-step, CSR unless a BALS tile is >= 10% faster on a sample
  bals,       ///< BALS tiles (CSR only where no tile fits the segment bound)
  csr         ///< plain CSR
};
inline const char* to_string(Layout l) { return l == Layout::automatic ? "auto" : l == Layout::bals ? "bals" : "csr"; }
inline Layout parse_layout(const std::string& s) {
  if (s == "auto") return Layout::automatic;
  if (s == "bals") return Layout::bals;
  if (s == "csr") return Layout::csr;
  throw UsageError("ALS layout must be auto, bals or csr, got '" + s + "'");
}

/// Confidence of an implicit interaction (file comment).
enum class Confidence {
  linear,  ///< c = 1 + alpha r
  log      ///< c = 1 + alpha log(1 + r / epsilon)
};
inline const char* to_string(Confidence c) { return c == Confidence::linear ? "linear" : "log"; }
inline Confidence parse_confidence(const std::string& s) {
  if (s == "linear") return Confidence::linear;
  if (s == "log") return Confidence::log;
  throw UsageError("ALS confidence must be linear or log, got '" + s + "'");
}

/// How an implicit half-step solves its systems (file comment).
enum class SolveMethod {
  cholesky,  ///< exact: batched normal equations and Cholesky
  cg         ///< Options::cg_steps conjugate-gradient steps from the current rows
};
inline const char* to_string(SolveMethod m) { return m == SolveMethod::cholesky ? "cholesky" : "cg"; }
inline SolveMethod parse_solve_method(const std::string& s) {
  if (s == "cholesky") return SolveMethod::cholesky;
  if (s == "cg") return SolveMethod::cg;
  throw UsageError("ALS solver must be cholesky or cg, got '" + s + "'");
}

/// Solver options. Every numeric field has a Range beside it, checked by
/// validate() (UsageError naming the field and its range).
struct Options {
  static constexpr std::int64_t max32 = std::numeric_limits<std::int32_t>::max();
  static constexpr Range<int> rank_range{.lo = 1, .hi = 1024};
  static constexpr Range<double> lambda_range{.lo = 0.0, .hi = 1e6, .lo_open = true};
  static constexpr Range<int> xb_range{.lo = 0, .hi = 64, .note = "0: autotune"};
  static constexpr Range<int> yb_range{.lo = 0, .hi = 65536, .note = "0: autotune"};
  static constexpr Range<std::int64_t> batch_rows_range{.lo = 0, .hi = max32, .note = "0: from max_batch_bytes"};
  static constexpr Range<std::size_t> max_batch_bytes_range{
      .lo = 0, .hi = std::size_t(1) << 40, .note = "0: per space"};
  static constexpr Range<std::int64_t> autotune_sample_nnz_range{.lo = 0, .hi = max32, .note = "0: per space"};
  static constexpr Range<double> alpha_range{.lo = 0.0, .hi = 1e9, .lo_open = true};
  static constexpr Range<double> epsilon_range{.lo = 0.0, .hi = 1e9, .lo_open = true};
  static constexpr Range<int> cg_steps_range{.lo = 1, .hi = 1024};

  int rank = 10;        ///< f, in rank_range (and <= min(users, items), checked by init)
  StopRule stop{10};    ///< primary metric: test_rmse, else given_test_rmse, else train_rmse
  double lambda = 0.1;  ///< regularization, in lambda_range
  LambdaWeighting weighting = LambdaWeighting::nnz;
  Layout layout = Layout::automatic;
  bool reorder = false;         ///< visit rows/columns by descending count
  int xb = 0, yb = 0;           ///< BALS tile (xb_range, yb_range); 0, 0: autotune each half-step
  std::int64_t batch_rows = 0;  ///< rows per batch of normal equations, in batch_rows_range
  /// Bytes of normal equations per batch, in max_batch_bytes_range; 0: 1 GiB
  /// on devices, 32 MiB on hosts (a batch that stays in cache).
  std::size_t max_batch_bytes = 0;
  std::uint64_t seed = 42;  ///< initial Y
  /// Largest sample (nonzeros) the autotuner times per candidate, in
  /// autotune_sample_nnz_range; 0: a default per space.
  std::int64_t autotune_sample_nnz = 0;
  /// Implicit feedback (file comment): ratings are interaction counts.
  bool implicit = false;
  /// Implicit: confidence scale, in alpha_range; default 40, the paper's
  /// choice for TV watching counts.
  double alpha = 40.0;
  Confidence confidence = Confidence::linear;  ///< implicit: c of r
  /// Implicit, log confidence: the count scale epsilon, in epsilon_range.
  double epsilon = 1.0;
  SolveMethod solver = SolveMethod::cholesky;  ///< implicit: exact or CG half-steps
  int cg_steps = 3;                            ///< implicit, cg: steps per half-step, in cg_steps_range
  /// Implicit with a test set: the K of the ranking metrics evaluate()
  /// reports (ranking_metrics.hpp), in eval_k_range; clamped to the items.
  int eval_k = 10;

  /// Throws UsageError naming the option and its allowed range.
  void validate() const {
    stop.validate();
    check_range("ALS", "rank", rank, rank_range);
    check_range("ALS", "lambda", lambda, lambda_range);
    check_range("ALS", "xb", xb, xb_range);
    check_range("ALS", "yb", yb, yb_range);
    if ((xb == 0) != (yb == 0)) throw UsageError("ALS xb and yb: give both, or neither (autotune)");
    if ((xb > 0) && layout == Layout::csr) throw UsageError("ALS xb and yb are BALS tiles: not with layout csr");
    check_range("ALS", "batch_rows", batch_rows, batch_rows_range);
    check_range("ALS", "max_batch_bytes", max_batch_bytes, max_batch_bytes_range);
    check_range("ALS", "autotune_sample_nnz", autotune_sample_nnz, autotune_sample_nnz_range);
    check_range("ALS", "alpha", alpha, alpha_range);
    check_range("ALS", "epsilon", epsilon, epsilon_range);
    check_range("ALS", "cg_steps", cg_steps, cg_steps_range);
    check_range("ALS", "eval_k", eval_k, eval_k_range);
    if (solver == SolveMethod::cg && !implicit)
      throw UsageError("ALS solver cg is for implicit feedback only (explicit ALS solves exactly)");
    if (solver == SolveMethod::cg && layout == Layout::bals)
      throw UsageError("ALS solver cg runs on CSR: not with layout bals");
  }

  /// The options that decide the iterates (checkpoints compare them). The
  /// tile, the batch size and the autotuner's sample change no bit; the
  /// implicit options are listed for implicit runs (epsilon with log
  /// confidence, cg_steps with cg).
  template <class F>
  void visit(F&& f) const {
    f("rank", rank);
    f("lambda", lambda);
    f("weighting", weighting);
    f("layout", layout);
    f("reorder", reorder);
    f("seed", seed);
    f("implicit", implicit);
    if (!implicit) return;
    f("alpha", alpha);
    f("confidence", confidence);
    if (confidence == Confidence::log) f("epsilon", epsilon);
    f("solver", solver);
    if (solver == SolveMethod::cg) f("cg_steps", cg_steps);
  }
};

/// Training ratings plus optional test sets, all in the same id space.
template <class T, class MemorySpace>
struct Problem {
  CsrMatrix<T, MemorySpace> train;       ///< m x n
  CsrMatrix<T, MemorySpace> test;        ///< held-out split (empty: none)
  CsrMatrix<T, MemorySpace> given_test;  ///< a user-given test set (empty: none)
  double test_fraction = 0.0;
  std::uint64_t split_seed = 0;
};

/// Problem from host triplets: a deterministic held-out split of
/// `test_fraction` in [0, 1) (split_train_test with `split_seed`), and an
/// optional user-given test set. InputError for NaN/Inf ratings, duplicate
/// (user, item) pairs, no ratings or only zero ratings (nothing to fit), and
/// a test set larger than the ratings; UsageError for a bad test_fraction.
template <class ExecutionSpace, class T>
Problem<T, typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, const CooMatrix<T>& all,
                                                               double test_fraction, std::uint64_t split_seed,
                                                               const CooMatrix<T>* given_test = nullptr) {
  check_range("ALS", "test fraction", test_fraction, test_fraction_range);
  if (all.values.empty()) throw InputError("ALS: no ratings");
  bool any_nonzero = false;
  for (std::size_t e = 0; e < all.values.size(); ++e) {
    if (!std::isfinite(double(all.values[e]))) throw InputError("rating " + std::to_string(e) + " is not finite");
    any_nonzero = any_nonzero || all.values[e] != T(0);
  }
  if (!any_nonzero) throw InputError("ALS: every rating is zero; there is nothing to factorize");
  if (given_test)
    for (std::size_t e = 0; e < given_test->values.size(); ++e)
      if (!std::isfinite(double(given_test->values[e])))
        throw InputError("test rating " + std::to_string(e) + " is not finite");
  {
    // A (user, item) pair rated twice: readers merge or reject them
    // (io::DuplicatePolicy); triplets built in code must not have any.
    std::vector<std::uint64_t> keys(all.values.size());
    for (std::size_t e = 0; e < keys.size(); ++e)
      keys[e] = std::uint64_t(all.rows[e]) * std::uint64_t(all.num_cols) + std::uint64_t(all.cols[e]);
    if (!std::is_sorted(keys.begin(), keys.end())) std::sort(keys.begin(), keys.end());
    const auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end())
      throw InputError("rating (" + std::to_string(*dup / std::uint64_t(all.num_cols)) + ", " +
                       std::to_string(*dup % std::uint64_t(all.num_cols)) +
                       ") appears more than once: merge duplicate ratings first (io::DuplicatePolicy)");
  }
  Problem<T, typename ExecutionSpace::memory_space> p;
  p.test_fraction = test_fraction;
  p.split_seed = split_seed;
  if (test_fraction > 0.0) {
    auto [tr, te] = split_train_test(all, test_fraction, split_seed);
    p.train = to_csr(exec, tr);
    p.test = to_csr(exec, te);
  } else {
    p.train = to_csr(exec, all);
  }
  if (given_test) {
    if (given_test->num_rows > all.num_rows || given_test->num_cols > all.num_cols)
      throw InputError("test set is " + std::to_string(given_test->num_rows) + " x " +
                       std::to_string(given_test->num_cols) + ", larger than the ratings' " +
                       std::to_string(all.num_rows) + " x " + std::to_string(all.num_cols));
    CooMatrix<T> g = *given_test;
    g.num_rows = all.num_rows;
    g.num_cols = all.num_cols;
    p.given_test = to_csr(exec, g);
  }
  return p;
}

/// Everything derived once from the problem and options: the two traversal
/// structures and the facts the report prints. Immutable once built.
template <class T, class MemorySpace>
struct Plan {
  detail::HalfStepStructure<T, MemorySpace> users, items;
  Kokkos::View<int*, MemorySpace> user_count, item_count;  ///< ratings per original id
  /// The test sets without their cold entries (user or item without training
  /// ratings): test_rmse is measured on these (Spark's coldStartStrategy
  /// "drop"); test_rmse_all keeps every entry (a cold one is predicted as 0).
  CsrMatrix<T, MemorySpace> test_warm, given_test_warm;
  T lambda = T(0);
  bool weight_nnz = true;
  int rank = 0;
  std::int64_t batch_rows = 0;
  std::size_t max_batch_bytes = 0;
  double preprocess_seconds = 0.0;  ///< reordering + format build + autotune
  double autotune_seconds = 0.0;
  std::map<std::string, std::string> info;
  bool implicit = false;                ///< implicit feedback: the structures hold w = c - 1
  detail::ConfidenceWeight confidence;  ///< implicit: w of a rating
  bool cg = false;                      ///< implicit: CG half-steps
  int cg_steps = 0;
  int eval_k = 0;  ///< implicit with a held-out set: K of the ranking metrics
  /// cg: the confidence weights of R and R^T (original ids), and the SpMM
  /// plans of their patterns at width rank.
  CsrMatrix<T, MemorySpace> cg_users, cg_items;
  kfactor::SpmmPlan<T, MemorySpace> spmm_users, spmm_items;
  /// The SDDMM plans of every pattern the iteration and the metrics multiply
  /// on: cg's weights of R and R^T (built with the plan; the user side's is
  /// also the training set's) and the evaluation sets (test, ring blocks),
  /// each built at its first evaluation.
  std::shared_ptr<kfactor::detail::SddmmPlanCache<T, MemorySpace>> sddmm_plans =
      std::make_shared<kfactor::detail::SddmmPlanCache<T, MemorySpace>>();
};

template <class T, class MemorySpace>
struct State {
  DenseMatrix<T, MemorySpace> X;  ///< m x f, original user ids
  DenseMatrix<T, MemorySpace> Y;  ///< n x f, original item ids
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;
  /// Derived from the problem and options (not from the fields): survives a
  /// checkpoint restore; not checkpointed.
  std::shared_ptr<const Plan<T, MemorySpace>> plan;
  /// Batch buffers of the normal equations, reused by every half-step;
  /// rebuilt on demand after reset_workspace().
  detail::Workspace<T, MemorySpace> workspace;

  template <class F>
  void visit(F&& f) {
    f("X", X);
    f("Y", Y);
    f("iteration", iteration);
    f("seed", seed);
  }
  template <class F>
  void visit(F&& f) const {
    f("X", X);
    f("Y", Y);
    f("iteration", iteration);
    f("seed", seed);
  }
  void reset_workspace() { workspace = {}; }
};

namespace detail {

template <class T>
std::string fmt(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

/// Launch order of the row blocks of xb rows: most ratings first (stable),
/// so the longest rows start at once instead of trailing behind the rest.
/// The leading `long_blocks` blocks have at least `long_from` ratings; block
/// p of them is cut into ceil(load / long_from) segments, numbered from
/// segment_ptr[p] (host and device copies; a block's cut depends only on its
/// load, so every batch cuts it alike).
template <class MemorySpace>
struct LaunchSchedule {
  Kokkos::View<ordinal_t*, MemorySpace> order;
  ordinal_t long_blocks = 0;
  std::vector<std::int64_t> segment_ptr{0};
  Kokkos::View<std::int64_t*, MemorySpace> segments;  ///< segment_ptr on the device
};
template <class ExecutionSpace, class MemorySpace>
LaunchSchedule<MemorySpace> launch_schedule(const ExecutionSpace& exec,
                                            const Kokkos::View<int*, MemorySpace>& row_count, int xb,
                                            std::int64_t long_from) {
  const std::int64_t rows = std::int64_t(row_count.extent(0)), blocks = (rows + xb - 1) / xb;
  const auto count = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, row_count);
  std::vector<std::int64_t> load(blocks, 0);
  for (std::int64_t r = 0; r < rows; ++r) load[r / xb] += count(r);
  std::vector<ordinal_t> order(blocks);
  std::iota(order.begin(), order.end(), ordinal_t(0));
  std::stable_sort(order.begin(), order.end(), [&](ordinal_t a, ordinal_t b) { return load[a] > load[b]; });
  LaunchSchedule<MemorySpace> out;
  out.order = Kokkos::View<ordinal_t*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::schedule"), blocks);
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::deep_copy(exec, out.order,
                    Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(order.data(), blocks));
  while (out.long_blocks < blocks && load[order[out.long_blocks]] >= long_from) {
    const std::int64_t l = load[order[out.long_blocks++]];
    out.segment_ptr.push_back(out.segment_ptr.back() + (l + long_from - 1) / long_from);
  }
  out.segments = Kokkos::View<std::int64_t*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::segments"), out.segment_ptr.size());
  Kokkos::deep_copy(
      exec, out.segments,
      Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Unmanaged>(out.segment_ptr.data(), out.segment_ptr.size()));
  exec.fence();
  return out;
}

/// Traversal structure from a (possibly permuted) CSR in device memory.
/// `rows_new_to_old` / `cols_new_to_old` map its ids back (empty: identity).
template <class ExecutionSpace, class T, class MemorySpace>
HalfStepStructure<T, MemorySpace> make_structure(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                                 const CsrMatrix<T, Kokkos::HostSpace>& Ah, bool tiled, int xb, int yb,
                                                 const std::vector<ordinal_t>& rows_new_to_old,
                                                 const std::vector<ordinal_t>& cols_new_to_old) {
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  HalfStepStructure<T, MemorySpace> S;
  S.tiled = tiled;
  S.rows = A.num_rows();
  S.other_rows = A.num_cols;
  S.nnz = A.nnz();
  S.row_orig = Kokkos::View<ordinal_t*, MemorySpace>("kfactor::als::row_orig", S.rows);
  if (rows_new_to_old.empty()) {
    auto ro = S.row_orig;
    Kokkos::parallel_for(
        "kfactor::als::iota", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, S.rows),
        KOKKOS_LAMBDA(ordinal_t r) { ro(r) = r; });
  } else {
    Kokkos::deep_copy(exec, S.row_orig,
                      Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(rows_new_to_old.data(), S.rows));
  }
  S.row_count = Kokkos::View<int*, MemorySpace>("kfactor::als::row_count", S.rows);
  {
    auto rc = S.row_count;
    auto rm = A.row_map;
    Kokkos::parallel_for(
        "kfactor::als::row_count", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, S.rows),
        KOKKOS_LAMBDA(ordinal_t r) { rc(r) = int(rm(r + 1) - rm(r)); });
  }
  if (tiled) {
    auto Bh = build_bals_host(Ah, xb, yb, cols_new_to_old);
    S.stats = bals_stats(Bh);
    auto B = als::copy_to<MemorySpace>(Bh);
    S.xb = xb;
    S.yb = yb;
    S.ntc = B.num_tile_cols;
    S.max_tile_columns = B.max_tile_columns;
    S.tile_ptr = B.tile_ptr;
    S.tile_colidx = B.tile_colidx;
    S.seg_ptr = B.seg_ptr;
    S.seg_colidx = B.seg_colidx;
    S.value = B.value;
  } else {
    S.xb = 1;
    S.yb = 0;
    S.ntc = 1;
    S.tile_ptr = A.row_map;
    S.value = A.values;
    if (cols_new_to_old.empty()) {
      S.tile_colidx = A.entries;
    } else {
      Kokkos::View<ordinal_t*, MemorySpace> cmap(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::cmap"), cols_new_to_old.size());
      Kokkos::deep_copy(
          exec, cmap,
          Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(cols_new_to_old.data(), cols_new_to_old.size()));
      S.tile_colidx = Kokkos::View<ordinal_t*, MemorySpace>(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::colidx"), A.nnz());
      auto out = S.tile_colidx;
      auto ent = A.entries;
      Kokkos::parallel_for(
          "kfactor::als::map_cols", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.nnz()),
          KOKKOS_LAMBDA(offset_t e) { out(e) = cmap(ent(e)); });
    }
  }
  // CSR rows long enough to split come first; tiles are never split.
  const auto schedule = launch_schedule(
      exec, S.row_count, tiled ? xb : 1,
      tiled ? std::numeric_limits<std::int64_t>::max() : std::int64_t(Tuning<ExecutionSpace>::split_from));
  S.schedule = schedule.order;
  S.long_blocks = schedule.long_blocks;
  S.segment_ptr = schedule.segment_ptr;
  S.segments = schedule.segments;
  exec.fence();
  return S;
}

/// Entries of seg_ptr (and, divided by xb, of tile_ptr) for an m x n matrix
/// in xb x yb tiles: every tile of the grid, vacant or not, has xb segments.
inline std::int64_t bals_segments(std::int64_t m, std::int64_t n, int xb, int yb) {
  return (m + xb - 1) / xb * ((n + yb - 1) / yb) * xb;
}

/// The most segments an autotuned tile may have: 8 per nonzero plus 4M. On
/// YahooMusic's R^T (98K x 1.9M, 115M ratings) at f = 128 only tiles of one
/// row fit a device's scratch, and a 1 x 64 tile needed 3.0G segments, 22 GiB
/// of seg_ptr: the H100 ran out of memory.
inline std::int64_t segment_bound(std::int64_t nnz) { return 8 * nnz + (std::int64_t(1) << 22); }

/// Candidate tiles the kernel can run: scratch within budget, one pass of
/// register tiles on devices, and segment arrays of bounded size
/// (segment_bound). Empty when no tile keeps its segment array within the
/// bound: that half-step then runs on plain CSR.
template <class ExecutionSpace, class T>
std::vector<std::pair<int, int>> tile_candidates(std::int64_t m, std::int64_t n, std::int64_t nnz, int f) {
  using Tn = Tuning<ExecutionSpace>;
  std::vector<std::pair<int, int>> out;
  // Hosts: the tile matters little (caches, one thread per team): a short list.
  const std::vector<int> xbs = is_host_space_v<ExecutionSpace> ? std::vector<int>{1, 4} : std::vector<int>{1, 2, 4, 8};
  const std::vector<int> ybs =
      is_host_space_v<ExecutionSpace> ? std::vector<int>{64, 256} : std::vector<int>{32, 64, 128, 256, 512};
  for (int xb : xbs)
    for (int yb : ybs) {
      const int y = int(std::min<std::int64_t>(yb, std::max<std::int64_t>(n, 1)));
      bool dup = false;
      for (auto& c : out) dup |= (c.first == xb && c.second == y);
      if (dup) continue;
      if (normal_equation_scratch<ExecutionSpace, T>(true, f, xb, y) > fast_scratch_bytes<ExecutionSpace>()) continue;
      const TileShape s(f, Tn::block, xb);
      if (!is_host_space_v<ExecutionSpace> && s.total > Tn::max_team * Tn::tiles_per_thread && xb > 1) continue;
      if (bals_segments(m, n, xb, y) > segment_bound(nnz)) continue;
      out.emplace_back(xb, y);
    }
  // Nothing fits the scratch (very large f): the widest narrow tile that
  // does, else 1 x 1, still within the segment bound.
  for (int yb = 16; out.empty() && yb >= 1; yb /= 2) {
    const int y = int(std::min<std::int64_t>(yb, std::max<std::int64_t>(n, 1)));
    if (bals_segments(m, n, 1, y) > segment_bound(nnz)) break;
    if (yb == 1 || normal_equation_scratch<ExecutionSpace, T>(true, f, 1, y) <= fast_scratch_bytes<ExecutionSpace>())
      out.emplace_back(1, y);
  }
  return out;
}

/// The autotuner: times one half-step on an evenly strided sample of 8-row
/// blocks for every candidate structure and returns the fastest tile, or
/// {0, 0} for plain CSR. Candidates: `tile` when given (xb > 0), else
/// tile_candidates(); with `with_csr`, plain CSR too, which a tile must beat
/// by 10% to be chosen: a sample's timings on a busy host vary by about as
/// much, and CSR needs neither the tiled copy of R nor its build. Without a
/// tile within the segment bound the answer is CSR.
template <class ExecutionSpace, class T>
std::pair<int, int> autotune_structure(const ExecutionSpace& exec, const CsrMatrix<T, Kokkos::HostSpace>& Ah, int f,
                                       double lambda, std::int64_t sample_nnz, std::pair<int, int> tile, bool with_csr,
                                       std::string* log) {
  using Mem = typename ExecutionSpace::memory_space;
  const std::int64_t m = Ah.num_rows(), n = Ah.num_cols, nnz = std::int64_t(Ah.nnz());
  auto cands =
      tile.first > 0 ? std::vector<std::pair<int, int>>{tile} : tile_candidates<ExecutionSpace, T>(m, n, nnz, f);
  if (cands.empty()) {
    if (log) *log += "csr: no tile within " + std::to_string(segment_bound(nnz)) + " segments";
    return {0, 0};
  }
  if (!with_csr && cands.size() == 1) return cands[0];
  if (with_csr) cands.insert(cands.begin(), {0, 0});
  if (sample_nnz <= 0) sample_nnz = is_host_space_v<ExecutionSpace> ? 20000 : 1000000;
  // Strided sample of 8-row groups (8 = lcm of the xb candidates).
  const std::int64_t groups = (m + 7) / 8;
  const std::int64_t stride = std::max<std::int64_t>(1, nnz / std::max<std::int64_t>(sample_nnz, 1));
  std::vector<ordinal_t> rows;
  for (std::int64_t g = 0; g < groups; g += stride)
    for (std::int64_t r = g * 8; r < std::min(m, g * 8 + 8); ++r) rows.push_back(ordinal_t(r));
  CsrMatrix<T, Kokkos::HostSpace> Sh;
  Sh.num_cols = Ah.num_cols;
  Sh.row_map = Kokkos::View<offset_t*, Kokkos::HostSpace>("sample_row_map", rows.size() + 1);
  for (std::size_t i = 0; i < rows.size(); ++i)
    Sh.row_map(i + 1) = Sh.row_map(i) + (Ah.row_map(rows[i] + 1) - Ah.row_map(rows[i]));
  Sh.entries = Kokkos::View<ordinal_t*, Kokkos::HostSpace>("sample_entries", Sh.row_map(rows.size()));
  Sh.values = Kokkos::View<T*, Kokkos::HostSpace>("sample_values", Sh.row_map(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (offset_t e = Ah.row_map(rows[i]), o = Sh.row_map(i); e < Ah.row_map(rows[i] + 1); ++e, ++o) {
      Sh.entries(o) = Ah.entries(e);
      Sh.values(o) = Ah.values(e);
    }
  auto Sd = kfactor::copy_to<Mem>(Sh);
  DenseMatrix<T, Mem> Y("kfactor::als::tune_Y", n, f), X("kfactor::als::tune_X", rows.size(), f);
  fill_uniform(exec, Y, 7, RngStream::user, T(0), T(1));
  std::pair<int, int> best{0, 0};
  double best_t = 1e300, csr_t = 1e300;
  // One half-step on the sample with the structure of tile xb x yb ({0, 0}: CSR).
  auto timer = [&](int xb, int yb) {
    return [&, S = make_structure(exec, Sd, Sh, xb > 0, xb > 0 ? xb : 1, yb, {}, {}),
            ws = std::make_shared<Workspace<T, Mem>>()] {
      half_step(exec, S, Y, X, f, T(lambda), true, 0, std::size_t(1) << 28, ws.get());
    };
  };
  for (const auto& [xb, yb] : cands) {
    auto run = timer(xb, yb);
    // Best of three after a timed warm-up (which also pays the first touch
    // of the tile's buffers): robust to a busy machine. A tile whose warm-up
    // is 3x behind CSR cannot come within the 10% it would need and is not
    // timed further: on hosts the losing tiles took most of the tuning time.
    const double warm = time_runs(exec, 1, 0, run).min;
    const bool hopeless = xb > 0 && with_csr && warm > 3 * csr_t;
    const double t = hopeless ? warm : time_runs(exec, 3, 0, run).min;
    if (log)
      *log +=
          (xb > 0 ? std::to_string(xb) + "x" + std::to_string(yb) : std::string("csr")) + ":" + fmt(t * 1e3) + "ms ";
    if (xb == 0) {
      csr_t = t;
    } else if (t < best_t) {
      best_t = t;
      best = {xb, yb};
    }
  }
  if (with_csr && !(best_t < 0.9 * csr_t)) return {0, 0};
  if (with_csr) {
    // Confirm the lead with CSR and the winner timed in turn (A B A B): the
    // first pass times them minutes apart on a shared host, where a change of
    // load alone can fake a 10% lead.
    auto csr_run = timer(0, 0), tile_run = timer(best.first, best.second);
    double csr_again = 1e300, tile_again = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      csr_again = std::min(csr_again, time_runs(exec, 1, 0, csr_run).min);
      tile_again = std::min(tile_again, time_runs(exec, 1, 0, tile_run).min);
    }
    if (log) *log += "confirm csr:" + fmt(csr_again * 1e3) + "ms tile:" + fmt(tile_again * 1e3) + "ms ";
    if (!(tile_again < 0.9 * csr_again)) return {0, 0};
  }
  return best;
}

/// The entries of a test set whose user and item both have training ratings.
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> warm_entries(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                       const Kokkos::View<int*, MemorySpace>& uc,
                                       const Kokkos::View<int*, MemorySpace>& ic) {
  if (A.nnz() == 0) return A;
  const ordinal_t mu = ordinal_t(uc.extent(0)), ni = ordinal_t(ic.extent(0));
  return select_entries(
      exec, A, A.num_cols, 0,
      KOKKOS_LAMBDA(ordinal_t r, ordinal_t c) { return r < mu && c < ni && uc(r) > 0 && ic(c) > 0; });
}

/// sum_r w_r |F_r|^2 with w_r = cnt(r) (nnz weighting) or 1, in double.
template <class ExecutionSpace, class T, class MemorySpace>
double weighted_norm2(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& F,
                      const Kokkos::View<int*, MemorySpace>& cnt, bool weight_nnz) {
  double out = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::als::reg", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, F.extent(0)),
      KOKKOS_LAMBDA(std::size_t r, double& acc) {
        double n2 = 0.0;
        for (std::size_t k = 0; k < F.extent(1); ++k) n2 += double(F(r, k)) * double(F(r, k));
        acc += (weight_nnz ? double(cnt(r)) : 1.0) * n2;
      },
      out);
  return out;
}

template <class ExecutionSpace, class T, class MemorySpace>
void record_structure(std::map<std::string, std::string>& info, const std::string& side,
                      const HalfStepStructure<T, MemorySpace>& S) {
  info["layout_" + side] = S.tiled ? "bals" : "csr";
  if (!S.tiled) return;
  info[side + "s_tile"] = std::to_string(S.xb) + "x" + std::to_string(S.yb);
  info[side + "s_redundancy"] = std::to_string(S.stats.redundancy);
  info[side + "s_y_loads"] = std::to_string(S.stats.distinct_tile_columns);
  info[side + "s_tiles"] = std::to_string(S.stats.tiles);
  info[side + "s_vacant_tiles_pct"] = fmt(S.stats.vacant_tiles_percent());
  info[side + "s_vacant_segments_pct"] = fmt(S.stats.vacant_segments_percent());
}

/// The plan's layout, reordering and regularization and both structures'
/// statistics, in its report info (single-rank and distributed plans alike).
template <class ExecutionSpace, class T, class MemorySpace>
void record_plan(std::map<std::string, std::string>& info, const Options& options,
                 const HalfStepStructure<T, MemorySpace>& users, const HalfStepStructure<T, MemorySpace>& items) {
  info["layout"] = to_string(options.layout);
  info["reorder"] = options.reorder ? "yes" : "no";
  info["lambda"] = fmt(options.lambda);
  info["lambda_weighting"] = to_string(options.weighting);
  if (options.implicit) {
    info["feedback"] = std::string("implicit, confidence ") + to_string(options.confidence) + ", alpha " +
                       fmt(options.alpha) +
                       (options.confidence == Confidence::log ? ", epsilon " + fmt(options.epsilon) : std::string());
    info["solver"] = options.solver == SolveMethod::cg ? "cg, " + std::to_string(options.cg_steps) + " steps"
                                                       : std::string("cholesky");
  }
  record_structure<ExecutionSpace>(info, "user", users);
  record_structure<ExecutionSpace>(info, "item", items);
}

/// The plan's scalars from the options (the batch budget per space).
template <class ExecutionSpace, class T, class MemorySpace>
void plan_parameters(Plan<T, MemorySpace>& plan, const Options& options) {
  plan.lambda = T(options.lambda);
  plan.weight_nnz = options.weighting == LambdaWeighting::nnz;
  plan.rank = options.rank;
  plan.batch_rows = options.batch_rows;
  plan.max_batch_bytes = options.max_batch_bytes > 0       ? options.max_batch_bytes
                         : is_host_space_v<ExecutionSpace> ? std::size_t(32) << 20
                                                           : std::size_t(1) << 30;
  plan.implicit = options.implicit;
  plan.confidence = ConfidenceWeight{options.confidence == Confidence::log, options.alpha, options.epsilon};
  plan.cg = options.implicit && options.solver == SolveMethod::cg;
  plan.cg_steps = options.cg_steps;
  plan.eval_k = options.eval_k;
}

/// Implicit feedback: R with its ratings replaced by the confidence weights
/// (InputError for a negative rating; `row_offset`: the global id of R's
/// first row, for the message). Explicit: R.
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> half_step_values(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                                           const Plan<T, MemorySpace>& plan) {
  if (!plan.implicit) return R;
  const auto [count, first] = negative_ratings(exec, R);
  if (count > 0) throw negative_rating_error(count, first);
  return confidence_weights(exec, R, plan.confidence);
}

/// cg: the weights of both sides and their SDDMM and SpMM plans, built once.
template <class ExecutionSpace, class T, class MemorySpace>
void cg_parts(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& Wu, const CsrMatrix<T, MemorySpace>& Wi,
              Plan<T, MemorySpace>& plan) {
  if (!plan.cg) return;
  plan.cg_users = Wu;
  plan.cg_items = Wi;
  plan.spmm_users = kfactor::SpmmPlan<T, MemorySpace>(exec, Wu, plan.rank);
  plan.spmm_items = kfactor::SpmmPlan<T, MemorySpace>(exec, Wi, plan.rank);
  (void)plan.sddmm_plans->get(exec, Wu, plan.rank);
  (void)plan.sddmm_plans->get(exec, Wi, plan.rank);
}

/// The options the traversal structures are built under: cg half-steps run
/// on CSR (no tile is tuned or built).
inline Options structure_options(const Options& options) {
  Options o = options;
  if (o.implicit && o.solver == SolveMethod::cg) {
    o.layout = Layout::csr;
    o.xb = o.yb = 0;
  }
  return o;
}

/// The tile a half-step on `Ah` runs with under options.layout ({0, 0}: CSR);
/// autotuned (file comment) unless the layout and tile are both given. The
/// tuning time is added to plan.autotune_seconds, its log to
/// plan.info["autotune_<side>s"].
template <class ExecutionSpace, class T, class MemorySpace>
std::pair<int, int> choose_tile(const ExecutionSpace& exec, const CsrMatrix<T, Kokkos::HostSpace>& Ah,
                                const Options& options, const std::string& side, Plan<T, MemorySpace>& plan) {
  if (options.layout == Layout::csr) return {0, 0};
  if (options.layout == Layout::bals && options.xb > 0) return {options.xb, options.yb};
  const auto t0 = std::chrono::steady_clock::now();
  std::string log;
  const auto tile = autotune_structure(exec, Ah, options.rank, options.lambda, options.autotune_sample_nnz,
                                       {options.xb, options.yb}, options.layout == Layout::automatic, &log);
  plan.autotune_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!log.empty()) plan.info["autotune_" + side + "s"] = log;
  return tile;
}

/// One half-step's structure from its (possibly permuted) rows A, whose ids
/// map back through rows_new_to_old / cols_new_to_old (empty: identity).
template <class ExecutionSpace, class T, class MemorySpace>
HalfStepStructure<T, MemorySpace> build_side(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                             const std::vector<ordinal_t>& rows_new_to_old,
                                             const std::vector<ordinal_t>& cols_new_to_old, const Options& options,
                                             const std::string& side, Plan<T, MemorySpace>& plan) {
  CsrMatrix<T, Kokkos::HostSpace> Ah;
  if (options.layout != Layout::csr) Ah = kfactor::copy_to<Kokkos::HostSpace>(A);
  const auto [xb, yb] = choose_tile(exec, Ah, options, side, plan);
  return make_structure(exec, A, Ah, xb > 0, xb > 0 ? xb : 1, yb, rows_new_to_old, cols_new_to_old);
}

}  // namespace detail

/// Preprocessing: optional reordering, the two traversal structures (R and
/// R^T) with the tiles or CSR that options.layout chooses. Timed as
/// `preprocess_seconds`.
template <class ExecutionSpace, class T, class MemorySpace>
std::shared_ptr<const Plan<T, MemorySpace>> prepare(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                                                    const Options& options) {
  options.validate();
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = std::make_shared<Plan<T, MemorySpace>>();
  detail::plan_parameters<ExecutionSpace>(*plan, options);
  // Implicit: the structures hold the confidence weights w = c - 1.
  const auto R = detail::half_step_values(exec, problem.train, *plan);
  auto Rt = transpose(exec, R);
  detail::cg_parts(exec, R, Rt, *plan);
  const Options so = detail::structure_options(options);
  plan->user_count = Kokkos::View<int*, MemorySpace>("kfactor::als::user_count", R.num_rows());
  plan->item_count = Kokkos::View<int*, MemorySpace>("kfactor::als::item_count", R.num_cols);
  {
    auto uc = plan->user_count, ic = plan->item_count;
    auto rm = R.row_map, tm = Rt.row_map;
    Kokkos::parallel_for(
        "kfactor::als::user_count", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.num_rows()),
        KOKKOS_LAMBDA(ordinal_t r) { uc(r) = int(rm(r + 1) - rm(r)); });
    Kokkos::parallel_for(
        "kfactor::als::item_count", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.num_cols),
        KOKKOS_LAMBDA(ordinal_t r) { ic(r) = int(tm(r + 1) - tm(r)); });
  }
  plan->test_warm = detail::warm_entries(exec, problem.test, plan->user_count, plan->item_count);
  plan->given_test_warm = detail::warm_entries(exec, problem.given_test, plan->user_count, plan->item_count);
  CsrMatrix<T, MemorySpace> Ru = R, Ri = Rt;
  Permutation prow, pcol;
  if (options.reorder) {
    auto Rh = kfactor::copy_to<Kokkos::HostSpace>(R);
    std::tie(prow, pcol) = count_orderings(Rh);
    Ru = permute(exec, R, prow, pcol);
    Ri = transpose(exec, Ru);
  }
  plan->users = detail::build_side(exec, Ru, prow.new_to_old, pcol.new_to_old, so, "user", *plan);
  plan->items = detail::build_side(exec, Ri, pcol.new_to_old, prow.new_to_old, so, "item", *plan);
  detail::record_plan<ExecutionSpace>(plan->info, options, plan->users, plan->items);
  exec.fence();
  plan->preprocess_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

/// State with Y uniform in [0, 1/sqrt(f)) from options.seed (X is computed
/// first, so its start does not matter; it is zero). UsageError when
/// options.rank exceeds min(users, items).
template <class ExecutionSpace, class T, class MemorySpace>
State<T, MemorySpace> init(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options) {
  options.validate();
  const std::int64_t m = problem.train.num_rows(), n = problem.train.num_cols;
  if (options.rank > std::min(m, n))
    throw UsageError("ALS rank " + std::to_string(options.rank) +
                     " exceeds min(users, items) = " + std::to_string(std::min(m, n)) + " of the " + std::to_string(m) +
                     " x " + std::to_string(n) + " ratings");
  State<T, MemorySpace> s;
  s.plan = prepare(exec, problem, options);
  const int f = options.rank;
  s.seed = options.seed;
  s.X = DenseMatrix<T, MemorySpace>("kfactor::als::X", m, f);
  s.Y = DenseMatrix<T, MemorySpace>("kfactor::als::Y", n, f);
  fill_uniform(exec, s.Y, s.seed, RngStream::factor_h, T(0), T(1.0 / std::sqrt(double(f))));
  exec.fence();
  return s;
}

namespace detail {

enum class Side { users, items };

/// out = the half-step `side` of the plan from the whole other factor
/// (explicit, or implicit exact or CG; the rows of out are the structure's).
template <class ExecutionSpace, class T, class MemorySpace>
void plan_half_step(const ExecutionSpace& exec, Side side, const Plan<T, MemorySpace>& p,
                    const DenseMatrix<T, MemorySpace>& other, const DenseMatrix<T, MemorySpace>& out,
                    Workspace<T, MemorySpace>& ws) {
  const bool users = side == Side::users;
  const auto& S = users ? p.users : p.items;
  if (!p.implicit) {
    half_step(exec, S, other, out, p.rank, p.lambda, p.weight_nnz, p.batch_rows, p.max_batch_bytes, &ws);
    return;
  }
  factor_gram(exec, other, ws.gram);
  if (p.cg)
    cg_half_step(exec, users ? p.cg_users : p.cg_items, *p.sddmm_plans, users ? p.spmm_users : p.spmm_items,
                 users ? p.user_count : p.item_count, other, out, ws.gram, p.lambda, p.weight_nnz, p.cg_steps, ws);
  else
    half_step(exec, S, other, out, p.rank, p.lambda, p.weight_nnz, p.batch_rows, p.max_batch_bytes, &ws,
              ImplicitGram<T, MemorySpace>{ws.gram});
}

}  // namespace detail

/// The user half-step (X from Y), then the item half-step (Y from X).
template <class ExecutionSpace, class T, class MemorySpace>
void user_half_step(const ExecutionSpace& exec, State<T, MemorySpace>& s) {
  detail::plan_half_step(exec, detail::Side::users, *s.plan, s.Y, s.X, s.workspace);
}
template <class ExecutionSpace, class T, class MemorySpace>
void item_half_step(const ExecutionSpace& exec, State<T, MemorySpace>& s) {
  detail::plan_half_step(exec, detail::Side::items, *s.plan, s.X, s.Y, s.workspace);
}

namespace detail {

/// The sets evaluate() scores against one block of Y (single process: the
/// whole problem; distributed: a rank's rows, per block of items, their
/// item indices local to the block).
template <class T, class MemorySpace>
struct EvaluationSets {
  const CsrMatrix<T, MemorySpace>* train = nullptr;
  const CsrMatrix<T, MemorySpace>* test_warm = nullptr;
  const CsrMatrix<T, MemorySpace>* test = nullptr;
  const CsrMatrix<T, MemorySpace>* given_warm = nullptr;
  const CsrMatrix<T, MemorySpace>* given = nullptr;
  ordinal_t first_item = 0;  ///< the global index of the block's first item
};

/// The communication policy of the ALS iteration on one process: the
/// factors are whole, sums are identities. distributed/als.hpp's MpiPolicy
/// has the same members, with gathers, a ring and all-reductions.
template <class T, class MemorySpace>
struct SingleProcess {
  /// out = the half-step `side` of the plan from the other factor.
  template <class ExecutionSpace>
  void half_step(const ExecutionSpace& exec, Side side, const Plan<T, MemorySpace>& p,
                 const DenseMatrix<T, MemorySpace>& other, const DenseMatrix<T, MemorySpace>& out,
                 Workspace<T, MemorySpace>& ws) {
    plan_half_step(exec, side, p, other, out, ws);
  }
  /// Calls visit(sets of the block, Y block) for every block of Y that this
  /// process scores `sets` (its rows of the problem) against.
  template <class ExecutionSpace, class Visit>
  void for_each_item_block(const ExecutionSpace&, const DenseMatrix<T, MemorySpace>& Y,
                           const EvaluationSets<T, MemorySpace>& sets, Visit&& visit) {
    visit(sets, Y);
  }
  void sum(double*, int) {}
};

/// One iteration with communication policy `comm`: X from Y, then Y from X.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
void iterate(const ExecutionSpace& exec, const Plan<T, MemorySpace>& p, State<T, MemorySpace>& s, Comm& comm) {
  comm.half_step(exec, Side::users, p, s.Y, s.X, s.workspace);
  comm.half_step(exec, Side::items, p, s.X, s.Y, s.workspace);
}

/// The implicit objective (the file comment's formula) from this process's
/// rows of X and Y and its ratings, summed by `comm`: the observed entries'
/// terms, both factors' Grams (f x f each, their sums' trace) and the
/// regularizer.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
Metrics implicit_metrics(const ExecutionSpace& exec, const Plan<T, MemorySpace>& p, const State<T, MemorySpace>& s,
                         const EvaluationSets<T, MemorySpace>& sets, Comm& comm) {
  double observed = 0.0;
  comm.for_each_item_block(
      exec, s.Y, sets, [&](const EvaluationSets<T, MemorySpace>& b, const DenseMatrix<T, MemorySpace>& Y) {
        if (b.train && b.train->nnz() > 0)
          observed += implicit_observed_sum(
              exec, *b.train, kfactor::detail::observed_dots(exec, *p.sddmm_plans, *b.train, s.X, Y), p.confidence);
      });
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> gx, gy;
  factor_gram(exec, s.X, gx);
  factor_gram(exec, s.Y, gy);
  std::vector<double> v = gram_to_host(gx);
  const std::size_t f2 = v.size();
  const auto hy = gram_to_host(gy);
  v.insert(v.end(), hy.begin(), hy.end());
  v.push_back(observed);
  v.push_back(weighted_norm2(exec, s.X, p.user_count, p.weight_nnz) +
              weighted_norm2(exec, s.Y, p.item_count, p.weight_nnz));
  comm.sum(v.data(), int(v.size()));
  const double trace =
      gram_trace(std::vector<double>(v.begin(), v.begin() + f2), std::vector<double>(v.begin() + f2, v.end() - 2));
  Metrics m;
  m.set("loss", v[2 * f2] + trace + double(p.lambda) * v[2 * f2 + 1]);
  return m;
}

/// The ranking metrics at p.eval_k (ranking_metrics.hpp) on `held_out`,
/// added to `m`: this process's users with a positive held-out item are
/// ranked against every block of Y that `comm` visits (the block's training
/// items excluded), the blocks' top K merged into one list per user (the
/// top K over all items, as one process ranks them), and the metrics' sums
/// over users added by `comm` before they are finished.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
void ranking(const ExecutionSpace& exec, const Plan<T, MemorySpace>& p, const State<T, MemorySpace>& s,
             const EvaluationSets<T, MemorySpace>& sets, const CsrMatrix<T, MemorySpace>& held_out, Comm& comm,
             Metrics& m) {
  const auto users = users_with_positives(held_out);
  auto top = empty_top_n<T, MemorySpace>(exec, users.size());
  std::int64_t items = 0;
  comm.for_each_item_block(
      exec, s.Y, sets, [&](const EvaluationSets<T, MemorySpace>& b, const DenseMatrix<T, MemorySpace>& Y) {
        const auto part =
            top_n(exec, s.X, Y, users, p.eval_k, Exclusions<T, MemorySpace>{b.train, false}, p.max_batch_bytes);
        top = merge_top_n(exec, top, part, b.first_item, p.eval_k);
        items += std::int64_t(Y.extent(0));
      });
  const int k = ranking_cutoff(p.eval_k, top.width(), items);
  RankingSums sums = ranking_sums(exec, top, users, held_out, k, items);
  comm.sum(sums.v, RankingSums::count);
  const RankingMetrics r = finish_ranking(sums, k);
  m.set("precision_at_k", r.precision);
  m.set("recall_at_k", r.recall);
  m.set("map_at_k", r.map);
  m.set("ndcg_at_k", r.ndcg);
  m.set("auc", r.auc);
}

/// The metrics (see evaluate()) from this process's sums, summed by `comm`.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
Metrics metrics(const ExecutionSpace& exec, const Plan<T, MemorySpace>& p, const State<T, MemorySpace>& s,
                const EvaluationSets<T, MemorySpace>& sets, std::int64_t test_nnz, std::int64_t given_nnz, Comm& comm) {
  if (p.implicit) {
    Metrics m = implicit_metrics(exec, p, s, sets, comm);
    // The split's held-out set, else the given one (global counts: every
    // process picks the same).
    if (test_nnz > 0 || given_nnz > 0) ranking(exec, p, s, sets, test_nnz > 0 ? *sets.test : *sets.given, comm, m);
    return m;
  }
  // [squared error, count] of train, test warm, given warm, test all, given
  // all; then the regularizer.
  double v[11] = {0};
  auto add = [&](const CsrMatrix<T, MemorySpace>* M, const DenseMatrix<T, MemorySpace>& Y, int at) {
    if (!M || M->nnz() == 0) return;
    const auto e = rating_errors(exec, *M, kfactor::detail::observed_dots(exec, *p.sddmm_plans, *M, s.X, Y));
    v[at] += e.rmse * e.rmse * double(e.count);
    v[at + 1] += double(e.count);
  };
  comm.for_each_item_block(exec, s.Y, sets,
                           [&](const EvaluationSets<T, MemorySpace>& b, const DenseMatrix<T, MemorySpace>& Y) {
                             add(b.train, Y, 0);
                             if (test_nnz > 0) {
                               add(b.test_warm, Y, 2);
                               add(b.test, Y, 6);
                             }
                             if (given_nnz > 0) {
                               add(b.given_warm, Y, 4);
                               add(b.given, Y, 8);
                             }
                           });
  v[10] = weighted_norm2(exec, s.X, p.user_count, p.weight_nnz) + weighted_norm2(exec, s.Y, p.item_count, p.weight_nnz);
  comm.sum(v, 11);
  auto rmse = [&](int at) { return v[at + 1] > 0 ? std::sqrt(v[at] / v[at + 1]) : 0.0; };
  Metrics m;
  if (test_nnz > 0) m.set("test_rmse", rmse(2));
  if (given_nnz > 0) m.set("given_test_rmse", rmse(4));
  m.set("train_rmse", rmse(0));
  m.set("loss", v[0] + double(p.lambda) * v[10]);
  if (test_nnz > 0) {
    m.set("test_rmse_all", rmse(6));
    m.set("test_cold_fraction", 1.0 - v[3] / double(test_nnz));
  }
  if (given_nnz > 0) {
    m.set("given_test_rmse_all", rmse(8));
    m.set("given_test_cold_fraction", 1.0 - v[5] / double(given_nnz));
  }
  return m;
}

/// What a run's report names besides the state: the global problem.
struct RunShape {
  std::int64_t rows = 0, cols = 0, nnz = 0, test_nnz = 0, given_nnz = 0;
  double test_fraction = 0.0;
  std::uint64_t split_seed = 0;
};

}  // namespace detail

/// Flops of one iteration (both half-steps): S1 = nnz f (f + 1), S2 = 2 nnz f
/// per half-step.
inline double flops_per_iteration(std::int64_t nnz, int f) {
  return 2.0 * (double(nnz) * f * (f + 1) + 2.0 * double(nnz) * f);
}

namespace detail {

/// The loop of resume(), single-rank and distributed alike: step_fn() and
/// evaluate_fn() under the stop rules and the observer, then the report
/// (timings preprocess, autotune, iterations, per_iteration; info from the
/// plan, gflops, continued_from, split).
template <class ExecutionSpace, class T, class MemorySpace, class StepFn, class EvaluateFn>
Report run(const Options& options, State<T, MemorySpace>& s, const RunShape& shape, const Observer& observer,
           StepFn&& step_fn, EvaluateFn&& evaluate_fn) {
  options.validate();
  if (!s.plan) throw UsageError("als: state has no plan (make it with als::init)");
  if (s.X.extent(1) != std::size_t(options.rank) || s.Y.extent(1) != std::size_t(options.rank))
    throw UsageError("als: the state's rank " + std::to_string(s.X.extent(1)) + " differs from options.rank " +
                     std::to_string(options.rank));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string primary = options.implicit      ? "loss"
                              : shape.test_nnz > 0  ? "test_rmse"
                              : shape.given_nnz > 0 ? "given_test_rmse"
                                                    : "train_rmse";
  double loop_seconds = 0.0, step_seconds = 0.0;
  const int first_iteration = s.iteration;
  const StopReason why = run_solver_loop(
      s.iteration, s.history, options.stop, primary, observer,
      [&] {
        const auto ts = std::chrono::steady_clock::now();
        step_fn();
        step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
      },
      evaluate_fn, [](const Metrics&) { return false; }, &loop_seconds);
  Report r;
  r.command = "als";
  r.backend = backend_name<ExecutionSpace>();
  r.precision = sizeof(T) == 4 ? "float" : "double";
  r.rows = shape.rows;
  r.cols = shape.cols;
  r.nnz = shape.nnz;
  r.rank = options.rank;
  r.iterations = s.iteration;
  r.stop_reason = to_string(why);
  r.metrics = s.history.size() > 0 ? s.history.last() : evaluate_fn();
  r.history = s.history;
  r.timings.set("preprocess", s.plan->preprocess_seconds);
  r.timings.set("autotune", s.plan->autotune_seconds);
  r.timings.set("iterations", step_seconds);
  r.info = s.plan->info;
  const int its = s.iteration - first_iteration;  // iterations run by this call
  if (its > 0) {
    r.timings.set("per_iteration", step_seconds / its);
    if (!(options.implicit && options.solver == SolveMethod::cg))  // the rate of the batched build and Cholesky
      r.info["gflops"] = fmt(flops_per_iteration(r.nnz, options.rank) * its / step_seconds / 1e9);
  }
  if (first_iteration > 0) r.info["continued_from"] = std::to_string(first_iteration);
  r.info["split"] = shape.test_nnz > 0
                        ? "fraction " + fmt(shape.test_fraction) + ", seed " + std::to_string(shape.split_seed)
                        : "none";
  if (options.implicit && shape.test_nnz + shape.given_nnz > 0)  // the K of the ranking metrics, clamped to the items
    r.info["eval_k"] = std::to_string(std::min<std::int64_t>(options.eval_k, shape.cols));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace detail

/// One iteration: the user half-step, then the item half-step.
template <class ExecutionSpace, class T, class MemorySpace>
void step(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
          State<T, MemorySpace>& s) {
  (void)options;  // the plan holds what the options decide
  if (!s.plan) throw UsageError("als::step: state has no plan (make it with als::init)");
  detail::SingleProcess<T, MemorySpace> comm;
  detail::iterate(exec, *s.plan, s, comm);
}

/// The objective L (double accumulation; implicit feedback: its objective).
template <class ExecutionSpace, class T, class MemorySpace>
double loss(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const State<T, MemorySpace>& s) {
  const auto& p = *s.plan;
  if (p.implicit) {
    detail::SingleProcess<T, MemorySpace> comm;
    const detail::EvaluationSets<T, MemorySpace> sets{&problem.train};
    return detail::implicit_metrics(exec, p, s, sets, comm).get("loss");
  }
  const auto e =
      rating_errors(exec, problem.train, kfactor::detail::observed_dots(exec, *p.sddmm_plans, problem.train, s.X, s.Y));
  const double sq = e.rmse * e.rmse * double(e.count);
  return sq + double(p.lambda) * (detail::weighted_norm2(exec, s.X, p.user_count, p.weight_nnz) +
                                  detail::weighted_norm2(exec, s.Y, p.item_count, p.weight_nnz));
}

/// Metrics, in order (implicit feedback: the objective, "loss", then, with a held-out split or else a given test
/// set, its ranking metrics at K = options.eval_k: precision_at_k, recall_at_k, map_at_k, ndcg_at_k, auc; see
/// ranking_metrics.hpp): test_rmse (held-out split, when present; over
/// its warm entries, whose user and item have training ratings, as Spark's coldStartStrategy "drop"), given_test_rmse
/// (the user-given test set, warm entries), train_rmse, loss (the objective), then test_rmse_all / given_test_rmse_all
/// (every entry; a cold user or item has the zero factor, so predicts 0) and test_cold_fraction /
/// given_test_cold_fraction.
template <class ExecutionSpace, class T, class MemorySpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
                 State<T, MemorySpace>& s) {
  if (!s.plan) throw UsageError("als::evaluate: state has no plan (make it with als::init)");
  const auto& p = *s.plan;
  detail::SingleProcess<T, MemorySpace> comm;
  const detail::EvaluationSets<T, MemorySpace> sets{&problem.train, &p.test_warm, &problem.test, &p.given_test_warm,
                                                    &problem.given_test};
  (void)options;  // the plan holds what the options decide
  return detail::metrics(exec, p, s, sets, std::int64_t(problem.test.nnz()), std::int64_t(problem.given_test.nnz()),
                         comm);
}

/// Continues `state` (from init(exec, problem, options), possibly restored
/// from a checkpoint) in place until options.stop; a restored State
/// continues bit for bit. `state` is iterated by reference so an observer
/// holding it (kfactor::checkpoint_observer) saves the live iterate.
/// Report::seconds and the timings cover this call only (plus the plan's
/// preprocessing).
template <class ExecutionSpace, class T, class MemorySpace>
Report resume(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
              State<T, MemorySpace>& state, const Observer& observer = {}) {
  if (state.X.extent(0) != std::size_t(problem.train.num_rows()) ||
      state.Y.extent(0) != std::size_t(problem.train.num_cols))
    throw UsageError("als::resume: state shapes do not match the problem");
  const detail::RunShape shape{problem.train.num_rows(),
                               problem.train.num_cols,
                               std::int64_t(problem.train.nnz()),
                               std::int64_t(problem.test.nnz()),
                               std::int64_t(problem.given_test.nnz()),
                               problem.test_fraction,
                               problem.split_seed};
  return detail::run<ExecutionSpace>(
      options, state, shape, observer,
      [&] {
        step(exec, problem, options, state);
        exec.fence();
      },
      [&] { return evaluate(exec, problem, options, state); });
}

/// Fresh solve: init(exec, problem, options), then resume().
template <class ExecutionSpace, class T, class MemorySpace>
Result<State<T, MemorySpace>> solve(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                                    const Options& options, const Observer& observer = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<State<T, MemorySpace>> res{init(exec, problem, options), {}};
  res.report = resume(exec, problem, options, res.state, observer);
  res.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace kfactor::als

// Explicit instantiations live in src/als/als.cpp (every enabled space, float
// and double), so drivers, tests and benchmarks link the solver instead of
// compiling its kernels again.
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_ALS_ETI(EXTERN, S, T)                                                                                  \
  EXTERN template Problem<T, S::memory_space> make_problem<S, T>(const S&, const CooMatrix<T>&, double, std::uint64_t, \
                                                                 const CooMatrix<T>*);                                 \
  EXTERN template State<T, S::memory_space> init<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&,  \
                                                                        const Options&);                               \
  EXTERN template void step<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&, const Options&,       \
                                                   State<T, S::memory_space>&);                                        \
  EXTERN template Metrics evaluate<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&,                \
                                                          const Options&, State<T, S::memory_space>&);                 \
  EXTERN template Report resume<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&, const Options&,   \
                                                       State<T, S::memory_space>&, const Observer&);                   \
  EXTERN template Result<State<T, S::memory_space>> solve<S, T, S::memory_space>(                                      \
      const S&, const Problem<T, S::memory_space>&, const Options&, const Observer&);
#define KFACTOR_ALS_EXTERN(S, T) KFACTOR_ALS_ETI(extern, S, T)
#if !defined(KFACTOR_ALS_INSTANTIATING)
namespace kfactor::als {
KFACTOR_ETI_FOR_EACH(KFACTOR_ALS_EXTERN)
}  // namespace kfactor::als
#endif
#undef KFACTOR_ALS_EXTERN
