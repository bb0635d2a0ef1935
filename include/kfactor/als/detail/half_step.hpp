#pragma once
/// \file
/// One ALS half-step in team code: build the per-row normal equations
/// (S1 = Y_u^T Y_u + lambda_u I, S2 = Y_u^T r_u) from either traversal
/// structure (BALS tiles or plain CSR), then factor and solve them with the
/// team Cholesky of kernels/batched_cholesky.hpp. Rows are processed in
/// batches of whole row blocks; per batch the normal equations live in one
/// batch x f x f buffer, so memory never needs m * f^2 at once.
///
/// S1 is built as a symmetric rank update. Each thread owns register tiles
/// of B x B entries of the lower triangle of S1 (plus B-entry pieces of S2)
/// of one row of the row block and reads, per nonzero, the two B-wide
/// pieces of the Y row its tile needs (contiguous: vector loads). Where the
/// Y rows come from is the one difference between the two structures:
///  - BALS tiles: the distinct columns of a tile are staged once in team
///    scratch for the xb rows of the row block (the BALS reuse), padded with
///    zeros to a multiple of B;
///  - CSR: every thread reads the Y rows straight from memory (L1 serves the
///    team's other threads): no staging, no barriers, no scratch, so a
///    team's warps run independently and hide each other's latency.
/// Every entry is a sequential sum over the row's nonzeros in CSR (column)
/// order, whatever the structure, the tile, the team size or the batch: a
/// row's result depends only on the row, so batch size changes nothing, and
/// the tiled and plain paths give the same bits. One exception, on devices:
/// CSR rows of at least Tuning::split_from ratings are summed by several
/// groups of one team, a contiguous part each, added in group order (still
/// deterministic and batch-independent; equal to the tiled path up to
/// rounding). Row blocks are launched longest first (HalfStepStructure::
/// schedule), so the longest rows start at once instead of trailing behind.
/// A row's sums may also be built in parts, one column block at a time
/// (NormalEquationPart: later parts continue the sums stored in the batch
/// buffers): the distributed blocked layout, where the other factor arrives
/// block by block.

#include <kfactor/als/bals_format.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/madd.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/batched_cholesky.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kfactor::als::detail {

/// Tuning traits keyed on the execution space.
template <class ExecutionSpace, bool Host = is_host_space_v<ExecutionSpace>>
struct Tuning {
  // GPU: 8 x 8 register tiles (4 multiply-adds per load), one tile per thread.
  static constexpr int block = 8;
  static constexpr int tiles_per_thread = 1;
  static constexpr int max_team = 512;
  static constexpr int warp = 32;
  static constexpr std::size_t scratch_budget = 160 * 1024;  ///< bytes of team scratch for the tiled path
  /// CSR rows with at least this many ratings are split among up to
  /// max_groups groups of threads of one team (a whole multiprocessor), each
  /// summing a contiguous part; one team per such row would otherwise run
  /// far behind the rest (Netflix's most rated items: 10^5 ratings).
  static constexpr int split_from = 1024;
  static constexpr int max_groups = 16;
  /// Registers capped for max_team threads per multiprocessor (128 each):
  /// the split code would otherwise take 168 and cost a team per SM.
  using Bounds = Kokkos::LaunchBounds<max_team, 1>;
};
template <class ExecutionSpace>
struct Tuning<ExecutionSpace, true> {
  // Host: one thread per team; a thread sweeps many 4 x 4 tiles per pass
  // (the accumulators stay in L1).
  static constexpr int block = 4;
  static constexpr int tiles_per_thread = 32;
  static constexpr int max_team = 1;
  static constexpr int warp = 1;
  static constexpr std::size_t scratch_budget = 1024 * 1024;
  static constexpr int split_from = 1 << 30;  // one thread per team: nothing to split among
  static constexpr int max_groups = 1;
  using Bounds = Kokkos::LaunchBounds<>;
};

/// The traversal structure of one half-step (users: R; items: R^T).
/// Internal rows may be a permutation of the original ones (reordering);
/// `row_orig` maps them back, and tile_colidx holds original ids of the other
/// factor's rows, so factors are always addressed by original ids.
template <class T, class MemorySpace>
struct HalfStepStructure {
  bool tiled = false;
  ordinal_t rows = 0;          ///< rows of this half-step's factor
  ordinal_t other_rows = 0;    ///< rows of the fixed factor
  offset_t nnz = 0;
  int xb = 1, yb = 0;          ///< tile (tiled) or 1 x 0 (CSR)
  ordinal_t ntc = 1;           ///< tile columns per row block (1 for CSR)
  int max_tile_columns = 0;    ///< tiled: scratch rows needed per tile
  Kokkos::View<offset_t*, MemorySpace> tile_ptr;      ///< CSR: row_map
  Kokkos::View<ordinal_t*, MemorySpace> tile_colidx;  ///< CSR: entries (original ids)
  Kokkos::View<offset_t*, MemorySpace> seg_ptr;       ///< tiled only
  Kokkos::View<int*, MemorySpace> seg_colidx;         ///< tiled only
  Kokkos::View<T*, MemorySpace> value;
  Kokkos::View<ordinal_t*, MemorySpace> row_orig;     ///< internal row -> original row
  Kokkos::View<int*, MemorySpace> row_count;          ///< n_u per internal row
  /// Launch order of the row blocks (most ratings first); empty: natural order.
  Kokkos::View<ordinal_t*, MemorySpace> schedule;
  /// CSR path: the first `long_blocks` scheduled rows have at least
  /// Tuning::split_from ratings and are split among groups of a larger team.
  ordinal_t long_blocks = 0;
  BalsStats stats;                                    ///< tiled only
};

/// Shape of the register tiling for rank f and tile height xb.
struct TileShape {
  int f = 0, block = 1, nblk = 0, fp = 0, pairs = 0, per_row = 0, total = 0;
  TileShape(int f_, int block_, int xb) : f(f_), block(block_) {
    nblk = (f + block - 1) / block;
    fp = nblk * block;
    pairs = nblk * (nblk + 1) / 2;
    per_row = pairs + nblk;  // Gram blocks of the lower triangle, then S2 pieces
    total = xb * per_row;
  }
};

/// Fast (level-0) team scratch per team on this space, capped by the tuning budget.
template <class ExecutionSpace>
std::size_t fast_scratch_bytes() {
  // On hosts both scratch levels are ordinary (cached) memory.
  if constexpr (is_host_space_v<ExecutionSpace>) return Tuning<ExecutionSpace>::scratch_budget;
  const Kokkos::TeamPolicy<ExecutionSpace> probe(1, 1);
  return std::min<std::size_t>(Tuning<ExecutionSpace>::scratch_budget, std::size_t(probe.scratch_size_max(0)));
}

/// Team scratch bytes the normal-equation kernel needs (none on the CSR path).
template <class ExecutionSpace, class T>
std::size_t normal_equation_scratch(bool tiled, int f, int xb, int max_tile_columns) {
  if (!tiled) return 0;
  using Tn = Tuning<ExecutionSpace>;
  const TileShape s(f, Tn::block, xb);
  const std::size_t rows = std::size_t(std::max(1, max_tile_columns));
  const std::size_t entries = rows * xb;
  using ST = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using SI = Kokkos::View<int*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  return ST::shmem_size(rows * s.fp) + ST::shmem_size(entries) + SI::shmem_size(entries + xb + 1);
}

/// Which part of a row's sums one call of build_normal_equations adds: the
/// whole sum (the default), or one column block of it (the distributed
/// blocked layout: the first block starts from zero, later ones continue
/// the sums already in A and b, and the last adds lambda_u). The blocks'
/// calls in column order give the same bits as one call on the whole row.
struct NormalEquationPart {
  bool accumulate = false;  ///< start from A and b instead of zero
  bool add_lambda = true;   ///< add lambda_u to the diagonal when storing
};

/// Where register tile p of a row sits: Gram block (bi, bj) of the lower
/// triangle (p < pairs, bj <= bi), or S2 piece bi (bj = -1).
KOKKOS_INLINE_FUNCTION void tile_blocks(int p, int pairs, int& bi, int& bj) {
  if (p >= pairs) {
    bi = p - pairs;
    bj = -1;
    return;
  }
  bi = int((Kokkos::sqrt(8.0 * p + 1.0) - 1.0) * 0.5);
  while (bi * (bi + 1) / 2 > p) --bi;
  while ((bi + 1) * (bi + 2) / 2 <= p) ++bi;
  bj = p - bi * (bi + 1) / 2;
}

/// out = y[j0, j0 + B), zero past `valid` (the end of an unpadded row).
template <int B, class T, class Y>
KOKKOS_INLINE_FUNCTION void load_piece(const Y* y, int j0, int valid, T (&out)[B]) {
  if (j0 + B <= valid) {
    for (int r = 0; r < B; ++r) out[r] = T(y[j0 + r]);
  } else {
    for (int r = 0; r < B; ++r) out[r] = j0 + r < valid ? T(y[j0 + r]) : T(0);
  }
}

/// Row block of launch position p: S.schedule(p), or p without a schedule.
template <class MemorySpace>
KOKKOS_INLINE_FUNCTION ordinal_t scheduled_block(const Kokkos::View<ordinal_t*, MemorySpace>& schedule,
                                                 std::int64_t p) {
  return schedule.extent(0) > 0 ? schedule(p) : ordinal_t(p);
}

/// Builds A (batch x f x f, lower triangle incl. lambda_u on the diagonal)
/// and b (batch x f) for the row blocks at launch positions [g0, g1) of
/// S.schedule (longest first, so they do not trail behind the rest); the
/// batch-local index of row rho of position g0 + k is k xb + rho. Y
/// (LayoutRight) is indexed by S.tile_colidx.
template <bool Tiled, class ExecutionSpace, class T, class MemorySpace, class YView>
void build_normal_equations(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const YView& Y,
                            int f, T lambda, bool weight_nnz, ordinal_t g0, ordinal_t g1,
                            const Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>& A,
                            const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& b,
                            NormalEquationPart part = {}) {
  static_assert(std::is_same_v<typename YView::array_layout, Kokkos::LayoutRight>, "Y rows must be contiguous");
  using Tn = Tuning<ExecutionSpace>;
  constexpr int B = Tn::block;
  constexpr int MT = Tn::tiles_per_thread;
  // Dynamic: on hosts, a static split of the scheduled (longest first)
  // row blocks would hand the first thread all the long rows.
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, typename Tn::Bounds, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  using Scratch = typename ExecutionSpace::scratch_memory_space;
  using ST = Kokkos::View<T*, Scratch, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using SI = Kokkos::View<int*, Scratch, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  if (g1 <= g0) return;
  const int xb = Tiled ? S.xb : 1;
  const TileShape shape(f, B, xb);
  const int fp = shape.fp, P = shape.pairs, PP = shape.per_row, total = shape.total;
  const int C = Tiled ? std::max(1, S.max_tile_columns) : 0;
  const std::size_t nent = std::size_t(C) * xb;
  const std::size_t bytes = normal_equation_scratch<ExecutionSpace, T>(Tiled, f, xb, S.max_tile_columns);

  int team = (total + MT - 1) / MT;
  team = (team + Tn::warp - 1) / Tn::warp * Tn::warp;
  team = std::min(team, Tn::max_team);
  // Long CSR rows: `groups` groups of `team` threads each sum a contiguous
  // part of the row; groups > 0 hand their sums to group 0 through scratch,
  // which adds them in group order (deterministic, batch-independent).
  const std::size_t part_bytes = std::size_t(team) * MT * B * B * sizeof(T);
  const int groups = Tiled ? 1
                           : std::max(1, std::min({Tn::max_groups, Tn::max_team / team,
                                                   int(1 + Tn::scratch_budget / part_bytes)}));
  const ordinal_t split_end = groups > 1 ? std::clamp(S.long_blocks, g0, g1) : g0;
  Policy probe(exec, 1, 1);
  const std::size_t split_bytes = ST::shmem_size(std::size_t(groups - 1) * team * MT * B * B);
  const int level = bytes + split_bytes <= std::size_t(probe.scratch_size_max(0)) ? 0 : 1;
  auto tile_ptr = S.tile_ptr;
  auto tile_colidx = S.tile_colidx;
  auto seg_ptr = S.seg_ptr;
  auto seg_colidx = S.seg_colidx;
  auto value = S.value;
  auto row_count = S.row_count;
  auto schedule = S.schedule;
  const ordinal_t ntc = Tiled ? S.ntc : 1;
  const ordinal_t rows = S.rows;
  const bool continue_sums = part.accumulate, add_lambda = part.add_lambda;

  // Launch over positions [p0, p1) of the schedule, in groups of `ng`;
  // returns 0, or the number of groups that fit when ng do not (registers).
  auto launch = [&](ordinal_t p0, ordinal_t p1, int ng) -> int {
    if (p1 <= p0) return 0;
    auto kernel = KOKKOS_LAMBDA(const Team& tm) {
      const std::int64_t pos = std::int64_t(p0) + tm.league_rank();
      const ordinal_t g = scheduled_block(schedule, pos);
      const std::size_t lb0 = std::size_t(pos - g0) * xb;  // batch-local index of the block's first row
      const int T_ = tm.team_size() / ng;  // threads per group
      const int grp = tm.team_rank() / T_, tid = tm.team_rank() % T_;
      ST sPart(tm.team_scratch(level), std::size_t(ng - 1) * T_ * MT * B * B);
      ST sY(tm.team_scratch(level), std::size_t(C) * fp);
      ST sV(tm.team_scratch(level), nent);
      SI sS(tm.team_scratch(level), Tiled ? nent + xb + 1 : 0);
      const int npass = (total + T_ * MT - 1) / (T_ * MT);
      for (int pass = 0; pass < npass; ++pass) {
        T acc[MT][B][B];
        int q_of[MT], bi_of[MT], bj_of[MT];
        for (int s = 0; s < MT; ++s) {
          const int q = tid + T_ * (pass * MT + s);
          q_of[s] = q;
          tile_blocks(q % PP, P, bi_of[s], bj_of[s]);
          for (int r = 0; r < B; ++r)
            for (int c = 0; c < B; ++c) acc[s][r][c] = T(0);
          const ordinal_t row = ordinal_t(g * xb + q / PP);
          if (grp == 0 && continue_sums && q < total && row < rows) {  // continue an earlier column block's sums
            const std::size_t lb = lb0 + q / PP;
            for (int r = 0; r < B; ++r) {
              const int i = bi_of[s] * B + r;
              if (i >= f) continue;
              if (bj_of[s] < 0) {
                acc[s][r][0] = b(lb, i);
              } else {
                for (int c = 0; c < B; ++c) {
                  const int j = bj_of[s] * B + c;
                  if (j <= i) acc[s][r][c] = A(lb, i, j);
                }
              }
            }
          }
        }
        // Adds nonzeros k0 (and k1 when `two`) of a row, in that order, to tile
        // s: their Y rows y0, y1 (`valid` entries long) and ratings v0, v1. Both
        // nonzeros' loads are issued before the multiply-adds (twice the loads
        // in flight); each entry is still one sequential sum in nonzero order,
        // of explicit multiply-adds (madd: the same bits on both paths).
        auto add = [&](int s, bool two, const auto* y0, T v0, const auto* y1, T v1, int valid) {
          T a0[B], a1[B];
          load_piece<B>(y0, bi_of[s] * B, valid, a0);
          if (two) load_piece<B>(y1, bi_of[s] * B, valid, a1);
          if (bj_of[s] >= 0) {
            T c0[B], c1[B];
            load_piece<B>(y0, bj_of[s] * B, valid, c0);
            if (two) load_piece<B>(y1, bj_of[s] * B, valid, c1);
            for (int r = 0; r < B; ++r)
              for (int cc = 0; cc < B; ++cc) acc[s][r][cc] = madd(a0[r], c0[cc], acc[s][r][cc]);
            if (two)
              for (int r = 0; r < B; ++r)
                for (int cc = 0; cc < B; ++cc) acc[s][r][cc] = madd(a1[r], c1[cc], acc[s][r][cc]);
          } else {
            for (int r = 0; r < B; ++r) acc[s][r][0] = madd(a0[r], v0, acc[s][r][0]);
            if (two)
              for (int r = 0; r < B; ++r) acc[s][r][0] = madd(a1[r], v1, acc[s][r][0]);
          }
        };
        if (Tiled) {  // plain if: nvcc refuses first captures inside if constexpr
          for (ordinal_t tc = 0; tc < ntc; ++tc) {
            const std::int64_t t = std::int64_t(g) * ntc + tc;
            const offset_t tp0 = tile_ptr(t);
            const int D = int(tile_ptr(t + 1) - tp0);
            if (D == 0) continue;  // vacant tile: nothing loaded, nothing computed
            const offset_t e0 = seg_ptr(t * xb);
            const int E = int(seg_ptr(t * xb + xb) - e0);
            int* seg = sS.data() + nent;
            // The tile's distinct Y rows, zero-padded to fp entries.
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, D * fp), [&](int idx) {
              const int s = idx / fp, j = idx - s * fp;
              sY(idx) = j < f ? T(Y(tile_colidx(tp0 + s), j)) : T(0);
            });
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, E), [&](int k) {
              sV(k) = value(e0 + k);
              sS(k) = seg_colidx(e0 + k);
            });
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, xb + 1),
                                 [&](int i) { seg[i] = int(seg_ptr(t * xb + i) - e0); });
            tm.team_barrier();
            for (int s = 0; s < MT; ++s) {
              if (q_of[s] >= total) continue;
              const int rho = q_of[s] / PP;
              // Pairs of nonzeros as on the CSR path (the same order of sums).
              for (int k = seg[rho]; k < seg[rho + 1]; k += 2) {  // vacant segment: empty range
                const bool two = k + 1 < seg[rho + 1];
                add(s, two, sY.data() + std::size_t(sS(k)) * fp, sV(k),
                    sY.data() + std::size_t(sS(two ? k + 1 : k)) * fp, two ? sV(k + 1) : T(0), fp);
              }
            }
            tm.team_barrier();
          }
        } else {
          const offset_t r_begin = tile_ptr(g), len = tile_ptr(g + 1) - r_begin;
          const offset_t e_begin = r_begin + len * grp / ng, e_end = r_begin + len * (grp + 1) / ng;
          for (offset_t e = e_begin; e < e_end; e += 2) {
            const bool two = e + 1 < e_end;
            const auto* y0 = &Y(tile_colidx(e), 0);
            const auto* y1 = &Y(tile_colidx(two ? e + 1 : e), 0);
            const T v0 = value(e), v1 = two ? value(e + 1) : T(0);
            for (int s = 0; s < MT; ++s)
              if (q_of[s] < total) add(s, two, y0, v0, y1, v1, f);
          }
        }
        if (ng > 1) {  // groups 1.. hand their sums to group 0, which adds them in group order
          T* part_acc = sPart.data() + std::size_t(tid) * MT * B * B;
          const std::size_t group_stride = std::size_t(T_) * MT * B * B;
          if (grp > 0)
            for (int s = 0; s < MT; ++s)
              for (int r = 0; r < B; ++r)
                for (int c = 0; c < B; ++c) part_acc[(grp - 1) * group_stride + (s * B + r) * B + c] = acc[s][r][c];
          tm.team_barrier();
          if (grp == 0)
            for (int h = 1; h < ng; ++h)
              for (int s = 0; s < MT; ++s)
                for (int r = 0; r < B; ++r)
                  for (int c = 0; c < B; ++c) acc[s][r][c] += part_acc[(h - 1) * group_stride + (s * B + r) * B + c];
          tm.team_barrier();
        }
        // Store the tiles (lower triangle; lambda_u on the diagonal): group 0.
        for (int s = 0; s < (grp == 0 ? MT : 0); ++s) {
          const int q = q_of[s];
          if (q >= total) continue;
          const ordinal_t r = ordinal_t(g * xb + q / PP);
          const int bi = bi_of[s], bj = bj_of[s];
          if (r >= rows) continue;
          const std::size_t lb = lb0 + q / PP;
          if (bj >= 0) {
            const T lam = !add_lambda ? T(0) : weight_nnz ? lambda * T(row_count(r)) : lambda;
            for (int rr = 0; rr < B; ++rr)
              for (int cc = 0; cc < B; ++cc) {
                const int i = bi * B + rr, j = bj * B + cc;
                if (i < f && j < f && j <= i) A(lb, i, j) = acc[s][rr][cc] + (i == j ? lam : T(0));
              }
          } else {
            for (int rr = 0; rr < B; ++rr) {
              const int i = bi * B + rr;
              if (i < f) b(lb, i) = acc[s][rr][0];
            }
          }
        }
      }
    };
    Policy policy(exec, p1 - p0, team * ng);
    const int tmax = policy.team_size_max(kernel, Kokkos::ParallelForTag());
    if (team * ng > tmax) {
      if (ng > 1) return std::max(1, tmax / team);
      policy = Policy(exec, p1 - p0, std::max(1, tmax / Tn::warp * Tn::warp));
    }
    const std::size_t need = bytes + (ng > 1 ? split_bytes : 0);
    if (need > 0) policy.set_scratch_size(level, Kokkos::PerTeam(need));
    const char* label = ng > 1 ? "kfactor::als::normal_equations_split" : "kfactor::als::normal_equations";
    Kokkos::parallel_for(label, policy, kernel);
    return 0;
  };
  for (int ng = groups; ng > 0;) ng = launch(g0, split_end, ng);
  launch(split_end, g1, 1);
}

/// Factors and solves the systems of the row blocks at launch positions
/// [g0, g1) (batch-local indices as in build_normal_equations) and writes
/// X(row_orig(r), :).
/// Rows without ratings get the zero vector (no Cholesky of a zero matrix).
/// Returns the number of systems whose Cholesky failed.
template <class ExecutionSpace, class T, class MemorySpace, class XView>
int solve_normal_equations(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const XView& X,
                           int f, ordinal_t g0, ordinal_t g1,
                           const Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>& A,
                           const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& b) {
  if (g1 <= g0) return 0;
  const int xb = S.tiled ? S.xb : 1;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Team = typename Policy::member_type;
  using ST = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  // The lower triangle is staged packed: half the scratch of a square array,
  // so twice as many systems are in flight per GPU multiprocessor.
  const std::size_t tri = kfactor::detail::packed_size(f);
  const bool staged = (tri + f) * sizeof(T) <= kfactor::detail::cholesky_scratch_limit;
  const std::size_t bytes = staged ? ST::shmem_size(tri + f) : 0;
  auto row_count = S.row_count;
  auto row_orig = S.row_orig;
  auto schedule = S.schedule;
  const ordinal_t rows = S.rows;
  Policy policy(exec, std::int64_t(g1 - g0) * xb, cholesky_team_size<ExecutionSpace>(f));
  const int level = bytes <= std::size_t(policy.scratch_size_max(0)) ? 0 : 1;
  if (bytes > 0) policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  int failed = 0;
  Kokkos::parallel_reduce(
      "kfactor::als::cholesky", policy,
      KOKKOS_LAMBDA(const Team& tm, int& nfail) {
        const std::size_t lb = std::size_t(tm.league_rank());
        const ordinal_t block = scheduled_block(schedule, std::int64_t(g0) + std::int64_t(lb) / xb);
        const ordinal_t r = block * xb + ordinal_t(lb % xb);
        if (r >= rows) return;
        const ordinal_t orow = row_orig(r);
        if (row_count(r) == 0) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { X(orow, j) = T(0); });
          return;
        }
        int info = 0;
        if (staged) {
          ST sm(tm.team_scratch(level), tri + f);
          T* sa = sm.data();
          T* sb = sa + tri;
          kfactor::detail::team_stage_lower_packed(tm, f, sa, [&](int i, int j) { return A(lb, i, j); });
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { sb[j] = b(lb, j); });
          tm.team_barrier();
          info = team_cholesky_factor_packed(tm, sa, f);
          if (info == 0) {
            team_cholesky_solve_packed(tm, sa, f, sb);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { X(orow, j) = sb[j]; });
          }
        } else {
          T* a = &A(lb, 0, 0);
          T* bb = &b(lb, 0);
          info = team_cholesky_factor(tm, a, f, f);
          if (info == 0) {
            team_cholesky_solve(tm, a, f, f, bb);
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { X(orow, j) = bb[j]; });
          }
        }
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { nfail += info != 0 ? 1 : 0; });
      },
      failed);
  return failed;
}

/// Rows per batch: whole row blocks, at most `max_bytes` of normal equations
/// (or exactly `batch_rows` rounded down to whole row blocks when given).
inline std::int64_t batch_row_blocks(std::int64_t rows, int xb, int f, std::size_t elem, std::int64_t batch_rows,
                                     std::size_t max_bytes) {
  std::int64_t per = batch_rows > 0 ? batch_rows : std::int64_t(max_bytes / (std::size_t(f) * (f + 1) * elem));
  per = std::max<std::int64_t>(per / xb, 1);
  const std::int64_t blocks = (rows + xb - 1) / xb;
  return std::min(per, std::max<std::int64_t>(blocks, 1));
}

/// Reusable batch buffers of the normal equations (allocated once, without
/// initialization: the kernels write every entry they read).
template <class T, class MemorySpace>
struct Workspace {
  Kokkos::View<T*, MemorySpace> A, b;
};

/// Grows ws to the batch buffers of S's half-step; returns the rows per batch.
template <class T, class MemorySpace>
std::int64_t reserve_workspace(const HalfStepStructure<T, MemorySpace>& S, int f, std::int64_t batch_rows,
                               std::size_t max_batch_bytes, Workspace<T, MemorySpace>& ws) {
  const int xb = S.tiled ? S.xb : 1;
  const std::int64_t per = batch_row_blocks(S.rows, xb, f, sizeof(T), batch_rows, max_batch_bytes);
  const std::int64_t blocks = (std::int64_t(S.rows) + xb - 1) / xb;
  const std::int64_t cap_rows = std::min<std::int64_t>(per, blocks) * xb;  // the scheduled blocks' rows, padding included
  const std::size_t need_A = std::size_t(cap_rows) * f * f, need_b = std::size_t(cap_rows) * f;
  try {
    if (ws.A.extent(0) < need_A)
      ws.A = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::S1"), need_A);
    if (ws.b.extent(0) < need_b)
      ws.b = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::S2"), need_b);
  } catch (const std::exception& e) {
    throw RuntimeFailure("ALS: cannot allocate the normal equations of " + std::to_string(cap_rows) + " rows at f = " +
                         std::to_string(f) + " (" + std::to_string(double(need_A) * sizeof(T) / 1e9) +
                         " GB); lower the batch size: " + e.what());
  }
  return cap_rows;
}

/// The batch loop of a half-step: per batch of row blocks [g0, g1),
/// build(g0, g1, A, b) writes the normal equations of its rows, which are
/// then solved into X. At least `min_batches` batches are run (the trailing
/// ones empty: g0 == g1), so ranks of a distributed run can keep their
/// collectives in step. Throws after the last batch when a Cholesky failed.
template <class ExecutionSpace, class T, class MemorySpace, class XView, class Build>
void half_step_batches(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const XView& X, int f,
                       std::int64_t batch_rows, std::size_t max_batch_bytes, Workspace<T, MemorySpace>* workspace,
                       std::int64_t min_batches, Build&& build) {
  const int xb = S.tiled ? S.xb : 1;
  const std::int64_t blocks = (std::int64_t(S.rows) + xb - 1) / xb;
  const std::int64_t per = batch_row_blocks(S.rows, xb, f, sizeof(T), batch_rows, max_batch_bytes);
  Workspace<T, MemorySpace> local;
  Workspace<T, MemorySpace>& ws = workspace ? *workspace : local;
  const std::int64_t cap_rows = reserve_workspace(S, f, batch_rows, max_batch_bytes, ws);
  Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace> A(ws.A.data(), cap_rows, f, f);
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> b(ws.b.data(), cap_rows, f);
  const std::int64_t batches = std::max((blocks + per - 1) / per, min_batches);
  int failed = 0;
  for (std::int64_t k = 0; k < batches; ++k) {
    const std::int64_t g0 = std::min(blocks, k * per), g1 = std::min(blocks, g0 + per);
    build(ordinal_t(g0), ordinal_t(g1), A, b);
    failed += solve_normal_equations(exec, S, X, f, ordinal_t(g0), ordinal_t(g1), A, b);
  }
  if (failed > 0)
    throw RuntimeFailure("ALS: Cholesky failed for " + std::to_string(failed) +
                         " rows (normal equations not positive definite; raise lambda)");
}

/// Number of batches half_step_batches runs for S (without min_batches).
template <class T, class MemorySpace>
std::int64_t half_step_batch_count(const HalfStepStructure<T, MemorySpace>& S, int f, std::int64_t batch_rows,
                                   std::size_t max_batch_bytes) {
  const int xb = S.tiled ? S.xb : 1;
  const std::int64_t blocks = (std::int64_t(S.rows) + xb - 1) / xb;
  const std::int64_t per = batch_row_blocks(S.rows, xb, f, sizeof(T), batch_rows, max_batch_bytes);
  return (blocks + per - 1) / per;
}

/// Builds one batch's normal equations from S (tiled or CSR path).
template <class ExecutionSpace, class T, class MemorySpace, class YView>
void build_batch(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const YView& Y, int f,
                 T lambda, bool weight_nnz, ordinal_t g0, ordinal_t g1,
                 const Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>& A,
                 const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& b, NormalEquationPart part = {}) {
  if (S.tiled)
    build_normal_equations<true>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part);
  else
    build_normal_equations<false>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part);
}

/// X = argmin over the half-step objective, row by row, in batches.
template <class ExecutionSpace, class T, class MemorySpace, class XView, class YView>
void half_step(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const YView& Y, const XView& X,
               int f, T lambda, bool weight_nnz, std::int64_t batch_rows, std::size_t max_batch_bytes,
               Workspace<T, MemorySpace>* workspace = nullptr) {
  half_step_batches(exec, S, X, f, batch_rows, max_batch_bytes, workspace, 0,
                    [&](ordinal_t g0, ordinal_t g1, const auto& A, const auto& b) {
                      build_batch(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b);
                    });
}

}  // namespace kfactor::als::detail
