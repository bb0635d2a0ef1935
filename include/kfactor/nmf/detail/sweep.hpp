#pragma once
/// \file
/// The column-sweep kernels of HALS and ALO, written once in Kokkos.
///
/// Both factors are stored as tall row-major matrices X (N x K): W (V x K) and
/// Ht = H^T (D x K), and updated IN PLACE: while column t is computed, X holds
/// the new values of the columns before t and the old values of t and after
/// (coordinate descent's order). Every sweep runs the coordinate-descent
/// system of scaled_system (Gram and right-hand side divided by the Gram's
/// diagonal, so that Gs(t, t) = 1). The update of column t, with that system
/// (Gs, Bs) and the tile [t0, t1) holding t, is
///
///   X(r,t) <- max(eps, base(r,t) + Bs(r,t) - sum_{t0<=j<t1} X(r,j) Gs(t,j))
///
/// with base (see Base) the old value X(r,t) (HALS), or, for ALO,
/// Acc(r, t - t0): the tile's GEMM already applied the columns outside the
/// tile (alo_tile_matrix). HALS is the tile [0, K). Gs(t, :) is the
/// contiguous row t.
///
/// The rows are independent (no normalisation couples them), so every
/// kernel is one launch per tile:
///  - row_sweep (devices): a work item per row runs every column t of the
///    tile. HALS is one launch per half step, ALO one per tile.
///  - tile_sweep_host: on a host the columns of a tile run in one launch
///    with their copies in and out (one team of all threads), HALS's tile
///    [0, K) with the scaling, the Gram of the result and the error's dot
///    products in the same launch.
/// On a device row_sweep first copies each team's rows of the tile into team
/// scratch (ScratchRows) when they fit, and sweeps them there.
///
/// These launches must stay asynchronous: see core/detail/light_weight.hpp.

#include <kfactor/core/detail/light_weight.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/gemm_skinny.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kfactor::nmf::detail {

using kfactor::detail::light_weight;
using kfactor::detail::RowTeamShape;

/// Tuning traits of the sweeps, keyed on the execution space type: whether
/// it runs on the host (a tile is then swept in one host team,
/// tile_sweep_host; devices take row_sweep).
template <class ExecutionSpace>
struct SweepTraits {
  static constexpr bool host = RowTeamShape<ExecutionSpace>::host;
};

/// sum_{j0 <= j < j1} X(r, j) G(t, j) in four partial sums: the terms of one
/// sum are a chain of dependent additions (an FMA latency each), four chains
/// overlap on a host core, and a device thread gets independent loads.
template <class XV, class GV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type row_dot(const XV& X, int r, const GV& G, int t, int j0,
                                                                 int j1) {
  using T = typename XV::non_const_value_type;
  T a0 = T(0), a1 = T(0), a2 = T(0), a3 = T(0);
  int j = j0;
  for (; j + 3 < j1; j += 4) {
    a0 += X(r, j) * G(t, j);
    a1 += X(r, j + 1) * G(t, j + 1);
    a2 += X(r, j + 2) * G(t, j + 2);
    a3 += X(r, j + 3) * G(t, j + 3);
  }
  for (; j < j1; ++j) a0 += X(r, j) * G(t, j);
  return (a0 + a1) + (a2 + a3);
}

/// A 2-D range over a row-major (LayoutRight) rows x cols matrix whose
/// fastest index is the column. MDRangePolicy's default order follows the
/// space's default layout, column-major on CUDA, where adjacent threads would
/// then touch addresses a row apart (alo_init ran at 37 us for 10 MB).
template <class ExecutionSpace>
Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2, Kokkos::Iterate::Right, Kokkos::Iterate::Right>> row_major_policy(
    const ExecutionSpace& exec, std::size_t rows, std::size_t cols) {
  return {exec, {0, 0}, {rows, cols}};
}

/// Where a column update starts from (see the file comment).
enum class Base {
  old_value,       ///< X(r,t): HALS
  accumulated,     ///< Acc(r, t - t0): ALO, the tile's GEMM result
  multiplicative,  ///< not a sweep: tile_sweep_host's rows take mu_row (MU)
};

/// Rows [r0, r0 + rows) and columns [t0, t0 + w) of a row-major X, held in
/// team scratch and addressed with X's own (r, j) indices. The rows are
/// w + 1 apart, so the threads of a warp reading column j of 32 rows hit 32
/// banks. On a device the sweeps read a row's whole tile once per column:
/// from X in global memory each such warp load touched 32 cache lines (the
/// H sweep at K = 512, T = 32 kept L1 90% busy and took 96 us per tile).
template <class T>
struct ScratchRows {
  using non_const_value_type = T;
  T* p;
  int r0, t0, ld;
  KOKKOS_INLINE_FUNCTION T& operator()(int r, int j) const { return p[(r - r0) * ld + (j - t0)]; }
};

/// Copies X's rows [r0, r1), columns [t0, t0 + w) into S (to_scratch) or
/// back, with the whole team: consecutive threads take consecutive columns.
template <class Team, class XV, class T>
KOKKOS_INLINE_FUNCTION void copy_scratch_rows(const Team& team, const XV& X, const ScratchRows<T>& S, int r1, int w,
                                              bool to_scratch) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, (r1 - S.r0) * w), [&](const int i) {
    const int r = S.r0 + i / w, j = S.t0 + i % w;
    if (to_scratch)
      S(r, j) = X(r, j);
    else
      X(r, j) = S(r, j);
  });
}

/// Bytes of team scratch that ScratchRows of `rows` rows and w columns take.
template <class T>
std::size_t scratch_rows_bytes(int rows, int w) {
  return std::size_t(rows) * std::size_t(w + 1) * sizeof(T);
}

template <class XV, class AV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type base_value(Base base, const XV& X, const AV& Acc, int r, int t,
                                                                    int t0) {
  return base == Base::old_value ? X(r, t) : Acc(r, t - t0);
}

/// The new value of X(r, t), t in the tile [t0, t1): the update of the file
/// comment, shared by every sweep kernel.
template <class XV, class AV, class BV, class GV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type updated_value(Base base, const XV& X, const AV& Acc,
                                                                       const BV& B, const GV& G, int r, int t, int t0,
                                                                       int t1, typename XV::non_const_value_type eps) {
  return Kokkos::max(eps, base_value(base, X, Acc, r, t, t0) + B(r, t) - row_dot(X, r, G, t, t0, t1));
}

/// H-style sweep over columns [t0, t1) of X in place (no normalisation).
/// The rows are independent, so one work item owns a row and runs every
/// column of the tile in registers and its own cache lines: no team barrier,
/// one wave on a device (a team per 16 rows with a barrier per column took
/// 29.8 us per tile of 16 on the H100).
/// On a device a team of up to 128 rows first stages their tile in scratch
/// (ScratchRows), when it fits; the arithmetic is the same.
template <class ExecutionSpace, class XV, class AV, class BV, class GV>
void row_sweep(const ExecutionSpace& exec, const XV& X, const AV& Acc, Base base, const BV& B, const GV& G, int t0,
               int t1, typename XV::non_const_value_type eps) {
  using T = typename XV::non_const_value_type;
  const int n = static_cast<int>(X.extent(0));
  if (n == 0 || t1 <= t0) return;
  if constexpr (!SweepTraits<ExecutionSpace>::host) {
    using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
    const int w = t1 - t0;
    const std::size_t fast = std::size_t(Policy(exec, 1, 1).scratch_size_max(0));
    int rows = 128;
    while (rows > 32 && scratch_rows_bytes<T>(rows, w) > fast) rows /= 2;
    const std::size_t bytes = scratch_rows_bytes<T>(rows, w);
    if (bytes <= fast) {
      Kokkos::parallel_for(
          "kfactor::nmf::row_sweep_staged",
          light_weight(Policy(exec, (n + rows - 1) / rows, rows).set_scratch_size(0, Kokkos::PerTeam(bytes))),
          KOKKOS_LAMBDA(const typename Policy::member_type& team) {
            const int r0 = team.league_rank() * rows, r1 = r0 + rows < n ? r0 + rows : n;
            const ScratchRows<T> S{static_cast<T*>(team.team_scratch(0).get_shmem(bytes)), r0, t0, w + 1};
            copy_scratch_rows(team, X, S, r1, w, true);
            team.team_barrier();
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int r) {
              for (int t = t0; t < t1; ++t) S(r, t) = updated_value(base, S, Acc, B, G, r, t, t0, t1, eps);
            });
            team.team_barrier();
            copy_scratch_rows(team, X, S, r1, w, false);
          });
      return;
    }
  }
  Kokkos::parallel_for(
      "kfactor::nmf::row_sweep", light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n)),
      KOKKOS_LAMBDA(const int r) {
        for (int t = t0; t < t1; ++t) {
          X(r, t) = updated_value(base, X, Acc, B, G, r, t, t0, t1, eps);
        }
      });
}

/// On a host a tile [t0, t0 + w) of X is swept on a TRANSPOSED copy, Xt(j, r)
/// = X(r, t0 + j) and At(j, r) = the update's row-independent part (below),
/// w x n row-major, so that column t of the tile is a contiguous stream over
/// the rows and the sweep's inner loops vectorise across rows (on X's
/// row-major rows each row's dot product over the tile is a short serial
/// chain: the sweep ran at ~3 GFLOP/s, as long as the tile's GEMM). The
/// copies move blocks of transpose_rows rows: a work item per row wrote 2w
/// lines of the transposed copy at once (w = 16: 32 write streams per
/// thread), and a copy ran at about 1 GB/s.
inline constexpr int transpose_rows = 64;

/// Rows per chunk of a host sweep (tile_sweep_host, host_gram): at most
/// this many, so that a chunk of the tile stays in L1 while all its columns
/// run (sweep_chunk_rows).
inline constexpr int sweep_chunk = 256;

/// Rows per chunk of tile_sweep_host for a tile of w columns of `bytes`-byte
/// values: every column of a chunk reads the whole chunk of Xt, so it is
/// held to 32 KiB (an L1 data cache), in multiples of the 64-row blocks of
/// the sweep: 256 rows at K = 16 in double, 64 at K = 64, where 256 rows
/// (128 KiB) made each column stream the chunk from L2. Chunks only group
/// rows, so the result does not depend on them.
KOKKOS_INLINE_FUNCTION int sweep_chunk_rows(int w, int bytes) {
  const int rows = (32768 / (w * bytes)) / 64 * 64;
  return rows < 64 ? 64 : rows > sweep_chunk ? sweep_chunk : rows;
}

/// part[b] += (y0 x0[b] + y1 x1[b]) + (y2 x2[b] + y3 x3[b]) for b in
/// [b0, K): one row of a rank-4 update. The restrict-qualified arguments let
/// the compiler vectorise over b (with plain pointers it could not rule out
/// that part overlaps the rows, and ran a scalar loop).
template <class T>
KOKKOS_INLINE_FUNCTION void rank4_row(double* KOKKOS_RESTRICT part, const T* KOKKOS_RESTRICT x0,
                                      const T* KOKKOS_RESTRICT x1, const T* KOKKOS_RESTRICT x2,
                                      const T* KOKKOS_RESTRICT x3, double y0, double y1, double y2, double y3, int b0,
                                      int K) {
  for (int b = b0; b < K; ++b)
    part[b] += (y0 * double(x0[b]) + y1 * double(x1[b])) + (y2 * double(x2[b]) + y3 * double(x3[b]));
}

/// xg[c] = sum over l in [0, K) of x[l] G(l, c) for c in [c0, c0 + N), the
/// N sums in registers: accumulated in xg they cost a load and a store per
/// multiply-add, a dependency chain through memory. Returns c0 + N.
template <int N, class T, class GV>
KOKKOS_INLINE_FUNCTION int mu_row_block(const T* KOKKOS_RESTRICT x, const GV& G, int K, T* KOKKOS_RESTRICT xg, int c0) {
  T acc[N];
  for (int c = 0; c < N; ++c) acc[c] = T(0);
  for (int l = 0; l < K; ++l) {
    const T xl = x[l];
    const T* KOKKOS_RESTRICT gl = &G(l, c0);
    for (int c = 0; c < N; ++c) acc[c] += xl * gl[c];
  }
  for (int c = 0; c < N; ++c) xg[c0 + c] = acc[c];
  return c0 + N;
}

/// One entry of the Lee-Seung update: x max(b, 0) / (xg + l1 + l2 x + eps),
/// or its square root with `root` (scikit-learn's exponent 1/2 for
/// Itakura-Saito). The one formula of mu_row, mu_update and the host
/// beta-loss rows.
template <class T>
KOKKOS_INLINE_FUNCTION T mu_entry(T x, T b, T xg, T l1, T l2, T eps, bool root) {
  const T bp = b > T(0) ? b : T(0);
  const T den = xg + (l1 + l2 * x) + eps;
  return root ? T(x * Kokkos::sqrt(bp / den)) : T(x * bp / den);
}

/// The Lee-Seung update of one row x (K values) in place, mu_update's
/// arithmetic: x_c <- x_c max(b_c, 0) / ((x G)_c + l1 + l2 x_c + eps), with
/// x G summed into xg (K values) from the old row first, in blocks of 256
/// bytes (mu_row_block), then single columns: each sum in l order, as a
/// plain loop would.
template <class T, class GV>
KOKKOS_INLINE_FUNCTION void mu_row(T* KOKKOS_RESTRICT x, const T* KOKKOS_RESTRICT b, const GV& G, int K,
                                   T* KOKKOS_RESTRICT xg, T l1, T l2, T eps) {
  constexpr int block = 256 / int(sizeof(T));
  int c0 = 0;
  while (c0 + block <= K) c0 = mu_row_block<block>(x, G, K, xg, c0);
  if (c0 + block / 2 <= K) c0 = mu_row_block<block / 2>(x, G, K, xg, c0);
  if (c0 + block / 4 <= K) c0 = mu_row_block<block / 4>(x, G, K, xg, c0);
  while (c0 < K) c0 = mu_row_block<1>(x, G, K, xg, c0);
  for (int c = 0; c < K; ++c) x[c] = mu_entry(x[c], b[c], xg[c], l1, l2, eps, false);
}

/// lanes[l] += sum of x[j] y[j] over j = l mod 8, j < w: a dot product in
/// eight partial sums (restrict-qualified, so that they vectorise).
template <class T>
KOKKOS_INLINE_FUNCTION void row_dot_lanes(const T* KOKKOS_RESTRICT x, const T* KOKKOS_RESTRICT y, int w,
                                          double* KOKKOS_RESTRICT lanes) {
  int j = 0;
  for (; j + 8 <= w; j += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += double(x[j + l]) * double(y[j + l]);
  for (; j < w; ++j) lanes[0] += double(x[j]) * double(y[j]);
}

/// The upper triangle of the Gram of the rows [rc, re) of a row-major factor
/// X (n x K) added to part (K x K): rank-4 updates, so that each entry of
/// part is loaded and stored once per four rows. Shared by tile_sweep_host
/// and host_gram, so that a Gram has the same bits either way.
template <class XV>
KOKKOS_INLINE_FUNCTION void rows_gram(const XV& X, int rc, int re, double* part) {
  using T = typename XV::non_const_value_type;
  const int K = static_cast<int>(X.extent(1));
  for (int r = rc; r < re; r += 4) {
    const int m = re - r < 4 ? re - r : 4;
    // A short last block repeats a row with weight 0.
    const T* x[4];
    for (int i = 0; i < 4; ++i) x[i] = &X(r + (i < m ? i : 0), 0);
    for (int a = 0; a < K; ++a) {
      const double y0 = x[0][a], y1 = m > 1 ? double(x[1][a]) : 0.0, y2 = m > 2 ? double(x[2][a]) : 0.0,
                   y3 = m > 3 ? double(x[3][a]) : 0.0;
      rank4_row(part + std::size_t(a) * K, x[0], x[1], x[2], x[3], y0, y1, y2, y3, a, K);
    }
  }
}

/// G (K x K) = the sum of the team's partial Grams (partials: K x K values
/// per thread, upper triangles), each thread summing its share of the
/// entries in thread order (the same bits on every run with the same
/// threads), mirrored. Returns this thread's share of <G, with> (0 when
/// `with` is empty). Starts with a team barrier (the partials are complete).
template <class Team, class PV, class GV>
KOKKOS_INLINE_FUNCTION double reduce_gram(const Team& team, const PV& partials, const GV& G, const GV& with) {
  using T = typename GV::non_const_value_type;
  const int K = static_cast<int>(G.extent(0));
  const int p = team.team_rank(), threads = team.team_size();
  const bool dot = with.extent(0) > 0;
  team.team_barrier();
  double share = 0.0;
  const int ea = int(std::int64_t(K) * K * p / threads), eb = int(std::int64_t(K) * K * (p + 1) / threads);
  for (int e = ea; e < eb; ++e) {
    const int a = e / K, b = e % K;
    if (a > b) continue;
    double s = 0.0;
    for (int q = 0; q < threads; ++q) s += partials(std::size_t(q) * K * K + e);
    G(a, b) = T(s);
    G(b, a) = T(s);
    if (dot) share += double(T(s)) * (a == b ? double(with(a, b)) : double(with(a, b)) + double(with(b, a)));
  }
  return share;
}

/// What tile_sweep_host computes beside the sweep of HALS's tile [0, K), in
/// the same launch (every member may be left empty): `gram` = X^T X of the
/// result (K x K, summed in double from each thread's `partials`, at least
/// threads x K x K values), scal(0) = <X, dot_with> of the result and
/// scal(1) = <gram, gram_with>: the Gram of the factor just updated (the
/// other half's system) and the error's pieces, without a launch of their
/// own.
template <class T, class Mem>
struct SweepOutputs {
  DenseMatrix<T, Mem> gram;
  Kokkos::View<double*, Mem> partials;
  DenseMatrix<T, Mem> dot_with, gram_with;
  Kokkos::View<double*, Mem> scal;
};

/// tile_sweep_host's right-hand side as given (B).
struct NoProduct {};

/// tile_sweep_host's right-hand side computed in its launch: B = A F, each
/// thread's rows of B just before it sweeps them (so that B's rows are in
/// cache for the sweep and the product needs no launch of its own). A: a
/// CsrMatrix or a dense row-major matrix with X's rows; F: the other
/// factor, row-major with K columns.
template <class Matrix, class FV>
struct RowProduct {
  Matrix A;
  FV F;
};

template <class Prod>
inline constexpr bool csr_product = requires(const Prod& p) { p.A.row_map; };

/// Rows [ra, rb) of B = prod.A prod.F: CSR rows as the host SpMM computes
/// them (spmm_host_row), dense rows as gemm_skinny_nn's blocks.
template <class Prod, class BV>
KOKKOS_INLINE_FUNCTION void product_rows(const Prod& prod, const BV& B, int ra, int rb) {
  using T = typename BV::non_const_value_type;
  if constexpr (csr_product<Prod>) {
    const int K = static_cast<int>(B.extent(1));
    for (int r = ra; r < rb; ++r)
      kfactor::detail::spmm_host_row(r, K, T(1), T(0), prod.A.row_map, prod.A.entries, prod.A.values, prod.F, B);
  } else {
    // F in slices of its rows (kfactor::detail::skinny_block_bytes), each
    // kept in L2 across the chunk's rows of A instead of the whole F being
    // read again for every 8 of them.
    const kfactor::detail::SkinnySlices slices(static_cast<int>(prod.A.extent(1)), static_cast<int>(B.extent(1)),
                                               sizeof(T), kfactor::detail::skinny_block_bytes);
    for (int q = 0; q < slices.count; ++q)
      kfactor::detail::gemm_skinny_nn_rows(prod.A, prod.F, B, ra, rb, slices.begin(q), slices.end(q));
  }
}

/// The first of the rows that thread q of `threads` sweeps: equal shares of
/// the rows, or, with a CSR product, of the cost nnz + K per row (the
/// product's and the sweep's), so that a skewed degree distribution does
/// not leave one thread with most of the product.
template <class Prod>
KOKKOS_INLINE_FUNCTION int sweep_row_bound(const Prod& prod, int n, int K, int q, int threads) {
  if constexpr (csr_product<Prod>) {
    const auto weight = [&](int r) { return std::int64_t(prod.A.row_map(r)) + std::int64_t(K) * r; };
    const std::int64_t target = weight(n) * q / threads;
    int lo = 0, hi = n;  // the first r with weight(r) >= target
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (weight(mid) < target)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  } else {
    (void)prod;
    (void)K;
    return int(std::int64_t(n) * q / threads);
  }
}

/// The sweep of the tile [t0, t0 + w) of X on a host space, in ONE launch
/// with its copies in and out: a single team of all host threads, each
/// thread on the same contiguous rows throughout, so its rows of the tile
/// stay in its core's cache (the paper's locality idea). On a host a launch
/// is the dominant cost of a small problem (each wakes the pool's threads:
/// at K = 16 on p2p-Gnutella08 an epoch of a few launches takes under a
/// millisecond), so HALS runs here with the tile [0, K) and ALO each of its
/// tiles. The system is scaled here: with d_t = G(t, t) + l2, the
/// right-hand side is (B(r, t) - l1) / d_t and the Gram's row G(t, :) / d_t
/// with 1 on the diagonal (scaled_system's Gs and Bs, with the same
/// zero-diagonal rule; an already scaled system with l1 = l2 = 0 is left as
/// it is). Each chunk of a thread's rows is copied into Xt with At = base +
/// Bs (Base: X(r, t) for HALS, and for ALO X N[:, tile] with N from
/// alo_tile_matrix, which holds the base: the tile's product, summed here
/// over each row of X by gemm_skinny_nn_rows; as a BLAS call between launches,
/// OpenBLAS's threads spun in it for over half of an epoch at K = 64 on 2
/// busy cores), runs all w columns while it is in L1 and is copied back,
/// adding to `out` (SweepOutputs; HALS only, w = K). Base::multiplicative
/// runs MU instead (the tile [0, K)): each chunk's rows take mu_row in
/// place, with G the other factor's Gram and l1, l2 its penalties; Xt and
/// At are not read then, only their shape (K x n). With a RowProduct
/// `prod`, each chunk's rows of B = A F are computed into B first (HALS
/// only). Host only: on a device one team is one multiprocessor, so devices
/// keep row_sweep.
template <class ExecutionSpace, class XV, class BV, class TV, class GV, class MV, class Prod = NoProduct,
          class T = typename TV::non_const_value_type>
void tile_sweep_host(const ExecutionSpace& exec, const XV& X, const BV& B, Base base, const MV& N, const TV& Xt,
                     const TV& At, const GV& G, int t0, T eps, double l1, double l2,
                     const SweepOutputs<T, typename ExecutionSpace::memory_space>& out = {}, const Prod& prod = {}) {
  static_assert(SweepTraits<ExecutionSpace>::host, "tile_sweep_host runs one team: host spaces only");
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int w = static_cast<int>(Xt.extent(0)), n = static_cast<int>(Xt.extent(1));
  if (n == 0 || w == 0) return;
  const bool gram = out.gram.extent(0) > 0, dot = out.dot_with.extent(0) > 0, gram_dot = out.gram_with.extent(0) > 0;
  const T tl1 = T(l1);
  // A host lambda: the body never runs on a device (and nvcc's extended
  // lambdas cannot capture inside the `if constexpr` below).
  const auto body = [=](const typename Policy::member_type& team) {
    constexpr int chunk = sweep_chunk, block = 64;
    const int p = team.team_rank(), threads = team.team_size();
    const int K = static_cast<int>(X.extent(1));
    const int r0 = sweep_row_bound(prod, n, K, p, threads), r1 = sweep_row_bound(prod, n, K, p + 1, threads);
    // 1 / d_t of the scaled system (0 for a zero diagonal).
    const auto inv_diag = [&](int t) {
      const double d = double(G(t, t)) + l2;
      return d > 0.0 ? T(1.0 / d) : T(0);
    };
    // The scaled Gram's row of each column and 1 / d_t, in this thread's
    // scratch.
    T* g = static_cast<T*>(team.thread_scratch(0).get_shmem(2 * std::size_t(w) * sizeof(T)));
    T* invd = g + w;
    for (int j = 0; j < w; ++j) invd[j] = inv_diag(t0 + j);
    double* part = gram ? out.partials.data() + std::size_t(p) * K * K : nullptr;
    if (gram)
      for (int e = 0; e < K * K; ++e) part[e] = 0.0;
    // Rows [ra, rb) into Xt and At, at their columns [buf, buf + rb - ra).
    const auto load = [&](int ra, int rb, int buf) {
      if constexpr (!std::is_same_v<Prod, NoProduct>) product_rows(prod, B, ra, rb);
      if (base == Base::accumulated) {
        // At's rows r, columns [0, w), written through its transpose.
        using AtT = Kokkos::View<T**, Kokkos::LayoutStride, typename TV::memory_space, Kokkos::MemoryUnmanaged>;
        const AtT at_t(At.data(), Kokkos::LayoutStride(At.extent(1), 1, At.extent(0), At.stride(0)));
        kfactor::detail::gemm_skinny_nn_rows(X, Kokkos::subview(N, Kokkos::ALL, Kokkos::make_pair(t0, t0 + w)), at_t,
                                             ra, rb);
      }
      for (int rc = ra; rc < rb; rc += transpose_rows) {
        const int re = rc + transpose_rows < rb ? rc + transpose_rows : rb;
        for (int j = 0; j < w; ++j) {
          const int t = t0 + j;
          for (int r = rc; r < re; ++r) {
            const T x = X(r, t);
            const int b = r - ra + buf;
            Xt(j, b) = x;
            At(j, b) = (base == Base::accumulated ? At(j, b) : x) + (T(B(r, t)) - tl1) * invd[j];
          }
        }
      }
    };
    // Rows [ra, rb) back into X from Xt's columns [buf, buf + rb - ra).
    const auto store = [&](int ra, int rb, int buf) {
      for (int rc = ra; rc < rb; rc += transpose_rows) {
        const int re = rc + transpose_rows < rb ? rc + transpose_rows : rb;
        for (int r = rc; r < re; ++r)
          for (int j = 0; j < w; ++j) X(r, t0 + j) = Xt(j, r - ra + buf);
      }
    };
    // Column c of the chunk held in Xt's and At's columns [rc, rc + len),
    // with g the row of the scaled Gram for it.
    const auto column_chunk = [&](int c, int rc, int len, const T* g) {
      T s[chunk];
      // Blocks of `block` rows keep their sums in registers across the w
      // columns (independent chains of multiply-adds); summing over the
      // chunk column by column instead loaded and stored s for every
      // multiply-add.
      int i0 = 0;
      for (; i0 + block <= len; i0 += block) {
        T acc[block];
        for (int i = 0; i < block; ++i) acc[i] = At(c, rc + i0 + i);
        for (int j = 0; j < w; ++j) {
          const T gj = g[j];
          const T* x = &Xt(j, rc + i0);
          for (int i = 0; i < block; ++i) acc[i] -= x[i] * gj;
        }
        for (int i = 0; i < block; ++i) s[i0 + i] = acc[i];
      }
      for (int i = i0; i < len; ++i) s[i] = At(c, rc + i);
      for (int j = 0; j < w; ++j) {
        const T gj = g[j];
        for (int i = i0; i < len; ++i) s[i] -= Xt(j, rc + i) * gj;
      }
      for (int i = 0; i < len; ++i) Xt(c, rc + i) = s[i] > eps ? s[i] : eps;
    };
    // The dot products with dot_with in `lanes` partial sums that
    // vectorise.
    constexpr int lanes = 8;
    double dot_lanes[lanes] = {};
    const auto dot_rows = [&](int rc, int re) {
      for (int r = rc; r < re; ++r) row_dot_lanes(&X(r, 0), &out.dot_with(r, 0), w, dot_lanes);
    };
    // Rows are independent: each chunk runs every column while its part of
    // the tile is in L1 (one pass over the tile instead of w).
    const int rows = sweep_chunk_rows(w, int(sizeof(T)));
    for (int rc = r0; rc < r1; rc += rows) {
      const int len = r1 - rc < rows ? r1 - rc : rows;
      if (base == Base::multiplicative) {
        if constexpr (!std::is_same_v<Prod, NoProduct>) product_rows(prod, B, rc, rc + len);
        for (int r = rc; r < rc + len; ++r) mu_row(&X(r, 0), &B(r, 0), G, K, g, tl1, T(l2), eps);
      } else {
        // The chunk's columns of Xt and At: ALO's base is At at the rows'
        // own columns; otherwise every chunk of the thread reuses the
        // columns of its first, so that they stay in cache instead of
        // streaming the whole transposed tile out and back per half.
        const int buf = base == Base::accumulated ? rc : r0;
        load(rc, rc + len, buf);
        for (int c = 0; c < w; ++c) {
          const int t = t0 + c;
          for (int j = 0; j < w; ++j) g[j] = j == c ? T(1) : T(G(t, t0 + j)) * invd[c];
          column_chunk(c, buf, len, g);
        }
        store(rc, rc + len, buf);
      }
      if (gram) rows_gram(X, rc, rc + len, part);
      if (dot) dot_rows(rc, rc + len);
    }
    if (!gram && !dot) return;
    double dot_part = ((dot_lanes[0] + dot_lanes[1]) + (dot_lanes[2] + dot_lanes[3])) +
                      ((dot_lanes[4] + dot_lanes[5]) + (dot_lanes[6] + dot_lanes[7]));
    double gram_part = 0.0;
    if (gram) gram_part = reduce_gram(team, out.partials, out.gram, out.gram_with);
    team.team_reduce(Kokkos::Sum<double>(dot_part));
    team.team_reduce(Kokkos::Sum<double>(gram_part));
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      if (dot) out.scal(0) = dot_part;
      if (gram_dot) out.scal(1) = gram_part;
    });
  };
  const int threads = Policy(exec, 1, 1).team_size_max(body, Kokkos::ParallelForTag());
  Kokkos::parallel_for("kfactor::nmf::tile_sweep_host",
                       Policy(exec, 1, threads).set_scratch_size(0, Kokkos::PerThread(2 * std::size_t(w) * sizeof(T))),
                       body);
}

/// G = X^T X on a host with the arithmetic of tile_sweep_host's Gram (the
/// same rows per thread for the same `prod`, the same chunks, rows_gram and
/// reduce_gram): the Gram of a
/// factor that a sweep did not produce (a fresh or restored state) has the
/// bits the sweep would have given it, so a continued run equals an
/// uninterrupted one bit for bit.
template <class ExecutionSpace, class XV, class PV, class GV, class Prod = NoProduct>
void host_gram(const ExecutionSpace& exec, const XV& X, const PV& partials, const GV& G, const Prod& prod = {}) {
  static_assert(SweepTraits<ExecutionSpace>::host, "host_gram runs one team: host spaces only");
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int n = static_cast<int>(X.extent(0)), K = static_cast<int>(X.extent(1));
  const auto body = KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    constexpr int chunk = sweep_chunk;
    const int p = team.team_rank(), threads = team.team_size();
    const int r0 = sweep_row_bound(prod, n, K, p, threads), r1 = sweep_row_bound(prod, n, K, p + 1, threads);
    double* part = partials.data() + std::size_t(p) * K * K;
    for (int e = 0; e < K * K; ++e) part[e] = 0.0;
    for (int rc = r0; rc < r1; rc += chunk) rows_gram(X, rc, rc + (r1 - rc < chunk ? r1 - rc : chunk), part);
    reduce_gram(team, partials, G, GV{});
  };
  const int threads = Policy(exec, 1, 1).team_size_max(body, Kokkos::ParallelForTag());
  Kokkos::parallel_for("kfactor::nmf::host_gram", Policy(exec, 1, threads), body);
}

/// N (K x K) such that Acc = X N[:, tile] is ALO's phases 1 and 3 for that
/// tile, for the scaled system Gs (scaled_system: row i for column i, Gs need
/// not be symmetric), X in place (columns before the tile new, the tile and
/// after old): N(j, i) = 1 for j == i (the base X(r, i)), 0 for another
/// column j of i's tile (the sweep applies those), -Gs(i, j) for j outside
/// i's tile. So the columns of the earlier tiles (new: phase 3, pulled by
/// this tile instead of pushed by each earlier one) and of the later tiles
/// (old: phase 1) enter in ONE GEMM of inner dimension K per tile: 2 V K^2
/// flops per update in products of full depth, where phase 1 for all tiles
/// at once (X_old M with a block-triangular M, half zeros) plus a rank-T
/// phase-3 GEMM per tile did 3 V K^2, a third of it in updates of depth T.
template <class ExecutionSpace, class GV, class MV>
void alo_tile_matrix(const ExecutionSpace& exec, const GV& G, int tile, const MV& N) {
  using T = typename MV::non_const_value_type;
  Kokkos::parallel_for(
      "kfactor::nmf::alo_tile_matrix", row_major_policy(exec, N.extent(0), N.extent(1)),
      KOKKOS_LAMBDA(std::size_t j, std::size_t i) {
        N(j, i) = j == i ? T(1) : (int(j) / tile != int(i) / tile ? T(-G(i, j)) : T(0));
      });
}

/// Lee-Seung: X = X * (B / (XG + l1 + l2 X + eps))^gamma, XG (the
/// denominator's product) precomputed; l1, l2 are scikit-learn's penalty
/// terms (zero: the plain rule, bit for bit) and gamma its exponent for
/// beta < 1 (0.5 for Itakura-Saito, 1 otherwise), which keeps the loss
/// non-increasing.
template <class ExecutionSpace, class XV, class BV>
void mu_update(const ExecutionSpace& exec, const XV& X, const BV& B, const XV& XG,
               typename XV::non_const_value_type eps, double l1 = 0.0, double l2 = 0.0, double gamma = 1.0) {
  using T = typename XV::non_const_value_type;
  const T tl1 = T(l1), tl2 = T(l2);
  const bool root = gamma != 1.0;
  Kokkos::parallel_for(
      "kfactor::nmf::mu_update", row_major_policy(exec, X.extent(0), X.extent(1)),
      KOKKOS_LAMBDA(std::size_t r, std::size_t j) {
        X(r, j) = mu_entry(T(X(r, j)), T(B(r, j)), T(XG(r, j)), tl1, tl2, eps, root);
      });
}

/// The coordinate-descent system of a factor X with Gram G and right-hand
/// side B under the penalties l1 (subtracted from B) and l2 (added to G's
/// diagonal), divided by the diagonal so that row_sweep's Base::old_value
/// rule X_t + Bs_t - X Gs_t is scikit-learn's exact coordinate step
///   X_t <- max(eps, X_t + (B_t - l1 - X G_t - l2 X_t) / (G_tt + l2))
/// for any column norms: Gs(t, j) = (G(t, j) + l2 [t == j]) / (G(t, t) + l2),
/// Bs(r, t) = (B(r, t) - l1) / (G(t, t) + l2). Gs is not symmetric: the
/// sweeps and alo_tile_matrix read row t for column t. A zero diagonal (a
/// zero column of X without l2) gives Gs(t, :) = e_t and Bs = 0, leaving
/// the column at the floor.
template <class ExecutionSpace, class GV, class BV, class XV>
void scaled_system(const ExecutionSpace& exec, const GV& G, const BV& B, double l1, double l2, const GV& Gs,
                   const XV& Bs) {
  using T = typename GV::non_const_value_type;
  Kokkos::parallel_for(
      "kfactor::nmf::scaled_gram", row_major_policy(exec, G.extent(0), G.extent(1)),
      KOKKOS_LAMBDA(std::size_t t, std::size_t j) {
        const double d = double(G(t, t)) + l2;
        Gs(t, j) = t == j ? T(1) : (d > 0.0 ? T(double(G(t, j)) / d) : T(0));
      });
  Kokkos::parallel_for(
      "kfactor::nmf::scaled_rhs", row_major_policy(exec, B.extent(0), B.extent(1)),
      KOKKOS_LAMBDA(std::size_t r, std::size_t t) {
        const double d = double(G(t, t)) + l2;
        Bs(r, t) = d > 0.0 ? T((double(B(r, t)) - l1) / d) : T(0);
      });
}

/// Coordinate descent on the stored entries only (Options::missing =
/// absent), for every row r of X at once: the rows are independent, so one
/// work item runs all K columns of its row. `res` holds the residual
/// a_e - <X_r, Y_j> of each stored entry e = (r, j) of the pattern (from
/// kfactor::sddmm) and is kept current:
///   num = sum_e res_e Y(j,t) + X(r,t) sum_e Y(j,t)^2,  den = sum_e Y(j,t)^2
///   X(r,t) <- max(eps, (num - l1) / (den + l2)),  res_e -= (new - old) Y(j,t)
/// (a row without stored entries and l2 = 0 goes to the floor).
template <class ExecutionSpace, class RowMap, class Entries, class XV, class YV, class RV>
void masked_cd_rows(const ExecutionSpace& exec, const RowMap& row_map, const Entries& entries, const XV& X, const YV& Y,
                    const RV& res, typename XV::non_const_value_type eps, double l1, double l2) {
  using T = typename XV::non_const_value_type;
  const int K = static_cast<int>(X.extent(1));
  Kokkos::parallel_for(
      "kfactor::nmf::masked_cd", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, X.extent(0)),
      KOKKOS_LAMBDA(const std::size_t r) {
        const auto e0 = row_map(r), e1 = row_map(r + 1);
        for (int t = 0; t < K; ++t) {
          double num = 0.0, den = 0.0;
          for (auto e = e0; e < e1; ++e) {
            const double y = Y(entries(e), t);
            num += double(res(e)) * y;
            den += y * y;
          }
          const T old = X(r, t);
          const double d = den + l2;
          const T v = d > 0.0 ? T((num + double(old) * den - l1) / d) : T(0);
          const T now = v > eps ? v : eps;
          const T delta = now - old;
          if (delta != T(0))
            for (auto e = e0; e < e1; ++e) res(e) -= delta * Y(entries(e), t);
          X(r, t) = now;
        }
      });
}

/// out() = sum_ij X(i,j) Y(i,j) in double, written on the device.
template <class ExecutionSpace, class XV, class YV>
void frobenius_dot(const ExecutionSpace& exec, const XV& X, const YV& Y,
                   const Kokkos::View<double, typename ExecutionSpace::memory_space>& out) {
  Kokkos::parallel_reduce(
      "kfactor::nmf::frobenius_dot", row_major_policy(exec, X.extent(0), X.extent(1)),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j, double& s) { s += double(X(i, j)) * double(Y(i, j)); },
      Kokkos::Sum<double, typename ExecutionSpace::memory_space>(out));
}

}  // namespace kfactor::nmf::detail
