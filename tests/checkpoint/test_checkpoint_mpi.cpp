// Distributed checkpoints under mpiexec (1, 2, 3 ranks): one file written
// collectively (parallel HDF5) or gathered to rank 0, read back on another
// partition of the rows and by a single process (a restart on another rank
// count, which the loaded metadata names), with the refusals agreed on every
// rank; a save that does not fit the disk (a 64 KiB tmpfs) fails alike on
// every rank and leaves the previous checkpoint and nothing else.
#include "checkpoint/write_targets.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace kfactor;
namespace fs = std::filesystem;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

constexpr int m = 23, n = 9, K = 4;

struct DistState {
  DenseMatrix<double, Mem> W;     // row-partitioned: this rank's rows of m x K
  Kokkos::View<int*, Mem> owner;  // row-partitioned rank-1 field
  DenseMatrix<double, Mem> H;     // replicated n x K
  int iteration = 0;
  std::uint64_t counter = 0;
  MetricHistory history;
  template <class F>
  void visit(F&& f) {
    f("W", W);
    f("owner", owner);
    f("H", H);
    f("iteration", iteration);
    f("counter", counter);
    f("history", history);
  }
};

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// Global row i of W, column k: a counter-based value, so any rank can make any row.
double w_value(std::int64_t i, int k) { return CounterRng(3, RngStream::user).uniform(i * K + k); }

/// A state holding rows [first, first + rows) (distributed) or all rows.
DistState make_state(std::int64_t first, std::int64_t rows, bool filled) {
  DistState s;
  s.W = DenseMatrix<double, Mem>("W", rows, K);
  s.owner = Kokkos::View<int*, Mem>("owner", rows);
  s.H = DenseMatrix<double, Mem>("H", n, K);
  if (!filled) return s;
  auto hW = Kokkos::create_mirror_view(s.W);
  auto ho = Kokkos::create_mirror_view(s.owner);
  for (std::int64_t i = 0; i < rows; ++i) {
    for (int k = 0; k < K; ++k) hW(i, k) = w_value(first + i, k);
    ho(i) = static_cast<int>(first + i) * 10;
  }
  Kokkos::deep_copy(s.W, hW);
  Kokkos::deep_copy(s.owner, ho);
  fill_uniform(Exec{}, s.H, 4, RngStream::factor_h, 0.0, 1.0);
  Exec{}.fence();
  s.iteration = 12;
  s.counter = 0xABCDEF0123ULL;
  Metrics mt;
  mt.set("relative_error", 0.25);
  s.history.append(11, mt);
  mt.set("relative_error", 0.125);
  s.history.append(12, mt);
  return s;
}

void expect_rows(const DistState& s, std::int64_t first) {
  auto hW = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, s.W);
  auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, s.owner);
  for (std::size_t i = 0; i < hW.extent(0); ++i) {
    for (int k = 0; k < K; ++k) ASSERT_EQ(hW(i, k), w_value(first + i, k)) << "row " << first + i;
    ASSERT_EQ(ho(i), static_cast<int>(first + i) * 10);
  }
  const auto ref = make_state(0, 0, true);
  auto hH = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, s.H);
  auto rH = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ref.H);
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < K; ++k) ASSERT_EQ(hH(j, k), rH(j, k));
  EXPECT_EQ(s.iteration, 12);
  EXPECT_EQ(s.counter, 0xABCDEF0123ULL);
  ASSERT_EQ(s.history.size(), 2u);
  EXPECT_EQ(s.history.rows[1][0], 0.125);
}

/// Rows split in proportion to rank + 1: another partition than the balanced one.
RowBlock skewed_block(std::int64_t rows, int size, int rank) {
  const std::int64_t total = static_cast<std::int64_t>(size) * (size + 1) / 2;
  RowBlock b;
  b.global_rows = rows;
  b.first_row = rows * (static_cast<std::int64_t>(rank) * (rank + 1) / 2) / total;
  return b;
}
std::int64_t block_rows(RowBlock (*split)(std::int64_t, int, int), std::int64_t rows, int size, int rank) {
  const auto next = rank + 1 < size ? split(rows, size, rank + 1).first_row : rows;
  return next - split(rows, size, rank).first_row;
}

std::string shared_dir() {
  std::string dir;
  if (world_rank() == 0) {
    dir = (fs::temp_directory_path() / ("kfactor_ckpt_mpi_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  int len = static_cast<int>(dir.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
  dir.resize(static_cast<std::size_t>(len));
  MPI_Bcast(dir.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir;
}

CheckpointMeta dist_meta() {
  CheckpointMeta meta;
  meta.solver = "dist";
  meta.rank = K;
  meta.precision = "double";
  meta.input = InputFingerprint{m, n, m * n, 77};
  return meta;
}

TEST(CheckpointMpi, OneFileReadBackOnAnotherPartitionAndOnOneProcess) {
  const int rank = world_rank(), size = world_size();
  const std::string dir = shared_dir();
  const auto meta = dist_meta();
  const RowBlock mine = distributed::balanced_row_block(m, size, rank);
  const auto mine_rows = block_rows(distributed::balanced_row_block, m, size, rank);
  const RowBlocks save_blocks{{"W", mine}, {"owner", mine}};

  std::vector<std::pair<std::string, DistributedIo>> modes = {{"gather", DistributedIo::gather},
                                                              {"auto", DistributedIo::automatic}};
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  modes.emplace_back("collective", DistributedIo::collective);
#endif
  std::vector<CheckpointInfo> infos;
  for (const auto& [name, io] : modes) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/" + name + ".h5";
    auto s = make_state(mine.first_row, mine_rows, true);
    save_checkpoint(MPI_COMM_WORLD, path, s, meta, save_blocks, io);
    if (rank == 0) {
      EXPECT_TRUE(fs::exists(path));
    }

    // Another partition of the rows over the same ranks.
    const RowBlock other = skewed_block(m, size, rank);
    const auto other_rows = block_rows(skewed_block, m, size, rank);
    auto t = make_state(other.first_row, other_rows, false);
    const auto stored = load_checkpoint(MPI_COMM_WORLD, path, t, meta, RowBlocks{{"W", other}, {"owner", other}});
    EXPECT_EQ(stored.mpi_ranks, size);
    EXPECT_EQ(stored.iteration, 12);
    expect_rows(t, other.first_row);

    // One process, all rows: the serial loader reads the same file.
    auto whole = make_state(0, m, false);
    load_checkpoint(path, whole, meta);
    expect_rows(whole, 0);
    infos.push_back(inspect_checkpoint(path));
  }
  // Every mode wrote the same datasets with the same checksums.
  for (std::size_t i = 1; i < infos.size(); ++i) {
    ASSERT_EQ(infos[i].fields.size(), infos[0].fields.size());
    for (std::size_t f = 0; f < infos[0].fields.size(); ++f) {
      EXPECT_EQ(infos[i].fields[f].name, infos[0].fields[f].name);
      EXPECT_EQ(infos[i].fields[f].checksum, infos[0].fields[f].checksum) << infos[0].fields[f].name;
    }
  }
  // No temporaries were left behind.
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    for (const auto& e : fs::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir);
}

TEST(CheckpointMpi, RefusalsAreAgreedOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  const std::string dir = shared_dir();
  const auto meta = dist_meta();
  const RowBlock mine = distributed::balanced_row_block(m, size, rank);
  const auto rows = block_rows(distributed::balanced_row_block, m, size, rank);
  auto s = make_state(mine.first_row, rows, true);
  const std::string path = dir + "/c.h5";
  save_checkpoint(MPI_COMM_WORLD, path, s, meta, RowBlocks{{"W", mine}, {"owner", mine}});

  // Blocks that do not tile the rows: every rank claims row 0 (with 1 rank, too few rows).
  RowBlock bad{m, 0};
  auto small = make_state(0, size == 1 ? m - 1 : rows, true);
  EXPECT_THROW(load_checkpoint(MPI_COMM_WORLD, path, small, meta, RowBlocks{{"W", bad}, {"owner", bad}}), UsageError);
  EXPECT_THROW(save_checkpoint(MPI_COMM_WORLD, dir + "/bad.h5", small, meta, RowBlocks{{"W", bad}, {"owner", bad}}),
               UsageError);
  // Another rank K, a missing file: InputError everywhere.
  auto t = make_state(mine.first_row, rows, false);
  CheckpointMeta other = meta;
  other.rank = K + 1;
  EXPECT_THROW(load_checkpoint(MPI_COMM_WORLD, path, t, other, RowBlocks{{"W", mine}, {"owner", mine}}), InputError);
  EXPECT_THROW(load_checkpoint(MPI_COMM_WORLD, dir + "/none.h5", t, meta, RowBlocks{{"W", mine}, {"owner", mine}}),
               InputError);
  // The failed save left nothing, the good file still loads.
  load_checkpoint(MPI_COMM_WORLD, path, t, meta, RowBlocks{{"W", mine}, {"owner", mine}});
  expect_rows(t, mine.first_row);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    EXPECT_FALSE(fs::exists(dir + "/bad.h5"));
    fs::remove_all(dir);
  }
}

TEST(CheckpointMpi, FullDiskFailsOnEveryRankAndKeepsThePreviousCheckpoint) {
  const int rank = world_rank(), size = world_size();
  const std::string dir = shared_dir();
  const std::string full = dir + "/full";
  std::optional<kfactor::test::ScopedTmpfs> mount;
  int mounted = 0;
  if (rank == 0) {
    fs::create_directory(full);
    mount.emplace(full, "size=64k");
    mounted = mount->ok() ? 1 : 0;
  }
  MPI_Bcast(&mounted, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!mounted) {
    if (rank == 0) fs::remove_all(dir);
    GTEST_SKIP() << "no tmpfs can be mounted here";
  }
  const auto meta = dist_meta();
  const RowBlock mine = distributed::balanced_row_block(m, size, rank);
  const auto mine_rows = block_rows(distributed::balanced_row_block, m, size, rank);
  const RowBlocks blocks{{"W", mine}, {"owner", mine}};
  const std::string path = full + "/ck.h5";
  auto small = make_state(mine.first_row, mine_rows, true);
  save_checkpoint(MPI_COMM_WORLD, path, small, meta, blocks);
  const std::string before = rank == 0 ? kfactor::test::file_bytes(path) : "";

  // 6000 x 4 doubles: 192 KB, three times the file system.
  constexpr std::int64_t big_rows = 6000;
  const RowBlock big_block = distributed::balanced_row_block(big_rows, size, rank);
  auto big = make_state(big_block.first_row, block_rows(distributed::balanced_row_block, big_rows, size, rank), true);
  std::vector<std::pair<std::string, DistributedIo>> modes = {{"gather", DistributedIo::gather}};
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  modes.emplace_back("collective", DistributedIo::collective);
#endif
  for (const auto& [name, io] : modes) {
    SCOPED_TRACE(name);
    try {
      save_checkpoint(MPI_COMM_WORLD, path, big, meta, RowBlocks{{"W", big_block}, {"owner", big_block}}, io);
      ADD_FAILURE() << "the save fit on rank " << rank;
    } catch (const RuntimeFailure& e) {
      const std::string what = e.what();
      EXPECT_TRUE(distributed::is_agreed(e)) << what;
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a RuntimeFailure on rank " << rank << ": " << e.what();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      EXPECT_EQ(kfactor::test::file_bytes(path), before);
      EXPECT_EQ(kfactor::test::leftovers(full), std::vector<std::string>{});
    }
    // The previous checkpoint still loads, on every rank.
    auto t = make_state(mine.first_row, mine_rows, false);
    load_checkpoint(MPI_COMM_WORLD, path, t, meta, blocks);
    expect_rows(t, mine.first_row);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    mount.reset();
    fs::remove_all(dir);
  }
}

// The number of ranks is part of the recorded setup: a restart on as many
// ranks names nothing, one on a single process names both rank counts.
TEST(CheckpointMpi, ARestartOnAnotherRankCountIsNamed) {
  const int rank = world_rank(), size = world_size();
  const std::string dir = shared_dir();
  auto meta = dist_meta();
  meta.execution_space = Exec::name();
  meta.concurrency = Exec().concurrency();
  const RowBlock mine = distributed::balanced_row_block(m, size, rank);
  const RowBlocks blocks{{"W", mine}, {"owner", mine}};
  const auto rows = block_rows(distributed::balanced_row_block, m, size, rank);
  auto s = make_state(mine.first_row, rows, true);
  const std::string path = dir + "/setup.h5";
  save_checkpoint(MPI_COMM_WORLD, path, s, meta, blocks);
  auto t = make_state(mine.first_row, rows, false);
  const auto same = load_checkpoint(MPI_COMM_WORLD, path, t, meta, blocks);
  EXPECT_EQ(same.execution_space, meta.execution_space);
  EXPECT_EQ(same.concurrency, meta.concurrency);
  EXPECT_EQ(same.mpi_ranks, size);
  EXPECT_EQ(same.setup_change, "");
  auto whole = make_state(0, m, false);
  const auto alone = load_checkpoint(path, whole, meta);
  expect_rows(whole, 0);
  const std::string threads = meta.execution_space + " x " + std::to_string(meta.concurrency);
  if (size == 1)
    EXPECT_EQ(alone.setup_change, "");
  else
    EXPECT_EQ(alone.setup_change, "checkpoint written with " + threads + " threads on " + std::to_string(size) +
                                      " MPI ranks, resuming with " + threads +
                                      " on 1 MPI rank: the continuation is not guaranteed to be bit-identical to "
                                      "an uninterrupted run");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir);
}

}  // namespace
