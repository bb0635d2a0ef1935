#pragma once
/// \file
/// One half-iteration of CuBin: propose a random multi-bit flip for each of
/// `count` consecutive lines (wrapping) of a factor X (the lines of A, or the
/// columns of B stored as lines of Bt), with the other factor Y fixed, compute
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

#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/bit_matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

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
  std::int64_t num_lines = 0;                              ///< lines of X
  std::int64_t len = 0;                                    ///< lines of Y (= length of a C line)
  std::int64_t start = 0, count = 0;
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

template <int MaxW, class ExecutionSpace, class MemorySpace>
void run_phase_impl(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  const auto X = p.X;
  const auto Y = p.Y;
  const auto C = p.C;
  const auto map = p.map;
  const auto idx = p.idx;
  const auto totals = p.totals;
  const auto offs = p.bit_offsets;
  const auto lists = p.bit_lists;
  const std::int64_t num_lines = p.num_lines, start = p.start;
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
      is_host_space_v<ExecutionSpace> ? Policy(exec, p.count, 1) : Policy(exec, p.count, Kokkos::AUTO);
  Kokkos::parallel_for(
      "kfactor::bmf::phase", policy, KOKKOS_LAMBDA(const Team& team) {
        const std::int64_t line = (start + team.league_rank()) % num_lines;
        const CounterRng rng(iter_key, (std::uint64_t(line) << 2) | phase);
        const CounterRng prop(iter_key, (std::uint64_t(line / group) << 2) | phase);
        bit_word_t old[MaxW], nw[MaxW], flip[MaxW];
        bit_word_t any_flip = 0;
        for (int q = 0; q < MaxW; ++q) {
          old[q] = q < W ? X(line, q) : 0;
          flip[q] = 0;
        }
        // Every bit flips independently with probability thr / 65536: four
        // 16-bit draws per 64-bit random word.
        for (int l = 0; l < bits; l += 4) {
          const std::uint64_t r = prop.bits(std::uint64_t(l / 4));
          for (int t = 0; t < 4 && l + t < bits; ++t)
            if (((r >> (16 * t)) & 0xFFFFu) < thr)
              flip[(l + t) / bit_word_bits] |= bit_word_t(1) << ((l + t) % bit_word_bits);
        }
        for (int q = 0; q < MaxW; ++q) {
          nw[q] = old[q] ^ flip[q];
          any_flip |= flip[q];
        }
        if (any_flip == 0) return;  // empty proposal: nothing changes (same for the whole team)

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
            const bool c = (C(line, i / bit_word_bits) >> (i % bit_word_bits)) & 1u;
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
          const offset_t e0 = map(line), e1 = map(line + 1);
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
        const double delta = double(dfp) + w1 * double(dfn);
        bool accept = delta < 0.0;
        if (!accept && T > 0.0) accept = rng.uniform(accept_at) < Kokkos::exp(-delta / T);
        if (!accept) return;
        // The team reductions above are barriers: every thread has read X(line) already.
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          for (int q = 0; q < W && q < MaxW; ++q) X(line, q) = nw[q];
          Kokkos::atomic_add(&totals(0), dfp);
          Kokkos::atomic_add(&totals(1), dfn);
          Kokkos::atomic_add(&totals(2), std::int64_t(1));
        });
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

template <class ExecutionSpace, class MemorySpace>
void run_phase(const ExecutionSpace& exec, const PhaseArgs<MemorySpace>& p) {
  const int W = bit_words(p.bits);
  if (W <= 1)
    run_phase_impl<1>(exec, p);
  else if (W <= 2)
    run_phase_impl<2>(exec, p);
  else if (W <= 4)
    run_phase_impl<4>(exec, p);
  else if (W <= 8)
    run_phase_impl<8>(exec, p);
  else
    run_phase_impl<16>(exec, p);
}

}  // namespace kfactor::bmf::detail
