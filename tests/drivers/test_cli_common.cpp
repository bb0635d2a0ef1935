// The command line's common layer (drivers/cli.*, drivers/main.cpp):
// - every subcommand takes the output options --json and -q/--quiet;
// - Kokkos options out of range end with exit 2 naming the option and its
//   range, before Kokkos starts;
// - SIGINT / SIGTERM stop a run at its next iteration: the final checkpoint
//   is written (and loads), the exit code is 130 / 143.
#include "common/cli.hpp"

#include <kfactor/config.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::slurp;
using kfactor::test::TempDir;

std::string kfactor_bin() { return std::string(KFACTOR_BINARY_DIR) + "/kfactor"; }

/// A positive 40 x 30 matrix, every entry present.
std::string write_matrix(const TempDir& dir) {
  const std::string path = dir.file("a.mtx");
  std::ofstream f(path);
  f << "%%MatrixMarket matrix coordinate real general\n40 30 1200\n";
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 30; ++j) f << i + 1 << " " << j + 1 << " " << 1 + (i * 7 + j * 13) % 11 << "\n";
  return path;
}

class EveryCommand : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryCommand, TakesJsonAndQuiet) {
  TempDir dir("common_help");
  const auto r = run_kfactor(GetParam() + " --help", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--quiet"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-q"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Commands, EveryCommand,
                         ::testing::Values("nmf", "als", "predict", "bmf", "mnmf", "sddmm", "demo", "info", "convert",
                                           "checkpoint-info"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(CommonOptions, QuietRunsPrintNoProgress) {
  TempDir dir("common_quiet");
  const auto s = run_kfactor("sddmm --quiet --rows 300 --cols 200 --nnz 3000 -k 8 --reps 1", dir, "", 0);
  EXPECT_EQ(s.code, 0) << s.err;
  const auto d = run_kfactor("demo --quiet --only nmf", dir, "", 1);
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("nmf"), std::string::npos) << d.out;
  const std::string a = write_matrix(dir);
  const auto loud = run_kfactor("nmf --input " + quote(a) + " -k 3 -n 3", dir, "", 2);
  const auto quiet = run_kfactor("nmf --input " + quote(a) + " -k 3 -n 3 -q", dir, "", 3);
  ASSERT_EQ(loud.code, 0) << loud.err;
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_NE(loud.out.find("iter "), std::string::npos) << loud.out;
  EXPECT_EQ(quiet.out.find("iter "), std::string::npos) << quiet.out;
  EXPECT_EQ(quiet.err, "");
}

TEST(KokkosOptions, OutOfRangeValuesAreUsageErrors) {
  TempDir dir("common_kokkos");
  int slot = 0;
  for (const std::string v : {"0", "-1", "-8", "100000", "99999999999999999999", "4x", "", "nan"}) {
    SCOPED_TRACE(v);
    const auto r = run_kfactor("demo --only nmf --kokkos-num-threads=" + quote(v), dir, "", slot++);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("--kokkos-num-threads must be an integer in [1, 1024]"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const auto bare = run_kfactor("demo --only nmf --kokkos-num-threads", dir, "", slot++);
  EXPECT_EQ(bare.code, 2) << bare.err;
  EXPECT_NE(bare.err.find("--kokkos-num-threads=N"), std::string::npos) << bare.err;
  const auto dev = run_kfactor("demo --only nmf --kokkos-device-id=-1", dir, "", slot++);
  EXPECT_EQ(dev.code, 2) << dev.err;
  EXPECT_NE(dev.err.find("--kokkos-device-id must be an integer in [0, 1023]"), std::string::npos) << dev.err;
  const auto map = run_kfactor("demo --only nmf --kokkos-map-device-id-by=rank", dir, "", slot++);
  EXPECT_EQ(map.code, 2) << map.err;
  EXPECT_NE(map.err.find("--kokkos-map-device-id-by must be mpi_rank or random"), std::string::npos) << map.err;
  const auto ok = run_kfactor("demo --only nmf --kokkos-num-threads=1", dir, "", slot++);
  EXPECT_EQ(ok.code, 0) << ok.err;
}

#if defined(KFACTOR_HAVE_HDF5)
/// Starts `kfactor args...` with stdout and stderr in files; returns its pid.
pid_t spawn_kfactor(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> all{kfactor_bin()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

/// Runs a long nmf with --checkpoint, sends `sig` once it has printed
/// progress, and checks the exit code and the checkpoint it left.
void interrupt_run(int sig, int expected_code) {
  TempDir dir("common_signal");
  const std::string a = write_matrix(dir), ck = dir.file("run.h5"), out = dir.file("out"), err = dir.file("err");
  const pid_t pid = spawn_kfactor({"nmf", "--input", a, "-k", "4", "-n", "1000000", "--tol", "0", "--every", "50",
                                   "--checkpoint", ck, "--checkpoint-every", "1000000"},
                                  out, err);
  ASSERT_GT(pid, 0);
  // Wait for the first progress lines: the solver loop is running.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (slurp(out).find("iter ") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(slurp(out).find("iter "), std::string::npos) << slurp(err);
  ASSERT_EQ(::kill(pid, sig), 0);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "kfactor did not stop after the signal";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), expected_code) << slurp(err);
  // The report was printed and the checkpoint holds the iteration it reached.
  EXPECT_NE(slurp(out).find("stop: observer"), std::string::npos) << slurp(out);
  const auto info = run_kfactor("checkpoint-info --json " + quote(ck), dir, "", 1);
  ASSERT_EQ(info.code, 0) << info.err;
  const auto j = nlohmann::json::parse(info.out);
  const long long reached = j.value("iteration", 0LL);
  EXPECT_GE(reached, 1);
  // And it restarts: two more iterations from where the run stopped.
  const auto again = run_kfactor("nmf --json --quiet --input " + quote(a) + " -k 4 --tol 0 -n " +
                                     std::to_string(reached + 2) + " --restart " + quote(ck),
                                 dir, "", 2);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out).value("iterations", 0LL), reached + 2);
}

TEST(Signals, SigintWritesTheCheckpointAndExits130) { interrupt_run(SIGINT, 130); }
TEST(Signals, SigtermWritesTheCheckpointAndExits143) { interrupt_run(SIGTERM, 143); }
#endif

}  // namespace
