// distributed/output.hpp under mpiexec (1 to 3 ranks): part_path's naming
// rule; write_parts publishes every rank's part, one output set across the
// ranks, only once all parts are written; a rank that cannot write its part
// (its folder is missing) ends every rank with its error, agreed, with no
// part of that run published, the earlier parts byte for byte as they were
// and no temporary left.
#include <kfactor/config.hpp>

#include <gtest/gtest.h>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/output.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include "checkpoint/write_targets.hpp"
#include "mpi_test_util.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {
using namespace kfactor;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;
namespace fs = std::filesystem;

TEST(DistributedOutput, PartPathNamesEachRanksFile) {
  EXPECT_EQ(distributed::part_path("p.mtx", 0), "p.rank0.mtx");
  EXPECT_EQ(distributed::part_path("out/p.mtx", 12), "out/p.rank12.mtx");
  EXPECT_EQ(distributed::part_path("out/p", 3), "out/p.rank3");
  EXPECT_EQ(distributed::part_path("run.d/p", 1), "run.d/p.rank1");
  EXPECT_EQ(distributed::part_path("run.d/.p", 1), "run.d/.p.rank1");
  EXPECT_EQ(distributed::part_path("p.tar.mtx", 2), "p.tar.rank2.mtx");
  EXPECT_EQ(distributed::part_path("/scratch/{rank}/p.mtx", 7), "/scratch/7/p.mtx");
  EXPECT_EQ(distributed::part_path("n{rank}/p{rank}.mtx", 10), "n10/p10.mtx");
  // Every rank's name differs from every other's.
  const std::string a = distributed::part_path("x.mtx", world_rank());
  for (int p = 0; p < world_size(); ++p)
    if (p != world_rank()) EXPECT_NE(distributed::part_path("x.mtx", p), a);
}

/// Rank `rank`'s part for run `seed`: random values in column rank % 5 of
/// a 9 x 5 matrix, at distinct random rows.
CooMatrix<double> part_of(int rank, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<double> A;
  A.num_rows = 9;
  A.num_cols = 5;
  for (int i = 0; i < 9; ++i) {
    const auto c = static_cast<std::uint64_t>(100 * rank + 2 * i);
    if (rng.uniform(c) < 0.5) continue;
    A.rows.push_back(i);
    A.cols.push_back(rank % 5);
    A.values.push_back(rng.uniform(c + 1) - 0.5);
  }
  return A;
}

TEST(DistributedOutput, PartsArePublishedTogetherOrNotAtAll) {
  const int rank = world_rank(), size = world_size();
  const fs::path dir = shared_dir("distributed_output");
  // One folder per rank, named through {rank}.
  if (rank == 0)
    for (int p = 0; p < size; ++p) fs::create_directories(dir / ("n" + std::to_string(p)));
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string path = (dir / "n{rank}" / "p.mtx").string();
  const auto write = [&](std::uint64_t seed) {
    return distributed::write_parts(MPI_COMM_WORLD, path, "P", {},
                                    [&](const std::string& part, const io::OutputOptions& out) {
                                      io::write_matrix_market(part, part_of(rank, seed), "a part", out);
                                    });
  };
  const std::string mine = write(1);
  EXPECT_EQ(mine, (dir / ("n" + std::to_string(rank)) / "p.mtx").string());
  const auto back = io::read_matrix_market<double>(mine);
  const auto want = part_of(rank, 1);
  EXPECT_EQ(back.rows, want.rows);
  EXPECT_EQ(back.cols, want.cols);
  EXPECT_EQ(back.values, want.values);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> parts;
  for (int p = 0; p < size; ++p) parts.push_back(distributed::part_path(path, p));
  // Every rank's part, one set: the stamps agree and list every rank.
  const std::string id = io::verify_output_set(parts);
  EXPECT_EQ(io::read_output_stamp(mine).member, "P.rank" + std::to_string(rank));
  std::string root_id = id;
  MPI_Bcast(root_id.data(), static_cast<int>(root_id.size()), MPI_CHAR, 0, MPI_COMM_WORLD);
  EXPECT_EQ(id, root_id);

  // The last rank's folder is gone: every rank fails with its error, and
  // the other ranks' parts of the first run stay.
  const int bad = size - 1;
  std::vector<std::map<std::string, std::string>> before;
  for (int p = 0; p < bad; ++p) before.push_back(test::snapshot(dir / ("n" + std::to_string(p))));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir / ("n" + std::to_string(bad)));
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    write(2);
    ADD_FAILURE() << "rank " << rank << " did not throw";
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    EXPECT_TRUE(distributed::is_agreed(e));
    EXPECT_NE(what.find(distributed::part_path(path, bad)), std::string::npos) << what;
    if (size > 1) EXPECT_EQ(what.rfind("rank " + std::to_string(bad) + ": ", 0), 0u) << what;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int p = 0; p < bad; ++p) {
    EXPECT_EQ(test::snapshot(dir / ("n" + std::to_string(p))), before[static_cast<std::size_t>(p)]);
    EXPECT_TRUE(test::leftovers(dir / ("n" + std::to_string(p))).empty());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::remove_all(dir);
}

}  // namespace
#else
TEST(DistributedOutput, NotBuilt) { GTEST_SKIP() << "kfactor was built without MPI"; }
#endif
