// Distributed NMF on 2D processor grids under mpiexec (1..4 ranks; every
// grid pr x pc of the run's P ranks, so 1x1, 1x2, 2x1, 1x3, 3x1, 2x2, 1x4
// and 4x1 over the four runs): the iterates equal the single-rank solver's
// and the 1D layout's within the documented reduction-order tolerance (bit
// for bit on 1x1) for dense and CSR input and every algorithm; the blocks
// partition A and the factors' rows; the automatic choice has the least
// modelled volume; the bytes a rank receives per epoch are the model's; a
// checkpoint written on a grid restarts on the same grid (bit for bit), in
// 1D and on one process.
#include <kfactor/config.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/nmf.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/nmf/nmf.hpp>
#include "mpi_test_util.hpp"
#include "nmf_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace {
using kfactor::test::planted;
using kfactor::test::rel_diff;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

using namespace kfactor;
namespace dn = kfactor::distributed::nmf;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
const dn::Grid one_d{.one_d = true};

/// Every grid of P ranks, most rows first.
std::vector<dn::Grid> grids_of(int P) {
  std::vector<dn::Grid> g;
  for (int r = P; r >= 1; --r)
    if (P % r == 0) g.push_back(dn::Grid{r, P / r});
  return g;
}

/// The same on every rank (min == max over the world).
bool same_on_every_rank(double v) {
  double lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

template <class T, class Matrix>
void expect_grids_match(const Matrix& A, nmf::Algorithm alg, double tol) {
  const Exec exec;
  nmf::Options o;
  o.algorithm = alg;
  o.rank = 6;
  o.tile = 4;  // two ALO tiles (one partial)
  o.stop.max_iterations = 12;
  o.seed = 11;
  const auto ref = nmf::solve(exec, nmf::make_problem(exec, A), o);
  auto lin = dn::solve(exec, dn::make_problem(exec, MPI_COMM_WORLD, A, one_d), o);
  const auto W1 = dn::gather_W(exec, lin.state), Ht1 = dn::gather_Ht(exec, lin.state);
  // The iteration moved (a comparison that could not fail otherwise).
  ASSERT_LT(ref.state.history.rows.back()[0], 0.9 * ref.state.history.rows.front()[0]);
  for (const auto& grid : grids_of(world_size())) {
    const auto problem = dn::make_problem(exec, MPI_COMM_WORLD, A, grid);
    ASSERT_EQ(problem.grid, grid);
    auto res = dn::solve(exec, problem, o);
    const auto W = dn::gather_W(exec, res.state), Ht = dn::gather_Ht(exec, res.state);
    const double dw = rel_diff(W, ref.state.W), dh = rel_diff(Ht, ref.state.Ht);
    const double dw1 = rel_diff(W, W1), dh1 = rel_diff(Ht, Ht1);
    if (std::getenv("KFACTOR_TEST_VERBOSE") && world_rank() == 0)
      std::printf("%s %s: dW %.3g dHt %.3g (vs 1D %.3g %.3g)\n", dn::to_string(grid).c_str(), nmf::to_string(alg), dw,
                  dh, dw1, dh1);
    SCOPED_TRACE("grid " + dn::to_string(grid) + ", " + nmf::to_string(alg));
    if (world_size() == 1) {  // 1x1: the single-process kernels, bit for bit
      EXPECT_EQ(dw, 0.0);
      EXPECT_EQ(dh, 0.0);
    }
    EXPECT_LE(dw, tol);
    EXPECT_LE(dh, tol);
    EXPECT_LE(dw1, tol);
    EXPECT_LE(dh1, tol);
    ASSERT_EQ(res.state.history.size(), ref.state.history.size());
    for (std::size_t i = 0; i < ref.state.history.size(); ++i) {
      const double e = ref.state.history.rows[i][0], d = res.state.history.rows[i][0];
      EXPECT_NEAR(d, e, 10 * tol * e) << "relative error at epoch " << i + 1;
    }
    EXPECT_EQ(res.report.info.at("grid"), dn::to_string(grid));
    EXPECT_EQ(res.report.iterations, 12);
    EXPECT_TRUE(same_on_every_rank(res.state.history.rows.back()[0]));
  }
}

TEST(DistributedNmfGrid, DenseEqualsSingleRankAnd1D) {
  const Exec exec;
  const auto A = to_dense(exec, to_csr(exec, planted<double>(41, 37, false, 1)));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu})
    expect_grids_match<double>(A, alg, 1e-9);
}

TEST(DistributedNmfGrid, SparseEqualsSingleRankAnd1D) {
  const Exec exec;
  const auto A = to_csr(exec, planted<double>(64, 50, true, 2));
  for (auto alg : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu})
    expect_grids_match<double>(A, alg, 1e-9);
}

TEST(DistributedNmfGrid, FloatWithinItsTolerance) {
  const Exec exec;
  const auto A = to_csr(exec, planted<float>(64, 50, true, 3));
  expect_grids_match<float>(A, nmf::Algorithm::alo, 1e-4);
}

TEST(DistributedNmfGrid, BlocksPartitionAAndTheFactorRows) {
  const Exec exec;
  const int V = 64, D = 50, P = world_size();
  const auto A = to_csr(exec, planted<double>(V, D, true, 2));
  const auto h = copy_to<Kokkos::HostSpace>(A);
  // sum of a_ij (i D + j + 1): misplaced blocks or shifted indices change it
  auto weighted = [&](const auto& M, std::int64_t r0, std::int64_t c0, bool transposed) {
    const auto m = copy_to<Kokkos::HostSpace>(M);
    double s = 0;
    for (std::int64_t r = 0; r < m.num_rows(); ++r)
      for (auto e = m.row_map(r); e < m.row_map(r + 1); ++e) {
        const std::int64_t i = transposed ? r0 + m.entries(e) : r0 + r, j = transposed ? c0 + r : c0 + m.entries(e);
        s += m.values(e) * double(i * D + j + 1);
      }
    return s;
  };
  const double whole = weighted(A, 0, 0, false);
  std::vector<std::int64_t> rc(V), cc(D, 0);
  for (int i = 0; i < V; ++i) {
    rc[i] = h.row_map(i + 1) - h.row_map(i);
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) ++cc[h.entries(e)];
  }
  const double nnz = double(A.nnz());
  for (const auto& grid : grids_of(P)) {
    SCOPED_TRACE("grid " + dn::to_string(grid));
    const auto b = dn::make_problem(exec, MPI_COMM_WORLD, A, grid);
    const int pr = grid.rows, pc = grid.cols, i = b.grid_row, j = b.grid_col;
    EXPECT_EQ(i * pc + j, world_rank());  // row-major ranks
    ASSERT_EQ(b.row_bounds.size(), std::size_t(pr) + 1);
    ASSERT_EQ(b.col_bounds.size(), std::size_t(pc) + 1);
    EXPECT_EQ(b.row_bounds.back(), V);
    EXPECT_EQ(b.col_bounds.back(), D);
    const double maxr = double(*std::max_element(rc.begin(), rc.end()));
    const double maxc = double(*std::max_element(cc.begin(), cc.end()));
    for (int q = 0; q < pr; ++q) {
      EXPECT_GE(b.row_bounds[q + 1] - b.row_bounds[q], pc);  // a row of W for every rank of the grid row
      double s = 0;
      for (auto r = b.row_bounds[q]; r < b.row_bounds[q + 1]; ++r) s += double(rc[r]);
      EXPECT_LE(s, nnz / pr + maxr);
    }
    for (int q = 0; q < pc; ++q) {
      EXPECT_GE(b.col_bounds[q + 1] - b.col_bounds[q], pr);
      double s = 0;
      for (auto c = b.col_bounds[q]; c < b.col_bounds[q + 1]; ++c) s += double(cc[c]);
      EXPECT_LE(s, nnz / pc + maxc);
    }
    // This rank's block A_ij and its transpose.
    const std::int64_t r0 = b.row_bounds[i], c0 = b.col_bounds[j];
    EXPECT_EQ(b.rows.num_rows(), b.row_bounds[i + 1] - r0);
    EXPECT_EQ(b.rows.num_cols, b.col_bounds[j + 1] - c0);
    EXPECT_EQ(b.cols.num_rows(), b.col_bounds[j + 1] - c0);
    EXPECT_EQ(b.cols.num_cols, b.row_bounds[i + 1] - r0);
    double loc[4] = {double(b.rows.nnz()), double(b.cols.nnz()), weighted(b.rows, r0, c0, false),
                     weighted(b.cols, r0, c0, true)};
    MPI_Allreduce(MPI_IN_PLACE, loc, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(loc[0], nnz);
    EXPECT_EQ(loc[1], nnz);
    EXPECT_NEAR(loc[2], whole, 1e-12 * whole);
    EXPECT_NEAR(loc[3], whole, 1e-12 * whole);
    // W's rows: inside row block i, non-empty, tiling [0, V) in rank order;
    // Ht's: inside column block j, non-empty, tiling [0, D) (in grid-column order).
    EXPECT_GE(b.row_begin(), r0);
    EXPECT_LE(b.row_begin() + b.local_rows(), b.row_bounds[i + 1]);
    EXPECT_GE(b.col_begin(), c0);
    EXPECT_LE(b.col_begin() + b.local_cols(), b.col_bounds[j + 1]);
    EXPECT_GT(b.local_rows(), 0);
    EXPECT_GT(b.local_cols(), 0);
    std::int64_t mine[4] = {b.row_begin(), b.local_rows(), b.col_begin(), b.local_cols()};
    std::vector<std::int64_t> all(4 * std::size_t(P));
    MPI_Allgather(mine, 4, MPI_INT64_T, all.data(), 4, MPI_INT64_T, MPI_COMM_WORLD);
    std::int64_t next = 0;
    for (int p = 0; p < P; ++p) {
      EXPECT_EQ(all[4 * p], next);
      next += all[4 * p + 1];
    }
    EXPECT_EQ(next, V);
    std::vector<std::pair<std::int64_t, std::int64_t>> hs;
    for (int p = 0; p < P; ++p) hs.emplace_back(all[4 * p + 2], all[4 * p + 3]);
    std::sort(hs.begin(), hs.end());
    next = 0;
    for (const auto& [first, rows] : hs) {
      EXPECT_EQ(first, next);
      next += rows;
    }
    EXPECT_EQ(next, D);
  }
}

TEST(DistributedNmfGrid, AutomaticGridHasTheLeastModelledVolume) {
  using nmf::Algorithm;
  for (const auto& [V, D] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1000, 1000}, {10000, 100}, {100, 10000}, {5000, 3000}, {3000, 5000}, {777, 777}, {40000, 20000}})
    for (int P = 1; P <= 12; ++P) {
      const auto best = dn::choose_grid(V, D, P);
      SCOPED_TRACE(std::to_string(V) + " x " + std::to_string(D) + " on " + std::to_string(P) + ": " +
                   dn::to_string(best));
      EXPECT_FALSE(best.automatic());
      if (!best.one_d) EXPECT_EQ(best.rows * best.cols, P);
      const double chosen = dn::epoch_volume(V, D, 16, P, 8, best).bytes;
      EXPECT_EQ(dn::epoch_volume(V, D, 16, P, 8, dn::Grid{}).bytes, chosen);
      EXPECT_LE(chosen, dn::epoch_volume(V, D, 16, P, 8, one_d).bytes);
      for (const auto& g : grids_of(P)) EXPECT_LE(chosen, dn::epoch_volume(V, D, 16, P, 8, g).bytes);
    }
  // The aspect of the grid follows the matrix's; a square grid moves 2 / (sqrt(P) + 1) of 1D.
  EXPECT_EQ(dn::choose_grid(1000, 1000, 4), (dn::Grid{2, 2}));
  EXPECT_EQ(dn::choose_grid(10000, 100, 4), (dn::Grid{4, 1}));
  EXPECT_EQ(dn::choose_grid(100, 10000, 4), (dn::Grid{1, 4}));
  EXPECT_EQ(dn::choose_grid(1000, 1000, 1), (dn::Grid{1, 1}));
  EXPECT_EQ(dn::choose_grid(1000, 1000, 2), (dn::Grid{2, 1}));  // a three-way tie: fewest exchanges, a grid, rows
  const auto sq = dn::epoch_volume(1000, 1000, 8, 4, 8, dn::Grid{2, 2});
  const auto lin = dn::epoch_volume(1000, 1000, 8, 4, 8, one_d);
  EXPECT_DOUBLE_EQ(sq.gather_words + sq.scatter_words, 2.0 / 3.0 * lin.gather_words);
  EXPECT_EQ(sq.exchanges, 4);
  EXPECT_EQ(lin.exchanges, 2);
  EXPECT_EQ(dn::epoch_volume(1000, 1000, 8, 4, 8, dn::Grid{4, 1}).exchanges, 2);
  // Grid names.
  for (const char* s : {"auto", "1d", "2x2", "1x4", "12x3"}) EXPECT_EQ(dn::to_string(dn::parse_grid(s)), s);
  for (const char* s : {"", "x", "2x", "x2", "0x4", "2x0", "-1x4", "2x2x1", "2*2", "1D", "two", "2 x 2"})
    EXPECT_THROW(dn::parse_grid(s), UsageError) << s;
  EXPECT_THROW(dn::epoch_volume(100, 100, 4, 4, 8, dn::Grid{3, 1}), UsageError);

  // make_problem: automatic resolves to choose_grid; a grid of other than P ranks is refused on every rank.
  const Exec exec;
  const auto A = to_csr(exec, planted<double>(64, 50, true, 2));
  const int P = world_size();
  EXPECT_EQ(dn::make_problem(exec, MPI_COMM_WORLD, A).grid, dn::choose_grid(64, 50, P));
  EXPECT_THROW(dn::make_problem(exec, MPI_COMM_WORLD, A, dn::Grid{P + 1, 1}), UsageError);
  EXPECT_THROW(dn::make_problem(exec, MPI_COMM_WORLD, A, dn::Grid{1, 2 * P}), UsageError);
  EXPECT_THROW(dn::make_problem(exec, MPI_COMM_WORLD, A, dn::Grid{0, P}), UsageError);
}

TEST(DistributedNmfGrid, ReceivedBytesPerEpochAreTheModels) {
  // Dense 48 x 36: every block and piece is equal for P = 1..4, where the model is exact.
  const Exec exec;
  const auto A = to_dense(exec, to_csr(exec, planted<double>(48, 36, false, 4)));
  nmf::Options o;
  o.algorithm = nmf::Algorithm::hals;
  o.rank = 4;
  o.stop.max_iterations = 3;
  const int P = world_size();
  auto layouts = grids_of(P);
  layouts.push_back(one_d);
  for (const auto& grid : layouts) {
    SCOPED_TRACE("grid " + dn::to_string(grid));
    const auto res = dn::solve(exec, dn::make_problem(exec, MPI_COMM_WORLD, A, grid), o);
    const auto v = dn::epoch_volume(48, 36, 4, P, sizeof(double), grid);
    EXPECT_EQ(std::stod(res.report.info.at("gathered_bytes_per_iteration")),
              (v.gather_words + v.scatter_words) * sizeof(double));
    EXPECT_EQ(std::stod(res.report.info.at("model_bytes_per_iteration")), std::floor(v.bytes));
    if (P > 1) EXPECT_GT(v.gather_words + v.scatter_words, 0.0);
  }
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(DistributedNmfGrid, CheckpointOnAGridRestartsOnTheGridIn1DAndOnOneRank) {
  const Exec exec;
  const auto dir = shared_dir("dist_nmf_grid");
  const std::string path = (dir / "nmf.h5").string(), gathered = (dir / "nmf_gathered.h5").string();
  const auto A = to_csr(exec, planted<double>(64, 50, true, 6));
  nmf::Options o;
  o.algorithm = nmf::Algorithm::alo;
  o.rank = 5;
  o.seed = 3;
  const auto meta = checkpoint_meta<double, Exec>("nmf", option_values(o), fingerprint(exec, A), o.rank);
  // The grid closest to square (2x2 on four ranks: Ht's rows are then out of rank order).
  const auto grids = grids_of(world_size());
  const dn::Grid grid = grids[grids.size() / 2];
  SCOPED_TRACE("grid " + dn::to_string(grid));
  const auto b = dn::make_problem(exec, MPI_COMM_WORLD, A, grid);

  // Uninterrupted: 12 epochs. Interrupted: 5 with checkpoints, collective and gathered to rank 0.
  o.stop.max_iterations = 12;
  auto full = dn::solve(exec, b, o);
  const auto W_full = dn::gather_W(exec, full.state), Ht_full = dn::gather_Ht(exec, full.state);
  o.stop.max_iterations = 5;
  auto part = dn::init(exec, b, o);
  dn::resume(exec, b, o, part, distributed::checkpoint_observer(MPI_COMM_WORLD, path, 5, part, meta));
  save_checkpoint(MPI_COMM_WORLD, gathered, part, meta, part.row_blocks(), DistributedIo::gather);
  ASSERT_EQ(part.iteration, 5);
  const auto W5 = dn::gather_W(exec, part), Ht5 = dn::gather_Ht(exec, part);
  o.stop.max_iterations = 12;

  // The same grid: the stored state is the run's, and the restart ends bit for bit where the uninterrupted run ends.
  {
    auto s = dn::init(exec, b, o);
    const auto stored = load_checkpoint(MPI_COMM_WORLD, path, s, meta, s.row_blocks());
    EXPECT_EQ(stored.iteration, 5);
    EXPECT_EQ(s.iteration, 5);
    EXPECT_EQ(rel_diff(dn::gather_W(exec, s), W5), 0.0);
    EXPECT_EQ(rel_diff(dn::gather_Ht(exec, s), Ht5), 0.0);
    auto g = dn::init(exec, b, o);
    load_checkpoint(MPI_COMM_WORLD, gathered, g, meta, g.row_blocks());
    EXPECT_EQ(rel_diff(g.W, s.W), 0.0);
    EXPECT_EQ(rel_diff(g.Ht, s.Ht), 0.0);
    dn::resume(exec, b, o, s);
    EXPECT_EQ(rel_diff(dn::gather_W(exec, s), W_full), 0.0);
    EXPECT_EQ(rel_diff(dn::gather_Ht(exec, s), Ht_full), 0.0);
  }
  // 1D on the same ranks: within the tolerance.
  {
    const auto b1 = dn::make_problem(exec, MPI_COMM_WORLD, A, one_d);
    auto s = dn::init(exec, b1, o);
    load_checkpoint(MPI_COMM_WORLD, gathered, s, meta, s.row_blocks());
    EXPECT_EQ(s.iteration, 5);
    dn::resume(exec, b1, o, s);
    EXPECT_EQ(s.iteration, 12);
    EXPECT_LE(rel_diff(dn::gather_W(exec, s), W_full), 1e-9);
    EXPECT_LE(rel_diff(dn::gather_Ht(exec, s), Ht_full), 1e-9);
  }
  // A single-rank nmf run.
  if (world_rank() == 0) {
    const auto problem = nmf::make_problem(exec, A);
    auto s = nmf::init(exec, problem, o);
    load_checkpoint(path, s, meta);
    EXPECT_EQ(s.iteration, 5);
    EXPECT_EQ(rel_diff(s.W, W5), 0.0);
    EXPECT_EQ(rel_diff(s.Ht, Ht5), 0.0);
    nmf::resume(exec, problem, o, s);
    EXPECT_LE(rel_diff(s.W, W_full), 1e-9);
    EXPECT_LE(rel_diff(s.Ht, Ht_full), 1e-9);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
