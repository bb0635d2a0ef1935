// Distributed NMF in the 1D layout under mpiexec (1..4 ranks): the iterates equal the
// single-rank solver's (bit for bit on one rank, on every backend: one rank
// runs the single-process kernels; within the documented reduction-order
// tolerance otherwise) for dense and CSR input and every
// algorithm; the partition is non-empty and nnz-balanced; bad input is
// refused on every rank; a checkpoint written on 2 ranks restarts on 3 (and
// on one process) and ends where the uninterrupted run ends.
#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/nmf.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/nmf/nmf.hpp>
#include "mpi_test_util.hpp"
#include "nmf_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace {
using kfactor::test::first_ranks;
using kfactor::test::planted;
using kfactor::test::rel_diff;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

using namespace kfactor;
namespace dn = kfactor::distributed::nmf;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
// This file tests the 1D layout (test_distributed_nmf_grid.cpp the grids).
const dn::Grid one_d{.one_d = true};

// The distributed solver keeps the single-rank contract (core/solver.hpp).
static_assert(Solver<Exec, dn::Problem<CsrMatrix<double, Mem>>, nmf::Options, dn::State<double, Mem>>);
static_assert(Solver<Exec, dn::Problem<DenseMatrix<float, Mem>>, nmf::Options, dn::State<float, Mem>>);

template <class T, class Matrix>
void expect_same_iterates(const Matrix& A, nmf::Algorithm alg, double tol) {
  const Exec exec;
  nmf::Options o;
  o.algorithm = alg;
  o.rank = 6;
  o.tile = 4;  // two ALO tiles (one partial)
  o.stop.max_iterations = 12;
  o.seed = 11;
  const auto ref = nmf::solve(exec, nmf::make_problem(exec, A), o);
  const auto problem = dn::make_problem(exec, MPI_COMM_WORLD, A, one_d);
  auto res = dn::solve(exec, problem, o);
  const auto W = dn::gather_W(exec, res.state);
  const auto Ht = dn::gather_Ht(exec, res.state);
  const double dw = rel_diff(W, ref.state.W), dh = rel_diff(Ht, ref.state.Ht);
  if (std::getenv("KFACTOR_TEST_VERBOSE") && world_rank() == 0)
    std::printf("P=%d %s: dW %.3g dHt %.3g\n", world_size(), nmf::to_string(alg), dw, dh);
  SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + ", " + nmf::to_string(alg));
  if (world_size() == 1) {
    // One rank: no MPI call in the epoch and the single-process kernels
    // (ALO's one-launch tile sweeps included): bit for bit, on every backend.
    EXPECT_EQ(dw, 0.0);
    EXPECT_EQ(dh, 0.0);
  }
  EXPECT_LE(dw, tol);
  EXPECT_LE(dh, tol);
  ASSERT_EQ(res.state.history.size(), ref.state.history.size());
  for (std::size_t i = 0; i < ref.state.history.size(); ++i) {
    const double e = ref.state.history.rows[i][0], d = res.state.history.rows[i][0];
    EXPECT_NEAR(d, e, 10 * tol * e) << "relative error at epoch " << i + 1;
  }
  EXPECT_EQ(res.report.iterations, 12);
  EXPECT_EQ(res.report.rows, ref.report.rows);
  EXPECT_EQ(res.report.nnz, ref.report.nnz);
  // The iteration actually moved (a test that could not fail otherwise).
  EXPECT_LT(ref.state.history.rows.back()[0], ref.state.history.rows.front()[0]);
  // Every rank holds the same metrics.
  double mine = res.state.history.rows.back()[0], lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(lo, hi);
}

TEST(DistributedNmf, DenseEqualsSingleRank) {
  const Exec exec;
  const auto A = to_dense(exec, to_csr(exec, planted<double>(41, 37, false, 1)));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu})
    expect_same_iterates<double>(A, alg, 1e-9);
}

TEST(DistributedNmf, SparseEqualsSingleRank) {
  const Exec exec;
  const auto A = to_csr(exec, planted<double>(64, 50, true, 2));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu})
    expect_same_iterates<double>(A, alg, 1e-9);
}

TEST(DistributedNmf, FloatWithinItsTolerance) {
  const Exec exec;
  const auto A = to_csr(exec, planted<float>(64, 50, true, 3));
  expect_same_iterates<float>(A, nmf::Algorithm::alo, 1e-4);
}

TEST(DistributedNmf, PartitionIsNonEmptyAndBalanced) {
  const Exec exec;
  const auto A = to_csr(exec, planted<double>(64, 50, true, 2));
  const auto b = dn::make_problem(exec, MPI_COMM_WORLD, A, one_d);
  const int P = world_size();
  ASSERT_EQ(b.row_bounds.size(), std::size_t(P) + 1);
  ASSERT_EQ(b.col_bounds.size(), std::size_t(P) + 1);
  EXPECT_EQ(b.row_bounds.front(), 0);
  EXPECT_EQ(b.row_bounds.back(), 64);
  EXPECT_EQ(b.col_bounds.back(), 50);
  for (int p = 0; p < P; ++p) {
    EXPECT_LT(b.row_bounds[p], b.row_bounds[p + 1]);
    EXPECT_LT(b.col_bounds[p], b.col_bounds[p + 1]);
  }
  // nnz balance: every block within nnz/P + the largest row (column) count.
  auto h = copy_to<Kokkos::HostSpace>(A);
  std::vector<std::int64_t> rc(64), cc(50, 0);
  for (int i = 0; i < 64; ++i) {
    rc[i] = h.row_map(i + 1) - h.row_map(i);
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) ++cc[h.entries(e)];
  }
  const double nnz = double(A.nnz());
  auto check = [&](const std::vector<ordinal_t>& bounds, const std::vector<std::int64_t>& counts) {
    const double maxc = double(*std::max_element(counts.begin(), counts.end()));
    for (int p = 0; p < P; ++p) {
      double s = 0;
      for (auto i = bounds[p]; i < bounds[p + 1]; ++i) s += double(counts[i]);
      EXPECT_LE(s, nnz / P + maxc);
    }
  };
  check(b.row_bounds, rc);
  check(b.col_bounds, cc);
  EXPECT_EQ(b.rows.num_rows(), b.local_rows());
  EXPECT_EQ(b.cols.num_rows(), b.local_cols());
  EXPECT_EQ(b.cols.num_cols, 64);
  // The blocks hold every nonzero once (rows) and once (columns).
  std::int64_t loc[2] = {std::int64_t(b.rows.nnz()), std::int64_t(b.cols.nnz())}, tot[2];
  MPI_Allreduce(loc, tot, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(tot[0], std::int64_t(A.nnz()));
  EXPECT_EQ(tot[1], std::int64_t(A.nnz()));
}

TEST(DistributedNmf, BadInputRefusedOnEveryRank) {
  const Exec exec;
  auto coo = planted<double>(30, 20, true, 4);
  coo.values[coo.values.size() - 1] = -1.0;  // in the last rank's rows
  const auto A = to_csr(exec, coo);
  std::string what;
  try {
    dn::make_problem(exec, MPI_COMM_WORLD, A);
  } catch (const InputError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("1 negative"), std::string::npos) << what;
  coo.values.assign(coo.values.size(), 0.0);
  EXPECT_THROW(dn::make_problem(exec, MPI_COMM_WORLD, to_csr(exec, coo)), InputError);
  nmf::Options o;
  o.rank = 25;  // > min(30, 20)
  EXPECT_THROW(
      dn::init(exec, dn::make_problem(exec, MPI_COMM_WORLD, to_csr(exec, planted<double>(30, 20, true, 4))), o),
      UsageError);
  // The options the distributed epochs do not run: refused, naming them.
  o.rank = 3;
  const auto small = dn::make_problem(exec, MPI_COMM_WORLD, to_csr(exec, planted<double>(30, 20, true, 4)));
  for (const auto& [set, name] : std::vector<std::pair<std::function<void(nmf::Options&)>, std::string>>{
           {[](nmf::Options& x) { x.init = nmf::Init::nndsvd; }, "init nndsvd"},
           {[](nmf::Options& x) { x.alpha_w = 0.1; }, "alpha_w"},
           {[](nmf::Options& x) {
              x.beta_loss = nmf::BetaLoss::kl;
              x.algorithm = nmf::Algorithm::mu;
            },
            "beta_loss kl"},
           {[](nmf::Options& x) { x.missing = nmf::Missing::absent; }, "missing absent"}}) {
    nmf::Options bad = o;
    set(bad);
    std::string said;
    try {
      dn::init(exec, small, bad);
    } catch (const UsageError& e) {
      said = e.what();
    }
    EXPECT_NE(said.find(name), std::string::npos) << name << ": " << said;
  }
  // More ranks than rows: refused on every rank.
  if (world_size() > 1) {
    const auto tiny = to_csr(exec, planted<double>(world_size() - 1, 8, false, 5));
    EXPECT_THROW(dn::make_problem(exec, MPI_COMM_WORLD, tiny), UsageError);
  }
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(DistributedNmf, CheckpointOnTwoRanksRestartsOnThreeAndOnOne) {
  const Exec exec;
  const auto dir = shared_dir("dist_nmf");
  const std::string path = (dir / "nmf.h5").string(), gathered = (dir / "nmf_gathered.h5").string();
  const auto A = to_csr(exec, planted<double>(64, 50, true, 6));
  nmf::Options o;
  o.algorithm = nmf::Algorithm::hals;
  o.rank = 5;
  o.seed = 3;
  const auto meta = checkpoint_meta<double, Exec>("nmf", option_values(o), fingerprint(exec, A), o.rank);
  const int W = world_size();
  const int writers = std::min(2, W), readers = std::min(3, W);

  // Uninterrupted run (12 epochs) and a run stopped after 5 with a checkpoint, on `writers` ranks.
  DenseMatrix<double, Mem> W_full, Ht_full;
  if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
    const auto b = dn::make_problem(exec, c, A, one_d);
    o.stop.max_iterations = 12;
    auto full = dn::solve(exec, b, o);
    W_full = dn::gather_W(exec, full.state);
    Ht_full = dn::gather_Ht(exec, full.state);
    o.stop.max_iterations = 5;
    auto part = dn::init(exec, b, o);
    dn::resume(exec, b, o, part, distributed::checkpoint_observer(c, path, 5, part, meta));
    EXPECT_EQ(part.iteration, 5);
    // The serial fallback: gathered to rank 0, written there.
    save_checkpoint(c, gathered, part, meta, part.row_blocks(), DistributedIo::gather);
    MPI_Comm_free(&c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // Restart on `readers` ranks, to 12 epochs.
  if (MPI_Comm c = first_ranks(readers); c != MPI_COMM_NULL) {
    const auto b = dn::make_problem(exec, c, A, one_d);
    o.stop.max_iterations = 12;
    auto s = dn::init(exec, b, o);
    const auto stored = load_checkpoint(c, path, s, meta, s.row_blocks());
    EXPECT_EQ(stored.iteration, 5);
    EXPECT_EQ(stored.mpi_ranks, writers);
    EXPECT_EQ(s.iteration, 5);
    EXPECT_EQ(s.history.size(), 5u);
    // The gathered file holds the same state.
    auto g = dn::init(exec, b, o);
    load_checkpoint(c, gathered, g, meta, g.row_blocks());
    EXPECT_EQ(rel_diff(g.W, s.W), 0.0);
    EXPECT_EQ(rel_diff(g.Ht, s.Ht), 0.0);
    dn::resume(exec, b, o, s);
    EXPECT_EQ(s.iteration, 12);
    const auto W2 = dn::gather_W(exec, s);
    const auto Ht2 = dn::gather_Ht(exec, s);
    if (world_rank() == 0) {  // rank 0 is in both groups
      EXPECT_LE(rel_diff(W2, W_full), 1e-9);
      EXPECT_LE(rel_diff(Ht2, Ht_full), 1e-9);
      if (writers == readers) {
        EXPECT_EQ(rel_diff(W2, W_full), 0.0);  // same P: bit for bit
        EXPECT_EQ(rel_diff(Ht2, Ht_full), 0.0);
      }
    }
    MPI_Comm_free(&c);
  }
  // A single-rank nmf run restarts from the distributed file.
  if (world_rank() == 0) {
    o.stop.max_iterations = 12;
    const auto problem = nmf::make_problem(exec, A);
    auto s = nmf::init(exec, problem, o);
    load_checkpoint(path, s, meta);
    EXPECT_EQ(s.iteration, 5);
    nmf::resume(exec, problem, o, s);
    EXPECT_LE(rel_diff(s.W, W_full), 1e-9);
    EXPECT_LE(rel_diff(s.Ht, Ht_full), 1e-9);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
