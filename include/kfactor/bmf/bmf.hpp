#pragma once
/// \file
/// Boolean matrix factorization by CuBin's parallel randomized local search
/// (Lamothe 2018, seeds/002; digest seeds/digests/002-cubin.md): C (m x n,
/// Boolean) ~ A o B with A (m x k), B (k x n) Boolean and
/// (A o B)_ij = OR_l a_il b_lj.
///
/// Storage. A is a BitMatrix of m lines of k bits, B is kept as Bt, n lines of
/// k bits (B's columns), as in CuBin, in 64-bit words (kernels/bit_matrix.hpp;
/// k from 1 to detail::max_rank = 1024). C is either
///  - dense bits: C's rows (m lines of n bits) and C's columns (n lines of m
///    bits), both, so that row and column updates read their C line
///    contiguously (2 m n / 8 bytes); or
///  - sparse: the CSR of C's ones and its transpose (the CSC); never m n bits.
/// DenseC::automatic takes dense bits when they need at most
/// Options::dense_limit_bytes (default 1 GiB), sparse otherwise. Both give
/// identical factors for one seed (the deltas are exact integers).
///
/// One iteration (the order of CuBin's final code, Order::columns_first):
///  1. columns of B: start s = uniform line, the window s, s+1, ... (wrapping)
///     of min(L, n) columns; each gets a proposal that flips every one of its
///     k bits independently with probability flip_prob; the change of the
///     error comes from that column of C only; accepted when the weighted
///     error drops strictly, or with probability exp(-delta / T) (Metropolis);
///  2. rows of A, the same with a window of min(L, m) rows.
/// Randomness: CounterRng keyed by (seed, iteration, phase, line), so a run
/// is identical for one seed whatever the thread count; flip probabilities
/// are realised with 16-bit draws (multiples of 2^-16).
///
/// Cost of one line's delta: only lines of the fixed factor that hold a
/// flipped bit can change, found through an inverted index of its bits
/// (rebuilt per phase): O((sum over flipped bits of their list lengths +
/// nnz of the C line) * k / 64), for dense and sparse C alike; devices skip
/// the index for short lines (Options::index_min_lines) and scan instead.
///
/// Error. d(C, A o B) = FP + FN (spurious plus missed ones) is tracked
/// exactly as two integers updated by the accepted deltas; the weighted error
/// FP + w FN (Options::weight_ones = w) decides acceptance. Reported:
/// E_rec = (FP + FN) / (m n), precision and recall of the ones.
///
/// Stop (Options::stop and every_line_changed): relative error <= stop.target;
/// an exact factorization; stop.max_iterations; or
/// (max(m, n) / L + 1) * every_line_changed iterations in a row without a new
/// lowest weighted error (CuBin's rule; with greedy acceptance "no new lowest"
/// is CuBin's "error unchanged").
///
/// Differences from CuBin, on purpose: k up to 1024 (CuBin: 32); sparse C;
/// flip probability is a parameter with default 1/8 (the code's effective
/// value; the text's intended 1/4 and the buggy `& 11` mask are not
/// reproduced: bits flip independently); 64-bit error counts; a counter-based
/// RNG instead of KISS with a time seed; with Metropolis the best factors seen
/// are returned (keep_best), while the State keeps the current iterate, so
/// that a restart from any checkpoint, the final one included, continues
/// exactly as an uninterrupted run.
///
/// init, step and resume take a communication policy (detail::SingleProcess
/// here); kfactor/distributed/bmf.hpp runs the same search over MPI ranks
/// that each hold a block of C's rows, with the same factors for a seed.

#include <kfactor/bmf/detail/phase.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/bit_matrix.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::bmf {

/// Initial density of A's and B's bits (CuBin's STARTINITIALIZATION), from
/// the density d_C = ones / (m n) of C.
enum class Init {
  dost,        ///< 1: p = sqrt(1 - (1 - d_C)^(1/k)) (Dost et al.; CuBin's code form)
  density100,  ///< 2: p = d_C / 100 (CuBin's default)
  density,     ///< 3: p = d_C
  /// Not in CuBin: row l of B is the pattern of a random row of C (drawn
  /// from the seed), A starts empty; the search then assigns rows to these
  /// candidate patterns (Asso-style candidates, a data-driven start).
  sample_rows,
  /// Not in CuBin: a greedy cover in the manner of Asso (Miettinen et al.),
  /// computed on the host. For l = 0..k-1: the candidates are the rows of C
  /// holding Options::cover_candidates random ones not yet covered; the
  /// candidate whose pattern b (as B's row l) gives the largest total gain
  /// sum_i max(0, g_i) wins (the first drawn on equal gains), g_i = uncovered
  /// ones of row i under b minus its zeros under b, and A's column l takes
  /// the rows with g_i > 0; then, while the gain grows (at most 4 rounds),
  /// b := the columns where those rows' uncovered ones outnumber their zeros,
  /// and the rows are chosen again. The same with the roles of rows and
  /// columns swapped; the factors with the lower error are kept (the rows'
  /// on equal errors). Cost about 2 * candidates * k passes over the ones
  /// under a candidate's pattern. Parallel on Kokkos::DefaultHostExecutionSpace
  /// whatever the solver's space: per factor line the candidates of both
  /// orientations are evaluated concurrently (one per thread at a time),
  /// then both orientations are refined concurrently (lines with little work
  /// stay on the calling thread); the factors are the same for every thread
  /// count.
  cover,
};
enum class DenseC { automatic, on, off };
enum class Order { columns_first, rows_first };

const char* to_string(Init v);
const char* to_string(DenseC v);
const char* to_string(Order v);
Init parse_init(const std::string& s);  ///< "dost" | "density100" | "density" | "rows" | "cover"; UsageError otherwise
DenseC parse_dense_c(const std::string& s);  ///< "auto" | "on" | "off"
Order parse_order(const std::string& s);     ///< "columns-first" | "rows-first"

/// Solver options. Every numeric field has a range, checked by validate()
/// (UsageError naming the field and its range). visit() lists the fields that
/// decide the iterates, which a checkpoint records and a restart must repeat;
/// not listed: the stop rules (a restart may extend them) and the storage
/// choices dense_c, dense_limit_bytes and index_min_lines (the factors are the
/// same whatever they are).
struct Options {
  static constexpr Range<int> rank_range{.lo = 1, .hi = detail::max_rank};
  /// 10^9 iterations is beyond any run's patience: a larger count is a typo.
  static constexpr Range<int> max_iterations_range{.lo = 0, .hi = 1000000000};
  /// E_rec is a relative error: 0 (an exact factorization) to 1.
  static constexpr Range<double> target_range{.lo = 0.0, .hi = 1.0};
  static constexpr Range<int> batch_range{.lo = 1};
  static constexpr Range<double> flip_prob_range{.lo = 0.0, .hi = 1.0, .lo_open = true};
  static constexpr Range<double> temperature_range{.lo = 0.0, .hi = 1e12, .note = "0: greedy"};
  static constexpr Range<int> temp_step_range{.lo = 1};
  static constexpr Range<double> temp_factor_range{.lo = 0.0, .hi = 1.0, .lo_open = true};
  static constexpr Range<double> weight_ones_range{.lo = 0.0, .hi = 1e6, .lo_open = true};
  static constexpr Range<int> every_line_changed_range{.lo = 0, .hi = 1000000000, .note = "0: off"};
  static constexpr Range<int> cover_candidates_range{.lo = 1, .hi = 1000000};
  static constexpr Range<int> proposal_group_range{.lo = 1};
  static constexpr Range<std::size_t> dense_limit_bytes_range{.lo = 0, .hi = std::size_t(1) << 50};
  static constexpr Range<std::int64_t> index_min_lines_range{.lo = -1, .note = "-1: automatic"};

  int rank = 20;  ///< k, in rank_range (and at most min(m, n): make_problem)
  /// max_iterations: CuBin's gpuIterations (max_iterations_range); target:
  /// stop when the relative error E_rec <= target (CuBin's threshold;
  /// target_range or NaN: off); tolerance: relative change of E_rec between
  /// iterations (StopRule::tolerance_range, 0: off). An exact factorization
  /// (E_rec = 0) always stops: no proposal can lower it.
  StopRule stop{10000, 0.0};
  int batch = 4000;           ///< L = CuBin's linesAtOnce, in batch_range
  double flip_prob = 0.125;   ///< per-bit flip probability of a proposal, flip_prob_range (CuBin's code: 1/8)
  double temperature = 0.0;   ///< T0, in temperature_range; 0 = greedy (strict improvement only)
  int temp_step = INT_MAX;    ///< T *= temp_factor every temp_step iterations, in temp_step_range
  double temp_factor = 0.99;  ///< in temp_factor_range
  double weight_ones = 1.0;   ///< cost of a missed one (a spurious one costs 1), in weight_ones_range
  /// The start; see Init. Default cover, the start after which the search
  /// ends lowest: on the CuBin thesis files at k = 20 (perf/bench_bmf.cpp,
  /// 300 iterations, mean relative error E_rec of 3 seeds) APatio ends at
  /// 6.45e-3 from cover against 7.31e-3 from CuBin's density100 (dost,
  /// density, rows: 7.32e-3 to 7.42e-3), AOffice at 3.95e-3 against 4.21e-3
  /// (others 4.22e-3 to 4.24e-3), ATools (2 seeds) at 0.708e-3 against
  /// 0.730e-3; the thesis's DBP reaches 6.50e-3, 3.94e-3 and 0.71e-3, its
  /// CuBin 7.33e-3, 4.21e-3 and 0.73e-3. Its price is a host pass before
  /// the first iteration (about 2 * cover_candidates * k passes over the
  /// ones under a pattern).
  Init init = Init::cover;
  DenseC dense_c = DenseC::automatic;
  std::size_t dense_limit_bytes = std::size_t(1)
                                  << 30;  ///< automatic: dense bits up to this size (in dense_limit_bytes_range)
  Order order = Order::columns_first;
  /// No-improvement stop factor, in every_line_changed_range (0 disables the rule).
  int every_line_changed = 1000;
  bool keep_best = true;  ///< with T0 > 0: return the best factors seen (factor_a, factor_b, the report)
  std::uint64_t seed = 42;
  int cover_candidates = 64;  ///< Init::cover: candidate lines per factor line, in cover_candidates_range
  /// Lines i with equal i / proposal_group share one flip mask per phase
  /// (coordinated proposals; 1 = every line its own mask), in proposal_group_range.
  int proposal_group = 1;
  /// Use the inverted bit index of the fixed factor when a C line has at
  /// least this many entries (-1: automatic, host always, devices from 65536).
  /// Results are identical either way.
  std::int64_t index_min_lines = -1;

  /// Throws UsageError naming the field and its allowed range.
  void validate() const;

  template <class F>
  void visit(F&& f) const {
    f("rank", rank);
    f("batch", batch);
    f("flip_prob", flip_prob);
    f("temperature", temperature);
    f("temp_step", temp_step);
    f("temp_factor", temp_factor);
    f("weight_ones", weight_ones);
    f("init", init);
    f("order", order);
    f("keep_best", keep_best);
    f("seed", seed);
    f("cover_candidates", cover_candidates);
    f("proposal_group", proposal_group);
  }
};

/// Boolean C in the storage the solver reads. Build with make_problem.
template <class MemorySpace>
struct Problem {
  std::int64_t rows = 0, cols = 0;
  std::uint64_t ones = 0;
  bool dense = false;
  CsrMatrix<std::uint8_t, MemorySpace> by_row;  ///< CSR of the ones (values empty); always present
  CsrMatrix<std::uint8_t, MemorySpace> by_col;  ///< its transpose; sparse storage only
  BitMatrix<MemorySpace> c_rows;                ///< dense storage only: m lines of n bits
  BitMatrix<MemorySpace> c_cols;                ///< dense storage only: n lines of m bits

  [[nodiscard]] double density() const {
    return rows > 0 && cols > 0 ? double(ones) / (double(rows) * double(cols)) : 0.0;
  }
};

/// Bytes of dense bit storage (both orientations) for an m x n C.
inline std::size_t dense_bytes(std::int64_t m, std::int64_t n) {
  return std::size_t(8) * (std::size_t(m) * std::size_t(bit_words(n)) + std::size_t(n) * std::size_t(bit_words(m)));
}

/// Chooses the storage for an m x n C under `mode` (automatic: dense when
/// dense_bytes(m, n) <= limit).
inline bool use_dense(DenseC mode, std::int64_t m, std::int64_t n, std::size_t limit) {
  if (mode == DenseC::on) return true;
  if (mode == DenseC::off) return false;
  return dense_bytes(m, n) <= limit;
}

/// C from the 0-based (row, col) positions of its ones (duplicates merged,
/// any order) in ExecutionSpace's memory, stored per options.dense_c.
/// Throws InputError for positions outside the shape and for a C without
/// ones (every factorization is exact), UsageError for invalid options and for
/// options.rank > min(rows, cols) (the Boolean rank never exceeds it),
/// OutOfMemory when the storage cannot be allocated.
/// C from host triplets: entry (i, j) is a one when its value is nonzero (a
/// pattern matrix, with empty values, is all ones).
template <class ExecutionSpace, class T>
Problem<typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, const CooMatrix<T>& coo,
                                                            const Options& options) {
  std::vector<ordinal_t> r, c;
  r.reserve(coo.nnz());
  c.reserve(coo.nnz());
  for (std::size_t e = 0; e < coo.nnz(); ++e)
    if (coo.values.empty() || coo.values[e] != T(0)) {
      r.push_back(coo.rows[e]);
      c.push_back(coo.cols[e]);
    }
  return make_problem(exec, coo.num_rows, coo.num_cols, r, c, options);
}

/// Everything that decides the next iterate.
///
/// A and Bt are always the current iterate, the one the next step changes,
/// also after resume() returned: the best factors seen live beside it
/// (best_A, best_Bt, with their counts) and are what factor_a(),
/// factor_b() and the report give. A checkpoint holds both, so a run
/// restarted from any checkpoint, the last one of a finished run included,
/// follows the uninterrupted run bit for bit.
template <class MemorySpace>
struct State {
  BitMatrix<MemorySpace> A;   ///< m lines of k bits (the current iterate)
  BitMatrix<MemorySpace> Bt;  ///< n lines of k bits (B's columns; the current iterate)
  int iteration = 0;          ///< iterations done; step() performs number iteration + 1
  std::uint64_t seed = 0;
  double temperature = 0.0;                    ///< current T
  int no_improve = 0;                          ///< iterations since the last new lowest weighted error
  std::uint64_t false_pos = 0, false_neg = 0;  ///< exact counts for (A, Bt)
  std::uint64_t accepted = 0;                  ///< accepted line changes so far
  /// Best seen (lowest weighted error, the earliest on ties); the copies
  /// exist only with keep_best and T0 > 0 (init sets has_best_copy from the
  /// options, so a restored state has them too). The counts are kept always:
  /// the no-improvement stop compares with them.
  BitMatrix<MemorySpace> best_A, best_Bt;
  std::uint64_t best_false_pos = 0, best_false_neg = 0;
  bool has_best_copy = false;
  MetricHistory history;
  // Fixed by the problem (kept for metrics).
  std::int64_t rows = 0, cols = 0;
  std::uint64_t ones = 0;

  /// Buffers derived from the fields above, rebuilt by step() when empty.
  struct Workspace {
    /// Device copy of [false_pos, false_neg, accepted]: accepted changes add
    /// their deltas atomically; step() loads it from the host fields first
    /// and copies it back after the phases.
    Kokkos::View<std::int64_t*, MemorySpace> totals;
    detail::BitIndex<MemorySpace> bit_index;  ///< inverted bit index of the fixed factor
  } workspace;

  void reset_workspace() { workspace = Workspace{}; }

  [[nodiscard]] BooleanErrors errors() const {
    BooleanErrors e;
    e.false_pos = false_pos;
    e.false_neg = false_neg;
    e.ones = ones;
    e.rows = rows;
    e.cols = cols;
    return e;
  }
  /// The errors of the result: of the best copy when there is one, else of
  /// the current factors.
  [[nodiscard]] BooleanErrors best_errors() const {
    BooleanErrors e = errors();
    if (has_best_copy) {
      e.false_pos = best_false_pos;
      e.false_neg = best_false_neg;
    }
    return e;
  }

  /// The checkpointed fields (no side effects).
  template <class F>
  void visit(F&& f) {
    visit_fields(*this, f);
  }
  template <class F>
  void visit(F&& f) const {
    visit_fields(*this, f);
  }

 private:
  template <class Self, class F>
  static void visit_fields(Self& s, F& f) {
    f("A", s.A.words);
    f("Bt", s.Bt.words);
    f("iteration", s.iteration);
    f("seed", s.seed);
    f("temperature", s.temperature);
    f("no_improve", s.no_improve);
    f("false_pos", s.false_pos);
    f("false_neg", s.false_neg);
    f("accepted", s.accepted);
    if (s.has_best_copy) {
      f("best_A", s.best_A.words);
      f("best_Bt", s.best_Bt.words);
    }
    f("best_false_pos", s.best_false_pos);
    f("best_false_neg", s.best_false_neg);
  }
};

/// Random initial factors (options.init) and their exact error.
template <class ExecutionSpace>
State<typename ExecutionSpace::memory_space> init(const ExecutionSpace& exec,
                                                  const Problem<typename ExecutionSpace::memory_space>& problem,
                                                  const Options& options);

/// One iteration: the batch of B's columns and the batch of A's rows (order
/// per options.order). Uses state.iteration as the iteration's number - 1 and
/// does not increment it (run_solver_loop does).
template <class ExecutionSpace>
void step(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
          const Options& options, State<typename ExecutionSpace::memory_space>& state);

namespace detail {
/// evaluate()'s metrics for the errors `e` of the current or the best factors.
template <class MemorySpace>
Metrics metrics_of(const BooleanErrors& e, const Options& options, const State<MemorySpace>& state) {
  Metrics m;
  m.set("relative_error", e.relative());
  m.set("errors", double(e.hamming()));
  m.set("ones_precision", e.precision());
  m.set("ones_recall", e.recall());
  m.set("false_pos", double(e.false_pos));
  m.set("false_neg", double(e.false_neg));
  m.set("weighted_error", e.weighted(options.weight_ones));
  m.set("temperature", state.temperature);
  m.set("accepted", double(state.accepted));
  return m;
}
}  // namespace detail

/// Metrics of the current factors from the tracked counts (no device work):
/// relative_error, errors, ones_precision and ones_recall (of the ones of C;
/// not `precision`, which names the report's element type), false_pos,
/// false_neg, weighted_error, temperature, accepted. resume()'s report gives
/// the same metrics of the best factors (State::best_errors()).
template <class ExecutionSpace>
Metrics evaluate(const ExecutionSpace&, const Problem<typename ExecutionSpace::memory_space>&, const Options& options,
                 const State<typename ExecutionSpace::memory_space>& state) {
  return detail::metrics_of(state.errors(), options, state);
}

/// Recomputes d(C, A o B) from scratch (dense bits or the CSR of ones,
/// whichever the problem holds): the ground truth the tracked counts must equal.
template <class ExecutionSpace>
BooleanErrors full_error(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                         const BitMatrix<typename ExecutionSpace::memory_space>& A,
                         const BitMatrix<typename ExecutionSpace::memory_space>& Bt);

/// CuBin's no-improvement limit (max(m, n) / L + 1) * every_line_changed (0 = none).
inline std::int64_t max_no_improve(std::int64_t m, std::int64_t n, const Options& o) {
  if (o.every_line_changed <= 0) return 0;
  return (std::max(m, n) / o.batch + 1) * std::int64_t(o.every_line_changed);
}

/// init(), then resume(). The report's timings hold "init" and "iterations".
template <class ExecutionSpace>
kfactor::Result<State<typename ExecutionSpace::memory_space>> solve(
    const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem, const Options& options,
    const Observer& observer = {});

/// Continues `state` (fresh from init(), or restored from a checkpoint into
/// an init() state) with the loop: step, evaluate, observer, stop rules. The
/// observer may hold a reference to `state` (e.g. a checkpoint_observer).
/// `state` ends at the last iterate (see State); the report's final metrics
/// are those of the result, the best factors seen with keep_best and T0 > 0.
template <class ExecutionSpace>
Report resume(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
              const Options& options, State<typename ExecutionSpace::memory_space>& state,
              const Observer& observer = {});

/// The result's A (m x k) and B (k x n) as dense 0/1 matrices in host
/// memory: the best factors seen when the state keeps a best copy (keep_best
/// and T0 > 0), else the current ones.
template <class MemorySpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_a(const State<MemorySpace>& state);
template <class MemorySpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_b(const State<MemorySpace>& state);

/// A planted problem: factors with each bit set with probability
/// `factor_density`, C = A* o B*, then noise: each one of C turned off with
/// probability `noise`, and as many zeros (drawn uniformly, duplicates
/// dropped) turned on. Host vectors of the ones; the planted factors
/// (m x k, and B* as n x k lines) in host bit matrices.
struct Planted {
  std::int64_t rows = 0, cols = 0;
  int rank = 0;
  std::vector<ordinal_t> one_rows, one_cols;
  BitMatrix<Kokkos::HostSpace> A, Bt;
};
Planted make_planted(std::int64_t m, std::int64_t n, int k, double factor_density, double noise, std::uint64_t seed);

}  // namespace kfactor::bmf

#include <kfactor/bmf/detail/bmf_impl.hpp>
