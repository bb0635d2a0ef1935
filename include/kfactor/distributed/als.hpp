#pragma once
/// \file
/// Distributed ALS over MPI (header-only; needs a build with
/// KFACTOR_HAVE_MPI). The half-steps are kfactor::als::detail::half_step,
/// the single-rank kernel (BALS tiles or CSR, batched team Cholesky), run on
/// each rank's rows; only the preprocessing (which rows a rank owns, the
/// orderings) and the gathers are new here.
///
/// **Layout.** Users (rows of R, m) and items (columns of R, n) are split
/// into P contiguous blocks balanced by nonzeros (kfactor::
/// balanced_column_blocks on the row and column counts, adjusted so no
/// block is empty: P <= min(m, n)). Rank p owns
///   - rows [u_p, u_{p+1}) of R (LocalProblem::train, global item ids), the
///     same rows of the test sets, and rows u_p.. of X;
///   - rows [i_p, i_{p+1}) of R^T (LocalProblem::train_t, global user ids)
///     and rows i_p.. of Y;
/// plus full replicas X_all (m x f) and Y_all (n x f), refreshed by an
/// all-gather after each half-step. R is thus stored twice, each copy
/// partitioned once, like the single-rank solver's two traversal structures.
///
/// **One iteration:**
/// ```
///   X_p = half_step(users_p, Y_all)     local (each row's normal equations need
///                                       only its ratings and Y)
///   X_all = all-gather(X_p)             (m - m_p) f words in
///   Y_p = half_step(items_p, X_all)     local
///   Y_all = all-gather(Y_p)             (n - n_p) f words in
/// ```
/// A half-step that fails on one rank (Cholesky of a matrix that is not
/// positive definite, allocation) is agreed (kfactor::distributed::agree:
/// one small all-reduction per half-step), so every rank throws the error.
/// **Communication volume per iteration and rank:** (P-1)/P (m + n) f words
/// of T (averaged over ranks), in 2 all-gathers; evaluate() adds one
/// all-reduction of 12 doubles. iteration_volume() evaluates it. When
/// (m + n) f no longer fits one device, a 2D partition of R with Y blocks
/// (not implemented here) would be needed.
///
/// **Equality with the single-rank solver.** A row's normal equations are
/// sequential sums over the row's nonzeros in column order, whatever the
/// tile, batch or team size (detail/half_step.hpp), and the rank's local
/// structures keep the single-rank column order (with --reorder, the
/// column orderings are computed from the global counts). So X and Y are
/// bit for bit those of kfactor::als on any number of ranks (tested for
/// P = 1..4, float and double, tiled and CSR, with and without reordering).
/// The metrics are sums of per-rank partial sums: equal to the single-rank
/// ones within 1e-12 (relative, double) / 1e-5 (float).
///
/// **Checkpoints.** State::visit lists the rank's rows of X and Y under the
/// single-rank names; with row_blocks() one file with the full factors is
/// written (kfactor::save_checkpoint(comm, ...)), restartable on any number
/// of ranks or by the single-rank als.

#include <kfactor/als/als.hpp>
#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/blocks.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::distributed::als {

using kfactor::als::LambdaWeighting;
using kfactor::als::Options;

/// One rank's share of an als::Problem (see the file comment).
template <class T, class MemorySpace>
struct LocalProblem {
  CsrMatrix<T, MemorySpace> train;       ///< rows [u_p, u_{p+1}) of R: m_p x n
  CsrMatrix<T, MemorySpace> train_t;     ///< rows [i_p, i_{p+1}) of R^T: n_p x m
  CsrMatrix<T, MemorySpace> test;        ///< rows [u_p, u_{p+1}) of the held-out split (empty: none)
  CsrMatrix<T, MemorySpace> given_test;  ///< the same rows of the user-given test set (empty: none)
  std::vector<ordinal_t> user_bounds, item_bounds;  ///< P + 1 each
  std::int64_t users = 0, items = 0, nnz = 0, test_nnz = 0, given_test_nnz = 0;
  double test_fraction = 0.0;
  std::uint64_t split_seed = 0;
  int rank = 0, size = 1;
  [[nodiscard]] std::int64_t user_begin() const { return user_bounds[rank]; }
  [[nodiscard]] std::int64_t item_begin() const { return item_bounds[rank]; }
  [[nodiscard]] std::int64_t local_users() const { return user_bounds[rank + 1] - user_bounds[rank]; }
  [[nodiscard]] std::int64_t local_items() const { return item_bounds[rank + 1] - item_bounds[rank]; }
};

/// Collective. Every rank passes the same full problem (InputError on every
/// rank when shapes or nnz differ) and keeps its blocks. UsageError when
/// P > min(m, n).
template <class ExecutionSpace, class T, class MemorySpace>
LocalProblem<T, MemorySpace> distribute(const ExecutionSpace& exec, MPI_Comm comm,
                                        const kfactor::als::Problem<T, MemorySpace>& full) {
  LocalProblem<T, MemorySpace> lp;
  MPI_Comm_rank(comm, &lp.rank);
  MPI_Comm_size(comm, &lp.size);
  const auto& R = full.train;
  lp.users = R.num_rows();
  lp.items = R.num_cols;
  lp.nnz = static_cast<std::int64_t>(R.nnz());
  lp.test_nnz = static_cast<std::int64_t>(full.test.nnz());
  lp.given_test_nnz = static_cast<std::int64_t>(full.given_test.nnz());
  lp.test_fraction = full.test_fraction;
  lp.split_seed = full.split_seed;
  require_same(comm, static_cast<std::uint64_t>(lp.users), "the ratings' users");
  require_same(comm, static_cast<std::uint64_t>(lp.items), "the ratings' items");
  require_same(comm, static_cast<std::uint64_t>(lp.nnz), "the number of training ratings");
  require_same(comm, static_cast<std::uint64_t>(lp.test_nnz), "the number of test ratings");
  require_same(comm, static_cast<std::uint64_t>(lp.given_test_nnz), "the number of given test ratings");
  if (lp.size > std::min(lp.users, lp.items))
    throw UsageError("distributed als: " + std::to_string(lp.size) + " ranks for " + std::to_string(lp.users) +
                     " users and " + std::to_string(lp.items) + " items; use at most min(users, items) ranks");
  const auto Rt = transpose(exec, R);
  lp.user_bounds = detail::nonempty_balanced_blocks(detail::row_counts(R), lp.size);
  lp.item_bounds = detail::nonempty_balanced_blocks(detail::row_counts(Rt), lp.size);
  const int p = lp.rank;
  const ordinal_t u0 = lp.user_bounds[p], u1 = lp.user_bounds[p + 1];
  lp.train = detail::csr_rows(exec, R, u0, u1);
  lp.train_t = detail::csr_rows(exec, Rt, lp.item_bounds[p], lp.item_bounds[p + 1]);
  if (lp.test_nnz > 0) lp.test = detail::csr_rows(exec, full.test, u0, u1);
  if (lp.given_test_nnz > 0) lp.given_test = detail::csr_rows(exec, full.given_test, u0, u1);
  return lp;
}

/// Modelled communication of one iteration per rank (file comment).
struct IterationVolume {
  double gather_words = 0;  ///< words of T received through the two all-gathers
  double collectives = 0;
  double bytes = 0;
  [[nodiscard]] double seconds(double alpha, double beta, int P) const {
    return P <= 1 ? 0.0 : collectives * alpha * std::ceil(std::log2(double(P))) + bytes * beta;
  }
};
inline IterationVolume iteration_volume(std::int64_t m, std::int64_t n, int f, int P, std::size_t value_bytes) {
  IterationVolume v;
  if (P <= 1) return v;
  v.gather_words = double(P - 1) / double(P) * double(m + n) * f;
  v.collectives = 2;
  v.bytes = v.gather_words * double(value_bytes);
  return v;
}

/// The single-rank State (this rank's rows of X and Y, iteration, seed,
/// history; `plan` is the rank's local plan) plus the gathered factors.
template <class T, class MemorySpace>
struct State : kfactor::als::State<T, MemorySpace> {
  using Base = kfactor::als::State<T, MemorySpace>;
  DenseMatrix<T, MemorySpace> X_all, Y_all;  ///< full replicas (alias X and Y on one rank)
  std::shared_ptr<distributed::detail::Collectives> coll;
  std::vector<ordinal_t> user_bounds, item_bounds;
  std::int64_t users = 0, items = 0, user_begin = 0, item_begin = 0;
  bool y_current = false;  ///< Y_all holds the gathered Y

  template <class F>
  void visit(F&& f) {
    Base::visit(std::forward<F>(f));
    y_current = false;  // Y may have been restored
  }
  [[nodiscard]] RowBlocks row_blocks() const {
    return {{"X", RowBlock{users, user_begin}}, {"Y", RowBlock{items, item_begin}}};
  }
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return coll->stats; }
};

template <class T, class MemorySpace>
struct Result {
  State<T, MemorySpace> state;
  Report report;
};

namespace detail {

template <class ExecutionSpace, class T, class Mem>
Kokkos::View<int*, Mem> counts_of(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& A, const char* label) {
  Kokkos::View<int*, Mem> c(label, A.num_rows());
  auto rm = A.row_map;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.num_rows()),
                       KOKKOS_LAMBDA(ordinal_t r) { c(r) = int(rm(r + 1) - rm(r)); });
  return c;
}

/// kfactor::als::prepare for the rank's rows: the two local traversal
/// structures (with the global column orderings under `reorder`), the
/// rank's counts and warm test entries. Collective.
template <class ExecutionSpace, class T, class Mem>
std::shared_ptr<const kfactor::als::Plan<T, Mem>> prepare(const ExecutionSpace& exec,
                                                          distributed::detail::Collectives& coll,
                                                          const LocalProblem<T, Mem>& lp, const Options& options) {
  namespace ad = kfactor::als::detail;
  using kfactor::als::Permutation;
  options.validate();
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = std::make_shared<kfactor::als::Plan<T, Mem>>();
  const int f = options.rank;
  plan->lambda = T(options.lambda);
  plan->weight_nnz = options.weighting == LambdaWeighting::nnz;
  plan->rank = f;
  plan->batch_rows = options.batch_rows;
  plan->max_batch_bytes = options.max_batch_bytes > 0 ? options.max_batch_bytes
                          : is_host_space_v<ExecutionSpace> ? std::size_t(32) << 20
                                                            : std::size_t(1) << 30;
  {
    auto vals = lp.train.values;
    double bad = 0;
    Kokkos::parallel_reduce("kfactor::als::check", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, lp.train.nnz()),
                            KOKKOS_LAMBDA(offset_t e, double& b) { b += Kokkos::isfinite(double(vals(e))) ? 0 : 1; },
                            bad);
    coll.allreduce_sum_host(&bad, 1);
    if (bad > 0) throw InputError(std::to_string(static_cast<std::int64_t>(bad)) + " ratings are not finite");
  }
  // Local work that may fail on one rank (allocations, the structures) is
  // agreed before the next collective.
  distributed::agree(coll.comm(), [&] {
    plan->user_count = counts_of(exec, lp.train, "kfactor::als::user_count");
    plan->item_count = counts_of(exec, lp.train_t, "kfactor::als::item_count");
  });
  // Global counts (host): the warm test entries need every item's count,
  // the reorderings every user's and item's.
  auto local_counts = [](const auto& A) {
    const auto c = distributed::detail::row_counts(A);
    return std::vector<std::int64_t>(c.begin(), c.end());
  };
  const auto user_counts = coll.allgather_host(local_counts(lp.train));
  const auto item_counts = coll.allgather_host(local_counts(lp.train_t));
  // One half-step's structure: rows ordered locally, columns in the global order.
  auto side = [&](const CsrMatrix<T, Mem>& A, const std::vector<std::int64_t>& other_counts, const std::string& name,
                  double& tune_seconds) {
    Permutation prow, pcol;
    CsrMatrix<T, Mem> Ar = A;
    if (options.reorder) {
      prow = kfactor::als::order_by_count(local_counts(A));
      pcol = kfactor::als::order_by_count(other_counts);
      Ar = kfactor::als::permute(exec, A, prow, pcol);
    }
    CsrMatrix<T, Kokkos::HostSpace> Ah;
    if (options.tiled) Ah = kfactor::copy_to<Kokkos::HostSpace>(Ar);
    int xb = options.xb, yb = options.yb;
    if (options.tiled && options.xb == 0) {
      const auto ta = std::chrono::steady_clock::now();
      std::string log;
      std::tie(xb, yb) = ad::autotune_tile(exec, Ah, f, options.lambda, options.autotune_sample_nnz, &log);
      tune_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count();
      plan->info["autotune_" + name] = log;
    }
    return ad::make_structure(exec, Ar, Ah, options.tiled, xb, yb, prow.new_to_old, pcol.new_to_old);
  };
  distributed::agree(coll.comm(), [&] {
    Kokkos::View<int*, Mem> ic("kfactor::als::item_count_all", item_counts.size());
    auto h = Kokkos::create_mirror_view(ic);
    for (std::size_t i = 0; i < item_counts.size(); ++i) h(i) = int(item_counts[i]);
    Kokkos::deep_copy(exec, ic, h);
    plan->test_warm = ad::warm_entries(exec, lp.test, plan->user_count, ic);
    plan->given_test_warm = ad::warm_entries(exec, lp.given_test, plan->user_count, ic);
    plan->users = side(lp.train, item_counts, "users", plan->autotune_seconds);
    plan->items = side(lp.train_t, user_counts, "items", plan->autotune_seconds);
  });
  ad::record_plan<ExecutionSpace>(plan->info, options, plan->users, plan->items);
  exec.fence();
  plan->preprocess_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

template <class ExecutionSpace, class T, class Mem>
void gather_y(const ExecutionSpace& exec, State<T, Mem>& s) {
  if (s.coll->size() > 1) s.coll->allgather_rows(exec, s.Y, s.Y_all, s.item_bounds);
  s.y_current = true;
}

}  // namespace detail

/// Collective: the local plan and the single-rank initial state (Y uniform
/// in [0, 1/sqrt(f)) with the same counters, X zero).
template <class ExecutionSpace, class T, class Mem>
State<T, Mem> init(const ExecutionSpace& exec, MPI_Comm comm, const LocalProblem<T, Mem>& lp, const Options& options) {
  State<T, Mem> s;
  s.coll = std::make_shared<distributed::detail::Collectives>(comm);
  if (s.coll->size() != lp.size) throw UsageError("distributed als: problem was split for another communicator size");
  s.plan = detail::prepare(exec, *s.coll, lp, options);
  const int f = options.rank;
  s.seed = options.seed;
  s.users = lp.users;
  s.items = lp.items;
  s.user_begin = lp.user_begin();
  s.item_begin = lp.item_begin();
  s.user_bounds = lp.user_bounds;
  s.item_bounds = lp.item_bounds;
  distributed::agree(comm, [&] {
    s.X = DenseMatrix<T, Mem>("kfactor::als::X", lp.local_users(), f);
    s.Y = DenseMatrix<T, Mem>("kfactor::als::Y", lp.local_items(), f);
    if (s.coll->size() > 1) {
      s.X_all = DenseMatrix<T, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::X_all"), lp.users, f);
      s.Y_all = DenseMatrix<T, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::Y_all"), lp.items, f);
    } else {
      s.X_all = s.X;
      s.Y_all = s.Y;
    }
  });
  {
    // fill_uniform's counters (global row * f + column), on this rank's rows.
    const CounterRng rng(s.seed, RngStream::factor_h);
    const T hi = T(1.0 / std::sqrt(double(f)));
    const std::uint64_t r0 = static_cast<std::uint64_t>(s.item_begin), nf = static_cast<std::uint64_t>(f);
    auto Y = s.Y;
    Kokkos::parallel_for(
        "kfactor::als::init_y", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Y.extent(0), Y.extent(1)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { Y(i, j) = rng.uniform<T>((r0 + i) * nf + j, T(0), hi); });
  }
  detail::gather_y(exec, s);
  exec.fence();
  return s;
}

/// One iteration (user half-step, gather X, item half-step, gather Y). Collective.
template <class ExecutionSpace, class T, class Mem>
void step(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, const Options& options, State<T, Mem>& s) {
  (void)lp;
  (void)options;
  const auto& p = *s.plan;
  if (!s.y_current) detail::gather_y(exec, s);
  // A half-step may fail on one rank (a Cholesky that is not positive
  // definite, an allocation): agreed, so every rank throws it.
  const MPI_Comm comm = s.coll->comm();
  distributed::agree(comm, [&] {
    kfactor::als::detail::half_step(exec, p.users, s.Y_all, s.X, p.rank, p.lambda, p.weight_nnz, p.batch_rows,
                                    p.max_batch_bytes, &p.workspace);
  });
  if (s.coll->size() > 1) s.coll->allgather_rows(exec, s.X, s.X_all, s.user_bounds);
  distributed::agree(comm, [&] {
    kfactor::als::detail::half_step(exec, p.items, s.X_all, s.Y, p.rank, p.lambda, p.weight_nnz, p.batch_rows,
                                    p.max_batch_bytes, &p.workspace);
  });
  detail::gather_y(exec, s);
}

/// The single-rank metrics (same names and order), from per-rank sums
/// all-reduced: identical on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
Metrics evaluate(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, State<T, Mem>& s) {
  namespace ad = kfactor::als::detail;
  if (!s.y_current) detail::gather_y(exec, s);
  const auto& p = *s.plan;
  // [sq, count] for train, test warm, given warm, test all, given all; then the regularizer.
  double v[11] = {0};
  auto acc = [&](const CsrMatrix<T, Mem>& M, int at) {
    if (M.nnz() == 0) return;
    const auto e = rating_errors(exec, M, s.X, s.Y_all);
    v[at] = e.rmse * e.rmse * double(e.count);
    v[at + 1] = double(e.count);
  };
  acc(lp.train, 0);
  if (lp.test_nnz > 0) {
    acc(p.test_warm, 2);
    acc(lp.test, 6);
  }
  if (lp.given_test_nnz > 0) {
    acc(p.given_test_warm, 4);
    acc(lp.given_test, 8);
  }
  v[10] = ad::weighted_norm2(exec, s.X, p.user_count, p.weight_nnz) +
          ad::weighted_norm2(exec, s.Y, p.item_count, p.weight_nnz);
  s.coll->allreduce_sum_host(v, 11);
  auto rmse = [&](int at) { return v[at + 1] > 0 ? std::sqrt(v[at] / v[at + 1]) : 0.0; };
  Metrics m;
  if (lp.test_nnz > 0) m.set("test_rmse", rmse(2));
  if (lp.given_test_nnz > 0) m.set("given_test_rmse", rmse(4));
  m.set("train_rmse", rmse(0));
  m.set("loss", v[0] + double(p.lambda) * v[10]);
  if (lp.test_nnz > 0) {
    m.set("test_rmse_all", rmse(6));
    m.set("test_cold_fraction", 1.0 - v[3] / double(lp.test_nnz));
  }
  if (lp.given_test_nnz > 0) {
    m.set("given_test_rmse_all", rmse(8));
    m.set("given_test_cold_fraction", 1.0 - v[5] / double(lp.given_test_nnz));
  }
  return m;
}

/// Continues `state` to options.max_iterations (collective; the observer runs
/// on every rank with identical metrics). Report as kfactor::als::solve's,
/// plus timings communication / compute and info mpi_ranks,
/// model_bytes_per_iteration.
template <class ExecutionSpace, class T, class Mem>
Result<T, Mem> solve(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, const Options& options,
                     State<T, Mem>& state, const Observer& observer = {}) {
  options.validate();
  if (!state.plan || !state.coll) throw UsageError("distributed als::solve: state has no plan (make it with init)");
  if (state.X.extent(1) != std::size_t(options.rank))
    throw UsageError("distributed als::solve: state rank differs from options.rank");
  const auto t0 = std::chrono::steady_clock::now();
  Result<T, Mem> res;
  auto& s = state;
  const std::string primary = lp.test_nnz > 0 ? "test_rmse" : lp.given_test_nnz > 0 ? "given_test_rmse" : "train_rmse";
  double loop_seconds = 0.0, step_seconds = 0.0;
  const int first_iteration = s.iteration;
  const auto before = s.coll->stats;
  double comm_in_steps = 0.0;
  StopRule rule{options.max_iterations, options.tolerance};
  const StopReason why = run_solver_loop(
      s.iteration, s.history, rule, primary, observer,
      [&] {
        const auto ts = std::chrono::steady_clock::now();
        const double c0 = s.coll->stats.seconds;
        step(exec, lp, options, s);
        exec.fence();
        step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
        comm_in_steps += s.coll->stats.seconds - c0;
      },
      [&] { return evaluate(exec, lp, s); }, [](const Metrics&) { return false; }, &loop_seconds);
  const auto after = s.coll->stats;
  Report& r = res.report;
  r.command = "als";
  r.backend = backend_name<ExecutionSpace>();
  r.precision = sizeof(T) == 4 ? "float" : "double";
  r.rows = lp.users;
  r.cols = lp.items;
  r.nnz = lp.nnz;
  r.rank = options.rank;
  r.iterations = s.iteration;
  r.stop_reason = to_string(why);
  r.metrics = s.history.size() > 0 ? s.history.last() : evaluate(exec, lp, s);
  r.history = s.history;
  r.timings.set("preprocess", s.plan->preprocess_seconds);
  r.timings.set("autotune", s.plan->autotune_seconds);
  r.timings.set("iterations", step_seconds);
  r.timings.set("communication", comm_in_steps);
  r.timings.set("compute", step_seconds - comm_in_steps);
  r.info = s.plan->info;
  r.info["mpi_ranks"] = std::to_string(lp.size);
  r.info["distribution"] = "rows of R and X, rows of R^T and Y per rank, nnz-balanced; X and Y all-gathered";
  const int its = s.iteration - first_iteration;
  if (its > 0) {
    r.timings.set("per_iteration", step_seconds / its);
    r.info["gflops"] = kfactor::als::detail::fmt(kfactor::als::flops_per_iteration(r.nnz, options.rank) * its /
                                                 step_seconds / 1e9);
    r.info["model_bytes_per_iteration"] = std::to_string(
        static_cast<std::int64_t>(iteration_volume(lp.users, lp.items, options.rank, lp.size, sizeof(T)).bytes));
    r.info["gathered_bytes_per_iteration"] = std::to_string((after.bytes_in - before.bytes_in) / its);
  }
  if (first_iteration > 0) r.info["continued_from"] = std::to_string(first_iteration);
  r.info["split"] = lp.test_nnz > 0 ? "fraction " + kfactor::als::detail::fmt(lp.test_fraction) + ", seed " +
                                          std::to_string(lp.split_seed)
                                    : "none";
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.state = s;
  return res;
}

/// Fresh distributed solve: init, then the loop above. Collective.
template <class ExecutionSpace, class T, class Mem>
Result<T, Mem> solve(const ExecutionSpace& exec, MPI_Comm comm, const LocalProblem<T, Mem>& lp, const Options& options,
                     const Observer& observer = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  auto state = init(exec, comm, lp, options);
  auto res = solve(exec, lp, options, state, observer);
  res.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

/// The full X (m x f) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_X(const ExecutionSpace& exec, State<T, Mem>& s) {
  return s.coll->allgather_rows(exec, s.X, s.user_bounds, "kfactor::als::X_full");
}
/// The full Y (n x f) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_Y(const ExecutionSpace& exec, State<T, Mem>& s) {
  return s.coll->allgather_rows(exec, s.Y, s.item_bounds, "kfactor::als::Y_full");
}

}  // namespace kfactor::distributed::als

// Explicit instantiations live in src/distributed/distributed.cpp.
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_ALS_ETI(EXTERN, S, T)                                                                   \
  EXTERN template LocalProblem<T, S::memory_space> distribute<S, T, S::memory_space>(                              \
      const S&, MPI_Comm, const kfactor::als::Problem<T, S::memory_space>&);                                       \
  EXTERN template State<T, S::memory_space> init<S, T, S::memory_space>(                                           \
      const S&, MPI_Comm, const LocalProblem<T, S::memory_space>&, const Options&);                                \
  EXTERN template Result<T, S::memory_space> solve<S, T, S::memory_space>(                                         \
      const S&, const LocalProblem<T, S::memory_space>&, const Options&, State<T, S::memory_space>&,               \
      const Observer&);                                                                                            \
  EXTERN template Result<T, S::memory_space> solve<S, T, S::memory_space>(                                         \
      const S&, MPI_Comm, const LocalProblem<T, S::memory_space>&, const Options&, const Observer&);               \
  EXTERN template DenseMatrix<T, S::memory_space> gather_X<S, T, S::memory_space>(const S&,                        \
                                                                                  State<T, S::memory_space>&);     \
  EXTERN template DenseMatrix<T, S::memory_space> gather_Y<S, T, S::memory_space>(const S&,                        \
                                                                                  State<T, S::memory_space>&);
#define KFACTOR_DISTRIBUTED_ALS_EXTERN(S, T) KFACTOR_DISTRIBUTED_ALS_ETI(extern, S, T)
#if !defined(KFACTOR_DISTRIBUTED_INSTANTIATING)
namespace kfactor::distributed::als {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_ALS_EXTERN)
}  // namespace kfactor::distributed::als
#endif
#undef KFACTOR_DISTRIBUTED_ALS_EXTERN

#endif  // KFACTOR_HAVE_MPI
