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
/// Stop: relative error <= target_error; max_iterations; or
/// (max(m, n) / L + 1) * every_line_changed iterations in a row without a new
/// lowest weighted error (CuBin's rule; with greedy acceptance "no new lowest"
/// is CuBin's "error unchanged").
///
/// Differences from CuBin, on purpose: k up to 1024 (CuBin: 32); sparse C;
/// flip probability is a parameter with default 1/8 (the code's effective
/// value; the text's intended 1/4 and the buggy `& 11` mask are not
/// reproduced: bits flip independently); 64-bit error counts; a counter-based
/// RNG instead of KISS with a time seed; with Metropolis the best factors seen
/// are returned (keep_best).

#include <kfactor/bmf/detail/phase.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
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
Init parse_init(const std::string& s);     ///< "dost" | "density100" | "density" | "rows" | "cover"; UsageError otherwise
DenseC parse_dense_c(const std::string& s);  ///< "auto" | "on" | "off"
Order parse_order(const std::string& s);     ///< "columns-first" | "rows-first"

struct Options {
  int rank = 20;                       ///< k, 1..1024
  int max_iterations = 10000;          ///< CuBin's gpuIterations
  int batch = 4000;                    ///< L = CuBin's linesAtOnce
  double flip_prob = 0.125;            ///< per-bit flip probability of a proposal (CuBin's code: 1/8)
  double temperature = 0.0;            ///< T0; 0 = greedy (strict improvement only)
  int temp_step = INT_MAX;             ///< T *= temp_factor every temp_step iterations
  double temp_factor = 0.99;
  double weight_ones = 1.0;            ///< cost of a missed one (a spurious one costs 1)
  Init init = Init::density100;
  DenseC dense_c = DenseC::automatic;
  std::size_t dense_limit_bytes = std::size_t(1) << 30;  ///< automatic: dense bits up to this size
  Order order = Order::columns_first;
  double target_error = 0.0;           ///< stop when E_rec <= this (CuBin's threshold)
  int every_line_changed = 1000;       ///< no-improvement stop factor; 0 disables the rule
  bool keep_best = true;               ///< with T0 > 0: return the best factors seen
  std::uint64_t seed = 42;
  int cover_candidates = 64;           ///< Init::cover: candidate lines per factor line
  /// Lines i with equal i / proposal_group share one flip mask per phase
  /// (coordinated proposals; 1 = every line its own mask).
  int proposal_group = 1;
  /// Use the inverted bit index of the fixed factor when a C line has at
  /// least this many entries (-1: automatic, host always, devices from 65536).
  /// Results are identical either way.
  std::int64_t index_min_lines = -1;

  /// Throws UsageError for values out of range.
  void validate() const;
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
/// Throws InputError for positions outside the shape, RuntimeFailure when
/// the storage cannot be allocated.
template <class ExecutionSpace>
Problem<typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, std::int64_t rows,
                                                            std::int64_t cols, const std::vector<ordinal_t>& one_rows,
                                                            const std::vector<ordinal_t>& one_cols,
                                                            const Options& options);

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
template <class MemorySpace>
struct State {
  BitMatrix<MemorySpace> A;   ///< m lines of k bits
  BitMatrix<MemorySpace> Bt;  ///< n lines of k bits (B's columns)
  int iteration = 0;          ///< iterations done; step() performs number iteration + 1
  std::uint64_t seed = 0;
  double temperature = 0.0;   ///< current T
  int no_improve = 0;         ///< iterations since the last new lowest weighted error
  std::uint64_t false_pos = 0, false_neg = 0;  ///< exact counts for (A, Bt)
  std::uint64_t accepted = 0;                  ///< accepted line changes so far
  // Best seen (only maintained with keep_best and T0 > 0; else equal to current).
  BitMatrix<MemorySpace> best_A, best_Bt;
  std::uint64_t best_false_pos = 0, best_false_neg = 0;
  bool has_best_copy = false;
  /// Device truth of [false_pos, false_neg, accepted]; accepted changes add
  /// their deltas atomically, step() copies them to the host fields.
  Kokkos::View<std::int64_t*, MemorySpace> totals;
  MetricHistory history;
  // Scratch (not part of the iterate): inverted bit index of the fixed factor.
  detail::BitIndex<MemorySpace> bit_index;
  // Fixed by the problem (kept for metrics).
  std::int64_t rows = 0, cols = 0;
  std::uint64_t ones = 0;

  [[nodiscard]] BooleanErrors errors() const {
    BooleanErrors e;
    e.false_pos = false_pos;
    e.false_neg = false_neg;
    e.ones = ones;
    e.rows = rows;
    e.cols = cols;
    return e;
  }
  [[nodiscard]] BooleanErrors best_errors() const {
    BooleanErrors e = errors();
    if (has_best_copy) {
      e.false_pos = best_false_pos;
      e.false_neg = best_false_neg;
    }
    return e;
  }

  template <class F>
  void visit(F&& f) {
    f("A", A.words);
    f("Bt", Bt.words);
    f("iteration", iteration);
    f("seed", seed);
    f("temperature", temperature);
    f("no_improve", no_improve);
    f("totals", totals);
    f("false_pos", false_pos);
    f("false_neg", false_neg);
    f("accepted", accepted);
    if (has_best_copy) {
      f("best_A", best_A.words);
      f("best_Bt", best_Bt.words);
    }
    f("best_false_pos", best_false_pos);
    f("best_false_neg", best_false_neg);
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

/// Metrics of the current factors from the tracked counts (no device work):
/// relative_error, errors, precision, recall, false_pos, false_neg,
/// weighted_error, temperature, accepted.
template <class MemorySpace>
Metrics evaluate(const Options& options, const State<MemorySpace>& state) {
  const auto e = state.errors();
  Metrics m;
  m.set("relative_error", e.relative());
  m.set("errors", double(e.hamming()));
  m.set("precision", e.precision());
  m.set("recall", e.recall());
  m.set("false_pos", double(e.false_pos));
  m.set("false_neg", double(e.false_neg));
  m.set("weighted_error", e.weighted(options.weight_ones));
  m.set("temperature", state.temperature);
  m.set("accepted", double(state.accepted));
  return m;
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

template <class MemorySpace>
struct Result {
  State<MemorySpace> state;  ///< with keep_best and T0 > 0, A/Bt/counts are the best seen
  Report report;
};

/// init, then the loop (step, evaluate, observer, stop rules).
template <class ExecutionSpace>
Result<typename ExecutionSpace::memory_space> solve(const ExecutionSpace& exec,
                                                    const Problem<typename ExecutionSpace::memory_space>& problem,
                                                    const Options& options, const Observer& observer = nullptr);

/// Continues `state` (e.g. restored from a checkpoint) with the same loop.
template <class ExecutionSpace>
Result<typename ExecutionSpace::memory_space> solve(const ExecutionSpace& exec,
                                                    const Problem<typename ExecutionSpace::memory_space>& problem,
                                                    const Options& options,
                                                    State<typename ExecutionSpace::memory_space> state,
                                                    const Observer& observer);

/// The same loop on `state` in place (the observer may hold a reference to
/// it, e.g. a checkpoint_observer); returns the report.
template <class ExecutionSpace>
Report solve_in_place(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                      const Options& options, State<typename ExecutionSpace::memory_space>& state,
                      const Observer& observer);

/// A (m x k) and B (k x n) as dense 0/1 matrices in host memory.
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
