#pragma once
/// \file
/// Distributed Boolean matrix factorization (CuBin, kfactor/bmf/bmf.hpp)
/// over MPI (header-only; needs a build with KFACTOR_HAVE_MPI). Nothing of
/// the search is repeated here: init(), step() and resume() are
/// kfactor::bmf::detail's init_on, step_on and resume_on, the single-process
/// ones, called with detail::MpiPolicy instead of bmf::detail::SingleProcess.
/// The solver contract is the same (core/solver.hpp): make_problem(exec,
/// comm, ...) -> Problem (which carries the communicator), init, step,
/// evaluate, resume -> Report and solve -> kfactor::Result<State>, all
/// collective.
///
/// **Layout.** The rows of C (m x n) and of A (m x k) are split into P
/// contiguous blocks: equal blocks when C is stored as dense bits (every row
/// costs n / 64 words), blocks balanced by ones otherwise
/// (kfactor::distributed::balanced_column_blocks on the row counts), moved
/// so that no block is empty (P <= m is required). Rank p holds rows
/// [r_p, r_{p+1}) of C in the single-process storage (Problem::local: dense
/// bits of its rows and of its part of every column, or the CSR of its ones
/// and its transpose), the same rows of A, and all of B (Bt, n lines of k
/// bits: n k / 8 bytes, replicated). The storage choice (dense or sparse) is
/// made once for all ranks, from the largest equal block.
///
/// **One iteration** (the single-process order, Options::order):
/// ```
///   B's window of min(L, n) columns (the same on every rank):
///     partial (dFP, dFN) of each proposal over the rank's rows of C   local
///     all-reduce of the 2 min(L, n) int64 counts                       collective
///     accept / reject each proposal from the sums, flip it in Bt      same on every rank
///   A's window of min(L, m) rows:
///     the rank's rows of the window, decided as on one process        local
///     all-reduce of the accepted (dFP, dFN, count), 3 int64            collective
/// ```
/// **Communication per iteration and rank:** two all-reductions, of
/// 8 (2 min(L, n) + 3) bytes of payload; no factor moves. init() with
/// Init::cover or Init::sample_rows all-gathers the ones of C once (the
/// cover is a host pass over the whole C, computed on every rank alike);
/// the other starts draw each rank's bits from the counter RNG.
///
/// **Equality with the single-process solver.** Every proposal and every
/// Metropolis draw is keyed by (seed, iteration, phase, global line), every
/// delta is an exact integer (its sum over ranks does not depend on their
/// order), and the acceptance of a column of B is decided from the summed
/// delta identically on every rank. So for one seed the factors, the error
/// counts, the history and the stop are the same, bit for bit, on any number
/// of ranks and on one process (tests/distributed checks P = 1..4, greedy
/// and Metropolis, dense and sparse C).
///
/// **Checkpoints.** State::visit lists the rank's rows of A (and of best_A)
/// under the single-process names; with State::row_blocks(),
/// kfactor::save_checkpoint(comm, ...) writes ONE file in the single-process
/// layout, which a run on any number of ranks, or a single-process bmf run,
/// restarts from.

#include <kfactor/bmf/bmf.hpp>
#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/partition.hpp>

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::distributed::bmf {

using kfactor::bmf::Options;

/// The data of one distributed run: this rank's rows of C and the
/// communicator.
template <class MemorySpace>
struct Problem {
  kfactor::bmf::Problem<MemorySpace> local;  ///< rows [layout.row_begin, + local.rows) of C, single-process storage
  kfactor::bmf::detail::Layout layout;       ///< the whole C (shape, ones) and this rank's first row
  std::vector<ordinal_t> row_bounds;         ///< P + 1 boundaries of the row blocks
  int rank = 0, size = 1;
  /// The communicator's collectives (and their statistics), shared with
  /// every State made from this problem.
  std::shared_ptr<distributed::detail::Collectives> coll;
  [[nodiscard]] std::int64_t rows() const { return layout.rows; }
  [[nodiscard]] std::int64_t cols() const { return layout.cols; }
  [[nodiscard]] std::int64_t local_rows() const { return local.rows; }
};

namespace detail {

/// The MPI communication policy of kfactor::bmf::detail's init_on and
/// step_on (see bmf::detail::SingleProcess for the contract).
template <class MemorySpace>
struct MpiPolicy {
  std::shared_ptr<distributed::detail::Collectives> coll;
  kfactor::bmf::detail::Layout layout;
  std::vector<ordinal_t> row_bounds;
  /// B's proposals' partial deltas and the A phase's accepted counts
  /// (allocated at their first use, then reused).
  mutable Kokkos::View<std::int64_t*, MemorySpace> deltas, row_totals;

  [[nodiscard]] bool one_process() const { return coll->size() == 1; }
  template <class F>
  void agree(F&& f) const {
    distributed::agree(coll->comm(), std::forward<F>(f));
  }
  void sum(std::int64_t* values, int n) const { coll->allreduce_sum_host(values, n); }

  /// The ones of the whole C: the ranks' row counts and column ids,
  /// all-gathered in rank order (= row order).
  kfactor::bmf::detail::HostRows whole_c(const kfactor::bmf::Problem<MemorySpace>& local) const {
    const auto map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, local.by_row.row_map);
    const auto idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, local.by_row.entries);
    if (one_process()) return {map, idx};
    agree([&] {
      if (layout.ones > std::uint64_t(INT_MAX))
        throw RuntimeFailure("distributed bmf: gathering the " + std::to_string(layout.ones) +
                             " ones of C for this start exceeds MPI's int counts; use --init dost, density100 or "
                             "density");
    });
    std::vector<std::int64_t> counts(std::size_t(local.rows));
    for (std::int64_t i = 0; i < local.rows; ++i) counts[i] = std::int64_t(map(i + 1) - map(i));
    const std::vector<ordinal_t> mine(idx.data(), idx.data() + idx.extent(0));
    const auto all_counts = coll->allgather_host(counts);
    const auto all_idx = coll->allgather_host(mine);
    kfactor::bmf::detail::HostRows c;
    c.map = Kokkos::View<offset_t*, Kokkos::HostSpace>("bmf::whole_c_map", all_counts.size() + 1);
    c.idx = Kokkos::View<ordinal_t*, Kokkos::HostSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bmf::whole_c"),
                                                        all_idx.size());
    for (std::size_t i = 0; i < all_counts.size(); ++i) c.map(i + 1) = c.map(i) + offset_t(all_counts[i]);
    for (std::size_t e = 0; e < all_idx.size(); ++e) c.idx(e) = all_idx[e];
    return c;
  }

  /// B's columns: every rank's partial deltas, summed, then the same
  /// decisions on every rank.
  template <class ExecutionSpace>
  void column_phase(const ExecutionSpace& exec, kfactor::bmf::detail::PhaseArgs<MemorySpace> p) const {
    if (one_process()) {
      kfactor::bmf::detail::run_phase(exec, p);
      return;
    }
    if (deltas.extent(0) != std::size_t(2 * p.count))
      agree([&] { deltas = Kokkos::View<std::int64_t*, MemorySpace>("bmf::proposal_deltas", 2 * p.count); });
    else
      Kokkos::deep_copy(exec, deltas, std::int64_t(0));  // empty proposals store nothing
    p.deltas = deltas;
    kfactor::bmf::detail::run_phase(exec, p);
    coll->allreduce_sum(exec, deltas);
    kfactor::bmf::detail::decide_phase(exec, p);
  }

  /// A's rows: decided by their rank; the accepted changes' counts are
  /// summed into every rank's totals.
  template <class ExecutionSpace>
  void row_phase(const ExecutionSpace& exec, kfactor::bmf::detail::PhaseArgs<MemorySpace> p) const {
    if (one_process()) {
      kfactor::bmf::detail::run_phase(exec, p);
      return;
    }
    if (row_totals.extent(0) != 3)
      agree([&] { row_totals = Kokkos::View<std::int64_t*, MemorySpace>("bmf::row_totals", 3); });
    else
      Kokkos::deep_copy(exec, row_totals, std::int64_t(0));
    const auto totals = p.totals;
    p.totals = row_totals;
    kfactor::bmf::detail::run_phase(exec, p);
    coll->allreduce_sum(exec, row_totals);
    kfactor::bmf::detail::add_totals(exec, totals, row_totals);
  }
};

}  // namespace detail

/// The single-process State (this rank's rows of A and best_A; Bt, counts,
/// temperature and history replicated; visit() lists them under the
/// single-process names; rows, cols and ones are the whole C's) plus the
/// communicator.
template <class MemorySpace>
struct State : kfactor::bmf::State<MemorySpace> {
  std::shared_ptr<detail::MpiPolicy<MemorySpace>> comm;
  std::int64_t row_begin = 0;  ///< A's line 0 in the whole A

  /// For kfactor::save_checkpoint / load_checkpoint(comm, ...): A and
  /// best_A are row-partitioned, the rest replicated.
  [[nodiscard]] RowBlocks row_blocks() const {
    const RowBlock block{this->rows, row_begin};
    return {{"A", block}, {"best_A", block}};
  }
  /// Communication so far (seconds, calls, bytes) on this rank.
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return comm->coll->stats; }
};

/// Collective. Every rank passes the same whole C (the 0-based positions of
/// its ones; InputError on every rank when the shapes or counts differ) and
/// keeps its rows; the input is checked as by kfactor::bmf::make_problem
/// (InputError for positions outside the shape and for a C without ones,
/// UsageError for invalid options and a rank above min(m, n)), and
/// UsageError when P > m.
template <class ExecutionSpace>
Problem<typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, MPI_Comm comm,
                                                            std::int64_t rows, std::int64_t cols,
                                                            const std::vector<ordinal_t>& one_rows,
                                                            const std::vector<ordinal_t>& one_cols,
                                                            const Options& options) {
  namespace bd = kfactor::bmf::detail;
  Problem<typename ExecutionSpace::memory_space> b;
  b.coll = std::make_shared<distributed::detail::Collectives>(comm);
  b.rank = b.coll->rank();
  b.size = b.coll->size();
  require_same(comm, static_cast<std::uint64_t>(rows), "the input's rows");
  require_same(comm, static_cast<std::uint64_t>(cols), "the input's columns");
  require_same(comm, static_cast<std::uint64_t>(one_rows.size()), "the input's ones");
  // Every rank indexes the whole input (the same checks, the same errors,
  // the exact row counts), then keeps its rows.
  const auto whole = distributed::agree(comm, [&] {
    options.validate();
    auto h = bd::index_ones(rows, cols, one_rows, one_cols);
    bd::check_rank_fits(rows, cols, options);
    if (b.size > rows)
      throw UsageError("distributed bmf: " + std::to_string(b.size) + " ranks for a C of " + std::to_string(rows) +
                       " rows; use at most " + std::to_string(rows) + " ranks");
    return h;
  });
  const std::int64_t largest = (rows + b.size - 1) / b.size;
  const bool dense = kfactor::bmf::use_dense(options.dense_c, largest, cols, options.dense_limit_bytes);
  std::vector<offset_t> weight(std::size_t(rows), 1);
  if (!dense)
    for (std::int64_t i = 0; i < rows; ++i) weight[i] = whole.row_map[i + 1] - whole.row_map[i];
  b.row_bounds = distributed::detail::nonempty_balanced_blocks(weight, b.size);
  const std::int64_t r0 = b.row_bounds[b.rank], r1 = b.row_bounds[b.rank + 1];
  b.layout = {rows, cols, std::uint64_t(whole.row_idx.size()), r0};
  b.local = distributed::agree(comm, [&] {
    std::vector<ordinal_t> lr, lc;
    for (std::int64_t i = r0; i < r1; ++i)
      for (offset_t e = whole.row_map[i]; e < whole.row_map[i + 1]; ++e) {
        lr.push_back(ordinal_t(i - r0));
        lc.push_back(whole.row_idx[e]);
      }
    return bd::store_ones(exec, bd::host_ones(r1 - r0, cols, lr, lc), r1 - r0, cols, dense);
  });
  return b;
}

/// The same from host triplets: entry (i, j) is a one when its value is
/// nonzero (a pattern matrix, with empty values, is all ones). Collective.
template <class ExecutionSpace, class T>
Problem<typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, MPI_Comm comm,
                                                            const CooMatrix<T>& coo, const Options& options) {
  std::vector<ordinal_t> r, c;
  for (std::size_t e = 0; e < coo.nnz(); ++e)
    if (coo.values.empty() || coo.values[e] != T(0)) {
      r.push_back(coo.rows[e]);
      c.push_back(coo.cols[e]);
    }
  return make_problem(exec, comm, coo.num_rows, coo.num_cols, r, c, options);
}

/// Collective: the initial factors of kfactor::bmf::init (the same bits, this
/// rank's rows of A) and their exact error. UsageError on every rank for
/// invalid options or a rank above min(m, n); allocation failures are
/// agreed.
template <class ExecutionSpace>
State<typename ExecutionSpace::memory_space> init(const ExecutionSpace& exec,
                                                  const Problem<typename ExecutionSpace::memory_space>& problem,
                                                  const Options& options) {
  using Mem = typename ExecutionSpace::memory_space;
  auto policy = std::make_shared<detail::MpiPolicy<Mem>>();
  policy->coll = problem.coll;
  policy->layout = problem.layout;
  policy->row_bounds = problem.row_bounds;
  State<Mem> s;
  static_cast<kfactor::bmf::State<Mem>&>(s) = distributed::agree(
      problem.coll->comm(), [&] { return kfactor::bmf::detail::init_on(exec, problem.local, options, *policy); });
  s.comm = std::move(policy);
  s.row_begin = problem.layout.row_begin;
  return s;
}

/// One iteration: kfactor::bmf's step on this rank's rows. Collective.
template <class ExecutionSpace>
void step(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
          const Options& options, State<typename ExecutionSpace::memory_space>& state) {
  kfactor::bmf::detail::step_on(exec, problem.local, options, state, *state.comm);
}

/// kfactor::bmf's metrics (from the counts of the whole C, the same on
/// every rank). No communication.
template <class ExecutionSpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                 const Options& options, const State<typename ExecutionSpace::memory_space>& state) {
  return kfactor::bmf::evaluate(exec, problem.local, options, state);
}

/// Continues `state` through kfactor::bmf's loop (collective; the observer
/// runs on every rank with the same metrics, so a checkpoint observer may
/// save collectively; print on one rank only). Report as kfactor::bmf's,
/// plus timings communication / compute and info mpi_ranks, distribution,
/// comm_engine (the path collectives took: detail::Collectives::engine_name),
/// reduced_bytes_per_iteration.
template <class ExecutionSpace>
Report resume(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
              const Options& options, State<typename ExecutionSpace::memory_space>& state,
              const Observer& observer = {}) {
  distributed::agree(problem.coll->comm(), [&] {
    options.validate();
    kfactor::bmf::detail::check_rank_fits(problem.rows(), problem.cols(), options);
    if (state.A.lines != problem.local_rows() || state.Bt.lines != problem.cols() || state.A.bits != options.rank ||
        state.Bt.bits != options.rank)
      throw UsageError("bmf: the state's factors do not fit this problem and rank");
  });
  const auto before = problem.coll->stats;
  const int first = state.iteration;
  Report r = kfactor::bmf::detail::resume_on(exec, problem.local, problem.layout, options, state, observer,
                                             [&] { step(exec, problem, options, state); });
  const auto after = problem.coll->stats;
  const double comm_s = after.seconds - before.seconds;
  r.timings.set("communication", comm_s);
  r.timings.set("compute", r.seconds - comm_s);
  r.info["mpi_ranks"] = std::to_string(problem.size);
  r.info["distribution"] = std::string("rows of C and A per rank (") +
                           (problem.local.dense ? "equal blocks" : "ones-balanced") + "), B replicated";
  r.info["comm_engine"] = problem.coll->template engine_name<ExecutionSpace, typename ExecutionSpace::memory_space>();
  if (state.iteration > first)
    r.info["reduced_bytes_per_iteration"] =
        std::to_string((after.reduce_bytes - before.reduce_bytes) / (state.iteration - first));
  return r;
}

/// init then resume; the report's timings hold "init" and "iterations".
/// Collective.
template <class ExecutionSpace>
Result<State<typename ExecutionSpace::memory_space>> solve(
    const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem, const Options& options,
    const Observer& observer = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<State<typename ExecutionSpace::memory_space>> res{init(exec, problem, options), {}};
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.report = resume(exec, problem, options, res.state, observer);
  res.report.timings.set("init", init_seconds);
  res.report.seconds += init_seconds;
  return res;
}

/// d(C, A o B) recomputed from scratch over the whole C (each rank its rows,
/// the counts summed): what the tracked counts must equal. Collective.
template <class ExecutionSpace>
BooleanErrors full_error(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                         const State<typename ExecutionSpace::memory_space>& state) {
  return kfactor::bmf::detail::full_error_on(exec, problem.local, state.A, state.Bt, *state.comm);
}

namespace detail {
/// The whole matrix of which `mine` is this rank's rows of A (A or best_A),
/// on every rank. Collective.
template <class ExecutionSpace, class MemorySpace>
BitMatrix<MemorySpace> gather_rows(const ExecutionSpace& exec, const State<MemorySpace>& state,
                                   const BitMatrix<MemorySpace>& mine) {
  BitMatrix<MemorySpace> full("bmf::A_whole", state.rows, mine.bits);
  // The words travel as int64 (MPI has no unsigned sum, and a gather only
  // copies bits).
  const auto W = mine.words.extent(1);
  const DenseMatrix<std::int64_t, MemorySpace> local(reinterpret_cast<std::int64_t*>(mine.words.data()),
                                                     mine.words.extent(0), W);
  const DenseMatrix<std::int64_t, MemorySpace> all(reinterpret_cast<std::int64_t*>(full.words.data()),
                                                   full.words.extent(0), W);
  state.comm->coll->allgather_rows(exec, local, all, state.comm->row_bounds);
  exec.fence();
  return full;
}
}  // namespace detail

/// The whole current A (m lines of k bits, State::A of every rank) on every
/// rank. Collective.
template <class ExecutionSpace>
BitMatrix<typename ExecutionSpace::memory_space> gather_A(const ExecutionSpace& exec,
                                                          const State<typename ExecutionSpace::memory_space>& state) {
  return detail::gather_rows(exec, state, state.A);
}

/// The result's A (m x k) and B (k x n) as dense 0/1 matrices in host
/// memory, on every rank: kfactor::bmf::factor_a / factor_b of the whole
/// factors, so the best ones seen when the state keeps a best copy
/// (keep_best and T0 > 0), else the current ones. Collective.
template <class ExecutionSpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_a(const ExecutionSpace& exec,
                                                      const State<typename ExecutionSpace::memory_space>& state) {
  return unpack_bits<std::uint8_t>(
      Kokkos::DefaultHostExecutionSpace{},
      copy_to<Kokkos::HostSpace>(detail::gather_rows(exec, state, state.has_best_copy ? state.best_A : state.A)));
}
template <class MemorySpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_b(const State<MemorySpace>& state) {
  return kfactor::bmf::factor_b(state);
}

}  // namespace kfactor::distributed::bmf

// Explicit instantiations live in src/distributed/bmf.cpp.
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_BMF_ETI(EXTERN, S, T)                                                                      \
  EXTERN template Problem<S::memory_space> make_problem<S>(const S&, MPI_Comm, std::int64_t, std::int64_t,             \
                                                           const std::vector<ordinal_t>&,                              \
                                                           const std::vector<ordinal_t>&, const Options&);             \
  EXTERN template State<S::memory_space> init<S>(const S&, const Problem<S::memory_space>&, const Options&);           \
  EXTERN template void step<S>(const S&, const Problem<S::memory_space>&, const Options&, State<S::memory_space>&);    \
  EXTERN template Report resume<S>(const S&, const Problem<S::memory_space>&, const Options&, State<S::memory_space>&, \
                                   const Observer&);                                                                   \
  EXTERN template Result<State<S::memory_space>> solve<S>(const S&, const Problem<S::memory_space>&, const Options&,   \
                                                          const Observer&);                                            \
  EXTERN template BooleanErrors full_error<S>(const S&, const Problem<S::memory_space>&,                               \
                                              const State<S::memory_space>&);                                          \
  EXTERN template BitMatrix<S::memory_space> gather_A<S>(const S&, const State<S::memory_space>&);
#define KFACTOR_DISTRIBUTED_BMF_EXTERN(S, T) KFACTOR_DISTRIBUTED_BMF_ETI(extern, S, T)
#if !defined(KFACTOR_DISTRIBUTED_INSTANTIATING)
namespace kfactor::distributed::bmf {
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_DISTRIBUTED_BMF_EXTERN, void)
}  // namespace kfactor::distributed::bmf
#endif
#undef KFACTOR_DISTRIBUTED_BMF_EXTERN

#endif  // KFACTOR_HAVE_MPI
