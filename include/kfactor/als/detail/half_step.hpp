#pragma once
/// \file
/// One ALS half-step in team code: build the per-row normal equations
/// (S1 = Y_u^T Y_u + lambda_u I, S2 = Y_u^T r_u) from either traversal
/// structure (BALS tiles or plain CSR), then factor and solve them with the
/// team Cholesky of kernels/batched_cholesky.hpp. Rows are processed in
/// batches of whole row blocks; per batch the normal equations live in one
/// batch x f x f buffer, so memory never needs m * f^2 at once.
///
/// S1 and S2 are built as one symmetric rank update: the Gram matrix of the
/// rows [y_k, r_k] (f + 1 entries; its row f is S2). Each thread owns
/// register tiles of B x B entries of its lower triangle for one row of the
/// row block and reads, per nonzero, the two B-wide pieces of the extended
/// Y row its tile needs (contiguous: vector loads). Where the Y rows come
/// from is the one difference between the structures:
///  - BALS tiles: the distinct columns of a tile are staged once in team
///    scratch for the xb rows of the row block (the BALS reuse), padded with
///    zeros to a multiple of B;
///  - CSR on devices: a team stages the Y rows and ratings of 32 nonzeros
///    at a time in team scratch (async copies, double-buffered);
///  - CSR on hosts: a thread reads the Y rows in place (the caches serve).
/// Every entry is a sequential sum over the row's nonzeros in CSR (column)
/// order, whatever the structure, the tile, the team size or the batch: a
/// row's result depends only on the row, so batch size changes nothing, and
/// the tiled and plain paths give the same bits. One exception: CSR rows of
/// at least Tuning::split_from ratings are cut into segments (by length
/// only), each summed by its own team, and the segments' sums are added in
/// segment order (still deterministic and batch-independent; equal to the
/// tiled path up to rounding). Row blocks are launched longest first
/// (HalfStepStructure::schedule), so the longest rows start at once instead
/// of trailing behind.
/// Implicit feedback (ImplicitGram): the structure's values are the
/// confidence weights w = c - 1, and a row's Gram is that of the rows
/// [w y_k, (1 + w)[w > 0]] against [y_k, *]: S1 = sum w y y^T (started from
/// Y^T Y when stored), S2 = sum c p y (p = [r > 0]). The same kernel, the
/// same order of sums; the weighting is a template parameter, so that the
/// explicit kernel carries none of its code (registers are what bounds the
/// register tiles of a row's Gram).
/// A row's sums may also be built in parts, one column block at a time
/// (NormalEquationPart: later parts continue the sums stored in the batch
/// buffers): the distributed blocked layout, where the other factor arrives
/// block by block.

#include <kfactor/als/bals_format.hpp>
#include <kfactor/core/async_copy.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/madd.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/scratch_level.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/batched_cholesky.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kfactor::als::detail {

/// Tuning traits keyed on the execution space.
template <class ExecutionSpace, bool Host = is_host_space_v<ExecutionSpace>>
struct Tuning {
  // GPU: 8 x 8 register tiles (4 multiply-adds per load), one tile per thread.
  static constexpr int block = 8;
  static constexpr int tiles_per_thread = 1;
  static constexpr int max_team = 512;
  static constexpr int warp = 32;
  static constexpr std::size_t scratch_budget = 160 * 1024;  ///< bytes of team scratch per team
  /// CSR path: a team stages the Y rows of this many nonzeros at a time in
  /// team scratch (async 16-byte copies, double-buffered: the next chunk
  /// arrives while the team sums the current one). Read in place, every
  /// thread waited out a memory latency per nonzero: the build kept the
  /// multiprocessors' issue slots 40% busy.
  static constexpr int stage_rows = 32;
  /// CSR rows with at least this many ratings are cut into segments of at
  /// most as many, each summed by its own team, and the segments' sums are
  /// then added in order. Netflix's most rated items have 10^5 ratings and
  /// more: one team each, they ran long after the rest had finished.
  static constexpr int split_from = 2048;
  /// Memory for the segments' sums per round of long rows.
  static constexpr std::size_t partial_budget = std::size_t(256) << 20;
  /// Registers capped for max_team threads per multiprocessor (128 each).
  using Bounds = Kokkos::LaunchBounds<max_team, 1>;
};
template <class ExecutionSpace>
struct Tuning<ExecutionSpace, true> {
  // Host: one thread per team; a thread sweeps many 4 x 4 tiles per pass
  // (the accumulators stay in L1) and reads Y rows in place (caches).
  static constexpr int block = 4;
  static constexpr int tiles_per_thread = 32;
  static constexpr int max_team = 1;
  static constexpr int warp = 1;
  static constexpr std::size_t scratch_budget = 1024 * 1024;
  static constexpr int stage_rows = 0;
  static constexpr int split_from = 2048;  // segments as on devices: the longest rows spread over the threads
  static constexpr std::size_t partial_budget = std::size_t(256) << 20;
  using Bounds = Kokkos::LaunchBounds<>;
};

/// The traversal structure of one half-step (users: R; items: R^T).
/// Internal rows may be a permutation of the original ones (reordering);
/// `row_orig` maps them back, and tile_colidx holds original ids of the other
/// factor's rows, so factors are always addressed by original ids.
template <class T, class MemorySpace>
struct HalfStepStructure {
  bool tiled = false;
  ordinal_t rows = 0;        ///< rows of this half-step's factor
  ordinal_t other_rows = 0;  ///< rows of the fixed factor
  offset_t nnz = 0;
  int xb = 1, yb = 0;                                 ///< tile (tiled) or 1 x 0 (CSR)
  ordinal_t ntc = 1;                                  ///< tile columns per row block (1 for CSR)
  int max_tile_columns = 0;                           ///< tiled: scratch rows needed per tile
  Kokkos::View<offset_t*, MemorySpace> tile_ptr;      ///< CSR: row_map
  Kokkos::View<ordinal_t*, MemorySpace> tile_colidx;  ///< CSR: entries (original ids)
  Kokkos::View<offset_t*, MemorySpace> seg_ptr;       ///< tiled only
  Kokkos::View<int*, MemorySpace> seg_colidx;         ///< tiled only
  Kokkos::View<T*, MemorySpace> value;
  Kokkos::View<ordinal_t*, MemorySpace> row_orig;  ///< internal row -> original row
  Kokkos::View<int*, MemorySpace> row_count;       ///< n_u per internal row
  /// Launch order of the row blocks (most ratings first); empty: natural order.
  Kokkos::View<ordinal_t*, MemorySpace> schedule;
  /// CSR path: the first `long_blocks` scheduled rows have at
  /// least Tuning::split_from ratings and are cut into segments, those of
  /// position p numbered [segment_ptr[p], segment_ptr[p + 1]) (`segments`:
  /// the same on the device), each summed by its own team.
  ordinal_t long_blocks = 0;
  std::vector<std::int64_t> segment_ptr{0};
  Kokkos::View<std::int64_t*, MemorySpace> segments;
  BalsStats stats;  ///< tiled only
};

/// Shape of the register tiling for rank f and tile height xb. S1 and S2
/// are built as one Gram matrix, that of the rows [y_k, r_k] (f + 1
/// entries): its row f holds S2 = sum_k r_k y_k. Its lower triangle is cut
/// into block x block register tiles, `pairs` per row of R.
struct TileShape {
  int f = 0, block = 1, nblk = 0, fp = 0, pairs = 0, total = 0;
  TileShape(int f_, int block_, int xb) : f(f_), block(block_) {
    nblk = (f + 1 + block - 1) / block;
    fp = nblk * block;
    pairs = nblk * (nblk + 1) / 2;
    total = xb * pairs;
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

/// Byte offsets of the build kernel's team scratch, carved out of one
/// allocation: on GPUs one pointer that the compiler knows to address
/// shared memory (separate allocations, each possibly null, left some
/// accesses generic). CSR path: the staged rows of two chunks of nonzeros,
/// their column ids and ratings; tiled path: a tile's Y rows, its ratings
/// and their local slots.
struct BuildScratch {
  std::size_t col = 0, val = 0, y = 0, v = 0, seg = 0, bytes = 0;  // stage at 0
  template <class T>
  static BuildScratch make(std::size_t stage_elems, std::size_t id_elems, std::size_t y_elems, std::size_t v_elems,
                           std::size_t seg_elems) {
    auto al = [](std::size_t b) { return (b + 15) / 16 * 16; };
    BuildScratch L;
    L.col = al(stage_elems * sizeof(T));
    L.val = L.col + al(id_elems * sizeof(ordinal_t));
    L.y = L.val + al(id_elems * sizeof(T));
    L.v = L.y + al(y_elems * sizeof(T));
    L.seg = L.v + al(v_elems * sizeof(T));
    L.bytes = L.seg + al(seg_elems * sizeof(int));
    return L;
  }
  /// Bytes to request (16 of slack for the alignment of the start).
  [[nodiscard]] std::size_t request() const { return bytes > 0 ? bytes + 16 : 0; }
};

/// Team scratch bytes the tiled normal-equation kernel needs (0 for CSR).
template <class ExecutionSpace, class T>
std::size_t normal_equation_scratch(bool tiled, int f, int xb, int max_tile_columns) {
  if (!tiled) return 0;
  const TileShape s(f, Tuning<ExecutionSpace>::block, xb);
  const std::size_t rows = std::size_t(std::max(1, max_tile_columns));
  const std::size_t entries = rows * xb;
  return BuildScratch::make<T>(0, 0, rows * s.fp, entries, entries + xb + 1).request();
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

/// Implicit feedback: G = Y^T Y (f x f), added to every row's S1 with
/// lambda_u; empty: explicit ratings.
template <class T, class MemorySpace>
struct ImplicitGram {
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> G;
  [[nodiscard]] bool on() const { return G.extent(0) > 0; }
};

/// Implicit feedback: the row-side piece a (entries [j0, j0 + B) of
/// [y, w, 0, ...]) becomes that of [w y, (1 + w)[w > 0], 0, ...], so that
/// the Gram's rows i < f hold sum w y y^T and its row f sum c p y.
template <int B, class T>
KOKKOS_INLINE_FUNCTION void implicit_piece(T (&a)[B], int j0, int f, T w) {
  const T rhs = w > T(0) ? T(1) + w : T(0);
  for (int r = 0; r < B; ++r) {
    const int i = j0 + r;
    a[r] = i < f ? a[r] * w : i == f ? rhs : T(0);
  }
}

/// Where register tile p of a row sits: block (bi, bj), bj <= bi, of the
/// lower triangle.
KOKKOS_INLINE_FUNCTION void tile_blocks(int p, int& bi, int& bj) {
  bi = int((Kokkos::sqrt(8.0 * p + 1.0) - 1.0) * 0.5);
  while (bi * (bi + 1) / 2 > p) --bi;
  while ((bi + 1) * (bi + 2) / 2 <= p) ++bi;
  bj = p - bi * (bi + 1) / 2;
}

/// out = entries [j0, j0 + B) of the row [y[0, valid), v, 0, ...]: a Y row
/// of `valid` entries extended by its rating (valid = f), or a staged row
/// that already holds both (valid = its full width).
template <int B, class T, class Y>
KOKKOS_INLINE_FUNCTION void load_piece(const Y* y, int j0, int valid, T v, T (&out)[B]) {
  if (j0 + B <= valid) {
    for (int r = 0; r < B; ++r) out[r] = T(y[j0 + r]);
  } else {
    for (int r = 0; r < B; ++r) out[r] = j0 + r < valid ? T(y[j0 + r]) : j0 + r == valid ? v : T(0);
  }
}

/// V entries of T as one aligned vector (16 bytes when V = 16 / sizeof(T)).
template <class T, int V>
struct alignas(sizeof(T) * V) Piece {
  T v[V];
};

/// Stages the rows [Y(col[k], :), value[k], 0, ...] of n nonzeros (their
/// column ids and ratings already in scratch) into `out` (rows of fp
/// entries) with the whole team, V entries per copy (V > 1: 16-byte copies;
/// f a multiple of V and Y's rows 16-byte aligned). The Y entries travel by
/// async_copy: on GPUs the team computes on the previous chunk while they
/// arrive; call async_copy_wait() and a team barrier before reading them.
template <int V, class Team, class T, class YView>
KOKKOS_INLINE_FUNCTION void stage_y_rows(const Team& tm, const YView& Y, const ordinal_t* col, const T* value, int n,
                                         int f, int fp, T* out) {
  constexpr bool same = std::is_same_v<typename YView::non_const_value_type, T>;
  const int ts = tm.team_size(), rank = tm.team_rank();
  // The Y entries, f / V copies per row, and nothing else in this loop: a
  // warp whose lanes split between copies and the padding below ran both
  // branches one after the other.
  const int per = f / V;
  const int dk = ts / per, ds = ts - dk * per;  // (k, s) advance per ts slots
  int k = rank / per, s = rank - k * per;
  for (; k < n; k += dk) {
    T* dst = out + std::size_t(k) * fp + s * V;
    if constexpr (same)
      async_copy<int(sizeof(T)) * V>(dst, &Y(col[k], s * V));
    else
      dst[0] = T(Y(col[k], s));  // V = 1
    s += ds;
    if (s >= per) {
      s -= per;
      ++k;
    }
  }
  // Entries f .. fp - 1: the rating, then zeros.
  for (int r = rank; r < n; r += ts) {
    T* dst = out + std::size_t(r) * fp + f;
    const T v = value[r];
    for (int c = 0; c < fp - f; ++c) dst[c] = c == 0 ? v : T(0);
  }
}

/// Row block of launch position p: S.schedule(p), or p without a schedule.
template <class MemorySpace>
KOKKOS_INLINE_FUNCTION ordinal_t scheduled_block(const Kokkos::View<ordinal_t*, MemorySpace>& schedule,
                                                 std::int64_t p) {
  return schedule.extent(0) > 0 ? schedule(p) : ordinal_t(p);
}

/// The launches of build_normal_equations:
///  - whole: a team per position in [w0, w1): a row block's whole sums;
///  - segment: a team per segment in [w0, w1) of the long CSR rows at
///    positions [p0, p1): its part of the row's sums, stored raw in
///    `partial` (segment w - w0, tile q at (w - w0) P + q);
///  - reduce: a team per position in [w0, w1): adds the row's segments'
///    sums in segment order (deterministic, batch-independent) and stores.
enum class BuildKind { whole, segment, reduce };

/// Builds A (batch x f x f, lower triangle incl. lambda_u on the diagonal)
/// and b (batch x f) for the row blocks at launch positions [g0, g1) of
/// S.schedule (longest first, so they do not trail behind the rest); the
/// batch-local index of row rho of position g0 + k is k xb + rho. Y
/// (LayoutRight) is indexed by S.tile_colidx.
template <bool Tiled, bool Weighted = false, class ExecutionSpace, class T, class MemorySpace, class YView>
void build_normal_equations(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const YView& Y,
                            int f, T lambda, bool weight_nnz, ordinal_t g0, ordinal_t g1,
                            const Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace>& A,
                            const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& b, NormalEquationPart part = {},
                            const ImplicitGram<T, MemorySpace>& implicit = {}) {
  static_assert(std::is_same_v<typename YView::array_layout, Kokkos::LayoutRight>, "Y rows must be contiguous");
  using Tn = Tuning<ExecutionSpace>;
  constexpr int B = Tn::block;
  constexpr int MT = Tn::tiles_per_thread;
  constexpr int NC = Tiled ? 0 : Tn::stage_rows;  // CSR: staged nonzeros per chunk (0: Y read in place)
  constexpr int V = int(16 / sizeof(T));          // entries per vector load when staging
  static_assert(B % V == 0, "register tiles are read as whole 16-byte pieces");
  // Dynamic: on hosts, a static split of the scheduled (longest first)
  // row blocks would hand the first thread all the long rows.
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, typename Tn::Bounds, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Team = typename Policy::member_type;
  if (g1 <= g0) return;
  const int xb = Tiled ? S.xb : 1;
  const TileShape shape(f, B, xb);
  const int fp = shape.fp, P = shape.pairs, total = shape.total;
  const int C = Tiled ? std::max(1, S.max_tile_columns) : 0;
  const std::size_t nent = std::size_t(C) * xb;

  int team = (total + MT - 1) / MT;
  team = (team + Tn::warp - 1) / Tn::warp * Tn::warp;
  team = std::min(team, Tn::max_team);
  // CSR staging: two chunks of nc nonzeros in the fast scratch: their rows
  // and their column ids and ratings (the copies of a chunk read its column
  // ids from scratch: from global memory each copy waited out a memory
  // latency, a quarter of the build's stalls).
  const std::size_t per_nonzero = std::size_t(fp) * sizeof(T) + sizeof(ordinal_t) + sizeof(T);
  const int nc =
      NC > 0 ? std::max(1, std::min<int>(NC, int((fast_scratch_bytes<ExecutionSpace>() - 64) / (2 * per_nonzero)))) : 0;
  const std::size_t id_elems = 2 * std::size_t(nc);
  const BuildScratch lay = BuildScratch::make<T>(id_elems * fp, id_elems, Tiled ? nent / xb * fp : 0, Tiled ? nent : 0,
                                                 Tiled ? nent + xb + 1 : 0);
  const std::size_t need = lay.request();
  const bool vec = NC > 0 && V > 1 && std::is_same_v<typename YView::non_const_value_type, T> && f % V == 0 &&
                   Y.stride(0) % V == 0 && reinterpret_cast<std::uintptr_t>(Y.data()) % 16 == 0;
  Policy probe(exec, 1, 1);
  const int level = need <= std::size_t(probe.scratch_size_max(0)) ? 0 : 1;
  auto tile_ptr = S.tile_ptr;
  auto tile_colidx = S.tile_colidx;
  auto seg_ptr = S.seg_ptr;
  auto seg_colidx = S.seg_colidx;
  auto value = S.value;
  auto row_count = S.row_count;
  auto schedule = S.schedule;
  auto segments = S.segments;
  const ordinal_t ntc = Tiled ? S.ntc : 1;
  const ordinal_t rows = S.rows;
  const bool continue_sums = part.accumulate, add_lambda = part.add_lambda;
  if (implicit.on() != Weighted)
    throw RuntimeFailure("ALS: normal equations built with an instantiation for the other kind of feedback");
  auto gram = implicit.G;
  const std::size_t tile_elems = std::size_t(B) * B;

  // Three kinds of launch (BuildKind), one kernel.
  auto launch = [&](BuildKind kind, std::int64_t w0, std::int64_t w1, ordinal_t p0, ordinal_t p1,
                    const Kokkos::View<T*, MemorySpace>& partial) {
    if (w1 <= w0) return;
    auto kernel = KOKKOS_LAMBDA(const Team& tm) {
      const std::int64_t w = w0 + tm.league_rank();
      std::int64_t pos = w;
      if (kind == BuildKind::segment) {  // the position whose segments hold w
        std::int64_t lo = p0, hi = p1;
        while (hi - lo > 1) {
          const std::int64_t mid = (lo + hi) / 2;
          if (segments(mid) <= w)
            lo = mid;
          else
            hi = mid;
        }
        pos = lo;
      }
      const ordinal_t g = scheduled_block(schedule, pos);
      offset_t e_begin = tile_ptr(g), e_end = tile_ptr(g + 1);  // CSR: the row's nonzeros
      if (kind == BuildKind::segment) {
        const std::int64_t k = w - segments(pos), n = segments(pos + 1) - segments(pos), len = e_end - e_begin;
        e_end = e_begin + offset_t(len * (k + 1) / n);
        e_begin += offset_t(len * k / n);
      }
      const std::size_t lb0 = std::size_t(pos - g0) * xb;  // batch-local index of the block's first row
      const int ts = tm.team_size(), tid = tm.team_rank();
      // Scratch through a compile-time level: level-0 accesses are shared-memory loads.
      with_scratch_level(level, [&](auto L) {
        constexpr int lv = decltype(L)::value;
        // One allocation, carved (BuildScratch), requested even when empty:
        // a pointer that may be null is no longer known to address shared
        // memory. 16-byte aligned: the staged rows take vector stores.
        char* scratch = static_cast<char*>(tm.team_scratch(lv).get_shmem_aligned(lay.bytes, 16));
        T* sStage = reinterpret_cast<T*>(scratch);
        auto* sCol = reinterpret_cast<ordinal_t*>(scratch + lay.col);
        T* sVal = reinterpret_cast<T*>(scratch + lay.val);
        T* sY = reinterpret_cast<T*>(scratch + lay.y);
        T* sV = reinterpret_cast<T*>(scratch + lay.v);
        int* sS = reinterpret_cast<int*>(scratch + lay.seg);
        const int npass = (total + ts * MT - 1) / (ts * MT);
        for (int pass = 0; pass < npass; ++pass) {
          T acc[MT][B][B];
          int q_of[MT], bi_of[MT], bj_of[MT];
          for (int s = 0; s < MT; ++s) {
            const int q = tid + ts * (pass * MT + s);
            q_of[s] = q;
            tile_blocks(q % P, bi_of[s], bj_of[s]);
            for (int r = 0; r < B; ++r)
              for (int c = 0; c < B; ++c) acc[s][r][c] = T(0);
            const ordinal_t row = ordinal_t(g * xb + q / P);
            if (kind != BuildKind::segment && continue_sums && q < total &&
                row < rows) {  // continue an earlier column block's sums
              const std::size_t lb = lb0 + q / P;
              for (int r = 0; r < B; ++r)
                for (int c = 0; c < B; ++c) {
                  const int i = bi_of[s] * B + r, j = bj_of[s] * B + c;
                  if (j <= i && i < f) acc[s][r][c] = A(lb, i, j);
                  if (i == f && j < f) acc[s][r][c] = b(lb, j);
                }
            }
          }
          // Adds nonzeros k0 (and k1 when `two`) to tile s, in that order:
          // y0, y1 are their rows [Y row, rating, 0...] up to `valid` entries,
          // v0, v1 their ratings (see load_piece). Each entry is one
          // sequential sum in nonzero order of explicit multiply-adds (madd:
          // the same bits on every path). Two per visit: on hosts the tiles
          // live in L1, and each visit loads and stores them.
          auto add = [&](int s, bool two, const auto* y0, T v0, const auto* y1, T v1, int valid) {
            T a0[B], c0[B], a1[B], c1[B];
            load_piece<B>(y0, bi_of[s] * B, valid, v0, a0);
            load_piece<B>(y0, bj_of[s] * B, valid, v0, c0);
            if (Weighted) implicit_piece<B>(a0, bi_of[s] * B, f, v0);
            if (two) {
              load_piece<B>(y1, bi_of[s] * B, valid, v1, a1);
              load_piece<B>(y1, bj_of[s] * B, valid, v1, c1);
              if (Weighted) implicit_piece<B>(a1, bi_of[s] * B, f, v1);
            }
            for (int r = 0; r < B; ++r)
              for (int cc = 0; cc < B; ++cc) acc[s][r][cc] = madd(a0[r], c0[cc], acc[s][r][cc]);
            if (two)
              for (int r = 0; r < B; ++r)
                for (int cc = 0; cc < B; ++cc) acc[s][r][cc] = madd(a1[r], c1[cc], acc[s][r][cc]);
          };
          // The same for a staged row (fp entries, 16-byte aligned): vector loads.
          auto add_staged = [&](int s, const T* y) {
            Piece<T, V> a[B / V], c[B / V];
            for (int r = 0; r < B / V; ++r) {
              a[r] = reinterpret_cast<const Piece<T, V>*>(y + bi_of[s] * B)[r];
              c[r] = reinterpret_cast<const Piece<T, V>*>(y + bj_of[s] * B)[r];
            }
            if (Weighted) {
              T w[B];
              for (int r = 0; r < B; ++r) w[r] = a[r / V].v[r % V];
              implicit_piece<B>(w, bi_of[s] * B, f, y[f]);
              for (int r = 0; r < B; ++r) a[r / V].v[r % V] = w[r];
            }
            for (int r = 0; r < B; ++r)
              for (int cc = 0; cc < B; ++cc)
                acc[s][r][cc] = madd(a[r / V].v[r % V], c[cc / V].v[cc % V], acc[s][r][cc]);
          };
          if (kind == BuildKind::reduce) {
            for (std::int64_t sg = segments(pos); sg < segments(pos + 1); ++sg)
              for (int s = 0; s < MT; ++s) {
                if (q_of[s] >= total) continue;
                const T* in = partial.data() + (std::size_t(sg - segments(p0)) * P + q_of[s]) * tile_elems;
                for (int r = 0; r < B; ++r)
                  for (int c = 0; c < B; ++c) acc[s][r][c] += in[r * B + c];
              }
          } else if (Tiled) {  // plain if: nvcc refuses first captures inside if constexpr
            for (ordinal_t tc = 0; tc < ntc; ++tc) {
              const std::int64_t t = std::int64_t(g) * ntc + tc;
              const offset_t tp0 = tile_ptr(t);
              const int D = int(tile_ptr(t + 1) - tp0);
              if (D == 0) continue;  // vacant tile: nothing loaded, nothing computed
              const offset_t e0 = seg_ptr(t * xb);
              const int E = int(seg_ptr(t * xb + xb) - e0);
              int* seg = sS + nent;
              // The tile's distinct Y rows, zero-padded to fp entries.
              Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, D * fp), [&](int idx) {
                const int s = idx / fp, j = idx - s * fp;
                sY[idx] = j < f ? T(Y(tile_colidx(tp0 + s), j)) : T(0);
              });
              Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, E), [&](int k) {
                sV[k] = value(e0 + k);
                sS[k] = seg_colidx(e0 + k);
              });
              Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, xb + 1),
                                   [&](int i) { seg[i] = int(seg_ptr(t * xb + i) - e0); });
              tm.team_barrier();
              for (int s = 0; s < MT; ++s) {
                if (q_of[s] >= total) continue;
                const int rho = q_of[s] / P;
                for (int k = seg[rho]; k < seg[rho + 1]; k += 2) {  // vacant segment: empty range
                  const bool two = k + 1 < seg[rho + 1];
                  add(s, two, sY + std::size_t(sS[k]) * fp, sV[k], sY + std::size_t(sS[two ? k + 1 : k]) * fp,
                      two ? sV[k + 1] : T(0), f);
                }
              }
              tm.team_barrier();
            }
          } else if (NC > 0) {  // CSR, staged in chunks of nc nonzeros, double-buffered
            const int chunks = int((e_end - e_begin + nc - 1) / nc);
            auto chunk_size = [&](int c) { return c + 1 < chunks ? nc : int(e_end - e_begin - offset_t(c) * nc); };
            // Chunk c's ids (column, rating) go to slot c & 1 two chunks
            // ahead of its rows, by async copies too.
            auto load_ids = [&](int c) {
              const offset_t e0 = e_begin + offset_t(c) * nc;
              for (int k = tid; k < chunk_size(c); k += ts) {
                async_copy<int(sizeof(ordinal_t))>(sCol + (c & 1) * nc + k, &tile_colidx(e0 + k));
                async_copy<int(sizeof(T))>(sVal + (c & 1) * nc + k, &value(e0 + k));
              }
            };
            auto stage = [&](int c) {
              T* buf = sStage + std::size_t(c & 1) * nc * fp;
              const ordinal_t* ids = sCol + (c & 1) * nc;
              const T* vals = sVal + (c & 1) * nc;
              if (vec)
                stage_y_rows<V>(tm, Y, ids, vals, chunk_size(c), f, fp, buf);
              else
                stage_y_rows<1>(tm, Y, ids, vals, chunk_size(c), f, fp, buf);
            };
            if (chunks > 0) {
              load_ids(0);
              async_copy_wait();
              tm.team_barrier();
              stage(0);
              if (chunks > 1) load_ids(1);
            }
            for (int c = 0; c < chunks; ++c) {
              async_copy_wait();
              // Chunk c's rows and chunk c + 1's ids have landed; chunk c - 1's
              // rows buffer and chunk c's ids slot are free.
              tm.team_barrier();
              if (c + 1 < chunks) stage(c + 1);
              if (c + 2 < chunks) load_ids(c + 2);
              const T* buf = sStage + std::size_t(c & 1) * nc * fp;
              for (int k = 0; k < chunk_size(c); ++k)
                for (int s = 0; s < MT; ++s)
                  if (q_of[s] < total) add_staged(s, buf + std::size_t(k) * fp);
            }
            tm.team_barrier();  // the buffers are free again (next pass)
          } else {              // CSR, in place (hosts: the caches serve the Y rows)
            for (offset_t e = e_begin; e < e_end; e += 2) {
              const bool two = e + 1 < e_end;
              const auto* y0 = &Y(tile_colidx(e), 0);
              const auto* y1 = &Y(tile_colidx(two ? e + 1 : e), 0);
              const T v0 = value(e), v1 = two ? T(value(e + 1)) : T(0);
              for (int s = 0; s < MT; ++s)
                if (q_of[s] < total) add(s, two, y0, v0, y1, v1, f);
            }
          }
          // Store the tiles: a segment's raw sums, or rows i < f to A (lambda_u
          // on the diagonal) and row f to b.
          for (int s = 0; s < MT; ++s) {
            const int q = q_of[s];
            if (q >= total) continue;
            if (kind == BuildKind::segment) {
              T* out = partial.data() + (std::size_t(w - w0) * P + q) * tile_elems;
              for (int r = 0; r < B; ++r)
                for (int c = 0; c < B; ++c) out[r * B + c] = acc[s][r][c];
              continue;
            }
            const ordinal_t r = ordinal_t(g * xb + q / P);
            if (r >= rows) continue;
            const std::size_t lb = lb0 + q / P;
            const T lam = !add_lambda ? T(0) : weight_nnz ? lambda * T(row_count(r)) : lambda;
            for (int rr = 0; rr < B; ++rr)
              for (int cc = 0; cc < B; ++cc) {
                const int i = bi_of[s] * B + rr, j = bj_of[s] * B + cc;
                if (j <= i && i < f)
                  A(lb, i, j) =
                      (Weighted && add_lambda ? acc[s][rr][cc] + gram(i, j) : acc[s][rr][cc]) + (i == j ? lam : T(0));
                if (i == f && j < f) b(lb, j) = acc[s][rr][cc];
              }
          }
        }
      });
    };
    Policy policy(exec, w1 - w0, team);
    const int tmax = policy.team_size_max(kernel, Kokkos::ParallelForTag());
    if (team > tmax) policy = Policy(exec, w1 - w0, std::max(1, tmax / Tn::warp * Tn::warp));
    if (need > 0) policy.set_scratch_size(level, Kokkos::PerTeam(need));
    const char* label = kind == BuildKind::whole     ? "kfactor::als::normal_equations"
                        : kind == BuildKind::segment ? "kfactor::als::normal_equation_segments"
                                                     : "kfactor::als::normal_equation_reduce";
    Kokkos::parallel_for(label, policy, kernel);
  };
  // Long CSR rows: their segments in rounds whose sums fit the
  // partial budget (at least one row per round), then the rest whole.
  const ordinal_t split_end = Tiled ? g0 : std::clamp(S.long_blocks, g0, g1);
  if (split_end > g0) {
    const auto& sp = S.segment_ptr;
    const std::size_t seg_bytes = std::size_t(P) * tile_elems * sizeof(T);
    const std::int64_t cap = std::max<std::int64_t>(1, std::int64_t(Tn::partial_budget / seg_bytes));
    std::vector<ordinal_t> round{g0};  // round k: positions [round[k], round[k + 1])
    std::int64_t most = 0;
    while (round.back() < split_end) {
      const ordinal_t p = round.back();
      ordinal_t pe = p + 1;
      while (pe < split_end && sp[pe + 1] - sp[p] <= cap) ++pe;
      most = std::max(most, sp[pe] - sp[p]);
      round.push_back(pe);
    }
    Kokkos::View<T*, MemorySpace> partial;
    try {
      partial = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::partial"),
                                              std::size_t(most) * P * tile_elems);
    } catch (const std::exception& e) {
      throw OutOfMemory("ALS: cannot allocate the partial sums of " + std::to_string(most) + " row segments (" +
                        std::to_string(double(most) * seg_bytes / 1e9) + " GB): " + e.what());
    }
    for (std::size_t k = 0; k + 1 < round.size(); ++k) {
      const ordinal_t p = round[k], pe = round[k + 1];
      launch(BuildKind::segment, sp[p], sp[pe], p, pe, partial);
      launch(BuildKind::reduce, p, pe, p, pe, partial);
    }
  }
  launch(BuildKind::whole, split_end, g1, split_end, g1, {});
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
          info = with_scratch_level(level, [&](auto L) {
            constexpr int lv = decltype(L)::value;
            ST sm(tm.team_scratch(lv), tri + f);
            T* sa = sm.data();
            T* sb = sa + tri;
            kfactor::detail::team_stage_lower_packed(tm, f, sa, [&](int i, int j) { return A(lb, i, j); });
            Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { sb[j] = b(lb, j); });
            tm.team_barrier();
            const int fail = team_cholesky_factor_packed(tm, sa, f);
            if (fail == 0) {
              team_cholesky_solve_packed(tm, sa, f, sb);
              Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, f), [&](int j) { X(orow, j) = sb[j]; });
            }
            return fail;
          });
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
  /// Implicit feedback: the other factor's Gram (f x f).
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> gram;
  /// Implicit feedback, conjugate-gradient half-step (implicit.hpp): the
  /// residuals, directions and their products (rows x f each), r.r per
  /// row, one value per nonzero.
  Kokkos::View<T*, MemorySpace> cg_r, cg_p, cg_ap, cg_rs, cg_values;
};

/// Grows ws to the batch buffers of S's half-step; returns the rows per batch.
template <class T, class MemorySpace>
std::int64_t reserve_workspace(const HalfStepStructure<T, MemorySpace>& S, int f, std::int64_t batch_rows,
                               std::size_t max_batch_bytes, Workspace<T, MemorySpace>& ws) {
  const int xb = S.tiled ? S.xb : 1;
  const std::int64_t per = batch_row_blocks(S.rows, xb, f, sizeof(T), batch_rows, max_batch_bytes);
  const std::int64_t blocks = (std::int64_t(S.rows) + xb - 1) / xb;
  const std::int64_t cap_rows =
      std::min<std::int64_t>(per, blocks) * xb;  // the scheduled blocks' rows, padding included
  const std::size_t need_A = std::size_t(cap_rows) * f * f, need_b = std::size_t(cap_rows) * f;
  try {
    if (ws.A.extent(0) < need_A)
      ws.A = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::S1"), need_A);
    if (ws.b.extent(0) < need_b)
      ws.b = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::S2"), need_b);
  } catch (const std::exception& e) {
    throw OutOfMemory("ALS: cannot allocate the normal equations of " + std::to_string(cap_rows) +
                      " rows at f = " + std::to_string(f) + " (" + std::to_string(double(need_A) * sizeof(T) / 1e9) +
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
                 const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& b, NormalEquationPart part = {},
                 const ImplicitGram<T, MemorySpace>& implicit = {}) {
  if (S.tiled && implicit.on())
    build_normal_equations<true, true>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part, implicit);
  else if (S.tiled)
    build_normal_equations<true>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part);
  else if (implicit.on())
    build_normal_equations<false, true>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part, implicit);
  else
    build_normal_equations<false>(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, part);
}

/// X = argmin over the half-step objective, row by row, in batches
/// (implicit feedback with an ImplicitGram).
template <class ExecutionSpace, class T, class MemorySpace, class XView, class YView>
void half_step(const ExecutionSpace& exec, const HalfStepStructure<T, MemorySpace>& S, const YView& Y, const XView& X,
               int f, T lambda, bool weight_nnz, std::int64_t batch_rows, std::size_t max_batch_bytes,
               Workspace<T, MemorySpace>* workspace = nullptr, const ImplicitGram<T, MemorySpace>& implicit = {}) {
  half_step_batches(exec, S, X, f, batch_rows, max_batch_bytes, workspace, 0,
                    [&](ordinal_t g0, ordinal_t g1, const auto& A, const auto& b) {
                      build_batch(exec, S, Y, f, lambda, weight_nnz, g0, g1, A, b, {}, implicit);
                    });
}

}  // namespace kfactor::als::detail
