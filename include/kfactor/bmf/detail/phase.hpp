#pragma once
/// \file
/// One half-iteration of CuBin: propose a random multi-bit flip for each of
/// `count` lines of a factor X (the lines of A, or the columns of B stored as
/// lines of Bt), spread evenly over X (every `stride`-th line from a random
/// start, wrapping once), with the other factor Y fixed, compute
/// each proposal's exact error change from its own line of C only, and accept
/// it when it lowers the (weighted) error strictly, or by Metropolis.
///
/// Lines of one batch touch disjoint lines of C and Y stays fixed, so the
/// deltas computed in parallel are exact and the result does not depend on
/// the thread count or the order the lines run in. Each decision is a
/// function of (seed, iteration, phase, line) through CounterRng only.
///
/// Error change of line x (X_x: old -> new), over the entries i of its C line:
///   o_i = [Y_i & old != 0], w_i = [Y_i & new != 0], dv_i = w_i - o_i,
///   dFP = sum_{c_i = 0} dv_i,  dFN = -sum_{c_i = 1} dv_i.
/// Dense C: read c_i from the bit line. Sparse C (CSR of ones of the line):
///   S_all = sum_i dv_i (all entries), S_ones = sum_{ones} dv_i,
///   dFP = S_all - S_ones, dFN = -S_ones,
/// where only entries whose Y line holds a flipped bit can have dv != 0: they
/// are found through an inverted index of Y's bits (BitIndex, built once per
/// phase), so a line costs O((sum over flipped bits l of |Y lines with bit l|
/// + nnz_line) * W) instead of O(len * W).
///
/// A process may hold only some lines of X and of C (PhaseArgs::x_begin:
/// the rows of A and of C of one rank of the distributed solver): it takes
/// the window's lines that it holds (window_runs). CuBin's window is `count`
/// consecutive lines; spread over X, every rank of a row-split run holds
/// its share of the window instead of one rank holding all of it. And a
/// proposal's delta may be a sum over processes (B's columns when C's rows are split): then
/// run_phase only stores each proposal's partial (dFP, dFN) in
/// PhaseArgs::deltas, the caller sums them over the processes, and
/// decide_phase makes the decisions from the sums, the same on every process.

#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/bit_matrix.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kfactor::bmf::detail {

/// Counter of the acceptance draw inside a line's stream (above every
/// proposal chunk counter).
inline constexpr std::uint64_t accept_counter = std::uint64_t(1) << 40;

/// Everything one phase needs, plain data so it can be captured by value.
template <class MemorySpace>
struct PhaseArgs {
  Kokkos::View<bit_word_t**, Kokkos::LayoutRight, MemorySpace> X;        ///< lines being changed
  Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, MemorySpace> Y;  ///< fixed factor
  Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, MemorySpace> C;  ///< dense: C lines aligned with X
  Kokkos::View<const offset_t*, MemorySpace> map;                        ///< sparse: ones per X line
  Kokkos::View<const ordinal_t*, MemorySpace> idx;
  Kokkos::View<const offset_t*, MemorySpace> bit_offsets;  ///< inverted index of Y: lines with bit l set are
  Kokkos::View<const ordinal_t*, MemorySpace> bit_lists;   ///< bit_lists(bit_offsets(l) .. bit_offsets(l+1))
  Kokkos::View<std::int64_t*, MemorySpace> totals;         ///< [FP, FN, accepted]: accepted deltas are added
  /// When allocated (2 count entries): run_phase stores the (dFP, dFN) of
  /// window slot s in deltas(2 s), deltas(2 s + 1) and decides nothing.
  Kokkos::View<std::int64_t*, MemorySpace> deltas;
  std::int64_t num_lines = 0;  ///< lines of X in the whole problem (the window wraps around them)
  std::int64_t x_begin = 0;    ///< line x_begin of the whole X is X(0) here (and C's line 0)
  std::int64_t len = 0;        ///< lines of Y (= length of a C line)
  /// The window: slot s is line (start + s stride) mod num_lines, for s < count
  /// (window_stride: distinct lines, wrapping once at most).
  std::int64_t start = 0, count = 0, stride = 1;
  int bits = 0;
  std::uint64_t iter_key = 0;        ///< CounterRng key of (seed, iteration)
  std::uint64_t phase = 0;           ///< 0 columns of B, 1 rows of A
  std::uint32_t flip_threshold = 0;  ///< flip when a 16-bit draw < threshold (p * 65536)
  double temperature = 0.0;
  double weight_ones = 1.0;
  bool dense = true;
  std::int64_t group = 1;  ///< lines line / group equal share one flip mask
  bool use_index = true;   ///< walk the inverted bit lists (else scan all lines of Y)
};

/// The flip mask of a proposal: every bit of `bits` flips independently
/// with probability thr / 65536 (four 16-bit draws per 64-bit random word of
/// `prop`). Returns the OR of the mask's words (0: an empty proposal).
template <int MaxW>
KOKKOS_INLINE_FUNCTION bit_word_t proposal_mask(const CounterRng& prop, int bits, std::uint32_t thr,
                                                bit_word_t (&flip)[MaxW]) {
  for (int q = 0; q < MaxW; ++q) flip[q] = 0;
  for (int l = 0; l < bits; l += 4) {
    const std::uint64_t r = prop.bits(std::uint64_t(l / 4));
    for (int t = 0; t < 4 && l + t < bits; ++t)
      if (((r >> (16 * t)) & 0xFFFFu) < thr)
        flip[(l + t) / bit_word_bits] |= bit_word_t(1) << ((l + t) % bit_word_bits);
  }
  bit_word_t any = 0;
  for (int q = 0; q < MaxW; ++q) any |= flip[q];
  return any;
}

/// Whether a proposal with error change (dfp, dfn) is accepted: a strict
/// drop of the weighted error, or Metropolis' exp(-delta / T) against the
/// line's acceptance draw (`accept_at` of its stream `rng`).
KOKKOS_INLINE_FUNCTION bool accepts(std::int64_t dfp, std::int64_t dfn, double weight_ones, double T,
                                    const CounterRng& rng, std::uint64_t accept_at) {
  const double delta = double(dfp) + weight_ones * double(dfn);
  bool accept = delta < 0.0;
  if (!accept && T > 0.0) accept = rng.uniform(accept_at) < Kokkos::exp(-delta / T);
  return accept;
}

/// The streams of line `line` in a phase: its own (acceptance) and its
/// proposal group's (flip mask).
KOKKOS_INLINE_FUNCTION CounterRng line_stream(std::uint64_t iter_key, std::int64_t line, std::uint64_t phase) {
  return CounterRng(iter_key, (std::uint64_t(line) << 2) | phase);
}

/// The spacing of a window of `count` of `num_lines` lines: as wide as
/// keeps its lines distinct.
inline std::int64_t window_stride(std::int64_t count, std::int64_t num_lines) {
  return count > 0 ? std::max<std::int64_t>(1, num_lines / count) : 1;
}

/// Lines first + j stride, j < count, of the window (no wrap): window slots
/// from `slot` on.
struct WindowRun {
  std::int64_t first = 0, count = 0, slot = 0;
};

/// The window's lines held here, lines [lo, hi) of the whole X, as at most
/// two runs (the window wraps once at most).
inline int window_runs(std::int64_t start, std::int64_t count, std::int64_t stride, std::int64_t num_lines,
                       std::int64_t lo, std::int64_t hi, WindowRun (&runs)[2]) {
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return a <= 0 ? std::int64_t(0) : (a + b - 1) / b; };
  // Slots before the wrap: lines start + s stride < num_lines.
  const std::int64_t before = std::min(count, ceil_div(num_lines - start, stride));
  const WindowRun pieces[2] = {{start, before, 0}, {start + before * stride - num_lines, count - before, before}};
  int n = 0;
  for (const auto& piece : pieces) {
    const std::int64_t j0 = ceil_div(lo - piece.first, stride);
    const std::int64_t j1 = std::min(piece.count, ceil_div(hi - piece.first, stride));
    if (j1 > j0) runs[n++] = {piece.first + j0 * stride, j1 - j0, piece.slot + j0};
  }
  return n;
}

template <int MaxW, class ExecutionSpace, class MemorySpace>
void run_phase_impl(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p, const WindowRun& run) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  const auto X = p.X;
  const auto Y = p.Y;
  const auto C = p.C;
  const auto map = p.map;
  const auto idx = p.idx;
  const auto totals = p.totals;
  const auto deltas = p.deltas;
  const bool only_deltas = p.deltas.extent(0) > 0;
  const auto offs = p.bit_offsets;
  const auto lists = p.bit_lists;
  const std::int64_t first = run.first, slot0 = run.slot, x_begin = p.x_begin, stride = p.stride;
  const int bits = p.bits;
  const int W = bit_words(bits);
  const std::uint64_t iter_key = p.iter_key, phase = p.phase;
  const std::uint32_t thr = p.flip_threshold;
  const double T = p.temperature, w1 = p.weight_ones;
  const bool dense = p.dense;
  const std::int64_t group = p.group;
  const bool use_index = p.use_index;
  const std::int64_t len = p.len;
  const std::uint64_t accept_at = accept_counter;  // a local, not a namespace constant, in device code
  const std::int64_t hi = std::int64_t(1) << 32;
  // Host backends: one thread per line (a team barrier per reduction would
  // cost more than the line's work); device backends: a team per line.
  const Policy policy =
      is_host_space_v<ExecutionSpace> ? Policy(exec, run.count, 1) : Policy(exec, run.count, Kokkos::AUTO);
  Kokkos::parallel_for(
      "kfactor::bmf::phase", policy, KOKKOS_LAMBDA(const Team& team) {
        const std::int64_t line = first + team.league_rank() * stride;
        const std::int64_t x = line - x_begin;  // its line of X and of C here
        bit_word_t old[MaxW], nw[MaxW], flip[MaxW];
        if (proposal_mask(line_stream(iter_key, line / group, phase), bits, thr, flip) == 0)
          return;  // empty proposal: nothing changes (same for the whole team)
        for (int q = 0; q < MaxW; ++q) {
          old[q] = q < W ? X(x, q) : 0;
          nw[q] = old[q] ^ flip[q];
        }

        // dv for entry i of the line: +1 when it turns on, -1 when it turns off.
        auto dv_of = [&](std::int64_t i) -> int {
          bit_word_t touched = 0, o = 0, w = 0;
          for (int q = 0; q < W && q < MaxW; ++q) {
            const bit_word_t y = Y(i, q);
            touched |= y & flip[q];
            o |= y & old[q];
            w |= y & nw[q];
          }
          if (touched == 0) return 0;
          return int(w != 0) - int(o != 0);
        };

        // Only lines of Y that hold a flipped bit can change: walk the
        // inverted lists of the flipped bits; a line on several of them is
        // counted on the list of its lowest flipped bit only.
        auto lowest_flipped = [&](std::int64_t i) -> int {
          for (int q = 0; q < W && q < MaxW; ++q) {
            const bit_word_t t = Y(i, q) & flip[q];
            if (t != 0) return q * bit_word_bits + Kokkos::Experimental::countr_zero_builtin(t);
          }
          return -1;
        };
        std::int64_t packed = 0;  // dFP * 2^32 + dFN (dense) or S_all * 2^32 + S_ones (sparse)
        auto contribution = [&](std::int64_t i, int dv) -> std::int64_t {
          if (dense) {
            const bool c = (C(x, i / bit_word_bits) >> (i % bit_word_bits)) & 1u;
            return c ? std::int64_t(-dv) : std::int64_t(dv) * hi;
          }
          return std::int64_t(dv) * hi;
        };
        if (!use_index) {  // small Y: one pass over all its lines, no index to build
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, len),
              [&](std::int64_t i, std::int64_t& s) {
                const int dv = dv_of(i);
                if (dv != 0) s += contribution(i, dv);
              },
              packed);
        }
        for (int q = 0; use_index && q < W && q < MaxW; ++q) {
          bit_word_t fq = flip[q];
          while (fq != 0) {
            const int l = q * bit_word_bits + Kokkos::Experimental::countr_zero_builtin(fq);
            fq &= fq - 1;
            std::int64_t part = 0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, offs(l), offs(l + 1)),
                [&](offset_t e, std::int64_t& s) {
                  const std::int64_t i = lists(e);
                  if (lowest_flipped(i) != l) return;
                  const int dv = dv_of(i);
                  if (dv != 0) s += contribution(i, dv);
                },
                part);
            packed += part;
          }
        }
        if (!dense) {
          std::int64_t ones_part = 0;
          const offset_t e0 = map(x), e1 = map(x + 1);
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, e0, e1), [&](offset_t e, std::int64_t& s) { s += dv_of(idx(e)); },
              ones_part);
          packed += ones_part;
        }
        const std::int64_t low = std::int64_t(std::int32_t(std::uint32_t(std::uint64_t(packed) & 0xFFFFFFFFu)));
        const std::int64_t high = (packed - low) / hi;
        std::int64_t dfp, dfn;
        if (dense) {
          dfp = high;
          dfn = low;
        } else {
          dfp = high - low;
          dfn = -low;
        }
        if (only_deltas) {
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            deltas(2 * (slot0 + team.league_rank())) = dfp;
            deltas(2 * (slot0 + team.league_rank()) + 1) = dfn;
          });
          return;
        }
        if (!accepts(dfp, dfn, w1, T, line_stream(iter_key, line, phase), accept_at)) return;
        // The team reductions above are barriers: every thread has read X(line) already.
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          for (int q = 0; q < W && q < MaxW; ++q) X(x, q) = nw[q];
          Kokkos::atomic_add(&totals(0), dfp);
          Kokkos::atomic_add(&totals(1), dfn);
          Kokkos::atomic_add(&totals(2), std::int64_t(1));
        });
      });
}

/// The decisions of a phase whose deltas (PhaseArgs::deltas, summed over
/// the processes) are known: the same tests as run_phase's, per window
/// slot. X holds the whole factor (x_begin = 0: B's columns).
template <int MaxW, class ExecutionSpace, class MemorySpace>
void decide_phase_impl(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) {
  const auto X = p.X;
  const auto totals = p.totals;
  const auto deltas = p.deltas;
  const std::int64_t num_lines = p.num_lines, start = p.start, stride = p.stride;
  const int bits = p.bits;
  const int W = bit_words(bits);
  const std::uint64_t iter_key = p.iter_key, phase = p.phase;
  const std::uint32_t thr = p.flip_threshold;
  const double T = p.temperature, w1 = p.weight_ones;
  const std::int64_t group = p.group;
  const std::uint64_t accept_at = accept_counter;
  Kokkos::parallel_for(
      "kfactor::bmf::decide", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, p.count), KOKKOS_LAMBDA(std::int64_t s) {
        const std::int64_t line = (start + s * stride) % num_lines;
        bit_word_t flip[MaxW];
        if (proposal_mask(line_stream(iter_key, line / group, phase), bits, thr, flip) == 0) return;
        const std::int64_t dfp = deltas(2 * s), dfn = deltas(2 * s + 1);
        if (!accepts(dfp, dfn, w1, T, line_stream(iter_key, line, phase), accept_at)) return;
        for (int q = 0; q < W && q < MaxW; ++q) X(line, q) ^= flip[q];
        Kokkos::atomic_add(&totals(0), dfp);
        Kokkos::atomic_add(&totals(1), dfn);
        Kokkos::atomic_add(&totals(2), std::int64_t(1));
      });
}

/// Inverted index of the bits of Y: for every bit l, the lines of Y that
/// have it, in bit_lists(bit_offsets(l) .. bit_offsets(l + 1)) (any order:
/// the deltas are integer sums). Built per phase in O(len * W + set bits).
template <class MemorySpace>
struct BitIndex {
  Kokkos::View<offset_t*, MemorySpace> offsets;  ///< bits + 1
  Kokkos::View<offset_t*, MemorySpace> cursor;   ///< bits
  Kokkos::View<ordinal_t*, MemorySpace> lists;
  bool full_capacity = false;  ///< lists can hold len * bits entries (no size read-back needed)
};

template <class ExecutionSpace, class MemorySpace>
void build_bit_index(const ExecutionSpace& exec, Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, MemorySpace> Y,
                     int bits, BitIndex<MemorySpace>& ix) {
  const std::int64_t len = Y.extent(0);
  const int W = int(Y.extent(1));
  if (ix.offsets.extent(0) != std::size_t(bits) + 1) {
    ix.offsets = Kokkos::View<offset_t*, MemorySpace>("bmf::bit_offsets", bits + 1);
    ix.cursor = Kokkos::View<offset_t*, MemorySpace>("bmf::bit_cursor", bits);
    ix.lists = {};
  }
  // Capacity len * bits when that is at most 64 Mi entries; else sized from a read-back.
  const std::size_t full = std::size_t(len) * std::size_t(bits);
  ix.full_capacity = full <= (std::size_t(1) << 26);
  if (ix.full_capacity && ix.lists.extent(0) < full)
    ix.lists = Kokkos::View<ordinal_t*, MemorySpace>(
        Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bmf::bit_lists"), full);
  const auto offsets = ix.offsets;
  const auto cursor = ix.cursor;
  Kokkos::deep_copy(exec, offsets, offset_t(0));
  Kokkos::parallel_for(
      "kfactor::bmf::bit_count", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, len), KOKKOS_LAMBDA(std::int64_t i) {
        for (int q = 0; q < W; ++q) {
          bit_word_t w = Y(i, q);
          while (w != 0) {
            const int l = q * bit_word_bits + Kokkos::Experimental::countr_zero_builtin(w);
            w &= w - 1;
            Kokkos::atomic_inc(&offsets(l + 1));
          }
        }
      });
  Kokkos::parallel_for(
      "kfactor::bmf::bit_offsets", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, 1), KOKKOS_LAMBDA(int) {
        for (int l = 0; l < bits; ++l) {
          offsets(l + 1) += offsets(l);
          cursor(l) = offsets(l);
        }
      });
  if (!ix.full_capacity) {
    offset_t total = 0;
    Kokkos::deep_copy(exec, total, Kokkos::subview(offsets, bits));
    exec.fence();
    if (ix.lists.extent(0) < total)
      ix.lists = Kokkos::View<ordinal_t*, MemorySpace>(
          Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "bmf::bit_lists"), total + total / 4 + 1024);
  }
  const auto lists = ix.lists;
  Kokkos::parallel_for(
      "kfactor::bmf::bit_fill", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, len), KOKKOS_LAMBDA(std::int64_t i) {
        for (int q = 0; q < W; ++q) {
          bit_word_t w = Y(i, q);
          while (w != 0) {
            const int l = q * bit_word_bits + Kokkos::Experimental::countr_zero_builtin(w);
            w &= w - 1;
            lists(Kokkos::atomic_fetch_add(&cursor(l), offset_t(1))) = ordinal_t(i);
          }
        }
      });
}

/// Largest supported rank (16 words per line).
inline constexpr int max_rank = 16 * bit_word_bits;

/// f(std::integral_constant<int, MaxW>) for the smallest supported MaxW >= words.
template <class F>
void with_max_words(int words, F&& f) {
  if (words <= 1)
    f(std::integral_constant<int, 1>{});
  else if (words <= 2)
    f(std::integral_constant<int, 2>{});
  else if (words <= 4)
    f(std::integral_constant<int, 4>{});
  else if (words <= 8)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, 16>{});
}

/// The phase on the window's lines held here (X's lines [x_begin,
/// x_begin + X.extent(0)) of the whole X): decided and applied, or with
/// PhaseArgs::deltas only the deltas stored.
template <class ExecutionSpace, class MemorySpace>
void run_phase(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) {
  WindowRun runs[2];
  const int n =
      window_runs(p.start, p.count, p.stride, p.num_lines, p.x_begin, p.x_begin + std::int64_t(p.X.extent(0)), runs);
  with_max_words(bit_words(p.bits), [&](auto max_words) {
    for (int r = 0; r < n; ++r) run_phase_impl<decltype(max_words)::value>(exec, p, runs[r]);
  });
}

/// decide_phase_impl for p.bits.
template <class ExecutionSpace, class MemorySpace>
void decide_phase(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) {
  with_max_words(bit_words(p.bits), [&](auto max_words) { decide_phase_impl<decltype(max_words)::value>(exec, p); });
}

/// dst(i) += src(i) for the 3 counters [FP, FN, accepted].
template <class ExecutionSpace, class MemorySpace>
void add_totals(const ExecutionSpace& exec, const Kokkos::View<std::int64_t*, MemorySpace>& dst,
                const Kokkos::View<std::int64_t*, MemorySpace>& src) {
  Kokkos::parallel_for(
      "kfactor::bmf::add_totals", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, 3),
      KOKKOS_LAMBDA(int i) { dst(i) += src(i); });
}

}  // namespace kfactor::bmf::detail
