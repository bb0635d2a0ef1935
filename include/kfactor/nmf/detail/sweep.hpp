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
///    runs every column t of the tile; a team thread owns a row (vector lanes
///    over j for the dot product) and the team barrier between steps makes the
///    new values visible. HALS-H is one launch per epoch, ALO-H one per tile.
///  - column_step (W): column t needs the l2 norm of column t-1 (a global
///    reduction) before it can be computed, so one launch per column is the
///    least a portable code can do. Each launch (a) applies the pending
///    normalisation of column t-1 while reading it, (b) computes column t and
///    (c) reduces its squared norm into norms2(t) on the device: no host
///    synchronisation and no separate norm/scale launches (the paper's GPU code
///    needs 3 launches and 2 host syncs per column). scale_column finishes the
///    last column of a tile. Launches per W update: K + number of tiles.
///
/// These launches must stay asynchronous: see light_weight.

#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <Kokkos_Core.hpp>

namespace kfactor::nmf::detail {

using kfactor::detail::RowTeamShape;

/// The policy with the light-weight hint. On CUDA, Kokkos stages a kernel
/// whose closure has 512 bytes or more (column_step's reduction has 520)
/// through constant memory, and each such launch first waits on the host for
/// the previous one to finish: one host round trip per column, which made the
/// W update latency-bound (about 36 us per column on the H100). With the hint
/// the closure travels as a kernel argument (up to 4 KiB) and the K launches
/// queue without a host synchronisation. A no-op on host backends.
template <class Policy>
auto light_weight(const Policy& policy) {
  return Kokkos::Experimental::require(policy, Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

/// H-style sweep over columns [t0, t1) (no normalisation); Xn may alias Xo.
template <class ExecutionSpace, class XV, class BV, class GV>
void row_sweep(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const BV& B, const GV& G, int t0, int t1,
               typename XV::non_const_value_type eps) {
  using T = typename XV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Shape = RowTeamShape<ExecutionSpace>;
  const int n = static_cast<int>(Xn.extent(0));
  if (n == 0 || t1 <= t0) return;
  const int vlen = Shape::vector_length(t1 - t0);
  const int rpt = Shape::rows_per_team(t1 - t0);
  const int league = (n + rpt - 1) / rpt;
  const auto policy = light_weight(Shape::host ? Policy(exec, league, 1, 1) : Policy(exec, league, rpt, vlen));
  Kokkos::parallel_for(
      "kfactor::nmf::row_sweep", policy, KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int r0 = team.league_rank() * rpt;
        const int r1 = r0 + rpt < n ? r0 + rpt : n;
        for (int t = t0; t < t1; ++t) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](int r) {
            const T base = Xn(r, t);
            T s = T(0);
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, t0, t1),
                [&](int j, T& acc) { acc += (j < t ? Xn(r, j) : Xo(r, j)) * G(t, j); }, s);
            const T v = Kokkos::max(eps, base + B(r, t) - s);
            Kokkos::single(Kokkos::PerThread(team), [&]() { Xn(r, t) = v; });
          });
          team.team_barrier();
        }
      });
}

/// W-style step for column t of the tile [t0, t1): applies the pending
/// normalisation of column t-1 (when t > t0) using norms2(t-1), computes column
/// t and writes its squared l2 norm (before normalisation) to norms2(t).
/// `diag_base` selects base = X(r,t) * G(t,t) (HALS in place).
template <class ExecutionSpace, class XV, class BV, class GV, class NV>
void column_step(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const BV& B, const GV& G, int t0, int t1,
                 int t, bool diag_base, typename XV::non_const_value_type eps, const NV& norms2) {
  using T = typename XV::non_const_value_type;
  using Mem = typename ExecutionSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Shape = RowTeamShape<ExecutionSpace>;
  const int n = static_cast<int>(Xn.extent(0));
  const int vlen = Shape::vector_length(t1 - t0);
  const int rpt = Shape::rows_per_team(t1 - t0);
  const int league = (n + rpt - 1) / rpt;
  const int prev = t > t0 ? t - 1 : -1;
  const auto policy = light_weight(Shape::host ? Policy(exec, league, 1, 1) : Policy(exec, league, rpt, vlen));
  Kokkos::View<double, Mem> result(norms2.data() + t);
  Kokkos::parallel_reduce(
      "kfactor::nmf::column_step", policy,
      KOKKOS_LAMBDA(const typename Policy::member_type& team, double& acc) {
        const int r0 = team.league_rank() * rpt;
        const int r1 = r0 + rpt < n ? r0 + rpt : n;
        const T inv = prev >= 0 ? T(1.0 / Kokkos::sqrt(norms2(prev))) : T(1);
        const T gtt = diag_base ? G(t, t) : T(1);
        double team_ss = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, r0, r1),
            [&](int r, double& ss) {
              const T base = Xn(r, t) * gtt;
              T s = T(0);
              Kokkos::parallel_reduce(
                  Kokkos::ThreadVectorRange(team, t0, t1),
                  [&](int j, T& a) {
                    T x = j < t ? Xn(r, j) : Xo(r, j);
                    if (j == prev) x *= inv;
                    a += x * G(t, j);
                  },
                  s);
              const T v = Kokkos::max(eps, base + B(r, t) - s);
              Kokkos::single(Kokkos::PerThread(team), [&]() {
                Xn(r, t) = v;
                if (prev >= 0) Xn(r, prev) *= inv;
                ss += double(v) * double(v);
              });
            },
            team_ss);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { acc += team_ss; });
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
            T s = T(0);
            for (int j = t0; j < t; ++j) s += Xn(r, j) * G(t, j);
            for (int j = t; j < t1; ++j) s += Xo(r, j) * G(t, j);
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

/// Xn(r, j) = Xo(r, j) * (diag ? G(j, j) : 1)  (ALO initialisation).
template <class ExecutionSpace, class XV, class GV>
void alo_init(const ExecutionSpace& exec, const XV& Xn, const XV& Xo, const GV& G, bool diag) {
  Kokkos::parallel_for(
      "kfactor::nmf::alo_init",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Xn.extent(0), Xn.extent(1)}),
      KOKKOS_LAMBDA(std::size_t r, std::size_t j) { Xn(r, j) = diag ? Xo(r, j) * G(j, j) : Xo(r, j); });
}

/// Lee-Seung: X = X * B / (XG + eps), XG precomputed.
template <class ExecutionSpace, class XV, class BV>
void mu_update(const ExecutionSpace& exec, const XV& X, const BV& B, const XV& XG,
               typename XV::non_const_value_type eps) {
  Kokkos::parallel_for(
      "kfactor::nmf::mu_update",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {X.extent(0), X.extent(1)}),
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
      "kfactor::nmf::frobenius_dot",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {X.extent(0), X.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j, double& s) { s += double(X(i, j)) * double(Y(i, j)); },
      Kokkos::Sum<double, typename ExecutionSpace::memory_space>(out));
}

}  // namespace kfactor::nmf::detail
