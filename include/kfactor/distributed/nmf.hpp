#pragma once
/// \file
/// Distributed NMF over MPI (header-only; needs a build with
/// KFACTOR_HAVE_MPI): the FAST-HALS / ALO-NMF / MU epochs of
/// kfactor/nmf/nmf.hpp run on each rank's blocks of A with an MPI
/// communication policy. The update math is not repeated here: step(),
/// evaluate() and resume() are kfactor::nmf::detail's step_on, evaluate_on
/// and resume_on, the single-rank ones, called with detail::MpiPolicy
/// instead of nmf::detail::SingleProcess. The solver contract is the same
/// (core/solver.hpp): make_problem(exec, comm, A) -> Problem (which carries
/// the communicator), init, step, evaluate, resume -> Report and
/// solve -> kfactor::Result<State>, all collective.
///
/// **Layout (MPI-FAUN's 1D scheme, Kannan, Ballard & Park, PPoPP'16).**
/// Rows and columns of A (V x D) are split into P contiguous blocks balanced
/// by nonzeros (kfactor::distributed::balanced_column_blocks on the row counts and on the
/// column counts; dense A: equal blocks), adjusted so that no block is empty
/// (P <= min(V, D) is required). Rank p owns
///   - rows [r_p, r_{p+1}) of A (Problem::rows, V_p x D) and the same rows of W;
///   - columns [c_p, c_{p+1}) of A (Problem::cols: dense V x D_p; sparse, the
///     rows of A^T, D_p x V, CSR) and the same rows of Ht = H^T.
/// A is thus stored twice (as MPI-FAUN's naive 1D algorithm does), each copy
/// partitioned once. The rank also holds one full V x K and one full D x K
/// buffer for the all-gathered factors.
///
/// **One epoch** (same order of operations as the single-rank epoch):
/// ```
///   S = sum_p W_p^T W_p          all-reduce K x K (cached from the previous epoch)
///   W_all = all-gather(W_p)      (V - V_p) K words in
///   R_p = A(:, c_p)^T W_all      local; H_p updated from R_p, S (rows independent)
///   Ht_all = all-gather(Ht_p)    (D - D_p) K words in
///   P_p = A(r_p, :) Ht_all       local
///   Q = sum_p Ht_p^T Ht_p        all-reduce K x K
///   W_p updated from P_p, Q; hals/alo: each column's squared norm is
///   all-reduced (1 double) before the next column reads it
///   S' = sum_p W_p^T W_p         all-reduce K x K;  <W, P> all-reduced (1 double)
/// ```
/// **Communication volume per epoch and rank** (T = 4 or 8 bytes; averaged
/// over ranks, exact for equal blocks):
/// ```
///   gathers:    (P-1)/P (V + D) K            words of T received
///   reductions: 2 all-reductions of K^2 words of T, each moving 2 (P-1)/P K^2
///               words per rank (reduce-scatter + all-gather), and K + 1
///               (hals, alo) or 1 (mu) all-reductions of one double
///   bytes = T [(P-1)/P ((V + D) K + 4 K^2)] + 8 [2 (P-1)/P (K + 1)]
///   collectives: 2 all-gathers + 2 + (K + 1 | 1) all-reductions
/// ```
/// epoch_volume() evaluates it; with a latency alpha per collective step
/// and an inverse bandwidth beta, the modelled time is
/// collectives * alpha * ceil(log2 P) + bytes * beta (perf/bench_distributed
/// refines this per kind of call: all-reductions alpha ceil(log2 P) each
/// plus payload x gamma, all-gathers a per-call latency plus bytes received
/// x beta, with every constant calibrated by size sweeps). For V, D >> K the gathers
/// dominate: the volume does not shrink with P, so strong scaling ends
/// when (V + D) K beta reaches the per-rank compute 4 nnz K / P flops.
///
/// **Equality with the single-rank solver.** The same kernels run on the
/// same rows; only sums over rows are split: the Grams S and Q, the column
/// norms of W, <W, P> and ||A||^2 are sums of per-rank partial sums instead
/// of one sum. Everything else (R, P, the sweeps) computes each output entry
/// from the same operands in the same order, except ALO's W sweep, which
/// across processes needs a launch per column (the column's norm is summed
/// over ranks before the next column reads it) where one process sweeps a
/// tile in one launch. On one rank (P = 1) the policy says so
/// (MpiPolicy::one_process), the epoch takes the single-process kernels, no
/// MPI call is made in it, and the iterates equal kfactor::nmf's bit for bit
/// on every backend. For P > 1 the
/// difference is reduction-order rounding that the iteration carries along:
/// tests/distributed checks, for P = 1..4 after 12 epochs in double on
/// planted problems (dense and CSR, hals/alo/mu),
///   max |W - W_1| / max |W_1| <= 1e-9 and the same for Ht
/// (measured: 1e-15 .. 1e-14), and relative errors within 1e-8 relative;
/// in float (ALO) <= 1e-4 (measured ~1e-6). A restart from a checkpoint on
/// the same P continues bit for bit. Iterates of an ill-conditioned problem may drift
/// further over many epochs (chaotic dependence, as for a change of thread
/// count or BLAS); the objective stays within the same tolerance.
///
/// **Checkpoints.** State::visit lists the rank's rows of W and Ht under
/// the single-rank names ("W", "Ht", "iteration", "seed"); with
/// State::row_blocks(), kfactor::save_checkpoint(comm, ...) writes ONE file
/// holding the full factors (collective parallel HDF5, or gathered to rank
/// 0), which a single-rank nmf run, or a run on any number of ranks,
/// restarts from (load_checkpoint(comm, ..., state.row_blocks()), which drops
/// the state's workspace, as for a single-rank State).
///
/// **Memory per rank:** nnz(A rows) + nnz(A cols) values (x2 for CSR
/// indices) + (V + D) K (gathered factors) + 2 (V_p + D_p) K (alo/mu
/// buffers) + (V_p + D_p) K (R, P).

#include <kfactor/config.hpp>
#include <kfactor/nmf/nmf.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/blocks.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/distributed/read.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::distributed::nmf {

using kfactor::nmf::Algorithm;
using kfactor::nmf::MatrixTraits;
using kfactor::nmf::Options;

/// The data of one distributed run: this rank's share of A (see the file
/// comment) and the communicator. Matrix: DenseMatrix<T, Mem> or
/// CsrMatrix<T, Mem>.
template <class Matrix>
struct Problem {
  Matrix rows;                                    ///< A(r_p:r_{p+1}, :), V_p x D
  Matrix cols;                                    ///< dense: A(:, c_p:c_{p+1}), V x D_p; CSR: its transpose, D_p x V
  std::vector<ordinal_t> row_bounds, col_bounds;  ///< P + 1 boundaries each
  std::int64_t global_rows = 0, global_cols = 0, global_nnz = 0;
  double norm2 = 0.0;  ///< ||A||_F^2 (sum of the row blocks' sums)
  int rank = 0, size = 1;
  /// The communicator's collectives (and their statistics), shared with
  /// every State made from this problem.
  std::shared_ptr<distributed::detail::Collectives> coll;
  [[nodiscard]] std::int64_t row_begin() const { return row_bounds[rank]; }
  [[nodiscard]] std::int64_t col_begin() const { return col_bounds[rank]; }
  [[nodiscard]] std::int64_t local_rows() const { return row_bounds[rank + 1] - row_bounds[rank]; }
  [[nodiscard]] std::int64_t local_cols() const { return col_bounds[rank + 1] - col_bounds[rank]; }
};

/// Collective. Every rank passes the same full A (InputError on every rank
/// when shapes or nnz differ) and keeps only its blocks; A is validated as
/// by kfactor::nmf::make_problem, on every rank (bad entries are counted by
/// an all-reduction). UsageError when P > min(V, D).
template <class ExecutionSpace, class Matrix>
Problem<Matrix> make_problem(const ExecutionSpace& exec, MPI_Comm comm, const Matrix& A) {
  namespace nd = kfactor::nmf::detail;
  Problem<Matrix> b;
  b.coll = std::make_shared<distributed::detail::Collectives>(comm);
  b.rank = b.coll->rank();
  b.size = b.coll->size();
  b.global_rows = nd::rows_of(A);
  b.global_cols = nd::cols_of(A);
  b.global_nnz = nd::nnz_of(A);
  require_same(comm, static_cast<std::uint64_t>(b.global_rows), "the input's rows");
  require_same(comm, static_cast<std::uint64_t>(b.global_cols), "the input's columns");
  require_same(comm, static_cast<std::uint64_t>(b.global_nnz), "the input's stored entries");
  if (b.size > std::min(b.global_rows, b.global_cols))
    throw UsageError("distributed nmf: " + std::to_string(b.size) + " ranks for a " + std::to_string(b.global_rows) +
                     " x " + std::to_string(b.global_cols) + " input; use at most min(rows, cols) ranks");
  const int p = b.rank;
  if constexpr (MatrixTraits<Matrix>::sparse) {
    const auto At = transpose(exec, A);
    b.row_bounds = detail::nonempty_balanced_blocks(detail::row_counts(A), b.size);
    b.col_bounds = detail::nonempty_balanced_blocks(detail::row_counts(At), b.size);
    b.rows = detail::csr_rows(exec, A, b.row_bounds[p], b.row_bounds[p + 1]);
    b.cols = detail::csr_rows(exec, At, b.col_bounds[p], b.col_bounds[p + 1]);
  } else {
    b.row_bounds = detail::nonempty_balanced_blocks(std::vector<offset_t>(b.global_rows, b.global_cols), b.size);
    b.col_bounds = detail::nonempty_balanced_blocks(std::vector<offset_t>(b.global_cols, b.global_rows), b.size);
    b.rows = detail::dense_block(exec, A, b.row_bounds[p], b.row_bounds[p + 1], 0, b.global_cols);
    b.cols = detail::dense_block(exec, A, 0, b.global_rows, b.col_bounds[p], b.col_bounds[p + 1]);
  }
  // The row blocks partition A: ||A||^2 and the bad-entry count are sums.
  double sums[2] = {0.0, 0.0};
  if (b.global_rows > 0 && b.global_cols > 0) {
    const auto [norm2, bad] = nd::check_values(exec, b.rows);
    sums[0] = norm2;
    sums[1] = double(bad);
  }
  b.coll->allreduce_sum_host(sums, 2);
  b.norm2 = sums[0];
  nd::check_input(b.global_rows, b.global_cols, static_cast<std::int64_t>(sums[1]), b.norm2);
  return b;
}

/// Collective. The same Problem from a sparse matrix that no rank holds
/// whole: each rank passes its part as kfactor::distributed::read_rows gave
/// it (distributed/read.hpp: a partitioned text read or an HDF5 CSR
/// hyperslab read). The rows move to this layout's nnz-balanced blocks and
/// a second all-to-all of the same entries by column blocks builds the
/// column side; blocks, values and norms are bit for bit those of
/// make_problem(exec, comm, A) on the whole A (as CSR). Checks and errors as
/// there.
template <class ExecutionSpace, class T>
Problem<CsrMatrix<T, typename ExecutionSpace::memory_space>> make_problem(const ExecutionSpace& exec, MPI_Comm comm,
                                                                          const RowSlice<T>& A) {
  namespace nd = kfactor::nmf::detail;
  Problem<CsrMatrix<T, typename ExecutionSpace::memory_space>> b;
  b.coll = std::make_shared<distributed::detail::Collectives>(comm);
  b.rank = b.coll->rank();
  b.size = b.coll->size();
  b.global_rows = A.entries.num_rows;
  b.global_cols = A.entries.num_cols;
  b.global_nnz = A.global_nnz;
  require_same(comm, static_cast<std::uint64_t>(b.global_rows), "the input's rows");
  require_same(comm, static_cast<std::uint64_t>(b.global_cols), "the input's columns");
  require_same(comm, static_cast<std::uint64_t>(b.global_nnz), "the input's stored entries");
  if (b.size > std::min(b.global_rows, b.global_cols))
    throw UsageError("distributed nmf: " + std::to_string(b.size) + " ranks for a " + std::to_string(b.global_rows) +
                     " x " + std::to_string(b.global_cols) + " input; use at most min(rows, cols) ranks");
  b.row_bounds = detail::nonempty_balanced_blocks(global_row_counts(comm, A), b.size);
  b.col_bounds = detail::nonempty_balanced_blocks(global_column_counts(comm, A), b.size);
  {
    const RowSlice<T> rows = move_rows(comm, A, b.row_bounds);
    b.rows = local_csr(exec, rows);
    b.cols = local_csr(exec, transpose_rows(comm, rows, b.col_bounds));
  }
  // The row blocks partition A: ||A||^2 and the bad-entry count are sums.
  double sums[2] = {0.0, 0.0};
  if (b.global_rows > 0 && b.global_cols > 0) {
    const auto [norm2, bad] = nd::check_values(exec, b.rows);
    sums[0] = norm2;
    sums[1] = double(bad);
  }
  b.coll->allreduce_sum_host(sums, 2);
  b.norm2 = sums[0];
  nd::check_input(b.global_rows, b.global_cols, static_cast<std::int64_t>(sums[1]), b.norm2);
  return b;
}

namespace detail {

/// The MPI communication policy of kfactor::nmf::detail::epoch (see
/// nmf::detail::SingleProcess for the contract).
template <class T, class Mem>
struct MpiPolicy {
  std::shared_ptr<distributed::detail::Collectives> coll;
  DenseMatrix<T, Mem> W_all, Ht_all;  ///< gathered factors (P > 1)
  std::vector<ordinal_t> row_bounds, col_bounds;

  [[nodiscard]] bool one_process() const { return coll->size() == 1; }
  template <class F>
  void agree(F&& f) const {
    distributed::agree(coll->comm(), std::forward<F>(f));
  }
  template <class ExecutionSpace, class V>
  void sum(const ExecutionSpace& exec, const V& v) const {
    coll->allreduce_sum(exec, v);
  }
  template <class ExecutionSpace>
  DenseMatrix<T, Mem> gather(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& local,
                             kfactor::nmf::detail::Factor which) const {
    if (coll->size() == 1) return local;
    const bool w = which == kfactor::nmf::detail::Factor::w;
    const auto& full = w ? W_all : Ht_all;
    coll->allgather_rows(exec, local, full, w ? row_bounds : col_bounds);
    return full;
  }
};

}  // namespace detail

/// The single-rank State (this rank's rows of W and Ht; iteration, seed,
/// history; visit() lists them under the single-rank names) plus the
/// partition and the communicator.
template <class T, class Mem>
struct State : kfactor::nmf::State<T, Mem> {
  std::shared_ptr<detail::MpiPolicy<T, Mem>> comm;
  std::int64_t global_rows = 0, global_cols = 0, row_begin = 0, col_begin = 0;

  /// For kfactor::save_checkpoint / load_checkpoint(comm, ...): W and Ht are
  /// row-partitioned, the rest replicated.
  [[nodiscard]] RowBlocks row_blocks() const {
    return {{"W", RowBlock{global_rows, row_begin}}, {"Ht", RowBlock{global_cols, col_begin}}};
  }
  /// Communication so far (seconds, calls, bytes) on this rank.
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return comm->coll->stats; }
};

template <class Matrix>
using StateFor = State<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>;

/// The modelled communication of one epoch per rank (file comment).
struct EpochVolume {
  double gather_words = 0;       ///< words of T received through the two all-gathers
  double gram_words = 0;         ///< words of T moved per rank by the two K x K all-reductions
  double scalar_reductions = 0;  ///< all-reductions of one double
  double collectives = 0;        ///< collective calls
  double bytes = 0;              ///< total bytes per rank
  /// collectives * alpha * ceil(log2 P) + bytes * beta.
  [[nodiscard]] double seconds(double alpha, double beta, int P) const {
    return P <= 1 ? 0.0 : collectives * alpha * std::ceil(std::log2(double(P))) + bytes * beta;
  }
};

inline EpochVolume epoch_volume(std::int64_t V, std::int64_t D, int K, int P, Algorithm a, std::size_t value_bytes) {
  EpochVolume v;
  if (P <= 1) return v;
  const double f = double(P - 1) / double(P);
  v.gather_words = f * double(V + D) * K;
  v.gram_words = 2.0 * 2.0 * f * double(K) * K;
  v.scalar_reductions = a == Algorithm::mu ? 1.0 : double(K) + 1.0;
  v.collectives = 2.0 + 2.0 + v.scalar_reductions;
  v.bytes = double(value_bytes) * (v.gather_words + v.gram_words) + 8.0 * 2.0 * f * v.scalar_reductions;
  return v;
}

/// Collective: the initial factors of kfactor::nmf::init on this rank's
/// rows (the same W0, H0 up to reduction-order rounding of the column norms
/// and the scale alpha; bit for bit on one rank). UsageError on every rank
/// for invalid options or K > min(V, D); allocation failures are agreed.
template <class ExecutionSpace, class Matrix>
StateFor<Matrix> init(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options) {
  using T = typename MatrixTraits<Matrix>::value_type;
  using Mem = typename MatrixTraits<Matrix>::memory_space;
  namespace nd = kfactor::nmf::detail;
  options.validate();
  const std::int64_t V = A.global_rows, D = A.global_cols;
  nd::check_rank(options, V, D);
  const int K = options.rank;
  State<T, Mem> s;
  s.global_rows = V;
  s.global_cols = D;
  s.row_begin = A.row_begin();
  s.col_begin = A.col_begin();
  s.seed = options.seed;
  s.comm = std::make_shared<detail::MpiPolicy<T, Mem>>();
  s.comm->coll = A.coll;
  s.comm->row_bounds = A.row_bounds;
  s.comm->col_bounds = A.col_bounds;
  s.comm->agree([&] {
    s.ws = nd::allocate_workspace<T, Mem>(A.local_rows(), A.local_cols(), options);
    s.W = nd::alloc<T, Mem>("W", A.local_rows(), K);
    s.Ht = nd::alloc<T, Mem>("Ht", A.local_cols(), K);
    if (A.size > 1) {
      s.comm->W_all = nd::alloc<T, Mem>("W_all", V, K);
      s.comm->Ht_all = nd::alloc<T, Mem>("Ht_all", D, K);
    }
  });
  nd::initial_factors(exec, A.cols, options, s.W, s.Ht, s.row_begin, s.col_begin, D, A.norm2, *s.ws, *s.comm);
  exec.fence();
  return s;
}

/// One epoch: kfactor::nmf's step on this rank's blocks. Collective.
template <class ExecutionSpace, class Matrix, class T, class Mem>
void step(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options, State<T, Mem>& state) {
  kfactor::nmf::detail::step_on(exec, A.rows, A.cols, options, state, *state.comm);
}

/// The single-rank metrics (relative_error, min_column_norm), identical on
/// every rank. Collective.
template <class ExecutionSpace, class Matrix, class T, class Mem>
Metrics evaluate(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options, State<T, Mem>& state) {
  return kfactor::nmf::detail::evaluate_on(exec, A.rows, A.norm2, options, state, *state.comm);
}

/// Continues `state` to options.stop.max_iterations through kfactor::nmf's
/// loop (collective; the observer runs on every rank with the same metrics,
/// so a checkpoint observer may save collectively; print on one rank only).
/// Report as kfactor::nmf's, plus timings communication / compute /
/// per_iteration and info mpi_ranks, distribution,
/// model_bytes_per_iteration, gathered_bytes_per_iteration.
template <class ExecutionSpace, class Matrix, class T, class Mem>
Report resume(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options, State<T, Mem>& state,
              const Observer& observer = {}) {
  Report header =
      kfactor::nmf::detail::report_header<ExecutionSpace, Matrix>(options, A.global_rows, A.global_cols, A.global_nnz);
  header.info["mpi_ranks"] = std::to_string(A.size);
  header.info["distribution"] = "1D: rows of A and W, columns of A and H per rank, nnz-balanced";
  const auto before = state.comm->coll->stats;
  const int first = state.iteration;
  Report r = kfactor::nmf::detail::resume_on(
      exec, options, state, observer, std::move(header), [&] { step(exec, A, options, state); },
      [&] { return evaluate(exec, A, options, state); });
  const auto after = state.comm->coll->stats;
  const double comm_s = after.seconds - before.seconds;
  r.timings.set("communication", comm_s);
  r.timings.set("compute", r.seconds - comm_s);
  const int its = state.iteration - first;
  if (its > 0) {
    r.timings.set("per_iteration", r.seconds / its);
    const auto model = epoch_volume(A.global_rows, A.global_cols, options.rank, A.size, options.algorithm, sizeof(T));
    r.info["model_bytes_per_iteration"] = std::to_string(static_cast<std::int64_t>(model.bytes));
    r.info["gathered_bytes_per_iteration"] = std::to_string((after.bytes_in - before.bytes_in) / its);
  }
  return r;
}

/// init then resume. Collective.
template <class ExecutionSpace, class Matrix>
Result<StateFor<Matrix>> solve(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options,
                               const Observer& observer = {}) {
  return kfactor::nmf::detail::init_then_resume<StateFor<Matrix>>(
      [&] { return init(exec, A, options); },
      [&](StateFor<Matrix>& state) { return resume(exec, A, options, state, observer); });
}

/// The full W (V x K) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_W(const ExecutionSpace& exec, State<T, Mem>& state) {
  return state.comm->coll->allgather_rows(exec, state.W, state.comm->row_bounds, "kfactor::nmf::W_full");
}
/// The full Ht = H^T (D x K) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_Ht(const ExecutionSpace& exec, State<T, Mem>& state) {
  return state.comm->coll->allgather_rows(exec, state.Ht, state.comm->col_bounds, "kfactor::nmf::Ht_full");
}

}  // namespace kfactor::distributed::nmf

// Explicit instantiations live in src/distributed/distributed.cpp (dense and
// CSR input).
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_NMF_ETI_MATRIX(EXTERN, S, T, M)                                               \
  EXTERN template Problem<M> make_problem<S, M>(const S&, MPI_Comm, const M&);                            \
  EXTERN template StateFor<M> init<S, M>(const S&, const Problem<M>&, const Options&);                    \
  EXTERN template void step<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&,        \
                                                      State<T, S::memory_space>&);                        \
  EXTERN template Metrics evaluate<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&, \
                                                             State<T, S::memory_space>&);                 \
  EXTERN template Report resume<S, M, T, S::memory_space>(const S&, const Problem<M>&, const Options&,    \
                                                          State<T, S::memory_space>&, const Observer&);   \
  EXTERN template Result<StateFor<M>> solve<S, M>(const S&, const Problem<M>&, const Options&, const Observer&);
#define KFACTOR_DISTRIBUTED_NMF_ETI(EXTERN, S, T)                                                              \
  KFACTOR_DISTRIBUTED_NMF_ETI_MATRIX(EXTERN, S, T, KFACTOR_NMF_DENSE(T, S::memory_space))                      \
  KFACTOR_DISTRIBUTED_NMF_ETI_MATRIX(EXTERN, S, T, KFACTOR_NMF_CSR(T, S::memory_space))                        \
  EXTERN template DenseMatrix<T, S::memory_space> gather_W<S, T, S::memory_space>(const S&,                    \
                                                                                  State<T, S::memory_space>&); \
  EXTERN template DenseMatrix<T, S::memory_space> gather_Ht<S, T, S::memory_space>(const S&,                   \
                                                                                   State<T, S::memory_space>&);
#define KFACTOR_DISTRIBUTED_NMF_EXTERN(S, T) KFACTOR_DISTRIBUTED_NMF_ETI(extern, S, T)
#if !defined(KFACTOR_DISTRIBUTED_INSTANTIATING)
namespace kfactor::distributed::nmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_NMF_EXTERN)
}  // namespace kfactor::distributed::nmf
#endif
#undef KFACTOR_DISTRIBUTED_NMF_EXTERN

#endif  // KFACTOR_HAVE_MPI
