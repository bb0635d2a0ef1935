// `kfactor bmf` as a user runs it: a real data set read through kfactor::io
// (--json fields; ratings with --threshold keep their ids in the CSV
// factors), exact restart from a checkpoint (byte-identical factor files
// after their output-set stamp lines),
// and a restart against another input or rank failing with exit code 3
// without touching the checkpoint.
#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <kfactor/config.hpp>
#include <kfactor/io/write.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

const std::string patio = kfactor::test::data_path("bmf/APatio.in");
// Small, fast settings (dost init: dense enough start that the search moves) on the thesis's APatio (1686 x 962, 12080
// ones).
const std::string common = "bmf --input '" + patio + "' --rank 8 --batch 500 --quiet --seed 7 --init dost";

TEST(BmfCli, RealFileThroughIoJson) {
  TempDir dir;
  const auto r = run_kfactor(common + " --iters 6 --json --output '" + dir.file("f") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("command"), "bmf");
  EXPECT_EQ(j.at("rows"), 1686);
  EXPECT_EQ(j.at("cols"), 962);
  EXPECT_EQ(j.at("nnz"), 12080);
  EXPECT_EQ(j.at("rank"), 8);
  EXPECT_EQ(j.at("iterations"), 6);
  const double err = j.at("relative_error");
  EXPECT_GT(err, 0.0);
  EXPECT_NEAR(err * 1686.0 * 962.0, double(j.at("errors")), 1e-6 * double(j.at("errors")));
  const auto& h = j.at("history").at("relative_error");
  for (std::size_t t = 1; t < h.size(); ++t) EXPECT_LE(double(h[t]), double(h[t - 1]));  // greedy: monotone
  EXPECT_LT(double(h.back()), double(h.front()));                                        // and it moved
  EXPECT_EQ(double(j.at("errors")), double(j.at("false_pos")) + double(j.at("false_neg")));
  EXPECT_EQ(j.at("history").at("iteration").size(), 6u);
  // Factors: coordinate Matrix Market with the factor shapes.
  std::istringstream a(slurp(dir.file("f_A.mtx"))), b(slurp(dir.file("f_B.mtx")));
  std::string line;
  std::getline(a, line);
  EXPECT_EQ(line, "%%MatrixMarket matrix coordinate real general");
  while (std::getline(a, line) && line[0] == '%') {
  }
  EXPECT_EQ(line.substr(0, line.rfind(' ')), "1686 8");
  while (std::getline(b, line) && line[0] == '%') {
  }
  EXPECT_EQ(line.substr(0, line.rfind(' ')), "8 962");
}

// Out-of-range options exit 2 naming the option (--proposal-group 0 once
// divided by zero), before the input is read.
TEST(BmfCli, OutOfRangeOptionsExitTwoNamingThem) {
  TempDir dir;
  for (const auto& [arg, name] :
       std::vector<std::pair<std::string, std::string>>{{"--proposal-group 0", "--proposal-group"},
                                                        {"--flip-prob nan", "--flip-prob"},
                                                        {"--weight-ones inf", "--weight-ones"},
                                                        {"--cover-candidates -1", "--cover-candidates"},
                                                        {"--target-error 2", "--target-error"},
                                                        {"--dense-limit-mb -1", "--dense-limit-mb"},
                                                        {"--rank 1000", "rank"}}) {
    SCOPED_TRACE(arg);
    const auto r = run_kfactor(common + " --iters 2 " + arg, dir);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
  }
}

TEST(BmfCli, RatingsWithThresholdKeepIds) {
  TempDir dir;
  const std::string csv = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  const auto r = run_kfactor(
      "bmf --input '" + csv + "' --threshold 4 --rank 4 --iters 2 --quiet --json --output '" + dir.file("m") + "'",
      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("rows"), 610);   // users
  EXPECT_EQ(j.at("cols"), 9724);  // rated movies
  EXPECT_EQ(j.at("nnz"), 48580);  // ratings >= 4
  const std::string a_text = slurp(dir.file("m_A.csv")), b_text = slurp(dir.file("m_B.csv"));
  // A and B are one output set: a stamp line first, one set id.
  EXPECT_EQ(kfactor::io::verify_output_set({dir.file("m_A.csv"), dir.file("m_B.csv")}).size(), 16u);
  std::istringstream a(without_stamp(a_text)), b(without_stamp(b_text));
  std::string line;
  std::getline(a, line);
  EXPECT_EQ(line, "id,f0,f1,f2,f3");
  int users = 0;
  std::string first;
  while (std::getline(a, line)) first = users++ ? first : line;
  EXPECT_EQ(users, 610);
  EXPECT_EQ(first.substr(0, 2), "1,");  // MovieLens user ids start at 1
  std::getline(b, line);
  int items = 0;
  std::string last;
  while (std::getline(b, line)) ++items, last = line;
  EXPECT_EQ(items, 9724);
  EXPECT_EQ(last.substr(0, last.find(',')), "193609");  // the largest movie id
}

TEST(BmfCli, RestartFromCheckpointIsExact) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#endif
  TempDir dir;
  const std::string ck = dir.file("run.h5");
  auto r = run_kfactor(common + " --iters 9 --output '" + dir.file("straight") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_kfactor(common + " --iters 4 --checkpoint '" + ck + "' --checkpoint-every 2", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_kfactor(common + " --iters 9 --restart '" + ck + "' --output '" + dir.file("restarted") + "' --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("iterations"), 9);
  // The same bytes after the stamp line (whose set id is new in every run).
  const auto factors = [&](const std::string& prefix, const char* f) {
    return without_stamp(slurp(dir.file(prefix + f)));
  };
  for (const char* f : {"_A.mtx", "_B.mtx"}) {
    const auto x = factors("straight", f), y = factors("restarted", f);
    EXPECT_GT(x.size(), 100u) << f;
    EXPECT_EQ(x, y) << f;
  }
  // And a different number of iterations does give different factors (the test can fail).
  r = run_kfactor(common + " --iters 4 --output '" + dir.file("short") + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(factors("short", "_A.mtx") + factors("short", "_B.mtx"),
            factors("straight", "_A.mtx") + factors("straight", "_B.mtx"));
}

TEST(BmfCli, RestartAgainstAnotherInputOrRankFails) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#endif
  TempDir dir;
  const std::string ck = dir.file("run.h5");
  auto r = run_kfactor(common + " --iters 3 --checkpoint '" + ck + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string before = slurp(ck);
  ASSERT_FALSE(before.empty());
  // Another matrix: APatio without one of its ones, same shape.
  {
    std::ifstream in(patio);
    std::ofstream out(dir.file("other.in"));
    std::string line;
    std::getline(in, line);
    out << "1686 962 12079\n";
    std::getline(in, line);  // drop the first one
    while (std::getline(in, line)) out << line << "\n";
  }
  const std::string other =
      "bmf --input '" + dir.file("other.in") + "' --rank 8 --batch 500 --quiet --seed 7 --init dost";
  r = run_kfactor(other + " --iters 6 --restart '" + ck + "' --checkpoint '" + ck + "'", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(ck), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("another input matrix"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(ck), before);
  // Another rank.
  r = run_kfactor("bmf --input '" + patio +
                      "' --rank 9 --batch 500 --quiet --seed 7 --init dost --iters 6 --restart '" + ck +
                      "' --checkpoint '" + ck + "'",
                  dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(ck), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(ck), before);
  // The unchanged checkpoint still restarts.
  r = run_kfactor(common + " --iters 6 --restart '" + ck + "'", dir);
  EXPECT_EQ(r.code, 0) << r.err;
}

}  // namespace
