#pragma once
/// \file
/// Definitions of kfactor/nmf/nmf.hpp (included at its end).

#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>
#include <kfactor/kernels/gemm.hpp>
#include <kfactor/kernels/spmm.hpp>
#include <kfactor/nmf/detail/eigen.hpp>
#include <kfactor/nmf/detail/sweep.hpp>
#include <kfactor/sddmm/detail/plan_cache.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

inline Init parse_init(const std::string& name) {
  if (name == "random") return Init::random;
  if (name == "nndsvd") return Init::nndsvd;
  if (name == "nndsvda") return Init::nndsvda;
  if (name == "nndsvdar") return Init::nndsvdar;
  if (name == "custom") return Init::custom;
  throw UsageError("nmf: unknown init '" + name + "' (expected random, nndsvd, nndsvda, nndsvdar or custom)");
}

inline const char* to_string(Init i) {
  switch (i) {
    case Init::random: return "random";
    case Init::nndsvd: return "nndsvd";
    case Init::nndsvda: return "nndsvda";
    case Init::nndsvdar: return "nndsvdar";
    case Init::custom: return "custom";
  }
  return "unknown";
}

inline BetaLoss parse_beta_loss(const std::string& name) {
  if (name == "frobenius") return BetaLoss::frobenius;
  if (name == "kl") return BetaLoss::kl;
  if (name == "is") return BetaLoss::is;
  throw UsageError("nmf: unknown beta_loss '" + name + "' (expected frobenius, kl or is)");
}

inline const char* to_string(BetaLoss b) {
  switch (b) {
    case BetaLoss::frobenius: return "frobenius";
    case BetaLoss::kl: return "kl";
    case BetaLoss::is: return "is";
  }
  return "unknown";
}

inline Missing parse_missing(const std::string& name) {
  if (name == "zero") return Missing::zero;
  if (name == "absent") return Missing::absent;
  throw UsageError("nmf: unknown missing '" + name + "' (expected zero or absent)");
}

inline const char* to_string(Missing m) {
  switch (m) {
    case Missing::zero: return "zero";
    case Missing::absent: return "absent";
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
  check_range("nmf", "alpha_w", alpha_w, alpha_range);
  check_range("nmf", "alpha_h", alpha_h, alpha_range);
  check_range("nmf", "l1_ratio", l1_ratio, l1_ratio_range);
  if (beta_loss != BetaLoss::frobenius && algorithm != Algorithm::mu)
    throw UsageError(std::string("nmf: beta_loss ") + to_string(beta_loss) +
                     " needs algorithm mu (hals and alo minimise the Frobenius loss), got algorithm " +
                     to_string(algorithm));
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

inline int resolve_tile(int K, int tile, bool host) {
  const int automatic = host && K <= host_one_tile_max_rank ? K : default_tile(K);
  return std::clamp(tile > 0 ? tile : automatic, 1, std::max(K, 1));
}

/// Whether a host runs this factor update as ONE sweep of all K columns
/// (tile_sweep_host): HALS, MU, and ALO with a tile of all K columns, which
/// is HALS's sweep (ALO's tiles regroup HALS's arithmetic to cut a GPU's data
/// movement; on a host each tile is a launch that wakes the thread pool).
inline bool host_sweeps_whole(Algorithm algorithm, int K, int tile, bool host) {
  return host && (algorithm != Algorithm::alo || resolve_tile(K, tile, true) >= K);
}
inline bool host_sweeps_whole(const Options& o, bool host) {
  return host_sweeps_whole(o.algorithm, o.rank, o.tile, host);
}

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
  bool fix_w = false;                      ///< the option Wbuf, Hbuf and Gs were allocated for
  DenseMatrix<T, MemorySpace> R, P;        ///< A^T W (D x K), A Ht (V x K)
  DenseMatrix<T, MemorySpace> S, Q;        ///< W^T W, Ht^T Ht (K x K)
  DenseMatrix<T, MemorySpace> Wbuf, Hbuf;  ///< MU products W Q, Ht S; scaled right-hand sides (scaled_system)
  DenseMatrix<T, MemorySpace> N;           ///< ALO: the tiles' GEMM matrix (K x K, alo_tile_matrix)
  /// ALO: one tile's GEMM result and (host spaces) the transposed tile of the
  /// factor, max(V, D) * T values each (alo_update gives them their shape);
  /// HALS on a host: the same for the tile of all K columns.
  Kokkos::View<T*, MemorySpace> Acc, Tile;
  Kokkos::View<double*, MemorySpace> partials;  ///< HALS on a host: each thread's Gram (SweepOutputs)
  Kokkos::View<double*, MemorySpace> scal;      ///< [0] = <W, P>, [1] = <W^T W, Q>
  DenseMatrix<T, MemorySpace> Gs;               ///< the scaled Gram (scaled_system), where it is formed
  /// Element-wise rules (beta losses, masked data): per stored entry of A
  /// (sparse) or V x D (dense) values of the model and the MU factors,
  /// allocated on first use.
  Kokkos::View<T*, MemorySpace> ev1, ev2;
  DenseMatrix<T, MemorySpace> E1, E2;
  bool direct_error = false;                      ///< scal[0] holds the squared error itself (element-wise rules)
  int S_iteration = -1;                           ///< S = W^T W is valid for this state.iteration
  int error_iteration = -1;                       ///< scal holds the error of this state.iteration
  double t_products = 0.0, t_h = 0.0, t_w = 0.0;  ///< Options::timing_breakdown
  /// The SDDMM plans of A's patterns (rows and columns) for the model on
  /// the stored entries, each built at its first use.
  std::shared_ptr<kfactor::detail::SddmmPlanCache<T, MemorySpace>> sddmm_plans =
      std::make_shared<kfactor::detail::SddmmPlanCache<T, MemorySpace>>();
};

/// What NMF needs to know of an input's values, from one pass over them:
/// ||A||^2 and the sum over the finite non-negative values, the number of
/// negative, NaN or infinite values (bad) and of zeros.
struct ValueStats {
  double norm2 = 0.0, sum = 0.0;
  std::int64_t bad = 0, zeros = 0;
};

/// value_stats's reduction value: each sum in 8 lanes, so that a host
/// thread's loop over a block of values is vector code. (The two passes
/// with one accumulator per sum, a dependent add per value, took 460 ms of
/// a 20000 x 10000 input's fit on 2 cores, more than an iteration at K = 64.)
struct ValueLanes {
  static constexpr int width = 8;
  double norm2[width], sum[width];
  std::int64_t bad[width], zeros[width];
  KOKKOS_INLINE_FUNCTION ValueLanes() {
    for (int l = 0; l < width; ++l) {
      norm2[l] = sum[l] = 0.0;
      bad[l] = zeros[l] = 0;
    }
  }
  KOKKOS_INLINE_FUNCTION ValueLanes& operator+=(const ValueLanes& o) {
    for (int l = 0; l < width; ++l) {
      norm2[l] += o.norm2[l];
      sum[l] += o.sum[l];
      bad[l] += o.bad[l];
      zeros[l] += o.zeros[l];
    }
    return *this;
  }
  /// Lane l takes the value a.
  KOKKOS_INLINE_FUNCTION void take(int l, double a) {
    const bool ok = a >= 0.0 && !Kokkos::isinf(a);
    norm2[l] += ok ? a * a : 0.0;
    sum[l] += ok ? a : 0.0;
    bad[l] += ok ? 0 : 1;
    zeros[l] += a == 0.0 ? 1 : 0;
  }
  /// Values [j0, j1) of get(j), value j in lane (j - j0) % width (whole
  /// segments first: a bounds test per value kept the loop scalar).
  template <class Get>
  KOKKOS_INLINE_FUNCTION void add(std::size_t j0, std::size_t j1, const Get& get) {
    std::size_t j = j0;
    for (; j + width <= j1; j += width)
      for (int l = 0; l < width; ++l) take(l, double(get(j + l)));
    for (int l = 0; j + l < j1; ++l) take(l, double(get(j + l)));
  }
  ValueStats total() const {
    ValueStats s;
    for (int l = 0; l < width; ++l) {
      s.norm2 += norm2[l];
      s.sum += sum[l];
      s.bad += bad[l];
      s.zeros += zeros[l];
    }
    return s;
  }
};

/// ValueStats of a dense rank-2 view or of a CSR matrix's stored values. A
/// work item sums a block of a row's values (of the stored values) into
/// its own lanes, in registers, and adds them to the reduction once: a
/// long block on a host, one lane-width on a device, whose threads then
/// read neighbouring values.
template <class ExecutionSpace, class Matrix>
ValueStats value_stats(const ExecutionSpace& exec, const Matrix& A) {
  constexpr std::size_t block = is_host_space_v<ExecutionSpace> ? 512 : ValueLanes::width;
  ValueLanes lanes;
  if constexpr (MatrixTraits<Matrix>::sparse) {
    auto values = A.values;
    const std::size_t n = values.extent(0);
    Kokkos::parallel_reduce(
        "kfactor::nmf::value_stats_sparse", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, (n + block - 1) / block),
        KOKKOS_LAMBDA(std::size_t b, ValueLanes& acc) {
          ValueLanes part;
          part.add(b * block, b * block + block < n ? b * block + block : n, [&](std::size_t e) { return values(e); });
          acc += part;
        },
        lanes);
  } else {
    const std::size_t cols = A.extent(1);
    Kokkos::parallel_reduce(
        "kfactor::nmf::value_stats_dense",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {A.extent(0), (cols + block - 1) / block}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t b, ValueLanes& acc) {
          ValueLanes part;
          part.add(b * block, b * block + block < cols ? b * block + block : cols,
                   [&](std::size_t j) { return A(i, j); });
          acc += part;
        },
        lanes);
  }
  return lanes.total();
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

/// A rows x cols matrix, zero-filled: the fill maps its pages at allocation,
/// in parallel. Left to a first touch inside the first epoch, the page faults
/// made that epoch several times as long as a later one where a fault is
/// slow (virtual machines).
template <class T, class MemorySpace>
DenseMatrix<T, MemorySpace> alloc(const std::string& name, std::int64_t rows, std::int64_t cols) {
  try {
    return DenseMatrix<T, MemorySpace>("kfactor::nmf::" + name, rows, cols);
  } catch (const std::exception& e) {
    throw OutOfMemory("nmf: cannot allocate " + name + " (" + std::to_string(rows) + " x " + std::to_string(cols) +
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
  constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  ws->tile = resolve_tile(K, options.tile, host);
  ws->fix_w = options.fix_w;
  ws->R = alloc<T, Mem>("R", D, K);
  ws->P = alloc<T, Mem>("P", V, K);
  ws->S = alloc<T, Mem>("S", K, K);
  ws->Q = alloc<T, Mem>("Q", K, K);
  // HALS and MU on a host run in tile_sweep_host (HALS, and ALO with one tile,
  // on a transposed copy of the factor in Acc and Tile, scaling its system
  // there); ALO's tiles and devices form the scaled system (Gs and the
  // right-hand sides in Wbuf, Hbuf), MU's products and element-wise rules
  // take Wbuf, Hbuf.
  const bool sweep_host = host_sweeps_whole(options, host);
  const bool hals_host = sweep_host && options.algorithm != Algorithm::mu;
  if (options.algorithm == Algorithm::mu || !hals_host) {
    ws->Wbuf = alloc<T, Mem>("Wbuf", V, K);
    ws->Hbuf = alloc<T, Mem>("Hbuf", D, K);
  }
  if (options.algorithm != Algorithm::mu && !hals_host) ws->Gs = alloc<T, Mem>("Gs", K, K);
  // ALO's tiles, and on a host HALS's tile of all K columns (tile_sweep_host).
  const int tile_cols = hals_host ? K : options.algorithm == Algorithm::alo ? ws->tile : 0;
  if (options.algorithm == Algorithm::alo && !hals_host) ws->N = alloc<T, Mem>("N", K, K);
  if (tile_cols > 0) {
    const std::int64_t tile_values = std::max(V, D) * tile_cols;
    ws->Acc = Kokkos::View<T*, Mem>("kfactor::nmf::Acc", tile_values);  // zero-filled: see alloc
    if (host) ws->Tile = Kokkos::View<T*, Mem>("kfactor::nmf::Tile", tile_values);
  }
  if (sweep_host)
    ws->partials = Kokkos::View<double*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::partials"),
                                              std::size_t(typename Mem::execution_space{}.concurrency()) * K * K);
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
    gemm_skinny(exec, Trans::none, A, X, out);
}

/// out = A^T X from the column operand `Acol`: a CSR input's stored A^T
/// (then out = Acol X), or the dense A itself (out = Acol^T X).
template <class ExecutionSpace, class Matrix, class XV, class OV>
void product_AtX(const ExecutionSpace& exec, const Matrix& Acol, const XV& X, const OV& out) {
  using T = typename MatrixTraits<Matrix>::value_type;
  if constexpr (MatrixTraits<Matrix>::sparse)
    spmm(exec, T(1), Acol, X, T(0), out);
  else
    gemm_skinny(exec, Trans::transpose, Acol, X, out);
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

// ---- the rules of the options (Options::init, penalties, beta_loss, missing) ----

/// hals/alo on the Grams and products of the whole A (every option but
/// masked data): the epoch of the file comment, which reports
/// min_column_norm.
inline bool gram_rules(const Options& o, bool sparse) {
  return o.algorithm != Algorithm::mu && !(sparse && o.missing == Missing::absent);
}
/// hals/alo on the stored entries only (masked_cd_rows).
inline bool masked_rules(const Options& o, bool sparse) {
  return o.algorithm != Algorithm::mu && sparse && o.missing == Missing::absent;
}
/// mu through the model's entries: a beta loss other than Frobenius, or
/// masked data.
inline bool elementwise_rules(const Options& o, bool sparse) {
  return o.algorithm == Algorithm::mu &&
         (o.beta_loss != BetaLoss::frobenius || (sparse && o.missing == Missing::absent));
}

/// scikit-learn's penalty terms of W (l1, l2) for a V x D input: alpha_w
/// times D (n_features), split by l1_ratio; of H the same with alpha_h and V.
struct Penalties {
  double l1_w = 0, l2_w = 0, l1_h = 0, l2_h = 0;
};
inline Penalties penalties(const Options& o, std::int64_t V, std::int64_t D) {
  Penalties p;
  p.l1_w = o.alpha_w * o.l1_ratio * double(D);
  p.l2_w = o.alpha_w * (1.0 - o.l1_ratio) * double(D);
  p.l1_h = o.alpha_h * o.l1_ratio * double(V);
  p.l2_h = o.alpha_h * (1.0 - o.l1_ratio) * double(V);
  return p;
}

/// Distributed runs (kfactor/distributed/nmf.hpp) take the random start,
/// the Frobenius loss, all entries observed and no penalty or fixed factor:
/// UsageError naming the first other option.
inline void check_distributed_options(const Options& o) {
  auto refuse = [](const std::string& what) {
    throw UsageError("distributed nmf: " + what + " is not supported with --distributed (run on one process)");
  };
  if (o.init != Init::random) refuse(std::string("init ") + to_string(o.init));
  if (o.alpha_w > 0.0) refuse("alpha_w");
  if (o.alpha_h > 0.0) refuse("alpha_h");
  if (o.beta_loss != BetaLoss::frobenius) refuse(std::string("beta_loss ") + to_string(o.beta_loss));
  if (o.missing != Missing::zero) refuse("missing absent");
  if (o.fix_w) refuse("fix_w");
}

/// A row-major host copy, in double, of a small matrix.
template <class V>
std::vector<double> host_values(const V& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  std::vector<double> out(X.extent(0) * X.extent(1));
  for (std::size_t i = 0; i < X.extent(0); ++i)
    for (std::size_t j = 0; j < X.extent(1); ++j) out[i * X.extent(1) + j] = double(h(i, j));
  return out;
}

/// A rows x cols device matrix from row-major host values.
template <class T, class Mem>
DenseMatrix<T, Mem> device_matrix(const std::string& name, const std::vector<double>& v, std::int64_t rows,
                                  std::int64_t cols) {
  auto d = alloc<T, Mem>(name, rows, cols);
  auto h = Kokkos::create_mirror_view(d);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) h(i, j) = T(v[std::size_t(i * cols + j)]);
  Kokkos::deep_copy(d, h);
  return d;
}

/// An orthonormal basis of the columns of Y (n x l): Y E Lambda^{-1/2} from
/// the eigendecomposition Y^T Y = E Lambda E^T (symmetric_eigen), twice (the
/// first pass leaves Q^T Q - I of the order of eps * cond(Y), the second
/// removes it, as in CholeskyQR2 but defined for a rank-deficient Y).
/// Directions with an eigenvalue below 1e3 machine epsilons of the largest
/// (the rank of Y is then smaller than l: an input of rank < l) are dropped,
/// so Q has r <= l columns.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> orthonormal_basis(const ExecutionSpace& exec, DenseMatrix<T, Mem> Y) {
  for (int pass = 0; pass < 2; ++pass) {
    const int l = static_cast<int>(Y.extent(1));
    if (l == 0) return Y;
    auto G = alloc<T, Mem>("sketch_gram", l, l);
    kfactor::gram(exec, Y, G);
    std::vector<double> vals, vecs;
    symmetric_eigen(host_values(G), l, vals, vecs);
    const double drop = vals[0] * 1e3 * double(std::numeric_limits<T>::epsilon());
    int r = 0;
    while (r < l && vals[r] > drop && vals[r] > 0.0) ++r;
    std::vector<double> c(std::size_t(l) * r);
    for (int i = 0; i < l; ++i)
      for (int k = 0; k < r; ++k) c[std::size_t(i) * r + k] = vecs[std::size_t(i) * l + k] / std::sqrt(vals[k]);
    auto Q = alloc<T, Mem>("sketch_basis", Y.extent(0), r);
    if (r > 0) gemm(exec, Trans::none, Trans::none, T(1), Y, device_matrix<T, Mem>("sketch_c", c, l, r), T(0), Q);
    Y = Q;
  }
  return Y;
}

/// A rank-K truncated SVD A ~ U diag(sigma) Vs^T (U: V x K, Vs: D x K) by a
/// randomized range finder (Halko, Martinsson and Tropp, Alg. 4.4, as
/// scikit-learn's randomized_svd): Omega (D x (K + 10)) uniform in [-1, 1)
/// from the counter RNG (stream factor_h, counter d (K + 10) + j), Y = A
/// Omega, q power iterations Y <- A (A^T Y) with a fresh orthonormal basis
/// at every half (q = 7 when K < 0.1 min(V, D), else 4: scikit-learn's
/// 'auto'), Q = orth(Y), B^T = A^T Q, then the eigenvectors of B B^T (the
/// small host eigensolver) give U = Q E and Vs = B^T E / sigma. The products
/// are the solver's own (A Ht and A^T W paths). Singular values beyond the
/// rank of A are 0 with zero vectors.
template <class ExecutionSpace, class Matrix, class T, class Mem>
void truncated_svd(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, std::int64_t V, std::int64_t D,
                   int K, std::uint64_t seed, DenseMatrix<T, Mem>& U, DenseMatrix<T, Mem>& Vs,
                   std::vector<double>& sigma) {
  const int l = static_cast<int>(std::min<std::int64_t>(K + 10, std::min(V, D)));
  const int q = K < 0.1 * double(std::min(V, D)) ? 7 : 4;
  auto Omega = alloc<T, Mem>("sketch_omega", D, l);
  {
    const CounterRng rng(seed, RngStream::factor_h);
    auto Om = Omega;
    const std::uint64_t ll = static_cast<std::uint64_t>(l);
    Kokkos::parallel_for(
        "kfactor::nmf::sketch_omega", row_major_policy(exec, Om.extent(0), Om.extent(1)),
        KOKKOS_LAMBDA(std::size_t d, std::size_t j) { Om(d, j) = rng.uniform<T>(d * ll + j, T(-1), T(1)); });
  }
  auto Y = alloc<T, Mem>("sketch_y", V, l);
  product_AX(exec, Arow, Omega, Y);
  for (int it = 0; it < q; ++it) {
    const auto Q = orthonormal_basis(exec, Y);
    auto Z = alloc<T, Mem>("sketch_z", D, Q.extent(1));
    product_AtX(exec, Acol, Q, Z);
    const auto Zq = orthonormal_basis(exec, Z);
    Y = alloc<T, Mem>("sketch_y", V, Zq.extent(1));
    product_AX(exec, Arow, Zq, Y);
  }
  const auto Q = orthonormal_basis(exec, Y);
  const int r = static_cast<int>(Q.extent(1));
  auto Bt = alloc<T, Mem>("sketch_bt", D, r);
  product_AtX(exec, Acol, Q, Bt);
  auto M = alloc<T, Mem>("sketch_bbt", r, r);
  kfactor::gram(exec, Bt, M);
  std::vector<double> vals, vecs;
  if (r > 0) symmetric_eigen(host_values(M), r, vals, vecs);
  sigma.assign(K, 0.0);
  std::vector<double> e(std::size_t(std::max(r, 1)) * K, 0.0), es(e.size(), 0.0);
  for (int k = 0; k < std::min(K, r); ++k) {
    sigma[k] = std::sqrt(std::max(vals[k], 0.0));
    for (int i = 0; i < r; ++i) {
      e[std::size_t(i) * K + k] = vecs[std::size_t(i) * r + k];
      es[std::size_t(i) * K + k] = sigma[k] > 0.0 ? vecs[std::size_t(i) * r + k] / sigma[k] : 0.0;
    }
  }
  U = alloc<T, Mem>("svd_u", V, K);
  Vs = alloc<T, Mem>("svd_v", D, K);
  if (r == 0) {
    Kokkos::deep_copy(exec, U, T(0));
    Kokkos::deep_copy(exec, Vs, T(0));
    return;
  }
  gemm(exec, Trans::none, Trans::none, T(1), Q, device_matrix<T, Mem>("svd_e", e, r, K), T(0), U);
  gemm(exec, Trans::none, Trans::none, T(1), Bt, device_matrix<T, Mem>("svd_es", es, r, K), T(0), Vs);
}

/// Squared l2 norms of the positive and negative parts of each column of X
/// (n x K): out(k, 0) = sum max(x, 0)^2, out(k, 1) = sum min(x, 0)^2.
template <class ExecutionSpace, class T, class Mem>
std::vector<double> signed_column_norms2(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& X) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int K = static_cast<int>(X.extent(1));
  const int n = static_cast<int>(X.extent(0));
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> out("kfactor::nmf::signed_norms", K, 2);
  Kokkos::parallel_for(
      "kfactor::nmf::signed_column_norms", Policy(exec, K, Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int k = team.league_rank();
        double p = 0.0, m = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const int i, double& s) {
              const double x = X(i, k);
              s += x > 0.0 ? x * x : 0.0;
            },
            p);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n),
            [&](const int i, double& s) {
              const double x = X(i, k);
              s += x < 0.0 ? x * x : 0.0;
            },
            m);
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          out(k, 0) = p;
          out(k, 1) = m;
        });
      });
  return host_values(out);
}

/// One factor of nndsvd_factors: X(i, k) = c(k, which) times the part of
/// S(i, k) that c(k, 0) keeps (0: |S|, 1: max(S, 0), -1: max(-S, 0)), zeroed
/// below 1e-6, then the zeros filled (fill 1: mean, 2: mean u / 100 with u
/// at counter(i, k)).
template <class ExecutionSpace, class T, class Mem, class CV, class Counter>
void nndsvd_fill(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& X, const DenseMatrix<T, Mem>& S, const CV& c,
                 int which, int fill, double mean, const CounterRng& rng, Counter counter) {
  Kokkos::parallel_for(
      "kfactor::nmf::nndsvd_fill", row_major_policy(exec, X.extent(0), X.extent(1)),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k) {
        const double sgn = c(k, 0), s = S(i, k);
        const double part = sgn == 0.0 ? Kokkos::abs(s) : (sgn * s > 0.0 ? sgn * s : 0.0);
        double v = c(k, which) * part;
        if (v < 1e-6) v = 0.0;
        if (v == 0.0 && fill == 1) v = mean;
        if (v == 0.0 && fill == 2) v = mean * rng.uniform(counter(i, k)) / 100.0;
        X(i, k) = T(v);
      });
}

/// NNDSVD (Boutsidis and Gallopoulos 2008) as scikit-learn's _initialize_nmf:
/// from the rank-K SVD (truncated_svd), component 0 takes |u_0|, |v_0|; each
/// other component k the positive or the negative parts (x, y) of (u_k, v_k),
/// whichever has the larger product of norms m, as sqrt(sigma_k m) x / |x|
/// and sqrt(sigma_k m) y / |y|. Entries below 1e-6 become 0 (scikit-learn's
/// threshold); nndsvda then sets the zeros to mean(A), nndsvdar to mean(A) u
/// / 100 with u uniform in [0, 1) (counter RNG, stream factor_w: W (i, k) at
/// i K + k, H (k, d) at V K + k D + d; scikit-learn draws |N(0, 1)|, so the
/// small values differ from its). The result does not depend on the signs
/// the SVD chose.
template <class ExecutionSpace, class Matrix, class T, class Mem>
void nndsvd_factors(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, const Options& options,
                    std::int64_t V, std::int64_t D, double mean, DenseMatrix<T, Mem>& W, DenseMatrix<T, Mem>& Ht) {
  const int K = options.rank;
  DenseMatrix<T, Mem> U, Vs;
  std::vector<double> sigma;
  truncated_svd(exec, Arow, Acol, V, D, K, options.seed, U, Vs, sigma);
  const auto nu = signed_column_norms2(exec, U), nv = signed_column_norms2(exec, Vs);
  // Per column: the sign kept (0: absolute value) and the scales of W and H.
  std::vector<double> coef(std::size_t(K) * 3, 0.0);
  for (int k = 0; k < K; ++k) {
    if (k == 0) {
      coef[0] = 0.0;
      coef[1] = coef[2] = std::sqrt(sigma[0]);
      continue;
    }
    const double xp = std::sqrt(nu[2 * k]), xn = std::sqrt(nu[2 * k + 1]);
    const double yp = std::sqrt(nv[2 * k]), yn = std::sqrt(nv[2 * k + 1]);
    const double mp = xp * yp, mn = xn * yn;
    const bool pos = mp > mn;
    const double m = pos ? mp : mn, nx = pos ? xp : xn, ny = pos ? yp : yn;
    const double lbd = std::sqrt(sigma[k] * m);
    coef[3 * k] = pos ? 1.0 : -1.0;
    coef[3 * k + 1] = nx > 0.0 ? lbd / nx : 0.0;
    coef[3 * k + 2] = ny > 0.0 ? lbd / ny : 0.0;
  }
  const auto c = device_matrix<double, Mem>("nndsvd_coef", coef, K, 3);
  const int fill = options.init == Init::nndsvda ? 1 : options.init == Init::nndsvdar ? 2 : 0;
  const CounterRng rng(options.seed, RngStream::factor_w);
  const std::uint64_t uK = static_cast<std::uint64_t>(K), uD = static_cast<std::uint64_t>(D),
                      offset = static_cast<std::uint64_t>(V) * uK;
  nndsvd_fill(
      exec, W, U, c, 1, fill, mean, rng, KOKKOS_LAMBDA(std::uint64_t i, std::uint64_t k) { return i * uK + k; });
  nndsvd_fill(
      exec, Ht, Vs, c, 2, fill, mean, rng,
      KOKKOS_LAMBDA(std::uint64_t d, std::uint64_t k) { return offset + k * uD + d; });
}

/// The column sums of a row-major X in one pass over its rows (an array
/// reduction: each thread sums its rows' K values, the threads' sums joined
/// in a fixed order).
template <class XV>
struct ColumnSums {
  using value_type = double[];
  using size_type = std::size_t;
  size_type value_count;
  XV X;
  KOKKOS_INLINE_FUNCTION void init(double* sums) const {
    for (size_type k = 0; k < value_count; ++k) sums[k] = 0.0;
  }
  KOKKOS_INLINE_FUNCTION void join(double* dst, const double* src) const {
    for (size_type k = 0; k < value_count; ++k) dst[k] += src[k];
  }
  KOKKOS_INLINE_FUNCTION void operator()(std::size_t i, double* sums) const {
    for (size_type k = 0; k < value_count; ++k) sums[k] += double(X(i, k));
  }
};

/// K values for column_sums_host, not filled: the reduction writes them all
/// (a filled View costs a launch of the host pool).
inline Kokkos::View<double*, Kokkos::HostSpace> column_sums_buffer(std::size_t K) {
  return Kokkos::View<double*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::nmf::column_sums"), K);
}

/// The column sums of a row-major X into `sums` (K values) on a host.
template <class ExecutionSpace, class T, class Mem>
void column_sums_host(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& X,
                      const Kokkos::View<double*, Kokkos::HostSpace>& sums) {
  Kokkos::parallel_reduce("kfactor::nmf::column_sums", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, X.extent(0)),
                          ColumnSums<DenseMatrix<T, Mem>>{X.extent(1), X}, sums);
}

/// out(k) (every row r of out) = sum_i X(i, k): the denominator of the KL
/// rule over all entries, 1 X, without a dense product. On a host one pass
/// reads X row by row and one writes out row by row (a team per column reads
/// and writes with a stride of K, and took longer than an SpMM on a SNAP
/// graph). On a device a team per column sums it in a tree (an array
/// reduction of K values would hold K values per thread in shared memory).
template <class ExecutionSpace, class T, class Mem>
void column_sums_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& X, const DenseMatrix<T, Mem>& out) {
  if constexpr (SweepTraits<ExecutionSpace>::host) {
    const std::size_t K = X.extent(1);
    const auto sums = column_sums_buffer(K);
    column_sums_host(exec, X, sums);
    Kokkos::parallel_for("kfactor::nmf::column_sums_rows", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, out.extent(0)),
                         [=](int r) {
                           for (std::size_t k = 0; k < K; ++k) out(r, k) = T(sums(k));
                         });
    return;
  }
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  const int n = static_cast<int>(X.extent(0));
  const int rows = static_cast<int>(out.extent(0));
  Kokkos::parallel_for(
      "kfactor::nmf::column_sums", Policy(exec, X.extent(1), Kokkos::AUTO),
      KOKKOS_LAMBDA(const typename Policy::member_type& team) {
        const int k = team.league_rank();
        double s = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, n), [&](const int i, double& a) { a += double(X(i, k)); }, s);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](const int r) { out(r, k) = T(s); });
      });
}

/// The element-wise factors of the MU rule for the beta-divergence at one
/// entry with data a and model y (floored at eps): the numerator's a y^(beta-2)
/// and the denominator's y^(beta-1): (a, y) for beta = 2, (a / y, 1) for KL,
/// (a / y^2, 1 / y) for IS.
template <class T>
KOKKOS_INLINE_FUNCTION void beta_factors(int beta, T a, T y, T eps, T& num, T& den) {
  const T m = y > eps ? y : eps;
  if (beta == 2) {
    num = a;
    den = m;
  } else if (beta == 1) {
    num = a / m;
    den = T(1);
  } else {
    num = a / (m * m);
    den = T(1) / m;
  }
}

/// The beta-divergence of one entry (a, y), y floored at eps: 0.5 (a - y)^2,
/// a log(a / y) - a + y (y for a = 0), a / y - log(a / y) - 1.
KOKKOS_INLINE_FUNCTION double beta_divergence(int beta, double a, double y, double eps) {
  const double m = y > eps ? y : eps;
  if (beta == 2) return 0.5 * (a - y) * (a - y);
  if (beta == 1) return a > 0.0 ? a * Kokkos::log(a / m) - a + m : m;
  return a / m - Kokkos::log(a / m) - 1.0;
}

inline int beta_of(BetaLoss b) { return b == BetaLoss::frobenius ? 2 : b == BetaLoss::kl ? 1 : 0; }

/// The ALO update of one factor (Algs. 2/3) in place: X updated with the
/// scaled system Gs, Bs (scaled_system) in tiles of `tile` columns. N is a
/// K x K buffer; Acc and Tile (host spaces) hold at least X's rows x tile
/// values.
template <class ExecutionSpace, class XV, class BV, class GV, class BufV>
void alo_update(const ExecutionSpace& exec, const XV& X, const BV& Bs, const GV& Gs, const XV& N, const BufV& Acc,
                const BufV& Tile, int tile, typename XV::non_const_value_type eps) {
  using T = typename XV::non_const_value_type;
  using Buffer = Kokkos::View<T**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space,
                              Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Kokkos::ALL;
  using Kokkos::make_pair;
  const int K = static_cast<int>(Gs.extent(0));
  const int n = static_cast<int>(X.extent(0));
  const int ntiles = (K + tile - 1) / tile;
  // On a host one launch computes the tile's product and sweeps it
  // (tile_sweep_host); on a device the GEMM, then row_sweep.
  alo_tile_matrix(exec, Gs, tile, N);
  for (int tau = 0; tau < ntiles; ++tau) {
    const int t0 = tau * tile, t1 = std::min(K, t0 + tile), w = t1 - t0;
    // Phases 1 and 3 of the tile: X N[:, tile], the columns outside it (new
    // before it, old after it) with alpha = -1 inside N; then phase 2, the
    // in-tile sweep.
    if constexpr (SweepTraits<ExecutionSpace>::host) {
      const Buffer Xt(Tile.data(), w, n), At(Acc.data(), w, n);
      tile_sweep_host(exec, X, Bs, Base::accumulated, N, Xt, At, Gs, t0, eps, 0.0, 0.0);
    } else {
      const Buffer Ar(Acc.data(), n, w);
      gemm(exec, Trans::none, Trans::none, T(1), X, Kokkos::subview(N, ALL, make_pair(t0, t1)), T(0), Ar);
      row_sweep(exec, X, Ar, Base::accumulated, Bs, Gs, t0, t1, eps);
    }
  }
}

/// The update of a factor X in place (Frobenius loss, all of A observed):
/// for hals and alo one coordinate-descent update with Gram G, right-hand
/// side B and the penalties l1, l2 (scaled_system's rule), for mu the
/// multiplicative rule with the same; and what follows it (SweepOutputs, in
/// `out`): the Gram of the new X and the error's dot products. HALS and MU
/// on a host are ONE launch (tile_sweep_host on the tile [0, K), which also
/// sums the Gram); otherwise scaled_system (the scaled right-hand side into
/// Bs, X's shape), alo_update or row_sweep, or MU's product X G (into Bs)
/// and mu_update, then kfactor::gram and frobenius_dot. With a RowProduct `prod`, B = prod.A prod.F is computed
/// here first (in the sweep's launch on a host).
template <class ExecutionSpace, class T, class Mem, class Prod = NoProduct>
void cd_update(const ExecutionSpace& exec, Algorithm algorithm, const DenseMatrix<T, Mem>& X,
               const DenseMatrix<T, Mem>& B, const DenseMatrix<T, Mem>& Bs, const DenseMatrix<T, Mem>& G, double l1,
               double l2, Workspace<T, Mem>& ws, int tile, T eps, const SweepOutputs<T, Mem>& out,
               const Prod& prod = {}) {
  using Buffer = Kokkos::View<T**, Kokkos::LayoutRight, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const int K = static_cast<int>(G.extent(0));
  const int n = static_cast<int>(X.extent(0));
  if constexpr (SweepTraits<ExecutionSpace>::host) {
    if (host_sweeps_whole(algorithm, K, tile, true)) {
      const bool mu = algorithm == Algorithm::mu;
      // MU reads neither buffer (tile_sweep_host), only their shape.
      const Buffer Xt(mu ? nullptr : ws.Tile.data(), K, n), At(mu ? nullptr : ws.Acc.data(), K, n);
      tile_sweep_host(exec, X, B, mu ? Base::multiplicative : Base::old_value, G, Xt, At, G, 0, eps, l1, l2, out, prod);
      return;
    }
  }
  if constexpr (!std::is_same_v<Prod, NoProduct>) product_AX(exec, prod.A, prod.F, B);
  if (algorithm == Algorithm::mu) {
    gemm(exec, Trans::none, Trans::none, T(1), X, G, T(0), Bs);
    mu_update(exec, X, B, Bs, eps, l1, l2);
  } else {
    scaled_system(exec, G, B, l1, l2, ws.Gs, Bs);
    if (algorithm == Algorithm::alo)
      alo_update(exec, X, Bs, ws.Gs, ws.N, ws.Acc, ws.Tile, tile, eps);
    else
      row_sweep(exec, X, X, Base::old_value, Bs, ws.Gs, 0, K, eps);
  }
  if (out.gram.extent(0) > 0) kfactor::gram(exec, X, out.gram);
  if (out.dot_with.extent(0) > 0) frobenius_dot(exec, X, out.dot_with, Kokkos::View<double, Mem>(out.scal.data()));
  if (out.gram_with.extent(0) > 0)
    frobenius_dot(exec, out.gram, out.gram_with, Kokkos::View<double, Mem>(out.scal.data() + 1));
}

/// ||A - W H||^2 pieces from P = A Ht, Q = Ht^T Ht, S = W^T W into ws.scal.
template <class ExecutionSpace, class T, class Mem>
void error_pieces(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& W, Workspace<T, Mem>& ws) {
  frobenius_dot(exec, W, ws.P, Kokkos::View<double, Mem>(ws.scal.data()));
  frobenius_dot(exec, ws.S, ws.Q, Kokkos::View<double, Mem>(ws.scal.data() + 1));
  ws.direct_error = false;
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
  if constexpr (!std::is_same_v<Comm, SingleProcess>) check_distributed_options(options);
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
  // S_iteration stays unset: the first epoch forms S the way every other
  // state's S is formed (w_gram).
}

/// Values of one entry per stored nonzero, (re)allocated to n entries.
template <class T, class Mem>
void ensure_values(Kokkos::View<T*, Mem>& v, std::size_t n, const char* name) {
  if (v.extent(0) == n) return;
  try {
    v = Kokkos::View<T*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kfactor::nmf::") + name), n);
  } catch (const std::exception& e) {
    throw OutOfMemory(std::string("nmf: cannot allocate ") + name + " (" + std::to_string(n) + " values): " + e.what());
  }
}

/// y = the model W Ht^T at every stored entry of the CSR `pattern` (rows of
/// L, columns of R), by the SDDMM plan of the pattern kept in `ws`.
template <class ExecutionSpace, class T, class Mem>
void model_on_pattern(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& pattern, const DenseMatrix<T, Mem>& L,
                      const DenseMatrix<T, Mem>& R, Kokkos::View<T*, Mem>& y, Workspace<T, Mem>& ws) {
  ensure_values(y, pattern.nnz(), "model_values");
  if (pattern.nnz() > 0) ws.sddmm_plans->get(exec, pattern, int(L.extent(1)))(exec, L, R, y, false);
}

/// One beta-loss MU half of a sparse A on a host, in one launch: for each
/// row i of X, the model on its stored entries from the old row
/// (y_e = X_i . F_j), the element-wise factors (beta_factors), the numerator
/// num_i = sum_e n_e F_j and, with a pattern denominator, den_i =
/// sum_e d_e F_j, accumulated in the rows of num and den, then the row's MU
/// update (mu_entry); each model value is the host SDDMM's dot
/// (sddmm_host_dots). Without a pattern denominator (KL with
/// absent entries read as zeros) den is F's column sums, `colsum`. Rows are
/// independent, so this is the SDDMM, factors, SpMM and update sequence of
/// elementwise_half with each row's work kept in cache: as separate
/// launches, each of which wakes the pool's threads, a KL iteration on
/// p2p-Gnutella08 at K = 16 took longer than scikit-learn's.
template <class ExecutionSpace, class T, class Mem>
void elementwise_rows_host(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& pattern, const DenseMatrix<T, Mem>& X,
                           const DenseMatrix<T, Mem>& F, const DenseMatrix<T, Mem>& num, const DenseMatrix<T, Mem>& den,
                           const Kokkos::View<double*, Kokkos::HostSpace>& colsum, int beta, bool pattern_den, T eps,
                           double l1, double l2, double gamma) {
  const int K = static_cast<int>(X.extent(1));
  const T tl1 = T(l1), tl2 = T(l2);
  const bool root = gamma != 1.0;
  Kokkos::parallel_for("kfactor::nmf::elementwise_rows",
                       Kokkos::RangePolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, X.extent(0)),
                       [=](int i) {
                         T* nu = &num(i, 0);
                         T* de = &den(i, 0);
                         for (int k = 0; k < K; ++k) nu[k] = T(0);
                         if (pattern_den)
                           for (int k = 0; k < K; ++k) de[k] = T(0);
                         const T* x = &X(i, 0);
                         for (auto e = pattern.row_map(i); e < pattern.row_map(i + 1); ++e) {
                           const T* f = &F(pattern.entries(e), 0);
                           const T* const fs[1] = {f};
                           T y[1];
                           kfactor::detail::sddmm_host_dots<T, 1, 32>(x, fs, K, y);
                           T n, d;
                           beta_factors(beta, T(pattern.values(e)), y[0], eps, n, d);
                           for (int k = 0; k < K; ++k) nu[k] += n * f[k];
                           if (pattern_den)
                             for (int k = 0; k < K; ++k) de[k] += d * f[k];
                         }
                         T* xw = &X(i, 0);
                         for (int k = 0; k < K; ++k)
                           xw[k] = mu_entry(xw[k], nu[k], pattern_den ? de[k] : T(colsum(k)), tl1, tl2, eps, root);
                       });
}

/// Twice the divergence `div` into ws.scal[0] (the squared-error slot) and 0
/// into its Gram slot.
template <class ExecutionSpace, class T, class Mem>
void store_divergence(const ExecutionSpace& exec, Workspace<T, Mem>& ws, double div) {
  Kokkos::deep_copy(exec, Kokkos::subview(ws.scal, 0), 2.0 * div);
  Kokkos::deep_copy(exec, Kokkos::subview(ws.scal, 1), 0.0);
  ws.direct_error = true;
}

/// divergence_error's sum on a sparse A on a host: the model on each stored
/// entry (the host SDDMM's dot) in the same pass as its divergence
/// (elementwise_rows_host's reason), and with `zeros` (KL, unstored entries
/// read as zeros) their closed form from the factors' column sums.
template <class ExecutionSpace, class T, class Mem>
double divergence_rows_host(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& Arow, const DenseMatrix<T, Mem>& W,
                            const DenseMatrix<T, Mem>& Ht, int beta, bool zeros, double eps) {
  const bool zeros_kl = beta == 1 && zeros;
  const int K = static_cast<int>(W.extent(1));
  double div = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::nmf::divergence", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, Arow.num_rows()),
      [=](int i, double& acc) {
        const T* w = &W(i, 0);
        for (auto e = Arow.row_map(i); e < Arow.row_map(i + 1); ++e) {
          const T* const h[1] = {&Ht(Arow.entries(e), 0)};
          T y[1];
          kfactor::detail::sddmm_host_dots<T, 1, 32>(w, h, K, y);
          acc += beta_divergence(beta, double(Arow.values(e)), double(y[0]), eps) - (zeros_kl ? double(y[0]) : 0.0);
        }
      },
      div);
  if (zeros_kl) {
    const auto cw = column_sums_buffer(K), ch = column_sums_buffer(K);
    column_sums_host(exec, W, cw);
    column_sums_host(exec, Ht, ch);
    for (int k = 0; k < K; ++k) div += cw(k) * ch(k);
  }
  return div;
}

/// The squared error of the element-wise and masked rules into ws.scal[0]:
/// twice the beta-divergence of A from W H over the stored entries
/// (sparse, missing absent), over all entries (dense), or over the stored
/// entries plus the closed form of the zeros (sparse, missing zero: the KL
/// divergence of a zero is the model itself, sum(WH) - sum over the stored
/// entries, with sum(WH) = sum_k (1 W)_k (1 Ht)_k from column sums; IS needs
/// every entry stored, Frobenius takes the cheap formula).
template <class ExecutionSpace, class Matrix, class T, class Mem>
void divergence_error(const ExecutionSpace& exec, const Matrix& Arow, const Options& options,
                      const DenseMatrix<T, Mem>& W, const DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws) {
  const int beta = beta_of(options.beta_loss);
  const double eps = double(resolve_epsilon<T>(options));
  if constexpr (MatrixTraits<Matrix>::sparse && SweepTraits<ExecutionSpace>::host) {
    store_divergence(exec, ws, divergence_rows_host(exec, Arow, W, Ht, beta, options.missing == Missing::zero, eps));
    return;
  }
  double div = 0.0;
  if constexpr (MatrixTraits<Matrix>::sparse) {
    model_on_pattern(exec, Arow, W, Ht, ws.ev1, ws);
    const bool zeros_kl = beta == 1 && options.missing == Missing::zero;
    const auto a = Arow.values;
    const auto y = ws.ev1;
    Kokkos::parallel_reduce(
        "kfactor::nmf::divergence", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, a.extent(0)),
        KOKKOS_LAMBDA(std::size_t e, double& acc) {
          acc += beta_divergence(beta, double(a(e)), double(y(e)), eps) - (zeros_kl ? double(y(e)) : 0.0);
        },
        div);
    if (zeros_kl) {
      auto cw = alloc<T, Mem>("colsum_w", 1, W.extent(1));
      auto ch = alloc<T, Mem>("colsum_h", 1, Ht.extent(1));
      column_sums_rows(exec, W, cw);
      column_sums_rows(exec, Ht, ch);
      const auto hw = host_values(cw), hh = host_values(ch);
      for (std::size_t k = 0; k < hw.size(); ++k) div += hw[k] * hh[k];
    }
  } else {
    if (ws.E1.extent(0) != Arow.extent(0)) ws.E1 = alloc<T, Mem>("model", Arow.extent(0), Arow.extent(1));
    gemm(exec, Trans::none, Trans::transpose, T(1), W, Ht, T(0), ws.E1);
    const auto y = ws.E1;
    Kokkos::parallel_reduce(
        "kfactor::nmf::divergence_dense", row_major_policy(exec, Arow.extent(0), Arow.extent(1)),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j, double& acc) {
          acc += beta_divergence(beta, double(Arow(i, j)), double(y(i, j)), eps);
        },
        div);
  }
  store_divergence(exec, ws, div);
}

/// One MU half for a beta loss or masked data: X (n x K, the factor
/// updated) against the fixed factor F, with `pattern` the CSR whose rows
/// are X's (A for W, A^T for Ht) or the dense A (X = W) / A (X = Ht, then
/// transposed products). num = E_num F and den = E_den F from the
/// element-wise factors of beta_factors on the model's entries (sddmm on the
/// stored entries; a dense model W Ht^T on a dense A); the KL denominator
/// over all entries is the column sums of F (column_sums_rows). Then
/// mu_update with the penalties and scikit-learn's exponent.
template <class ExecutionSpace, class Matrix, class T, class Mem>
void elementwise_half(const ExecutionSpace& exec, const Matrix& pattern, bool x_is_w, const Options& options,
                      const DenseMatrix<T, Mem>& X, const DenseMatrix<T, Mem>& F, const DenseMatrix<T, Mem>& num,
                      const DenseMatrix<T, Mem>& den, Workspace<T, Mem>& ws, double l1, double l2) {
  const int beta = beta_of(options.beta_loss);
  const T eps = resolve_epsilon<T>(options);
  constexpr bool sparse = MatrixTraits<Matrix>::sparse;
  const bool pattern_den = beta != 1 || (sparse && options.missing == Missing::absent);
  if constexpr (sparse && SweepTraits<ExecutionSpace>::host) {
    Kokkos::View<double*, Kokkos::HostSpace> colsum;
    if (!pattern_den) {
      colsum = column_sums_buffer(F.extent(1));
      column_sums_host(exec, F, colsum);
    }
    elementwise_rows_host(exec, pattern, X, F, num, den, colsum, beta, pattern_den, eps, l1, l2, beta == 0 ? 0.5 : 1.0);
    return;
  }
  if constexpr (sparse) {
    model_on_pattern(exec, pattern, X, F, ws.ev1, ws);
    ensure_values(ws.ev2, pattern.nnz(), "den_values");
    const auto a = pattern.values;
    const auto y = ws.ev1, d = ws.ev2;
    Kokkos::parallel_for(
        "kfactor::nmf::beta_factors", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, a.extent(0)),
        KOKKOS_LAMBDA(std::size_t e) {
          T n, dd;
          beta_factors(beta, T(a(e)), T(y(e)), eps, n, dd);
          y(e) = n;
          d(e) = dd;
        });
    spmm(exec, T(1), CsrMatrix<T, Mem>(pattern.row_map, pattern.entries, ws.ev1, pattern.num_cols), F, T(0), num);
    if (pattern_den)
      spmm(exec, T(1), CsrMatrix<T, Mem>(pattern.row_map, pattern.entries, ws.ev2, pattern.num_cols), F, T(0), den);
  } else {
    const std::size_t V = pattern.extent(0), D = pattern.extent(1);
    if (ws.E1.extent(0) != V) ws.E1 = alloc<T, Mem>("model", V, D);
    if (ws.E2.extent(0) != V) ws.E2 = alloc<T, Mem>("model_den", V, D);
    const auto y = ws.E1, d = ws.E2;
    if (x_is_w)
      gemm(exec, Trans::none, Trans::transpose, T(1), X, F, T(0), y);
    else
      gemm(exec, Trans::none, Trans::transpose, T(1), F, X, T(0), y);
    Kokkos::parallel_for(
        "kfactor::nmf::beta_factors_dense", row_major_policy(exec, V, D), KOKKOS_LAMBDA(std::size_t i, std::size_t j) {
          T n, dd;
          beta_factors(beta, T(pattern(i, j)), T(y(i, j)), eps, n, dd);
          y(i, j) = n;
          d(i, j) = dd;
        });
    const Trans t = x_is_w ? Trans::none : Trans::transpose;
    gemm(exec, t, Trans::none, T(1), y, F, T(0), num);
    if (pattern_den) gemm(exec, t, Trans::none, T(1), d, F, T(0), den);
  }
  if (!pattern_den) column_sums_rows(exec, F, den);
  mu_update(exec, X, num, den, eps, l1, l2, beta == 0 ? 0.5 : 1.0);
}

/// residual(e) = a(e) - residual(e) (the model on entry).
template <class ExecutionSpace, class AV, class RV>
void residual_of(const ExecutionSpace& exec, const AV& a, const RV& res) {
  Kokkos::parallel_for(
      "kfactor::nmf::residual", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, a.extent(0)),
      KOKKOS_LAMBDA(std::size_t e) { res(e) = a(e) - res(e); });
}

/// One epoch of the rules beside the file comment's (Options::beta_loss,
/// missing absent), then the error: masked hals/alo H then W, mu W then H
/// (W skipped with fix_w).
/// Masked hals/alo: for each factor the residual on the stored entries
/// (sddmm) and masked_cd_rows; mu: elementwise_half.
template <class ExecutionSpace, class Matrix, class T, class Mem>
void other_epoch(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, const Options& options,
                 DenseMatrix<T, Mem>& W, DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, int iteration) {
  constexpr bool sparse = MatrixTraits<Matrix>::sparse;
  const Penalties pen = penalties(options, W.extent(0), Ht.extent(0));
  if (masked_rules(options, sparse)) {
    if constexpr (sparse) {
      const T eps = resolve_epsilon<T>(options);
      model_on_pattern(exec, Acol, Ht, W, ws.ev2, ws);
      residual_of(exec, Acol.values, ws.ev2);
      masked_cd_rows(exec, Acol.row_map, Acol.entries, Ht, W, ws.ev2, eps, pen.l1_h, pen.l2_h);
      if (!options.fix_w) {
        model_on_pattern(exec, Arow, W, Ht, ws.ev1, ws);
        residual_of(exec, Arow.values, ws.ev1);
        masked_cd_rows(exec, Arow.row_map, Arow.entries, W, Ht, ws.ev1, eps, pen.l1_w, pen.l2_w);
      }
    }
  } else {
    // W then H, scikit-learn's order: from the same start the order of the
    // halves decides where a few dozen KL updates end, and H first ended
    // measurably above scikit-learn's divergence on sparse graphs.
    if (!options.fix_w) elementwise_half(exec, Arow, true, options, W, Ht, ws.P, ws.Wbuf, ws, pen.l1_w, pen.l2_w);
    elementwise_half(exec, Acol, false, options, Ht, W, ws.R, ws.Hbuf, ws, pen.l1_h, pen.l2_h);
  }
  divergence_error(exec, Arow, options, W, Ht, ws);
  ws.S_iteration = -1;
  ws.error_iteration = iteration + 1;
}

/// Whether HALS or MU runs on a host with one process: its sweeps then compute
/// a product of rows of A in their own launch (tile_sweep_host's
/// RowProduct: R from the stored A^T of a CSR input, P always). With
/// processes the policy gathers the factors for its products.
template <class ExecutionSpace, class Comm>
bool fuses_products(const Options& o, const Comm& comm) {
  return host_sweeps_whole(o, SweepTraits<ExecutionSpace>::host) && comm.one_process();
}

/// S = W^T W (summed over processes) where no sweep produced it: a fresh or
/// restored state, or a fixed W. HALS and MU on a host sum S in their W sweep, so
/// here it takes the sweep's arithmetic (host_gram with the W half's rows
/// per thread): a continued run equals an uninterrupted one bit for bit.
/// Elsewhere kfactor::gram, which the sweeps' updates also call.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void w_gram(const ExecutionSpace& exec, const Matrix& Arow, const Options& options, const DenseMatrix<T, Mem>& W,
            const DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, const Comm& comm) {
  if constexpr (SweepTraits<ExecutionSpace>::host) {
    if (host_sweeps_whole(options, true)) {
      if (fuses_products<ExecutionSpace>(options, comm) && !options.fix_w)
        host_gram(exec, W, ws.partials, ws.S, RowProduct<Matrix, DenseMatrix<T, Mem>>{Arow, Ht});
      else
        host_gram(exec, W, ws.partials, ws.S);
      comm.sum(exec, ws.S);
      return;
    }
  }
  kfactor::gram(exec, W, ws.S);
  comm.sum(exec, ws.S);
}

/// One epoch (H then W) on this process's blocks; `iteration` is the state's.
/// Communication per epoch (distributed policy): the two products (which
/// gather W and Ht, and in a grid layout also sum partial products), sum S
/// and Q (K x K) and the error scalar <W, P>. A beta loss or masked data take
/// other_epoch (one process only: check_distributed_options).
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void epoch(const ExecutionSpace& exec, const Matrix& Arow, const Matrix& Acol, const Options& options,
           DenseMatrix<T, Mem>& W, DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, int iteration, const Comm& comm) {
  constexpr bool sparse = MatrixTraits<Matrix>::sparse;
  if (masked_rules(options, sparse) || elementwise_rules(options, sparse)) {
    other_epoch(exec, Arow, Acol, options, W, Ht, ws, iteration);
    return;
  }
  const T eps = resolve_epsilon<T>(options);
  const bool timed = options.timing_breakdown;
  const Penalties pen = penalties(options, W.extent(0), Ht.extent(0));
  const int tile = resolve_tile(options.rank, options.tile, SweepTraits<ExecutionSpace>::host);
  // <S, Q> is summed with the new S where S is whole: on one process.
  const bool error_in_update = comm.one_process() && !options.fix_w;
  const bool fuse = fuses_products<ExecutionSpace>(options, comm);
  Stopwatch sw;
  sw.start(exec, timed);

  // ---- H half: R = A^T W, S = W^T W (cached from the previous epoch); then Q = Ht^T Ht ----
  if (ws.S_iteration != iteration) w_gram(exec, Arow, options, W, Ht, ws, comm);
  const SweepOutputs<T, Mem> h_out{.gram = ws.Q, .partials = ws.partials};
  if (fuse && sparse) {
    cd_update(exec, options.algorithm, Ht, ws.R, ws.Hbuf, ws.S, pen.l1_h, pen.l2_h, ws, tile, eps, h_out,
              RowProduct<Matrix, DenseMatrix<T, Mem>>{Acol, W});
  } else {
    comm.product_AtW(exec, Acol, W, ws.R);
    sw.lap(exec, timed, ws.t_products);
    cd_update(exec, options.algorithm, Ht, ws.R, ws.Hbuf, ws.S, pen.l1_h, pen.l2_h, ws, tile, eps, h_out);
  }
  comm.sum(exec, ws.Q);
  sw.lap(exec, timed, ws.t_h);

  // ---- W half: P = A Ht; then S = W^T W (the next epoch's) and the error pieces ----
  const SweepOutputs<T, Mem> w_out{.gram = ws.S,
                                   .partials = ws.partials,
                                   .dot_with = ws.P,
                                   .gram_with = error_in_update ? ws.Q : DenseMatrix<T, Mem>{},
                                   .scal = ws.scal};
  if (fuse && !options.fix_w) {
    cd_update(exec, options.algorithm, W, ws.P, ws.Wbuf, ws.Q, pen.l1_w, pen.l2_w, ws, tile, eps, w_out,
              RowProduct<Matrix, DenseMatrix<T, Mem>>{Arow, Ht});
  } else {
    comm.product_AHt(exec, Arow, Ht, ws.P);
    sw.lap(exec, timed, ws.t_products);
    if (options.fix_w) {
      error_pieces(exec, W, ws);
    } else {
      cd_update(exec, options.algorithm, W, ws.P, ws.Wbuf, ws.Q, pen.l1_w, pen.l2_w, ws, tile, eps, w_out);
    }
  }
  sw.lap(exec, timed, ws.t_w);
  if (!options.fix_w) {
    comm.sum(exec, ws.S);
    if (!error_in_update) frobenius_dot(exec, ws.S, ws.Q, Kokkos::View<double, Mem>(ws.scal.data() + 1));
  }
  comm.sum(exec, Kokkos::subview(ws.scal, Kokkos::make_pair(0, 1)));
  sw.lap(exec, timed, ws.t_products);
  ws.direct_error = false;
  ws.S_iteration = iteration + 1;
  ws.error_iteration = iteration + 1;
}

/// The error pieces of a fresh or restored state (no-op when the last epoch
/// left them): P = A Ht, Q, S and <W, P>, or divergence_error.
template <class ExecutionSpace, class Matrix, class T, class Mem, class Comm>
void error_products(const ExecutionSpace& exec, const Matrix& Arow, const Options& options,
                    const DenseMatrix<T, Mem>& W, const DenseMatrix<T, Mem>& Ht, Workspace<T, Mem>& ws, int iteration,
                    const Comm& comm) {
  if (ws.error_iteration == iteration) return;
  constexpr bool sparse = MatrixTraits<Matrix>::sparse;
  if (masked_rules(options, sparse) || elementwise_rules(options, sparse)) {
    divergence_error(exec, Arow, options, W, Ht, ws);
    ws.error_iteration = iteration;
    return;
  }
  comm.product_AHt(exec, Arow, Ht, ws.P);
  kfactor::gram(exec, Ht, ws.Q);
  comm.sum(exec, ws.Q);
  w_gram(exec, Arow, options, W, Ht, ws, comm);
  error_pieces(exec, W, ws);
  comm.sum(exec, Kokkos::subview(ws.scal, Kokkos::make_pair(0, 1)));
  ws.S_iteration = iteration;
  ws.error_iteration = iteration;
}

/// relative_error (sqrt(2 D) / ||A||_F for the beta-divergence D: scikit-
/// learn's reconstruction_err_ over ||A||_F, ||A - WH||_F / ||A||_F for
/// Frobenius), divergence (D, for kl and is) and, for hals and alo on the
/// whole A (gram_rules), min_column_norm: the smallest l2 norm of a column
/// of W, from the diagonal of S = W^T W (a collapsed column shows as about
/// eps sqrt(V)); from the workspace (host reads); normA2 = ||A||^2.
template <class T, class Mem>
Metrics metrics_of(const Options& options, const Workspace<T, Mem>& ws, double normA2, bool sparse) {
  auto scal = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.scal);
  const double err2 = ws.direct_error ? scal(0) : normA2 - 2.0 * scal(0) + scal(1);
  Metrics m;
  m.set("relative_error", std::sqrt(std::max(err2, 0.0) / normA2));
  if (options.beta_loss != BetaLoss::frobenius) m.set("divergence", 0.5 * scal(0));
  if (gram_rules(options, sparse)) {
    auto S = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ws.S);
    double mn = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < S.extent(0); ++k) mn = std::min(mn, double(S(k, k)));
    m.set("min_column_norm", std::sqrt(std::max(mn, 0.0)));
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
  if (options.algorithm == Algorithm::alo)
    r.info["tile"] = std::to_string(resolve_tile(options.rank, options.tile, SweepTraits<ExecutionSpace>::host));
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
  if constexpr (!std::is_same_v<Comm, SingleProcess>) check_distributed_options(options);
  if (static_cast<int>(state.W.extent(1)) != options.rank || static_cast<int>(state.Ht.extent(1)) != options.rank)
    throw UsageError("nmf: the state has rank " + std::to_string(state.W.extent(1)) + ", options.rank is " +
                     std::to_string(options.rank));
  const auto& ws = state.ws;
  if (!ws || ws->algorithm != options.algorithm || ws->rank != options.rank ||
      ws->tile !=
          resolve_tile(options.rank, options.tile, Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) ||
      ws->fix_w != options.fix_w)
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
  error_products(exec, Arow, options, state.W, state.Ht, ws, state.iteration, comm);
  return metrics_of(options, ws, normA2, MatrixTraits<Matrix>::sparse);
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
  detail::ValueStats v;
  if (p.rows > 0 && p.cols > 0) v = detail::value_stats(exec, A);
  detail::check_input(p.rows, p.cols, v.bad, v.norm2);
  p.norm2 = v.norm2;
  p.sum = v.sum;
  p.zeros = v.zeros;
  if constexpr (MatrixTraits<Matrix>::sparse) {
    try {
      p.At = kfactor::transpose(exec, A);
    } catch (const std::exception& e) {
      throw OutOfMemory("nmf: cannot store the transpose of A (nnz " + std::to_string(A.nnz()) + "): " + e.what());
    }
  }
  exec.fence();
  return p;
}

namespace detail {
/// InputError when the loss is undefined on this input: Itakura-Saito needs
/// every entry positive, so a zero (stored, or unstored with missing zero)
/// is refused.
template <class Matrix>
void check_loss_input(const Problem<Matrix>& p, const Options& o) {
  if (o.beta_loss != BetaLoss::is) return;
  const bool absent = Problem<Matrix>::sparse && o.missing == Missing::absent;
  const std::int64_t unstored = absent ? 0 : p.rows * p.cols - p.nnz;
  if (p.zeros > 0 || unstored > 0)
    throw InputError("nmf: beta_loss is (Itakura-Saito) is undefined for zero entries; the input has " +
                     std::to_string(p.zeros + unstored) +
                     " (use beta_loss kl or frobenius, or missing absent for a sparse input whose unstored entries "
                     "are unobserved)");
}
}  // namespace detail

template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init_with(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W0,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& Ht0) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using Mem = typename MatrixTraits<Matrix>::memory_space;
  options.validate();
  const std::int64_t V = problem.rows, D = problem.cols;
  // With W fixed each column of H is its own least-squares problem, so any
  // number of columns is fine (transform of one new sample included).
  if (!options.fix_w) detail::check_rank(options, V, D);
  const std::int64_t K = options.rank;
  if (static_cast<std::int64_t>(W0.extent(0)) != V || static_cast<std::int64_t>(W0.extent(1)) != K ||
      static_cast<std::int64_t>(Ht0.extent(0)) != D || static_cast<std::int64_t>(Ht0.extent(1)) != K)
    throw UsageError("nmf: starting factors " + std::to_string(W0.extent(0)) + " x " + std::to_string(W0.extent(1)) +
                     " and " + std::to_string(Ht0.extent(0)) + " x " + std::to_string(Ht0.extent(1)) +
                     " do not fit rank " + std::to_string(K) + " and a " + std::to_string(V) + " x " +
                     std::to_string(D) + " input");
  detail::check_loss_input(problem, options);
  State<T, Mem> s;
  s.ws = detail::allocate_workspace<T, Mem>(V, D, options);
  s.W = detail::alloc<T, Mem>("W", V, K);
  s.Ht = detail::alloc<T, Mem>("Ht", D, K);
  Kokkos::deep_copy(exec, s.W, W0);
  Kokkos::deep_copy(exec, s.Ht, Ht0);
  s.seed = options.seed;
  if (options.init == Init::custom || options.fix_w) {
    std::int64_t bad = 0;
    for (const auto* X : {&s.W, &s.Ht}) bad += detail::value_stats(exec, *X).bad;
    if (bad > 0)
      throw InputError("nmf: the starting factors have " + std::to_string(bad) +
                       " negative, NaN or infinite entries; they must be finite and non-negative");
  }
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
  detail::check_loss_input(problem, options);
  switch (options.init) {
    case Init::random:
      detail::initial_factors(exec, detail::column_operand(problem), options, s.W, s.Ht, 0, 0, D, problem.norm2, *s.ws,
                              detail::SingleProcess{});
      break;
    case Init::nndsvd:
    case Init::nndsvda:
    case Init::nndsvdar:
      detail::nndsvd_factors(exec, problem.A, detail::column_operand(problem), options, V, D,
                             problem.sum / (double(V) * double(D)), s.W, s.Ht);
      break;
    case Init::custom:
      throw UsageError("nmf: init custom takes the starting factors: call init_with (CLI: --w0 and --h0)");
  }
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
StateFor<Matrix> init_fixed_w(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using Mem = typename MatrixTraits<Matrix>::memory_space;
  if (!options.fix_w) throw UsageError("nmf: init_fixed_w needs options.fix_w");
  options.validate();
  // scikit-learn's start beside a fixed factor: every entry sqrt(mean(A) / K).
  auto Ht0 = detail::alloc<T, Mem>("Ht0", problem.cols, options.rank);
  Kokkos::deep_copy(exec, Ht0,
                    T(std::sqrt(problem.sum / (double(problem.rows) * double(problem.cols)) / options.rank)));
  return init_with(exec, problem, options, W, Ht0);
}

template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> transform(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W) {
  Options o = options;
  o.fix_w = true;
  return detail::init_then_resume<StateFor<Matrix>>(
      [&] { return init_fixed_w(exec, problem, o, W); },
      [&](StateFor<Matrix>& state) { return resume(exec, problem, o, state); });
}

template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> inverse_transform(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& W,
                                      const DenseMatrix<T, Mem>& Ht) {
  if (W.extent(1) != Ht.extent(1))
    throw UsageError("nmf: inverse_transform of factors of rank " + std::to_string(W.extent(1)) + " and " +
                     std::to_string(Ht.extent(1)));
  auto A = detail::alloc<T, Mem>("WH", W.extent(0), Ht.extent(0));
  gemm(exec, Trans::none, Trans::transpose, T(1), W, Ht, T(0), A);
  return A;
}

template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> solve(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
                               const Observer& observer) {
  return detail::init_then_resume<StateFor<Matrix>>(
      [&] { return init(exec, problem, options); },
      [&](StateFor<Matrix>& state) { return resume(exec, problem, options, state, observer); });
}

}  // namespace kfactor::nmf
