#pragma once
/// \file
/// Distributed NMF over MPI (header-only; needs a build with
/// KFACTOR_HAVE_MPI): the HALS / ALO-NMF / MU epochs of
/// kfactor/nmf/nmf.hpp run on each rank's blocks of A with an MPI
/// communication policy. The update math is not repeated here: step(),
/// evaluate() and resume() are kfactor::nmf::detail's step_on, evaluate_on
/// and resume_on, the single-rank ones, called with detail::MpiPolicy
/// instead of nmf::detail::SingleProcess. The solver contract is the same
/// (core/solver.hpp): make_problem(exec, comm, A, grid) -> Problem (which
/// carries the communicators), init, step, evaluate, resume -> Report and
/// solve -> kfactor::Result<State>, all collective.
///
/// **Layouts** (MPI-FAUN, Kannan, Ballard & Park, PPoPP'16), chosen by the
/// Grid passed to make_problem (Problem::grid says which one ran; the report
/// carries it as info "grid": "1d" or "PRxPC"):
///
/// *1D* (`1d`, MPI-FAUN's naive 1D scheme). Rows and columns of A (V x D)
/// are split into P contiguous blocks balanced by nonzeros
/// (kfactor::distributed::balanced_column_blocks on the row counts and on
/// the column counts; dense A: equal blocks), adjusted so that no block is
/// empty. Rank p owns
///   - rows [r_p, r_{p+1}) of A (Problem::rows, V_p x D) and the same rows of W;
///   - columns [c_p, c_{p+1}) of A (Problem::cols: dense V x D_p; sparse, the
///     rows of A^T, D_p x V, CSR) and the same rows of Ht = H^T.
/// A is thus stored twice, each copy partitioned once. Each half step
/// all-gathers one whole factor (V x K or D x K) and computes whole rows of
/// the product locally.
///
/// *2D grid* (`PRxPC`, MPI-FAUN's 2D scheme, pr pc = P). Rank p sits at
/// (i, j) = (p / pc, p % pc). Rows of A are split into pr blocks r_i and
/// columns into pc blocks c_j (nonzero-balanced for CSR, equal for dense;
/// a row block has at least pc rows, a column block at least pr columns).
/// Rank (i, j) stores A_ij = A(r_i, c_j) once (Problem::rows; Problem::cols
/// is the same view for dense A, A_ij^T for CSR). W's row block i is split
/// into pc equal pieces over the ranks of grid row i, and Ht's row block j
/// into pr equal pieces over grid column j; rank (i, j) owns piece j of W_i
/// and piece i of Ht_j, both contiguous rows of the full factor.
///   H half: W_i = all-gather of the pieces over grid row i (V_i x K);
///           A_ij^T W_i (D_j x K) is grid column j's partial sum of R's block
///           j, reduce-scattered over grid column j: each rank receives the
///           rows of R = A^T W that match its rows of Ht.
///   W half: Ht_j = all-gather over grid column j; A_ij Ht_j (V_i x K)
///           reduce-scattered over grid row i into this rank's rows of P = A Ht.
/// Px1 and 1xP are grids too: one exchange per half is then local (for Px1,
/// W's half needs no reduce-scatter and H's no all-gather).
///
/// *Automatic* (Grid{}, the default): choose_grid(V, D, P), below.
///
/// **One epoch** (same order of operations as the single-rank epoch):
/// ```
///   S = sum_p W_p^T W_p          all-reduce K x K (cached from the previous epoch)
///   R_p = (A^T W)_p              1D: all-gather W, local product
///                                grid: all-gather W_i, partial product, reduce-scatter
///   H_p updated from R_p, S (rows independent)
///   P_p = (A Ht)_p               as R_p, with the roles of W and Ht exchanged
///   Q = sum_p Ht_p^T Ht_p        all-reduce K x K
///   W_p updated from P_p, Q (rows independent)
///   S' = sum_p W_p^T W_p         all-reduce K x K;  <W, P> all-reduced (1 double)
/// ```
/// **Communication volume per epoch and rank** (T = 4 or 8 bytes; averaged
/// over ranks, exact for equal blocks; all-gathers counted as words
/// received, reduce-scatters as the words a ring moves per rank, which is
/// the same for the same rows):
/// ```
///   1D:    gathers (P-1)/P (V + D) K                               2 exchanges
///   grid:  gathers and reduce-scatters, equal halves,
///          2 [(pc-1) V + (pr-1) D] K / P                            2 per dimension > 1
///   both:  2 all-reductions of K^2 words of T, each moving 2 (P-1)/P K^2
///          words per rank (reduce-scatter + all-gather), and one
///          all-reduction of one double
///   bytes = T [exchange words + 4 (P-1)/P K^2] + 8 [2 (P-1)/P]
/// ```
/// epoch_volume() evaluates it; with a latency alpha per collective step
/// and an inverse bandwidth beta, the modelled time is
/// collectives * alpha * ceil(log2 P) + bytes * beta (perf/bench_distributed
/// refines this per kind of call, with constants calibrated by size sweeps).
/// In 1D the volume does not shrink with P: strong scaling ends when
/// (V + D) K beta reaches the per-rank compute 4 nnz K / P flops. A grid's
/// volume does: for V = D on a square grid it is 4 (sqrt(P) - 1) V K / P,
/// 2 / (sqrt(P) + 1) of 1D's (2/3 at P = 4).
///
/// **Crossover and the automatic choice.** A grid moves less than 1D when
///   2 [(pc-1) V + (pr-1) D] < (P-1) (V + D);
/// for Px1 that is D < V, for 1xP V < D, so some grid always moves at most
/// what 1D moves (with A stored once), and the best grid has pr / pc close
/// to V / D (square local blocks: minimising pc V + pr D at pr pc = P).
/// choose_grid() evaluates the exchange words of 1D and of every pr x pc = P
/// (they depend on V, D and P only: K scales them all and the reductions
/// are the same in every layout) and takes the least; ties go to fewer
/// exchanges, then to a grid over 1D (A stored once), then to more grid
/// rows. 1D thus stays a candidate but wins no tie; request it with
/// Grid{.one_d = true} (CLI --grid 1d) where its all-gathers outrun the
/// reduce-scatters in practice.
///
/// **Equality with the single-rank solver.** The same kernels run on the
/// same rows; only sums over rows are split: the Grams S and Q, <W, P> and
/// ||A||^2 are sums of per-rank partial sums instead of one sum, and on a
/// grid each entry of R and P is a sum of partial products over blocks.
/// Everything else (the sweeps) computes each output entry from the same
/// operands in the same order. On one rank (P = 1) the policy says so
/// (MpiPolicy::one_process), the epoch takes the single-process kernels, no
/// MPI call is made in it, and the iterates equal kfactor::nmf's bit for bit
/// on every backend (1d and 1x1 alike). For P > 1 the difference is
/// reduction-order rounding that the iteration carries along:
/// tests/distributed checks, for P = 1..4 after 12 epochs in double on
/// planted problems (dense and CSR, hals/alo/mu, 1D and every grid of P),
///   max |W - W_1| / max |W_1| <= 1e-9 and the same for Ht
/// (measured: 1e-15 .. 1e-14), and relative errors within 1e-8 relative;
/// in float (ALO) <= 1e-4 (measured ~1e-6). A restart from a checkpoint on
/// the same layout continues bit for bit. Iterates of an ill-conditioned
/// problem may drift further over many epochs (chaotic dependence, as for a
/// change of thread count or BLAS); the objective stays within the same
/// tolerance.
///
/// **Checkpoints.** State::visit lists the rank's rows of W and Ht under
/// the single-rank names ("W", "Ht", "iteration", "seed"); with
/// State::row_blocks() (each rank's rows are contiguous in both layouts; on
/// a grid Ht's are not in rank order, which the checkpoint accepts),
/// kfactor::save_checkpoint(comm, ...) writes ONE file holding the full
/// factors (collective parallel HDF5, or gathered to rank 0), which a
/// single-rank nmf run, or a run on any number of ranks in either layout,
/// restarts from (load_checkpoint(comm, ..., state.row_blocks()), which
/// drops the state's workspace, as for a single-rank State).
///
/// **Memory per rank.** 1D: nnz(A rows) + nnz(A cols) values (x2 for CSR
/// indices) + (V + D) K (gathered factors) + 2 (V_p + D_p) K (alo/mu
/// buffers) + (V_p + D_p) K (R, P). Grid: nnz(A_ij) values (CSR: x2 for
/// A_ij^T, x2 again for indices) + V_i K (if pc > 1) + D_j K (if pr > 1)
/// for the gathered blocks, which also hold the partial products, + the
/// same per-row buffers for this rank's V / P and D / P rows.

#include <kfactor/config.hpp>
#include <kfactor/nmf/nmf.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/blocks.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/detail/nmf_policy.hpp>
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

/// How the ranks share A and the factors (file comment, "Layouts"):
/// Grid{pr, pc} a pr x pc processor grid, Grid{.one_d = true} the 1D
/// layout, Grid{} automatic (choose_grid).
struct Grid {
  int rows = 0, cols = 0;  ///< pr x pc (grid layout)
  bool one_d = false;      ///< the 1D layout (rows and cols unused)
  [[nodiscard]] bool automatic() const { return !one_d && rows == 0 && cols == 0; }
  friend bool operator==(const Grid&, const Grid&) = default;
};

/// "auto", "1d" or "PRxPC" (the CLI's --grid and the report's "grid").
inline std::string to_string(const Grid& g) {
  if (g.one_d) return "1d";
  if (g.automatic()) return "auto";
  return std::to_string(g.rows) + "x" + std::to_string(g.cols);
}

/// The inverse of to_string: "auto", "1d" or "PRxPC" with positive PR, PC;
/// UsageError otherwise.
inline Grid parse_grid(const std::string& s) {
  if (s == "auto") return {};
  if (s == "1d") return Grid{.one_d = true};
  const auto x = s.find('x');
  auto positive = [](const std::string& t) {
    if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return 0;
    return std::stoi(t);
  };
  const int r = x == std::string::npos ? 0 : positive(s.substr(0, x));
  const int c = x == std::string::npos ? 0 : positive(s.substr(x + 1));
  if (r < 1 || c < 1)
    throw UsageError("distributed nmf: grid must be PRxPC (positive PR and PC, PR * PC = ranks), 1d or auto, got '" +
                     s + "'");
  return Grid{r, c};
}

/// The modelled communication of one epoch per rank (file comment).
struct EpochVolume {
  double gather_words = 0;       ///< words of T received through the all-gathers of W and Ht
  double scatter_words = 0;      ///< grid: words of T moved per rank by the reduce-scatters of R and P
  double exchanges = 0;          ///< all-gathers and reduce-scatters (those over more than one rank)
  double gram_words = 0;         ///< words of T moved per rank by the two K x K all-reductions
  double scalar_reductions = 0;  ///< all-reductions of one double
  double collectives = 0;        ///< collective calls
  double bytes = 0;              ///< total bytes per rank
  /// collectives * alpha * ceil(log2 P) + bytes * beta.
  [[nodiscard]] double seconds(double alpha, double beta, int P) const {
    return P <= 1 ? 0.0 : collectives * alpha * std::ceil(std::log2(double(P))) + bytes * beta;
  }
};

namespace detail {
/// The exchange words of one epoch times P / K, exactly (integers): 1D
/// (P-1)(V+D), a pr x pc grid 2 [(pc-1) V + (pr-1) D].
inline std::int64_t exchange_words_scaled(std::int64_t V, std::int64_t D, int P, const Grid& g) {
  if (g.one_d) return std::int64_t(P - 1) * (V + D);
  return 2 * (std::int64_t(g.cols - 1) * V + std::int64_t(g.rows - 1) * D);
}
/// The exchanges of one epoch over more than one rank.
inline int exchange_count(int P, const Grid& g) {
  if (g.one_d) return P > 1 ? 2 : 0;
  return 2 * int(g.cols > 1) + 2 * int(g.rows > 1);
}
}  // namespace detail

/// The layout with the least modelled exchange volume for a V x D input on
/// P ranks (file comment, "Crossover and the automatic choice"): 1D or one
/// of the grids pr x pc = P; ties go to fewer exchanges, then to a grid,
/// then to more grid rows. UsageError when P < 1.
inline Grid choose_grid(std::int64_t V, std::int64_t D, int P) {
  if (P < 1) throw UsageError("distributed nmf: choose_grid needs at least one rank, got " + std::to_string(P));
  Grid best{.one_d = true};
  auto better = [&](const Grid& g) {
    const auto a = detail::exchange_words_scaled(V, D, P, g), b = detail::exchange_words_scaled(V, D, P, best);
    if (a != b) return a < b;
    const int ea = detail::exchange_count(P, g), eb = detail::exchange_count(P, best);
    if (ea != eb) return ea < eb;
    return best.one_d;  // then a grid (A stored once); among grids the first, the most rows, stays
  };
  for (int pr = P; pr >= 1; --pr)
    if (P % pr == 0 && better(Grid{pr, P / pr})) best = Grid{pr, P / pr};
  return best;
}

/// The modelled communication of one epoch per rank on P ranks in `grid`
/// (1D by default; an automatic grid is resolved by choose_grid; equal
/// blocks), the same for every algorithm (the rows of a factor are
/// independent in a half step: no per-column sums). UsageError for a grid
/// of other than P ranks.
inline EpochVolume epoch_volume(std::int64_t V, std::int64_t D, int K, int P, std::size_t value_bytes,
                                Grid grid = Grid{.one_d = true}) {
  if (grid.automatic()) grid = choose_grid(V, D, P);
  if (!grid.one_d && grid.rows * grid.cols != P)
    throw UsageError("distributed nmf: a " + to_string(grid) + " grid for " + std::to_string(P) + " ranks");
  EpochVolume v;
  if (P <= 1) return v;
  const double f = double(P - 1) / double(P);
  const double words = double(detail::exchange_words_scaled(V, D, P, grid)) * K / P;
  v.gather_words = grid.one_d ? words : words / 2;
  v.scatter_words = words - v.gather_words;
  v.exchanges = detail::exchange_count(P, grid);
  v.gram_words = 2.0 * 2.0 * f * double(K) * K;
  v.scalar_reductions = 1.0;  // <W, P>
  v.collectives = v.exchanges + 2.0 + v.scalar_reductions;
  v.bytes =
      double(value_bytes) * (v.gather_words + v.scatter_words + v.gram_words) + 8.0 * 2.0 * f * v.scalar_reductions;
  return v;
}

/// The data of one distributed run: this rank's share of A and of the
/// factors' rows (see the file comment) and the communicators. Matrix:
/// DenseMatrix<T, Mem> or CsrMatrix<T, Mem>.
template <class Matrix>
struct Problem {
  /// The operand of P = A Ht: 1D A(r_p, :) (V_p x D); grid A_ij (V_i x D_j).
  Matrix rows;
  /// The operand of R = A^T W: 1D dense A(:, c_p) (V x D_p), CSR its
  /// transpose (D_p x V); grid dense A_ij (the same view as rows), CSR its
  /// transpose (D_j x V_i).
  Matrix cols;
  Grid grid;                       ///< the layout (never automatic)
  int grid_row = 0, grid_col = 0;  ///< grid: this rank's (i, j)
  /// A's row and column blocks: P + 1 boundaries each (1D); pr + 1 and
  /// pc + 1 (grid).
  std::vector<ordinal_t> row_bounds, col_bounds;
  /// Grid: the pieces of W's row block i over grid row i (pc + 1
  /// boundaries from 0) and of Ht's block j over grid column j (pr + 1).
  std::vector<ordinal_t> w_pieces, h_pieces;
  std::int64_t w_first = 0, w_rows = 0;  ///< this rank's rows of W: [w_first, w_first + w_rows)
  std::int64_t h_first = 0, h_rows = 0;  ///< and of Ht
  std::int64_t global_rows = 0, global_cols = 0, global_nnz = 0;
  double norm2 = 0.0;  ///< ||A||_F^2 (sum of the blocks' sums)
  int rank = 0, size = 1;
  /// The communicator's collectives (and their statistics), shared with
  /// every State made from this problem.
  std::shared_ptr<distributed::detail::Collectives> coll;
  /// Grid: the ranks of this rank's grid row and grid column.
  std::shared_ptr<distributed::detail::Collectives> row_coll, col_coll;
  [[nodiscard]] std::int64_t row_begin() const { return w_first; }
  [[nodiscard]] std::int64_t col_begin() const { return h_first; }
  [[nodiscard]] std::int64_t local_rows() const { return w_rows; }
  [[nodiscard]] std::int64_t local_cols() const { return h_rows; }
};

namespace detail {
/// `n` rows in `parts` contiguous pieces of equal size (balanced_row_block).
inline std::vector<ordinal_t> equal_pieces(std::int64_t n, int parts) {
  std::vector<ordinal_t> b(static_cast<std::size_t>(parts) + 1, static_cast<ordinal_t>(n));
  for (int q = 0; q < parts; ++q) b[q] = static_cast<ordinal_t>(balanced_row_block(n, parts, q).first_row);
  return b;
}

/// What make_problem does before it places A, whatever holds A: the
/// communicator, the shape (the same on every rank), the grid (checked, and
/// resolved when automatic) and, on a grid, this rank's (i, j) with the
/// communicators of its grid row and column.
template <class Matrix>
void begin_problem(Problem<Matrix>& b, MPI_Comm comm, std::int64_t rows, std::int64_t cols, std::int64_t nnz,
                   const Grid& grid) {
  b.coll = std::make_shared<distributed::detail::Collectives>(comm);
  b.rank = b.coll->rank();
  b.size = b.coll->size();
  b.global_rows = rows;
  b.global_cols = cols;
  b.global_nnz = nnz;
  require_same(comm, static_cast<std::uint64_t>(b.global_rows), "the input's rows");
  require_same(comm, static_cast<std::uint64_t>(b.global_cols), "the input's columns");
  require_same(comm, static_cast<std::uint64_t>(b.global_nnz), "the input's stored entries");
  require_same(
      comm,
      static_cast<std::uint64_t>(grid.one_d ? 1 : 0) << 62 | std::uint64_t(grid.rows) << 31 | std::uint64_t(grid.cols),
      "the grid");
  if (b.size > std::min(b.global_rows, b.global_cols))
    throw UsageError("distributed nmf: " + std::to_string(b.size) + " ranks for a " + std::to_string(b.global_rows) +
                     " x " + std::to_string(b.global_cols) + " input; use at most min(rows, cols) ranks");
  if (!grid.one_d && !grid.automatic() && (grid.rows < 1 || grid.cols < 1 || grid.rows * grid.cols != b.size))
    throw UsageError("distributed nmf: a " + to_string(grid) + " grid needs " +
                     std::to_string(std::int64_t(grid.rows) * grid.cols) + " ranks, the run has " +
                     std::to_string(b.size));
  b.grid = grid.automatic() ? choose_grid(b.global_rows, b.global_cols, b.size) : grid;
  if (!b.grid.one_d) {
    b.grid_row = b.rank / b.grid.cols;
    b.grid_col = b.rank % b.grid.cols;
    b.row_coll = b.coll->split(b.grid_row, b.grid_col);
    b.col_coll = b.coll->split(b.grid_col, b.grid_row);
  }
}

/// What make_problem does once the rank's blocks of A are in place: its
/// rows of W and Ht, and ||A||^2 and the bad-entry count, sums over the
/// blocks (the row blocks in 1D, the grid's blocks otherwise: both
/// partition A).
template <class ExecutionSpace, class Matrix>
void finish_problem(const ExecutionSpace& exec, Problem<Matrix>& b) {
  namespace nd = kfactor::nmf::detail;
  if (b.grid.one_d) {
    const int p = b.rank;
    b.w_first = b.row_bounds[p];
    b.w_rows = b.row_bounds[p + 1] - b.row_bounds[p];
    b.h_first = b.col_bounds[p];
    b.h_rows = b.col_bounds[p + 1] - b.col_bounds[p];
  } else {
    const int i = b.grid_row, j = b.grid_col;
    const ordinal_t r0 = b.row_bounds[i], r1 = b.row_bounds[i + 1], c0 = b.col_bounds[j], c1 = b.col_bounds[j + 1];
    b.w_pieces = equal_pieces(r1 - r0, b.grid.cols);
    b.h_pieces = equal_pieces(c1 - c0, b.grid.rows);
    b.w_first = r0 + b.w_pieces[j];
    b.w_rows = b.w_pieces[j + 1] - b.w_pieces[j];
    b.h_first = c0 + b.h_pieces[i];
    b.h_rows = b.h_pieces[i + 1] - b.h_pieces[i];
  }
  double sums[2] = {0.0, 0.0};
  if (b.global_rows > 0 && b.global_cols > 0) {
    const auto v = nd::value_stats(exec, b.rows);
    sums[0] = v.norm2;
    sums[1] = double(v.bad);
  }
  b.coll->allreduce_sum_host(sums, 2);
  b.norm2 = sums[0];
  nd::check_input(b.global_rows, b.global_cols, static_cast<std::int64_t>(sums[1]), b.norm2);
}
}  // namespace detail

/// Collective. Every rank passes the same full A (InputError on every rank
/// when shapes or nnz differ) and the same grid, and keeps only its blocks;
/// A is validated as by kfactor::nmf::make_problem, on every rank (bad
/// entries are counted by an all-reduction). UsageError when
/// P > min(V, D) or for a grid of other than P ranks.
template <class ExecutionSpace, class Matrix>
Problem<Matrix> make_problem(const ExecutionSpace& exec, MPI_Comm comm, const Matrix& A, Grid grid = {}) {
  namespace nd = kfactor::nmf::detail;
  namespace dd = distributed::detail;
  Problem<Matrix> b;
  detail::begin_problem(b, comm, nd::rows_of(A), nd::cols_of(A), nd::nnz_of(A), grid);
  const int p = b.rank;
  if (b.grid.one_d) {
    if constexpr (MatrixTraits<Matrix>::sparse) {
      const auto At = transpose(exec, A);
      b.row_bounds = dd::nonempty_balanced_blocks(dd::row_counts(A), b.size);
      b.col_bounds = dd::nonempty_balanced_blocks(dd::row_counts(At), b.size);
      b.rows = dd::csr_rows(exec, A, b.row_bounds[p], b.row_bounds[p + 1]);
      b.cols = dd::csr_rows(exec, At, b.col_bounds[p], b.col_bounds[p + 1]);
    } else {
      b.row_bounds = dd::nonempty_balanced_blocks(std::vector<offset_t>(b.global_rows, b.global_cols), b.size);
      b.col_bounds = dd::nonempty_balanced_blocks(std::vector<offset_t>(b.global_cols, b.global_rows), b.size);
      b.rows = dd::dense_block(exec, A, b.row_bounds[p], b.row_bounds[p + 1], 0, b.global_cols);
      b.cols = dd::dense_block(exec, A, 0, b.global_rows, b.col_bounds[p], b.col_bounds[p + 1]);
    }
  } else {
    const int pr = b.grid.rows, pc = b.grid.cols, i = b.grid_row, j = b.grid_col;
    // Row blocks of at least pc rows and column blocks of at least pr
    // columns, so that every rank owns rows of W and of Ht.
    if constexpr (MatrixTraits<Matrix>::sparse) {
      b.row_bounds = dd::nonempty_balanced_blocks(dd::row_counts(A), pr, pc);
      b.col_bounds = dd::nonempty_balanced_blocks(column_counts(A), pc, pr);
    } else {
      b.row_bounds = dd::nonempty_balanced_blocks(std::vector<offset_t>(b.global_rows, b.global_cols), pr, pc);
      b.col_bounds = dd::nonempty_balanced_blocks(std::vector<offset_t>(b.global_cols, b.global_rows), pc, pr);
    }
    const ordinal_t r0 = b.row_bounds[i], r1 = b.row_bounds[i + 1], c0 = b.col_bounds[j], c1 = b.col_bounds[j + 1];
    if constexpr (MatrixTraits<Matrix>::sparse) {
      b.rows = dd::csr_column_block(exec, dd::csr_rows(exec, A, r0, r1), c0, c1);
      b.cols = transpose(exec, b.rows);
    } else {
      b.rows = dd::dense_block(exec, A, r0, r1, c0, c1);
      b.cols = b.rows;
    }
  }
  detail::finish_problem(exec, b);
  return b;
}

/// Collective. The same Problem from a sparse matrix that no rank holds
/// whole: each rank passes its part as kfactor::distributed::read_rows gave
/// it (distributed/read.hpp: a partitioned text read or an HDF5 CSR
/// hyperslab read). The blocks are those make_problem(exec, comm, A, grid)
/// takes on the whole A (as CSR), from the same row and column counts
/// (summed over the ranks); the entries move to them by all-to-alls of the
/// entries alone: 1D, to the row blocks (move_rows) and again by column
/// blocks for the transpose (transpose_rows); on a grid, each entry to the
/// rank whose block holds it (move_blocks). Blocks, values and norms are bit
/// for bit those of the whole-matrix make_problem. Checks and errors as
/// there.
template <class ExecutionSpace, class T>
Problem<CsrMatrix<T, typename ExecutionSpace::memory_space>> make_problem(const ExecutionSpace& exec, MPI_Comm comm,
                                                                          const RowSlice<T>& A, Grid grid = {}) {
  namespace dd = distributed::detail;
  Problem<CsrMatrix<T, typename ExecutionSpace::memory_space>> b;
  detail::begin_problem(b, comm, A.entries.num_rows, A.entries.num_cols, A.global_nnz, grid);
  if (b.grid.one_d) {
    b.row_bounds = dd::nonempty_balanced_blocks(global_row_counts(comm, A), b.size);
    b.col_bounds = dd::nonempty_balanced_blocks(global_column_counts(comm, A), b.size);
    const RowSlice<T> rows = move_rows(comm, A, b.row_bounds);
    b.rows = local_csr(exec, rows);
    b.cols = local_csr(exec, transpose_rows(comm, rows, b.col_bounds));
  } else {
    const int pr = b.grid.rows, pc = b.grid.cols;
    b.row_bounds = dd::nonempty_balanced_blocks(global_row_counts(comm, A), pr, pc);
    b.col_bounds = dd::nonempty_balanced_blocks(global_column_counts(comm, A), pc, pr);
    b.rows = to_csr(exec, move_blocks(comm, A, b.row_bounds, b.col_bounds));
    b.cols = transpose(exec, b.rows);
  }
  detail::finish_problem(exec, b);
  return b;
}

/// Collective. kfactor::fingerprint of the whole sparse A from the ranks'
/// blocks of `b` (the checkpoint's record of the input, when no rank holds A
/// whole): the same as kfactor::fingerprint(exec, A) in every layout.
template <class ExecutionSpace, class T, class Mem>
InputFingerprint fingerprint(const ExecutionSpace& exec, const Problem<CsrMatrix<T, Mem>>& b) {
  const std::int64_t first_row = b.row_bounds[b.grid.one_d ? b.rank : b.grid_row];
  const std::int64_t first_col = b.grid.one_d ? 0 : b.col_bounds[b.grid_col];
  return distributed::fingerprint(exec, b.coll->comm(), b.rows, first_row, first_col, b.global_rows, b.global_cols);
}

/// The single-rank State (this rank's rows of W and Ht; iteration, seed,
/// history; visit() lists them under the single-rank names) plus the
/// partition and the communication policy.
template <class T, class Mem>
struct State : kfactor::nmf::State<T, Mem> {
  std::shared_ptr<detail::MpiPolicy<T, Mem>> comm;
  std::int64_t global_rows = 0, global_cols = 0, row_begin = 0, col_begin = 0;

  /// For kfactor::save_checkpoint / load_checkpoint(comm, ...): W and Ht are
  /// row-partitioned, the rest replicated.
  [[nodiscard]] RowBlocks row_blocks() const {
    return {{"W", RowBlock{global_rows, row_begin}}, {"Ht", RowBlock{global_cols, col_begin}}};
  }
  /// Communication so far (seconds, calls, bytes) on this rank, over all
  /// its communicators.
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return comm->stats(); }
};

template <class Matrix>
using StateFor = State<typename MatrixTraits<Matrix>::value_type, typename MatrixTraits<Matrix>::memory_space>;

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
  auto& c = *(s.comm = std::make_shared<detail::MpiPolicy<T, Mem>>());
  c.coll = A.coll;
  if (A.grid.one_d) {
    c.w = {A.coll, A.row_bounds};
    c.h = {A.coll, A.col_bounds};
  } else {
    c.w = {A.row_coll, A.w_pieces};
    c.h = {A.col_coll, A.h_pieces};
    c.partial = true;
    c.w_across = {A.col_coll, A.row_bounds};
    c.h_across = {A.row_coll, A.col_bounds};
  }
  c.agree([&] {
    s.ws = nd::allocate_workspace<T, Mem>(A.local_rows(), A.local_cols(), options);
    s.W = nd::alloc<T, Mem>("W", A.local_rows(), K);
    s.Ht = nd::alloc<T, Mem>("Ht", A.local_cols(), K);
    if (c.w.shared()) c.W_block = nd::alloc<T, Mem>("W_block", c.w.bounds.back(), K);
    if (c.h.shared()) c.Ht_block = nd::alloc<T, Mem>("Ht_block", c.h.bounds.back(), K);
  });
  nd::initial_factors(exec, A.cols, options, s.W, s.Ht, s.row_begin, s.col_begin, D, A.norm2, *s.ws, c);
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
/// per_iteration and info mpi_ranks, grid, distribution, comm_engine (the
/// path collectives took: detail::Collectives::engine_name),
/// model_bytes_per_iteration, gathered_bytes_per_iteration (bytes this rank
/// received through the all-gathers and reduce-scatters).
template <class ExecutionSpace, class Matrix, class T, class Mem>
Report resume(const ExecutionSpace& exec, const Problem<Matrix>& A, const Options& options, State<T, Mem>& state,
              const Observer& observer = {}) {
  Report header =
      kfactor::nmf::detail::report_header<ExecutionSpace, Matrix>(options, A.global_rows, A.global_cols, A.global_nnz);
  header.info["mpi_ranks"] = std::to_string(A.size);
  header.info["grid"] = to_string(A.grid);
  header.info["distribution"] =
      A.grid.one_d ? "1D: rows of A and W, columns of A and H per rank, nnz-balanced"
                   : "2D grid " + to_string(A.grid) +
                         ": one block of A per rank, nnz-balanced; rows of W and H^T in equal pieces of its row and "
                         "column block";
  header.info["comm_engine"] = state.comm->coll->template engine_name<ExecutionSpace, Mem>();
  const auto before = state.comm_stats();
  const int first = state.iteration;
  Report r = kfactor::nmf::detail::resume_on(
      exec, options, state, observer, std::move(header), [&] { step(exec, A, options, state); },
      [&] { return evaluate(exec, A, options, state); });
  const auto after = state.comm_stats();
  const double comm_s = after.seconds - before.seconds;
  r.timings.set("communication", comm_s);
  r.timings.set("compute", r.seconds - comm_s);
  const int its = state.iteration - first;
  if (its > 0) {
    r.timings.set("per_iteration", r.seconds / its);
    const auto model = epoch_volume(A.global_rows, A.global_cols, options.rank, A.size, sizeof(T), A.grid);
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
  const auto& c = *state.comm;
  return c.gather_full(exec, state.W, c.w, c.w_across, "kfactor::nmf::W_full");
}
/// The full Ht = H^T (D x K) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_Ht(const ExecutionSpace& exec, State<T, Mem>& state) {
  const auto& c = *state.comm;
  return c.gather_full(exec, state.Ht, c.h, c.h_across, "kfactor::nmf::Ht_full");
}

}  // namespace kfactor::distributed::nmf

// Explicit instantiations live in src/distributed/distributed.cpp (dense and
// CSR input).
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_NMF_ETI_MATRIX(EXTERN, S, T, M)                                               \
  EXTERN template Problem<M> make_problem<S, M>(const S&, MPI_Comm, const M&, Grid);                      \
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
