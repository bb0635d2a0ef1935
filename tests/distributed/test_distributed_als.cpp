// Distributed ALS under mpiexec (1..4 ranks): X and Y equal the single-rank
// solver's bit for bit (tiled and CSR, with and without reordering, float and
// double, autotuned tiles), the metrics within reduction-order rounding;
// bad input is refused on every rank; a checkpoint written on 2 ranks
// restarts on 3 and on one process and ends where the uninterrupted run ends.
#include "mpi_test_util.hpp"
#include <kfactor/als/als.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace {
using kfactor::test::first_ranks;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

using namespace kfactor;
namespace da = kfactor::distributed::als;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

/// Planted rank-4 ratings, m x n, skewed counts (the first users and items
/// rate more), users m-3.. and item n-2 without ratings (cold).
template <class T>
CooMatrix<T> ratings(int m, int n, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<T> c;
  c.num_rows = m;
  c.num_cols = n;
  for (int u = 0; u < m - 3; ++u)
    for (int i = 0; i < n; ++i) {
      if (i == n - 2) continue;
      const std::uint64_t key = std::uint64_t(u) * n + i;
      const double p = (u < m / 6 ? 0.6 : 0.12) * (i < n / 5 ? 1.5 : 1.0);
      if (rng.uniform(4 * key) >= p) continue;
      double v = 0;
      for (int k = 0; k < 4; ++k) v += rng.uniform((1ull << 40) + u * 4 + k) * rng.uniform((2ull << 40) + i * 4 + k);
      c.rows.push_back(u);
      c.cols.push_back(i);
      c.values.push_back(T(v + 0.1 * (rng.uniform(4 * key + 1) - 0.5)));
    }
  return c;
}

template <class T>
bool bitwise_equal(const DenseMatrix<T, Mem>& X, const DenseMatrix<T, Mem>& Y) {
  if (X.extent(0) != Y.extent(0) || X.extent(1) != Y.extent(1)) return false;
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Y);
  for (std::size_t i = 0; i < hx.extent(0); ++i)
    for (std::size_t j = 0; j < hx.extent(1); ++j)
      if (!(hx(i, j) == hy(i, j))) return false;
  return true;
}

struct Case {
  bool tiled, reorder;
  int xb, yb;
};

template <class T>
void expect_same_iterates(const Case& c, double metric_tol) {
  const Exec exec;
  const auto coo = ratings<T>(90, 70, 1);
  // A user-given test set: every 7th training entry (same id space).
  CooMatrix<T> given;
  given.num_rows = coo.num_rows;
  given.num_cols = coo.num_cols;
  for (std::size_t e = 0; e < coo.nnz(); e += 7) {
    given.rows.push_back(coo.rows[e]);
    given.cols.push_back(coo.cols[e]);
    given.values.push_back(coo.values[e]);
  }
  // And entries of a user and an item without training ratings (cold).
  for (const auto& [u, i] : {std::pair<int, int>{89, 0}, std::pair<int, int>{1, 68}}) {
    given.rows.push_back(u);
    given.cols.push_back(i);
    given.values.push_back(T(2));
  }
  const auto problem = als::make_problem(exec, coo, 0.15, 5, &given);
  als::Options o;
  o.rank = 6;
  o.max_iterations = 4;
  o.lambda = 0.05;
  o.tiled = c.tiled;
  o.reorder = c.reorder;
  o.xb = c.xb;
  o.yb = c.yb;
  o.seed = 9;
  const auto ref = als::solve(exec, problem, o);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  auto res = da::solve(exec, MPI_COMM_WORLD, lp, o);
  SCOPED_TRACE("P = " + std::to_string(world_size()) + (c.tiled ? " tiled" : " csr") + (c.reorder ? " reorder" : "") +
               " xb " + std::to_string(c.xb));
  EXPECT_TRUE(bitwise_equal(da::gather_X(exec, res.state), ref.state.X));
  EXPECT_TRUE(bitwise_equal(da::gather_Y(exec, res.state), ref.state.Y));
  ASSERT_EQ(res.report.metrics.items.size(), ref.report.metrics.items.size());
  for (std::size_t i = 0; i < ref.report.metrics.items.size(); ++i) {
    const auto& [name, v] = ref.report.metrics.items[i];
    EXPECT_EQ(res.report.metrics.items[i].first, name);
    EXPECT_NEAR(res.report.metrics.items[i].second, v, metric_tol * std::max(1.0, std::abs(v))) << name;
  }
  ASSERT_EQ(res.state.history.size(), 4u);
  // Not vacuous: the loss fell, and there are cold test entries.
  EXPECT_LT(res.state.history.last().get("loss"), res.state.history.rows.front()[3]);
  EXPECT_GT(res.report.metrics.get("given_test_cold_fraction"), 0.0);
  EXPECT_NE(res.report.metrics.get("given_test_rmse"), res.report.metrics.get("given_test_rmse_all"));
}

TEST(DistributedAls, DoubleEqualsSingleRank) {
  for (const Case c : {Case{true, false, 4, 16}, Case{false, false, 0, 0}, Case{true, true, 2, 32}, Case{false, true, 0, 0},
                       Case{true, false, 0, 0} /* autotuned per rank */})
    expect_same_iterates<double>(c, 1e-12);
}

TEST(DistributedAls, FloatEqualsSingleRank) {
  for (const Case c : {Case{true, true, 4, 16}, Case{false, false, 0, 0}}) expect_same_iterates<float>(c, 1e-5);
}

TEST(DistributedAls, PartitionAndVolume) {
  const Exec exec;
  const auto problem = als::make_problem(exec, ratings<double>(90, 70, 2), 0.0, 1);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  const int P = world_size();
  for (int p = 0; p < P; ++p) {
    EXPECT_LT(lp.user_bounds[p], lp.user_bounds[p + 1]);
    EXPECT_LT(lp.item_bounds[p], lp.item_bounds[p + 1]);
  }
  std::int64_t loc[2] = {std::int64_t(lp.train.nnz()), std::int64_t(lp.train_t.nnz())}, tot[2];
  MPI_Allreduce(loc, tot, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(tot[0], lp.nnz);
  EXPECT_EQ(tot[1], lp.nnz);
  als::Options o;
  o.rank = 5;
  o.max_iterations = 2;
  o.tiled = false;
  auto res = da::solve(exec, MPI_COMM_WORLD, lp, o);
  // The all-gathers received exactly the other ranks' rows of X and Y.
  const std::int64_t got = res.state.comm_stats().bytes_in;
  const std::int64_t want = P == 1 ? 0 : 2 * (90 - lp.local_users() + 70 - lp.local_items()) * 5 * 8;
  EXPECT_EQ(got, want + (P == 1 ? 0 : (70 - lp.local_items()) * 5 * 8));  // + the gather of Y0 in init
  // The model is the average of that over ranks.
  std::int64_t all = 0, iter_bytes = got - (P == 1 ? 0 : (70 - lp.local_items()) * 5 * 8);
  MPI_Allreduce(&iter_bytes, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_NEAR(double(all) / P / 2, da::iteration_volume(90, 70, 5, P, 8).bytes, 1e-6);
}

TEST(DistributedAls, NonFiniteRatingsRefusedOnEveryRank) {
  const Exec exec;
  auto coo = ratings<double>(40, 30, 3);
  coo.values[0] = NAN;
  const auto problem = als::make_problem(exec, ratings<double>(40, 30, 3), 0.0, 1);
  auto bad = problem;
  bad.train = to_csr(exec, coo);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, bad);
  als::Options o;
  o.rank = 3;
  EXPECT_THROW(da::init(exec, MPI_COMM_WORLD, lp, o), InputError);
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(DistributedAls, CheckpointOnTwoRanksRestartsOnThreeAndOnOne) {
  const Exec exec;
  const auto dir = shared_dir("dist_als");
  const std::string path = (dir / "als.h5").string();
  const auto problem = als::make_problem(exec, ratings<double>(90, 70, 4), 0.1, 2);
  als::Options o;
  o.rank = 5;
  o.xb = 2;
  o.yb = 16;
  const auto meta = checkpoint_meta<double, Exec>("als", "{\"test\":1}", fingerprint(exec, problem.train), o.rank);
  const int writers = std::min(2, world_size()), readers = std::min(3, world_size());
  DenseMatrix<double, Mem> X_full, Y_full;
  if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
    const auto lp = da::distribute(exec, c, problem);
    o.max_iterations = 6;
    auto full = da::solve(exec, c, lp, o);
    X_full = da::gather_X(exec, full.state);
    Y_full = da::gather_Y(exec, full.state);
    o.max_iterations = 3;
    auto part = da::init(exec, c, lp, o);
    da::solve(exec, lp, o, part, distributed::checkpoint_observer(c, path, 3, part, meta));
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (MPI_Comm c = first_ranks(readers); c != MPI_COMM_NULL) {
    const auto lp = da::distribute(exec, c, problem);
    o.max_iterations = 6;
    auto s = da::init(exec, c, lp, o);
    const auto stored = load_checkpoint(c, path, s, meta, s.row_blocks());
    EXPECT_EQ(stored.iteration, 3);
    EXPECT_EQ(s.iteration, 3);
    auto res = da::solve(exec, lp, o, s);
    EXPECT_EQ(res.report.info["continued_from"], "3");
    const auto X2 = da::gather_X(exec, s);
    const auto Y2 = da::gather_Y(exec, s);
    if (world_rank() == 0) {  // in both groups; ALS is bit for bit across rank counts
      EXPECT_TRUE(bitwise_equal(X2, X_full));
      EXPECT_TRUE(bitwise_equal(Y2, Y_full));
    }
    MPI_Comm_free(&c);
  }
  if (world_rank() == 0) {
    o.max_iterations = 6;
    auto s = als::init(exec, problem, o);
    load_checkpoint(path, s, meta);
    als::solve(exec, problem, o, s);
    EXPECT_TRUE(bitwise_equal(s.X, X_full));
    EXPECT_TRUE(bitwise_equal(s.Y, Y_full));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
