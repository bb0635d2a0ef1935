// Distributed ALS under mpiexec (1..4 ranks): in the replicated layout X
// and Y equal the single-rank solver's bit for bit (tiled and CSR, with and
// without reordering, float and double, autotuned tiles), in the blocked
// layout within reduction-order rounding (bit for bit on one rank; several
// batches; ranks with one or two users), the metrics within
// reduction-order rounding; the blocked layout's volume is the model's and
// it never allocates a whole factor; bad input is refused on every rank; a
// checkpoint written on 2 ranks restarts on 3 and on one process (from
// either layout, in either layout) and ends where the uninterrupted run ends.
#include <kfactor/als/als.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/io/checkpoint.hpp>
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>
#include <impl/Kokkos_Profiling.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

/// max |A - B| / max |B| (host), infinity on a shape mismatch.
template <class T>
double relative_difference(const DenseMatrix<T, Mem>& A, const DenseMatrix<T, Mem>& B) {
  if (A.extent(0) != B.extent(0) || A.extent(1) != B.extent(1)) return INFINITY;
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
  double d = 0, mx = 0;
  for (std::size_t i = 0; i < ha.extent(0); ++i)
    for (std::size_t j = 0; j < ha.extent(1); ++j) {
      d = std::max(d, std::abs(double(ha(i, j)) - double(hb(i, j))));
      mx = std::max(mx, std::abs(double(hb(i, j))));
    }
  return d / mx;
}

struct Case {
  bool tiled, reorder;
  int xb, yb;
  da::FactorLayout layout = da::FactorLayout::replicated;
  std::int64_t batch_rows = 0;  ///< 0: automatic
  int users = 90;               ///< few users: ranks with one or two (some without ratings)
};

/// Tolerances of the blocked layout (the same sums in another order).
template <class T>
double blocked_factor_tol() {
  return sizeof(T) == 8 ? 1e-9 : 1e-4;
}

template <class T>
void expect_same_iterates(const Case& c, double metric_tol) {
  const Exec exec;
  const auto coo = ratings<T>(c.users, 70, 1);
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
  for (const auto& [u, i] : {std::pair<int, int>{c.users - 1, 0}, std::pair<int, int>{1, 68}}) {
    given.rows.push_back(u);
    given.cols.push_back(i);
    given.values.push_back(T(2));
  }
  const auto problem = als::make_problem(exec, coo, 0.15, 5, &given);
  als::Options o;
  o.rank = 6;
  o.stop.max_iterations = 4;
  o.lambda = 0.05;
  o.layout = c.tiled ? als::Layout::bals : als::Layout::csr;
  o.reorder = c.reorder;
  o.xb = c.xb;
  o.yb = c.yb;
  o.seed = 9;
  o.batch_rows = c.batch_rows;
  const auto ref = als::solve(exec, problem, o);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  da::Options dopt = o;
  dopt.factor_layout = c.layout;
  auto res = da::solve(exec, MPI_COMM_WORLD, lp, dopt);
  SCOPED_TRACE("P = " + std::to_string(world_size()) + (c.tiled ? " tiled" : " csr") + (c.reorder ? " reorder" : "") +
               " xb " + std::to_string(c.xb) + " " + da::to_string(c.layout) + " users " + std::to_string(c.users) +
               " batch " + std::to_string(c.batch_rows));
  ASSERT_EQ(res.state.layout, c.layout);
  EXPECT_EQ(res.report.info["factor_layout"], da::to_string(c.layout));
  const auto X = da::gather_X(exec, res.state), Y = da::gather_Y(exec, res.state);
  if (c.layout == da::FactorLayout::replicated || world_size() == 1) {
    EXPECT_TRUE(bitwise_equal(X, ref.state.X));
    EXPECT_TRUE(bitwise_equal(Y, ref.state.Y));
  } else {
    EXPECT_LE(relative_difference(X, ref.state.X), blocked_factor_tol<T>());
    EXPECT_LE(relative_difference(Y, ref.state.Y), blocked_factor_tol<T>());
    if (world_rank() == 0)
      std::printf("[ blocked  ] P=%d %s: X %.2e Y %.2e relative to one rank\n", world_size(),
                  sizeof(T) == 8 ? "double" : "float", relative_difference(X, ref.state.X),
                  relative_difference(Y, ref.state.Y));
  }
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
  for (const Case c : {Case{true, false, 4, 16}, Case{false, false, 0, 0}, Case{true, true, 2, 32},
                       Case{false, true, 0, 0}, Case{true, false, 0, 0} /* autotuned per rank */})
    expect_same_iterates<double>(c, 1e-12);
}

TEST(DistributedAls, FloatEqualsSingleRank) {
  for (const Case c : {Case{true, true, 4, 16}, Case{false, false, 0, 0}}) expect_same_iterates<float>(c, 1e-5);
}

constexpr auto blocked = da::FactorLayout::blocked;

TEST(DistributedAls, BlockedDoubleMatchesSingleRank) {
  for (const Case c :
       {Case{true, false, 4, 16, blocked}, Case{false, false, 0, 0, blocked}, Case{true, true, 2, 32, blocked},
        Case{false, true, 0, 0, blocked}, Case{true, false, 0, 0, blocked} /* autotuned on the own block */,
        Case{true, false, 2, 16, blocked, 6} /* several batches, different counts per rank */,
        Case{false, true, 0, 0, blocked, 1, 7} /* 7 users (3 cold): one or two per rank */})
    expect_same_iterates<double>(c, 1e-9);
}

TEST(DistributedAls, BlockedFloatMatchesSingleRank) {
  for (const Case c : {Case{true, true, 4, 16, blocked}, Case{false, false, 0, 0, blocked, 5}})
    expect_same_iterates<float>(c, 1e-3);
}

TEST(DistributedAls, AutoLayoutFollowsTheBudget) {
  const Exec exec;
  const auto problem = als::make_problem(exec, ratings<double>(90, 70, 2), 0.0, 1);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  da::Options o;
  o.rank = 4;
  o.stop.max_iterations = 1;
  o.factor_memory_budget = (90 + 70) * 4 * 8;  // the replicas fit exactly
  EXPECT_EQ(da::init(exec, MPI_COMM_WORLD, lp, o).layout, da::FactorLayout::replicated);
  o.factor_memory_budget -= 1;
  EXPECT_EQ(da::init(exec, MPI_COMM_WORLD, lp, o).layout,
            world_size() > 1 ? da::FactorLayout::blocked : da::FactorLayout::replicated);
  EXPECT_THROW(da::parse_factor_layout("2d"), UsageError);
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
  o.stop.max_iterations = 2;
  o.layout = als::Layout::csr;
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

TEST(DistributedAls, BlockedVolumeIsTheModel) {
  const Exec exec;
  const int m = 90, n = 70, f = 5;
  const auto problem = als::make_problem(exec, ratings<double>(m, n, 2), 0.0, 1);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  const int P = world_size();
  da::Options o;
  o.rank = f;
  o.stop.max_iterations = 2;
  o.layout = als::Layout::csr;
  o.batch_rows = 7;  // several batches per half-step, more on some ranks
  o.factor_layout = blocked;
  auto res = da::solve(exec, MPI_COMM_WORLD, lp, o);
  const auto& ring = *res.state.comm->ring;
  // The busiest rank's batch count, run by all.
  std::int64_t mine[2] = {(lp.local_users() + 6) / 7, (lp.local_items() + 6) / 7}, most[2];
  MPI_Allreduce(mine, most, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(ring.user_batches, most[0]);
  EXPECT_EQ(ring.item_batches, most[1]);
  if (P > 1) EXPECT_GT(ring.user_batches, 1);
  // Per iteration: every batch receives the other blocks once (step), and
  // evaluate() one more rotation of Y; nothing in init.
  const std::int64_t step_bytes =
      (ring.user_batches * (n - lp.local_items()) + ring.item_batches * (m - lp.local_users())) * f * 8;
  const std::int64_t eval_bytes = (n - lp.local_items()) * f * 8;
  EXPECT_EQ(res.state.comm_stats().bytes_in, 2 * (step_bytes + eval_bytes));
  std::int64_t all = 0;
  MPI_Allreduce(&step_bytes, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_NEAR(double(all) / P, res.state.iteration_volume().bytes, 1e-6);
  EXPECT_EQ(res.state.iteration_volume().collectives, P == 1 ? 0.0 : double((most[0] + most[1]) * (P - 1)));
}

// Kokkos Tools allocation hooks: the largest allocation of a run.
std::uint64_t g_largest = 0;
std::string g_largest_label;
// Allocations in the solver's memory space only: on a GPU the MPI staging
// buffer (host pinned memory) holds a ring shift's send and receive blocks,
// which is host memory, not the device the factors must fit.
void on_alloc(Kokkos_Profiling_SpaceHandle space, const char* label, const void*, std::uint64_t size) {
  if (std::string(space.name) != Exec::memory_space::name()) return;
  if (size > g_largest) {
    g_largest = size;
    g_largest_label = label;
  }
}

/// The largest single allocation of init + 2 iterations (with evaluate) on a
/// sparse problem whose factors outweigh the rank's ratings.
std::pair<std::uint64_t, std::string> largest_allocation(da::FactorLayout layout, bool tiled, int m, int n, int f) {
  const Exec exec;
  CooMatrix<double> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(17, RngStream::user);
  for (int u = 0; u < m; ++u) {
    std::vector<int> cols;
    for (int d = 0; d < 4; ++d) cols.push_back(int(rng.uniform(std::uint64_t(u) * 8 + d) * n));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int i : cols) {
      coo.rows.push_back(u);
      coo.cols.push_back(i);
      coo.values.push_back(1.0 + (u + i) % 5);
    }
  }
  const auto problem = als::make_problem(exec, coo, 0.1, 3);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  da::Options o;
  o.rank = f;
  o.stop.max_iterations = 2;
  o.layout = tiled ? als::Layout::bals : als::Layout::csr;
  o.xb = tiled ? 2 : 0;
  o.yb = tiled ? 32 : 0;
  o.batch_rows = 8;
  o.factor_layout = layout;
  g_largest = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_alloc);
  {
    auto s = da::init(exec, MPI_COMM_WORLD, lp, o);
    const Report rep = da::resume(exec, lp, o, s);
    EXPECT_TRUE(std::isfinite(rep.metrics.get("test_rmse")));
    if (layout == blocked) {
      EXPECT_EQ(s.comm->X_all.size(), 0u);
      EXPECT_EQ(s.comm->Y_all.size(), 0u);
      EXPECT_EQ(s.X.extent(0), std::size_t(lp.local_users()));
      EXPECT_EQ(s.Y.extent(0), std::size_t(lp.local_items()));
    }
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  return {g_largest, g_largest_label};
}

TEST(DistributedAls, BlockedLayoutNeverAllocatesAWholeFactor) {
  if (world_size() == 1) GTEST_SKIP() << "one rank holds the whole factors in every layout";
  const int m = 900, n = 600, f = 24;
  const std::uint64_t smaller_factor = std::uint64_t(n) * f * sizeof(double);
  for (bool tiled : {true, false}) {
    const auto [big, what] = largest_allocation(blocked, tiled, m, n, f);
    EXPECT_GT(big, 0u) << "the allocation callback did not fire";
    EXPECT_LT(big, smaller_factor) << "largest allocation " << what << (tiled ? " (tiled)" : " (csr)");
  }
  // Not vacuous: the replicated layout allocates X_all (m x f).
  const auto [big, what] = largest_allocation(da::FactorLayout::replicated, false, m, n, f);
  EXPECT_GE(big, std::uint64_t(m) * f * sizeof(double)) << what;
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
TEST(DistributedAls, BlockedCheckpointRestartsOnOtherRanksAndLayouts) {
  const Exec exec;
  const auto dir = shared_dir("dist_als_blocked");
  const std::string path = (dir / "als.h5").string();
  const auto problem = als::make_problem(exec, ratings<double>(90, 70, 5), 0.1, 2);
  da::Options o;
  o.rank = 5;
  o.xb = 2;
  o.yb = 16;
  o.layout = als::Layout::bals;
  o.factor_layout = blocked;
  const auto meta = checkpoint_meta<double, Exec>("als", option_values(o), fingerprint(exec, problem.train), o.rank);
  const auto ref = [&] {  // the uninterrupted single-rank run
    als::Options so = o;
    so.stop.max_iterations = 6;
    return als::solve(exec, problem, so).state;
  }();
  const int writers = std::min(2, world_size()), readers = std::min(3, world_size());
  if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
    const auto lp = da::distribute(exec, c, problem);
    o.stop.max_iterations = 3;
    auto part = da::init(exec, c, lp, o);
    da::resume(exec, lp, o, part, distributed::checkpoint_observer(c, path, 3, part, meta));
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const auto layout : {blocked, da::FactorLayout::replicated}) {
    if (MPI_Comm c = first_ranks(readers); c != MPI_COMM_NULL) {
      const auto lp = da::distribute(exec, c, problem);
      o.stop.max_iterations = 6;
      o.factor_layout = layout;
      auto s = da::init(exec, c, lp, o);
      EXPECT_EQ(load_checkpoint(c, path, s, meta, s.row_blocks()).iteration, 3);
      const Report rep = da::resume(exec, lp, o, s);
      EXPECT_EQ(rep.info.at("continued_from"), "3");
      const auto X = da::gather_X(exec, s), Y = da::gather_Y(exec, s);
      SCOPED_TRACE(std::string("restart ") + da::to_string(layout) + " on " + std::to_string(readers));
      EXPECT_LE(relative_difference(X, ref.X), 1e-9);
      EXPECT_LE(relative_difference(Y, ref.Y), 1e-9);
      if (writers == 1 && layout == blocked) EXPECT_TRUE(bitwise_equal(X, ref.X));  // one rank all along
      MPI_Comm_free(&c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (world_rank() == 0) {
    als::Options so = o;
    so.stop.max_iterations = 6;
    auto s = als::init(exec, problem, so);
    load_checkpoint(path, s, meta);
    als::resume(exec, problem, so, s);
    EXPECT_LE(relative_difference(s.X, ref.X), 1e-9);
    EXPECT_LE(relative_difference(s.Y, ref.Y), 1e-9);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}

TEST(DistributedAls, CheckpointOnTwoRanksRestartsOnThreeAndOnOne) {
  const Exec exec;
  const auto dir = shared_dir("dist_als");
  const std::string path = (dir / "als.h5").string();
  const auto problem = als::make_problem(exec, ratings<double>(90, 70, 4), 0.1, 2);
  als::Options o;
  o.rank = 5;
  o.xb = 2;
  o.yb = 16;
  o.layout = als::Layout::bals;
  const auto meta = checkpoint_meta<double, Exec>("als", option_values(o), fingerprint(exec, problem.train), o.rank);
  const int writers = std::min(2, world_size()), readers = std::min(3, world_size());
  DenseMatrix<double, Mem> X_full, Y_full;
  if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
    const auto lp = da::distribute(exec, c, problem);
    o.stop.max_iterations = 6;
    auto full = da::solve(exec, c, lp, o);
    X_full = da::gather_X(exec, full.state);
    Y_full = da::gather_Y(exec, full.state);
    o.stop.max_iterations = 3;
    auto part = da::init(exec, c, lp, o);
    da::resume(exec, lp, o, part, distributed::checkpoint_observer(c, path, 3, part, meta));
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (MPI_Comm c = first_ranks(readers); c != MPI_COMM_NULL) {
    const auto lp = da::distribute(exec, c, problem);
    o.stop.max_iterations = 6;
    auto s = da::init(exec, c, lp, o);
    const auto stored = load_checkpoint(c, path, s, meta, s.row_blocks());
    EXPECT_EQ(stored.iteration, 3);
    EXPECT_EQ(s.iteration, 3);
    const Report rep = da::resume(exec, lp, o, s);
    EXPECT_EQ(rep.info.at("continued_from"), "3");
    const auto X2 = da::gather_X(exec, s);
    const auto Y2 = da::gather_Y(exec, s);
    if (world_rank() == 0) {  // in both groups; ALS is bit for bit across rank counts
      EXPECT_TRUE(bitwise_equal(X2, X_full));
      EXPECT_TRUE(bitwise_equal(Y2, Y_full));
    }
    MPI_Comm_free(&c);
  }
  if (world_rank() == 0) {
    o.stop.max_iterations = 6;
    auto s = als::init(exec, problem, o);
    load_checkpoint(path, s, meta);
    als::resume(exec, problem, o, s);
    EXPECT_TRUE(bitwise_equal(s.X, X_full));
    EXPECT_TRUE(bitwise_equal(s.Y, Y_full));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
