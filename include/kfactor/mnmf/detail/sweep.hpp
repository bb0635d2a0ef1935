#pragma once
/// \file
/// Internals of the MNMF solver: row bins (the histogram load balance), the
/// Jacobi multiplicative sweep of one factor, and the objective terms.
///
/// One sweep updates the factor X (rows of the sparse matrix A: W with A = R
/// in CSR, H with A = R^T, i.e. the CSC of R) given the other factor Y, the
/// symmetric graph G over the rows of X with degrees deg (q_ii = row sums of G)
/// and the weight lambda. For row i and feature k (digest section 2, eqs 24/29):
///
///   euclid: up_ik = sum_{j in A_i} y_jk a_ij       + lambda sum_l g_il x_lk
///           dn_ik = sum_{j in A_i} y_jk vt_ij      + lambda deg_i x_ik
///   kl:     up_ik = sum_{j in A_i} y_jk a_ij/vt_ij + lambda sum_l g_il x_lk
///           dn_ik = sum_{j in A_i} y_jk            + lambda deg_i x_ik
///   xnew_ik = x_ik * up_ik / dn_ik        (vt_ij = x_i . y_j, from the OLD x)
///
/// Jacobi semantics: every read is of the old X; results go to a separate
/// buffer Xnew (the caller swaps), so no thread can see a half-updated
/// neighbour (the paper's "over-writing problem", Fig. 1b). The buffered
/// numerators and denominators of one row live in team scratch, one
/// (up, dn, g) triple of r-vectors per team thread, g being the graph sum
/// sum_l g_il x_lk (accumulated neighbour by neighbour, so each x_l is read
/// as a contiguous row); the global buffer is Xnew only, which
/// costs m*r instead of the paper's two max(m,n)*r Up/Down arrays.
///
/// Parallel mapping: one team per row; team threads take the row's nonzeros
/// and then its graph neighbours round-robin, vector lanes take the features
/// k; the dot product vt_ij is a ThreadVectorRange reduction; the per-thread
/// partial (up, dn, g) are summed in thread order after a barrier
/// (deterministic for a fixed team size). Rows
/// are binned by nonzero count (light < 32 <= medium < 512 <= heavy) and each
/// bin is launched with its own team size: on a device heavy rows get bigger
/// teams; on host spaces a team is one thread (the bins then only order the
/// work, scheduled dynamically). With team size 1 the summation order is
/// exactly that of the serial reference (tests/mnmf/serial_reference.hpp), so
/// host results are independent of the thread count bit for bit.
///
/// Guards (documented in mnmf.hpp): a zero (or non-positive) denominator
/// leaves x_ik unchanged (rows without ratings at lambda = 0, isolated rows,
/// x_ik = 0 with no data); under KL vt_ij is floored at kl_floor before the
/// division; lambda = 0 skips the graph terms entirely (so the rule is the
/// masked-NMF rule exactly and an empty graph is allowed).

#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace kfactor::mnmf {

/// The two objectives of the paper: eq. 20 (Euclidean) and eq. 25 (KL).
enum class Objective { euclid, kl };

namespace detail {

/// Rows grouped by nonzero count: order(bin_begin[b] .. bin_begin[b+1]) are
/// the rows of bin b in increasing row order.
template <class MemorySpace>
struct RowBins {
  static constexpr int num_bins = 3;
  static constexpr std::array<std::size_t, num_bins - 1> limits{32, 512};  ///< nnz thresholds
  Kokkos::View<ordinal_t*, MemorySpace> order;
  std::array<std::size_t, num_bins + 1> bin_begin{};
};

template <class ExecutionSpace, class T, class MemorySpace>
RowBins<MemorySpace> make_row_bins(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  RowBins<MemorySpace> bins;
  const ordinal_t m = A.num_rows();
  bins.order = Kokkos::View<ordinal_t*, MemorySpace>(Kokkos::view_alloc(exec, "kfactor::mnmf::bin_order"), m);
  auto row_map = A.row_map;
  auto order = bins.order;
  const std::size_t lo = RowBins<MemorySpace>::limits[0], hi = RowBins<MemorySpace>::limits[1];
  std::size_t offset = 0;
  for (int b = 0; b < RowBins<MemorySpace>::num_bins; ++b) {
    bins.bin_begin[b] = offset;
    std::size_t count = 0;
    const std::size_t base = offset;
    Kokkos::parallel_scan(
        "kfactor::mnmf::bin_rows", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m),
        KOKKOS_LAMBDA(ordinal_t i, std::size_t& pos, bool final) {
          const std::size_t nz = row_map(i + 1) - row_map(i);
          const int bin = nz < lo ? 0 : (nz < hi ? 1 : 2);
          if (bin == b) {
            if (final) order(base + pos) = i;
            ++pos;
          }
        },
        count);
    offset += count;
  }
  bins.bin_begin[RowBins<MemorySpace>::num_bins] = offset;
  return bins;
}

/// Launch shape of one bin: team size and vector length (tuning traits keyed
/// on the space; host spaces always use 1 x 1).
struct LaunchShape {
  int team_size = 1;
  int vector_length = 1;
};

template <class ExecutionSpace>
LaunchShape sweep_shape(int bin, int rank, std::size_t scalar_bytes) {
  LaunchShape s;
  if constexpr (is_host_space_v<ExecutionSpace>) {
    return s;
  } else {
    int vl = 1;
    while (vl < rank && vl < 32) vl *= 2;
    s.vector_length = vl;
    const int wanted[3] = {1, 4, 16};
    int ts = wanted[bin];
    // keep the per-team accumulators ((2 ts + 1) rank scalars) within 32 KiB
    while (ts > 1 && (2 * std::size_t(ts) + 1) * rank * scalar_bytes > 32768) ts /= 2;
    s.team_size = ts;
    return s;
  }
}

/// One Jacobi multiplicative sweep (see the file comment). A is the sparse
/// matrix whose rows index Xnew (and G's and deg's rows); G may be empty
/// when lambda == 0. X and Y are the whole old factors (read by the ids in
/// A and G); row i of A is row first_row + i of X (0 on one process; a
/// rank of the distributed solver updates its block of rows).
template <class ExecutionSpace, class T, class MemorySpace>
void sweep(const ExecutionSpace& exec, Objective objective, const CsrMatrix<T, MemorySpace>& A,
           const RowBins<MemorySpace>& bins, const DenseMatrix<T, MemorySpace>& X, const DenseMatrix<T, MemorySpace>& Y,
           const CsrMatrix<T, MemorySpace>& G, const Kokkos::View<T*, MemorySpace>& deg, T lambda, T kl_floor,
           const DenseMatrix<T, MemorySpace>& Xnew, ordinal_t first_row) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<T*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  const int r = static_cast<int>(X.extent(1));
  const bool kl = objective == Objective::kl;
  const bool graph = lambda != T(0);
  auto row_map = A.row_map;
  auto cols = A.entries;
  auto vals = A.values;
  auto grow = G.row_map;
  auto gcol = G.entries;
  auto gval = G.values;
  auto order = bins.order;
  for (int b = 0; b < RowBins<MemorySpace>::num_bins; ++b) {
    const std::size_t begin = bins.bin_begin[b], count = bins.bin_begin[b + 1] - begin;
    if (count == 0) continue;
    const LaunchShape shape = sweep_shape<ExecutionSpace>(b, r, sizeof(T));
    Policy policy(exec, static_cast<int>(count), shape.team_size, shape.vector_length);
    const std::size_t bytes = Scratch::shmem_size(3 * std::size_t(shape.team_size) * r);
    const int level = bytes <= static_cast<std::size_t>(policy.scratch_size_max(0)) ? 0 : 1;
    policy.set_scratch_size(level, Kokkos::PerTeam(bytes));
    Kokkos::parallel_for(
        "kfactor::mnmf::sweep", policy, KOKKOS_LAMBDA(const Member& team) {
          const ordinal_t i = order(begin + team.league_rank());
          const int ts = team.team_size();
          const int t = team.team_rank();
          Scratch acc(team.team_scratch(level), 3 * std::size_t(ts) * r);
          T* up = acc.data() + std::size_t(3 * t) * r;
          T* dn = up + r;
          T* g = dn + r;
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, r), [&](int k) {
            up[k] = T(0);
            dn[k] = T(0);
            g[k] = T(0);
          });
          for (offset_t e = row_map(i) + t; e < row_map(i + 1); e += ts) {
            const ordinal_t j = cols(e);
            const T v = vals(e);
            T vt = T(0);
            Kokkos::parallel_reduce(
                Kokkos::ThreadVectorRange(team, r), [&](int k, T& s) { s += X(first_row + i, k) * Y(j, k); }, vt);
            if (kl) {
              const T ratio = v / (vt > kl_floor ? vt : kl_floor);
              Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, r), [&](int k) {
                up[k] += Y(j, k) * ratio;
                dn[k] += Y(j, k);
              });
            } else {
              Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, r), [&](int k) {
                up[k] += Y(j, k) * v;
                dn[k] += Y(j, k) * vt;
              });
            }
          }
          if (graph)  // sum_l g_il x_lk, each x_l read as a row
            for (offset_t e = grow(i) + t; e < grow(i + 1); e += ts) {
              const T p = gval(e);
              const ordinal_t l = gcol(e);
              Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, r), [&](int k) { g[k] += p * X(l, k); });
            }
          team.team_barrier();
          // the thread partials, summed in thread order
          Kokkos::parallel_for(Kokkos::TeamVectorRange(team, r), [&](int k) {
            T u = acc(k), d = acc(std::size_t(r) + k), gs = acc(std::size_t(2 * r) + k);
            for (int s = 1; s < ts; ++s) {
              u += acc(std::size_t(3 * s) * r + k);
              d += acc(std::size_t(3 * s + 1) * r + k);
              gs += acc(std::size_t(3 * s + 2) * r + k);
            }
            const T x = X(first_row + i, k);
            if (graph) {
              u = u + lambda * gs;
              d = d + lambda * deg(i) * x;
            }
            Xnew(i, k) = d > T(0) ? x * u / d : x;
          });
        });
  }
}

/// Row sums of a graph (q_ii of the paper); zero for an empty graph.
template <class ExecutionSpace, class T, class MemorySpace>
Kokkos::View<T*, MemorySpace> degrees(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& G, ordinal_t n) {
  Kokkos::View<T*, MemorySpace> q(Kokkos::view_alloc(exec, "kfactor::mnmf::degree"), n);
  if (G.row_map.extent(0) == 0) return q;
  auto row_map = G.row_map;
  auto vals = G.values;
  Kokkos::parallel_for(
      "kfactor::mnmf::degrees", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, n), KOKKOS_LAMBDA(ordinal_t i) {
        T s = T(0);
        for (offset_t e = row_map(i); e < row_map(i + 1); ++e) s += vals(e);
        q(i) = s;
      });
  return q;
}

/// Data term of the objective over the stored entries, in double:
/// euclid sum (v - vt)^2; kl sum v log(v / vt) - v + vt (v = 0 gives vt;
/// vt floored at kl_floor inside the logarithm); vt = w_i . h_j given in
/// `dots` (R's order, an SDDMM on R's pattern).
template <class ExecutionSpace, class T, class MemorySpace>
double data_term(const ExecutionSpace& exec, Objective objective, const CsrMatrix<T, MemorySpace>& R,
                 const Kokkos::View<T*, MemorySpace>& dots, double kl_floor) {
  auto vals = R.values;
  const bool kl = objective == Objective::kl;
  double total = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::mnmf::data_term", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(std::size_t e, double& acc) {
        const double vt = dots(e);
        const double v = vals(e);
        if (kl) {
          acc += (v > 0.0 ? v * Kokkos::log(v / Kokkos::max(vt, kl_floor)) - v : 0.0) + vt;
        } else {
          acc += (v - vt) * (v - vt);
        }
      },
      total);
  return total;
}

/// Tr(X^T L X) = 1/2 sum_{i,l} g_il ||x_i - x_l||^2 over the stored edges, in
/// double (never forms L); 0 for an empty graph. Row i of G is row
/// first_row + i of X (a process's share of the sum when G holds its rows).
template <class ExecutionSpace, class T, class MemorySpace>
double roughness(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& G, const DenseMatrix<T, MemorySpace>& X,
                 ordinal_t first_row = 0) {
  if (G.row_map.extent(0) == 0) return 0.0;
  auto row_map = G.row_map;
  auto cols = G.entries;
  auto vals = G.values;
  const int r = static_cast<int>(X.extent(1));
  double total = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::mnmf::roughness", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, G.num_rows()),
      KOKKOS_LAMBDA(ordinal_t i, double& acc) {
        for (offset_t e = row_map(i); e < row_map(i + 1); ++e) {
          const ordinal_t l = cols(e);
          double d2 = 0.0;
          for (int k = 0; k < r; ++k) {
            const double d = double(X(first_row + i, k)) - double(X(l, k));
            d2 += d * d;
          }
          acc += 0.5 * double(vals(e)) * d2;
        }
      },
      total);
  return total;
}

}  // namespace detail
}  // namespace kfactor::mnmf
