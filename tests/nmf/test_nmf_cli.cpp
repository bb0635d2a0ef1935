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
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
                                   {"--tile 1", "tile"},
                                   {"--alpha-w 0.01", "alpha_w"},
                                   {"--missing absent", "missing"}}) {
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

TEST(NmfCli, ScikitLearnOptions) {
  // --init custom from a run's own factor files starts at that run's error;
  // --fix-w with its W fits H to (about) the same error; nndsvd and the
  // penalties run; kl with hals and a fixed W with --init are usage errors.
  TempDir dir;
  const std::string base = "nmf --input " + quote(facebook) + " --rank 6 --quiet --json";
  auto error_of = [](const CliRun& r) { return nlohmann::json::parse(r.out)["relative_error"].get<double>(); };
  auto r = run_kfactor(base + " --iters 30 --init nndsvd --output " + quote(dir.file("g")), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const double fit = error_of(r);
  EXPECT_LT(fit, 1.0);
  const std::string W = dir.file("g_W.mtx"), H = dir.file("g_H.mtx");
  r = run_kfactor(base + " --iters 0 --init custom --w0 " + quote(W) + " --h0 " + quote(H), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NEAR(error_of(r), fit, 1e-6);  // W0 H0 is the run's W H (W0 rescaled, H0 inversely)
  r = run_kfactor(base + " --iters 100 --fix-w " + quote(W), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_LE(error_of(r), fit * 1.001);
  r = run_kfactor(base + " --iters 5 --alpha-w 0.001 --alpha-h 0.001 --l1-ratio 0.5 --algorithm hals", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_kfactor(base + " --iters 5 --algorithm mu --beta-loss kl --init nndsvda", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GT(nlohmann::json::parse(r.out)["divergence"].get<double>(), 0.0) << r.out;
  for (const auto& [args, says] :
       {std::pair<std::string, std::string>{"--beta-loss kl --algorithm hals", "beta_loss kl needs algorithm mu"},
        {"--fix-w " + quote(W) + " --init nndsvd", "--init nndsvd does not apply"},
        {"--init custom --w0 " + quote(W), "--init custom needs --w0 FILE and --h0 FILE"},
        {"--w0 " + quote(W), "--w0 and --h0 need --init custom"},
        {"--init custom --w0 " + quote(H) + " --h0 " + quote(H), "this run needs 4039 x 6"}}) {
    SCOPED_TRACE(args);
    r = run_kfactor(base + " --iters 1 " + args, dir);
    EXPECT_EQ(r.code, says.find("needs 4039") != std::string::npos ? 3 : 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  // Itakura-Saito on a graph (zeros everywhere) is an input error.
  r = run_kfactor(base + " --iters 1 --algorithm mu --beta-loss is", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("Itakura-Saito"), std::string::npos) << r.err;
}

// Itakura-Saito is undefined where A is 0. A sparse input whose stored
// entries are all positive runs with --missing absent; it exits 3, naming
// the loss and the count of zeros, once one stored entry is 0 or the
// unstored entries count as zeros (--missing zero); a dense input with one
// zero too, whatever --missing says (every entry of a dense A is stored).
TEST(NmfCli, ItakuraSaitoRefusesTheZerosItIsUndefinedAt) {
  TempDir dir;
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<double> value(0.5, 5.5);
  constexpr int rows = 30, cols = 20;
  std::vector<std::tuple<int, int, double>> entries;
  for (int i = 1; i <= rows; ++i)
    for (int j = 1; j <= cols; ++j)
      if (rng() % 2 == 0) entries.emplace_back(i, j, value(rng));
  auto write_mm = [&](const std::string& name, const std::vector<std::tuple<int, int, double>>& e) {
    std::ofstream f(dir.file(name));
    f << "%%MatrixMarket matrix coordinate real general\n" << rows << " " << cols << " " << e.size() << "\n";
    for (const auto& [i, j, v] : e) f << i << " " << j << " " << v << "\n";
    return dir.file(name);
  };
  const std::string positive = write_mm("positive.mtx", entries);
  auto with_zero = entries;
  std::get<2>(with_zero[rng() % with_zero.size()]) = 0.0;
  const std::string zero = write_mm("zero.mtx", with_zero);
  const std::string dense = dir.file("dense.txt");
  {
    std::ofstream f(dense);
    const int zi = int(rng() % rows), zj = int(rng() % cols);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) f << (i == zi && j == zj ? 0.0 : value(rng)) << (j + 1 < cols ? " " : "\n");
  }
  const std::string base = "nmf --rank 3 --iters 3 --algorithm mu --beta-loss is --quiet --json --input ";
  const CliRun ok = run_kfactor(base + quote(positive) + " --missing absent", dir);
  ASSERT_EQ(ok.code, 0) << ok.err;
  EXPECT_GT(nlohmann::json::parse(ok.out)["divergence"].get<double>(), 0.0) << ok.out;
  const std::string unstored = std::to_string(rows * cols - entries.size());
  for (const auto& [args, count] : {std::pair<std::string, std::string>{quote(positive) + " --missing zero", unstored},
                                    {quote(zero) + " --missing absent", "1"},
                                    {quote(dense) + " --format dense", "1"},
                                    {quote(dense) + " --format dense --missing absent", "1"}}) {
    SCOPED_TRACE(args);
    const CliRun r = run_kfactor(base + args, dir);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("Itakura-Saito) is undefined for zero entries; the input has " + count + " "),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
