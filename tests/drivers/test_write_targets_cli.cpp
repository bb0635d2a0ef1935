// Every command that writes files (nmf, als, mnmf, bmf, sddmm), as a user
// runs it, against its own inputs and a full disk:
// - each write option (--output by a prefix whose file is the input,
//   --checkpoint, mnmf's --save-graph-w/-h, sddmm's --tune-cache) aimed at
//   an input file, at a hard link to it and at a symbolic link to it: exit 2
//   naming the path, every file in the folder byte for byte as before (the
//   input included) and no temporary left; the same command with free
//   paths succeeds and writes one verified output set (so the refusals are
//   the targets', not other errors);
// - the outputs written to a full file system (a 64 KiB tmpfs): exit 4
//   naming the folder, and the set an earlier run left there unchanged, with
//   no new, empty, partial or temporary file beside it.
#include "checkpoint/write_targets.hpp"
#include "common/cli.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/write.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {
namespace fs = std::filesystem;
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::TempDir;

/// A `userId,movieId,rating` CSV: every item rated by `per_item` distinct
/// users (ratings 1..5), ids 10 + index, fixed `seed`.
void write_ratings(const std::string& path, int users, int items, int per_item, std::uint64_t seed) {
  const kfactor::CounterRng rng(seed, kfactor::RngStream::user);
  std::ofstream f(path);
  f << "userId,movieId,rating\n";
  std::uint64_t c = 0;
  for (int i = 0; i < items; ++i) {
    const int first = static_cast<int>(rng.uniform(c++) * users);
    for (int k = 0; k < per_item; ++k)
      f << 10 + (first + k) % users << "," << 10 + i << "," << 1 + static_cast<int>(rng.uniform(c++) * 5) << "\n";
  }
}

/// How to run one command and what it writes.
struct Command {
  std::string name;
  std::string args;    ///< options after the input (small, fast)
  std::string suffix;  ///< what --output PREFIX adds for the first file, e.g. "_W.csv"
  std::function<std::string(const std::string&)> output_arg;  ///< --output value for PREFIX
  std::vector<std::string> set_suffixes;                      ///< every file of the output set, after PREFIX
  bool test_input = false;                                    ///< also reads --test-input
  bool checkpoint = true;                                     ///< has --checkpoint
  std::vector<std::string> file_options;                      ///< other options that name a written file
  std::string big_args;                                       ///< for the full-disk run
};

std::string prefix_only(const std::string& p) { return p; }

std::vector<Command> commands() {
  return {
      {.name = "nmf",
       .args = "--rank 2 --iters 1 --quiet",
       .suffix = "_W.csv",
       .output_arg = prefix_only,
       .set_suffixes = {"_W.csv", "_Ht.csv"},
       .big_args = "--rank 4 --iters 1 --quiet"},
      {.name = "als",
       .args = "--rank 2 --iters 1 --quiet",
       .suffix = "_X.csv",
       .output_arg = prefix_only,
       .set_suffixes = {"_X.csv", "_Y.csv"},
       .test_input = true,
       .big_args = "--rank 4 --iters 1 --quiet"},
      {.name = "mnmf",
       .args = "--rank 2 --iters 1 --neighbors 2 --quiet",
       .suffix = "_W.csv",
       .output_arg = [](const std::string& p) { return p + ".csv"; },
       .set_suffixes = {"_W.csv", "_H.csv"},
       .test_input = true,
       .file_options = {"--save-graph-w", "--save-graph-h"},
       .big_args = "--rank 4 --iters 1 --neighbors 2 --quiet"},
      {.name = "bmf",
       .args = "--rank 2 --iters 1 --quiet",
       .suffix = "_A.csv",
       .output_arg = prefix_only,
       .set_suffixes = {"_A.csv", "_B.csv"},
       .big_args = "--rank 16 --iters 1 --quiet"},
      {.name = "sddmm",
       .args = "-k 4 --reps 1 --quiet",
       .suffix = "_P.csv",
       .output_arg = [](const std::string& p) { return p + "_P.csv"; },
       .set_suffixes = {"_P.csv"},
       .checkpoint = false,
       .file_options = {"--tune-cache"},
       .big_args = "-k 4 --reps 1 --quiet"},
  };
}

TEST(WriteTargetsCli, NoWriteOptionReplacesAnInput) {
  for (const auto& c : commands()) {
    SCOPED_TRACE(c.name);
    TempDir dir("targets");
    const fs::path data = dir.path / "data";
    fs::create_directory(data);
    const auto at = [&](const std::string& name) { return (data / name).string(); };
    const std::string input = at("in" + c.suffix), test = at("test" + c.suffix);
    write_ratings(input, 12, 20, 3, 5);
    std::string base = c.name + " --input " + quote(input) + " " + c.args;
    if (c.test_input) {
      fs::copy_file(input, test);
      base += " --test-input " + quote(test);
    }

    // Free paths: the run succeeds and writes one output set.
    {
      std::string args = base + " --output " + quote(c.output_arg(at("ok")));
      std::vector<std::string> set;
      for (const auto& s : c.set_suffixes) set.push_back(at("ok" + s));
#if defined(KFACTOR_HAVE_HDF5)
      if (c.checkpoint) args += " --checkpoint " + quote(at("ok.h5"));
#endif
      for (const auto& opt : c.file_options) {
        const std::string file = at("ok" + opt.substr(1) + ".mtx");
        args += " " + opt + " " + quote(file);
        if (opt != "--tune-cache") set.push_back(file);
      }
      const auto r = run_kfactor(args, dir);
      ASSERT_EQ(r.code, 0) << args << "\n" << r.err;
      EXPECT_EQ(kfactor::io::verify_output_set(set).size(), 16u);
      const auto stamp = kfactor::io::read_output_stamp(set.front());
      EXPECT_EQ(stamp.members.size(), set.size());
    }

    // Every write option aimed at every input, itself and through links.
    fs::create_hard_link(input, at("hard" + c.suffix));
    fs::create_symlink("in" + c.suffix, at("soft" + c.suffix));
    std::vector<std::string> aims{"in", "hard", "soft"};
    if (c.test_input) aims.push_back("test");
    std::vector<std::string> options{"--output"};
    if (c.checkpoint) options.push_back("--checkpoint");
    options.insert(options.end(), c.file_options.begin(), c.file_options.end());
    const auto before = kfactor::test::snapshot(data);
    for (const auto& option : options)
      for (const auto& aim : aims) {
        const std::string target = at(aim + c.suffix);
        const std::string value = option == "--output" ? c.output_arg(at(aim)) : target;
        SCOPED_TRACE(option + " " + value);
        const auto r = run_kfactor(base + " " + option + " " + quote(value), dir);
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_NE(r.err.find(target), std::string::npos) << r.err;
        EXPECT_EQ(kfactor::test::snapshot(data), before) << "a refused run changed the folder";
        EXPECT_TRUE(kfactor::test::leftovers(data).empty());
      }
  }
}

TEST(WriteTargetsCli, AFullDiskLeavesTheEarlierOutputs) {
  TempDir dir("full");
  const fs::path data = dir.path / "data", full = dir.path / "full";
  fs::create_directory(data);
  fs::create_directory(full);
  // Few users, many items: the first file of each set fits, the second does not.
  const std::string small = (data / "small.csv").string(), big = (data / "big.csv").string();
  write_ratings(small, 6, 8, 3, 7);
  write_ratings(big, 30, 3000, 3, 8);
  kfactor::test::ScopedTmpfs mount(full.string(), "size=64k");
  if (!mount.ok()) std::printf("[ note ] no tmpfs: full disk simulated with RLIMIT_FSIZE\n");
  for (const auto& c : commands()) {
    SCOPED_TRACE(c.name);
    const std::string out = c.output_arg((full / c.name).string());
    auto r = run_kfactor(c.name + " --input " + quote(small) + " " + c.args + " --output " + quote(out), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto before = kfactor::test::snapshot(full);
    ASSERT_FALSE(before.empty());
    {
      std::unique_ptr<kfactor::test::FileSizeLimit> limit;
      if (!mount.ok()) limit = std::make_unique<kfactor::test::FileSizeLimit>(64 * 1024);
      r = run_kfactor(c.name + " --input " + quote(big) + " " + c.big_args + " --output " + quote(out), dir);
    }
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_NE(r.err.find(full.string()), std::string::npos) << r.err;
    EXPECT_EQ(kfactor::test::snapshot(full), before) << "the earlier outputs changed";
    EXPECT_TRUE(kfactor::test::leftovers(full).empty());
  }
}

}  // namespace
