// `kfactor mnmf` as a user runs it, through kfactor::io and the HDF5
// checkpoints: (a) MovieLens latest-small read by the io ratings reader, JSON
// report fields and factor CSVs carrying the original ids; (b) N iterations
// straight and t + restart to N give byte-identical factor files (after
// their output-set stamp lines); (c) a
// restart against another matrix or another rank exits 3, and one with
// another option exits 2, naming the checkpoint and leaving it unchanged.
#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <kfactor/core/random.hpp>
#include <kfactor/io/write.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
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

/// A small `user,item,rating` CSV with sparse, non-contiguous ids; `bump`
/// changes one rating (another matrix of the same shape).
void write_ratings(const std::string& path, std::uint64_t seed, bool bump = false) {
  std::ofstream f(path);
  f << "userId,movieId,rating\n";
  const kfactor::CounterRng rng(seed, kfactor::RngStream::user);
  std::uint64_t ctr = 0;
  bool first = true;
  for (int u = 0; u < 60; ++u)
    for (int i = 0; i < 40; ++i)
      if (rng.uniform(ctr++) < 0.3 || i == u % 40) {
        double v = 1 + static_cast<int>(rng.uniform(ctr++) * 9) * 0.5;
        if (bump && first) v += 0.5;
        first = false;
        f << (10 + 7 * u) << ',' << (1000 + 3 * i) << ',' << v << '\n';
      }
}

const std::string common_args = " --rank 4 --neighbors 5 --lambda-w 0.5 --lambda-h 0.5 --seed 3 --quiet";

TEST(MnmfCli, MovieLensThroughIo) {
  TempDir dir;
  const std::string input = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  const auto r =
      run_kfactor("mnmf --input '" + input + "' --format ratings --rank 3 --iters 2 --lambda-w 1 --lambda-h 0" +
                      " --neighbors 5 --test-fraction 0.1 --json --output '" + dir.file("ml.csv") + "'",
                  dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"].get<std::string>(), "mnmf");
  EXPECT_EQ(j["rows"].get<int>(), 610);
  EXPECT_EQ(j["cols"].get<int>(), 9724);
  EXPECT_EQ(j["rank"].get<int>(), 3);
  EXPECT_EQ(j["iterations"].get<int>(), 2);
  const auto nnz = j["nnz"].get<std::int64_t>();
  EXPECT_GT(nnz, 85000);
  EXPECT_LT(nnz, 100836);  // 10% held out
  EXPECT_EQ(j["info"]["test_ratings"].get<std::string>(), std::to_string(100836 - nnz));
  ASSERT_TRUE(j.contains("test_rmse"));
  EXPECT_GT(j["test_rmse"].get<double>(), 0.0);
  EXPECT_LT(j["test_rmse"].get<double>(), 5.0);
  // factors carry the original ids: users 1..610, movies starting at 1 and ending at 193609
  EXPECT_EQ(kfactor::io::verify_output_set({dir.file("ml_W.csv"), dir.file("ml_H.csv")}).size(), 16u);
  std::istringstream w(without_stamp(slurp(dir.file("ml_W.csv")))), h(without_stamp(slurp(dir.file("ml_H.csv"))));
  std::string line, last;
  std::getline(w, line);
  EXPECT_EQ(line, "id,f0,f1,f2");
  std::getline(w, line);
  EXPECT_EQ(line.substr(0, 2), "1,");
  while (std::getline(w, line)) last = line;
  EXPECT_EQ(last.substr(0, 4), "610,");
  std::getline(h, line);
  std::getline(h, line);
  EXPECT_EQ(line.substr(0, 2), "1,");
  while (std::getline(h, line)) last = line;
  EXPECT_EQ(last.substr(0, 7), "193609,");
}

// --test-input goes through io::reindex_ratings: ids the training file lacks
// are dropped and counted (the default) or, with --unknown-test-ids reject,
// refused with exit 3 naming the file, the entry and the id. --lambda-grid
// runs mnmf::select_lambda and reports its choice.
TEST(MnmfCli, HeldOutIdsAndLambdaSelection) {
  TempDir dir;
  const std::string a = dir.file("a.csv"), t = dir.file("t.csv");
  write_ratings(a, 11);
  {
    std::ofstream f(t);
    f << "userId,movieId,rating\n10,1000,4\n17,1003,3\n9999,1000,2\n10,5,1\n24,1006,5\n";
  }
  const std::string args = "mnmf --input '" + a + "' --test-input '" + t + "'" + common_args + " --iters 3 --json";
  auto r = run_kfactor(args, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["info"]["test_dropped_unknown_ids"].get<std::string>(), "2");
  EXPECT_EQ(j["info"]["test_ratings"].get<std::string>(), "3");
  r = run_kfactor(args + " --unknown-test-ids reject", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(t), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("entry "), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("user 9999") != std::string::npos || r.err.find("item 5 ") != std::string::npos) << r.err;
  r = run_kfactor(
      "mnmf --input '" + a + "'" + common_args + " --iters 3 --json --validation-fraction 0.2 --lambda-grid 0,0.5",
      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  const std::string chosen = j["info"]["lambda_selected"].get<std::string>();
  EXPECT_TRUE(chosen == "0.000000" || chosen == "0.500000") << chosen;
  EXPECT_EQ(j["info"]["lambda_w"].get<std::string>(), chosen);
  EXPECT_NE(j["info"]["validation_rmse"].get<std::string>().find("0.500000:"), std::string::npos);
  // A grid without a validation fraction is a usage error.
  r = run_kfactor("mnmf --input '" + a + "'" + common_args + " --lambda-grid 0,0.5", dir);
  EXPECT_EQ(r.code, 2) << r.err;
}

// The graphs --save-graph-w/-h write are one output set with the factors;
// loaded back they give the same factors; a user graph and an item graph
// saved by two runs are refused together (exit 3 naming the file), a graph
// without a stamp is taken as it is.
TEST(MnmfCli, SavedGraphsAreOneSetWithTheFactors) {
  TempDir dir;
  const std::string a = dir.file("a.csv"), gw = dir.file("gw.mtx"), gh = dir.file("gh.mtx"), gh2 = dir.file("gh2.mtx");
  write_ratings(a, 17);
  const std::string args = "mnmf --input '" + a + "'" + common_args + " --iters 3";
  auto r = run_kfactor(
      args + " --output '" + dir.file("built") + "' --save-graph-w '" + gw + "' --save-graph-h '" + gh + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> set{dir.file("built_W.mtx"), dir.file("built_H.mtx"), gw, gh};
  EXPECT_EQ(kfactor::io::verify_output_set(set).size(), 16u);
  r = run_kfactor(args + " --output '" + dir.file("loaded") + "' --graph-w '" + gw + "' --graph-h '" + gh + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"_W.mtx", "_H.mtx"}) {
    const std::string built = without_stamp(slurp(dir.file(std::string("built") + f)));
    ASSERT_GT(built.size(), 100u);
    EXPECT_EQ(built, without_stamp(slurp(dir.file(std::string("loaded") + f)))) << f;
  }
  // An item graph of another run (other neighbours).
  r = run_kfactor(
      "mnmf --input '" + a + "' --rank 4 --neighbors 3 --seed 3 --quiet --iters 1 --save-graph-h '" + gh2 + "'", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_kfactor(args + " --graph-w '" + gw + "' --graph-h '" + gh2 + "'", dir);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(gh2), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("different runs"), std::string::npos) << r.err;
  // The same graph without its stamp (made elsewhere): taken as it is.
  std::ofstream(dir.file("plain.mtx")) << without_stamp(slurp(gh2));
  r = run_kfactor(args + " --graph-w '" + gw + "' --graph-h '" + dir.file("plain.mtx") + "'", dir);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(MnmfCli, RestartIsBitIdenticalAndRefusesOtherInputs) {
  TempDir dir;
  const std::string a = dir.file("a.csv"), b = dir.file("b.csv"), ck = dir.file("run.h5");
  write_ratings(a, 11);
  write_ratings(b, 11, true);
  for (const std::string objective : {"euclid", "kl"}) {
    SCOPED_TRACE(objective);
    const std::string args = common_args + " --objective " + objective + " --input '" + a + "'";
    // straight: 9 iterations
    auto r = run_kfactor("mnmf " + args + " --iters 9 --output '" + dir.file("straight") + "'", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    // 4 iterations with checkpoints every 2 (saved at 2, 4 and the end), then restart to 9
    std::filesystem::remove(ck);
    r = run_kfactor("mnmf " + args + " --iters 4 --checkpoint '" + ck + "' --checkpoint-every 2", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_TRUE(std::filesystem::exists(ck));
    r = run_kfactor(
        "mnmf " + args + " --iters 9 --restart '" + ck + "' --json --output '" + dir.file("restarted") + "'", dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["iterations"].get<int>(), 9);
    EXPECT_EQ(j["info"]["restart_iteration"].get<std::string>(), "4");
    EXPECT_EQ(j["history"]["iteration"].size(), 9u);  // the restored history continues
    for (const char* f : {"_W.mtx", "_H.mtx"}) {
      // The same bytes after the stamp line (whose set id is new in every run).
      const std::string s = without_stamp(slurp(dir.file(std::string("straight") + f)));
      ASSERT_GT(s.size(), 100u);
      EXPECT_EQ(s, without_stamp(slurp(dir.file(std::string("restarted") + f)))) << f;
    }

    // (c) another matrix / another rank: exit 3; another option that decides
    // the iterates: exit 2 naming it; each names the checkpoint and leaves it unchanged
    const std::string before = slurp(ck);
    const std::string objective_other = objective == std::string("kl") ? "euclid" : "kl";
    struct Bad {
      std::string args;
      int code;
      const char* names;
    };
    for (const Bad& bad :
         {Bad{common_args + " --objective " + objective + " --input '" + b + "'", 3, "input"},
          Bad{" --rank 5 --neighbors 5 --lambda-w 0.5 --lambda-h 0.5 --seed 3 --quiet --objective " + objective +
                  " --input '" + a + "'",
              3, "rank"},
          Bad{common_args + " --objective " + objective_other + " --input '" + a + "'", 2, "objective"},
          Bad{" --rank 4 --neighbors 5 --lambda-w 0.7 --lambda-h 0.5 --seed 3 --quiet --objective " + objective +
                  " --input '" + a + "'",
              2, "lambda_w"},
          Bad{" --rank 4 --neighbors 6 --lambda-w 0.5 --lambda-h 0.5 --seed 3 --quiet --objective " + objective +
                  " --input '" + a + "'",
              2, "neighbors"}}) {
      SCOPED_TRACE(bad.args);
      r = run_kfactor("mnmf " + bad.args + " --iters 9 --restart '" + ck + "' --checkpoint '" + ck + "'", dir);
      EXPECT_EQ(r.code, bad.code) << r.err;
      EXPECT_NE(r.err.find(ck), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(bad.names), std::string::npos) << r.err;
      EXPECT_EQ(slurp(ck), before);
    }
  }
}

}  // namespace
