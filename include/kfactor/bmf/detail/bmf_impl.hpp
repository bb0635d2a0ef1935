#pragma once
// Implementation of kfactor/bmf/bmf.hpp (included at its end).

#include <kfactor/core/detail/eti.hpp>

#include <exception>
#include <numeric>

namespace kfactor::bmf {

namespace detail {

inline OutOfMemory allocation_failure(const std::string& what, std::size_t bytes, const std::exception& e) {
  return OutOfMemory("bmf: cannot allocate " + what + " (" + std::to_string(bytes) + " bytes): " + e.what());
}

/// Host CSR (sorted, duplicate free) of the ones, by rows and by columns.
struct HostOnes {
  std::vector<offset_t> row_map, col_map;
  std::vector<ordinal_t> row_idx, col_idx;
};

inline HostOnes host_ones(std::int64_t rows, std::int64_t cols, const std::vector<ordinal_t>& r,
                          const std::vector<ordinal_t>& c) {
  if (rows < 0 || cols < 0 || rows > INT_MAX || cols > INT_MAX)
    throw InputError("bmf: shape " + std::to_string(rows) + " x " + std::to_string(cols) + " is outside 0..2^31-1");
  if (r.size() != c.size()) throw InputError("bmf: row and column lists of the ones differ in length");
  std::vector<std::uint64_t> keys(r.size());
  for (std::size_t e = 0; e < r.size(); ++e) {
    if (r[e] < 0 || r[e] >= rows || c[e] < 0 || c[e] >= cols)
      throw InputError("bmf: one at (" + std::to_string(r[e]) + ", " + std::to_string(c[e]) + ") is outside the " +
                       std::to_string(rows) + " x " + std::to_string(cols) + " shape");
    keys[e] = std::uint64_t(r[e]) * std::uint64_t(cols) + std::uint64_t(c[e]);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  HostOnes h;
  h.row_map.assign(rows + 1, 0);
  h.col_map.assign(cols + 1, 0);
  h.row_idx.resize(keys.size());
  h.col_idx.resize(keys.size());
  for (std::size_t e = 0; e < keys.size(); ++e) {
    ++h.row_map[keys[e] / cols + 1];
    ++h.col_map[keys[e] % cols + 1];
    h.row_idx[e] = ordinal_t(keys[e] % cols);
  }
  std::partial_sum(h.row_map.begin(), h.row_map.end(), h.row_map.begin());
  std::partial_sum(h.col_map.begin(), h.col_map.end(), h.col_map.begin());
  std::vector<offset_t> fill(h.col_map.begin(), h.col_map.end() - 1);
  for (std::size_t e = 0; e < keys.size(); ++e) h.col_idx[fill[keys[e] % cols]++] = ordinal_t(keys[e] / cols);
  return h;
}

template <class ExecutionSpace>
CsrMatrix<std::uint8_t, typename ExecutionSpace::memory_space> device_csr(const ExecutionSpace& exec,
                                                                          const std::vector<offset_t>& map,
                                                                          const std::vector<ordinal_t>& idx,
                                                                          std::int64_t num_cols) {
  using Mem = typename ExecutionSpace::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  CsrMatrix<std::uint8_t, Mem> out;
  out.num_cols = ordinal_t(num_cols);
  out.row_map =
      Kokkos::View<offset_t*, Mem>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bmf::ones_map"), map.size());
  out.entries =
      Kokkos::View<ordinal_t*, Mem>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bmf::ones_idx"), idx.size());
  out.values = Kokkos::View<std::uint8_t*, Mem>("bmf::ones_values", 0);
  Kokkos::deep_copy(exec, out.row_map,
                    Kokkos::View<const offset_t*, Kokkos::HostSpace, Unmanaged>(map.data(), map.size()));
  Kokkos::deep_copy(exec, out.entries,
                    Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(idx.data(), idx.size()));
  exec.fence();
  return out;
}

inline double init_probability(Init mode, double dc, int k) {
  switch (mode) {
    case Init::dost: return std::sqrt(1.0 - std::pow(1.0 - dc, 1.0 / double(k)));
    case Init::density100: return dc / 100.0;
    case Init::density: return dc;
    case Init::sample_rows:
    case Init::cover: return 0.0;
  }
  return dc / 100.0;
}

/// Bits of X drawn with probability p, keyed by (seed, stream, line, bit);
/// X(0) is line `first_line` of the whole factor.
template <class ExecutionSpace, class MemorySpace>
void fill_bits(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& X, double p, std::uint64_t seed,
               RngStream stream, std::int64_t first_line) {
  auto words = X.words;
  const std::int64_t bits = X.bits;
  const CounterRng rng(seed, stream);
  Kokkos::parallel_for(
      "kfactor::bmf::fill_bits",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0},
                                                             {std::size_t(X.lines), std::size_t(X.words_per_line())}),
      KOKKOS_LAMBDA(std::size_t r, std::size_t q) {
        bit_word_t w = 0;
        const std::int64_t l0 = std::int64_t(q) * bit_word_bits;
        for (int b = 0; b < bit_word_bits && l0 + b < bits; ++b)
          if (rng.uniform(std::uint64_t(first_line + std::int64_t(r)) * std::uint64_t(bits) + std::uint64_t(l0 + b)) <
              p)
            w |= bit_word_t(1) << b;
        words(r, q) = w;
      });
}

/// A host CSR of C's ones: lines rows (or columns), map[lines + 1], idx.
struct HostCsr {
  const offset_t* map = nullptr;
  const ordinal_t* idx = nullptr;
  std::int64_t lines = 0;
};

/// The ones of the whole C by rows, in host memory (the communication
/// policy's whole_c).
struct HostRows {
  Kokkos::View<offset_t*, Kokkos::HostSpace> map;  ///< rows + 1
  Kokkos::View<ordinal_t*, Kokkos::HostSpace> idx;
  [[nodiscard]] HostCsr csr() const { return {map.data(), idx.data(), std::int64_t(map.extent(0)) - 1}; }
};

/// Row l of B := the ones of row r_l of C, r_l drawn from the seed (nonempty rows preferred).
template <class ExecutionSpace, class MemorySpace>
void sample_rows(const ExecutionSpace& exec, const HostRows& c, BitMatrix<MemorySpace>& Bt, std::uint64_t seed) {
  const auto& map = c.map;
  const auto& idx = c.idx;
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace{}, Bt.words);
  Kokkos::deep_copy(h, bit_word_t(0));
  const CounterRng rng(seed, RngStream::factor_h);
  const std::int64_t m = c.csr().lines;
  for (std::int64_t l = 0; l < Bt.bits && m > 0; ++l) {
    std::int64_t r = 0;
    for (std::uint64_t t = 0; t < 16; ++t) {  // a few tries for a nonempty row
      r = std::int64_t(rng.bits(std::uint64_t(l) * 16 + t) % std::uint64_t(m));
      if (map(r + 1) > map(r)) break;
    }
    for (auto e = map(r); e < map(r + 1); ++e) h(idx(e), l / bit_word_bits) |= bit_word_t(1) << (l % bit_word_bits);
  }
  Kokkos::deep_copy(exec, Bt.words, h);
  exec.fence();
}

/// Both orientations of Init::cover (src/bmf/bmf.cpp), computed together on
/// the host: orientation 0 takes its candidates from C's rows (A[0] gets the
/// assignments, Bt[0] the patterns), orientation 1 from C's columns (Bt[1]
/// the assignments, A[1] the patterns). A[i] has rows.lines x bit_words(k)
/// words, Bt[i] cols.lines x bit_words(k); cols is rows' transpose.
/// Parallel on Kokkos::DefaultHostExecutionSpace; the result depends only on
/// the arguments, not on the thread count.
void greedy_cover(const HostCsr& rows, const HostCsr& cols, int k, int candidates, std::uint64_t seed,
                  std::vector<bit_word_t> (&A)[2], std::vector<bit_word_t> (&Bt)[2]);

/// The whole C, and which of its rows this process holds: the single
/// process holds all of it; a rank of the distributed solver
/// (distributed/bmf.hpp) rows [row_begin, row_begin + its Problem's rows).
struct Layout {
  std::int64_t rows = 0, cols = 0;  ///< shape of the whole C
  std::uint64_t ones = 0;           ///< ones of the whole C
  std::int64_t row_begin = 0;       ///< the Problem's row 0 (and A's line 0) in the whole C

  [[nodiscard]] double density() const {
    return rows > 0 && cols > 0 ? double(ones) / (double(rows) * double(cols)) : 0.0;
  }
};

/// The communication policy of the single-process solver. The distributed
/// solver's MpiPolicy (kfactor/distributed/bmf.hpp) has the same members:
///   layout                  the whole C and the rows held here (Layout);
///   one_process()           true when no other process takes part;
///   agree(f)                runs f (an allocation), every process throwing
///                           when one failed;
///   sum(v, n)               n host counters summed over the processes;
///   whole_c(problem)        the ones of the whole C by rows, in host memory;
///   column_phase(exec, p)   B's columns (a delta is a sum over C's rows):
///                           here run_phase, decided in one pass;
///   row_phase(exec, p)      A's rows (each process its own): run_phase on
///                           the held rows, with the accepted changes counted
///                           in the totals of the whole C.
struct SingleProcess {
  Layout layout;

  [[nodiscard]] static constexpr bool one_process() { return true; }
  template <class F>
  void agree(F&& f) const {
    f();
  }
  void sum(std::int64_t*, int) const {}
  template <class MemorySpace>
  HostRows whole_c(const Problem<MemorySpace>& problem) const {
    return {Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, problem.by_row.row_map),
            Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, problem.by_row.entries)};
  }
  template <class ExecutionSpace, class MemorySpace>
  void column_phase(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) const {
    run_phase(exec, p);
  }
  template <class ExecutionSpace, class MemorySpace>
  void row_phase(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) const {
    run_phase(exec, p);
  }
};

/// The single process's Layout: all of `problem`.
template <class MemorySpace>
Layout whole_layout(const Problem<MemorySpace>& problem) {
  return {problem.rows, problem.cols, problem.ones, 0};
}

/// full_error of the whole C: the counts of the held rows, summed over the
/// processes.
template <class ExecutionSpace, class MemorySpace, class Comm>
BooleanErrors full_error_on(const ExecutionSpace& exec, const Problem<MemorySpace>& problem,
                            const BitMatrix<MemorySpace>& A, const BitMatrix<MemorySpace>& Bt, const Comm& comm) {
  BooleanErrors e = full_error(exec, problem, A, Bt);
  std::int64_t counts[3] = {std::int64_t(e.false_pos), std::int64_t(e.false_neg), std::int64_t(e.ones)};
  comm.sum(counts, 3);
  e.false_pos = std::uint64_t(counts[0]);
  e.false_neg = std::uint64_t(counts[1]);
  e.ones = std::uint64_t(counts[2]);
  e.rows = comm.layout.rows;
  e.cols = comm.layout.cols;
  return e;
}

/// Init::cover: greedy_cover from C's rows (patterns -> B) and from C's
/// columns (patterns -> A); the pair with the lower exact error is kept
/// (the rows' one on equal errors). Returns its error. The cover is a host
/// pass over the whole C (comm.whole_c), the same on every process; each
/// keeps its rows of A.
template <class ExecutionSpace, class MemorySpace, class Comm>
BooleanErrors cover_init(const ExecutionSpace& exec, const Problem<MemorySpace>& problem, const Options& o,
                         State<MemorySpace>& s, const Comm& comm) {
  const HostRows c = comm.whole_c(problem);
  const auto& rmap = c.map;
  const auto& ridx = c.idx;
  const std::int64_t m = comm.layout.rows, n = comm.layout.cols;
  // C's columns: built here (a process stores its own rows' columns only).
  std::vector<offset_t> cmap(n + 1, 0);
  std::vector<ordinal_t> cidx(ridx.extent(0));
  for (std::size_t e = 0; e < ridx.extent(0); ++e) ++cmap[ridx(e) + 1];
  std::partial_sum(cmap.begin(), cmap.end(), cmap.begin());
  {
    std::vector<offset_t> fill(cmap.begin(), cmap.end() - 1);
    for (std::int64_t i = 0; i < m; ++i)
      for (offset_t e = rmap(i); e < rmap(i + 1); ++e) cidx[fill[ridx(e)]++] = ordinal_t(i);
  }
  const HostCsr rows{rmap.data(), ridx.data(), m}, cols{cmap.data(), cidx.data(), n};
  std::vector<bit_word_t> x[2], y[2];
  greedy_cover(rows, cols, o.rank, o.cover_candidates, o.seed, x, y);
  BooleanErrors best;
  const std::int64_t held = problem.rows;
  for (int side = 0; side < 2; ++side) {
    BitMatrix<MemorySpace> tA("bmf::cover_A", held, o.rank), tBt("bmf::cover_Bt", n, o.rank);
    const std::size_t W = tA.words.extent(1);
    Kokkos::deep_copy(exec, tA.words,
                      Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                          x[side].data() + std::size_t(comm.layout.row_begin) * W, held, W));
    Kokkos::deep_copy(exec, tBt.words,
                      Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>(y[side].data(), n, tBt.words.extent(1)));
    const auto e = full_error_on(exec, problem, tA, tBt, comm);
    if (side == 0 || e.hamming() < best.hamming()) {
      best = e;
      s.A = tA;
      s.Bt = tBt;
    }
  }
  return best;
}

/// Device totals [FP, FN, accepted] -> the state's host fields.
template <class ExecutionSpace, class MemorySpace>
void pull_totals(const ExecutionSpace& exec, State<MemorySpace>& s) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace{}, s.workspace.totals);
  Kokkos::deep_copy(exec, h, s.workspace.totals);
  exec.fence();
  s.false_pos = std::uint64_t(h(0));
  s.false_neg = std::uint64_t(h(1));
  s.accepted = std::uint64_t(h(2));
}

/// The state's host fields -> device totals (allocated when the workspace
/// was dropped).
template <class ExecutionSpace, class MemorySpace>
void push_totals(const ExecutionSpace& exec, State<MemorySpace>& s) {
  if (s.workspace.totals.extent(0) != 3)
    s.workspace.totals = Kokkos::View<std::int64_t*, MemorySpace>("bmf::totals", 3);
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace{}, s.workspace.totals);
  h(0) = std::int64_t(s.false_pos);
  h(1) = std::int64_t(s.false_neg);
  h(2) = std::int64_t(s.accepted);
  Kokkos::deep_copy(exec, s.workspace.totals, h);
  exec.fence();
}

/// One phase on this process's lines (comm.layout): B's columns against
/// the held rows of A and C, or the held rows of A against all of B.
template <class ExecutionSpace, class Comm>
void run_one_phase(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                   const Options& o, State<typename ExecutionSpace::memory_space>& s, std::uint64_t iter_key,
                   bool columns, const Comm& comm) {
  using Mem = typename ExecutionSpace::memory_space;
  PhaseArgs<Mem> p;
  p.X = columns ? s.Bt.words : s.A.words;
  p.Y = columns ? s.A.words : s.Bt.words;
  p.dense = problem.dense;
  if (problem.dense) {
    p.C = columns ? problem.c_cols.words : problem.c_rows.words;
  } else {
    const auto& csr = columns ? problem.by_col : problem.by_row;
    p.map = csr.row_map;
    p.idx = csr.entries;
  }
  p.totals = s.workspace.totals;
  const std::int64_t len = columns ? problem.rows : problem.cols;
  // Inverted bit index: always on host backends (it cuts the work per line);
  // on devices only for long lines of C, where it pays for its 4 launches.
  const std::int64_t min_lines =
      o.index_min_lines >= 0 ? o.index_min_lines : (is_host_space_v<ExecutionSpace> ? 0 : 65536);
  p.use_index = len >= min_lines;
  if (len > 0 && p.use_index) build_bit_index(exec, p.Y, o.rank, s.workspace.bit_index);
  p.bit_offsets = s.workspace.bit_index.offsets;
  p.bit_lists = s.workspace.bit_index.lists;
  p.num_lines = columns ? comm.layout.cols : comm.layout.rows;
  p.x_begin = columns ? 0 : comm.layout.row_begin;
  p.len = len;
  if (p.num_lines == 0 || p.len == 0) return;
  p.phase = columns ? 0 : 1;
  p.start = std::int64_t(CounterRng(iter_key, 2 + p.phase).bits(0) % std::uint64_t(p.num_lines));
  p.count = std::min<std::int64_t>(o.batch, p.num_lines);
  p.stride = window_stride(p.count, p.num_lines);
  p.bits = o.rank;
  p.iter_key = iter_key;
  p.flip_threshold = std::uint32_t(std::lround(std::clamp(o.flip_prob, 0.0, 1.0) * 65536.0));
  p.temperature = s.temperature;
  p.weight_ones = o.weight_ones;
  p.group = o.proposal_group;
  if (columns)
    comm.column_phase(exec, p);
  else
    comm.row_phase(exec, p);
}

/// options.rank fits a rows x cols C: a Boolean rank above min(m, n) never
/// helps (C = C o I already is exact), so a larger k is a mistake.
inline void check_rank_fits(std::int64_t rows, std::int64_t cols, const Options& o) {
  if (std::int64_t(o.rank) > std::min(rows, cols))
    throw UsageError("bmf: rank must be in 1..min(rows, cols) = " + std::to_string(std::min(rows, cols)) +
                     " for this " + std::to_string(rows) + " x " + std::to_string(cols) + " C, got " +
                     std::to_string(o.rank));
}

/// host_ones of the input, with InputError for a C without ones (every
/// factorization is exact) and RuntimeFailure when the index does not fit
/// in memory.
inline HostOnes index_ones(std::int64_t rows, std::int64_t cols, const std::vector<ordinal_t>& one_rows,
                           const std::vector<ordinal_t>& one_cols) {
  HostOnes h;
  try {
    h = host_ones(rows, cols, one_rows, one_cols);
  } catch (const std::bad_alloc& e) {
    // Host indices of both orientations: (rows + cols + 2) offsets and 2 x ones ordinals (plus sort keys).
    const std::size_t bytes = (std::size_t(rows) + std::size_t(cols) + 2) * sizeof(offset_t) +
                              one_rows.size() * (2 * sizeof(ordinal_t) + sizeof(std::uint64_t));
    throw allocation_failure("the host index of a " + std::to_string(rows) + " x " + std::to_string(cols) + " C with " +
                                 std::to_string(one_rows.size()) + " ones",
                             bytes, e);
  }
  if (h.row_idx.empty())
    throw InputError("bmf: the " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " C has no ones (nothing to factorize)");
  return h;
}

/// The storage of a rows x cols C (the whole C, or one process's rows of it)
/// from the host index of its ones: dense bits or the CSR pair.
template <class ExecutionSpace>
Problem<typename ExecutionSpace::memory_space> store_ones(const ExecutionSpace& exec, const HostOnes& h,
                                                          std::int64_t rows, std::int64_t cols, bool dense) {
  Problem<typename ExecutionSpace::memory_space> p;
  p.rows = rows;
  p.cols = cols;
  p.ones = h.row_idx.size();
  p.dense = dense;
  const std::size_t csr_bytes = 2 * (h.row_idx.size() * sizeof(ordinal_t) + (rows + cols + 2) * sizeof(offset_t));
  try {
    p.by_row = device_csr(exec, h.row_map, h.row_idx, cols);
    auto by_col = device_csr(exec, h.col_map, h.col_idx, rows);
    if (p.dense) {
      try {
        p.c_rows = pack_csr_bits(exec, p.by_row);
        p.c_cols = pack_csr_bits(exec, by_col);
        exec.fence();
      } catch (const RuntimeFailure&) {
        throw;
      } catch (const std::exception& e) {
        throw allocation_failure(
            "dense bits of a " + std::to_string(rows) + " x " + std::to_string(cols) + " C (use --dense-c off)",
            dense_bytes(rows, cols), e);
      }
    } else {
      p.by_col = by_col;
    }
  } catch (const RuntimeFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw allocation_failure("the ones of C", csr_bytes, e);
  }
  return p;
}

/// init() on this process's rows (see Comm in SingleProcess).
template <class ExecutionSpace, class Comm>
State<typename ExecutionSpace::memory_space> init_on(const ExecutionSpace& exec,
                                                     const Problem<typename ExecutionSpace::memory_space>& problem,
                                                     const Options& options, const Comm& comm) {
  using Mem = typename ExecutionSpace::memory_space;
  options.validate();
  const Layout& g = comm.layout;
  check_rank_fits(g.rows, g.cols, options);
  State<Mem> s;
  s.rows = g.rows;
  s.cols = g.cols;
  s.ones = g.ones;
  s.seed = options.seed;
  s.temperature = options.temperature;
  comm.agree([&] {
    try {
      s.A = BitMatrix<Mem>("bmf::A", problem.rows, options.rank);
      s.Bt = BitMatrix<Mem>("bmf::Bt", g.cols, options.rank);
    } catch (const std::exception& e) {
      throw allocation_failure("the factors", dense_bytes(problem.rows, options.rank), e);
    }
  });
  const double p = init_probability(options.init, g.density(), options.rank);
  BooleanErrors e;
  if (options.init == Init::cover) {
    e = cover_init(exec, problem, options, s, comm);  // already knows its error
  } else {
    if (options.init == Init::sample_rows) {
      sample_rows(exec, comm.whole_c(problem), s.Bt, options.seed);
    } else {
      fill_bits(exec, s.A, p, options.seed, RngStream::factor_w, g.row_begin);
      fill_bits(exec, s.Bt, p, options.seed, RngStream::factor_h, 0);
    }
    e = full_error_on(exec, problem, s.A, s.Bt, comm);
  }
  s.false_pos = s.best_false_pos = e.false_pos;
  s.false_neg = s.best_false_neg = e.false_neg;
  if (options.keep_best && options.temperature > 0.0) {
    comm.agree([&] {
      s.best_A = clone(exec, s.A);
      s.best_Bt = clone(exec, s.Bt);
    });
    s.has_best_copy = true;
  }
  exec.fence();
  return s;
}

/// step() on this process's rows: every decision depends on exact integer
/// deltas and on (seed, iteration, phase, line), so the iterates are the
/// same whatever the number of processes.
template <class ExecutionSpace, class Comm>
void step_on(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
             const Options& options, State<typename ExecutionSpace::memory_space>& s, const Comm& comm) {
  const std::uint64_t t = std::uint64_t(s.iteration);
  const std::int64_t it = std::int64_t(t) + 1;
  if (options.temp_step > 0 && it % options.temp_step == 0) s.temperature *= options.temp_factor;
  const std::uint64_t iter_key = CounterRng(s.seed, RngStream::proposal).bits(t);
  const bool cols_first = options.order == Order::columns_first;
  push_totals(exec, s);
  run_one_phase(exec, problem, options, s, iter_key, cols_first, comm);
  run_one_phase(exec, problem, options, s, iter_key, !cols_first, comm);
  pull_totals(exec, s);
  const double w = options.weight_ones;
  const double now = double(s.false_pos) + w * double(s.false_neg);
  const double best = double(s.best_false_pos) + w * double(s.best_false_neg);
  if (now < best) {
    s.best_false_pos = s.false_pos;
    s.best_false_neg = s.false_neg;
    s.no_improve = 0;
    if (s.has_best_copy) {
      Kokkos::deep_copy(exec, s.best_A.words, s.A.words);
      Kokkos::deep_copy(exec, s.best_Bt.words, s.Bt.words);
    }
  } else {
    ++s.no_improve;
  }
}

/// resume() for the whole C described by `g` (this process's rows in
/// `problem`), one iteration being step_fn().
template <class ExecutionSpace, class StepFn>
Report resume_on(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                 const Layout& g, const Options& options, State<typename ExecutionSpace::memory_space>& state,
                 const Observer& observer, StepFn&& step_fn) {
  const std::int64_t limit = max_no_improve(g.rows, g.cols, options);
  bool by_no_improve = false;
  // Family stops besides StopRule: an exact factorization (nothing can
  // improve it) and CuBin's no-improvement rule.
  auto extra_stop = [&](const Metrics& m) {
    if (m.get("errors") == 0.0) return true;
    if (limit > 0 && state.no_improve >= limit) return by_no_improve = true;
    return false;
  };
  double loop_seconds = 0.0;
  std::string reason;
  const Metrics start = evaluate(exec, problem, options, state);
  if (extra_stop(start) || start.get("relative_error") <= options.stop.target) {
    reason = by_no_improve ? "no_improvement" : "target_reached";
  } else {
    const auto r = run_solver_loop(
        state.iteration, state.history, options.stop, "relative_error", observer, step_fn,
        [&] { return evaluate(exec, problem, options, state); }, extra_stop, &loop_seconds);
    reason = r == StopReason::target_reached ? (by_no_improve ? "no_improvement" : "target_reached") : to_string(r);
  }
  Report rep;
  rep.command = "bmf";
  rep.backend = backend_name<ExecutionSpace>();
  rep.precision = "bits";
  rep.rows = g.rows;
  rep.cols = g.cols;
  rep.nnz = std::int64_t(g.ones);
  rep.rank = options.rank;
  rep.iterations = state.iteration;
  rep.seconds = loop_seconds;
  rep.stop_reason = reason;
  rep.metrics = detail::metrics_of(state.best_errors(), options, state);
  rep.timings.set("iterations", loop_seconds);
  rep.info["algorithm"] = "cubin";
  rep.info["c_storage"] = problem.dense ? "dense_bits" : "sparse_csr";
  rep.info["order"] = to_string(options.order);
  rep.info["init"] = to_string(options.init);
  rep.info["batch"] = std::to_string(options.batch);
  rep.info["flip_prob"] = std::to_string(options.flip_prob);
  rep.info["temperature"] = std::to_string(options.temperature);
  rep.info["weight_ones"] = std::to_string(options.weight_ones);
  rep.info["max_no_improve"] = std::to_string(limit);
  rep.info["seed"] = std::to_string(options.seed);
  rep.history = state.history;
  return rep;
}

}  // namespace detail

template <class ExecutionSpace>
Problem<typename ExecutionSpace::memory_space> make_problem(const ExecutionSpace& exec, std::int64_t rows,
                                                            std::int64_t cols, const std::vector<ordinal_t>& one_rows,
                                                            const std::vector<ordinal_t>& one_cols,
                                                            const Options& options) {
  options.validate();
  const auto h = detail::index_ones(rows, cols, one_rows, one_cols);
  detail::check_rank_fits(rows, cols, options);
  return detail::store_ones(exec, h, rows, cols, use_dense(options.dense_c, rows, cols, options.dense_limit_bytes));
}

template <class ExecutionSpace>
BooleanErrors full_error(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
                         const BitMatrix<typename ExecutionSpace::memory_space>& A,
                         const BitMatrix<typename ExecutionSpace::memory_space>& Bt) {
  BooleanErrors e =
      problem.dense ? hamming_error(exec, problem.c_rows, A, Bt) : hamming_error(exec, problem.by_row, A, Bt);
  e.rows = problem.rows;
  e.cols = problem.cols;
  return e;
}

template <class ExecutionSpace>
State<typename ExecutionSpace::memory_space> init(const ExecutionSpace& exec,
                                                  const Problem<typename ExecutionSpace::memory_space>& problem,
                                                  const Options& options) {
  return detail::init_on(exec, problem, options, detail::SingleProcess{detail::whole_layout(problem)});
}

template <class ExecutionSpace>
void step(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
          const Options& options, State<typename ExecutionSpace::memory_space>& s) {
  detail::step_on(exec, problem, options, s, detail::SingleProcess{detail::whole_layout(problem)});
}

template <class ExecutionSpace>
Report resume(const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem,
              const Options& options, State<typename ExecutionSpace::memory_space>& state, const Observer& observer) {
  options.validate();
  detail::check_rank_fits(problem.rows, problem.cols, options);
  if (state.A.lines != problem.rows || state.Bt.lines != problem.cols || state.A.bits != options.rank ||
      state.Bt.bits != options.rank)
    throw UsageError("bmf: the state's factors do not fit this problem and rank");
  return detail::resume_on(exec, problem, detail::whole_layout(problem), options, state, observer,
                           [&] { step(exec, problem, options, state); });
}

template <class ExecutionSpace>
kfactor::Result<State<typename ExecutionSpace::memory_space>> solve(
    const ExecutionSpace& exec, const Problem<typename ExecutionSpace::memory_space>& problem, const Options& options,
    const Observer& observer) {
  const auto t0 = std::chrono::steady_clock::now();
  kfactor::Result<State<typename ExecutionSpace::memory_space>> res{init(exec, problem, options), {}};
  const double init_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.report = resume(exec, problem, options, res.state, observer);
  res.report.timings.set("init", init_seconds);
  res.report.seconds += init_seconds;
  return res;
}

template <class MemorySpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_a(const State<MemorySpace>& state) {
  const auto h = copy_to<Kokkos::HostSpace>(state.has_best_copy ? state.best_A : state.A);
  return unpack_bits<std::uint8_t>(Kokkos::DefaultHostExecutionSpace{}, h);
}

template <class MemorySpace>
DenseMatrix<std::uint8_t, Kokkos::HostSpace> factor_b(const State<MemorySpace>& state) {
  const auto h = copy_to<Kokkos::HostSpace>(state.has_best_copy ? state.best_Bt : state.Bt);
  DenseMatrix<std::uint8_t, Kokkos::HostSpace> B("bmf::B", h.bits, h.lines);
  for (std::int64_t j = 0; j < h.lines; ++j)
    for (std::int64_t l = 0; l < h.bits; ++l) B(l, j) = h.get(j, l) ? 1 : 0;
  return B;
}

// Explicit instantiations live in src/bmf/bmf.cpp.
#define KFACTOR_BMF_EXTERN(Space, T)                                                                               \
  extern template Problem<Space::memory_space> make_problem<Space>(const Space&, std::int64_t, std::int64_t,       \
                                                                   const std::vector<ordinal_t>&,                  \
                                                                   const std::vector<ordinal_t>&, const Options&); \
  extern template State<Space::memory_space> init<Space>(const Space&, const Problem<Space::memory_space>&,        \
                                                         const Options&);                                          \
  extern template void step<Space>(const Space&, const Problem<Space::memory_space>&, const Options&,              \
                                   State<Space::memory_space>&);                                                   \
  extern template BooleanErrors full_error<Space>(const Space&, const Problem<Space::memory_space>&,               \
                                                  const BitMatrix<Space::memory_space>&,                           \
                                                  const BitMatrix<Space::memory_space>&);
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_BMF_EXTERN, void)
#undef KFACTOR_BMF_EXTERN

}  // namespace kfactor::bmf
