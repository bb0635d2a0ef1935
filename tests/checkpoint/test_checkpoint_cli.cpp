// The execution setup of a checkpoint through the `kfactor` command: the file
// records the execution space and its thread count (`checkpoint-info`); a
// --restart with another --kokkos-num-threads warns on stderr and in the
// --json report that the continuation is not guaranteed to be bit-identical,
// while one in the same setup says nothing and writes the factors of the
// uninterrupted run byte for byte.
#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <kfactor/core/spaces.hpp>

#include <gtest/gtest.h>
#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <string>

namespace {
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::slurp;
using kfactor::test::TempDir;
using kfactor::test::without_stamp;

const std::string gnutella = kfactor::test::data_path("snap/p2p-Gnutella08.txt");

TEST(CheckpointCli, ARestartWithAnotherThreadCountWarns) {
  using Space = Kokkos::DefaultExecutionSpace;
  if constexpr (!kfactor::is_host_space_v<Space>) GTEST_SKIP() << "--kokkos-num-threads sets host threads only";
  const std::string space = Space::name();
  TempDir dir;
  const std::string ckpt = dir.file("c.h5");
  const std::string common = "nmf --input " + quote(gnutella) + " --rank 4 --seed 5 --quiet";
  auto r = run_kfactor(common + " --kokkos-num-threads=2 --iters 6 --output " + quote(dir.file("a")), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_kfactor(common + " --kokkos-num-threads=2 --iters 3 --checkpoint " + quote(ckpt), dir);
  ASSERT_EQ(r.code, 0) << r.err;

  r = run_kfactor("checkpoint-info --json " + quote(ckpt), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto info = nlohmann::json::parse(r.out);
  EXPECT_EQ(info.at("execution_space"), space);
  EXPECT_EQ(info.at("concurrency"), 2);
  EXPECT_EQ(info.at("mpi_ranks"), 1);
  r = run_kfactor("checkpoint-info " + quote(ckpt), dir);
  EXPECT_NE(r.out.find("on " + space + " x 2 threads, 1 MPI rank(s)"), std::string::npos) << r.out;

  // The same setup: no warning, and the factors of the uninterrupted run.
  r = run_kfactor(common + " --kokkos-num-threads=2 --iters 6 --json --restart " + quote(ckpt) + " --output " +
                      quote(dir.file("b")),
                  dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("info").at("restart"), ckpt);
  EXPECT_FALSE(j.at("info").contains("restart_warning"));
  // Each run stamps its files: compare what follows the stamp.
  const std::string aW = without_stamp(slurp(dir.file("a_W.mtx"))), aH = without_stamp(slurp(dir.file("a_H.mtx")));
  ASSERT_FALSE(aW.empty());
  EXPECT_TRUE(aW == without_stamp(slurp(dir.file("b_W.mtx")))) << "W differs after a restart in the same setup";
  EXPECT_TRUE(aH == without_stamp(slurp(dir.file("b_H.mtx")))) << "H differs after a restart in the same setup";

  // One thread: the run goes on, with the warning on stderr and in the report.
  const std::string warning = "checkpoint written with " + space + " x 2 threads, resuming with " + space +
                              " x 1: the continuation is not guaranteed to be bit-identical to an uninterrupted run";
  r = run_kfactor(common + " --kokkos-num-threads=1 --iters 6 --json --restart " + quote(ckpt), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("kfactor: warning: " + warning + "\n"), std::string::npos) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("iterations"), 6);
  EXPECT_EQ(j.at("info").at("restart_warning"), warning);
  // Without --json too (--quiet silences progress, not warnings).
  r = run_kfactor(common + " --kokkos-num-threads=1 --iters 6 --restart " + quote(ckpt), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("kfactor: warning: " + warning + "\n"), std::string::npos) << r.err;
}

}  // namespace
