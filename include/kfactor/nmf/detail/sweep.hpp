#pragma once
/// \file
/// The column-sweep kernels of HALS and ALO, written once in Kokkos.
///
/// Both factors are stored as tall row-major matrices X (N x K): W (V x K) and
/// Ht = H^T (D x K). The update of column t of X, with Gram G (K x K,
/// symmetric), right-hand side B (N x K) and the tile [t0, t1) holding t, is
///
///   X_new(r,t) = max(eps, base(r,t) + B(r,t) - sum_{t0<=j<t} X_new(r,j) G(t,j)
///                                            - sum_{t<=j<t1} X_old(r,j) G(t,j))
///
/// with base = X_new(r,t) (ALO: already initialised and reduced by phases 1/3;
/// HALS-H in place: the old value) or X(r,t) G(t,t) (HALS-W in place). HALS is
/// the case X_new == X_old, [t0, t1) = [0, K). G symmetric means G(t, :) is the
/// contiguous row t instead of column t.
///
/// Kernels, designed so the GPU is not launch-bound:
///  - row_sweep (H, no normalisation): the rows are independent, so ONE launch
///    runs every column t of the tile, a work item per row. HALS-H is one
///    launch per epoch, ALO-H one per tile.
///  - column_step (W): column t needs the l2 norm of column t-1 (a global
///    reduction) before it can be computed, so one launch per column is the
///    least a portable code can do on a device (no exact reformulation
///    defers the norm: the clamp max(eps, .) of column t depends on it, and a
///    device-wide barrier has no forward-progress guarantee in Kokkos). Each
///    launch (a) applies the pending normalisation of column t-1 while reading
///    it, (b) computes column t and (c) reduces its squared norm into
///    norms2(t) on the device: no host synchronisation and no separate
///    norm/scale launches (the paper's GPU code needs 3 launches and 2 host
///    syncs per column). scale_column finishes the last column of a tile.
///    Launches per W update: K + number of tiles.
///  - tile_sweep_host: on a host the T columns of an ALO tile run in one
///    launch (one team of all threads, a barrier per column).
///
/// These launches must stay asynchronous: see light_weight.

#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <Kokkos_Core.hpp>

namespace kfactor::nmf::detail {

using kfactor::detail::RowTeamShape;

/// The policy with the light-weight hint. On CUDA, Kokkos stages a kernel
/// whose closure has 512 bytes or more (the former team-policy column_step
/// had 520) through constant memory, and each such launch first waits on the
/// host for the previous one to finish: a host round trip per column on top
/// of the kernel (the W update took about 36 us per column on the H100). With
/// the hint the closure travels as a kernel argument (up to 4 KiB) and the K
/// launches queue without a host synchronisation. A no-op on host backends.
template <class Policy>
auto light_weight(const Policy& policy) {
  return Kokkos::Experimental::require(policy, Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

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
Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2, Kokkos::Iterate::Right, Kokkos::Iterate::Right>>
row_major_policy(const ExecutionSpace& exec, std::size_t rows, std::size_t cols) {
  return {exec, {0, 0}, {rows, cols}};
}

/// H-style sweep over columns [t0, t1) (no normalisation); Xn may alias Xo.
/// The rows are independent, so one work item owns a row and runs every
/// column of the tile in registers and its own cache lines: no team barrier,
/// one wave on a device (a team per 16 rows with a barrier per column took
/// 29.8 us per tile of 16 on the H100).
template <class ExecutionSpace, class XV, class BV, class GV>
void row_sweep(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const BV& B, const GV& G, int t0, int t1,
               typename XV::non_const_value_type eps) {
  using T = typename XV::non_const_value_type;
  const int n = static_cast<int>(Xn.extent(0));
  if (n == 0 || t1 <= t0) return;
  Kokkos::parallel_for(
      "kfactor::nmf::row_sweep", light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n)),
      KOKKOS_LAMBDA(const int r) {
        for (int t = t0; t < t1; ++t) {
          const T s = row_dot(Xn, r, G, t, t0, t) + row_dot(Xo, r, G, t, t, t1);
          Xn(r, t) = Kokkos::max(eps, Xn(r, t) + B(r, t) - s);
        }
      });
}

/// W-style step for column t of the tile [t0, t1): applies the pending
/// normalisation of column t-1 (when t > t0) using norms2(t-1), computes column
/// t and writes its squared l2 norm (before normalisation) to norms2(t).
/// `diag_base` selects base = X(r,t) * G(t,t) (HALS in place).
///
/// One work item per row (a RangePolicy reduction), not a team per 16 rows:
/// on the H100 the team form (nested team and vector reductions, 1250 blocks
/// of 256 threads for 20000 rows, several occupancy waves) took 22.5 us per
/// column for ~2 us of bytes; one thread per row is a single wave whose only
/// synchronisation is the final reduction. A row's tile is contiguous
/// (row-major X), so each thread's reads stay in one or two cache lines.
template <class ExecutionSpace, class XV, class BV, class GV, class NV>
void column_step(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const BV& B, const GV& G, int t0, int t1,
                 int t, bool diag_base, typename XV::non_const_value_type eps, const NV& norms2) {
  using T = typename XV::non_const_value_type;
  using Mem = typename ExecutionSpace::memory_space;
  const int n = static_cast<int>(Xn.extent(0));
  const int prev = t > t0 ? t - 1 : -1;
  Kokkos::View<double, Mem> result(norms2.data() + t);
  Kokkos::parallel_reduce(
      "kfactor::nmf::column_step", light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n)),
      KOKKOS_LAMBDA(const int r, double& ss) {
        const T inv = prev >= 0 ? T(1.0 / Kokkos::sqrt(norms2(prev))) : T(1);
        const T base = diag_base ? Xn(r, t) * G(t, t) : Xn(r, t);
        T s = row_dot(Xn, r, G, t, t0, prev >= 0 ? prev : t0) + row_dot(Xo, r, G, t, t, t1);
        if (prev >= 0) {
          const T x = Xn(r, prev) * inv;
          Xn(r, prev) = x;
          s += x * G(t, prev);
        }
        const T v = Kokkos::max(eps, base + B(r, t) - s);
        Xn(r, t) = v;
        ss += double(v) * double(v);
      },
      Kokkos::Sum<double, Mem>(result));
}

/// The W-style sweep of a whole tile [t0, t1) in ONE launch on a host space:
/// the per-column kernels of column_step, with base X_new(r,t) (ALO). A single
/// team of all host threads walks the columns; TeamThreadRange gives each
/// thread the same contiguous rows in every column, so a row's tile of X_new
/// and X_old stays in that core's cache across the T columns (the paper's
/// locality idea), and the team reduction of column t's squared norm is the
/// only synchronisation per column: a barrier instead of a parallel region
/// per column. Column t-1 is normalised while column t reads it, as in
/// column_step (same arithmetic); norms2(t) holds every pre-normalisation
/// squared norm and the tile ends normalised. Host only: on a device one team
/// is one multiprocessor, so devices keep the per-column launches.
template <class ExecutionSpace, class XV, class BV, class GV, class NV>
void tile_sweep_host(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const BV& B, const GV& G, int t0, int t1,
                     typename XV::non_const_value_type eps, const NV& norms2) {
  static_assert(RowTeamShape<ExecutionSpace>::host, "tile_sweep_host runs one team: host spaces only");
  using T = typename XV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int n = static_cast<int>(Xn.extent(0));
  if (n == 0 || t1 <= t0) return;
  const auto body = KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    T inv = T(1);  // 1 / ||column t-1||, applied while column t reads it
    for (int t = t0; t < t1; ++t) {
      const int prev = t - 1;
      double ss = 0.0;
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, n),
          [&](int r, double& acc) {
            if (prev >= t0) Xn(r, prev) *= inv;
            const T s = row_dot(Xn, r, G, t, t0, t) + row_dot(Xo, r, G, t, t, t1);
            const T v = Kokkos::max(eps, Xn(r, t) + B(r, t) - s);
            Xn(r, t) = v;
            acc += double(v) * double(v);
          },
          ss);
      Kokkos::single(Kokkos::PerTeam(team), [&]() { norms2(t) = ss; });
      inv = T(1.0 / Kokkos::sqrt(ss));
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](int r) { Xn(r, t1 - 1) *= inv; });
  };
  const int threads = Policy(exec, 1, 1).team_size_max(body, Kokkos::ParallelForTag());
  Kokkos::parallel_for("kfactor::nmf::tile_sweep_host", Policy(exec, 1, threads), body);
}

/// X(:, t) /= sqrt(norms2(t)).
template <class ExecutionSpace, class XV, class NV>
void scale_column(const ExecutionSpace& exec, const XV& X, int t, const NV& norms2) {
  using T = typename XV::non_const_value_type;
  Kokkos::parallel_for(
      "kfactor::nmf::scale_column", light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, X.extent(0))),
      KOKKOS_LAMBDA(std::size_t r) {
        const T inv = T(1.0 / Kokkos::sqrt(norms2(t)));
        X(r, t) *= inv;
      });
}

/// M (K x K) with X_new = X_old M being the ALO initialisation and its phase 1
/// in one product: M(j, i) = (diag ? G(i, i) : 1) for j == i, -G(j, i) when
/// column j lies in a later tile than column i, 0 otherwise. One GEMM instead
/// of an initialisation kernel and one GEMM per tile (each of those small
/// GEMMs cost 13-20 us on the H100 whatever its size).
template <class ExecutionSpace, class GV, class MV>
void alo_phase1_matrix(const ExecutionSpace& exec, const GV& G, int tile, bool diag, const MV& M) {
  using T = typename MV::non_const_value_type;
  Kokkos::parallel_for(
      "kfactor::nmf::alo_phase1_matrix", row_major_policy(exec, M.extent(0), M.extent(1)),
      KOKKOS_LAMBDA(std::size_t j, std::size_t i) {
        M(j, i) = j == i ? (diag ? T(G(i, i)) : T(1)) : (int(j) / tile > int(i) / tile ? T(-G(j, i)) : T(0));
      });
}

/// Lee-Seung: X = X * B / (XG + eps), XG precomputed.
template <class ExecutionSpace, class XV, class BV>
void mu_update(const ExecutionSpace& exec, const XV& X, const BV& B, const XV& XG,
               typename XV::non_const_value_type eps) {
  Kokkos::parallel_for(
      "kfactor::nmf::mu_update", row_major_policy(exec, X.extent(0), X.extent(1)),
      KOKKOS_LAMBDA(std::size_t r, std::size_t j) {
        using T = typename XV::non_const_value_type;
        const T b = B(r, j) > T(0) ? T(B(r, j)) : T(0);
        X(r, j) = X(r, j) * b / (XG(r, j) + eps);
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
