#pragma once
/// \file
/// The column-sweep kernels of HALS and ALO, written once in Kokkos.
///
/// Both factors are stored as tall row-major matrices X (N x K): W (V x K) and
/// Ht = H^T (D x K), and updated IN PLACE: while column t is computed, X holds
/// the new values of the columns before t and the old values of t and after
/// (exactly FAST-HALS's order). The update of column t, with Gram G (K x K,
/// symmetric), right-hand side B (N x K) and the tile [t0, t1) holding t, is
///
///   X(r,t) <- max(eps, base(r,t) + B(r,t) - sum_{t0<=j<t1} X(r,j) G(t,j))
///
/// with base (see Base) the old value X(r,t) (HALS-H), X(r,t) G(t,t)
/// (HALS-W), or, for ALO, Acc(r, t - t0): the tile's GEMM already applied the
/// columns outside the tile (alo_tile_matrix). HALS is the tile [0, K). G
/// symmetric means G(t, :) is the contiguous row t instead of column t.
///
/// Kernels, designed so the GPU is not launch-bound:
///  - row_sweep (H, no normalisation): the rows are independent, so ONE launch
///    runs every column t of the tile, a work item per row. HALS-H is one
///    launch per epoch, ALO-H one per tile.
///  - column_step (W): column t needs the l2 norm of column t-1, a global
///    reduction, before it can be computed (no exact reformulation defers the
///    norm: the clamp max(eps, .) of column t depends on it). Each launch (a)
///    applies the pending normalisation of column t-1, (b) computes column t
///    and (c) reduces its squared norm into norms2(t) on the device: no host
///    synchronisation and no separate norm/scale launches (the paper's GPU
///    code needs 3 launches and 2 host syncs per column). scale_column
///    finishes the last column. HALS-W, and ALO-W across processes (whose
///    norms are summed between launches).
///  - column_sweep (ALO-W on a device, one process): the columns of a tile in
///    ONE launch, teams that are co-resident by construction meeting at a
///    device-wide barrier per column instead of a launch per column, the
///    next column's loads and products done while the barrier is in flight.
///  - tile_sweep_host: on a host the columns of a tile run in one launch
///    with their copies in and out (one team of all threads, a barrier per
///    column when normalising): HALS's tile [0, K) and each ALO tile.
/// On a device row_sweep and column_sweep first copy each team's rows of the
/// tile into team scratch (ScratchRows) when they fit, and sweep them there.
///
/// These launches must stay asynchronous: see light_weight.

#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/spmm_portable.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kfactor::nmf::detail {

using kfactor::detail::RowTeamShape;

/// Tuning traits of the sweeps, keyed on the execution space type: whether
/// it runs on the host (ALO then sweeps a tile in one host team,
/// tile_sweep_host, and devices take row_sweep / column_sweep) and how many
/// multiprocessors a device has (column_sweep's co-resident teams). The
/// count comes from the device properties a space instance offers
/// (cuda_device_prop() on CUDA, hip_device_prop() on HIP), detected by that
/// member, so no backend macro is tested here; 0 where none is offered.
template <class ExecutionSpace>
struct SweepTraits {
  static constexpr bool host = RowTeamShape<ExecutionSpace>::host;

  static int multiprocessors(const ExecutionSpace& exec) {
    if constexpr (requires(const ExecutionSpace& e) { e.cuda_device_prop().multiProcessorCount; })
      return exec.cuda_device_prop().multiProcessorCount;
    else if constexpr (requires(const ExecutionSpace& e) { e.hip_device_prop().multiProcessorCount; })
      return exec.hip_device_prop().multiProcessorCount;
    (void)exec;
    return 0;
  }
};

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
Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2, Kokkos::Iterate::Right, Kokkos::Iterate::Right>> row_major_policy(
    const ExecutionSpace& exec, std::size_t rows, std::size_t cols) {
  return {exec, {0, 0}, {rows, cols}};
}

/// Where a column update starts from (see the file comment).
enum class Base {
  old_value,       ///< X(r,t): HALS-H
  old_times_diag,  ///< X(r,t) G(t,t): HALS-W
  accumulated,     ///< Acc(r, t - t0): ALO, the tile's GEMM result
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

template <class XV, class AV, class GV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type base_value(Base base, const XV& X, const AV& Acc, const GV& G,
                                                                    int r, int t, int t0) {
  using T = typename XV::non_const_value_type;
  switch (base) {
    case Base::old_value: return X(r, t);
    case Base::old_times_diag: return X(r, t) * T(G(t, t));
    default: return Acc(r, t - t0);
  }
}

/// The new value of X(r, t), t in the tile [t0, t1): the update of the file
/// comment, shared by every sweep kernel.
template <class XV, class AV, class BV, class GV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type updated_value(Base base, const XV& X, const AV& Acc,
                                                                       const BV& B, const GV& G, int r, int t, int t0,
                                                                       int t1, typename XV::non_const_value_type eps) {
  return Kokkos::max(eps, base_value(base, X, Acc, G, r, t, t0) + B(r, t) - row_dot(X, r, G, t, t0, t1));
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

/// W-style step for column t of the tile [t0, t1), in place: applies the
/// pending normalisation of column t-1 (when t > t0) using norms2(t-1),
/// computes column t and writes its squared l2 norm (before normalisation)
/// to norms2(t).
///
/// One work item per row (a RangePolicy reduction), not a team per 16 rows:
/// on the H100 the team form (nested team and vector reductions, 1250 blocks
/// of 256 threads for 20000 rows, several occupancy waves) took 22.5 us per
/// column for ~2 us of bytes; one thread per row is a single wave whose only
/// synchronisation is the final reduction. A row's tile is contiguous
/// (row-major X), so each thread's reads stay in one or two cache lines.
template <class ExecutionSpace, class XV, class AV, class BV, class GV, class NV>
void column_step(const ExecutionSpace& exec, const XV& X, const AV& Acc, Base base, const BV& B, const GV& G, int t0,
                 int t1, int t, typename XV::non_const_value_type eps, const NV& norms2) {
  using T = typename XV::non_const_value_type;
  using Mem = typename ExecutionSpace::memory_space;
  const int n = static_cast<int>(X.extent(0));
  const int prev = t > t0 ? t - 1 : -1;
  Kokkos::View<double, Mem> result(norms2.data() + t);
  Kokkos::parallel_reduce(
      "kfactor::nmf::column_step", light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n)),
      KOKKOS_LAMBDA(const int r, double& ss) {
        if (prev >= 0) X(r, prev) *= T(1.0 / Kokkos::sqrt(norms2(prev)));
        const T v = updated_value(base, X, Acc, B, G, r, t, t0, t1, eps);
        X(r, t) = v;
        ss += double(v) * double(v);
      },
      Kokkos::Sum<double, Mem>(result));
}

/// The teams of column_sweep that are certain to run at the same time: one
/// per multiprocessor on a device that reports its count (a kernel that
/// launches at all fits one block per multiprocessor), one per thread on a
/// host (team size 1), and 1 where the count is not known (still exact: one
/// team then sweeps every row).
template <class ExecutionSpace>
int coresident_teams(const ExecutionSpace& exec) {
  if constexpr (SweepTraits<ExecutionSpace>::host) return exec.concurrency();
  const int sm = SweepTraits<ExecutionSpace>::multiprocessors(exec);
  return sm > 0 ? sm : 1;
}

/// Threads per team of column_sweep for n rows and at most `teams` teams: one
/// thread on a host (the teams are then the threads); on a device a row per
/// thread with every team slot used (a multiple of 32, 64 to 256 threads).
/// With 20000 rows on the H100 that is 132 teams of 160 threads, where
/// blocks of 256 left 53 multiprocessors idle.
template <class ExecutionSpace>
int column_sweep_team_size(int n, int teams) {
  if constexpr (SweepTraits<ExecutionSpace>::host) return 1;
  const int per = (n + teams - 1) / teams;
  return std::clamp((per + 31) / 32 * 32, 64, 256);
}

/// The device-wide sums of column_sweep: every team publishes its partial sum
/// of squares of column t in partials(t, team), which hold -1 until then (a
/// sum of squares is never negative): the value is its own arrival flag, so a
/// team publishes with one store, no fence and no atomic counter. A team goes
/// on once every partial of the column is there and adds them with a team
/// reduction, whose order is fixed (so the norm does not depend on the order
/// of arrival). reset must run before each launch sweeps its columns.
template <class MemorySpace>
struct ColumnBarrier {
  Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace> partials;  ///< K x teams

  ColumnBarrier() = default;
  ColumnBarrier(int K, int teams)
      : partials(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::column_partials"), K, teams) {}

  template <class ExecutionSpace>
  void reset(const ExecutionSpace& exec) const {
    Kokkos::deep_copy(exec, partials, -1.0);
  }
};

/// sum_{t0 <= j < t1, j != skip} X(r, j) G(t, j).
template <class XV, class GV>
KOKKOS_INLINE_FUNCTION typename XV::non_const_value_type row_dot_except(const XV& X, int r, const GV& G, int t, int t0,
                                                                        int t1, int skip) {
  return row_dot(X, r, G, t, t0, skip) + row_dot(X, r, G, t, skip + 1, t1);
}

/// ALO's W-style update of the columns [t0, t1) of X in place, with their l2
/// normalisation, in ONE launch (column_step needs one per column). Acc
/// (rows x (t1 - t0)) holds the tile's GEMM result (Base::accumulated) and is
/// used up: it ends holding partial updates.
///
/// The rows are split among teams that all run at once (coresident_teams);
/// each column's norm is a device-wide sum through the barrier, after which
/// every team normalises its own rows. Everything of column t + 1 that does
/// not need column t, i.e. Acc + B minus the dot product over the tile's other
/// columns (the loads of the row's whole tile), is computed while the
/// barrier of column t is in flight and kept in Acc; after the barrier a row
/// needs one multiply-add, the clamp and its share of the next sum. On the
/// H100 (20000 rows, T = 16, fp32) the W update at K = 128 took 1.24 ms with
/// a counter barrier and the loads after it, 1.16 ms with this overlap, 0.92
/// ms with the self-flagging partials of ColumnBarrier and 0.77-0.81 ms with
/// a team on every multiprocessor (column_sweep_team_size).
/// Kokkos gives teams no forward-progress guarantee; teams that are
/// co-resident by construction (at most one per multiprocessor or thread)
/// make the spin-wait safe on CUDA and on host backends. Writes every
/// pre-normalisation squared norm to norms2.
template <class ExecutionSpace, class XV, class AV, class BV, class GV, class NV>
void column_sweep(const ExecutionSpace& exec, const XV& X, const AV& Acc, const BV& B, const GV& G, int t0, int t1,
                  typename XV::non_const_value_type eps, const NV& norms2,
                  const ColumnBarrier<typename ExecutionSpace::memory_space>& barrier) {
  using T = typename XV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int n = static_cast<int>(X.extent(0));
  if (n == 0 || t1 <= t0) return;
  const int slots = std::max(1, std::min(static_cast<int>(barrier.partials.extent(1)), coresident_teams(exec)));
  const int team_size = column_sweep_team_size<ExecutionSpace>(n, slots);
  const int teams = std::min(slots, (n + team_size - 1) / team_size);
  const auto partials = barrier.partials;
  // On a device each team's rows of the tile live in team scratch for the
  // sweep (ScratchRows) when they fit; the arithmetic is the same.
  const int w = t1 - t0, most_rows = (n + teams - 1) / teams;
  const std::size_t bytes = scratch_rows_bytes<T>(most_rows, w);
  const bool staged =
      !SweepTraits<ExecutionSpace>::host && bytes <= std::size_t(Policy(exec, 1, 1).scratch_size_max(0));
  Policy policy(exec, teams, team_size);
  policy.set_chunk_size(1);
  if (staged) policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
  Kokkos::parallel_for(
      "kfactor::nmf::column_sweep", light_weight(policy), KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int L = team.league_size(), g = team.league_rank();
        const int r0 = int(std::int64_t(n) * g / L), r1 = int(std::int64_t(n) * (g + 1) / L);
        // The sweep, on X itself or on its staged rows.
        auto sweep = [&](const auto& Xs) {
          T inv = T(1);  // 1 / ||column t-1||
          for (int t = t0; t < t1; ++t) {
            const int c = t - t0;
            double ss = 0.0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, r0, r1),
                [&](const int r, double& s) {
                  T v;
                  if (c == 0) {
                    v = updated_value(Base::accumulated, Xs, Acc, B, G, r, t, t0, t1, eps);
                  } else {
                    const T prev = Xs(r, t - 1) * inv;
                    Xs(r, t - 1) = prev;
                    v = Kokkos::max(eps, Acc(r, c) - prev * G(t, t - 1));
                  }
                  Xs(r, t) = v;
                  s += double(v) * double(v);
                },
                ss);
            // volatile: past any cached copy, here and in the wait below.
            Kokkos::single(Kokkos::PerTeam(team), [&]() { *static_cast<volatile double*>(&partials(t, g)) = ss; });
            // Column t + 1 without column t, while the others arrive.
            if (t + 1 < t1)
              Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int r) {
                Acc(r, c + 1) = Acc(r, c + 1) + B(r, t + 1) - row_dot_except(Xs, r, G, t + 1, t0, t1, t);
              });
            // Each partial waited for by its own thread: all polled at once.
            double total = 0.0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, L),
                [&](const int i, double& sum) {
                  const volatile double* p = &partials(t, i);
                  double v = *p;
                  while (v < 0.0) v = *p;
                  sum += v;
                },
                total);
            if (g == 0) Kokkos::single(Kokkos::PerTeam(team), [&]() { norms2(t) = total; });
            inv = T(1.0 / Kokkos::sqrt(total));
          }
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](const int r) { Xs(r, t1 - 1) *= inv; });
        };
        if (staged) {
          const ScratchRows<T> S{static_cast<T*>(team.team_scratch(0).get_shmem(bytes)), r0, t0, w + 1};
          copy_scratch_rows(team, X, S, r1, w, true);
          team.team_barrier();
          sweep(S);
          team.team_barrier();
          copy_scratch_rows(team, X, S, r1, w, false);
        } else {
          sweep(X);
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

/// The sweep of the tile [t0, t0 + w) of X on a host space, in ONE launch
/// with its copies in and out: a single team of all host threads, each
/// thread on the same contiguous rows throughout, so its rows of the tile
/// stay in its core's cache (the paper's locality idea). On a host a launch
/// is the dominant cost of a small problem (each wakes the pool's threads:
/// with K launches per W update, HALS on p2p-Gnutella08 at K = 16 spent
/// half its time in them), so HALS runs here with the tile [0, K) and ALO
/// each of its tiles. Each thread first copies its rows into Xt and sets
/// At = base + B (Base: X(r, t) for HALS-H, X(r, t) G(t, t) for HALS-W,
/// and for ALO X N[:, tile] with N from alo_tile_matrix, which holds the
/// base: the tile's product, summed here over each row of X in 16-column
/// blocks; as a BLAS call between launches, OpenBLAS's threads spun in it
/// for over half of an epoch at K = 64 on 2 busy cores). W-style
/// (`normalize`): column t-1 is normalised, chunk by chunk, just before
/// column t reads it (the team reduction of its squared norm is the only
/// synchronisation per column), norms2(t) gets every pre-normalisation
/// squared norm and the tile ends normalised; H-style: no normalisation and
/// no barrier, so each chunk of rows is copied in, runs all w columns and is
/// copied back while it is in L1. Host only: on a device one team is one
/// multiprocessor, so devices keep row_sweep, column_step and column_sweep.
template <class ExecutionSpace, class XV, class BV, class TV, class GV, class MV, class NV>
void tile_sweep_host(const ExecutionSpace& exec, const XV& X, const BV& B, Base base, const MV& N, const TV& Xt,
                     const TV& At, const GV& G, int t0, typename TV::non_const_value_type eps, bool normalize,
                     const NV& norms2) {
  static_assert(SweepTraits<ExecutionSpace>::host, "tile_sweep_host runs one team: host spaces only");
  using T = typename TV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int w = static_cast<int>(Xt.extent(0)), n = static_cast<int>(Xt.extent(1));
  if (n == 0 || w == 0) return;
  const auto body = KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    constexpr int chunk = 256, block = 64, lanes = 8;
    const int r0 = int(std::int64_t(n) * team.team_rank() / team.team_size());
    const int r1 = int(std::int64_t(n) * (team.team_rank() + 1) / team.team_size());
    // Rows [ra, rb) into Xt and At, and back into X (the last column scaled
    // by `last`).
    const int K = static_cast<int>(X.extent(1));
    const auto load = [&](int ra, int rb) {
      if (base == Base::accumulated) {
        // Four rows at a time (four independent chains of multiply-adds)
        // and blocks of JW columns of fixed width, so that each sum over l
        // is a vector multiply-add: a runtime-width loop ran scalar.
        const auto rows4 = [&](int r, int j0, auto width) {
          constexpr int JW = decltype(width)::value;
          T a0[JW] = {}, a1[JW] = {}, a2[JW] = {}, a3[JW] = {};
          for (int l = 0; l < K; ++l) {
            const T* nl = &N(l, t0 + j0);
            const T x0 = X(r, l), x1 = X(r + 1, l), x2 = X(r + 2, l), x3 = X(r + 3, l);
            for (int j = 0; j < JW; ++j) {
              a0[j] += x0 * nl[j];
              a1[j] += x1 * nl[j];
              a2[j] += x2 * nl[j];
              a3[j] += x3 * nl[j];
            }
          }
          for (int j = 0; j < JW; ++j) {
            At(j0 + j, r) = a0[j];
            At(j0 + j, r + 1) = a1[j];
            At(j0 + j, r + 2) = a2[j];
            At(j0 + j, r + 3) = a3[j];
          }
        };
        int r = ra;
        for (; r + 4 <= rb; r += 4) {
          int j0 = 0;
          for (; j0 + 8 <= w; j0 += 8) rows4(r, j0, std::integral_constant<int, 8>{});
          for (; j0 + 4 <= w; j0 += 4) rows4(r, j0, std::integral_constant<int, 4>{});
          for (; j0 < w; ++j0) rows4(r, j0, std::integral_constant<int, 1>{});
        }
        for (; r < rb; ++r)
          for (int j = 0; j < w; ++j) {
            T acc = T(0);
            for (int l = 0; l < K; ++l) acc += X(r, l) * N(l, t0 + j);
            At(j, r) = acc;
          }
      }
      for (int rc = ra; rc < rb; rc += transpose_rows) {
        const int re = rc + transpose_rows < rb ? rc + transpose_rows : rb;
        for (int j = 0; j < w; ++j) {
          const int t = t0 + j;
          const T diag = base == Base::old_times_diag ? T(G(t, t)) : T(1);
          for (int r = rc; r < re; ++r) {
            const T x = X(r, t);
            Xt(j, r) = x;
            At(j, r) = (base == Base::accumulated ? At(j, r) : x * diag) + T(B(r, t));
          }
        }
      }
    };
    const auto store = [&](int ra, int rb, T last) {
      for (int rc = ra; rc < rb; rc += transpose_rows) {
        const int re = rc + transpose_rows < rb ? rc + transpose_rows : rb;
        for (int r = rc; r < re; ++r) {
          for (int j = 0; j + 1 < w; ++j) X(r, t0 + j) = Xt(j, r);
          X(r, t0 + w - 1) = Xt(w - 1, r) * last;
        }
      }
    };
    // Column c of the rows [rc, rc + len), after scaling column c-1 of them
    // by `scale` when `rescale`; adds their squares to part (W-style only).
    const auto column_chunk = [&](int c, int rc, int len, bool rescale, T scale, double* part) {
      const int t = t0 + c;
      if (rescale)
        for (int i = 0; i < len; ++i) Xt(c - 1, rc + i) *= scale;
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
          const T g = G(t, t0 + j);
          const T* x = &Xt(j, rc + i0);
          for (int i = 0; i < block; ++i) acc[i] -= x[i] * g;
        }
        for (int i = 0; i < block; ++i) s[i0 + i] = acc[i];
      }
      for (int i = i0; i < len; ++i) s[i] = At(c, rc + i);
      for (int j = 0; j < w; ++j) {
        const T g = G(t, t0 + j);
        for (int i = i0; i < len; ++i) s[i] -= Xt(j, rc + i) * g;
      }
      for (int i = 0; i < len; ++i) s[i] = s[i] > eps ? s[i] : eps;
      for (int i = 0; i < len; ++i) Xt(c, rc + i) = s[i];
      if (part == nullptr) return;
      int i = 0;
      for (; i + lanes <= len; i += lanes)
        for (int l = 0; l < lanes; ++l) part[l] += double(s[i + l]) * double(s[i + l]);
      for (; i < len; ++i) part[0] += double(s[i]) * double(s[i]);
    };
    if (!normalize) {
      // Rows are independent: each chunk runs every column while its part of
      // the tile is in L1 (one pass over the tile instead of w).
      for (int rc = r0; rc < r1; rc += chunk) {
        const int len = r1 - rc < chunk ? r1 - rc : chunk;
        load(rc, rc + len);
        for (int c = 0; c < w; ++c) column_chunk(c, rc, len, false, T(1), nullptr);
        store(rc, rc + len, T(1));
      }
      return;
    }
    load(r0, r1);
    T inv = T(1);  // 1 / ||column c-1||
    for (int c = 0; c < w; ++c) {
      double part[lanes] = {};
      for (int rc = r0; rc < r1; rc += chunk) column_chunk(c, rc, r1 - rc < chunk ? r1 - rc : chunk, c > 0, inv, part);
      double ss = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
      team.team_reduce(Kokkos::Sum<double>(ss));
      Kokkos::single(Kokkos::PerTeam(team), [&]() { norms2(t0 + c) = ss; });
      inv = T(1.0 / Kokkos::sqrt(ss));
    }
    store(r0, r1, inv);
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

/// N (K x K) such that Acc = X N[:, tile] is ALO's phases 1 and 3 for that
/// tile (G's row i for column i: G need not be symmetric, scaled_system), X in place (columns before the tile new, the
/// tile and after old): N(j, i) = (diag ? G(i, i) : 1) for j == i, 0 for another column j of i's tile (the sweep
/// applies those), -G(i, j) for j outside i's tile. So the columns of the earlier tiles (new: phase 3, pulled by this
/// tile instead of pushed by each earlier one) and of the later tiles (old: phase 1) enter in ONE GEMM of inner
/// dimension K per tile: 2 V K^2 flops per update in products of full depth, where phase 1 for all tiles at once (X_old
/// M with a block-triangular M, half zeros) plus a rank-T phase-3 GEMM per tile did 3 V K^2, a third of it in updates
/// of depth T.
template <class ExecutionSpace, class GV, class MV>
void alo_tile_matrix(const ExecutionSpace& exec, const GV& G, int tile, bool diag, const MV& N) {
  using T = typename MV::non_const_value_type;
  Kokkos::parallel_for(
      "kfactor::nmf::alo_tile_matrix", row_major_policy(exec, N.extent(0), N.extent(1)),
      KOKKOS_LAMBDA(std::size_t j, std::size_t i) {
        N(j, i) = j == i ? (diag ? T(G(i, i)) : T(1)) : (int(j) / tile != int(i) / tile ? T(-G(i, j)) : T(0));
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
        const T b = B(r, j) > T(0) ? T(B(r, j)) : T(0);
        const T den = XG(r, j) + (tl1 + tl2 * X(r, j)) + eps;
        X(r, j) = root ? T(X(r, j) * Kokkos::sqrt(b / den)) : T(X(r, j) * b / den);
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
