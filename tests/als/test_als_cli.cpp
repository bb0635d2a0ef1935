// `kfactor als` as a user runs it: MovieLens latest-small through kfactor::io
// with --json; exact restart from a checkpoint (factor files byte-identical
// to a straight run); refused restarts (another matrix, another rank) exit 3
// naming the checkpoint and leave it unchanged; `kfactor predict` on the
// written factors.
#include "common/cli.hpp"
#include "common/test_spaces.hpp"

#include <kfactor/config.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
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

const std::string movielens = kfactor::test::data_path("movielens-latest-small/ratings.csv");

/// The first `lines` lines of MovieLens (header included), a smaller real file.
std::string head_of_movielens(const TempDir& dir, int lines, const std::string& name) {
  std::ifstream in(movielens);
  std::ofstream out(dir.file(name));
  std::string line;
  for (int k = 0; k < lines && std::getline(in, line); ++k) out << line << '\n';
  return dir.file(name);
}

TEST(AlsCli, MovieLensThroughIoWithJson) {
  if (!std::filesystem::exists(movielens)) GTEST_SKIP() << "MovieLens latest-small not found";
  TempDir dir;
  const auto r = run_kfactor("als --input " + quote(movielens) +
                                 " --format ratings --rank 10 --iters 10 --lambda 0.1 --json --quiet --output " +
                                 quote(dir.file("ml")),
                             dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "als");
  EXPECT_EQ(j["rows"], 610);   // users
  EXPECT_EQ(j["cols"], 9724);  // movies
  EXPECT_EQ(j["rank"], 10);
  EXPECT_EQ(j["iterations"], 10);
  // 10% held out (seed 42): the training matrix keeps the rest.
  EXPECT_NEAR(double(j["nnz"]), 0.9 * 100836, 0.01 * 100836);
  const double rmse = j["test_rmse"];
  EXPECT_LE(rmse, 0.90);
  EXPECT_GT(rmse, 0.5);
  EXPECT_LT(double(j["train_rmse"]), rmse);
  EXPECT_EQ(j["history"]["iteration"].size(), 10u);
  // The factor files carry the original ids (user 1 .. 610; movie 1 first).
  const auto X = without_stamp(slurp(dir.file("ml_X.csv")));
  EXPECT_EQ(X.rfind("id,f0,f1,", 0), 0u) << X.substr(0, 40);
  EXPECT_NE(X.find("\n1,"), std::string::npos);
  EXPECT_NE(X.find("\n610,"), std::string::npos);
  EXPECT_EQ(std::count(X.begin(), X.end(), '\n'), 611);
  const auto Y = without_stamp(slurp(dir.file("ml_Y.csv")));
  EXPECT_EQ(std::count(Y.begin(), Y.end(), '\n'), 9725);
  EXPECT_NE(Y.find("\n193609,"), std::string::npos);  // the largest movieId
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(AlsCli, RestartIsByteIdenticalAndPredictUsesTheFactors) {
  if (!std::filesystem::exists(movielens)) GTEST_SKIP() << "MovieLens latest-small not found";
  TempDir dir;
  const std::string small = head_of_movielens(dir, 6001, "small.csv");
  const std::string common =
      "als --input " + quote(small) + " --rank 6 --lambda 0.1 --layout bals --xb 4 --yb 64 --quiet --json";
  const auto straight = run_kfactor(common + " --iters 5 --output " + quote(dir.file("a")), dir);
  ASSERT_EQ(straight.code, 0) << straight.err;
  const auto first = run_kfactor(common + " --iters 2 --checkpoint " + quote(dir.file("c.h5")), dir);
  ASSERT_EQ(first.code, 0) << first.err;
  ASSERT_TRUE(std::filesystem::exists(dir.file("c.h5")));
  const auto rest = run_kfactor(
      common + " --iters 5 --restart " + quote(dir.file("c.h5")) + " --output " + quote(dir.file("b")), dir);
  ASSERT_EQ(rest.code, 0) << rest.err;
  const auto ja = nlohmann::json::parse(straight.out), jb = nlohmann::json::parse(rest.out);
  EXPECT_EQ(jb["iterations"], 5);
  EXPECT_EQ(jb["history"]["iteration"].size(), 5u);  // history restored from the checkpoint
  EXPECT_EQ(ja["test_rmse"], jb["test_rmse"]);
  for (const char* side : {"_X.csv", "_Y.csv"}) {
    const auto a = without_stamp(slurp(dir.file(std::string("a") + side)));
    const auto b = without_stamp(slurp(dir.file(std::string("b") + side)));
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << side << " differs after restart";
  }

  // predict: pairs from the input (rating column ignored) get finite scores,
  // an unknown user gets nan.
  {
    std::ofstream p(dir.file("pairs.txt"));
    p << "1 1\n1 3\n999999 1\n";
  }
  const auto pr =
      run_kfactor("predict --factors " + quote(dir.file("a")) + " --pairs " + quote(dir.file("pairs.txt")), dir);
  ASSERT_EQ(pr.code, 0) << pr.err;
  std::istringstream lines(pr.out);
  std::string u, i, s;
  int n = 0, nans = 0;
  while (lines >> u >> i >> s) {
    ++n;
    if (s == "nan") {
      ++nans;
      EXPECT_EQ(u, "999999");
    } else {
      EXPECT_TRUE(std::isfinite(std::stod(s))) << s;
      EXPECT_GT(std::stod(s), 0.5) << "user 1 rated these 4.0";
    }
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(nans, 1);
}

TEST(AlsCli, RefusedRestartNamesWhatChangedAndKeepsTheCheckpoint) {
  if (!std::filesystem::exists(movielens)) GTEST_SKIP() << "MovieLens latest-small not found";
  TempDir dir;
  const std::string small = head_of_movielens(dir, 3001, "small.csv");
  const std::string other = head_of_movielens(dir, 2501, "other.csv");
  const std::string ckpt = dir.file("c.h5");
  const auto first = run_kfactor(
      "als --input " + quote(small) + " --rank 4 --iters 2 --xb 4 --yb 64 --quiet --checkpoint " + quote(ckpt), dir);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::string before = slurp(ckpt);
  ASSERT_FALSE(before.empty());
  // Another input is an input error (3); another option a usage error (2)
  // naming the option.
  const std::pair<std::string, int> variants[] = {
      {"als --input " + quote(other) + " --rank 4 --iters 4 --xb 4 --yb 64 --quiet", 3},               // another matrix
      {"als --input " + quote(small) + " --rank 5 --iters 4 --xb 4 --yb 64 --quiet", 3},               // another rank
      {"als --input " + quote(small) + " --rank 4 --iters 4 --xb 4 --yb 64 --quiet --lambda 0.2", 2},  // another option
      {"als --input " + quote(small) + " --rank 4 --iters 4 --quiet --layout csr", 2},                 // another layout
  };
  for (const auto& [v, code] : variants) {
    SCOPED_TRACE(v);
    // Also asking to checkpoint into the same file: a refused run must not touch it.
    const auto r = run_kfactor(v + " --restart " + quote(ckpt) + " --checkpoint " + quote(ckpt), dir);
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(ckpt), std::string::npos) << r.err;
    if (code == 2)
      EXPECT_NE(r.err.find(v.find("lambda") != std::string::npos ? "lambda" : "layout"), std::string::npos) << r.err;
    EXPECT_TRUE(slurp(ckpt) == before) << "checkpoint changed";
  }
  // A missing checkpoint is an input error too.
  const auto missing =
      run_kfactor("als --input " + quote(small) + " --rank 4 --quiet --restart " + quote(dir.file("none.h5")), dir);
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("none.h5"), std::string::npos) << missing.err;
}
#endif

// --implicit: MovieLens ratings taken as counts. The loss is the metric and
// falls, nothing is held out unless asked; a CG run restarted from its
// checkpoint ends byte-identical to the straight run, and an explicit run
// refuses that checkpoint naming `implicit`; a negative count, in the input
// or the held-out input, exits 3 naming its line, a bad --alpha (0 or negative), --solver or --cg-steps exits 2
// naming the option.
TEST(AlsCli, ImplicitFeedbackRunsRestartsAndRefuses) {
  if (!std::filesystem::exists(movielens)) GTEST_SKIP() << "MovieLens latest-small not found";
  TempDir dir;
  const std::string small = head_of_movielens(dir, 6001, "small.csv");
  const std::string common = "als --input " + quote(small) +
                             " --rank 6 --implicit --alpha 5 --solver cg --cg-steps 3 --lambda-weighting plain "
                             "--layout csr --quiet --json";
  const auto straight = run_kfactor(common + " --iters 5 --output " + quote(dir.file("a")), dir);
  ASSERT_EQ(straight.code, 0) << straight.err;
  const auto ja = nlohmann::json::parse(straight.out);
  EXPECT_EQ(ja["nnz"], 6000);  // no held-out split
  EXPECT_FALSE(ja.contains("test_rmse"));
  const auto losses = ja["history"]["loss"];
  ASSERT_EQ(losses.size(), 5u);
  for (std::size_t k = 1; k < losses.size(); ++k) EXPECT_LE(double(losses[k]), double(losses[k - 1]));
  EXPECT_EQ(double(ja["loss"]), double(losses[4]));
#if defined(KFACTOR_HAVE_HDF5)
  const std::string ckpt = dir.file("c.h5");
  const auto first = run_kfactor(common + " --iters 2 --checkpoint " + quote(ckpt), dir);
  ASSERT_EQ(first.code, 0) << first.err;
  const auto rest =
      run_kfactor(common + " --iters 5 --restart " + quote(ckpt) + " --output " + quote(dir.file("b")), dir);
  ASSERT_EQ(rest.code, 0) << rest.err;
  EXPECT_EQ(nlohmann::json::parse(rest.out)["loss"], ja["loss"]);
  for (const char* side : {"_X.csv", "_Y.csv"}) {
    const auto a = without_stamp(slurp(dir.file(std::string("a") + side)));
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == without_stamp(slurp(dir.file(std::string("b") + side)))) << side << " differs after restart";
  }
  const auto explicit_restart =
      run_kfactor("als --input " + quote(small) +
                      " --rank 6 --layout csr --iters 5 --test-fraction 0 --quiet --restart " + quote(ckpt),
                  dir);
  EXPECT_EQ(explicit_restart.code, 2) << explicit_restart.err;
  EXPECT_NE(explicit_restart.err.find("implicit"), std::string::npos) << explicit_restart.err;
#endif
  {
    std::ofstream bad(dir.file("negative.csv"));
    bad << "userId,movieId,rating,timestamp\n1,1,2.0,0\n1,2,-1.0,0\n2,1,1.0,0\n2,2,3.0,0\n";
  }
  const auto negative =
      run_kfactor("als --input " + quote(dir.file("negative.csv")) + " --rank 1 --implicit --quiet", dir);
  EXPECT_EQ(negative.code, 3) << negative.err;
  EXPECT_NE(negative.err.find(dir.file("negative.csv") + ":3: negative"), std::string::npos) << negative.err;
  const auto negative_test = run_kfactor(common + " --iters 1 --test-input " + quote(dir.file("negative.csv")), dir);
  EXPECT_EQ(negative_test.code, 3) << negative_test.err;
  EXPECT_NE(negative_test.err.find(dir.file("negative.csv") + ":3: negative"), std::string::npos) << negative_test.err;
  for (const auto& [args, name] : {std::pair<std::string, std::string>{" --alpha 0", "--alpha"},
                                   {" --alpha -1", "--alpha"},
                                   {" --solver lu", "--solver"},
                                   {" --cg-steps 0", "--cg-steps"}}) {
    const auto r = run_kfactor(common + args, dir);
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
  }
}

TEST(AlsCli, BadRatingsExit3NamingTheLine) {
  TempDir dir;
  {
    std::ofstream f(dir.file("bad.csv"));
    f << "userId,movieId,rating\n1,1,4.0\n1,2,nan\n";
  }
  const auto r = run_kfactor("als --input " + quote(dir.file("bad.csv")) + " --quiet", dir);
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("bad.csv:3"), std::string::npos) << r.err;
}

/// A 30 x 12 ratings file (ids 101.., 501..), every user rating 6 items.
std::string small_ratings(const TempDir& dir, const std::string& name) {
  std::ofstream f(dir.file(name));
  f << "userId,movieId,rating\n";
  for (int u = 0; u < 30; ++u)
    for (int k = 0; k < 6; ++k) f << 101 + u << "," << 501 + (u + 2 * k) % 12 << "," << 1 + (u * 7 + k * 3) % 5 << "\n";
  return dir.file(name);
}

// Factor files as predict reads them: a header-only file (no rows) and a
// rank mismatch are InputErrors (exit 3) naming the file; --json prints one
// object whose scores are the dot products of the rows, null for an
// unknown id.
TEST(PredictCli, RefusesBadFactorFilesAndPrintsOneJsonObject) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir.file(name)) << text; };
  write("pairs.txt", "1 5\n2 5\n7 5\n");
  write("h_X.csv", "id,f0,f1\n");
  write("h_Y.csv", "id,f0,f1\n5,3,4\n");
  const auto header_only =
      run_kfactor("predict --factors " + quote(dir.file("h")) + " --pairs " + quote(dir.file("pairs.txt")), dir, "", 0);
  EXPECT_EQ(header_only.code, 3) << header_only.err;
  EXPECT_NE(header_only.err.find("h_X.csv"), std::string::npos) << header_only.err;

  write("r_X.csv", "id,f0,f1\n1,1,2\n2,-1,0.5\n");
  write("r_Y.csv", "id,f0,f1,f2\n5,3,4,1\n");
  const auto ranks =
      run_kfactor("predict --factors " + quote(dir.file("r")) + " --pairs " + quote(dir.file("pairs.txt")), dir, "", 1);
  EXPECT_EQ(ranks.code, 3) << ranks.err;
  EXPECT_NE(ranks.err.find("r_Y.csv:1"), std::string::npos) << ranks.err;
  EXPECT_NE(ranks.err.find("rank 3 but"), std::string::npos) << ranks.err;

  write("g_X.csv", "id,f0,f1\n1,1,2\n2,-1,0.5\n");
  write("g_Y.csv", "id,f0,f1\n5,3,4\n");
  const auto j = run_kfactor(
      "predict --json --factors " + quote(dir.file("g")) + " --pairs " + quote(dir.file("pairs.txt")), dir, "", 2);
  ASSERT_EQ(j.code, 0) << j.err;
  const auto o = nlohmann::json::parse(j.out);  // exactly one object: parse refuses trailing text
  EXPECT_EQ(o["command"], "predict");
  EXPECT_EQ(o["rank"], 2);
  EXPECT_EQ(o["count"], 3);
  EXPECT_EQ(o["unknown"], 1);
  EXPECT_EQ(o["user"], nlohmann::json::array({1, 2, 7}));
  EXPECT_EQ(o["item"], nlohmann::json::array({5, 5, 5}));
  EXPECT_EQ(o["score"][0], 11.0);
  EXPECT_EQ(o["score"][1], -1.0);
  EXPECT_TRUE(o["score"][2].is_null());
}

// --output writes X and Y as one stamped output set that predict still
// reads; --test-input with an id the training ratings lack is exit 3 naming
// the file and the id; an output over the input is refused (exit 2).
TEST(AlsCli, OutputSetPredictsAndHeldOutIdsAreChecked) {
  TempDir dir;
  const std::string train = small_ratings(dir, "train.csv");
  const std::string common = "als --input " + quote(train) + " --rank 3 --iters 3 --quiet";
  const auto r = run_kfactor(common + " --output " + quote(dir.file("f")), dir, "", 0);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string x = slurp(dir.file("f_X.csv")), y = slurp(dir.file("f_Y.csv"));
  ASSERT_EQ(x.rfind("# kfactor-set ", 0), 0u) << x.substr(0, 80);
  ASSERT_EQ(y.rfind("# kfactor-set ", 0), 0u) << y.substr(0, 80);
  EXPECT_EQ(x.substr(14, 16), y.substr(14, 16)) << "one set id for X and Y";
  {
    std::ofstream p(dir.file("pairs.txt"));
    p << "101 501\n";
  }
  const auto pr =
      run_kfactor("predict --factors " + quote(dir.file("f")) + " --pairs " + quote(dir.file("pairs.txt")), dir, "", 1);
  ASSERT_EQ(pr.code, 0) << pr.err;
  std::istringstream line(pr.out);
  std::string u, i, s;
  ASSERT_TRUE(line >> u >> i >> s) << pr.out;
  EXPECT_EQ(u, "101");
  EXPECT_TRUE(std::isfinite(std::stod(s))) << s;

  {
    std::ofstream t(dir.file("test.csv"));
    t << "userId,movieId,rating\n101,501,3\n999,501,4\n";
  }
  const auto unknown = run_kfactor(common + " --test-input " + quote(dir.file("test.csv")), dir, "", 2);
  EXPECT_EQ(unknown.code, 3) << unknown.err;
  EXPECT_NE(unknown.err.find("test.csv"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("999"), std::string::npos) << unknown.err;

  std::filesystem::copy_file(train, dir.file("in_X.csv"));
  const auto over = run_kfactor(
      "als --input " + quote(dir.file("in_X.csv")) + " --rank 3 --iters 1 --quiet --output " + quote(dir.file("in")),
      dir, "", 3);
  EXPECT_EQ(over.code, 2) << over.err;
  EXPECT_NE(over.err.find("in_X.csv"), std::string::npos) << over.err;
}

}  // namespace
