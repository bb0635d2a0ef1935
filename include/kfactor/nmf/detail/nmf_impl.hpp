#pragma once
/// \file
/// Definitions of kfactor/nmf/nmf.hpp (included at its end).

#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/gemm.hpp>
#include <kfactor/kernels/spmm.hpp>
#include <kfactor/nmf/detail/sweep.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kfactor::nmf {

inline Algorithm parse_algorithm(const std::string& name) {
  if (name == "hals") return Algorithm::hals;
  if (name == "alo") return Algorithm::alo;
  if (name == "mu") return Algorithm::mu;
  throw UsageError("nmf: unknown algorithm '" + name + "' (expected hals, alo or mu)");
}

inline const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::hals: return "hals";
    case Algorithm::alo: return "alo";
    case Algorithm::mu: return "mu";
  }
  return "unknown";
}

inline void Options::validate() const {
  check_range("nmf", "rank", rank, rank_range);
  check_range("nmf", "tile", tile, tile_range);
  if (tile > rank)
    throw UsageError("nmf: tile must be at most rank = " + std::to_string(rank) + " (0: the default tile), got " +
                     std::to_string(tile));
  check_range("nmf", "epsilon", epsilon, epsilon_range);
  stop.validate();
  check_range("nmf", "stop.tolerance", stop.tolerance, tolerance_range);
  if (!std::isnan(stop.target)) check_range("nmf", "stop.target (a relative error)", stop.target, target_range);
}

inline double alo_tile_model(int K, double C) {
  if (!(C > 4.0)) throw UsageError("nmf: the tile model needs a cache size C > 4 (sqrt(C) - 2 > 0)");
  const double r = std::sqrt(C);
  return std::sqrt(double(K) * r / (r - 2.0));
}

inline int default_tile(int K) {
  if (K < 1) return 1;
  switch (K) {
    case 64: return 8;
    case 128: return 16;
    case 256: return 16;
    case 512: return 32;
    case 1024: return 64;
    default: break;
  }
  const double t = alo_tile_model(K, 33.0);
  const int p = static_cast<int>(std::lround(std::log2(t)));
  return std::clamp(1 << std::max(p, 0), 1, K);
}

inline int resolve_tile(int K, int tile) { return std::clamp(tile > 0 ? tile : default_tile(K), 1, std::max(K, 1)); }

inline double hals_w_data_movement(double V, double K) { return K * (V * K + K + 6.0 * V + 1.0); }

inline double alo_w_data_movement(double V, double K, double T, double C) {
  return V * (1.0 / T + 2.0 / std::sqrt(C)) * (K * K - K * T) + K * V * T;
}

namespace detail {

/// Buffers and products derived from the state (rebuilt on demand), for the
/// algorithm, rank and tile they were allocated for.
template <class T, class MemorySpace>
struct Workspace {
  Algorithm algorithm = Algorithm::alo;
  int rank = 0, tile = 0;
  DenseMatrix<T, MemorySpace> R, P;        ///< A^T W (D x K), A Ht (V x K)
  DenseMatrix<T, MemorySpace> S, Q;        ///< W^T W, Ht^T Ht (K x K)
  DenseMatrix<T, MemorySpace> Wbuf, Hbuf;  ///< MU products W Q, Ht S
  DenseMatrix<T, MemorySpace> N;           ///< ALO: the tiles' GEMM matrix (K x K, alo_tile_matrix)
  /// ALO: one tile's GEMM result and (host spaces) the transposed tile of the
  /// factor, max(V, D) * T values each (alo_update gives them their shape).
  Kokkos::View<T*, MemorySpace> Acc, Tile;
  Kokkos::View<double*, MemorySpace> norms2;      ///< squared pre-normalisation column norms of W
  ColumnBarrier<MemorySpace> barrier;             ///< ALO on a device: column_sweep's device-wide sums
  Kokkos::View<double*, MemorySpace> scal;        ///< [0] = <W, P>, [1] = <W^T W, Q>
  int S_iteration = -1;                           ///< S = W^T W is valid for this state.iteration
  int error_iteration = -1;                       ///< scal holds the error of this state.iteration
  double t_products = 0.0, t_h = 0.0, t_w = 0.0;  ///< Options::timing_breakdown
};

template <class ExecutionSpace, class T, class... P>
std::pair<double, std::int64_t> check_values(const ExecutionSpace& exec, const Kokkos::View<T**, P...>& A) {
  double s = 0.0;
  std::int64_t bad = 0;
  Kokkos::parallel_reduce(
      "kfactor::nmf::check_dense",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {A.extent(0), A.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t j, double& acc, std::int64_t& nb) {
        const double a = A(i, j);
        if (!(a >= 0.0) || Kokkos::isinf(a))
          ++nb;
        else
          acc += a * a;
      },
      s, bad);
  return {s, bad};
}

template <class ExecutionSpace, class T, class MemorySpace>
std::pair<double, std::int64_t> check_values(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  double s = 0.0;
  std::int64_t bad = 0;
  auto values = A.values;
  Kokkos::parallel_reduce(
      "kfactor::nmf::check_sparse", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, values.extent(0)),
      KOKKOS_LAMBDA(std::size_t e, double& acc, std::int64_t& nb) {
        const double a = values(e);
        if (!(a >= 0.0) || Kokkos::isinf(a))
          ++nb;
        else
          acc += a * a;
      },
      s, bad);
  return {s, bad};
}

template <class Matrix>
std::int64_t rows_of(const Matrix& A) {
  if constexpr (MatrixTraits<Matrix>::sparse)
    return A.num_rows();
  else
    return static_cast<std::int64_t>(A.extent(0));
}
template <class Matrix>
std::int64_t cols_of(const Matrix& A) {
  if constexpr (MatrixTraits<Matrix>::sparse)
    return A.num_cols;
  else
    return static_cast<std::int64_t>(A.extent(1));
}
template <class Matrix>
std::int64_t nnz_of(const Matrix& A) {
  if constexpr (MatrixTraits<Matrix>::sparse)
    return static_cast<std::int64_t>(A.nnz());
  else
    return static_cast<std::int64_t>(A.extent(0) * A.extent(1));
}

template <class T>
T resolve_epsilon(const Options& o) {
  return o.epsilon > 0.0 ? static_cast<T>(o.epsilon) : std::numeric_limits<T>::epsilon();
}

template <class T, class MemorySpace>
DenseMatrix<T, MemorySpace> alloc(const std::string& name, std::int64_t rows, std::int64_t cols) {
  try {
    return DenseMatrix<T, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::" + name), rows,
                                       cols);
  } catch (const std::exception& e) {
    throw RuntimeFailure("nmf: cannot allocate " + name + " (" + std::to_string(rows) + " x " + std::to_string(cols) +
                         " of " + std::to_string(sizeof(T)) + "-byte values): " + e.what());
  }
}

/// The buffers of an epoch on V rows of W and D rows of Ht (this process's
/// rows in a distributed run, all of them otherwise).
template <class T, class Mem>
std::shared_ptr<Workspace<T, Mem>> allocate_workspace(std::int64_t V, std::int64_t D, const Options& options) {
  const int K = options.rank;
  auto ws = std::make_shared<Workspace<T, Mem>>();
  ws->algorithm = options.algorithm;
  ws->rank = K;
  ws->tile = resolve_tile(K, options.tile);
  ws->R = alloc<T, Mem>("R", D, K);
  ws->P = alloc<T, Mem>("P", V, K);
  ws->S = alloc<T, Mem>("S", K, K);
  ws->Q = alloc<T, Mem>("Q", K, K);
  if (options.algorithm == Algorithm::mu) {
    ws->Wbuf = alloc<T, Mem>("Wbuf", V, K);
    ws->Hbuf = alloc<T, Mem>("Hbuf", D, K);
  }
  if (options.algorithm == Algorithm::alo) {
    ws->N = alloc<T, Mem>("N", K, K);
    const std::int64_t tile_values = std::max(V, D) * resolve_tile(K, options.tile);
    ws->Acc = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::Acc"), tile_values);
    if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible)
      ws->Tile =
          Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::Tile"), tile_values);
  }
  ws->norms2 = Kokkos::View<double*, Mem>("kfactor::nmf::norms2", K);
  if (options.algorithm == Algorithm::alo)
    ws->barrier = ColumnBarrier<Mem>(K, coresident_teams(typename Mem::execution_space{}));
  ws->scal = Kokkos::View<double*, Mem>("kfactor::nmf::scal", 2);
  return ws;
}

/// UsageError unless rank K fits a V x D input.
inline void check_rank(const Options& options, std::int64_t V, std::int64_t D) {
  const int K = options.rank;
  if (K > std::min(V, D))
    throw UsageError("nmf: rank " + std::to_string(K) + " exceeds min(rows, cols) = " + std::to_string(std::min(V, D)) +
                     " of the " + std::to_string(V) + " x " + std::to_string(D) + " input");
}

/// InputError for an empty input, for `bad` negative, NaN or infinite
/// entries and for an all-zero one (norm2 = ||A||^2).
inline void check_input(std::int64_t V, std::int64_t D, std::int64_t bad, double norm2) {
  if (V == 0 || D == 0)
    throw InputError("nmf: the input matrix is empty (" + std::to_string(V) + " x " + std::to_string(D) + ")");
  if (bad > 0)
    throw InputError("nmf: the input has " + std::to_string(bad) +
                     " negative, NaN or infinite entries; NMF needs finite non-negative values");
  if (!(norm2 > 0.0)) throw InputError("nmf: the input matrix is all zero; there is nothing to factorize");
}

template <class ExecutionSpace, class Matrix, class XV, class OV>
void product_AX(const ExecutionSpace& exec, const Matrix& A, const XV& X, const OV& out) {  // out = A X
  using T = typename MatrixTraits<Matrix>::value_type;
  if constexpr (MatrixTraits<Matrix>::sparse)
    spmm(exec, T(1), A, X, T(0), out);
  else
    gemm(exec, Trans::none, Trans::none, T(1), A, X, T(0), out);
}

/// out = A^T X from the column operand `Acol`: a CSR input's stored A^T
/// (then out = Acol X), or the dense A itself (out = Acol^T X).
template <class ExecutionSpace, class Matrix, class XV, class OV>
void product_AtX(const ExecutionSpace& exec, const Matrix& Acol, const XV& X, const OV& out) {
  using T = typename MatrixTraits<Matrix>::value_type;
  if constexpr (MatrixTraits<Matrix>::sparse)
    spmm(exec, T(1), Acol, X, T(0), out);
  else
    gemm(exec, Trans::transpose, Trans::none, T(1), Acol, X, T(0), out);
}

/// The communication policy of an epoch (DESIGN.md, "Communication"): this
/// single-process one, whose reductions are identities and whose products
/// are the plain ones, and the MPI one of kfactor/distributed/nmf.hpp. A
/// policy has
///   sum(exec, v)            v: a contiguous View in the space's memory (a
///                           K x K Gram, one squared column norm, the error
///                           scalar), summed in place over processes;
///   product_AtW(exec, Acol, W, R)
///                           R = this process's rows of A^T W, from its
///                           column operand of A (see product_AtX) and its
///                           rows of W (the policy gathers, and sums partial
///                           products, as its layout needs);
///   product_AHt(exec, Arow, Ht, P)
///                           P = this process's rows of A Ht, from its row
///                           operand of A and its rows of Ht;
///   one_process()           true when the run has one process: the epoch then
///                           takes the single-process kernels (the same
///                           arithmetic as kfactor::nmf, bit for bit);
///   agree(f)                runs f (a local allocation), every process
///                           throwing when one failed.
struct SingleProcess {
  [[nodiscard]] static constexpr bool one_process() { return true; }
  template <class F>
  void agree(F&& f) const {
    f();
  }
  template <class ExecutionSpace, class V>
  void sum(const ExecutionSpace&, const V&) const {}
  template <class ExecutionSpace, class Matrix, class X>
  void product_AtW(const ExecutionSpace& exec, const Matrix& Acol, const X& W, const X& R) const {
    product_AtX(exec, Acol, W, R);
  }
  template <class ExecutionSpace, class Matrix, class X>
  void product_AHt(const ExecutionSpace& exec, const Matrix& Arow, const X& Ht, const X& P) const {
    product_AX(exec, Arow, Ht, P);
  }
};

/// The ALO update of one factor (Algs. 2/3) in place: X updated with Gram G
/// and right-hand side B, in tiles of `tile` columns; W-style (normalised,
/// base X G_tt) when `normalize`, H-style otherwise. N is a K x K buffer; Acc
/// and Tile (host spaces) hold at least X's rows x tile values.
template <class ExecutionSpace, class XV, class BV, class GV, class BufV, class NV, class Comm = SingleProcess>
void alo_update(const ExecutionSpace& exec, const XV& X, const BV& B, const GV& G, const XV& N, const BufV& Acc,
                const BufV& Tile, int tile, typename XV::non_const_value_type eps, bool normalize, const NV& norms2,
                const ColumnBarrier<typename ExecutionSpace::memory_space>& barrier, const Comm& comm = {}) {
  using T = typename XV::non_const_value_type;
  using Buffer = Kokkos::View<T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Kokkos::ALL;
  using Kokkos::make_pair;
  const int K = static_cast<int>(G.extent(0));
  const int n = static_cast<int>(X.extent(0));
  const int ntiles = (K + tile - 1) / tile;
  // On a host one launch sweeps a tile (tile_sweep_host); on a device
  // column_sweep does the same for W-style tiles, and row_sweep for H-style.
  // Across processes the norms are summed between per-column launches. One
  // process of a distributed run takes the single-process kernels, so that
  // its iterates are kfactor::nmf's bit for bit on every backend.
  const bool single = comm.one_process();
  const bool host_tile_sweep = SweepTraits<ExecutionSpace>::host && single;
  alo_tile_matrix(exec, G, tile, normalize, N);
  if (!host_tile_sweep && single && normalize) barrier.reset(exec);
  for (int tau = 0; tau < ntiles; ++tau) {
    const int t0 = tau * tile, t1 = std::min(K, t0 + tile), w = t1 - t0;
    const auto Ntile = Kokkos::subview(N, ALL, make_pair(t0, t1));
    // Phases 1 and 3 of the tile: X N[:, tile], the columns outside it (new
    // before it, old after it) with alpha = -1 inside N; then phase 2, the
    // in-tile sweep.
    if constexpr (SweepTraits<ExecutionSpace>::host) {
      if (host_tile_sweep) {
        const Buffer Xt(Tile.data(), w, n), At(Acc.data(), w, n);
        tile_load(exec, X, B, t0, Xt, At);
        gemm(exec, Trans::transpose, Trans::transpose, T(1), Ntile, X, T(1), At);
        tile_sweep_host(exec, Xt, At, G, t0, eps, normalize, norms2);
        tile_store(exec, Xt, t0, X);
        continue;
      }
    }
    {
      const Buffer Ar(Acc.data(), n, w);
      gemm(exec, Trans::none, Trans::none, T(1), X, Ntile, T(0), Ar);
      if (!normalize) {
        row_sweep(exec, X, Ar, Base::accumulated, B, G, t0, t1, eps);
      } else if (single) {
        column_sweep(exec, X, Ar, B, G, t0, t1, eps, norms2, barrier);
      } else {
        for (int t = t0; t < t1; ++t) {
          column_step(exec, X, Ar, Base::accumulated, B, G, t0, t1, t, eps, norms2);
          comm.sum(exec, Kokkos::subview(norms2, make_pair(t, t + 1)));
        }
        scale_column(exec, X, t1 - 1, norms2);
      }
    }
  }
}

/// ||A - W H||^2 pieces from P = A Ht, Q = Ht^T Ht, S = W^T W into ws.scal.
template <class ExecutionSpace, class T, class Mem>
void error_pieces(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& W, Workspace<T, Mem>& ws) {
  frobenius_dot(exec, W, ws.P, Kokkos::View<double, Mem>(ws.scal.data()));
  frobenius_dot(exec, ws.S, ws.Q, Kokkos::View<double, Mem>(ws.scal.data() + 1));
}

class Stopwatch {
 public:
  template <class ExecutionSpace>
  void lap(const ExecutionSpace& exec, bool on, double& into) {
    if (!on) return;
    exec.fence();
    const auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  template <class ExecutionSpace>
  void start(const ExecutionSpace& exec, bool on) {
    if (!on) return;
    exec.fence();
    last_ = std::chrono::steady_clock::now();
  }

 private:
  std::chrono::steady_clock::time_point last_{};
};

// ---- the epoch over one process's blocks ------------------------------------
//
// init/step/evaluate below run these on all of A with SingleProcess; the
// distributed solver (kfactor/distributed/nmf.hpp) runs the same functions on
// its blocks with its MPI policy. The blocks: `Arow` holds the process's rows
// of A (V_loc x D), for P = A Ht; `Acol` its columns, for R = A^T W (dense:
// V x D_loc; sparse: the D_loc x V rows of A^T); W holds the process's V_loc
// rows of W and Ht its D_loc rows of Ht. One process: Arow = A, Acol = A
// (dense) or the stored A^T (sparse).

/// W0 and H0 (see the file comment) on this process's rows: W rows
/// [row0, row0 + W.extent(0)) and Ht rows [col0, col0 + Ht.extent(0)) of a
/// problem with D columns and ||A||^2 = norm2. Leaves S = W0^T W0.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void initial_factors(const ExecutionSpace& exec, const Matrix& Acol, const Options& options, DenseMatrix<T, Mem>& W,
                     DenseMatrix<T, Mem>& Ht, std::int64_t row0, std::int64_t col0, std::int64_t D, double norm2,
                     Workspace<T, Mem>& ws, const Comm& comm) {
  const std::uint64_t K = static_cast<std::uint64_t>(options.rank);
  // W0(i, k): counter i * K + k (fill_uniform's convention, global i).
  {
    const CounterRng rng(options.seed, RngStream::factor_w);
    auto Wl = W;
    const std::uint64_t r0 = static_cast<std::uint64_t>(row0);
    Kokkos::parallel_for(
        "kfactor::nmf::init_w",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Wl.extent(0), Wl.extent(1)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t k) { Wl(i, k) = rng.uniform<T>((r0 + i) * K + k, T(0), T(1)); });
  }
  // H0 is drawn as U[0,1) K x D (counter k * D + d, the layout-free convention of
  // fill_uniform for H), stored transposed.
  {
    const CounterRng rng(options.seed, RngStream::factor_h);
    auto Htl = Ht;
    const std::uint64_t nd = static_cast<std::uint64_t>(D), c0 = static_cast<std::uint64_t>(col0);
    Kokkos::parallel_for(
        "kfactor::nmf::init_h",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Htl.extent(0), Htl.extent(1)}),
        KOKKOS_LAMBDA(std::size_t d, std::size_t k) { Htl(d, k) = rng.uniform<T>(k * nd + c0 + d, T(0), T(1)); });
  }
  // Unit-norm columns of W0.
  kfactor::gram(exec, W, ws.S);
  comm.sum(exec, ws.S);
  {
    auto Wl = W;
    auto S = ws.S;
    Kokkos::parallel_for(
        "kfactor::nmf::normalize_w0",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Wl.extent(0), Wl.extent(1)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t k) {
          Wl(i, k) = T(double(Wl(i, k)) / Kokkos::sqrt(double(S(k, k))));
        });
  }
  // alpha = <A, W0 U> / ||W0 U||^2 (the least-squares scale of the model W0 U):
  // <A, W0 U> = <A^T W0, U^T>, ||W0 U||^2 = <W0^T W0, U U^T>.
  kfactor::gram(exec, W, ws.S);
  comm.sum(exec, ws.S);
  kfactor::gram(exec, Ht, ws.Q);
  comm.sum(exec, ws.Q);
  comm.product_AtW(exec, Acol, W, ws.R);
  frobenius_dot(exec, ws.R, Ht, Kokkos::View<double, Mem>(ws.scal.data()));
  frobenius_dot(exec, ws.S, ws.Q, Kokkos::View<double, Mem>(ws.scal.data() + 1));
  comm.sum(exec, Kokkos::subview(ws.scal, Kokkos::make_pair(0, 1)));
  exec.fence();
  const auto hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.scal);
  const double cross = hs(0), model2 = hs(1);
  // A non-zero A and a positive W0 U have <A, W0 U> > 0 unless their supports
  // miss each other (impossible: U > 0 almost surely); guard anyway.
  const T alpha = static_cast<T>(cross > 0.0 ? cross / model2 : std::sqrt(norm2 / model2));
  {
    auto Htl = Ht;
    Kokkos::parallel_for(
        "kfactor::nmf::scale_h0",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Htl.extent(0), Htl.extent(1)}),
        KOKKOS_LAMBDA(std::size_t d, std::size_t k) { Htl(d, k) *= alpha; });
  }
  ws.S_iteration = 0;  // S = W0^T W0 computed above
}

/// One epoch (H then W) on this process's blocks; `iteration` is the state's.
/// Communication per epoch (distributed policy): the two products (which
/// gather W and Ht, and in a grid layout also sum partial products), sum S
/// and Q (K x K), sum each of the K squared column norms of W (hals, alo) and
/// the error scalar <W, P>.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void epoch(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, const Options& options,
           DenseMatrix<T, Mem>& W, DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, int iteration, const Comm& comm) {
  const int K = options.rank;
  const T eps = resolve_epsilon<T>(options);
  const bool timed = options.timing_breakdown;
  Stopwatch sw;
  sw.start(exec, timed);

  // ---- H half: R = A^T W, S = W^T W (cached from the previous epoch) ----
  if (ws.S_iteration != iteration) {
    kfactor::gram(exec, W, ws.S);
    comm.sum(exec, ws.S);
  }
  comm.product_AtW(exec, Acol, W, ws.R);
  sw.lap(exec, timed, ws.t_products);
  switch (options.algorithm) {
    case Algorithm::hals: row_sweep(exec, Ht, Ht, Base::old_value, ws.R, ws.S, 0, K, eps); break;
    case Algorithm::alo:
      alo_update(exec, Ht, ws.R, ws.S, ws.N, ws.Acc, ws.Tile, resolve_tile(K, options.tile), eps, false, ws.norms2,
                 ws.barrier, comm);
      break;
    case Algorithm::mu:
      gemm(exec, Trans::none, Trans::none, T(1), Ht, ws.S, T(0), ws.Hbuf);
      mu_update(exec, Ht, ws.R, ws.Hbuf, eps);
      break;
  }
  sw.lap(exec, timed, ws.t_h);

  // ---- W half: P = A Ht, Q = Ht^T Ht ----
  comm.product_AHt(exec, Arow, Ht, ws.P);
  kfactor::gram(exec, Ht, ws.Q);
  comm.sum(exec, ws.Q);
  sw.lap(exec, timed, ws.t_products);
  switch (options.algorithm) {
    case Algorithm::hals:
      for (int t = 0; t < K; ++t) {
        column_step(exec, W, W, Base::old_times_diag, ws.P, ws.Q, 0, K, t, eps, ws.norms2);
        comm.sum(exec, Kokkos::subview(ws.norms2, Kokkos::make_pair(t, t + 1)));
      }
      scale_column(exec, W, K - 1, ws.norms2);
      break;
    case Algorithm::alo:
      alo_update(exec, W, ws.P, ws.Q, ws.N, ws.Acc, ws.Tile, resolve_tile(K, options.tile), eps, true, ws.norms2,
                 ws.barrier, comm);
      break;
    case Algorithm::mu:
      gemm(exec, Trans::none, Trans::none, T(1), W, ws.Q, T(0), ws.Wbuf);
      mu_update(exec, W, ws.P, ws.Wbuf, eps);
      break;
  }
  sw.lap(exec, timed, ws.t_w);

  // ---- next epoch's S and the error pieces ----
  kfactor::gram(exec, W, ws.S);
  comm.sum(exec, ws.S);
  error_pieces(exec, W, ws);
  comm.sum(exec, Kokkos::subview(ws.scal, Kokkos::make_pair(0, 1)));
  sw.lap(exec, timed, ws.t_products);
  ws.S_iteration = iteration + 1;
  ws.error_iteration = iteration + 1;
}

/// The error pieces of a fresh or restored state (no-op when the last epoch
/// left them): P = A Ht, Q, S and <W, P>.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void error_products(const ExecutionSpace& exec, const Matrix& Arow, const DenseMatrix<T, Mem>& W,
                    const DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, int iteration, const Comm& comm) {
  if (ws.error_iteration == iteration) return;
  comm.product_AHt(exec, Arow, Ht, ws.P);
  kfactor::gram(exec, Ht, ws.Q);
  comm.sum(exec, ws.Q);
  kfactor::gram(exec, W, ws.S);
  comm.sum(exec, ws.S);
  error_pieces(exec, W, ws);
  comm.sum(exec, Kokkos::subview(ws.scal, Kokkos::make_pair(0, 1)));
  ws.S_iteration = iteration;
  ws.error_iteration = iteration;
  Kokkos::deep_copy(exec, ws.norms2, std::nan(""));
}

/// relative_error and min_column_norm from the workspace (host reads);
/// normA2 = ||A||^2.
template <class T, class Mem>
Metrics metrics_of(const Options& options, const Workspace<T, Mem>& ws, double normA2) {
  auto scal = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.scal);
  auto norms2 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.norms2);
  const double err2 = normA2 - 2.0 * scal(0) + scal(1);
  Metrics m;
  m.set("relative_error", std::sqrt(std::max(err2, 0.0) / normA2));
  if (options.algorithm != Algorithm::mu) {
    double mn = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < norms2.extent(0); ++k) mn = std::min(mn, norms2(k));
    m.set("min_column_norm", std::sqrt(mn));
  }
  return m;
}

/// The report fields an NMF run fills before its loop (single-rank and
/// distributed runs alike); rows, cols and nnz are the whole input's.
template <class ExecutionSpace, class Matrix>
Report report_header(const Options& options, std::int64_t rows, std::int64_t cols, std::int64_t nnz) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using DM = DenseMatrix<T, typename MatrixTraits<Matrix>::memory_space>;
  Report r;
  r.command = "nmf";
  r.backend = backend_name<ExecutionSpace>();
  r.precision = sizeof(T) == 4 ? "float" : "double";
  r.rows = rows;
  r.cols = cols;
  r.nnz = nnz;
  r.rank = options.rank;
  r.info["algorithm"] = to_string(options.algorithm);
  if (options.algorithm == Algorithm::alo) r.info["tile"] = std::to_string(resolve_tile(options.rank, options.tile));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", double(resolve_epsilon<T>(options)));
  r.info["epsilon"] = buf;
  r.info["input"] = MatrixTraits<Matrix>::sparse ? "csr" : "dense";
  if constexpr (MatrixTraits<Matrix>::sparse) r.info["spmm"] = spmm_path<DM, DM>();
  r.info["gemm"] = gemm_path<ExecutionSpace, DM, DM, DM>();
  return r;
}

/// The workspace of `state` for this process's V_loc rows of W and D_loc
/// rows of Ht, (re)built when it was dropped (State::reset_workspace) or
/// made for other options; UsageError when the state's rank is not
/// options.rank.
template <class T, class Mem, class Comm>
Workspace<T, Mem>& ensure_workspace(State<T, Mem>& state, std::int64_t V_loc, std::int64_t D_loc,
                                    const Options& options, const Comm& comm) {
  if (static_cast<int>(state.W.extent(1)) != options.rank || static_cast<int>(state.Ht.extent(1)) != options.rank)
    throw UsageError("nmf: the state has rank " + std::to_string(state.W.extent(1)) + ", options.rank is " +
                     std::to_string(options.rank));
  const auto& ws = state.ws;
  if (!ws || ws->algorithm != options.algorithm || ws->rank != options.rank ||
      ws->tile != resolve_tile(options.rank, options.tile))
    comm.agree([&] { state.ws = allocate_workspace<T, Mem>(V_loc, D_loc, options); });
  return *state.ws;
}

/// step() on this process's blocks (see epoch).
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void step_on(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, const Options& options,
             State<T, Mem>& state, const Comm& comm) {
  static_assert(std::is_same_v<T, typename MatrixTraits<Matrix>::value_type>, "A and the factors differ in type");
  auto& ws = ensure_workspace(state, state.W.extent(0), state.Ht.extent(0), options, comm);
  epoch(exec, Arow, Acol, options, state.W, state.Ht, ws, state.iteration, comm);
}

/// evaluate() on this process's blocks; normA2 = ||A||^2 of the whole input.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
Metrics evaluate_on(const ExecutionSpace& exec, const Matrix& Arow, double normA2, const Options& options,
                    State<T, Mem>& state, const Comm& comm) {
  auto& ws = ensure_workspace(state, state.W.extent(0), state.Ht.extent(0), options, comm);
  error_products(exec, Arow, state.W, state.Ht, ws, state.iteration, comm);
  return metrics_of(options, ws, normA2);
}

/// resume(): the loop of core/solver.hpp with `step` and `evaluate` (the
/// single-rank or the distributed ones), filling `r` (from report_header).
template <class ExecutionSpace, class T, class Mem, class StepFn, class EvaluateFn>
Report resume_on(const ExecutionSpace& exec, const Options& options, State<T, Mem>& state, const Observer& observer,
                 Report r, StepFn&& step, EvaluateFn&& evaluate) {
  options.validate();
  double seconds = 0.0;
  const StopReason reason = run_solver_loop(
      state.iteration, state.history, options.stop, "relative_error", observer, step, evaluate,
      [](const Metrics&) { return false; }, &seconds);
  exec.fence();
  r.seconds = seconds;
  r.iterations = state.iteration;
  r.stop_reason = to_string(reason);
  r.metrics = state.history.size() > 0 ? state.history.last() : evaluate();
  r.history = state.history;
  if (options.timing_breakdown && state.ws) {
    r.timings.set("products", state.ws->t_products);
    r.timings.set("h_update", state.ws->t_h);
    r.timings.set("w_update", state.ws->t_w);
  }
  return r;
}

/// solve(): init then resume, with the init time in report.timings.
template <class State, class InitFn, class ResumeFn>
Result<State> init_then_resume(InitFn&& init, ResumeFn&& resume) {
  Result<State> out;
  const auto t0 = std::chrono::steady_clock::now();
  out.state = init();
  const double t_init = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.report = resume(out.state);
  out.report.timings.set("init", t_init);
  return out;
}

/// R = A^T W reads the stored A^T of a CSR input and the dense A itself.
template <class Matrix>
const Matrix& column_operand(const Problem<Matrix>& p) {
  if constexpr (MatrixTraits<Matrix>::sparse)
    return p.At;
  else
    return p.A;
}

}  // namespace detail

template <class ExecutionSpace, class Matrix>
Problem<Matrix> make_problem(const ExecutionSpace& exec, const Matrix& A) {
  Problem<Matrix> p;
  p.A = A;
  p.rows = detail::rows_of(A);
  p.cols = detail::cols_of(A);
  p.nnz = detail::nnz_of(A);
  std::int64_t bad = 0;
  if (p.rows > 0 && p.cols > 0) std::tie(p.norm2, bad) = detail::check_values(exec, A);
  detail::check_input(p.rows, p.cols, bad, p.norm2);
  if constexpr (MatrixTraits<Matrix>::sparse) {
    try {
      p.At = kfactor::transpose(exec, A);
    } catch (const std::exception& e) {
      throw RuntimeFailure("nmf: cannot store the transpose of A (nnz " + std::to_string(A.nnz()) + "): " + e.what());
    }
  }
  exec.fence();
  return p;
}

template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init_with(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W0,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& Ht0) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using Mem = typename MatrixTraits<Matrix>::memory_space;
  options.validate();
  const std::int64_t V = problem.rows, D = problem.cols;
  detail::check_rank(options, V, D);
  const std::int64_t K = options.rank;
  if (static_cast<std::int64_t>(W0.extent(0)) != V || static_cast<std::int64_t>(W0.extent(1)) != K ||
      static_cast<std::int64_t>(Ht0.extent(0)) != D || static_cast<std::int64_t>(Ht0.extent(1)) != K)
    throw UsageError("nmf: starting factors " + std::to_string(W0.extent(0)) + " x " + std::to_string(W0.extent(1)) +
                     " and " + std::to_string(Ht0.extent(0)) + " x " + std::to_string(Ht0.extent(1)) +
                     " do not fit rank " + std::to_string(K) + " and a " + std::to_string(V) + " x " +
                     std::to_string(D) + " input");
  State<T, Mem> s;
  s.ws = detail::allocate_workspace<T, Mem>(V, D, options);
  s.W = detail::alloc<T, Mem>("W", V, K);
  s.Ht = detail::alloc<T, Mem>("Ht", D, K);
  Kokkos::deep_copy(exec, s.W, W0);
  Kokkos::deep_copy(exec, s.Ht, Ht0);
  s.seed = options.seed;
  exec.fence();
  return s;
}

template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using Mem = typename MatrixTraits<Matrix>::memory_space;
  options.validate();
  const std::int64_t V = problem.rows, D = problem.cols;
  detail::check_rank(options, V, D);
  const int K = options.rank;
  State<T, Mem> s;
  s.ws = detail::allocate_workspace<T, Mem>(V, D, options);
  s.W = detail::alloc<T, Mem>("W", V, K);
  s.Ht = detail::alloc<T, Mem>("Ht", D, K);
  s.seed = options.seed;
  detail::initial_factors(exec, detail::column_operand(problem), options, s.W, s.Ht, 0, 0, D, problem.norm2, *s.ws,
                          detail::SingleProcess{});
  exec.fence();
  return s;
}

template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
void step(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
          State<T, MemorySpace>& state) {
  detail::step_on(exec, problem.A, detail::column_operand(problem), options, state, detail::SingleProcess{});
}

template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
                 State<T, MemorySpace>& state) {
  return detail::evaluate_on(exec, problem.A, problem.norm2, options, state, detail::SingleProcess{});
}

template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
Report resume(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
              State<T, MemorySpace>& state, const Observer& observer) {
  return detail::resume_on(
      exec, options, state, observer,
      detail::report_header<ExecutionSpace, Matrix>(options, problem.rows, problem.cols, problem.nnz),
      [&] { step(exec, problem, options, state); }, [&] { return evaluate(exec, problem, options, state); });
}

template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> solve(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
                               const Observer& observer) {
  return detail::init_then_resume<StateFor<Matrix>>(
      [&] { return init(exec, problem, options); },
      [&](StateFor<Matrix>& state) { return resume(exec, problem, options, state, observer); });
}

}  // namespace kfactor::nmf
