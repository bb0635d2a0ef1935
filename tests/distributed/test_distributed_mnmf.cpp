// Distributed MNMF under mpiexec (1..4 ranks): W and H equal the
// single-process solver's bit for bit (euclid and kl, double and float, with
// user and item graphs, rows without ratings, ranks without held-out
// ratings), the metrics within the documented tolerance (bit for bit on one
// rank); bad input is refused on every rank; a checkpoint written on 2 ranks
// restarts on every rank count and in a single-process run.
#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/mnmf.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include "mnmf/mnmf_test_utils.hpp"
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace {
using kfactor::test::first_ranks;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

using namespace kfactor;
namespace dm = kfactor::distributed::mnmf;
using kfactor::mnmf::test::random_graph;
using kfactor::mnmf::test::random_ratings;
using kfactor::mnmf::test::to_vector;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// The distributed solver keeps the single-process contract (core/solver.hpp).
static_assert(Solver<Exec, dm::Problem<double, Mem>, mnmf::Options, dm::State<double, Mem>>);
static_assert(Solver<Exec, dm::Problem<float, Mem>, mnmf::Options, dm::State<float, Mem>>);

/// 60 users x 45 items: users 3 and 17 and item 5 without ratings, held-out
/// ratings only for the first 10 users (so later ranks hold none), random
/// symmetric user and item graphs.
template <class T>
struct Data {
  CsrMatrix<T, Mem> R, P, Pb, test;
  Data() {
    const Exec exec;
    R = to_csr(exec, random_ratings<T>(60, 45, 0.15, 1, {3, 17}, {5}));
    auto held = random_ratings<T>(10, 45, 0.1, 2);
    held.num_rows = 60;
    test = to_csr(exec, held);
    P = to_csr(exec, random_graph<T>(60, 4, 3));
    Pb = to_csr(exec, random_graph<T>(45, 3, 4));
  }
};

template <class T>
mnmf::Options options_for(mnmf::Objective objective) {
  mnmf::Options o;
  o.objective = objective;
  o.rank = 5;
  o.lambda_w = 0.3;
  o.lambda_h = 0.2;
  o.stop.max_iterations = 10;
  o.seed = 9;
  return o;
}

template <class T>
void expect_same_iterates(mnmf::Objective objective, double tol) {
  const Exec exec;
  const Data<T> d;
  const auto o = options_for<T>(objective);
  const auto ref = mnmf::solve(exec, mnmf::make_problem(exec, d.R, d.P, d.Pb, d.test), o);
  const auto problem = dm::make_problem(exec, MPI_COMM_WORLD, d.R, d.P, d.Pb, d.test);
  auto res = dm::solve(exec, problem, o);
  SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + ", " + mnmf::to_string(objective));
  // Each row is updated from the same operands in the same order wherever it lives.
  EXPECT_EQ(to_vector(dm::gather_W(exec, res.state)), to_vector(ref.state.W));
  EXPECT_EQ(to_vector(dm::gather_H(exec, res.state)), to_vector(ref.state.H));
  ASSERT_EQ(res.state.history.size(), ref.state.history.size());
  ASSERT_EQ(res.state.history.names, ref.state.history.names);
  double worst = 0;
  for (std::size_t i = 0; i < ref.state.history.size(); ++i)
    for (std::size_t k = 0; k < ref.state.history.names.size(); ++k) {
      const double a = res.state.history.rows[i][k], b = ref.state.history.rows[i][k];
      worst = std::max(worst, std::abs(a - b) / std::abs(b));
      if (world_size() == 1)
        EXPECT_EQ(a, b) << ref.state.history.names[k] << " at epoch " << i + 1;
      else
        EXPECT_LE(std::abs(a - b), tol * std::abs(b)) << ref.state.history.names[k] << " at epoch " << i + 1;
    }
  if (std::getenv("KFACTOR_TEST_VERBOSE") && world_rank() == 0)
    std::printf("P=%d %s %s: metrics within %.3g relative\n", world_size(), mnmf::to_string(objective),
                sizeof(T) == 4 ? "float" : "double", worst);
  EXPECT_EQ(res.report.iterations, 10);
  EXPECT_EQ(res.report.nnz, ref.report.nnz);
  EXPECT_EQ(res.report.info.at("user_graph_edges"), ref.report.info.at("user_graph_edges"));
  EXPECT_EQ(res.report.info.at("mpi_ranks"), std::to_string(world_size()));
  // The iteration moved, and the test metrics are there.
  const auto& h = ref.state.history;
  const auto k = std::size_t(std::find(h.names.begin(), h.names.end(), "objective") - h.names.begin());
  ASSERT_LT(k, h.names.size());
  EXPECT_LT(h.rows.back()[k], h.rows.front()[k]);
  EXPECT_GT(res.report.metrics.get("test_rmse"), 0.0);
  // Every rank holds the same metrics.
  double mine = res.report.metrics.get("objective"), lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}

// The metrics accumulate in double whatever T is: 1e-12 relative for both
// (measured: up to 1.5e-15 for P = 2..4).
TEST(DistributedMnmf, EuclidEqualsSingleProcess) { expect_same_iterates<double>(mnmf::Objective::euclid, 1e-12); }
TEST(DistributedMnmf, KlEqualsSingleProcess) { expect_same_iterates<double>(mnmf::Objective::kl, 1e-12); }
TEST(DistributedMnmf, FloatEqualsSingleProcess) {
  expect_same_iterates<float>(mnmf::Objective::euclid, 1e-12);
  expect_same_iterates<float>(mnmf::Objective::kl, 1e-12);
}

TEST(DistributedMnmf, PartitionIsNonEmptyAndHoldsEveryRating) {
  const Exec exec;
  const Data<double> d;
  const auto b = dm::make_problem(exec, MPI_COMM_WORLD, d.R, d.P, d.Pb, d.test);
  const int P = world_size();
  ASSERT_EQ(b.user_bounds.size(), std::size_t(P) + 1);
  EXPECT_EQ(b.user_bounds.back(), 60);
  EXPECT_EQ(b.item_bounds.back(), 45);
  for (int q = 0; q < P; ++q) {
    EXPECT_LT(b.user_bounds[q], b.user_bounds[q + 1]);
    EXPECT_LT(b.item_bounds[q], b.item_bounds[q + 1]);
  }
  EXPECT_EQ(b.local.ratings.num_rows(), b.local_users());
  EXPECT_EQ(b.local.ratings_t.num_rows(), b.local_items());
  EXPECT_EQ(b.local.user_graph.num_rows(), b.local_users());
  EXPECT_EQ(b.local.item_graph.num_cols, 45);
  EXPECT_TRUE(b.has_test);
  std::int64_t loc[4] = {std::int64_t(b.local.ratings.nnz()), std::int64_t(b.local.ratings_t.nnz()),
                         std::int64_t(b.local.user_graph.nnz()), std::int64_t(b.local.test.nnz())},
               tot[4];
  MPI_Allreduce(loc, tot, 4, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(tot[0], std::int64_t(d.R.nnz()));
  EXPECT_EQ(tot[1], std::int64_t(d.R.nnz()));
  EXPECT_EQ(tot[2], std::int64_t(d.P.nnz()));
  EXPECT_EQ(tot[3], std::int64_t(d.test.nnz()));
}

TEST(DistributedMnmf, BadInputRefusedOnEveryRank) {
  const Exec exec;
  const Data<double> d;
  auto coo = random_ratings<double>(30, 20, 0.2, 5);
  coo.values.back() = -1.0;
  EXPECT_THROW(dm::make_problem(exec, MPI_COMM_WORLD, to_csr(exec, coo)), InputError);
  const auto no_graph = dm::make_problem(exec, MPI_COMM_WORLD, d.R);
  auto o = options_for<double>(mnmf::Objective::euclid);
  auto s = dm::init(exec, no_graph, o);
  EXPECT_THROW(dm::resume(exec, no_graph, o, s), UsageError);  // lambda > 0 without graphs
  o.rank = 46;                                                 // > min(60, 45)
  EXPECT_THROW(dm::init(exec, no_graph, o), UsageError);
  if (world_size() > 1) {  // more ranks than users
    const auto tiny = to_csr(exec, random_ratings<double>(world_size() - 1, 8, 1.0, 6));
    EXPECT_THROW(dm::make_problem(exec, MPI_COMM_WORLD, tiny), UsageError);
  }
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(DistributedMnmf, CheckpointOnTwoRanksRestartsAnywhere) {
  const Exec exec;
  const auto dir = shared_dir("dist_mnmf");
  const std::string path = (dir / "mnmf.h5").string();
  const Data<double> d;
  auto o = options_for<double>(mnmf::Objective::kl);
  const auto meta = checkpoint_meta<double, Exec>("mnmf", option_values(o), fingerprint(exec, d.R), o.rank);
  const int writers = std::min(2, world_size());
  const auto single = mnmf::make_problem(exec, d.R, d.P, d.Pb, d.test);
  const auto full = mnmf::solve(exec, single, o);

  // 4 epochs on `writers` ranks, checkpointed every 2.
  if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
    auto part_o = o;
    part_o.stop.max_iterations = 4;
    const auto b = dm::make_problem(exec, c, d.R, d.P, d.Pb, d.test);
    auto s = dm::init(exec, b, part_o);
    dm::resume(exec, b, part_o, s, distributed::checkpoint_observer(c, path, 2, s, meta));
    EXPECT_EQ(s.iteration, 4);
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Restart on every rank into a state that ran from another seed (its
  // replicas must be replaced too), to 10 epochs.
  {
    const auto b = dm::make_problem(exec, MPI_COMM_WORLD, d.R, d.P, d.Pb, d.test);
    auto other = o;
    other.seed += 1;
    other.stop.max_iterations = 1;
    auto s = dm::solve(exec, b, other).state;
    const auto stored = load_checkpoint(MPI_COMM_WORLD, path, s, meta, s.row_blocks());
    EXPECT_EQ(stored.iteration, 4);
    EXPECT_EQ(stored.mpi_ranks, writers);
    dm::resume(exec, b, o, s);
    EXPECT_EQ(s.iteration, 10);
    EXPECT_EQ(to_vector(dm::gather_W(exec, s)), to_vector(full.state.W));
    EXPECT_EQ(to_vector(dm::gather_H(exec, s)), to_vector(full.state.H));
  }
  // A single-process mnmf run restarts from the distributed file.
  if (world_rank() == 0) {
    auto s = mnmf::init(exec, single, o);
    load_checkpoint(path, s, meta);
    EXPECT_EQ(s.iteration, 4);
    mnmf::resume(exec, single, o, s);
    EXPECT_EQ(to_vector(s.W), to_vector(full.state.W));
    EXPECT_EQ(to_vector(s.H), to_vector(full.state.H));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
