#pragma once
/// \file
/// Manifold-regularized sparse NMF for recommender systems (CUMNMF, Li et al.
/// 2018; digest ../shared/seeds/digests/003-cumnmf.md), Euclidean and KL,
/// on the observed entries only.
///
/// Model: ratings R (m users x n items, stored entries Omega) ~ W H^T with
/// W (m x r) >= 0 and H (n x r) >= 0, both LayoutRight (one row of r features
/// contiguous: the per-row team kernels read whole rows). Objectives:
///
///   euclid (eq. 20): sum_Omega (v - w_i.h_j)^2 + lambda_w Tr(W^T L W) + lambda_h Tr(H^T Lb H)
///   kl     (eq. 25): sum_Omega (v log(v / vt) - v + vt) + lambda_w/2 Tr(W^T L W) + lambda_h/2 Tr(H^T Lb H)
///
/// with L = Q - P for the symmetric user graph P (m x m, sparse) and
/// Lb = Qb - Pb for the item graph Pb (n x n); Tr(W^T L W) = 1/2 sum p_il
/// ||w_i - w_l||^2. (KL uses lambda/2: eq. 15's lambda is inconsistent with
/// rule 29, digest section 6 item 2.) The updates are the multiplicative rules
/// of eqs. 24 (euclid) and 29 (kl) as corrected in the digest's section 2;
/// P, Pb are used as sparse matrices and Q, Qb as degree vectors; no
/// Laplacian, W H^T, P W or Q W is ever formed. An epoch (one step()) is a W
/// sweep, then an H sweep that uses the new W. Each sweep is a Jacobi update
/// (every read of the old factor happens before any write): see
/// detail/sweep.hpp for the parallel scheme and the row-binning load balance.
///
/// Numerical guards:
///  - a zero denominator leaves the entry unchanged. This covers users/items
///    without ratings at lambda = 0 (0/0), rows without ratings and without
///    graph edges, and entries that are exactly 0 (an exact zero stays zero:
///    multiplicative updates never revive it);
///  - under KL the prediction vt is floored at Options::kl_floor (default
///    1e-12) in the ratio v / vt and inside the objective's logarithm, so
///    vt = 0 gives a large finite value, never Inf or NaN; rating v = 0
///    contributes vt to the KL objective (0 log 0 = 0);
///  - ratings must be finite and >= 0, graph weights finite and >= 0 and the
///    graphs symmetric (InputError otherwise). Self-loops are accepted (they
///    change the iterates, not the objective) though knn_graph makes none.
///
/// Initialization: w_ik, h_jk uniform in [init_low, init_high) * s from the
/// counter RNG (streams factor_w / factor_h), with s = sqrt(mean rating / r)
/// unless Options::init_scale > 0, so the initial predictions are about the
/// mean rating. init_low > 0 makes every entry strictly positive.
///
/// The sweeps and the metrics take a communication policy
/// (detail::SingleProcess here); kfactor/distributed/mnmf.hpp runs the same
/// ones over MPI ranks that each hold a block of users and of items.

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
#include <kfactor/mnmf/detail/sweep.hpp>
#include <kfactor/sddmm/detail/plan_cache.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace kfactor::mnmf {

inline const char* to_string(Objective o) { return o == Objective::kl ? "kl" : "euclid"; }

inline Objective parse_objective(const std::string& s) {
  if (s == "euclid" || s == "eu" || s == "euclidean") return Objective::euclid;
  if (s == "kl") return Objective::kl;
  throw UsageError("unknown MNMF objective '" + s + "' (euclid|kl)");
}

/// Solver options. Every numeric field has a Range beside it, checked by
/// validate() (UsageError naming the field and its range); visit() lists the
/// fields that decide the iterates (everything but the stop rule), which a
/// checkpoint records and a restart must repeat.
struct Options {
  /// The bound keeps a sweep team's accumulators, 3 rows of r scalars,
  /// within its 32 KiB of scratch.
  static constexpr int max_rank = 1024;
  static constexpr Range<int> rank_range{.lo = 1, .hi = max_rank};
  static constexpr Range<double> lambda_range{.lo = 0.0, .hi = 1e12, .note = "0: no graph term"};
  /// 10^9 epochs is beyond any run's patience: a larger count is a typo.
  static constexpr Range<int> max_iterations_range{.lo = 0, .hi = 1000000000};
  static constexpr Range<double> init_low_range{.lo = 0.0, .hi = 1e6, .lo_open = true};
  static constexpr Range<double> init_high_range{.lo = 0.0, .hi = 1e6, .lo_open = true, .note = "above init_low"};
  static constexpr Range<double> init_scale_range{.lo = 0.0, .hi = 1e12, .note = "0: automatic"};
  static constexpr Range<double> kl_floor_range{.lo = 0.0, .hi = 1.0, .lo_open = true};

  Objective objective = Objective::euclid;
  int rank = 10;          ///< r, in rank_range (and at most min(users, items): init)
  double lambda_w = 0.0;  ///< weight of the user-graph term, in lambda_range (eq. 20; eq. 25 uses lambda_w / 2)
  double lambda_h = 0.0;  ///< weight of the item-graph term, in lambda_range
  /// max_iterations (epochs) in max_iterations_range; tolerance
  /// (StopRule::tolerance_range) on the objective's relative change (0:
  /// off); target: stop when the objective <= target (NaN: off).
  StopRule stop{100, 0.0};
  std::uint64_t seed = 42;
  double init_low = 0.5;    ///< init entries uniform in [init_low, init_high) * scale; init_low_range
  double init_high = 1.5;   ///< init_high_range, above init_low
  double init_scale = 0.0;  ///< init_scale_range; 0: sqrt(mean training rating / rank)
  double kl_floor = 1e-12;  ///< floor of vt under KL (guard for vt = 0), in kl_floor_range

  void validate() const {
    check_range("mnmf", "rank", rank, rank_range);
    check_range("mnmf", "lambda_w", lambda_w, lambda_range);
    check_range("mnmf", "lambda_h", lambda_h, lambda_range);
    stop.validate();
    check_range("mnmf", "stop.max_iterations", stop.max_iterations, max_iterations_range);
    check_range("mnmf", "init_low", init_low, init_low_range);
    check_range("mnmf", "init_high", init_high, init_high_range);
    if (!(init_high > init_low))
      throw UsageError("mnmf: init_high must be above init_low = " + number_text(init_low) + ", got " +
                       number_text(init_high));
    check_range("mnmf", "init_scale", init_scale, init_scale_range);
    check_range("mnmf", "kl_floor", kl_floor, kl_floor_range);
  }

  template <class F>
  void visit(F&& f) const {
    f("objective", objective);
    f("rank", rank);
    f("lambda_w", lambda_w);
    f("lambda_h", lambda_h);
    f("seed", seed);
    f("init_low", init_low);
    f("init_high", init_high);
    f("init_scale", init_scale);
    f("kl_floor", kl_floor);
  }
};

/// The data of one run, in the solver's memory space: training ratings in
/// CSR (rows = users) and CSC (= the transpose, rows = items), the graphs and
/// their degree vectors, the row bins, and optional held-out ratings.
template <class T, class MemorySpace>
struct Problem {
  CsrMatrix<T, MemorySpace> ratings;          ///< m x n training ratings
  CsrMatrix<T, MemorySpace> ratings_t;        ///< n x m, the CSC of `ratings`
  CsrMatrix<T, MemorySpace> user_graph;       ///< P, m x m symmetric (empty: none)
  CsrMatrix<T, MemorySpace> item_graph;       ///< Pb, n x n symmetric (empty: none)
  Kokkos::View<T*, MemorySpace> user_degree;  ///< q_ii
  Kokkos::View<T*, MemorySpace> item_degree;  ///< qb_jj
  detail::RowBins<MemorySpace> user_bins, item_bins;
  CsrMatrix<T, MemorySpace> test;  ///< optional held-out ratings, m x n (empty: none)
  double mean_rating = 0.0;

  [[nodiscard]] ordinal_t rows() const { return ratings.num_rows(); }
  [[nodiscard]] ordinal_t cols() const { return ratings.num_cols; }
  [[nodiscard]] bool has_test() const { return test.row_map.extent(0) > 0 && test.nnz() > 0; }
};

template <class T, class MemorySpace>
struct State {
  DenseMatrix<T, MemorySpace> W;  ///< m x r user factor
  DenseMatrix<T, MemorySpace> H;  ///< n x r item factor
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;

  /// Targets of the Jacobi sweeps (not part of the iterate); step()
  /// allocates them when empty.
  struct Workspace {
    DenseMatrix<T, MemorySpace> W_next, H_next;
    /// The SDDMM plans of the rating sets the metrics predict on.
    std::shared_ptr<kfactor::detail::SddmmPlanCache<T, MemorySpace>> predictions =
        std::make_shared<kfactor::detail::SddmmPlanCache<T, MemorySpace>>();
  } workspace;

  void reset_workspace() { workspace = Workspace{}; }

  /// The checkpointed fields (no side effects).
  template <class F>
  void visit(F&& f) {
    f("W", W);
    f("H", H);
    f("iteration", iteration);
    f("seed", seed);
  }
  template <class F>
  void visit(F&& f) const {
    f("W", W);
    f("H", H);
    f("iteration", iteration);
    f("seed", seed);
  }
};

namespace detail {
template <class ExecutionSpace, class T, class MemorySpace>
void check_graph(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& G, ordinal_t n, const char* what) {
  if (G.row_map.extent(0) == 0) return;
  if (G.num_rows() != n || G.num_cols != n)
    throw InputError(std::string("mnmf: ") + what + " is " + std::to_string(G.num_rows()) + " x " +
                     std::to_string(G.num_cols) + ", expected " + std::to_string(n) + " x " + std::to_string(n));
  auto vals = G.values;
  int bad = 0;
  Kokkos::parallel_reduce(
      "kfactor::mnmf::check_graph", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, G.nnz()),
      KOKKOS_LAMBDA(offset_t e, int& b) {
        if (!(vals(e) >= T(0)) || !Kokkos::isfinite(vals(e))) b += 1;
      },
      bad);
  if (bad) throw InputError(std::string("mnmf: ") + what + " has negative or non-finite weights");
  // symmetry: G equals its transpose (same sorted pattern and values)
  auto Gt = transpose(exec, G);
  auto r1 = G.row_map, r2 = Gt.row_map;
  auto c1 = G.entries, c2 = Gt.entries;
  auto v1 = G.values, v2 = Gt.values;
  int asym = 0;
  Kokkos::parallel_reduce(
      "kfactor::mnmf::check_symmetry", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n),
      KOKKOS_LAMBDA(ordinal_t i, int& a) {
        if (r1(i + 1) != r2(i + 1)) {
          a += 1;
          return;
        }
        for (offset_t e = r1(i); e < r1(i + 1); ++e)
          if (c1(e) != c2(e) || v1(e) != v2(e)) {
            a += 1;
            return;
          }
      },
      asym);
  if (asym)
    throw InputError(std::string("mnmf: ") + what + " is not symmetric (" + std::to_string(asym) + " rows differ)");
}

template <class ExecutionSpace, class T, class MemorySpace>
double check_ratings(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R, const char* what) {
  auto vals = R.values;
  int bad = 0;
  double sum = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::mnmf::check_ratings", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(offset_t e, int& b, double& s) {
        if (!(vals(e) >= T(0)) || !Kokkos::isfinite(vals(e))) b += 1;
        s += double(vals(e));
      },
      bad, sum);
  if (bad)
    throw InputError(std::string("mnmf: ") + what + " has " + std::to_string(bad) + " negative or non-finite ratings");
  return R.nnz() > 0 ? sum / double(R.nnz()) : 0.0;
}
}  // namespace detail

/// Builds a Problem: validates the data (InputError for no ratings, all-zero,
/// negative or non-finite ratings, and bad graphs), forms the CSC
/// (transpose), the degree vectors and the row bins. Empty graphs (default-constructed) mean
/// "no graph" and require the matching lambda to be 0 at solve time.
template <class ExecutionSpace, class T, class MemorySpace>
Problem<T, MemorySpace> make_problem(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& ratings,
                                     const CsrMatrix<T, MemorySpace>& user_graph = {},
                                     const CsrMatrix<T, MemorySpace>& item_graph = {},
                                     const CsrMatrix<T, MemorySpace>& test = {}) {
  Problem<T, MemorySpace> p;
  p.ratings = ratings;
  if (ratings.row_map.extent(0) == 0 || ratings.nnz() == 0) throw InputError("mnmf: there are no training ratings");
  p.mean_rating = detail::check_ratings(exec, ratings, "ratings");
  // Nonnegative ratings with mean 0 are all 0: W H^T = 0 fits them exactly.
  if (!(p.mean_rating > 0.0)) throw InputError("mnmf: every training rating is 0 (nothing to factorize)");
  detail::check_graph(exec, user_graph, ratings.num_rows(), "user graph");
  detail::check_graph(exec, item_graph, ratings.num_cols, "item graph");
  if (test.row_map.extent(0) > 0) {
    if (test.num_rows() != ratings.num_rows() || test.num_cols != ratings.num_cols)
      throw InputError("mnmf: test ratings have another shape than the training ratings");
    detail::check_ratings(exec, test, "test ratings");
  }
  try {
    p.ratings_t = transpose(exec, ratings);
    p.user_graph = user_graph;
    p.item_graph = item_graph;
    p.user_degree = detail::degrees(exec, user_graph, ratings.num_rows());
    p.item_degree = detail::degrees(exec, item_graph, ratings.num_cols);
    p.user_bins = detail::make_row_bins(exec, ratings);
    p.item_bins = detail::make_row_bins(exec, p.ratings_t);
  } catch (const std::runtime_error& e) {
    throw OutOfMemory(std::string("mnmf: allocation for ") + std::to_string(ratings.num_rows()) + " x " +
                      std::to_string(ratings.num_cols) + " with " + std::to_string(ratings.nnz()) +
                      " ratings failed: " + e.what());
  }
  p.test = test;
  return p;
}

namespace detail {
/// The rank fits the data: above min(users, items) a rank adds nothing
/// (W H^T already has full rank), so it is a mistake.
inline void check_rank_fits(std::int64_t users, std::int64_t items, const Options& options) {
  const std::int64_t limit = std::min(users, items);
  if (options.rank > limit)
    throw UsageError("mnmf: rank must be in 1..min(users, items) = " + std::to_string(limit) + ", got " +
                     std::to_string(options.rank));
}

/// w_ik, h_jk uniform in [init_low, init_high) * scale from the counter RNG
/// (all rows of both factors; keyed by (seed, stream, row, feature)).
template <class ExecutionSpace, class T, class MemorySpace>
void initial_factors(const ExecutionSpace& exec, double mean_rating, const Options& options,
                     const DenseMatrix<T, MemorySpace>& W, const DenseMatrix<T, MemorySpace>& H) {
  const double scale = options.init_scale > 0 ? options.init_scale
                                              : std::sqrt((mean_rating > 0 ? mean_rating : 1.0) / double(options.rank));
  fill_uniform(exec, W, options.seed, RngStream::factor_w, T(options.init_low * scale), T(options.init_high * scale));
  fill_uniform(exec, H, options.seed, RngStream::factor_h, T(options.init_low * scale), T(options.init_high * scale));
}
}  // namespace detail

/// Fresh state: strictly positive uniform factors from options.seed.
/// UsageError for invalid options and a rank above min(users, items).
template <class ExecutionSpace, class T, class MemorySpace>
State<T, MemorySpace> init(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options) {
  options.validate();
  detail::check_rank_fits(problem.rows(), problem.cols(), options);
  const int r = options.rank;
  State<T, MemorySpace> s;
  s.seed = options.seed;
  try {
    s.W = DenseMatrix<T, MemorySpace>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::W"),
                                      problem.rows(), r);
    s.H = DenseMatrix<T, MemorySpace>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::H"),
                                      problem.cols(), r);
  } catch (const std::runtime_error& e) {
    throw OutOfMemory("mnmf: cannot allocate factors of " + std::to_string(problem.rows()) + " + " +
                      std::to_string(problem.cols()) + " rows x rank " + std::to_string(r) + ": " + e.what());
  }
  detail::initial_factors(exec, problem.mean_rating, options, s.W, s.H);
  return s;
}

namespace detail {
/// A positive lambda needs its graph.
template <class T, class MemorySpace>
void check_graphs(const Problem<T, MemorySpace>& problem, const Options& options) {
  if (options.lambda_w > 0 && problem.user_graph.row_map.extent(0) == 0)
    throw UsageError("mnmf: lambda_w > 0 needs a user graph");
  if (options.lambda_h > 0 && problem.item_graph.row_map.extent(0) == 0)
    throw UsageError("mnmf: lambda_h > 0 needs an item graph");
}

template <class T, class MemorySpace>
void check_step_inputs(const Problem<T, MemorySpace>& problem, const Options& options, const State<T, MemorySpace>& s) {
  check_graphs(problem, options);
  if (s.W.extent(0) != std::size_t(problem.rows()) || s.H.extent(0) != std::size_t(problem.cols()) ||
      s.W.extent(1) != s.H.extent(1))
    throw UsageError("mnmf: state factors do not fit the problem");
}

template <class ExecutionSpace, class T, class MemorySpace>
void ensure_workspace(const ExecutionSpace& exec, State<T, MemorySpace>& s) {
  auto& ws = s.workspace;
  try {
    if (ws.W_next.extent(0) != s.W.extent(0) || ws.W_next.extent(1) != s.W.extent(1))
      ws.W_next = DenseMatrix<T, MemorySpace>(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::W_next"), s.W.extent(0), s.W.extent(1));
    if (ws.H_next.extent(0) != s.H.extent(0) || ws.H_next.extent(1) != s.H.extent(1))
      ws.H_next = DenseMatrix<T, MemorySpace>(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::H_next"), s.H.extent(0), s.H.extent(1));
  } catch (const std::runtime_error& e) {
    throw OutOfMemory(std::string("mnmf: cannot allocate the sweep workspace: ") + e.what());
  }
}

enum class Factor { w, h };

/// The communication policy of the single-process solver. The distributed
/// solver's MpiPolicy (kfactor/distributed/mnmf.hpp) has the same members:
///   one_process()             true when no other process takes part;
///   whole(exec, X, which)     the whole factor W or H (all rows) to read,
///                             given this process's rows X of it;
///   updated(exec, X, which)   this process's rows X hold new values (what
///                             whole() returns must follow);
///   first_row(which)          the row of the whole factor that is X's row 0;
///   sum(values, n)            host doubles summed over the processes.
struct SingleProcess {
  [[nodiscard]] static constexpr bool one_process() { return true; }
  template <class ExecutionSpace, class X>
  X whole(const ExecutionSpace&, const X& local, Factor) const {
    return local;
  }
  template <class ExecutionSpace, class X>
  void updated(const ExecutionSpace&, const X&, Factor) const {}
  [[nodiscard]] static constexpr ordinal_t first_row(Factor) { return 0; }
  void sum(double*, int) const {}
};

/// One Jacobi sweep of W (which = w: the rows of R, the user graph) or of
/// H (the rows of R^T, the item graph) over this process's rows, reading
/// the whole old factors.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
void half_step(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
               State<T, MemorySpace>& s, Factor which, const Comm& comm) {
  const bool w = which == Factor::w;
  auto& X = w ? s.W : s.H;
  auto& X_next = w ? s.workspace.W_next : s.workspace.H_next;
  const DenseMatrix<T, MemorySpace> X_all = comm.whole(exec, X, which);
  const DenseMatrix<T, MemorySpace> Y_all = comm.whole(exec, w ? s.H : s.W, w ? Factor::h : Factor::w);
  sweep(exec, options.objective, w ? problem.ratings : problem.ratings_t, w ? problem.user_bins : problem.item_bins,
        X_all, Y_all, w ? problem.user_graph : problem.item_graph, w ? problem.user_degree : problem.item_degree,
        T(w ? options.lambda_w : options.lambda_h), T(options.kl_floor), X_next, comm.first_row(which));
  std::swap(X, X_next);
  comm.updated(exec, X, which);
}

/// The objective from its sums (eq. 20: weight lambda; eq. 25: lambda / 2).
inline double objective_of(const Options& options, double data, double rough_w, double rough_h) {
  const double weight = options.objective == Objective::kl ? 0.5 : 1.0;
  double reg = 0.0;
  if (options.lambda_w > 0) reg += weight * options.lambda_w * rough_w;
  if (options.lambda_h > 0) reg += weight * options.lambda_h * rough_h;
  return data + reg;
}

/// The predictions w_i . h_j at this process's ratings (R's order), by the
/// SDDMM plan of R's pattern; H_all: the whole H.
template <class ExecutionSpace, class T, class MemorySpace>
Kokkos::View<T*, MemorySpace> predictions(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                                          const State<T, MemorySpace>& s, const DenseMatrix<T, MemorySpace>& H_all) {
  return kfactor::detail::observed_dots(exec, *s.workspace.predictions, R, s.W, H_all);
}

/// This process's parts of the objective's sums: the data term over its
/// rows of R (`train_dots`: their predictions), and each graph term over
/// its rows of the graph (0 when its lambda is 0).
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
std::array<double, 3> objective_sums(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                                     const Options& options, const State<T, MemorySpace>& s, const Comm& comm,
                                     const Kokkos::View<T*, MemorySpace>& train_dots) {
  const DenseMatrix<T, MemorySpace> W_all = comm.whole(exec, s.W, Factor::w);
  const DenseMatrix<T, MemorySpace> H_all = comm.whole(exec, s.H, Factor::h);
  std::array<double, 3> sums{};
  sums[0] = data_term(exec, options.objective, problem.ratings, train_dots, options.kl_floor);
  if (options.lambda_w > 0) sums[1] = roughness(exec, problem.user_graph, W_all, comm.first_row(Factor::w));
  if (options.lambda_h > 0) sums[2] = roughness(exec, problem.item_graph, H_all, comm.first_row(Factor::h));
  return sums;
}

/// evaluate() on this process's rows; `test`: the whole problem has test
/// ratings.
template <class ExecutionSpace, class T, class MemorySpace, class Comm>
Metrics evaluate_on(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
                    const State<T, MemorySpace>& s, const Comm& comm, bool test) {
  const DenseMatrix<T, MemorySpace> H_all = comm.whole(exec, s.H, Factor::h);
  const auto train_dots = predictions(exec, problem.ratings, s, H_all);
  RatingErrors held, train = rating_errors(exec, problem.ratings, train_dots);
  if (test) held = rating_errors(exec, problem.test, predictions(exec, problem.test, s, H_all));
  auto sums = objective_sums(exec, problem, options, s, comm, train_dots);
  if (!comm.one_process()) {
    // RMSE and MAE of the whole rating set from the parts' sums and counts.
    double v[8] = {held.rmse * held.rmse * double(held.count),
                   held.mae * double(held.count),
                   double(held.count),
                   train.rmse * train.rmse * double(train.count),
                   double(train.count),
                   sums[0],
                   sums[1],
                   sums[2]};
    comm.sum(v, 8);
    held.rmse = v[2] > 0 ? std::sqrt(v[0] / v[2]) : 0.0;
    held.mae = v[2] > 0 ? v[1] / v[2] : 0.0;
    train.rmse = v[4] > 0 ? std::sqrt(v[3] / v[4]) : 0.0;
    sums = {v[5], v[6], v[7]};
  }
  Metrics m;
  if (test) {
    m.set("test_rmse", held.rmse);
    m.set("test_mae", held.mae);
  }
  m.set("train_rmse", train.rmse);
  m.set("objective", objective_of(options, sums[0], sums[1], sums[2]));
  return m;
}

/// The report's fields known before the loop.
template <class ExecutionSpace, class T>
Report report_header(const Options& options, std::int64_t rows, std::int64_t cols, std::int64_t nnz,
                     std::int64_t user_edges, std::int64_t item_edges) {
  Report r;
  r.command = "mnmf";
  r.backend = backend_name<ExecutionSpace>();
  r.precision = sizeof(T) == 4 ? "float" : "double";
  r.rows = rows;
  r.cols = cols;
  r.nnz = nnz;
  r.rank = options.rank;
  r.info["objective"] = to_string(options.objective);
  r.info["lambda_w"] = std::to_string(options.lambda_w);
  r.info["lambda_h"] = std::to_string(options.lambda_h);
  r.info["user_graph_edges"] = std::to_string(user_edges);
  r.info["item_graph_edges"] = std::to_string(item_edges);
  return r;
}

/// resume(): the loop of core/solver.hpp with `step` and `evaluate` (the
/// single-process or the distributed ones), completing `r`.
template <class T, class MemorySpace, class StepFn, class EvaluateFn>
Report resume_on(const Options& options, State<T, MemorySpace>& state, const Observer& observer, Report r,
                 StepFn&& step, EvaluateFn&& evaluate) {
  double seconds = 0.0;
  const StopReason reason = run_solver_loop(
      state.iteration, state.history, options.stop, "objective", observer, step, evaluate,
      [](const Metrics&) { return false; }, &seconds);
  r.iterations = state.iteration;
  r.seconds = seconds;
  r.stop_reason = to_string(reason);
  r.metrics = state.history.size() > 0 ? state.history.last() : evaluate();
  r.history = state.history;
  return r;
}
}  // namespace detail

/// The W sweep alone (Jacobi; W is replaced by the new W).
template <class ExecutionSpace, class T, class MemorySpace>
void update_w(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
              State<T, MemorySpace>& s) {
  detail::check_step_inputs(problem, options, s);
  detail::ensure_workspace(exec, s);
  detail::half_step(exec, problem, options, s, detail::Factor::w, detail::SingleProcess{});
}

/// The H sweep alone, using the current W.
template <class ExecutionSpace, class T, class MemorySpace>
void update_h(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
              State<T, MemorySpace>& s) {
  detail::check_step_inputs(problem, options, s);
  detail::ensure_workspace(exec, s);
  detail::half_step(exec, problem, options, s, detail::Factor::h, detail::SingleProcess{});
}

/// One epoch: the W sweep, then the H sweep with the new W. Does not advance
/// state.iteration (solve's loop does).
template <class ExecutionSpace, class T, class MemorySpace>
void step(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
          State<T, MemorySpace>& s) {
  update_w(exec, problem, options, s);
  update_h(exec, problem, options, s);
}

/// The objective: eq. 20 (euclid, weight lambda) or eq. 25 (kl, weight
/// lambda/2), accumulated in double.
template <class ExecutionSpace, class T, class MemorySpace>
double objective(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
                 const State<T, MemorySpace>& s) {
  const auto sums = detail::objective_sums(exec, problem, options, s, detail::SingleProcess{},
                                           detail::predictions(exec, problem.ratings, s, s.H));
  return detail::objective_of(options, sums[0], sums[1], sums[2]);
}

/// Metrics of the current iterate, in this order: test_rmse, test_mae (when
/// the problem has test ratings), train_rmse, objective.
template <class ExecutionSpace, class T, class MemorySpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
                 const State<T, MemorySpace>& s) {
  return detail::evaluate_on(exec, problem, options, s, detail::SingleProcess{}, problem.has_test());
}

/// Continues `state` (fresh from init(), or restored from a checkpoint into
/// an init() state) with the solver loop: step, evaluate, observer, stop
/// rules; a restart continues bit for bit. The observer may hold a reference
/// to `state` (e.g. a checkpoint_observer).
template <class ExecutionSpace, class T, class MemorySpace>
Report resume(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
              State<T, MemorySpace>& state, const Observer& observer = {}) {
  options.validate();
  detail::check_rank_fits(problem.rows(), problem.cols(), options);
  detail::check_step_inputs(problem, options, state);
  return detail::resume_on(
      options, state, observer,
      detail::report_header<ExecutionSpace, T>(options, problem.rows(), problem.cols(),
                                               std::int64_t(problem.ratings.nnz()), problem.user_graph.nnz(),
                                               problem.item_graph.nnz()),
      [&] { step(exec, problem, options, state); }, [&] { return evaluate(exec, problem, options, state); });
}

/// init(), then resume().
template <class ExecutionSpace, class T, class MemorySpace>
kfactor::Result<State<T, MemorySpace>> solve(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                                             const Options& options, const Observer& observer = {}) {
  kfactor::Result<State<T, MemorySpace>> res{init(exec, problem, options), {}};
  res.report = resume(exec, problem, options, res.state, observer);
  return res;
}

}  // namespace kfactor::mnmf

// Explicit instantiations live in src/mnmf/mnmf.cpp (every enabled space,
// float and double, memory space = the execution space's).
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_MNMF_ETI(EXTERN, S, T)                                                                         \
  EXTERN template kfactor::mnmf::Problem<T, S::memory_space> kfactor::mnmf::make_problem(                      \
      const S&, const kfactor::CsrMatrix<T, S::memory_space>&, const kfactor::CsrMatrix<T, S::memory_space>&,  \
      const kfactor::CsrMatrix<T, S::memory_space>&, const kfactor::CsrMatrix<T, S::memory_space>&);           \
  EXTERN template kfactor::mnmf::State<T, S::memory_space> kfactor::mnmf::init(                                \
      const S&, const kfactor::mnmf::Problem<T, S::memory_space>&, const kfactor::mnmf::Options&);             \
  EXTERN template void kfactor::mnmf::update_w(const S&, const kfactor::mnmf::Problem<T, S::memory_space>&,    \
                                               const kfactor::mnmf::Options&,                                  \
                                               kfactor::mnmf::State<T, S::memory_space>&);                     \
  EXTERN template void kfactor::mnmf::update_h(const S&, const kfactor::mnmf::Problem<T, S::memory_space>&,    \
                                               const kfactor::mnmf::Options&,                                  \
                                               kfactor::mnmf::State<T, S::memory_space>&);                     \
  EXTERN template double kfactor::mnmf::objective(const S&, const kfactor::mnmf::Problem<T, S::memory_space>&, \
                                                  const kfactor::mnmf::Options&,                               \
                                                  const kfactor::mnmf::State<T, S::memory_space>&);            \
  EXTERN template kfactor::Metrics kfactor::mnmf::evaluate(                                                    \
      const S&, const kfactor::mnmf::Problem<T, S::memory_space>&, const kfactor::mnmf::Options&,              \
      const kfactor::mnmf::State<T, S::memory_space>&);                                                        \
  EXTERN template kfactor::Report kfactor::mnmf::resume(                                                       \
      const S&, const kfactor::mnmf::Problem<T, S::memory_space>&, const kfactor::mnmf::Options&,              \
      kfactor::mnmf::State<T, S::memory_space>&, const kfactor::Observer&);
#define KFACTOR_MNMF_EXTERN(S, T) KFACTOR_MNMF_ETI(extern, S, T)
KFACTOR_ETI_FOR_EACH(KFACTOR_MNMF_EXTERN)
#undef KFACTOR_MNMF_EXTERN
