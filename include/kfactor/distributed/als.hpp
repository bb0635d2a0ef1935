#pragma once
/// \file
/// Distributed ALS over MPI (header-only; needs a build with
/// KFACTOR_HAVE_MPI): the single-rank ALS of kfactor/als/als.hpp run on each
/// rank's rows with an MPI communication policy. Nothing of the algorithm
/// is repeated here: step() is kfactor::als::detail::iterate(), evaluate()
/// is kfactor::als::detail::metrics() and resume() is
/// kfactor::als::detail::run(), called with detail::MpiPolicy instead of
/// als::detail::SingleProcess (whose half-steps read whole factors and whose
/// sums are identities). The policy's half-step is the single-rank kernel
/// (BALS tiles or CSR, batched team Cholesky) followed by an all-gather, or
/// its column blocks around a ring (blocked layout); its sums are
/// all-reductions. Only the partition (which rows a rank owns, the global
/// orderings) and the collectives are new here.
///
/// **Layout.** Users (rows of R, m) and items (columns of R, n) are split
/// into P contiguous blocks balanced by nonzeros (kfactor::distributed::
/// balanced_column_blocks on the row and column counts, adjusted so no
/// block is empty: P <= min(m, n)). Rank p owns
///   - rows [u_p, u_{p+1}) of R (LocalProblem::train, global item ids), the
///     same rows of the test sets, and rows u_p.. of X;
///   - rows [i_p, i_{p+1}) of R^T (LocalProblem::train_t, global user ids)
///     and rows i_p.. of Y;
/// plus full replicas X_all (m x f) and Y_all (n x f), refreshed by an
/// all-gather after each half-step. R is thus stored twice, each copy
/// partitioned once, like the single-rank solver's two traversal structures.
///
/// **One iteration:**
/// ```
///   X_p = half_step(users_p, Y_all)     local (each row's normal equations need
///                                       only its ratings and Y)
///   X_all = all-gather(X_p)             (m - m_p) f words in
///   Y_p = half_step(items_p, X_all)     local
///   Y_all = all-gather(Y_p)             (n - n_p) f words in
/// ```
/// A half-step that fails on one rank (Cholesky of a matrix that is not
/// positive definite, allocation) is agreed (kfactor::distributed::agree:
/// one small all-reduction per half-step), so every rank throws the error.
/// **Communication volume per iteration and rank:** (P-1)/P (m + n) f words
/// of T (averaged over ranks), in 2 all-gathers; evaluate() adds one
/// all-reduction of 12 doubles. iteration_volume() evaluates it.
///
/// **Blocked factor layout** (Options::factor_layout = blocked; `auto`
/// picks it when the replicas (m + n) f sizeof(T) would exceed
/// Options::factor_memory_budget). No rank holds a whole factor: the same
/// 1D partition of rows, but instead of replicas the other factor's row
/// blocks travel around a ring of the P ranks. Per batch of the rank's
/// rows (the single-rank batches of at most max_batch_bytes of normal
/// equations):
/// ```
///   F = own block of Y (rank p: items [i_p, i_{p+1}))
///   for s = 0 .. P-1:                          q = (p + s) mod P, F = block q
///     S1, S2 += partial normal equations of the batch's rows over the
///               ratings in items [i_q, i_{q+1})  (half_step.hpp,
///               NormalEquationPart: the first block starts from zero, the
///               last adds lambda_u)
///     if s < P-1: send F to rank p-1, receive block q+1 from rank p+1
///   solve the batch's systems into X_p
/// ```
/// and the same for the item half-step with X blocks. The ratings are
/// split once more, by column block: the rank's users' ratings as P
/// traversal structures with the other factor's ids local to block q (the
/// same row order and tile height in all P, so the batches line up), and
/// the same for its items. Every rank runs the same number of batches (the
/// most any rank needs; spare ones are empty), so the shifts stay paired.
///
/// Memory per rank, blocked: X_p (m_p f) and Y_p (n_p f); two ring buffers
/// of max_q max(m_q, n_q) rows of f (at most two blocks of the other factor
/// are resident besides the own one); one batch of normal equations
/// (<= max_batch_bytes, as on one rank); the rank's ratings twice (users',
/// items'), each split into P column blocks, and its ratings and test
/// entries once more for evaluate(). With nnz-balanced blocks that is about
/// (m + n) f / P + 2 max(m, n) f / P words of factors instead of
/// (m + n) f (1 + 1/P). P = 1 is the single-rank solver.
///
/// Communication, blocked: b_u (P-1) and b_i (P-1) point-to-point shifts
/// per iteration, where b_u, b_i are the most batches any rank runs per
/// half-step; each rank receives b_u (n - n_p) f + b_i (m - m_p) f words,
/// averaged over ranks (P-1)/P (b_u n + b_i m) f: the all-gathers' volume
/// times the number of batches (1 when a rank's normal equations fit
/// max_batch_bytes). evaluate() adds one rotation of Y ((P-1) shifts,
/// (P-1)/P n f words) and the 12-double all-reduction.
/// iteration_volume(..., blocked, b_u, b_i) and State::iteration_volume()
/// evaluate it. The shifts are blocking (not overlapped with the build).
///
/// **Equality with the single-rank solver.** A row's normal equations are
/// sequential sums over the row's nonzeros in column order, whatever the
/// tile, batch or team size (detail/half_step.hpp), and the rank's local
/// structures keep the single-rank column order (with --reorder, the
/// column orderings are computed from the global counts). So in the
/// replicated layout X and Y are bit for bit those of kfactor::als on any
/// number of ranks (tested for P = 1..4, float and double, tiled and CSR,
/// with and without reordering). In the blocked layout rank p continues
/// each row's sums block by block in the order p, p+1, .., P-1, 0, .., p-1
/// (and, with reordering, by count within each block): the same terms
/// summed in another order, so X and Y differ from the single-rank ones by
/// rounding that the iterations carry along (bit for bit on one rank);
/// tests/distributed checks max |X - X_1| / max |X_1| <= 1e-9 in double
/// and <= 1e-4 in float after 4 iterations for P = 1..4 (measured: about
/// 1e-14 and 7e-6). The metrics are
/// sums of per-rank partial sums: equal to the single-rank ones within
/// 1e-12 (relative, double) / 1e-5 (float) in the replicated layout, 1e-9 /
/// 1e-3 in the blocked one.
///
/// **Implicit feedback** (Options::implicit): the rank's traversal
/// structures hold the confidence weights of its ratings, and the
/// evaluation its ratings. A half-step's Y^T Y needs no communication in
/// the replicated layout (every rank holds the gathered factor whole); in
/// the blocked layout it is the sum of the ranks' Grams of their own rows
/// (one all-reduction of f^2 values per half-step). The objective sums the
/// ranks' observed terms, Grams and regularizers in the metrics'
/// all-reduction (2 f^2 + 2 values). Solver cg runs in the replicated
/// layout only (UsageError in the blocked one: every CG step would rotate
/// the other factor around the ring).
///
/// **Ranking metrics** (implicit, with a held-out split or a given test
/// set): evaluate() runs the single-rank evaluation's ranking
/// (kfactor::als::detail::ranking) through the policy. Each rank ranks its
/// users that have a positive held-out item against the gathered Y
/// (replicated), or block by block around the ring (blocked: each block's
/// top K, the block's training items excluded, merged into the running top
/// K by score and global item index; one more rotation of Y per
/// evaluation), and the metrics' seven per-user sums are all-reduced. The
/// lists are the single-rank lists wherever the scores are: in the
/// replicated layout the factors are the single-rank ones bit for bit, so
/// the metrics equal the single-rank ones up to the order of the sums
/// (1e-12 relative); in the blocked layout the factors differ by rounding,
/// and a metric can move only where two of a user's items score within that
/// rounding of each other (tests/als/test_als_implicit_mpi.cpp: within 1e-9
/// of one rank in double, on 1 to 3 ranks, either layout).
/// split_per_user() holds out a per-user split (leave-k-out,
/// leave-last-k-out) on the ranks' parts of the ratings.
///
/// **Checkpoints.** State::visit lists the rank's rows of X and Y under the
/// single-rank names, in both layouts (load_checkpoint calls
/// State::reset_workspace(), which marks the gathered replicas stale); with row_blocks() one file with the
/// full factors is written (kfactor::save_checkpoint(comm, ...)),
/// restartable on any number of ranks, in either layout, or by the
/// single-rank als.

#include <kfactor/als/als.hpp>
#include <kfactor/als/split.hpp>
#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/blocks.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/distributed/read.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace kfactor::distributed::als {

using kfactor::als::LambdaWeighting;
using kfactor::als::Layout;

/// Where the factors live between half-steps (file comment).
enum class FactorLayout {
  replicated,  ///< every rank holds X and Y whole, all-gathered after each half-step
  blocked,     ///< rows only; the other factor's blocks rotate around a ring
  automatic    ///< blocked when the replicas exceed factor_memory_budget (and P > 1)
};
inline const char* to_string(FactorLayout l) {
  return l == FactorLayout::replicated ? "replicated" : l == FactorLayout::blocked ? "blocked" : "auto";
}
inline FactorLayout parse_factor_layout(const std::string& s) {
  if (s == "replicated") return FactorLayout::replicated;
  if (s == "blocked") return FactorLayout::blocked;
  if (s == "auto") return FactorLayout::automatic;
  throw UsageError("factor layout must be replicated, blocked or auto, got '" + s + "'");
}

/// The single-rank options plus the distributed factor layout. Converts
/// implicitly from kfactor::als::Options (layout auto, default budget). The
/// factor layout changes only rounding, so visit() (the base's) leaves it out.
struct Options : kfactor::als::Options {
  FactorLayout factor_layout = FactorLayout::automatic;
  /// automatic: the most bytes the replicas X_all + Y_all ((m + n) f
  /// sizeof(T)) may take on a rank before the blocked layout is used.
  std::size_t factor_memory_budget = std::size_t(2) << 30;
  Options() = default;
  Options(const kfactor::als::Options& o) : kfactor::als::Options(o) {}  // NOLINT(google-explicit-constructor)
};

/// The layout `o` gives for an m x n problem at f on P ranks (replicated or blocked).
inline FactorLayout resolve_layout(const Options& o, std::int64_t m, std::int64_t n, std::size_t value_bytes, int P) {
  if (o.factor_layout != FactorLayout::automatic) return o.factor_layout;
  const double replicas = double(m + n) * double(o.rank) * double(value_bytes);
  return P > 1 && replicas > double(o.factor_memory_budget) ? FactorLayout::blocked : FactorLayout::replicated;
}

/// One rank's share of an als::Problem (see the file comment).
template <class T, class MemorySpace>
struct LocalProblem {
  CsrMatrix<T, MemorySpace> train;                  ///< rows [u_p, u_{p+1}) of R: m_p x n
  CsrMatrix<T, MemorySpace> train_t;                ///< rows [i_p, i_{p+1}) of R^T: n_p x m
  CsrMatrix<T, MemorySpace> test;                   ///< rows [u_p, u_{p+1}) of the held-out split (empty: none)
  CsrMatrix<T, MemorySpace> given_test;             ///< the same rows of the user-given test set (empty: none)
  std::vector<ordinal_t> user_bounds, item_bounds;  ///< P + 1 each
  std::int64_t users = 0, items = 0, nnz = 0, test_nnz = 0, given_test_nnz = 0;
  double test_fraction = 0.0;
  std::uint64_t split_seed = 0;
  int rank = 0, size = 1;
  [[nodiscard]] std::int64_t user_begin() const { return user_bounds[rank]; }
  [[nodiscard]] std::int64_t item_begin() const { return item_bounds[rank]; }
  [[nodiscard]] std::int64_t local_users() const { return user_bounds[rank + 1] - user_bounds[rank]; }
  [[nodiscard]] std::int64_t local_items() const { return item_bounds[rank + 1] - item_bounds[rank]; }
};

/// Collective. Every rank passes the same full problem (InputError on every
/// rank when shapes or nnz differ) and keeps its blocks. UsageError when
/// P > min(m, n).
template <class ExecutionSpace, class T, class MemorySpace>
LocalProblem<T, MemorySpace> distribute(const ExecutionSpace& exec, MPI_Comm comm,
                                        const kfactor::als::Problem<T, MemorySpace>& full) {
  LocalProblem<T, MemorySpace> lp;
  MPI_Comm_rank(comm, &lp.rank);
  MPI_Comm_size(comm, &lp.size);
  const auto& R = full.train;
  lp.users = R.num_rows();
  lp.items = R.num_cols;
  lp.nnz = static_cast<std::int64_t>(R.nnz());
  lp.test_nnz = static_cast<std::int64_t>(full.test.nnz());
  lp.given_test_nnz = static_cast<std::int64_t>(full.given_test.nnz());
  lp.test_fraction = full.test_fraction;
  lp.split_seed = full.split_seed;
  require_same(comm, static_cast<std::uint64_t>(lp.users), "the ratings' users");
  require_same(comm, static_cast<std::uint64_t>(lp.items), "the ratings' items");
  require_same(comm, static_cast<std::uint64_t>(lp.nnz), "the number of training ratings");
  require_same(comm, static_cast<std::uint64_t>(lp.test_nnz), "the number of test ratings");
  require_same(comm, static_cast<std::uint64_t>(lp.given_test_nnz), "the number of given test ratings");
  if (lp.size > std::min(lp.users, lp.items))
    throw UsageError("distributed als: " + std::to_string(lp.size) + " ranks for " + std::to_string(lp.users) +
                     " users and " + std::to_string(lp.items) + " items; use at most min(users, items) ranks");
  const auto Rt = transpose(exec, R);
  lp.user_bounds = detail::nonempty_balanced_blocks(detail::row_counts(R), lp.size);
  lp.item_bounds = detail::nonempty_balanced_blocks(detail::row_counts(Rt), lp.size);
  const int p = lp.rank;
  const ordinal_t u0 = lp.user_bounds[p], u1 = lp.user_bounds[p + 1];
  lp.train = detail::csr_rows(exec, R, u0, u1);
  lp.train_t = detail::csr_rows(exec, Rt, lp.item_bounds[p], lp.item_bounds[p + 1]);
  if (lp.test_nnz > 0) lp.test = detail::csr_rows(exec, full.test, u0, u1);
  if (lp.given_test_nnz > 0) lp.given_test = detail::csr_rows(exec, full.given_test, u0, u1);
  return lp;
}

/// Collective. The same LocalProblem from ratings that no rank holds whole:
/// each rank passes its part as kfactor::distributed::read_rows gave it
/// (distributed/read.hpp), and the same for an optional user-given test set
/// already in the ratings' index space (reindex_rows). The held-out split
/// (split_train_test: per entry, by its global row and column) runs on each
/// rank's part; the training rows then move to the nnz-balanced user blocks,
/// their transpose to the item blocks, the test sets to the user blocks.
/// Bit for bit what distribute(exec, comm, als::make_problem(...)) gives
/// for the whole ratings; the checks of als::make_problem and distribute,
/// with their messages, on every rank.
template <class ExecutionSpace, class T>
LocalProblem<T, typename ExecutionSpace::memory_space> distribute(const ExecutionSpace& exec, MPI_Comm comm,
                                                                  const RowSlice<T>& ratings, double test_fraction,
                                                                  std::uint64_t split_seed,
                                                                  const RowSlice<T>* given_test = nullptr) {
  if (!(test_fraction >= 0.0 && test_fraction < 1.0))
    throw UsageError("ALS test fraction must be in [0, 1), got " + std::to_string(test_fraction));
  detail::Collectives coll(comm);
  const auto& all = ratings.entries;
  if (ratings.global_nnz == 0) detail::throw_kind(3, "ALS: no ratings");
  {
    // als::make_problem's checks, each in its whole-matrix order (ranks hold
    // consecutive rows): the first non-finite rating, any non-zero, the
    // first pair given twice.
    std::int64_t local[4] = {-1, 0, -1, -1};
    for (std::size_t e = 0; e < all.nnz(); ++e) {
      if (local[0] < 0 && !std::isfinite(double(all.values[e]))) local[0] = static_cast<std::int64_t>(e);
      if (all.values[e] != T(0)) local[1] = 1;
      if (local[2] < 0 && e > 0 && all.rows[e] == all.rows[e - 1] && all.cols[e] == all.cols[e - 1]) {
        local[2] = all.rows[e];
        local[3] = all.cols[e];
      }
    }
    const auto facts = coll.allgather_host(std::vector<std::int64_t>(local, local + 4));
    const auto nnz = coll.allgather_host(std::vector<std::int64_t>{static_cast<std::int64_t>(all.nnz())});
    std::int64_t before = 0;
    bool nonzero = false;
    for (int q = 0; q < coll.size(); ++q) {
      if (facts[4 * q] >= 0)
        detail::throw_kind(3, "rating " + std::to_string(before + facts[4 * q]) + " is not finite");
      before += nnz[q];
      nonzero = nonzero || facts[4 * q + 1] != 0;
    }
    if (!nonzero) detail::throw_kind(3, "ALS: every rating is zero; there is nothing to factorize");
    for (int q = 0; q < coll.size(); ++q)
      if (facts[4 * q + 2] >= 0)
        detail::throw_kind(3, "rating (" + std::to_string(facts[4 * q + 2]) + ", " + std::to_string(facts[4 * q + 3]) +
                                  ") appears more than once: merge duplicate ratings first (io::DuplicatePolicy)");
  }
  RowSlice<T> train = ratings, test = ratings;
  if (test_fraction > 0.0) {
    auto [tr, te] = split_train_test(all, test_fraction, split_seed);
    train.entries = std::move(tr);
    test.entries = std::move(te);
  } else {
    test.entries = CooMatrix<T>{all.num_rows, all.num_cols, {}, {}, {}};
  }
  LocalProblem<T, typename ExecutionSpace::memory_space> lp;
  lp.rank = coll.rank();
  lp.size = coll.size();
  lp.users = all.num_rows;
  lp.items = all.num_cols;
  std::int64_t counts[3] = {static_cast<std::int64_t>(train.entries.nnz()),
                            static_cast<std::int64_t>(test.entries.nnz()),
                            given_test ? static_cast<std::int64_t>(given_test->entries.nnz()) : 0};
  coll.allreduce_sum_host(counts, 3);
  lp.nnz = counts[0];
  lp.test_nnz = counts[1];
  lp.given_test_nnz = counts[2];
  lp.test_fraction = test_fraction;
  lp.split_seed = split_seed;
  require_same(comm, static_cast<std::uint64_t>(lp.users), "the ratings' users");
  require_same(comm, static_cast<std::uint64_t>(lp.items), "the ratings' items");
  if (lp.size > std::min(lp.users, lp.items))
    throw UsageError("distributed als: " + std::to_string(lp.size) + " ranks for " + std::to_string(lp.users) +
                     " users and " + std::to_string(lp.items) + " items; use at most min(users, items) ranks");
  train.global_nnz = lp.nnz;
  lp.user_bounds = detail::nonempty_balanced_blocks(global_row_counts(comm, train), lp.size);
  lp.item_bounds = detail::nonempty_balanced_blocks(global_column_counts(comm, train), lp.size);
  {
    const RowSlice<T> users = move_rows(comm, train, lp.user_bounds);
    lp.train = local_csr(exec, users);
    lp.train_t = local_csr(exec, transpose_rows(comm, users, lp.item_bounds));
  }
  if (lp.test_nnz > 0) lp.test = local_csr(exec, move_rows(comm, test, lp.user_bounds));
  if (lp.given_test_nnz > 0) lp.given_test = local_csr(exec, move_rows(comm, *given_test, lp.user_bounds));
  return lp;
}

/// Collective. The per-user split `split` (kfactor::als::split_per_user,
/// als/split.hpp) of ratings as read_rows gave them: every rank holds whole
/// users, and each splits its own, so the parts are those of the split of
/// the whole ratings. Returns (train, test) with the ratings' row bounds and
/// id maps, for distribute() (the test part as its given test set, as the
/// single-rank CLI passes a split's test set to make_problem). `source`
/// names the input: leave-last-k-out on ratings without timestamps is an
/// InputError on every rank. UsageError when the ratings are not grouped by
/// row blocks (row_bounds empty).
template <class T>
std::pair<RowSlice<T>, RowSlice<T>> split_per_user(MPI_Comm comm, const RowSlice<T>& ratings,
                                                   const kfactor::als::PerUserSplit& split, const std::string& source) {
  if (ratings.row_bounds.empty())
    throw UsageError(
        "distributed split_per_user: the ratings are not in row blocks (read_rows or move_rows gives "
        "them so)");
  const auto* times = ratings.info.timestamps ? &ratings.timestamps : nullptr;
  auto [tr, te] =
      distributed::agree(comm, [&] { return kfactor::als::split_per_user(ratings.entries, split, times, source); });
  std::int64_t counts[2] = {static_cast<std::int64_t>(tr.nnz()), static_cast<std::int64_t>(te.nnz())};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_SUM, comm);
  auto part = [&](CooMatrix<T>&& entries, std::int64_t global_nnz) {
    RowSlice<T> p;
    p.entries = std::move(entries);
    p.row_bounds = ratings.row_bounds;
    p.row_ids = ratings.row_ids;
    p.col_ids = ratings.col_ids;
    p.global_nnz = global_nnz;
    p.info = ratings.info;
    p.rank = ratings.rank;
    p.size = ratings.size;
    return p;
  };
  return {part(std::move(tr), counts[0]), part(std::move(te), counts[1])};
}

/// Modelled communication of one iteration (step) per rank (file comment).
struct IterationVolume {
  double gather_words = 0;  ///< words of T received (all-gathers, or ring shifts), mean over ranks
  double collectives = 0;   ///< MPI calls: all-gathers, or point-to-point shifts
  double steps = 0;         ///< latency terms: ceil(log2 P) per all-gather, 1 per shift
  double bytes = 0;
  /// steps * alpha + bytes * beta, alpha the latency of one message step.
  [[nodiscard]] double seconds(double alpha, double beta) const { return steps * alpha + bytes * beta; }
};
/// Replicated: 2 all-gathers. Blocked: (user_batches + item_batches) (P - 1)
/// shifts (file comment).
inline IterationVolume iteration_volume(std::int64_t m, std::int64_t n, int f, int P, std::size_t value_bytes,
                                        FactorLayout layout = FactorLayout::replicated, std::int64_t user_batches = 1,
                                        std::int64_t item_batches = 1) {
  IterationVolume v;
  if (P <= 1) return v;
  const double share = double(P - 1) / double(P);
  if (layout == FactorLayout::blocked) {
    v.gather_words = share * (double(user_batches) * double(n) + double(item_batches) * double(m)) * f;
    v.collectives = double(user_batches + item_batches) * (P - 1);
    v.steps = v.collectives;
  } else {
    v.gather_words = share * double(m + n) * f;
    v.collectives = 2;
    v.steps = 2 * std::ceil(std::log2(double(P)));
  }
  v.bytes = v.gather_words * double(value_bytes);
  return v;
}

/// The blocked layout's per-rank structures (file comment), indexed by the
/// column block q of the other factor.
template <class T, class MemorySpace>
struct RingPlan {
  std::vector<kfactor::als::detail::HalfStepStructure<T, MemorySpace>> users, items;
  /// evaluate(): the rank's training ratings and test sets (warm and all) by item block, local item ids
  std::vector<CsrMatrix<T, MemorySpace>> train, test_warm, test, given_warm, given;
  std::int64_t user_batches = 0, item_batches = 0;  ///< the most any rank runs per half-step
};

namespace detail {

namespace ad = kfactor::als::detail;

/// The MPI communication policy of kfactor::als::detail::iterate() and
/// metrics() (see als::detail::SingleProcess for the contract): a
/// half-step reads the other factor whole (replicated: the gathered
/// replica) or block by block around the ring (blocked), sums are
/// all-reductions.
template <class T, class Mem>
struct MpiPolicy {
  std::shared_ptr<distributed::detail::Collectives> coll;
  FactorLayout layout = FactorLayout::replicated;  ///< replicated or blocked (resolved)
  std::vector<ordinal_t> user_bounds, item_bounds;
  DenseMatrix<T, Mem> X_all, Y_all;  ///< replicated: full replicas (alias X and Y on one rank); blocked: empty
  bool y_current = false;            ///< Y_all holds the gathered Y
  std::shared_ptr<const RingPlan<T, Mem>> ring;  ///< blocked only
  DenseMatrix<T, Mem> ring_buffer[2];            ///< blocked only: the other factor's blocks in transit

  template <class ExecutionSpace>
  void gather_y(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& Y) {
    if (layout == FactorLayout::replicated && coll->size() > 1) coll->allgather_rows(exec, Y, Y_all, item_bounds);
    y_current = true;
  }

  /// Blocked layout: calls visit(q, F) with F = block q of the factor whose
  /// own block is `own` (row bounds `bounds`), for q = p, p+1, .., p-1
  /// around the ring (P - 1 shifts through ring_buffer). Collective.
  template <class ExecutionSpace, class Visit>
  void rotate(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& own, const std::vector<ordinal_t>& bounds,
              Visit&& visit) {
    const int P = coll->size(), p = coll->rank();
    const std::size_t f = own.extent(1);
    DenseMatrix<T, Mem> cur = own;
    for (int k = 0; k < P; ++k) {
      const int q = (p + k) % P;
      visit(q, cur);
      if (k + 1 == P) break;
      const int qn = (q + 1) % P;
      DenseMatrix<T, Mem> next(ring_buffer[(k + 1) % 2].data(), std::size_t(bounds[qn + 1] - bounds[qn]), f);
      coll->shift_rows(exec, cur, (p + P - 1) % P, next, (p + 1) % P);
      cur = next;
    }
  }

  /// out (the rank's rows) = the half-step `side` from the other factor
  /// (the rank's rows `other`); then out where the next half-step reads it.
  /// A half-step that fails on one rank (a Cholesky that is not positive
  /// definite, an allocation) is agreed, so every rank throws it. Collective.
  template <class ExecutionSpace>
  void half_step(const ExecutionSpace& exec, ad::Side side, const kfactor::als::Plan<T, Mem>& p,
                 const DenseMatrix<T, Mem>& other, const DenseMatrix<T, Mem>& out, ad::Workspace<T, Mem>& ws) {
    const bool users = side == ad::Side::users;
    const MPI_Comm comm = coll->comm();
    if (layout == FactorLayout::blocked) {
      // Per batch of the rank's rows, the partial normal equations over
      // every block of the other factor, continued block by block.
      const auto& S = users ? ring->users : ring->items;
      const auto& other_bounds = users ? item_bounds : user_bounds;
      const int P = coll->size(), first = coll->rank();
      // Implicit feedback: G = Y^T Y, the sum of the ranks' Grams of their rows.
      ad::ImplicitGram<T, Mem> implicit;
      if (p.implicit) {
        distributed::agree(comm, [&] { ad::factor_gram(exec, other, ws.gram); });
        auto g = ad::gram_to_host(ws.gram);
        coll->allreduce_sum_host(g.data(), int(g.size()));
        ad::gram_from_host(exec, g, ws.gram);
        implicit.G = ws.gram;
      }
      distributed::agree(comm, [&] {
        ad::half_step_batches(exec, S[first], out, p.rank, p.batch_rows, p.max_batch_bytes, &ws,
                              users ? ring->user_batches : ring->item_batches,
                              [&](ordinal_t g0, ordinal_t g1, const auto& A, const auto& b) {
                                rotate(exec, other, other_bounds, [&](int q, const DenseMatrix<T, Mem>& F) {
                                  const ad::NormalEquationPart part{q != first, (q + 1) % P == first};
                                  ad::build_batch(exec, S[q], F, p.rank, p.lambda, p.weight_nnz, g0, g1, A, b, part,
                                                  implicit);
                                });
                              });
      });
      return;
    }
    if (users && !y_current) gather_y(exec, other);
    // Every rank holds the other factor whole: implicit feedback's Y^T Y
    // needs no communication.
    distributed::agree(comm, [&] { ad::plan_half_step(exec, side, p, users ? Y_all : X_all, out, ws); });
    if (users) {
      if (coll->size() > 1) coll->allgather_rows(exec, out, X_all, user_bounds);
    } else {
      gather_y(exec, out);
    }
  }

  /// Calls visit(sets, Y) with the gathered Y (replicated), or visit(sets of
  /// block q, Y block q) around the ring (blocked). Collective.
  template <class ExecutionSpace, class Visit>
  void for_each_item_block(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& Y,
                           const ad::EvaluationSets<T, Mem>& sets, Visit&& visit) {
    if (layout != FactorLayout::blocked) {
      if (!y_current) gather_y(exec, Y);
      visit(sets, Y_all);
      return;
    }
    const auto& r = *ring;
    auto at = [](const std::vector<CsrMatrix<T, Mem>>& M, int q) -> const CsrMatrix<T, Mem>* {
      return M.empty() ? nullptr : &M[q];
    };
    rotate(exec, Y, item_bounds, [&](int q, const DenseMatrix<T, Mem>& Yq) {
      visit(ad::EvaluationSets<T, Mem>{&r.train[q], at(r.test_warm, q), at(r.test, q), at(r.given_warm, q),
                                       at(r.given, q), item_bounds[q]},
            Yq);
    });
  }

  void sum(double* v, int n) { coll->allreduce_sum_host(v, n); }
};

}  // namespace detail

/// The single-rank State (this rank's rows of X and Y, iteration, seed,
/// history, workspace; `plan` is the rank's local plan) plus the partition
/// and the communication policy.
template <class T, class MemorySpace>
struct State : kfactor::als::State<T, MemorySpace> {
  using Base = kfactor::als::State<T, MemorySpace>;
  FactorLayout layout = FactorLayout::replicated;  ///< replicated or blocked (resolved)
  std::shared_ptr<distributed::detail::Collectives> coll;
  std::shared_ptr<detail::MpiPolicy<T, MemorySpace>> comm;
  std::int64_t users = 0, items = 0, user_begin = 0, item_begin = 0;

  /// After a checkpoint restore: the batch buffers, and the gathered Y is stale.
  void reset_workspace() {
    Base::reset_workspace();
    if (comm) comm->y_current = false;
  }
  [[nodiscard]] RowBlocks row_blocks() const {
    return {{"X", RowBlock{users, user_begin}}, {"Y", RowBlock{items, item_begin}}};
  }
  [[nodiscard]] distributed::detail::CommStats comm_stats() const { return coll->stats; }
  /// The modelled communication of one step() in this state's layout.
  [[nodiscard]] IterationVolume iteration_volume() const {
    const bool blocked = layout == FactorLayout::blocked;
    return als::iteration_volume(users, items, int(this->X.extent(1)), int(comm->user_bounds.size()) - 1, sizeof(T),
                                 layout, blocked ? comm->ring->user_batches : 1,
                                 blocked ? comm->ring->item_batches : 1);
  }
};

namespace detail {

template <class ExecutionSpace, class T, class Mem>
Kokkos::View<int*, Mem> counts_of(const ExecutionSpace& exec, const CsrMatrix<T, Mem>& A, const char* label) {
  Kokkos::View<int*, Mem> c(label, A.num_rows());
  auto rm = A.row_map;
  Kokkos::parallel_for(
      label, Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.num_rows()),
      KOKKOS_LAMBDA(ordinal_t r) { c(r) = int(rm(r + 1) - rm(r)); });
  return c;
}

/// kfactor::als::prepare for the rank's rows: the two local traversal
/// structures (als::detail::build_side, with the global column orderings
/// under `reorder`), the rank's counts and warm test entries. Collective.
template <class ExecutionSpace, class T, class Mem>
std::shared_ptr<const kfactor::als::Plan<T, Mem>> prepare(const ExecutionSpace& exec,
                                                          distributed::detail::Collectives& coll,
                                                          const LocalProblem<T, Mem>& lp, const Options& options,
                                                          FactorLayout layout,
                                                          std::shared_ptr<const RingPlan<T, Mem>>* ring_out) {
  using kfactor::als::Permutation;
  options.validate();
  const auto t0 = std::chrono::steady_clock::now();
  auto plan = std::make_shared<kfactor::als::Plan<T, Mem>>();
  ad::plan_parameters<ExecutionSpace>(*plan, options);
  {
    auto vals = lp.train.values;
    double bad = 0;
    Kokkos::parallel_reduce(
        "kfactor::als::check", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, lp.train.nnz()),
        KOKKOS_LAMBDA(offset_t e, double& b) { b += Kokkos::isfinite(double(vals(e))) ? 0 : 1; }, bad);
    coll.allreduce_sum_host(&bad, 1);
    if (bad > 0) throw InputError(std::to_string(static_cast<std::int64_t>(bad)) + " ratings are not finite");
  }
  if (options.implicit) {
    auto [count, first] = ad::negative_ratings(exec, lp.train, lp.user_begin());
    double total = double(count);
    coll.allreduce_sum_host(&total, 1);
    if (total > 0) throw ad::negative_rating_error(std::int64_t(total), first);
  }
  // Implicit feedback: the structures hold the confidence weights (the
  // evaluation keeps the ratings).
  CsrMatrix<T, Mem> Wu = lp.train, Wi = lp.train_t;
  distributed::agree(coll.comm(), [&] {
    Wu = ad::half_step_values(exec, lp.train, *plan);
    Wi = ad::half_step_values(exec, lp.train_t, *plan);
    ad::cg_parts(exec, Wu, Wi, *plan);
  });
  const kfactor::als::Options so = ad::structure_options(options);
  // Local work that may fail on one rank (allocations, the structures) is
  // agreed before the next collective.
  distributed::agree(coll.comm(), [&] {
    plan->user_count = counts_of(exec, lp.train, "kfactor::als::user_count");
    plan->item_count = counts_of(exec, lp.train_t, "kfactor::als::item_count");
  });
  // Global counts (host): the warm test entries need every item's count,
  // the reorderings every user's and item's.
  auto local_counts = [](const auto& A) {
    const auto c = distributed::detail::row_counts(A);
    return std::vector<std::int64_t>(c.begin(), c.end());
  };
  const auto user_counts = coll.allgather_host(local_counts(lp.train));
  const auto item_counts = coll.allgather_host(local_counts(lp.train_t));
  // One half-step's structure: rows ordered locally, columns in the global order.
  auto side = [&](const CsrMatrix<T, Mem>& A, const std::vector<std::int64_t>& other_counts, const std::string& name) {
    Permutation prow, pcol;
    CsrMatrix<T, Mem> Ar = A;
    if (options.reorder) {
      prow = kfactor::als::order_by_count(local_counts(A));
      pcol = kfactor::als::order_by_count(other_counts);
      Ar = kfactor::als::permute(exec, A, prow, pcol);
    }
    return ad::build_side(exec, Ar, prow.new_to_old, pcol.new_to_old, so, name, *plan);
  };
  // Blocked layout: one structure per column block q of the other factor
  // (its ids local to the block), all with the rank's row order, tile height
  // and total row counts (lambda_u and empty rows see the whole row). The
  // structure is chosen on the rank's own block (the tuner's Y is that block).
  auto blocked_side = [&](const CsrMatrix<T, Mem>& A, const std::vector<std::int64_t>& other_counts,
                          const std::vector<ordinal_t>& other_bounds, const std::string& name,
                          std::vector<CsrMatrix<T, Mem>>* column_blocks) {
    const int P = coll.size(), me = coll.rank();
    const auto counts = local_counts(A);
    Permutation prow;
    if (options.reorder) prow = kfactor::als::order_by_count(counts);
    Kokkos::View<int*, Mem> rc(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::row_count"),
                               counts.size());
    {
      auto h = Kokkos::create_mirror_view(rc);
      for (std::size_t r = 0; r < counts.size(); ++r) h(r) = int(counts[options.reorder ? prow.new_to_old[r] : r]);
      Kokkos::deep_copy(exec, rc, h);
    }
    std::vector<ad::HalfStepStructure<T, Mem>> out(P);
    std::pair<int, int> tile{0, 0};
    for (int k = 0; k < P; ++k) {
      const int q = (me + k) % P;  // own block first: it chooses the structure
      const ordinal_t c0 = other_bounds[q], c1 = other_bounds[q + 1];
      auto Aq = distributed::detail::csr_column_block(exec, A, c0, c1);
      if (column_blocks) (*column_blocks)[q] = Aq;
      Permutation pcol;
      if (options.reorder) {
        pcol = kfactor::als::order_by_count(
            std::vector<std::int64_t>(other_counts.begin() + c0, other_counts.begin() + c1));
        Aq = kfactor::als::permute(exec, Aq, prow, pcol);
      }
      CsrMatrix<T, Kokkos::HostSpace> Ah;
      if (k == 0 ? options.layout != Layout::csr : tile.first > 0) Ah = kfactor::copy_to<Kokkos::HostSpace>(Aq);
      if (k == 0) tile = ad::choose_tile(exec, Ah, options, name, *plan);
      out[q] = ad::make_structure(exec, Aq, Ah, tile.first > 0, tile.first > 0 ? tile.first : 1, tile.second,
                                  prow.new_to_old, pcol.new_to_old);
      out[q].row_count = rc;
    }
    // One launch order for every column block (from the rows' whole
    // counts): the blocks' partial sums meet in the same batch slots.
    const auto schedule =
        ad::launch_schedule(exec, rc, out[me].tiled ? out[me].xb : 1, std::numeric_limits<std::int64_t>::max());
    for (auto& S : out) {
      S.schedule = schedule.order;
      S.long_blocks = 0;  // the blocks' rows differ in length: no split
      S.segment_ptr = {0};
    }
    return out;
  };
  std::shared_ptr<RingPlan<T, Mem>> ring;
  distributed::agree(coll.comm(), [&] {
    Kokkos::View<int*, Mem> ic("kfactor::als::item_count_all", item_counts.size());
    auto h = Kokkos::create_mirror_view(ic);
    for (std::size_t i = 0; i < item_counts.size(); ++i) h(i) = int(item_counts[i]);
    Kokkos::deep_copy(exec, ic, h);
    plan->test_warm = ad::warm_entries(exec, lp.test, plan->user_count, ic);
    plan->given_test_warm = ad::warm_entries(exec, lp.given_test, plan->user_count, ic);
    if (layout == FactorLayout::replicated) {
      plan->users = side(Wu, item_counts, "user");
      plan->items = side(Wi, user_counts, "item");
      return;
    }
    ring = std::make_shared<RingPlan<T, Mem>>();
    const int P = coll.size();
    ring->train.resize(P);
    ring->users = blocked_side(Wu, item_counts, lp.item_bounds, "user", &ring->train);
    ring->items = blocked_side(Wi, user_counts, lp.user_bounds, "item", nullptr);
    if (plan->implicit)  // the evaluation's blocks hold the ratings, not the weights
      for (int q = 0; q < P; ++q)
        ring->train[q] =
            distributed::detail::csr_column_block(exec, lp.train, lp.item_bounds[q], lp.item_bounds[q + 1]);
    auto split = [&](const CsrMatrix<T, Mem>& M, std::vector<CsrMatrix<T, Mem>>& out) {
      if (M.nnz() == 0) return;
      out.resize(P);
      for (int q = 0; q < P; ++q)
        out[q] = distributed::detail::csr_column_block(exec, M, lp.item_bounds[q], lp.item_bounds[q + 1]);
    };
    split(plan->test_warm, ring->test_warm);
    split(lp.test, ring->test);
    split(plan->given_test_warm, ring->given_warm);
    split(lp.given_test, ring->given);
    plan->users = ring->users[coll.rank()];  // the row geometry, and what record_plan reports
    plan->items = ring->items[coll.rank()];
    ring->user_batches = ad::half_step_batch_count(plan->users, plan->rank, plan->batch_rows, plan->max_batch_bytes);
    ring->item_batches = ad::half_step_batch_count(plan->items, plan->rank, plan->batch_rows, plan->max_batch_bytes);
  });
  if (layout == FactorLayout::blocked) {
    // Every rank runs as many batches as the busiest one (the shifts pair up).
    std::int64_t b[2] = {ring->user_batches, ring->item_batches};
    MPI_Allreduce(MPI_IN_PLACE, b, 2, MPI_INT64_T, MPI_MAX, coll.comm());
    ring->user_batches = b[0];
    ring->item_batches = b[1];
    plan->info["user_batches"] = std::to_string(b[0]);
    plan->info["item_batches"] = std::to_string(b[1]);
    *ring_out = ring;
  }
  ad::record_plan<ExecutionSpace>(plan->info, options, plan->users, plan->items);
  exec.fence();
  plan->preprocess_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

}  // namespace detail

/// Collective: the local plan and the single-rank initial state (Y uniform
/// in [0, 1/sqrt(f)) with the same counters, X zero). UsageError when
/// options.rank exceeds min(users, items).
template <class ExecutionSpace, class T, class Mem>
State<T, Mem> init(const ExecutionSpace& exec, MPI_Comm comm, const LocalProblem<T, Mem>& lp, const Options& options) {
  options.validate();
  if (options.rank > std::min(lp.users, lp.items))
    throw UsageError("ALS rank " + std::to_string(options.rank) +
                     " exceeds min(users, items) = " + std::to_string(std::min(lp.users, lp.items)));
  State<T, Mem> s;
  s.coll = std::make_shared<distributed::detail::Collectives>(comm);
  if (s.coll->size() != lp.size) throw UsageError("distributed als: problem was split for another communicator size");
  s.layout = resolve_layout(options, lp.users, lp.items, sizeof(T), lp.size);
  if (options.implicit && options.solver == kfactor::als::SolveMethod::cg && s.layout == FactorLayout::blocked)
    throw UsageError(
        "distributed als: solver cg needs the replicated factor layout (each CG step would rotate the other factor "
        "around the ring); use factor layout replicated, or solver cholesky");
  s.comm = std::make_shared<detail::MpiPolicy<T, Mem>>();
  auto& pol = *s.comm;
  pol.coll = s.coll;
  pol.layout = s.layout;
  pol.user_bounds = lp.user_bounds;
  pol.item_bounds = lp.item_bounds;
  s.plan = detail::prepare(exec, *s.coll, lp, options, s.layout, &pol.ring);
  const int f = options.rank;
  s.seed = options.seed;
  s.users = lp.users;
  s.items = lp.items;
  s.user_begin = lp.user_begin();
  s.item_begin = lp.item_begin();
  distributed::agree(comm, [&] {
    s.X = DenseMatrix<T, Mem>("kfactor::als::X", lp.local_users(), f);
    s.Y = DenseMatrix<T, Mem>("kfactor::als::Y", lp.local_items(), f);
    if (s.layout == FactorLayout::blocked) {
      // The ring buffers (the largest block of either factor) and the batch
      // buffers, now: nothing is allocated between the shifts of a step.
      std::size_t rows = 0;
      for (int q = 0; q < lp.size; ++q)
        rows = std::max<std::size_t>({rows, std::size_t(lp.user_bounds[q + 1] - lp.user_bounds[q]),
                                      std::size_t(lp.item_bounds[q + 1] - lp.item_bounds[q])});
      for (auto& buf : pol.ring_buffer)
        buf = DenseMatrix<T, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::ring_block"),
                                  lp.size > 1 ? rows : 0, f);
      const auto& pl = *s.plan;
      for (const auto* S : {&pl.users, &pl.items})
        kfactor::als::detail::reserve_workspace(*S, f, pl.batch_rows, pl.max_batch_bytes, s.workspace);
    } else if (s.coll->size() > 1) {
      pol.X_all =
          DenseMatrix<T, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::X_all"), lp.users, f);
      pol.Y_all =
          DenseMatrix<T, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::Y_all"), lp.items, f);
    } else {
      pol.X_all = s.X;
      pol.Y_all = s.Y;
    }
  });
  {
    // fill_uniform's counters (global row * f + column), on this rank's rows.
    const CounterRng rng(s.seed, RngStream::factor_h);
    const T hi = T(1.0 / std::sqrt(double(f)));
    const std::uint64_t r0 = static_cast<std::uint64_t>(s.item_begin), nf = static_cast<std::uint64_t>(f);
    auto Y = s.Y;
    Kokkos::parallel_for(
        "kfactor::als::init_y",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {Y.extent(0), Y.extent(1)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t j) { Y(i, j) = rng.uniform<T>((r0 + i) * nf + j, T(0), hi); });
  }
  pol.gather_y(exec, s.Y);
  exec.fence();
  return s;
}

/// One iteration: kfactor::als::detail::iterate with the MPI policy (user
/// half-step, X gathered or rotated, item half-step, Y likewise). Collective.
template <class ExecutionSpace, class T, class Mem>
void step(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, const Options& options, State<T, Mem>& s) {
  (void)lp;
  (void)options;  // the plan holds what the options decide
  kfactor::als::detail::iterate(exec, *s.plan, s, *s.comm);
}

/// The single-rank metrics (same names and order), from per-rank sums
/// all-reduced: identical on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
Metrics evaluate(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, const Options& options, State<T, Mem>& s) {
  (void)options;
  const auto& p = *s.plan;
  const kfactor::als::detail::EvaluationSets<T, Mem> sets{&lp.train, &p.test_warm, &lp.test, &p.given_test_warm,
                                                          &lp.given_test};
  return kfactor::als::detail::metrics(exec, p, s, sets, lp.test_nnz, lp.given_test_nnz, *s.comm);
}

/// Continues `state` until options.stop (collective; the observer runs on
/// every rank with identical metrics). Report as kfactor::als::resume's,
/// plus timings communication / compute and info mpi_ranks,
/// factor_layout, distribution, model_bytes_per_iteration,
/// gathered_bytes_per_iteration.
template <class ExecutionSpace, class T, class Mem>
Report resume(const ExecutionSpace& exec, const LocalProblem<T, Mem>& lp, const Options& options, State<T, Mem>& state,
              const Observer& observer = {}) {
  if (!state.coll) throw UsageError("distributed als: state has no communicator (make it with init)");
  auto& s = state;
  const int first_iteration = s.iteration;
  const auto before = s.coll->stats;
  double comm_in_steps = 0.0;
  const kfactor::als::detail::RunShape shape{lp.users,          lp.items,         lp.nnz,       lp.test_nnz,
                                             lp.given_test_nnz, lp.test_fraction, lp.split_seed};
  Report r = kfactor::als::detail::run<ExecutionSpace>(
      options, s, shape, observer,
      [&] {
        const double c0 = s.coll->stats.seconds;
        step(exec, lp, options, s);
        exec.fence();
        comm_in_steps += s.coll->stats.seconds - c0;
      },
      [&] { return evaluate(exec, lp, options, s); });
  const auto after = s.coll->stats;
  r.timings.set("communication", comm_in_steps);
  r.timings.set("compute", r.timings.get("iterations") - comm_in_steps);
  r.info["mpi_ranks"] = std::to_string(lp.size);
  r.info["comm_engine"] = s.coll->template engine_name<ExecutionSpace, Mem>();
  r.info["factor_layout"] = to_string(s.layout);
  r.info["distribution"] = s.layout == FactorLayout::blocked
                               ? "rows of R and X, rows of R^T and Y per rank, nnz-balanced; X and Y blocks rotated "
                                 "around a ring"
                               : "rows of R and X, rows of R^T and Y per rank, nnz-balanced; X and Y all-gathered";
  const int its = s.iteration - first_iteration;
  if (its > 0) {
    r.info["model_bytes_per_iteration"] = std::to_string(static_cast<std::int64_t>(s.iteration_volume().bytes));
    r.info["gathered_bytes_per_iteration"] = std::to_string((after.bytes_in - before.bytes_in) / its);
  }
  return r;
}

/// Fresh distributed solve: init, then resume. Collective.
template <class ExecutionSpace, class T, class Mem>
Result<State<T, Mem>> solve(const ExecutionSpace& exec, MPI_Comm comm, const LocalProblem<T, Mem>& lp,
                            const Options& options, const Observer& observer = {}) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<State<T, Mem>> res{init(exec, comm, lp, options), {}};
  res.report = resume(exec, lp, options, res.state, observer);
  res.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

/// The full X (m x f) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_X(const ExecutionSpace& exec, State<T, Mem>& s) {
  return s.coll->allgather_rows(exec, s.X, s.comm->user_bounds, "kfactor::als::X_full");
}
/// The full Y (n x f) on every rank. Collective.
template <class ExecutionSpace, class T, class Mem>
DenseMatrix<T, Mem> gather_Y(const ExecutionSpace& exec, State<T, Mem>& s) {
  return s.coll->allgather_rows(exec, s.Y, s.comm->item_bounds, "kfactor::als::Y_full");
}

/// X and Y whole on rank `root` (host memory; empty on the other ranks),
/// through MPI_Gatherv: for writing the factors without replicating them.
/// Collective.
template <class ExecutionSpace, class T, class Mem>
std::pair<Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>,
          Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace>>
gather_factors_to(const ExecutionSpace& exec, State<T, Mem>& s, int root) {
  return {s.coll->gather_rows_to(exec, s.X, s.comm->user_bounds, root),
          s.coll->gather_rows_to(exec, s.Y, s.comm->item_bounds, root)};
}

}  // namespace kfactor::distributed::als

// Explicit instantiations live in src/distributed/distributed.cpp.
#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_DISTRIBUTED_ALS_ETI(EXTERN, S, T)                                                                     \
  EXTERN template LocalProblem<T, S::memory_space> distribute<S, T, S::memory_space>(                                 \
      const S&, MPI_Comm, const kfactor::als::Problem<T, S::memory_space>&);                                          \
  EXTERN template State<T, S::memory_space> init<S, T, S::memory_space>(                                              \
      const S&, MPI_Comm, const LocalProblem<T, S::memory_space>&, const Options&);                                   \
  EXTERN template void step<S, T, S::memory_space>(const S&, const LocalProblem<T, S::memory_space>&, const Options&, \
                                                   State<T, S::memory_space>&);                                       \
  EXTERN template Metrics evaluate<S, T, S::memory_space>(const S&, const LocalProblem<T, S::memory_space>&,          \
                                                          const Options&, State<T, S::memory_space>&);                \
  EXTERN template Report resume<S, T, S::memory_space>(const S&, const LocalProblem<T, S::memory_space>&,             \
                                                       const Options&, State<T, S::memory_space>&, const Observer&);  \
  EXTERN template Result<State<T, S::memory_space>> solve<S, T, S::memory_space>(                                     \
      const S&, MPI_Comm, const LocalProblem<T, S::memory_space>&, const Options&, const Observer&);                  \
  EXTERN template DenseMatrix<T, S::memory_space> gather_X<S, T, S::memory_space>(const S&,                           \
                                                                                  State<T, S::memory_space>&);        \
  EXTERN template DenseMatrix<T, S::memory_space> gather_Y<S, T, S::memory_space>(const S&, State<T, S::memory_space>&);
#define KFACTOR_DISTRIBUTED_ALS_EXTERN(S, T) KFACTOR_DISTRIBUTED_ALS_ETI(extern, S, T)
#if !defined(KFACTOR_DISTRIBUTED_INSTANTIATING)
namespace kfactor::distributed::als {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_ALS_EXTERN)
}  // namespace kfactor::distributed::als
#endif
#undef KFACTOR_DISTRIBUTED_ALS_EXTERN

#endif  // KFACTOR_HAVE_MPI
