// One rank failing in the middle of a distributed run, as a user runs it
// (`mpiexec -n P kfactor nmf|als --distributed`, P = 2 and 4), and the
// parallel-HDF5 checkpoint save on a full disk.
//
// - KFACTOR_TEST_FAIL_AT=RANK:ITERATION (docs/testing.md) throws on one rank
//   between two collectives, while the other ranks go on into the next
//   collective (the iteration's checkpoint save, or the next epoch) and wait
//   there. The job must end within a time bound with exit 4 and one message
//   naming the failing rank; the previous checkpoint is byte for byte as
//   before, no temporary file is left, and a rerun continues from it.
// - A checkpoint that does not fit a 64 KiB tmpfs (2 ranks, collective
//   save): every rank exits 4 with one message naming the checkpoint, no
//   HDF5 diagnostics, the previous checkpoint intact, nothing left behind.
//   Skipped where no tmpfs can be mounted.
#include "checkpoint/write_targets.hpp"
#include "common/mpi_run.hpp"

#include <kfactor/config.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using kfactor::test::count;
using kfactor::test::file_bytes;
using kfactor::test::kfactor_binary;
using kfactor::test::leftovers;
using kfactor::test::mpi_run;
using kfactor::test::MpiRun;
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::TempDir;
using kfactor::test::without_singleton_environment;

constexpr double time_bound_seconds = 60;

/// A sparse nonnegative 60 x 45 matrix with skewed rows (Matrix Market).
void write_matrix(const std::string& path) {
  std::ofstream f(path);
  std::uint64_t x = 7;
  auto next = [&] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  std::vector<std::string> lines;
  for (int i = 0; i < 60; ++i)
    for (int j = 0; j < 45; ++j)
      if (next() % 100 < (i < 8 ? 70u : 15u))
        lines.push_back(std::to_string(i + 1) + " " + std::to_string(j + 1) + " " +
                        std::to_string(0.1 + double(next() % 1000) / 1000.0));
  f << "%%MatrixMarket matrix coordinate real general\n60 45 " << lines.size() << "\n";
  for (const auto& l : lines) f << l << "\n";
}

/// Ratings of 80 users (ids not contiguous) for 50 items.
void write_ratings(const std::string& path) {
  std::ofstream f(path);
  std::uint64_t x = 11;
  auto next = [&] { return (x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11; };
  for (int u = 0; u < 80; ++u)
    for (int i = 0; i < 50; ++i)
      if (next() % 100 < (u < 10 ? 50u : 12u)) f << 1000 + 3 * u << " " << 7 * i << " " << 1 + next() % 5 << "\n";
}

/// The command line of `command` on `input` with rank K.
std::string command_line(const std::string& command, const std::string& input, int K = 4) {
  const std::string k = " --rank " + std::to_string(K);
  if (command == "nmf") return "nmf --input " + quote(input) + k + " --algorithm hals --seed 5 --quiet";
  return "als --input " + quote(input) + " --format ratings" + k + " --precision double --quiet";
}

/// `kfactor ARGS` as one process (no mpiexec).
kfactor::test::CliRun single(const TempDir& dir, const std::string& args) {
  return run_kfactor(args, dir, without_singleton_environment());
}

struct FaultCase {
  std::string command;
  int ranks, fail_rank, fail_iteration;
};

class CliMpiFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(CliMpiFault, OneRankFailureEndsEveryRankAndKeepsTheCheckpoint) {
  const auto& [command, P, fail_rank, fail_iteration] = GetParam();
  TempDir dir("mpifault");
  const std::string input = dir.file(command == "nmf" ? "a.mtx" : "ratings.txt");
  command == "nmf" ? write_matrix(input) : write_ratings(input);
  const std::string ck = dir.file("ck.h5");
  const std::string base = command_line(command, input);
  // The previous checkpoint, at iteration 2.
  const auto first = single(dir, base + " --iters 2 --checkpoint " + quote(ck));
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string before = file_bytes(ck);
  ASSERT_FALSE(before.empty());

  const std::string run =
      base + " --distributed --iters 8 --restart " + quote(ck) + " --checkpoint " + quote(ck) + " --checkpoint-every 2";
  const std::string hook = "KFACTOR_TEST_FAIL_AT=" + std::to_string(fail_rank) + ":" + std::to_string(fail_iteration);
  const MpiRun r = mpi_run(dir, P, kfactor_binary(), run, -1, {}, hook);
  EXPECT_NE(r.code, 124) << "timed out (hang)\n" << r.err;
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_LT(r.seconds, time_bound_seconds) << r.err;
  EXPECT_EQ(
      count(r.err, "kfactor: error: rank " + std::to_string(fail_rank) +
                       ": failure injected by KFACTOR_TEST_FAIL_AT at iteration " + std::to_string(fail_iteration)),
      1u)
      << r.err;
  EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
  EXPECT_EQ(file_bytes(ck), before);
  for (const auto& name : leftovers(dir.path))
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "left behind: " << name;

  // The same run without the failure continues from the kept checkpoint
  // (a lock file left by a killed rank 0 does not stop it) and leaves
  // neither temporaries nor lock files.
  const MpiRun again = mpi_run(dir, P, kfactor_binary(), run);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.rank_exit.size(), std::size_t(P)) << again.err;
  EXPECT_NE(file_bytes(ck), before);
  EXPECT_TRUE(leftovers(dir.path).empty());
  const auto info = single(dir, "checkpoint-info --json " + quote(ck));
  EXPECT_EQ(info.code, 0) << info.err;
  EXPECT_NE(info.out.find("\"iteration\":8"), std::string::npos) << info.out;
}

// Iteration 4 is a checkpoint iteration (the others wait in the save),
// iteration 3 is not (they wait in the next epoch's collectives).
INSTANTIATE_TEST_SUITE_P(Runs, CliMpiFault,
                         ::testing::Values(FaultCase{"nmf", 2, 1, 4}, FaultCase{"nmf", 4, 0, 3},
                                           FaultCase{"als", 2, 0, 4}, FaultCase{"als", 4, 3, 3}),
                         [](const auto& info) {
                           return info.param.command + "_np" + std::to_string(info.param.ranks) + "_rank" +
                                  std::to_string(info.param.fail_rank) + "_iter" +
                                  std::to_string(info.param.fail_iteration);
                         });

TEST(CliMpiFaultHook, MalformedValueIsAUsageError) {
  TempDir dir("mpifault");
  const std::string input = dir.file("a.mtx");
  write_matrix(input);
  for (const std::string value : {"1", "x:3", "1:", "-1:2", "1:2:3"}) {
    const auto r = run_kfactor(command_line("nmf", input) + " --distributed --iters 2", dir,
                               without_singleton_environment() + " KFACTOR_TEST_FAIL_AT=" + quote(value));
    EXPECT_EQ(r.code, 2) << value << "\n" << r.err;
    EXPECT_NE(r.err.find("KFACTOR_TEST_FAIL_AT must be RANK:ITERATION"), std::string::npos) << r.err;
  }
}

TEST(CliMpiFullDisk, CollectiveCheckpointOnAFullDiskExits4OnEveryRank) {
  TempDir dir("mpifull");
  const std::string input = dir.file("a.mtx");
  write_matrix(input);
  const std::string full = dir.file("full");
  std::filesystem::create_directory(full);
  kfactor::test::ScopedTmpfs mount(full, "size=64k");
  if (!mount.ok()) GTEST_SKIP() << "no tmpfs can be mounted here";
  // The previous checkpoint: rank 2 fits (about 15 KB), rank 40 does not.
  const std::string ck = full + "/ck.h5";
  const std::string options = " --iters 2 --checkpoint " + quote(ck);
  const auto first = single(dir, command_line("nmf", input, 2) + options);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string before = file_bytes(ck);
  ASSERT_FALSE(before.empty());

  const MpiRun r = mpi_run(dir, 2, kfactor_binary(), command_line("nmf", input, 40) + options + " --distributed");
  EXPECT_NE(r.code, 124) << "timed out (hang)\n" << r.err;
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_LT(r.seconds, time_bound_seconds) << r.err;
  for (const auto& [rank, code] : r.rank_exit) EXPECT_EQ(code, 4) << "rank " << rank << "\n" << r.err;
  EXPECT_GE(r.rank_exit.size(), std::size_t(1)) << r.err;
  // Agreed: printed once, by rank 0, naming the checkpoint and the cause.
  EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
  EXPECT_NE(r.err.find(ck), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("HDF5-DIAG"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ssertion"), std::string::npos) << r.err;
  EXPECT_EQ(file_bytes(ck), before);
  EXPECT_TRUE(leftovers(full).empty());
}

}  // namespace
