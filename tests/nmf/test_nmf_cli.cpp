// `kfactor nmf` as a user runs it, on the real SNAP graphs through kfactor::io:
// --json report fields; a checkpointed run restarted to the same --iters
// writes byte-identical factor files (after the output-set stamp line) to an
// uninterrupted one; a restart against another matrix or another --rank exits
// 3, and one with another option that decides the iterates exits 2 naming it,
// both naming the checkpoint and leaving it unchanged. The child environment
// (ctest ENVIRONMENT) pins one OpenMP thread and keeps Open MPI off UCX.
#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include <sys/wait.h>
#include <unistd.h>

namespace {
using kfactor::test::CliRun;
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::slurp;
using kfactor::test::TempDir;
using kfactor::test::without_stamp;

const std::string gnutella = kfactor::test::data_path("snap/p2p-Gnutella08.txt");
const std::string facebook = kfactor::test::data_path("snap/facebook_combined.txt");

TEST(NmfCli, JsonReportOnSnapGraph) {
  TempDir dir;
  const auto r = run_kfactor("nmf --input " + quote(gnutella) +
                                 " --format edges --rank 4 --iters 5 --seed 3 --json "
                                 "--output " +
                                 quote(dir.file("g")),
                             dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "nmf");
  EXPECT_EQ(j["rows"], 6301);  // README: 6,301 nodes, 20,777 edges (the count line skipped)
  EXPECT_EQ(j["cols"], 6301);
  EXPECT_EQ(j["nnz"], 20777);
  EXPECT_EQ(j["rank"], 4);
  EXPECT_EQ(j["iterations"], 5);
  EXPECT_EQ(j["precision"], "double");
  const double err = j["relative_error"];
  EXPECT_GT(err, 0.5);  // a rank-4 model of a sparse graph is far from exact...
  EXPECT_LT(err, 1.0);  // ...but better than W H = 0
  EXPECT_EQ(j["info"]["algorithm"], "alo");
  EXPECT_EQ(j["info"]["input"], "csr");
  EXPECT_EQ(j["history"]["iteration"].size(), 5u);
  // The factor files are Matrix Market arrays of the right shapes.
  const std::string W = slurp(dir.file("g_W.mtx")), H = slurp(dir.file("g_H.mtx"));
  EXPECT_EQ(W.rfind("%%MatrixMarket matrix array real general", 0), 0u);
  EXPECT_NE(W.find("\n6301 4\n"), std::string::npos);
  EXPECT_NE(H.find("\n4 6301\n"), std::string::npos);
}

TEST(NmfCli, RestartGivesByteIdenticalFactors) {
  TempDir dir;
  for (const char* alg : {"alo", "hals", "mu"}) {
    SCOPED_TRACE(alg);
    const std::string common = "nmf --input " + quote(gnutella) + " --rank 5 --seed 7 --quiet --algorithm " + alg;
    const std::string ckpt = dir.file(std::string("c_") + alg + ".h5");
    auto r = run_kfactor(common + " --iters 8 --output " + quote(dir.file("a")), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    r = run_kfactor(common + " --iters 3 --checkpoint " + quote(ckpt) + " --checkpoint-every 2", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(std::filesystem::exists(ckpt));
    // Not --quiet: the restart must print iterations 4..8 only (it continued,
    // it did not start over to the same result).
    const std::string loud = "nmf --input " + quote(gnutella) + " --rank 5 --seed 7 --algorithm " + alg;
    r = run_kfactor(loud + " --iters 8 --restart " + quote(ckpt) + " --output " + quote(dir.file("b")), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find("iter      3 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("iter      4 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("iter      8 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("8 iterations"), std::string::npos) << r.out;
    // The same bytes after the stamp line (whose set id is new in every run).
    const std::string aW = without_stamp(slurp(dir.file("a_W.mtx"))), bW = without_stamp(slurp(dir.file("b_W.mtx")));
    const std::string aH = without_stamp(slurp(dir.file("a_H.mtx"))), bH = without_stamp(slurp(dir.file("b_H.mtx")));
    ASSERT_GT(aW.size(), 100u);
    ASSERT_GT(aH.size(), 100u);
    EXPECT_TRUE(aW == bW) << "W differs after restart";
    EXPECT_TRUE(aH == bH) << "H differs after restart";
  }
}

TEST(NmfCli, MismatchedRestartExits3AndKeepsCheckpoint) {
  TempDir dir;
  const std::string ckpt = dir.file("c.h5");
  auto r =
      run_kfactor("nmf --input " + quote(gnutella) + " --rank 4 --iters 2 --quiet --checkpoint " + quote(ckpt), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = slurp(ckpt);
  ASSERT_FALSE(before.empty());
  const std::string cases[] = {
      // another matrix
      "nmf --input " + quote(facebook) + " --rank 4 --iters 4 --quiet",
      // another rank
      "nmf --input " + quote(gnutella) + " --rank 6 --iters 4 --quiet",
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c);
    // The same file as --restart and --checkpoint: a failing run must not touch it.
    r = run_kfactor(c + " --restart " + quote(ckpt) + " --checkpoint " + quote(ckpt), dir);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find(ckpt), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(ckpt) == before) << "checkpoint changed by a failing restart";
  }
  // Another option that decides the iterates is a usage error naming it.
  // (Rank 4's default tile is 2.)
  for (const auto& [flag, name] : {std::pair<std::string, std::string>{"--algorithm mu", "algorithm"},
                                   {"--seed 9", "seed"},
                                   {"--tile 1", "tile"}}) {
    SCOPED_TRACE(flag);
    r = run_kfactor("nmf --input " + quote(gnutella) + " --rank 4 --iters 4 --quiet " + flag + " --restart " +
                        quote(ckpt) + " --checkpoint " + quote(ckpt),
                    dir);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(ckpt), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(name + " = "), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(ckpt) == before) << "checkpoint changed by a failing restart";
  }
  // The stop rule may change on a restart.
  r = run_kfactor("nmf --input " + quote(gnutella) + " --rank 4 --iters 4 --tol 1e-9 --quiet --restart " + quote(ckpt),
                  dir);
  EXPECT_EQ(r.code, 0) << r.err;
  // A missing checkpoint is an input error too.
  r = run_kfactor(
      "nmf --input " + quote(gnutella) + " --rank 4 --iters 4 --quiet --restart " + quote(dir.file("missing.h5")), dir);
  EXPECT_EQ(r.code, 3) << r.err;
}

}  // namespace
