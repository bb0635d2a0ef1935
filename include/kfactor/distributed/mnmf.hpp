#pragma once
/// \file
/// Distributed manifold-regularized NMF (CUMNMF, kfactor/mnmf/mnmf.hpp) over
/// MPI (header-only; needs a build with KFACTOR_HAVE_MPI). The update math
/// is not repeated here: a step is kfactor::mnmf::detail::half_step for W
/// then for H, evaluate() is mnmf::detail::evaluate_on and resume() is
/// mnmf::detail::resume_on, the single-process ones, called with
/// detail::MpiPolicy instead of mnmf::detail::SingleProcess. The solver
/// contract is the same (core/solver.hpp): make_problem(exec, comm, ...) ->
/// Problem (which carries the communicator), init, step, evaluate, resume
/// -> Report and solve -> kfactor::Result<State>, all collective.
///
/// **Layout.** Users (rows of R, m) and items (columns of R, n) are split
/// into P contiguous blocks balanced by work (ratings plus graph edges per
/// row, kfactor::distributed::balanced_column_blocks), moved so that no
/// block is empty (P <= min(m, n) is required). Rank p holds (ids global)
///   - rows [u_p, u_{p+1}) of R, of the user graph P, of the held-out
///     ratings, and of W;
///   - rows [i_p, i_{p+1}) of R^T, of the item graph Pb, and of H;
/// plus full replicas W_all (m x r) and H_all (n x r): the multiplicative
/// update of a row reads the factor rows of its ratings' items (users) and
/// of its graph neighbours, which for kNN graphs and realistic blocks are
/// nearly all rows, so the factors are all-gathered rather than exchanged
/// as halos.
///
/// **One epoch** (the single-process order):
/// ```
///   W_p = sweep(users_p; W_all, H_all)   local (Jacobi: reads only old values)
///   W_all = all-gather(W_p)              (m - m_p) r words in
///   H_p = sweep(items_p; H_all, W_all)   local, with the new W
///   H_all = all-gather(H_p)              (n - n_p) r words in
/// ```
/// **Communication per epoch and rank:** (P-1)/P (m + n) r words of T
/// (averaged over ranks) in 2 all-gathers; evaluate() adds one all-reduction
/// of 8 doubles (the objective's sums, squared and absolute errors and
/// counts).
///
/// **Equality with the single-process solver.** A row's update sums over its
/// ratings and its graph edges in the stored order, with the team shape of
/// its nonzero bin, wherever the row lives (mnmf/detail/sweep.hpp); the
/// rank's rows keep the single-process order, and the initial factors are
/// drawn whole on every rank from the counter RNG. So W and H equal
/// kfactor::mnmf's bit for bit on any number of ranks (tested for P = 1..4,
/// euclid and kl, float and double). The metrics are sums of per-rank
/// partial sums (RMSE and MAE through the squared and absolute sums, which
/// the per-rank RMSE and MAE give back to rounding), accumulated in double
/// for float factors too: equal to the single-process ones within 1e-12
/// relative (tests/distributed checks it for P = 2..4 in double and float;
/// measured: at most 1.5e-15), bit for bit on one rank. Only a tolerance
/// stop rule can see that rounding, at an iteration where the objective's
/// relative change sits on the tolerance.
///
/// **Checkpoints.** State::visit lists the rank's rows of W and H under the
/// single-process names; with State::row_blocks(),
/// kfactor::save_checkpoint(comm, ...) writes ONE file in the single-process
/// layout, which a run on any number of ranks, or a single-process mnmf run,
/// restarts from (load_checkpoint(comm, ...) calls State::reset_workspace(),
/// which marks the replicas stale: the next sweep gathers them).
///
/// make_problem checks and prepares the whole input on every rank (as
/// kfactor::mnmf::make_problem does, validation of the graphs included),
/// then keeps the rank's rows; the kNN graphs are built by the caller.
///
/// **Memory per rank:** the rank's ratings twice (R and R^T rows), its
/// graph rows, (m + n) r (replicas) + 2 (m_p + n_p) r (factors and sweep
/// targets).

#include <kfactor/config.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/blocks.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::distributed::mnmf {

using kfactor::mnmf::Objective;
using kfactor::mnmf::Options;

/// The data of one distributed run: this rank's rows (see the file comment)
/// and the communicator.
template <class T, class MemorySpace>
struct Problem {
  /// Rows [user_begin(), ..) of R, of the user graph and of the test
  /// ratings; rows [item_begin(), ..) of R^T and of the item graph; their
  /// degrees and row bins; the mean rating of the whole R. Ids are global.
  kfactor::mnmf::Problem<T, MemorySpace> local;
  std::vector<ordinal_t> user_bounds, item_bounds;  ///< P + 1 boundaries each
  std::int64_t users = 0, items = 0, ratings = 0;   ///< the whole R: m, n, stored entries
  std::int64_t user_edges = 0, item_edges = 0;      ///< stored entries of the whole graphs
  bool has_test = false;                            ///< the whole problem has held-out ratings
  int rank = 0, size = 1;
  /// The communicator's collectives (and their statistics), shared with
  /// every State made from this problem.
  std::shared_ptr<distributed::detail::Collectives> coll;
  [[nodiscard]] std::int64_t user_begin() const { return user_bounds[rank]; }
  [[nodiscard]] std::int64_t item_begin() const { return item_bounds[rank]; }
  [[nodiscard]] std::int64_t local_users() const { return user_bounds[rank + 1] - user_bounds[rank]; }
  [[nodiscard]] std::int64_t local_items() const { return item_bounds[rank + 1] - item_bounds[rank]; }
};

namespace detail {

using kfactor::mnmf::detail::Factor;

/// The MPI communication policy of kfactor::mnmf::detail's half_step and
/// evaluate_on (see mnmf::detail::SingleProcess for the contract): whole()
/// returns the replica, all-gathered again only when it is stale.
template <class T, class MemorySpace>
struct MpiPolicy {
  std::shared_ptr<distributed::detail::Collectives> coll;
  DenseMatrix<T, MemorySpace> W_all, H_all;  ///< replicas (P > 1)
  std::vector<ordinal_t> user_bounds, item_bounds;
  /// The replica no longer holds the ranks' rows (after a checkpoint load).
  mutable bool stale_w = true, stale_h = true;

  [[nodiscard]] bool one_process() const { return coll->size() == 1; }
  template <class ExecutionSpace>
  DenseMatrix<T, MemorySpace> whole(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& local,
                                    Factor which) const {
    if (one_process()) return local;
    const bool w = which == Factor::w;
    if (w ? stale_w : stale_h) updated(exec, local, which);
    return w ? W_all : H_all;
  }
  template <class ExecutionSpace>
  void updated(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& local, Factor which) const {
    if (one_process()) return;
    const bool w = which == Factor::w;
    coll->allgather_rows(exec, local, w ? W_all : H_all, w ? user_bounds : item_bounds);
    (w ? stale_w : stale_h) = false;
  }
  [[nodiscard]] ordinal_t first_row(Factor which) const {
    return (which == Factor::w ? user_bounds : item_bounds)[coll->rank()];
  }
  void sum(double* values, int n) const { coll->allreduce_sum_host(values, n); }
};

}  // namespace detail

/// The single-process State (this rank's rows of W and H; iteration, seed,
/// history; visit() lists them under the single-process names) plus the
/// partition and the communicator.
template <class T, class MemorySpace>
struct State : kfactor::mnmf::State<T, MemorySpace> {
  std::shared_ptr<detail::MpiPolicy<T, MemorySpace>> comm;
  std::int64_t users = 0, items = 0, user_begin = 0, item_begin = 0;

  /// For kfactor::save_checkpoint / load_checkpoint(comm, ...): W and H are
  /// row-partitioned, the rest replicated.
  [[nodiscard]] RowBlocks row_blocks() const {
    return {{"W", RowBlock{users, user_begin}}, {"H", RowBlock{items, item_begin}}};
  }
  /// Drops the sweep targets and marks the replicas stale (the factors were
  /// replaced, e.g. by load_checkpoint).
  void reset_workspace() {
    kfactor::mnmf::State<T, MemorySpace>::reset_workspace();
    comm->stale_w = comm->stale_h = true;
  }
  /// Communication so far (seconds, calls, bytes) on this rank.
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return comm->coll->stats; }
};

/// Collective. Every rank passes the same whole inputs (InputError on every
/// rank when their fingerprints differ), checked as by
/// kfactor::mnmf::make_problem on every rank, and keeps its rows.
/// UsageError when P > min(users, items).
template <class ExecutionSpace, class T, class MemorySpace>
Problem<T, MemorySpace> make_problem(const ExecutionSpace& exec, MPI_Comm comm,
                                     const CsrMatrix<T, MemorySpace>& ratings,
                                     const CsrMatrix<T, MemorySpace>& user_graph = {},
                                     const CsrMatrix<T, MemorySpace>& item_graph = {},
                                     const CsrMatrix<T, MemorySpace>& test = {}) {
  using distributed::detail::csr_rows;
  Problem<T, MemorySpace> b;
  b.coll = std::make_shared<distributed::detail::Collectives>(comm);
  b.rank = b.coll->rank();
  b.size = b.coll->size();
  require_same(comm, fingerprint(exec, ratings).checksum, "the checksum of the ratings");
  require_same(comm, fingerprint(exec, user_graph).checksum, "the checksum of the user graph");
  require_same(comm, fingerprint(exec, item_graph).checksum, "the checksum of the item graph");
  require_same(comm, fingerprint(exec, test).checksum, "the checksum of the test ratings");
  const auto whole = distributed::agree(comm, [&] {
    auto p = kfactor::mnmf::make_problem(exec, ratings, user_graph, item_graph, test);
    if (b.size > std::min<std::int64_t>(p.rows(), p.cols()))
      throw UsageError("distributed mnmf: " + std::to_string(b.size) + " ranks for " + std::to_string(p.rows()) +
                       " users and " + std::to_string(p.cols()) + " items; use at most min(users, items) ranks");
    return p;
  });
  b.users = whole.rows();
  b.items = whole.cols();
  b.ratings = std::int64_t(whole.ratings.nnz());
  b.user_edges = std::int64_t(whole.user_graph.nnz());
  b.item_edges = std::int64_t(whole.item_graph.nnz());
  b.has_test = whole.has_test();
  // A row's work: its ratings and its graph edges.
  auto work = [](const CsrMatrix<T, MemorySpace>& A, const CsrMatrix<T, MemorySpace>& G) {
    auto counts = distributed::detail::row_counts(A);
    if (G.row_map.extent(0) > 0) {
      const auto g = distributed::detail::row_counts(G);
      for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += g[i];
    }
    return counts;
  };
  b.user_bounds = distributed::detail::nonempty_balanced_blocks(work(whole.ratings, whole.user_graph), b.size);
  b.item_bounds = distributed::detail::nonempty_balanced_blocks(work(whole.ratings_t, whole.item_graph), b.size);
  const ordinal_t u0 = b.user_bounds[b.rank], u1 = b.user_bounds[b.rank + 1];
  const ordinal_t i0 = b.item_bounds[b.rank], i1 = b.item_bounds[b.rank + 1];
  auto& p = b.local;
  distributed::agree(comm, [&] {
    p.mean_rating = whole.mean_rating;
    p.ratings = csr_rows(exec, whole.ratings, u0, u1);
    p.ratings_t = csr_rows(exec, whole.ratings_t, i0, i1);
    if (whole.user_graph.row_map.extent(0) > 0) p.user_graph = csr_rows(exec, whole.user_graph, u0, u1);
    if (whole.item_graph.row_map.extent(0) > 0) p.item_graph = csr_rows(exec, whole.item_graph, i0, i1);
    if (b.has_test) p.test = csr_rows(exec, whole.test, u0, u1);
    auto slice = [&](const Kokkos::View<T*, MemorySpace>& d, ordinal_t r0, ordinal_t r1) {
      Kokkos::View<T*, MemorySpace> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::mnmf::degree"),
                                        r1 - r0);
      Kokkos::deep_copy(exec, out, Kokkos::subview(d, Kokkos::make_pair(r0, r1)));
      return out;
    };
    p.user_degree = slice(whole.user_degree, u0, u1);
    p.item_degree = slice(whole.item_degree, i0, i1);
    p.user_bins = kfactor::mnmf::detail::make_row_bins(exec, p.ratings);
    p.item_bins = kfactor::mnmf::detail::make_row_bins(exec, p.ratings_t);
    exec.fence();
  });
  return b;
}

/// Collective: the initial factors of kfactor::mnmf::init (the same values;
/// this rank's rows). UsageError on every rank for invalid options or a
/// rank above min(users, items); allocation failures are agreed.
template <class ExecutionSpace, class T, class MemorySpace>
State<T, MemorySpace> init(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options) {
  using Dense = DenseMatrix<T, MemorySpace>;
  distributed::agree(problem.coll->comm(), [&] {
    options.validate();
    kfactor::mnmf::detail::check_rank_fits(problem.users, problem.items, options);
  });
  const int r = options.rank;
  State<T, MemorySpace> s;
  s.seed = options.seed;
  s.users = problem.users;
  s.items = problem.items;
  s.user_begin = problem.user_begin();
  s.item_begin = problem.item_begin();
  s.comm = std::make_shared<detail::MpiPolicy<T, MemorySpace>>();
  auto& c = *s.comm;
  c.coll = problem.coll;
  c.user_bounds = problem.user_bounds;
  c.item_bounds = problem.item_bounds;
  distributed::agree(problem.coll->comm(), [&] {
    s.W = Dense(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::W"), problem.local_users(), r);
    s.H = Dense(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::H"), problem.local_items(), r);
    if (problem.size > 1) {
      c.W_all = Dense(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::W_all"), problem.users, r);
      c.H_all = Dense(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::H_all"), problem.items, r);
    }
  });
  if (problem.size == 1) {
    kfactor::mnmf::detail::initial_factors(exec, problem.local.mean_rating, options, s.W, s.H);
  } else {
    // Drawn whole (the counter RNG keys them by global row), then each rank
    // keeps its rows: the replicas start current.
    kfactor::mnmf::detail::initial_factors(exec, problem.local.mean_rating, options, c.W_all, c.H_all);
    Kokkos::deep_copy(
        exec, s.W,
        Kokkos::subview(c.W_all, Kokkos::make_pair(s.user_begin, s.user_begin + problem.local_users()), Kokkos::ALL));
    Kokkos::deep_copy(
        exec, s.H,
        Kokkos::subview(c.H_all, Kokkos::make_pair(s.item_begin, s.item_begin + problem.local_items()), Kokkos::ALL));
    c.stale_w = c.stale_h = false;
  }
  exec.fence();
  return s;
}

/// One epoch: kfactor::mnmf's W and H sweeps on this rank's rows, each
/// followed by the all-gather of the new rows. Collective.
template <class ExecutionSpace, class T, class MemorySpace>
void step(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
          State<T, MemorySpace>& state) {
  namespace md = kfactor::mnmf::detail;
  md::check_graphs(problem.local, options);
  distributed::agree(problem.coll->comm(), [&] { md::ensure_workspace(exec, state); });
  md::half_step(exec, problem.local, options, state, md::Factor::w, *state.comm);
  md::half_step(exec, problem.local, options, state, md::Factor::h, *state.comm);
}

/// kfactor::mnmf's metrics of the whole problem, the same on every rank.
/// Collective.
template <class ExecutionSpace, class T, class MemorySpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
                 const State<T, MemorySpace>& state) {
  return kfactor::mnmf::detail::evaluate_on(exec, problem.local, options, state, *state.comm, problem.has_test);
}

/// Continues `state` through kfactor::mnmf's loop (collective; the observer
/// runs on every rank with the same metrics, so a checkpoint observer may
/// save collectively; print on one rank only). Report as kfactor::mnmf's,
/// plus timings communication / compute / per_iteration and info mpi_ranks,
/// distribution, comm_engine (the path collectives took:
/// detail::Collectives::engine_name), gathered_bytes_per_iteration.
template <class ExecutionSpace, class T, class MemorySpace>
Report resume(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem, const Options& options,
              State<T, MemorySpace>& state, const Observer& observer = {}) {
  namespace md = kfactor::mnmf::detail;
  distributed::agree(problem.coll->comm(), [&] {
    options.validate();
    md::check_rank_fits(problem.users, problem.items, options);
    md::check_graphs(problem.local, options);
    if (std::int64_t(state.W.extent(0)) != problem.local_users() ||
        std::int64_t(state.H.extent(0)) != problem.local_items() || state.W.extent(1) != state.H.extent(1))
      throw UsageError("mnmf: state factors do not fit the problem");
  });
  const auto before = problem.coll->stats;
  const int first = state.iteration;
  Report r = md::resume_on(
      options, state, observer,
      md::report_header<ExecutionSpace, T>(options, problem.users, problem.items, problem.ratings, problem.user_edges,
                                           problem.item_edges),
      [&] { step(exec, problem, options, state); }, [&] { return evaluate(exec, problem, options, state); });
  const auto after = problem.coll->stats;
  const double comm_s = after.seconds - before.seconds;
  r.timings.set("communication", comm_s);
  r.timings.set("compute", r.seconds - comm_s);
  r.info["mpi_ranks"] = std::to_string(problem.size);
  r.info["distribution"] = "1D: users (rows of R, W) and items (rows of R^T, H) per rank, work-balanced";
  r.info["comm_engine"] = problem.coll->template engine_name<ExecutionSpace, MemorySpace>();
  const int its = state.iteration - first;
  if (its > 0) {
    r.timings.set("per_iteration", r.seconds / its);
    r.info["gathered_bytes_per_iteration"] = std::to_string((after.bytes_in - before.bytes_in) / its);
  }
  return r;
}

/// init then resume; the report's timings hold "init". Collective.
template <class ExecutionSpace, class T, class MemorySpace>
Result<State<T, MemorySpace>> solve(const ExecutionSpace& exec, const Problem<T, MemorySpace>& problem,
                                    const Options& options, const Observer& observer = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<State<T, MemorySpace>> res{init(exec, problem, options), {}};
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.report = resume(exec, problem, options, res.state, observer);
  res.report.timings.set("init", init_seconds);
  return res;
}

/// The whole W (users x r) on every rank. Collective.
template <class ExecutionSpace, class T, class MemorySpace>
DenseMatrix<T, MemorySpace> gather_W(const ExecutionSpace& exec, const State<T, MemorySpace>& state) {
  return state.comm->coll->allgather_rows(exec, state.W, state.comm->user_bounds, "kfactor::mnmf::W_whole");
}
/// The whole H (items x r) on every rank. Collective.
template <class ExecutionSpace, class T, class MemorySpace>
DenseMatrix<T, MemorySpace> gather_H(const ExecutionSpace& exec, const State<T, MemorySpace>& state) {
  return state.comm->coll->allgather_rows(exec, state.H, state.comm->item_bounds, "kfactor::mnmf::H_whole");
}

}  // namespace kfactor::distributed::mnmf

// Explicit instantiations live in src/distributed/mnmf.cpp.
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_MNMF_ETI(EXTERN, S, T)                                                                    \
  EXTERN template Problem<T, S::memory_space> make_problem<S, T, S::memory_space>(                                    \
      const S&, MPI_Comm, const CsrMatrix<T, S::memory_space>&, const CsrMatrix<T, S::memory_space>&,                 \
      const CsrMatrix<T, S::memory_space>&, const CsrMatrix<T, S::memory_space>&);                                    \
  EXTERN template State<T, S::memory_space> init<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&, \
                                                                        const Options&);                              \
  EXTERN template void step<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&, const Options&,      \
                                                   State<T, S::memory_space>&);                                       \
  EXTERN template Metrics evaluate<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&,               \
                                                          const Options&, const State<T, S::memory_space>&);          \
  EXTERN template Report resume<S, T, S::memory_space>(const S&, const Problem<T, S::memory_space>&, const Options&,  \
                                                       State<T, S::memory_space>&, const Observer&);                  \
  EXTERN template Result<State<T, S::memory_space>> solve<S, T, S::memory_space>(                                     \
      const S&, const Problem<T, S::memory_space>&, const Options&, const Observer&);                                 \
  EXTERN template DenseMatrix<T, S::memory_space> gather_W<S, T, S::memory_space>(const S&,                           \
                                                                                  const State<T, S::memory_space>&);  \
  EXTERN template DenseMatrix<T, S::memory_space> gather_H<S, T, S::memory_space>(const S&,                           \
                                                                                  const State<T, S::memory_space>&);
#define KFACTOR_DISTRIBUTED_MNMF_EXTERN(S, T) KFACTOR_DISTRIBUTED_MNMF_ETI(extern, S, T)
#if !defined(KFACTOR_DISTRIBUTED_INSTANTIATING)
namespace kfactor::distributed::mnmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_MNMF_EXTERN)
}  // namespace kfactor::distributed::mnmf
#endif
#undef KFACTOR_DISTRIBUTED_MNMF_EXTERN

#endif  // KFACTOR_HAVE_MPI
