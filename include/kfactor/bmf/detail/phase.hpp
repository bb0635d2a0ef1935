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
/// so the cost is O(nzY * W + nnz_line * W), nzY = nonzero lines of Y (the
/// other lines cannot change), and entries whose Y line does not
/// meet the flipped bits are skipped with one AND per word.

#include <kfactor/core/random.hpp>
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
  Kokkos::View<const offset_t*, MemorySpace> map;                         ///< sparse: ones per X line
  Kokkos::View<const ordinal_t*, MemorySpace> idx;
  Kokkos::View<const ordinal_t*, MemorySpace> nz;       ///< indices of the nonzero lines of Y
  Kokkos::View<const std::int64_t*, MemorySpace> nz_count;  ///< [how many]
  Kokkos::View<std::int64_t*, MemorySpace> totals;  ///< [FP, FN, accepted]: accepted deltas are added
  std::int64_t num_lines = 0;                       ///< lines of X
  std::int64_t len = 0;                             ///< lines of Y (= length of a C line)
  std::int64_t start = 0, count = 0;
  int bits = 0;
  std::uint64_t iter_key = 0;  ///< CounterRng key of (seed, iteration)
  std::uint64_t phase = 0;     ///< 0 columns of B, 1 rows of A
  std::uint32_t flip_threshold = 0;  ///< flip when a 16-bit draw < threshold (p * 65536)
  double temperature = 0.0;
  double weight_ones = 1.0;
  bool dense = true;
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
  const auto nz = p.nz;
  const auto nz_count = p.nz_count;
  const std::int64_t num_lines = p.num_lines, start = p.start;
  const int bits = p.bits;
  const int W = bit_words(bits);
  const std::uint64_t iter_key = p.iter_key, phase = p.phase;
  const std::uint32_t thr = p.flip_threshold;
  const double T = p.temperature, w1 = p.weight_ones;
  const bool dense = p.dense;
  constexpr std::int64_t hi = std::int64_t(1) << 32;
  Kokkos::parallel_for(
      "kfactor::bmf::phase", Policy(exec, p.count, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& team) {
        const std::int64_t line = (start + team.league_rank()) % num_lines;
        const CounterRng rng(iter_key, (std::uint64_t(line) << 2) | phase);
        bit_word_t old[MaxW], nw[MaxW], flip[MaxW];
        bit_word_t any_flip = 0;
        for (int q = 0; q < MaxW; ++q) {
          old[q] = q < W ? X(line, q) : 0;
          flip[q] = 0;
        }
        // Every bit flips independently with probability thr / 65536: four
        // 16-bit draws per 64-bit random word.
        for (int l = 0; l < bits; l += 4) {
          const std::uint64_t r = rng.bits(std::uint64_t(l / 4));
          for (int t = 0; t < 4 && l + t < bits; ++t)
            if (((r >> (16 * t)) & 0xFFFFu) < thr) flip[(l + t) / bit_word_bits] |= bit_word_t(1) << ((l + t) % bit_word_bits);
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

        // Only nonzero lines of Y can meet the flipped bits.
        const std::int64_t nnz_y = nz_count(0);
        std::int64_t packed = 0;  // dFP * 2^32 + dFN (dense) or S_all * 2^32 + S_ones (sparse)
        if (dense) {
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, nnz_y),
              [&](std::int64_t t, std::int64_t& s) {
                const std::int64_t i = nz(t);
                const int dv = dv_of(i);
                if (dv != 0) {
                  const bool c = (C(line, i / bit_word_bits) >> (i % bit_word_bits)) & 1u;
                  s += c ? std::int64_t(-dv) : std::int64_t(dv) * hi;
                }
              },
              packed);
        } else {
          std::int64_t ones_part = 0;
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(team, nnz_y),
              [&](std::int64_t t, std::int64_t& s) { s += std::int64_t(dv_of(nz(t))) * hi; },
              packed);
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
        if (!accept && T > 0.0) accept = rng.uniform(accept_counter) < Kokkos::exp(-delta / T);
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

/// nz(0..count) = indices of the nonzero lines of Y, count(0) = how many.
template <class ExecutionSpace, class MemorySpace>
void nonzero_lines(const ExecutionSpace& exec, Kokkos::View<const bit_word_t**, Kokkos::LayoutRight, MemorySpace> Y,
                   Kokkos::View<ordinal_t*, MemorySpace> nz, Kokkos::View<std::int64_t*, MemorySpace> count) {
  const std::int64_t len = Y.extent(0);
  const int W = int(Y.extent(1));
  Kokkos::parallel_scan(
      "kfactor::bmf::nonzero_lines", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, len),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t& pos, bool final) {
        bit_word_t any = 0;
        for (int q = 0; q < W; ++q) any |= Y(r, q);
        if (any != 0) {
          if (final) nz(pos) = ordinal_t(r);
          ++pos;
        }
        if (final && r == len - 1) count(0) = pos;
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
