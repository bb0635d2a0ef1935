#pragma once
/// \file
/// Non-negative matrix factorisation A ~ W H (A: V x D, W: V x K, H: K x D,
/// all >= 0) by HALS (exact coordinate descent, scikit-learn's `cd`),
/// ALO-NMF (Moon et al., KDD'20) and Lee-Seung multiplicative updates, for dense (kfactor::DenseMatrix) and sparse
/// (kfactor::CsrMatrix) A, float and double, on any Kokkos execution space.
///
/// **Epoch**, for hals and alo: exact coordinate descent on H, then on W
/// (scikit-learn's `cd` rule, with H first):
/// ```
///   R = A^T W (D x K); S = W^T W           (S is cached from the previous epoch)
///   H_k <- max(eps, (R_k - sum_{j != k} H_j S_jk) / S_kk)   k = 0..K-1 (rows < k already new)
///   P = A H^T (V x K); Q = H H^T
///   W_k <- max(eps, (P_k - sum_{j != k} W_j Q_jk) / Q_kk)
///   S' = W^T W (next epoch's S); error from P, Q, S' (below)
/// ```
/// (the paper's Alg. 1 is FAST-HALS, whose W rule normalises each column
/// after its update without rescaling H: that step raises the objective, and
/// from scikit-learn's start it ended 0.8% above scikit-learn's error on a
/// dense 2000 x 1000 input at K = 64 after 50 epochs, where this rule is
/// within 0.2%). Each column update is the exact minimiser of the objective
/// in that column, so the error never rises and a rescaling of W's columns
/// (H's rows inversely) leaves every later W H unchanged. Penalties enter the
/// same rule (scaled_system).
/// `alo` performs the same operations reordered by tiles of T columns
/// (Algs. 2/3), in place: for each tile, the contributions of every column
/// outside it are subtracted by ONE kfactor::gemm, Acc = X N[:, tile] (N holds
/// -G off the tile, so alpha = -1: the paper's "=" is wrong, phases subtract
/// and accumulate). The columns before the tile are already new, so this
/// product is phase 3 of the earlier tiles (pulled by each tile inside the
/// tile loop instead of pushed after each one: the same sums) together with
/// phase 1 (the old columns after the tile); phase 2 is the in-tile sweep;
/// the last tile is clamped to K. 2 V K^2 flops per factor in GEMMs of depth
/// K, the same count as HALS' column loop but at GEMM speed. H and W use the
/// same scheme. One epoch of alo equals one of hals up to rounding.
/// `mu`: H <- H * (W^T A) / (W^T W H + eps), W <- W * (A H^T) / (W H H^T + eps)
/// (no normalisation; never 0/0).
///
/// **Storage.** W is V x K row-major (DenseMatrix). H is kept as Ht = H^T,
/// D x K row-major (the same memory as H, K x D, in LayoutLeft): the H update
/// is a per-row sweep (each column of H, a row of Ht, is independent), which
/// wants a contiguous row of K values per document, exactly like W's rows.
///
/// **Sparse A.** P = A Ht is kfactor::spmm on A; R = A^T W is kfactor::spmm
/// on A^T stored once at init (kfactor::transpose): a transposed SpMM would
/// scatter into R (atomics on a GPU, order-dependent sums); the stored copy
/// costs nnz values and indices once and makes both products row-parallel
/// gathers, deterministic and equally fast.
///
/// **Initialisation.** W0(i,k) ~ U[0,1) (CounterRng stream factor_w), then
/// every column scaled to unit l2 norm. H0 = alpha U, U(k,d) ~ U[0,1) (stream
/// factor_h), with alpha = <A, W0 U> / ||W0 U||_F^2, the least-squares scale
/// of the model W0 U (so the start has relative error < 1; scaling so that
/// ||W0 H0|| = ||A|| instead overshoots on sparse graphs, collapses columns in
/// epoch 1 and ends in worse local minima than scikit-learn). H0 scales with
/// A, so A -> cA gives H0 -> cH0 and the same W iterates.
///
/// **Relative error** ||A - WH||_F / ||A||_F is computed every epoch from the
/// products the epoch already has: ||A-WH||^2 = ||A||^2 - 2<W, P> + <W^T W, Q>
/// with P, Q of the W half and W^T W = the next epoch's S (O(VK + K^2) extra,
/// accumulated in double). It cancels: with float factors it is inexact below
/// about 1e-3 (P and Q carry float rounding); in double it matches the
/// explicit error to ~1e-10 (tests/nmf).
///
/// **Tile size** (alo): Options::tile, else on a host with K <=
/// host_one_tile_max_rank K (one tile: ALO is then HALS's one-launch sweep;
/// there a tile's launch costs more than its GEMM saves: 2 threads,
/// p2p-Gnutella08 at K = 16 2.5x faster than tiles of 4, a 26214 x 11314
/// CSR with 1M nonzeros at K = 64 1.2x faster than tiles of 8, and at
/// K = 128 1.5x slower than tiles of 16), else default_tile(K): the paper's
/// 8/16/16/32/64 for K = 64/128/256/512/1024; for other K the power of two
/// nearest (in log scale) to the section-5 model T = sqrt(K sqrt(C)/(sqrt(C)-2))
/// with C = 33 (alo_tile_model). C = 33 is the paper's "33 MB cache" used as a
/// bare number: it is the only reading that reproduces the paper's T = 19.82
/// at K = 256 and its data-movement counts (C in 8-byte words gives T ~ sqrt K;
/// C = 4, the P100 L2 in MB, divides by zero). Both readings round to the same
/// powers of two for K = 64..512, so the choice only matters between them.
///
/// **Kernels** (detail/sweep.hpp): the rows of a factor are independent in
/// a half step, so on a device HALS is one launch per half step (row_sweep)
/// and ALO one GEMM and one launch per tile. On a host, where each launch
/// wakes the thread pool, a HALS half step is ONE launch (tile_sweep_host):
/// each thread computes its rows of the product (a CSR's rows, or the dense
/// A Ht; the dense A^T W streams A once in kfactor::gemm_skinny before it),
/// sweeps them, and sums their share of the new factor's Gram and of the
/// error's dot products; an MU half step likewise (mu_row per row). An ALO
/// tile is one launch, its product included.
/// No host synchronisation inside an epoch except what the vendor GEMM
/// needs.
///
/// **The solver contract** (core/solver.hpp, checked by kfactor::Solver):
/// make_problem(exec, A) validates A once and keeps what every epoch reads
/// (A, the stored A^T of a CSR input, ||A||^2); init(exec, problem, options)
/// draws the start; step/evaluate run one epoch and its metrics; resume runs
/// the loop of core/solver.hpp on a state and returns the Report; solve is
/// init then resume and returns kfactor::Result<State>.
///
/// **Distributed runs** (kfactor/distributed/nmf.hpp) use the same code:
/// init/step/evaluate/resume are detail::initial_factors / step_on /
/// evaluate_on / resume_on on one process's blocks with a communication
/// policy; here it is detail::SingleProcess (sums are identities, the
/// products R = A^T W and P = A Ht the plain ones), there an MPI one (Gram,
/// norm and error sums all-reduced; per half step W or Ht all-gathered and,
/// on a 2D grid, the partial products reduce-scattered). No MPI in this
/// header.

#include <kfactor/core/contract.hpp>
#include <kfactor/core/detail/eti.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace kfactor::nmf {

enum class Algorithm { hals, alo, mu };

/// "hals" | "alo" | "mu"; throws UsageError otherwise.
Algorithm parse_algorithm(const std::string& name);
const char* to_string(Algorithm a);

/// The start (Options::init; scikit-learn's `init`): random (the file
/// comment), nndsvd / nndsvda / nndsvdar (Boutsidis and Gallopoulos' NNDSVD
/// from a randomized rank-K SVD, as sklearn.decomposition._initialize_nmf;
/// nndsvda fills the zeros with mean(A), nndsvdar with small random values),
/// or custom (given factors: init_with).
enum class Init { random, nndsvd, nndsvda, nndsvdar, custom };
/// "random" | "nndsvd" | "nndsvda" | "nndsvdar" | "custom"; UsageError otherwise.
Init parse_init(const std::string& name);
const char* to_string(Init i);

/// The loss (Options::beta_loss; scikit-learn's `beta_loss`): the
/// beta-divergence for beta = 2 (frobenius, 0.5 ||A - WH||_F^2), 1 (kl,
/// generalized Kullback-Leibler) or 0 (is, Itakura-Saito). kl and is need
/// Algorithm::mu.
enum class BetaLoss { frobenius, kl, is };
/// "frobenius" | "kl" | "is"; UsageError otherwise.
BetaLoss parse_beta_loss(const std::string& name);
const char* to_string(BetaLoss b);

/// What the entries of a sparse A that are not stored mean (Options::missing):
/// zero (the matrix's zeros, the default) or absent (unobserved: the loss is
/// over the stored entries only). scikit-learn has no such option (it
/// treats unstored entries as zeros).
enum class Missing { zero, absent };
/// "zero" | "absent"; UsageError otherwise.
Missing parse_missing(const std::string& name);
const char* to_string(Missing m);

/// Section-5 model, eq. 11: T = sqrt(K sqrt(C) / (sqrt(C) - 2)); UsageError for C <= 4.
double alo_tile_model(int K, double cache_elements = 33.0);
/// Default tile: 8/16/16/32/64 for K = 64/128/256/512/1024, else the power of
/// two nearest alo_tile_model(K, 33), clamped to [1, K].
int default_tile(int K);
/// Largest K at which a host's automatic ALO tile is all K columns.
inline constexpr int host_one_tile_max_rank = 64;
/// Options::tile resolved for rank K on a host (host = true) or a device
/// space: 0 -> K on a host up to host_one_tile_max_rank, else
/// default_tile(K); clamped to [1, K].
int resolve_tile(int K, int tile, bool host);
/// Data movement of Alg. 1's W loop, K (VK + K + 6V + 1) elements (digest: 775,015,680 for PIE, K=256).
double hals_w_data_movement(double V, double K);
/// Eq. 9: V (1/T + 2/sqrt(C)) (K^2 - KT) + KVT elements.
double alo_w_data_movement(double V, double K, double T, double C = 33.0);

/// Largest Options::rank. The K x K Grams and ALO's K x K tile matrix are
/// dense: at K = 2^20 each would take 8 TiB in double, beyond any machine, so
/// a larger K is a typo rather than a run. Below it, a K that does not fit
/// the memory is an allocation failure naming the sizes (OutOfMemory),
/// and K > min(V, D) a UsageError from init.
inline constexpr int max_rank = 1 << 20;
/// Largest Options::epsilon. It is a floor (hals, alo) and a denominator
/// guard (mu), not a regulariser: a floor near the factors' typical
/// entries would pin most of them (for W with unit-norm columns, 1/sqrt(V):
/// 1e-3 for V = 10^6).
inline constexpr double max_epsilon = 1e-3;

/// The options of a run. Ranges (validate() throws UsageError naming the
/// field and its range): rank in rank_range; tile in tile_range and at most
/// rank; epsilon in epsilon_range (0: machine epsilon of the value type);
/// stop.max_iterations in StopRule::max_iterations_range (0: init only);
/// stop.tolerance in tolerance_range (the relative error never rises by
/// more than 100%, so 1 or more would stop after the second epoch);
/// stop.target in target_range or NaN (the relative error of the start is
/// below 1). Every seed is valid.
struct Options {
  static constexpr Range<int> rank_range{.lo = 1, .hi = max_rank};
  static constexpr Range<int> tile_range{.lo = 0, .hi = max_rank, .note = "0: the default tile; at most the rank"};
  static constexpr Range<double> epsilon_range{.lo = 0.0, .hi = max_epsilon, .note = "0: machine epsilon"};
  static constexpr Range<double> tolerance_range{.lo = 0.0, .hi = 1.0, .hi_open = true, .note = "0 disables the rule"};
  static constexpr Range<double> target_range{.lo = 0.0, .hi = 1.0};

  static constexpr Range<double> alpha_range{.lo = 0.0, .hi = 1e12, .note = "0: no penalty"};
  static constexpr Range<double> l1_ratio_range{.lo = 0.0, .hi = 1.0, .note = "0: l2 only, 1: l1 only"};

  Algorithm algorithm = Algorithm::alo;
  int rank = 10;         ///< K
  int tile = 0;          ///< ALO tile size T; 0 = automatic (resolve_tile)
  double epsilon = 0.0;  ///< floor of H and W (hals/alo), denominator guard (mu); 0 = machine epsilon of T
  std::uint64_t seed = 42;
  /// Epochs (max_iterations), relative change of the relative error
  /// (tolerance, 0: never) and a relative error to reach (target, NaN: none).
  StopRule stop;
  bool timing_breakdown = false;  ///< fence between phases and accumulate products/H/W times (benchmarks)
  Init init = Init::random;       ///< the start (init draws it; custom: init_with)
  /// Penalties, scikit-learn's alpha_W, alpha_H and l1_ratio with its scaling
  /// (A is V x D; V = n_samples, D = n_features): the objective is
  ///   L(A, WH) + alpha_w l1_ratio D |W|_1 + 0.5 alpha_w (1 - l1_ratio) D ||W||_F^2
  ///            + alpha_h l1_ratio V |H|_1 + 0.5 alpha_h (1 - l1_ratio) V ||H||_F^2
  /// with L the beta-divergence (0.5 ||A - WH||_F^2 for frobenius); hals and
  /// alo run scikit-learn's coordinate-descent rule with the penalty terms.
  double alpha_w = 0.0;
  double alpha_h = 0.0;  ///< scikit-learn's default alpha_H = "same" is alpha_h = alpha_w here
  double l1_ratio = 0.0;
  BetaLoss beta_loss = BetaLoss::frobenius;
  Missing missing = Missing::zero;
  /// Keep W as given (init_with) and update H only: transform(). W may
  /// have any column norms.
  bool fix_w = false;

  void validate() const;

  /// True when a penalty is set (see alpha_w).
  [[nodiscard]] bool penalized() const { return alpha_w > 0.0 || alpha_h > 0.0; }

  /// The options that decide the iterates (checkpoints compare them on
  /// restart): algorithm, rank, the ALO tile (alo only: hals and mu ignore
  /// it; 0, the space's default, is its own value), epsilon,
  /// seed, init, the penalties, beta_loss, missing and fix_w. Not the stop
  /// rule (a restart may run further) nor timing_breakdown (fences only).
  template <class F>
  void visit(F&& f) const {
    f("algorithm", algorithm);
    f("rank", rank);
    if (algorithm == Algorithm::alo) f("tile", tile);
    f("epsilon", epsilon);
    f("seed", seed);
    f("init", init);
    f("alpha_w", alpha_w);
    f("alpha_h", alpha_h);
    f("l1_ratio", l1_ratio);
    f("beta_loss", beta_loss);
    f("missing", missing);
    f("fix_w", fix_w);
  }
};

namespace detail {
template <class T, class MemorySpace>
struct Workspace;
}  // namespace detail

/// Value type, memory space and kind of an input matrix type.
template <class Matrix>
struct MatrixTraits;
template <class T, class MemorySpace>
struct MatrixTraits<CsrMatrix<T, MemorySpace>> {
  using value_type = T;
  using memory_space = MemorySpace;
  static constexpr bool sparse = true;
};
template <class T, class... P>
struct MatrixTraits<Kokkos::View<T**, P...>> {
  using value_type = typename Kokkos::View<T**, P...>::non_const_value_type;
  using memory_space = typename Kokkos::View<T**, P...>::memory_space;
  static constexpr bool sparse = false;
};

/// The data of one run, built and validated by make_problem(). Matrix is
/// DenseMatrix<T, Mem> or CsrMatrix<T, Mem>, Mem the solver space's memory.
template <class Matrix>
struct Problem {
  using value_type = typename MatrixTraits<Matrix>::value_type;
  using memory_space = typename MatrixTraits<Matrix>::memory_space;
  static constexpr bool sparse = MatrixTraits<Matrix>::sparse;

  Matrix A;  ///< V x D, finite, non-negative, not all zero
  /// CSR input: A^T (D x V), stored once so that R = A^T W is a row-parallel
  /// gather like P = A Ht (see the file comment); dense input: empty.
  Matrix At;
  double norm2 = 0.0;      ///< ||A||_F^2, accumulated in double
  double sum = 0.0;        ///< the sum of A's entries (mean(A) for NNDSVD's fills and transform's start)
  std::int64_t zeros = 0;  ///< stored zero entries (Itakura-Saito refuses them)
  std::int64_t rows = 0, cols = 0, nnz = 0;
};

/// Validates A (InputError for an empty A, negative, NaN or infinite entries
/// and an all-zero A) and builds the Problem; RuntimeFailure when A^T of a
/// CSR input cannot be stored.
template <class ExecutionSpace, class Matrix>
Problem<Matrix> make_problem(const ExecutionSpace& exec, const Matrix& A);

/// Everything that decides the next iterate. `ws` holds buffers and products
/// derived from the fields (not checkpointed): after the fields were replaced
/// (a checkpoint restore), reset_workspace() drops it and the next
/// step/evaluate rebuild it.
template <class T, class MemorySpace>
struct State {
  DenseMatrix<T, MemorySpace> W;   ///< V x K
  DenseMatrix<T, MemorySpace> Ht;  ///< D x K, H transposed
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;
  std::shared_ptr<detail::Workspace<T, MemorySpace>> ws;

  /// The checkpointed fields; no side effects.
  template <class F>
  void visit(F&& f) {
    f("W", W);
    f("Ht", Ht);
    f("iteration", iteration);
    f("seed", seed);
  }
  template <class F>
  void visit(F&& f) const {
    f("W", W);
    f("Ht", Ht);
    f("iteration", iteration);
    f("seed", seed);
  }
  void reset_workspace() { ws.reset(); }
};

template <class Matrix>
using StateFor = State<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>;

// ---- the solver contract (core/solver.hpp) ----

/// The initial state of options.init (random: the file comment; nndsvd,
/// nndsvda, nndsvdar: NNDSVD from a randomized rank-K SVD (counter RNG
/// stream factor_h for the sketch) on the solver's own products, as
/// scikit-learn's); UsageError for invalid options, K > min(V, D) or init
/// custom (use init_with); InputError for beta_loss is on an input with
/// zeros.
template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options);

/// Same, with given starting factors W0 (V x K) and Ht0 = H0^T (D x K).
/// With options.init == custom (scikit-learn's init='custom') or fix_w
/// they must be finite and non-negative (InputError). They are copied as
/// they are: scikit-learn's start gives scikit-learn's iterates (up to the
/// order of the halves and the floor eps).
template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init_with(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W0,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& Ht0);

/// One epoch (H then W) and the cheap error pieces. No I/O. Like every
/// kfactor solver, step() leaves state.iteration to the caller
/// (run_solver_loop increments it after each step).
template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
void step(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
          State<T, MemorySpace>& state);

/// relative_error (cheap formula of the last epoch, or computed for a fresh
/// state) and, for hals/alo (but masked data), min_column_norm: the
/// smallest l2 norm of a column of W (a collapsed column shows as about
/// eps sqrt(V)).
template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
Metrics evaluate(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
                 State<T, MemorySpace>& state);

/// The start of a run with W fixed (options.fix_w required, UsageError
/// otherwise): W as given (finite, non-negative: InputError) and every
/// entry of H0 sqrt(mean(A) / K), scikit-learn's start beside a fixed factor.
/// With W fixed, K may exceed A's column count (each column of H is its own
/// problem: transform of a single new sample).
template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init_fixed_w(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W);

/// H for the columns of a new A with W fixed (scikit-learn's transform, in
/// this orientation): from H0 = sqrt(mean(A) / K), options.stop.max_iterations
/// epochs of options.algorithm's H rule (Options::fix_w; hals and alo run
/// the exact coordinate rule for W's own column norms), with the options'
/// penalties and loss. The state's Ht is the result, W the given one; the
/// report's relative_error is that of W H on the new A. W for new rows
/// with H fixed is transform of A^T with Ht in W's place (A^T ~ Ht W^T).
template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> transform(
    const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
    const DenseMatrix<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>& W);

/// W H as a dense V x D matrix (scikit-learn's inverse_transform); Ht = H^T.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> inverse_transform(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& W,
                                      const DenseMatrix<T, Mem>& Ht);

/// init then resume; report.metrics has relative_error first.
template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> solve(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
                               const Observer& observer = {});

/// Continues `state` (fresh, or restored from a checkpoint) up to
/// options.stop.max_iterations.
template <class ExecutionSpace, class Matrix, class T, class MemorySpace>
Report resume(const ExecutionSpace& exec, const Problem<Matrix>& problem, const Options& options,
              State<T, MemorySpace>& state, const Observer& observer = {});

}  // namespace kfactor::nmf

#include <kfactor/nmf/detail/nmf_impl.hpp>

// Explicit instantiations live in src/nmf/nmf.cpp (every enabled space,
// float and double, dense and CSR input).
#define KFACTOR_NMF_ETI_MATRIX(EXTERN, S, T, M)                                                                  \
  EXTERN template Problem<M> make_problem<S, M>(const S&, const M&);                                             \
  EXTERN template StateFor<M> init<S, M>(const S&, const Problem<M>&, const Options&);                           \
  EXTERN template StateFor<M> init_with<S, M>(const S&, const Problem<M>&, const Options&,                       \
                                              const DenseMatrix<T, S::memory_space>&,                            \
                                              const DenseMatrix<T, S::memory_space>&);                           \
  EXTERN template void step<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&,               \
                                                      State<T, S::memory_space>&);                               \
  EXTERN template Metrics evaluate<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&,        \
                                                             State<T, S::memory_space>&);                        \
  EXTERN template Report resume<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&,           \
                                                          State<T, S::memory_space>&, const Observer&);          \
  EXTERN template Result<StateFor<M>> solve<S, M>(const S&, const Problem<M>&, const Options&, const Observer&); \
  EXTERN template StateFor<M> init_fixed_w<S, M>(const S&, const Problem<M>&, const Options&,                    \
                                                 const DenseMatrix<T, S::memory_space>&);                        \
  EXTERN template Result<StateFor<M>> transform<S, M>(const S&, const Problem<M>&, const Options&,               \
                                                      const DenseMatrix<T, S::memory_space>&);
#define KFACTOR_NMF_ETI(EXTERN, S, T)                                         \
  KFACTOR_NMF_ETI_MATRIX(EXTERN, S, T, KFACTOR_NMF_DENSE(T, S::memory_space)) \
  KFACTOR_NMF_ETI_MATRIX(EXTERN, S, T, KFACTOR_NMF_CSR(T, S::memory_space))
#define KFACTOR_NMF_DENSE(T, M) ::kfactor::DenseMatrix<T, M>
#define KFACTOR_NMF_CSR(T, M) ::kfactor::CsrMatrix<T, M>
#define KFACTOR_NMF_EXTERN(S, T) KFACTOR_NMF_ETI(extern, S, T)

#if !defined(KFACTOR_NMF_INSTANTIATING)
namespace kfactor::nmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_NMF_EXTERN)
}  // namespace kfactor::nmf
#endif
