// Distributed BMF under mpiexec (1..4 ranks): for one seed the factors, the
// error counts and the history are the single-process ones bit for bit
// (greedy and Metropolis, dense and sparse C, every start), the tracked
// counts equal a recomputation, the partition is non-empty, bad input is
// refused on every rank, and a checkpoint written on 2 ranks (greedy, and
// Metropolis with its best copy beside the current iterate) restarts on
// every rank count and in a single-process run, ending where the
// uninterrupted run ends.
#include <kfactor/bmf/bmf.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/distributed/bmf.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/io/checkpoint.hpp>
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace {
using kfactor::test::first_ranks;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

using namespace kfactor;
namespace db = kfactor::distributed::bmf;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

// The distributed solver keeps the single-process contract (core/solver.hpp).
static_assert(Solver<Exec, db::Problem<Mem>, bmf::Options, db::State<Mem>>);

template <class M>
std::vector<bit_word_t> words_of(const BitMatrix<M>& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X.words);
  return std::vector<bit_word_t>(h.data(), h.data() + h.size());
}

/// Every rank holds the same value.
bool same_on_every_rank(std::uint64_t v) {
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&v, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/// The distributed run on every rank and the single-process run of the same
/// options end with the same bits, counts, history and stop.
void expect_same_run(const bmf::Planted& p, const bmf::Options& o) {
  const Exec exec;
  const auto ref = bmf::solve(exec, bmf::make_problem(exec, p.rows, p.cols, p.one_rows, p.one_cols, o), o);
  const auto problem = db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, p.one_rows, p.one_cols, o);
  auto res = db::solve(exec, problem, o);
  EXPECT_EQ(words_of(db::gather_A(exec, res.state)), words_of(ref.state.A));
  EXPECT_EQ(words_of(res.state.Bt), words_of(ref.state.Bt));
  EXPECT_EQ(res.state.false_pos, ref.state.false_pos);
  EXPECT_EQ(res.state.false_neg, ref.state.false_neg);
  EXPECT_EQ(res.state.accepted, ref.state.accepted);
  EXPECT_EQ(res.state.temperature, ref.state.temperature);
  EXPECT_EQ(res.report.iterations, ref.report.iterations);
  EXPECT_EQ(res.report.stop_reason, ref.report.stop_reason);
  ASSERT_EQ(res.state.history.size(), ref.state.history.size());
  for (std::size_t i = 0; i < ref.state.history.size(); ++i)
    EXPECT_EQ(res.state.history.rows[i], ref.state.history.rows[i]) << "iteration " << i + 1;
  // The tracked counts are the error of the returned factors.
  const auto e = db::full_error(exec, problem, res.state);
  EXPECT_EQ(e.false_pos, res.state.false_pos);
  EXPECT_EQ(e.false_neg, res.state.false_neg);
  EXPECT_EQ(e.ones, std::uint64_t(p.one_rows.size()));
  EXPECT_TRUE(same_on_every_rank(res.state.false_pos + res.state.false_neg));
  // The search moved (a comparison of two idle runs could not fail).
  EXPECT_GT(res.state.accepted, 0u);
  EXPECT_EQ(res.report.info.at("mpi_ranks"), std::to_string(world_size()));
  // The result (the best factors with a best copy) is one process's.
  const auto fa = db::factor_a(exec, res.state), fb = db::factor_b(res.state);
  const auto ra = bmf::factor_a(ref.state), rb = bmf::factor_b(ref.state);
  ASSERT_EQ(fa.size(), ra.size());
  ASSERT_EQ(fb.size(), rb.size());
  EXPECT_TRUE(std::equal(fa.data(), fa.data() + fa.size(), ra.data()));
  EXPECT_TRUE(std::equal(fb.data(), fb.data() + fb.size(), rb.data()));
}

TEST(DistributedBmf, GreedyEqualsSingleProcessDenseAndSparse) {
  // Windows of 50 lines over 90 rows and 70 columns (consecutive lines) and
  // of 20 (every 4th row, every 3rd column): they wrap and cross the ranks'
  // boundaries.
  const auto p = bmf::make_planted(90, 70, 6, 0.2, 0.05, 3);
  bmf::Options o;
  o.rank = 6;
  o.stop.max_iterations = 25;
  o.init = bmf::Init::dost;
  for (int batch : {50, 20})
    for (auto mode : {bmf::DenseC::on, bmf::DenseC::off})
      for (auto order : {bmf::Order::columns_first, bmf::Order::rows_first}) {
        SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + ", batch " + std::to_string(batch) + ", " +
                     bmf::to_string(mode) + ", " + bmf::to_string(order));
        o.batch = batch;
        o.dense_c = mode;
        o.order = order;
        expect_same_run(p, o);
      }
}

TEST(DistributedBmf, MetropolisEqualsSingleProcess) {
  const auto p = bmf::make_planted(80, 60, 5, 0.2, 0.05, 8);
  bmf::Options o;
  o.rank = 5;
  o.batch = 37;
  o.stop.max_iterations = 30;
  o.init = bmf::Init::density;
  o.temperature = 2.0;
  o.temp_step = 5;
  o.temp_factor = 0.8;
  o.weight_ones = 1.5;
  o.proposal_group = 3;
  for (bool keep_best : {true, false}) {
    SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + (keep_best ? ", keep_best" : ""));
    o.keep_best = keep_best;
    o.dense_c = keep_best ? bmf::DenseC::off : bmf::DenseC::on;
    expect_same_run(p, o);
  }
}

TEST(DistributedBmf, CoverAndRowStartsEqualSingleProcess) {
  const auto p = bmf::make_planted(70, 64, 8, 0.15, 0.03, 5);
  bmf::Options o;
  o.rank = 8;
  o.batch = 40;
  o.stop.max_iterations = 10;
  for (auto init : {bmf::Init::cover, bmf::Init::sample_rows}) {
    SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + ", init " + bmf::to_string(init));
    o.init = init;
    expect_same_run(p, o);
  }
}

TEST(DistributedBmf, PartitionIsNonEmptyAndHoldsEveryOne) {
  const Exec exec;
  const auto p = bmf::make_planted(50, 40, 4, 0.2, 0.05, 2);
  bmf::Options o;
  o.rank = 4;
  for (auto mode : {bmf::DenseC::on, bmf::DenseC::off}) {
    o.dense_c = mode;
    const auto b = db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, p.one_rows, p.one_cols, o);
    const int P = world_size();
    ASSERT_EQ(b.row_bounds.size(), std::size_t(P) + 1);
    EXPECT_EQ(b.row_bounds.front(), 0);
    EXPECT_EQ(b.row_bounds.back(), 50);
    for (int q = 0; q < P; ++q) EXPECT_LT(b.row_bounds[q], b.row_bounds[q + 1]);
    if (mode == bmf::DenseC::on)  // equal blocks
      for (int q = 0; q < P; ++q) EXPECT_LE(b.row_bounds[q + 1] - b.row_bounds[q], (50 + P - 1) / P);
    EXPECT_EQ(b.local.dense, mode == bmf::DenseC::on);
    EXPECT_EQ(b.local.rows, b.row_bounds[b.rank + 1] - b.row_bounds[b.rank]);
    EXPECT_EQ(b.layout.ones, std::uint64_t(p.one_rows.size()));
    std::uint64_t mine = b.local.ones, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(all, std::uint64_t(p.one_rows.size()));
  }
}

TEST(DistributedBmf, BadInputRefusedOnEveryRank) {
  const Exec exec;
  const auto p = bmf::make_planted(30, 20, 3, 0.2, 0.05, 4);
  bmf::Options o;
  o.rank = 3;
  auto rows = p.one_rows;
  rows.back() = 30;  // outside the shape
  EXPECT_THROW(db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, rows, p.one_cols, o), InputError);
  EXPECT_THROW(db::make_problem(exec, MPI_COMM_WORLD, 30, 20, {}, {}, o), InputError);  // no ones
  o.rank = 21;                                                                          // > min(30, 20)
  EXPECT_THROW(db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, p.one_rows, p.one_cols, o), UsageError);
  o.rank = 3;
  o.flip_prob = 0;
  EXPECT_THROW(db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, p.one_rows, p.one_cols, o), UsageError);
  if (world_size() > 1) {  // more ranks than rows
    bmf::Options one;
    one.rank = 1;
    EXPECT_THROW(db::make_problem(exec, MPI_COMM_WORLD, world_size() - 1, 5, {0}, {0}, one), UsageError);
  }
}

#if defined(KFACTOR_HAVE_HDF5)
/// The checkpointed state of a distributed run, the whole factors gathered:
/// the current iterate and, with a best copy, the best one.
struct WholeBits {
  std::vector<bit_word_t> A, Bt, best_A, best_Bt;
};
WholeBits whole_bits(const Exec& exec, const db::State<Mem>& s) {
  WholeBits w{words_of(db::gather_A(exec, s)), words_of(s.Bt), {}, {}};
  if (s.has_best_copy) {
    w.best_A = words_of(db::detail::gather_rows(exec, s, s.best_A));
    w.best_Bt = words_of(s.best_Bt);
  }
  return w;
}
WholeBits whole_bits(const bmf::State<Mem>& s) {
  WholeBits w{words_of(s.A), words_of(s.Bt), {}, {}};
  if (s.has_best_copy) {
    w.best_A = words_of(s.best_A);
    w.best_Bt = words_of(s.best_Bt);
  }
  return w;
}

/// `s`, restarted and run to the end, is the uninterrupted run `full`: the
/// current and the best factors, the counts and the history.
void expect_same_end(const WholeBits& got, const bmf::State<Mem>& s, const bmf::State<Mem>& full) {
  const auto want = whole_bits(full);
  EXPECT_EQ(s.iteration, full.iteration);
  EXPECT_EQ(got.A, want.A);
  EXPECT_EQ(got.Bt, want.Bt);
  EXPECT_EQ(got.best_A, want.best_A);
  EXPECT_EQ(got.best_Bt, want.best_Bt);
  EXPECT_EQ(s.false_pos, full.false_pos);
  EXPECT_EQ(s.false_neg, full.false_neg);
  EXPECT_EQ(s.best_false_pos, full.best_false_pos);
  EXPECT_EQ(s.best_false_neg, full.best_false_neg);
  EXPECT_EQ(s.accepted, full.accepted);
  EXPECT_EQ(s.temperature, full.temperature);
  ASSERT_EQ(s.history.size(), full.history.size());
  for (std::size_t i = 0; i < s.history.size(); ++i) EXPECT_EQ(s.history.rows[i], full.history.rows[i]);
}

TEST(DistributedBmf, CheckpointOnTwoRanksRestartsAnywhere) {
  const Exec exec;
  const auto dir = shared_dir("dist_bmf");
  const std::string path = (dir / "bmf.h5").string();
  const auto p = bmf::make_planted(90, 70, 6, 0.2, 0.05, 6);
  const int writers = std::min(2, world_size());
  // Greedy (A and Bt alone) and Metropolis with keep_best (best_A, a second
  // row-partitioned field, and best_Bt beside the current iterate).
  for (double temperature : {0.0, 3.0}) {
    SCOPED_TRACE(std::string("P = ") + std::to_string(world_size()) + ", T0 = " + std::to_string(temperature));
    bmf::Options o;
    o.rank = 6;
    o.batch = 45;
    o.init = bmf::Init::dost;
    o.every_line_changed = 0;
    o.temperature = temperature;
    o.temp_step = 4;
    o.temp_factor = 0.9;
    auto meta = checkpoint_meta<std::uint64_t, Exec>("bmf", option_values(o), InputFingerprint{}, o.rank);
    meta.precision = "bits";

    // The uninterrupted single-process run to 20 iterations.
    o.stop.max_iterations = 20;
    const auto single = bmf::make_problem(exec, p.rows, p.cols, p.one_rows, p.one_cols, o);
    const auto full = bmf::solve(exec, single, o);
    ASSERT_EQ(full.report.iterations, 20);
    ASSERT_EQ(full.state.has_best_copy, temperature > 0);
    // Under Metropolis the run ends away from its best factors, so that a
    // best_A restored from the wrong rows or from A would show.
    if (temperature > 0) ASSERT_NE(words_of(full.state.A), words_of(full.state.best_A));

    // 8 iterations on `writers` ranks, checkpointed at 8.
    if (MPI_Comm c = first_ranks(writers); c != MPI_COMM_NULL) {
      o.stop.max_iterations = 8;
      const auto b = db::make_problem(exec, c, p.rows, p.cols, p.one_rows, p.one_cols, o);
      auto s = db::init(exec, b, o);
      db::resume(exec, b, o, s, distributed::checkpoint_observer(c, path, 4, s, meta));
      EXPECT_EQ(s.iteration, 8);
      MPI_Comm_free(&c);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    o.stop.max_iterations = 20;
    // Restart on every rank, to 20.
    {
      const auto b = db::make_problem(exec, MPI_COMM_WORLD, p.rows, p.cols, p.one_rows, p.one_cols, o);
      auto s = db::init(exec, b, o);
      const auto stored = load_checkpoint(MPI_COMM_WORLD, path, s, meta, s.row_blocks());
      EXPECT_EQ(stored.iteration, 8);
      EXPECT_EQ(stored.mpi_ranks, writers);
      EXPECT_EQ(s.history.size(), 8u);
      db::resume(exec, b, o, s);
      expect_same_end(whole_bits(exec, s), s, full.state);
      // The written result is the best factors seen, as one process's.
      const auto fa = db::factor_a(exec, s);
      const auto ref = bmf::factor_a(full.state);
      ASSERT_EQ(fa.size(), ref.size());
      EXPECT_TRUE(std::equal(fa.data(), fa.data() + fa.size(), ref.data()));
    }
    // A single-process bmf run restarts from the distributed file.
    if (world_rank() == 0) {
      auto s = bmf::init(exec, single, o);
      load_checkpoint(path, s, meta);
      EXPECT_EQ(s.iteration, 8);
      bmf::resume(exec, single, o, s);
      expect_same_end(whole_bits(s), s, full.state);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

}  // namespace
