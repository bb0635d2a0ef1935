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
///    Any n (not only multiples of a block size); the loops are
///    column-oriented (left-looking factor: per column, every thread forms
///    whole entries of that column with a sequential dot product), so every
///    entry is computed in a fixed order: results are deterministic and do not
///    depend on the team size.
///  * batched_cholesky_solve(exec, A, B): one team per system for a batch of
///    row-major n x n matrices (View<T***>, batch x n x n) and right-hand sides
///    (View<T**>, batch x n), staging each matrix in team scratch when it fits
///    (detail::cholesky_scratch_limit bytes) and working in place otherwise.
///
/// A system whose pivot is not positive and finite is reported (factor returns
/// its 1-based failing column, batched_cholesky_solve counts failures) and left
/// partially factored; callers decide (the ALS solver never factors a zero
/// matrix: see als.hpp).

#include <kfactor/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>

namespace kfactor {

namespace detail {
/// Largest matrix (bytes) batched_cholesky_solve stages in team scratch.
inline constexpr std::size_t cholesky_scratch_limit = 96 * 1024;
}  // namespace detail

/// In-place lower Cholesky factor of the n x n SPD matrix A (row-major, leading
/// dimension lda; lower triangle used). Every thread of the team must call it.
/// Returns 0 on success or k + 1 when pivot k is not positive and finite (the
/// same value on every thread).
template <class Team, class T>
KOKKOS_INLINE_FUNCTION int team_cholesky_factor(const Team& team, T* A, int lda, int n) {
  for (int j = 0; j < n; ++j) {
    // Column j, rows i >= j: A(i,j) -= sum_{k<j} L(i,k) L(j,k).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, j, n), [&](int i) {
      T s = A[i * lda + j];
      const T* li = A + i * lda;
      const T* lj = A + j * lda;
      for (int k = 0; k < j; ++k) s -= li[k] * lj[k];
      A[i * lda + j] = s;
    });
    team.team_barrier();
    const T d = A[j * lda + j];
    if (!(d > T(0)) || !Kokkos::isfinite(d)) return j + 1;
    const T r = Kokkos::sqrt(d);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, j + 1, n), [&](int i) { A[i * lda + j] /= r; });
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { A[j * lda + j] = r; });
    team.team_barrier();
  }
  return 0;
}

/// Solves L L^T x = b in place (b becomes x) with L from team_cholesky_factor.
/// Every thread of the team must call it.
template <class Team, class T>
KOKKOS_INLINE_FUNCTION void team_cholesky_solve(const Team& team, const T* L, int lda, int n, T* b) {
  // Forward: L z = b, column-oriented.
  for (int j = 0; j < n; ++j) {
    const T zj = b[j] / L[j * lda + j];
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { b[j] = zj; });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, j + 1, n), [&](int i) { b[i] -= L[i * lda + j] * zj; });
    team.team_barrier();
  }
  // Backward: L^T x = z, row j of L^T is column j of L.
  for (int j = n - 1; j >= 0; --j) {
    const T xj = b[j] / L[j * lda + j];
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { b[j] = xj; });
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, 0, j), [&](int i) { b[i] -= L[j * lda + i] * xj; });
    team.team_barrier();
  }
}

/// Team size that suits an n x n factor (enough threads for a column).
template <class ExecutionSpace>
int cholesky_team_size(int n) {
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible) {
    (void)n;
    return 1;
  } else {
    // One warp up to n = 128 (cheap barriers; a thread forms n/32 entries
    // of a column), two warps beyond.
    return n <= 128 ? 32 : 64;
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
  using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  // Odd leading dimension in scratch (no bank conflicts between rows).
  const int lda = n % 2 == 0 ? n + 1 : n;
  const bool staged = std::size_t(lda) * (n + 1) * sizeof(T) <= detail::cholesky_scratch_limit;
  const std::size_t bytes = staged ? Scratch::shmem_size(std::size_t(lda) * n + n) : 0;
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
          Scratch sm(team.team_scratch(level), std::size_t(lda) * n + n);
          T* sa = sm.data();
          T* sb = sa + std::size_t(lda) * n;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * n),
                               [&](int e) { sa[(e / n) * lda + e % n] = A(s, e / n, e % n); });
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int e) { sb[e] = B(s, e); });
          team.team_barrier();
          const int info = team_cholesky_factor(team, sa, lda, n);
          if (info == 0) team_cholesky_solve(team, sa, lda, n, sb);
          team.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n * n), [&](int e) {
            if (e % n <= e / n) A(s, e / n, e % n) = sa[(e / n) * lda + e % n];
          });
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int e) { B(s, e) = sb[e]; });
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
