#pragma once
/// \file
/// Batched small SPD Cholesky factor + solve, written once in Kokkos team code.
///
/// Two levels:
///  * team-level building blocks, called inside a solver's own team kernel
///    (one team per system): team_cholesky_factor() factors an n x n SPD
///    matrix held behind a raw pointer (team scratch or global memory,
///    row-major with leading dimension lda; only the lower triangle is read
///    and overwritten by L), team_cholesky_solve() solves L L^T x = b in place.
///    Any n (not only multiples of a block size); the factor is left-looking
///    in panels of 4 columns (every thread forms whole entries of its rows
///    with sequential dot products, 4 rows x 4 columns at a time), so every
///    entry is computed in a fixed order: results are deterministic and do not
///    depend on the team size. The *_packed variants take the lower triangle
///    packed row by row (half the scratch of a square array).
///  * batched_cholesky_solve(exec, A, B): one team per system for a batch of
///    row-major n x n matrices (View<T***>, batch x n x n) and right-hand sides
///    (View<T**>, batch x n), staging each matrix packed in team scratch when it fits
///    (detail::cholesky_scratch_limit bytes) and working in place otherwise.
///
/// A system whose pivot is not positive and finite is reported (factor returns
/// its 1-based failing column, batched_cholesky_solve counts failures) and left
/// partially factored; callers decide (the ALS solver never factors a zero
/// matrix: see als.hpp).

#include <kfactor/core/error.hpp>
#include <kfactor/core/scratch_level.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kfactor {

namespace detail {
/// Largest packed triangle (bytes) batched_cholesky_solve stages in team scratch.
inline constexpr std::size_t cholesky_scratch_limit = 96 * 1024;

/// Elements of a packed n x n lower triangle.
KOKKOS_INLINE_FUNCTION std::size_t packed_size(int n) { return std::size_t(n) * std::size_t(n + 1) / 2; }

/// Where row i of a lower triangle starts, for the two storages the team
/// routines accept: row-major with leading dimension lda, or packed row by
/// row (row i holds its i + 1 entries at i (i + 1) / 2; half the scratch, so
/// twice as many systems fit on a GPU multiprocessor at once).
struct LowerRowMajor {
  int lda;
  KOKKOS_INLINE_FUNCTION std::size_t row(int i) const { return std::size_t(i) * std::size_t(lda); }
};
struct LowerPacked {
  KOKKOS_INLINE_FUNCTION std::size_t row(int i) const { return std::size_t(i) * std::size_t(i + 1) / 2; }
};

/// Columns per panel of the factor and of the substitutions.
inline constexpr int cholesky_panel = 4;

/// Panel step of the factor: for the R rows i_u = i0 + ts u (u < R; rows
/// past n are computed from row n - 1 and not stored) and the w <= W
/// columns j = j0 + c, s = A(i, j) - sum_{k < j0} L(i, k) L(j, k) in k
/// order, stored back where j <= i. The loads of L(j0 .. j0 + W - 1, k)
/// serve all R rows and those of L(i, k) all W columns: R W multiply-adds
/// per R + W loads, in R W independent chains.
template <int R, int W, class T, class Layout>
KOKKOS_INLINE_FUNCTION void cholesky_panel_rows(T* A, const Layout& lay, int n, int j0, int w, int i0, int ts) {
  T s[R][W];
  T* li[R];
  const T* lj[W];
  for (int u = 0; u < R; ++u) {
    const int i = i0 + ts * u < n ? i0 + ts * u : n - 1;
    li[u] = A + lay.row(i);
    for (int c = 0; c < W; ++c) s[u][c] = li[u][j0 + c <= i ? j0 + c : i];
  }
  for (int c = 0; c < W; ++c) lj[c] = A + lay.row(j0 + c < n ? j0 + c : n - 1);
  // Four k at a time: one address update per pointer per four loads.
  int k = 0;
  for (; k + 4 <= j0; k += 4) {
    T l[4][W], a[4][R];
    for (int kk = 0; kk < 4; ++kk) {
      for (int c = 0; c < W; ++c) l[kk][c] = lj[c][k + kk];
      for (int u = 0; u < R; ++u) a[kk][u] = li[u][k + kk];
    }
    for (int kk = 0; kk < 4; ++kk)
      for (int u = 0; u < R; ++u)
        for (int c = 0; c < W; ++c) s[u][c] -= a[kk][u] * l[kk][c];
  }
  for (; k < j0; ++k) {
    T l[W];
    for (int c = 0; c < W; ++c) l[c] = lj[c][k];
    for (int u = 0; u < R; ++u) {
      const T a = li[u][k];
      for (int c = 0; c < W; ++c) s[u][c] -= a * l[c];
    }
  }
  for (int u = 0; u < R; ++u) {
    const int i = i0 + ts * u;
    if (i < n)
      for (int c = 0; c < W; ++c)
        if (c < w && j0 + c <= i) li[u][j0 + c] = s[u][c];
  }
}

/// Left-looking factor in panels of W = 4 columns, written once for both
/// storages. Per panel: (1) every thread updates its rows i >= j0 (i = tid
/// mod ts) by the columns left of the panel, R rows at a time, every thread
/// taking the same steps; (2) every thread factors the w x w diagonal block
/// alike, in registers; (3) it finishes its rows below the block. Every
/// entry is the left-looking sum A(i, j) - sum_{k < j} L(i, k) L(j, k) in k
/// order, times 1 / L(j, j): the results do not depend on the team size or
/// the storage. Two barriers per panel: the diagonal block is read by all
/// in (2) and its final values are stored only after the second.
template <class Team, class T, class Layout>
KOKKOS_INLINE_FUNCTION int cholesky_factor(const Team& team, T* A, const Layout& lay, int n) {
  constexpr int W = cholesky_panel;
  const int ts = team.team_size(), tid = team.team_rank();
  // This thread's first row i0 >= j0 (i0 = tid mod ts) and the rows per
  // thread m = ceil((n - j0) / ts), the same on every thread: advanced
  // panel by panel (integer divisions by the run-time team size cost more
  // than a panel's diagonal block).
  int i0 = tid, m = (n + ts - 1) / ts;
  for (int j0 = 0; j0 < n; j0 += W) {
    const int w = n - j0 < W ? n - j0 : W;
    while (i0 < j0) i0 += ts;
    while ((m - 1) * ts >= n - j0) --m;
    int q = 0;
    for (; q + 4 <= m; q += 4) cholesky_panel_rows<4, W>(A, lay, n, j0, w, i0 + ts * q, ts);
    if (m - q == 3) cholesky_panel_rows<3, W>(A, lay, n, j0, w, i0 + ts * q, ts);
    if (m - q == 2) cholesky_panel_rows<2, W>(A, lay, n, j0, w, i0 + ts * q, ts);
    if (m - q == 1) cholesky_panel_rows<1, W>(A, lay, n, j0, w, i0 + ts * q, ts);
    team.team_barrier();
    // Loops to W with guards, not to w: fixed trip counts keep d, inv and
    // v in registers (a narrower last panel is padded with the identity).
    T d[W][W], inv[W];
    for (int r = 0; r < W; ++r)
      for (int c = 0; c < W; ++c) d[r][c] = c <= r && r < w ? A[lay.row(j0 + r) + j0 + c] : T(r == c ? 1 : 0);
    for (int c = 0; c < W; ++c) {
      T x = d[c][c];
      for (int k = 0; k < c; ++k) x -= d[c][k] * d[c][k];
      if (!(x > T(0)) || !Kokkos::isfinite(x)) return j0 + c + 1;  // the same on every thread
      d[c][c] = Kokkos::sqrt(x);
      inv[c] = T(1) / d[c][c];
      for (int r = c + 1; r < W; ++r) {
        T y = d[r][c];
        for (int k = 0; k < c; ++k) y -= d[r][k] * d[c][k];
        d[r][c] = y * inv[c];
      }
    }
    int ib = i0;
    while (ib < j0 + w) ib += ts;
    for (int i = ib; i < n; i += ts) {  // rows below: only when w = W
      T* li = A + lay.row(i) + j0;
      T v[W];
      for (int c = 0; c < W; ++c) v[c] = li[c];
      for (int c = 0; c < W; ++c) {
        for (int k = 0; k < c; ++k) v[c] -= v[k] * d[c][k];
        v[c] *= inv[c];
      }
      for (int c = 0; c < W; ++c) li[c] = v[c];
    }
    team.team_barrier();  // the block was read by all; later panels never read it
    if (tid == 0)
      for (int r = 0; r < W; ++r)
        for (int c = 0; c <= r; ++c)
          if (r < w) A[lay.row(j0 + r) + j0 + c] = d[r][c];
  }
  team.team_barrier();
  return 0;
}

/// (i, j) of packed index e (row i holds entries i (i + 1) / 2 ...).
KOKKOS_INLINE_FUNCTION void packed_index(std::size_t e, int& i, int& j) {
  i = int((Kokkos::sqrt(8.0 * double(e) + 1.0) - 1.0) * 0.5);
  while (packed_size(i + 1) <= e) ++i;
  while (packed_size(i) > e) --i;
  j = int(e - packed_size(i));
}

/// Copies the lower triangle of an n x n matrix, read through at(i, j), into
/// packed storage P. Each thread reads eight entries before it stores any:
/// the reads come from global memory, and one at a time each would cost a
/// full memory latency.
template <class Team, class T, class At>
KOKKOS_INLINE_FUNCTION void team_stage_lower_packed(const Team& team, int n, T* P, const At& at) {
  constexpr int U = 8;
  const std::size_t total = packed_size(n);
  const int ts = team.team_size();
  int i = 0, j = 0;  // (i, j) of this thread's next entry, advanced by ts entries at a time
  packed_index(std::size_t(team.team_rank()), i, j);
  for (std::size_t e0 = std::size_t(team.team_rank()); e0 < total; e0 += std::size_t(U) * ts) {
    T v[U];
    for (int u = 0; u < U; ++u) {
      v[u] = e0 + std::size_t(u) * ts < total ? T(at(i, j)) : T(0);
      for (j += ts; j > i;) j -= ++i;  // next entry: ts further along the packed rows
    }
    for (int u = 0; u < U; ++u)
      if (e0 + std::size_t(u) * ts < total) P[e0 + std::size_t(u) * ts] = v[u];
  }
}

/// Column-oriented substitutions in panels of W = 4 columns, one barrier
/// per panel: every thread solves the panel's w x w triangle alike (in
/// registers), then updates its own rows i = tid (mod ts) outside the
/// panel; the panel's results are stored after the barrier, when nobody
/// reads them any more. Every b_i is updated column by column in the
/// unblocked order, so results do not depend on the team size.
template <class Team, class T, class Layout>
KOKKOS_INLINE_FUNCTION void cholesky_solve(const Team& team, const T* L, const Layout& lay, int n, T* b) {
  constexpr int W = cholesky_panel;
  const int ts = team.team_size(), tid = team.team_rank();
  T z[W];
  // Forward: L z = b. ib: this thread's first row below the panel.
  int ib = tid;
  for (int j0 = 0; j0 < n; j0 += W) {
    const int w = n - j0 < W ? n - j0 : W;
    for (int c = 0; c < W; ++c) {  // to W with guards: z stays in registers
      z[c] = T(0);
      if (c < w) {
        const T* lj = L + lay.row(j0 + c) + j0;
        T x = b[j0 + c];
        for (int k = 0; k < c; ++k) x -= lj[k] * z[k];
        z[c] = x / lj[c];
      }
    }
    while (ib < j0 + w) ib += ts;
    for (int i = ib; i < n; i += ts) {  // only when w = W
      const T* li = L + lay.row(i) + j0;
      T x = b[i];
      for (int c = 0; c < W; ++c) x -= li[c] * z[c];
      b[i] = x;
    }
    team.team_barrier();
    if (tid == 0)
      for (int c = 0; c < W; ++c)
        if (c < w) b[j0 + c] = z[c];
  }
  team.team_barrier();
  // Backward: L^T x = z; row j of L^T is column j of L.
  // Panels [j0, j0 + w) from the end; the first one (the forward's last)
  // may be narrower: there the padding k >= w is skipped.
  for (int j1 = n; j1 > 0;) {
    const int w = j1 == n && n % W != 0 ? n % W : W, j0 = j1 - w;
    for (int c = W - 1; c >= 0; --c) {
      z[c] = T(0);
      if (c < w) {
        T x = b[j0 + c];
        for (int k = W - 1; k > c; --k)
          if (k < w) x -= L[lay.row(j0 + k) + j0 + c] * z[k];
        z[c] = x / L[lay.row(j0 + c) + j0 + c];
      }
    }
    for (int i = tid; i < j0; i += ts) {
      T x = b[i];
      for (int c = W - 1; c >= 0; --c)
        if (c < w) x -= L[lay.row(j0 + c) + i] * z[c];
      b[i] = x;
    }
    team.team_barrier();
    if (tid == 0)
      for (int c = 0; c < W; ++c)
        if (c < w) b[j0 + c] = z[c];
    j1 = j0;
  }
  team.team_barrier();
}
}  // namespace detail

/// In-place lower Cholesky factor of the n x n SPD matrix A (row-major, leading
/// dimension lda; lower triangle used). Every thread of the team must call it.
/// Returns 0 on success or k + 1 when pivot k is not positive and finite (the
/// same value on every thread).
template <class Team, class T>
KOKKOS_INLINE_FUNCTION int team_cholesky_factor(const Team& team, T* A, int lda, int n) {
  return detail::cholesky_factor(team, A, detail::LowerRowMajor{lda}, n);
}

/// The same for a packed lower triangle (row i at offset i (i + 1) / 2).
template <class Team, class T>
KOKKOS_INLINE_FUNCTION int team_cholesky_factor_packed(const Team& team, T* A, int n) {
  return detail::cholesky_factor(team, A, detail::LowerPacked{}, n);
}

/// Solves L L^T x = b in place (b becomes x) with L from team_cholesky_factor.
/// Every thread of the team must call it.
template <class Team, class T>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve(const Team& team, const T* L, int lda, int n, T* b) {
  detail::cholesky_solve(team, L, detail::LowerRowMajor{lda}, n, b);
}

/// The same with L from team_cholesky_factor_packed.
template <class Team, class T>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve_packed(const Team& team, const T* L, int n, T* b) {
  detail::cholesky_solve(team, L, detail::LowerPacked{}, n, b);
}

/// Team size that suits an n x n factor (enough threads for a column).
template <class ExecutionSpace>
int cholesky_team_size(int n) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible) {
    (void)n;
    return 1;
  } else {
    // One warp up to n = 112, two beyond. Measured on the H100 in ALS
    // batches: two warps took 11% longer at n = 100 and 8% less at n = 128.
    return n <= 112 ? 32 : 64;
  }
}

/// Factors and solves every system of a batch: A (batch x n x n, row-major
/// per system, lower triangle used, overwritten by L) and B (batch x n,
/// overwritten by x). Returns the number of systems whose factorization
/// failed (their x is left unspecified).
template <class ExecutionSpace, class AView, class BView>
int batched_cholesky_solve(const ExecutionSpace& exec, const AView& A, const BView& B) {
  static_assert(AView::rank() == 3 && BView::rank() == 2, "A is batch x n x n, B is batch x n");
  using T = typename AView::non_const_value_type;
  const int batch = static_cast<int>(A.extent(0));
  const int n = static_cast<int>(A.extent(1));
  if (A.extent(2) != A.extent(1) || B.extent(0) != A.extent(0) || B.extent(1) != A.extent(1))
    throw UsageError("batched_cholesky_solve: A is " + std::to_string(A.extent(0)) + " x " +
                     std::to_string(A.extent(1)) + " x " + std::to_string(A.extent(2)) + ", B is " +
                     std::to_string(B.extent(0)) + " x " + std::to_string(B.extent(1)));
  if (batch == 0 || n == 0) return 0;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Team = typename Policy::member_type;
  using Scratch =
      Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const bool staged = (detail::packed_size(n) + n) * sizeof(T) <= detail::cholesky_scratch_limit;
  const std::size_t bytes = staged ? Scratch::shmem_size(detail::packed_size(n) + n) : 0;
  if (!staged && (A.stride(2) != 1 || A.stride(1) != std::size_t(n) || B.stride(1) != 1))
    throw UsageError("batched_cholesky_solve: systems too large for scratch must be contiguous row-major");
  Policy policy(exec, batch, cholesky_team_size<ExecutionSpace>(n));
  const int level = bytes <= std::size_t(policy.scratch_size_max(0)) ? 0 : 1;
  if (bytes > 0) policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
  int failed = 0;
  Kokkos::parallel_reduce(
      "kfactor::batched_cholesky_solve", policy,
      KOKKOS_LAMBDA(const Team& team, int& nfail) {
        const int s = team.league_rank();
        T* a = &A(s, 0, 0);
        T* b = &B(s, 0);
        // A and B may be strided views; stage or copy through the view accessors.
        if (staged) {
          const int info = with_scratch_level(level, [&](auto L) {
            constexpr int lv = decltype(L)::value;
            Scratch sm(team.team_scratch(lv), detail::packed_size(n) + n);
            T* sa = sm.data();
            T* sb = sa + detail::packed_size(n);
            detail::team_stage_lower_packed(team, n, sa, [&](int i, int j) { return A(s, i, j); });
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int e) { sb[e] = B(s, e); });
            team.team_barrier();
            const int fail = team_cholesky_factor_packed(team, sa, n);
            if (fail == 0) team_cholesky_solve_packed(team, sa, n, sb);
            team.team_barrier();
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * n), [&](int e) {
              const int i = e / n, j = e % n;
              if (j <= i) A(s, i, j) = sa[detail::packed_size(i) + j];
            });
            Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int e) { B(s, e) = sb[e]; });
            return fail;
          });
          Kokkos::single(Kokkos::PerTeam(team), [&]() { nfail += info != 0 ? 1 : 0; });
        } else {
          // In place: requires contiguous row-major systems (LayoutRight).
          const int info = team_cholesky_factor(team, a, n, n);
          if (info == 0) team_cholesky_solve(team, a, n, n, b);
          Kokkos::single(Kokkos::PerTeam(team), [&]() { nfail += info != 0 ? 1 : 0; });
        }
      },
      failed);
  return failed;
}

}  // namespace kfactor
