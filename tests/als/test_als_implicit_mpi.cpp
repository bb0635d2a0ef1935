// Distributed implicit-feedback ALS under mpiexec: the replicated factor
// layout (exact and CG half-steps) and the blocked one (exact; CG refused)
// end where the single-rank solver ends, with the same objective and, with
// a held-out set, the same ranking metrics; negative counts are refused on
// every rank.
#include <kfactor/als/als.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/als.hpp>

#include "distributed/mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {
using namespace kfactor;
namespace da = kfactor::distributed::als;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using kfactor::test::world_size;

/// Interaction counts 0..5 on a skewed pattern; the last user and item empty.
CooMatrix<double> counts(int m, int n, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<double> c;
  c.num_rows = m;
  c.num_cols = n;
  for (int u = 0; u < m - 1; ++u)
    for (int i = 0; i < n - 1; ++i) {
      const std::uint64_t key = std::uint64_t(u) * n + i;
      if (rng.uniform(2 * key) >= (u < m / 5 ? 0.5 : 0.15)) continue;
      c.rows.push_back(u);
      c.cols.push_back(i);
      c.values.push_back(std::floor(6 * rng.uniform(2 * key + 1)));
    }
  return c;
}

/// max |A - B| / max |B| (host).
double relative_difference(const DenseMatrix<double, Mem>& A, const DenseMatrix<double, Mem>& B) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
  double d = 0, mx = 0;
  for (std::size_t i = 0; i < ha.extent(0); ++i)
    for (std::size_t j = 0; j < ha.extent(1); ++j) {
      d = std::max(d, std::abs(ha(i, j) - hb(i, j)));
      mx = std::max(mx, std::abs(hb(i, j)));
    }
  return d / mx;
}

TEST(DistributedAlsImplicit, EqualsSingleRank) {
  const Exec exec;
  const auto problem = als::make_problem(exec, counts(60, 45, 3), 0.0, 1);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  struct Case {
    als::SolveMethod solver;
    da::FactorLayout layout;
    als::Layout structure;
  };
  for (const Case c : {Case{als::SolveMethod::cholesky, da::FactorLayout::replicated, als::Layout::csr},
                       Case{als::SolveMethod::cholesky, da::FactorLayout::blocked, als::Layout::bals},
                       Case{als::SolveMethod::cg, da::FactorLayout::replicated, als::Layout::csr}}) {
    als::Options o;
    o.implicit = true;
    o.rank = 6;
    o.alpha = 5;
    o.confidence = als::Confidence::log;
    o.solver = c.solver;
    o.layout = c.structure;
    if (c.structure == als::Layout::bals) o.xb = 2, o.yb = 8;
    o.stop.max_iterations = 4;
    const auto ref = als::solve(exec, problem, o);
    da::Options dopt = o;
    dopt.factor_layout = c.layout;
    auto res = da::solve(exec, MPI_COMM_WORLD, lp, dopt);
    const std::string what =
        std::string(als::to_string(c.solver)) + " " + da::to_string(c.layout) + " P=" + std::to_string(world_size());
    EXPECT_LE(relative_difference(da::gather_X(exec, res.state), ref.state.X), 1e-9) << what;
    EXPECT_LE(relative_difference(da::gather_Y(exec, res.state), ref.state.Y), 1e-9) << what;
    const double l = ref.report.metrics.get("loss");
    EXPECT_NEAR(res.report.metrics.get("loss"), l, 1e-9 * l) << what;
    // Not vacuous: the loss fell over the iterations.
    EXPECT_LT(l, ref.state.history.rows.front()[0]) << what;
  }
  if (world_size() > 1) {
    als::Options o;
    o.implicit = true;
    o.rank = 6;
    o.solver = als::SolveMethod::cg;
    da::Options dopt = o;
    dopt.factor_layout = da::FactorLayout::blocked;
    EXPECT_THROW(da::init(exec, MPI_COMM_WORLD, lp, dopt), UsageError);
  }
}

// With a held-out set (a fraction split, or a leave-k-out one given as the
// test set) the distributed report carries the single-rank ranking metrics
// at every iteration, in both factor layouts, equal to one rank's within
// 1e-9; the held-out users are on every rank, so the sums meet.
TEST(DistributedAlsImplicit, RankingMetricsEqualSingleRank) {
  const Exec exec;
  const auto all = counts(60, 45, 5);
  const auto [train, test] = als::leave_k_out(all, 2, 3);
  const auto split = als::make_problem(exec, all, 0.2, 7);
  const auto given = als::make_problem(exec, train, 0.0, 0, &test);
  const std::vector<std::string> names{"loss", "precision_at_k", "recall_at_k", "map_at_k", "ndcg_at_k", "auc"};
  for (const auto* problem : {&split, &given})
    for (const auto layout : {da::FactorLayout::replicated, da::FactorLayout::blocked}) {
      const std::string what = std::string(problem == &split ? "fraction" : "leave-2-out") + " " +
                               da::to_string(layout) + " P=" + std::to_string(world_size());
      als::Options o;
      o.implicit = true;
      o.rank = 5;
      o.alpha = 8;
      o.eval_k = 6;
      o.layout = als::Layout::csr;
      o.stop.max_iterations = 3;
      const auto ref = als::solve(exec, *problem, o);
      da::Options dopt = o;
      dopt.factor_layout = layout;
      const auto lp = da::distribute(exec, MPI_COMM_WORLD, *problem);
      auto res = da::solve(exec, MPI_COMM_WORLD, lp, dopt);
      const auto& h = res.report.history;
      const auto& rh = ref.report.history;
      ASSERT_EQ(h.names, names) << what;
      ASSERT_EQ(rh.names, names) << what;
      ASSERT_EQ(h.rows.size(), 3u) << what;
      for (std::size_t it = 0; it < h.rows.size(); ++it)
        for (std::size_t c = 0; c < names.size(); ++c)
          EXPECT_NEAR(h.rows[it][c], rh.rows[it][c], 1e-9 * std::max(1.0, std::abs(rh.rows[it][c])))
              << what << " iteration " << it + 1 << " " << names[c];
      // Not vacuous: some held-out items are ranked, not all of them.
      EXPECT_GT(ref.report.metrics.get("recall_at_k"), 0.0) << what;
      EXPECT_LT(ref.report.metrics.get("recall_at_k"), 1.0) << what;
      EXPECT_EQ(res.report.info.at("eval_k"), "6") << what;
    }
}

TEST(DistributedAlsImplicit, NegativeCountIsRefusedOnEveryRank) {
  const Exec exec;
  auto coo = counts(40, 30, 4);
  coo.values.back() = -1;  // a rating of the last rank's users
  const auto problem = als::make_problem(exec, coo, 0.0, 1);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, problem);
  als::Options o;
  o.implicit = true;
  o.rank = 4;
  EXPECT_THROW(da::init(exec, MPI_COMM_WORLD, lp, da::Options(o)), InputError);
}

}  // namespace
