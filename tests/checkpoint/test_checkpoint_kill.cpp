// Atomic checkpoints under SIGKILL: a child runs the toy solver saving a
// checkpoint every iteration and is killed at ~10 random instants (fixed-seed
// schedule). After each kill the last checkpoint must load, never go
// backwards, and the restarted runs must end bitwise equal to a run that was
// never interrupted.
#include "checkpoint/toy_solver.hpp"

#include <kfactor/io/checkpoint.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace kfactor;
namespace fs = std::filesystem;
namespace toy = kfactor::test::toy;

/// Starts `args` with OMP_NUM_THREADS=1 (spinning OpenMP barriers crawl on a loaded machine).
pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("OMP_NUM_THREADS=", 0) != 0) env_strings.emplace_back(*e);
  env_strings.emplace_back("OMP_NUM_THREADS=1");
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  return pid;
}

/// Waits until `file` changes (a new checkpoint was renamed into place) or
/// the child exits; false on exit (the child is then reaped: *reaped is set
/// and its status stored) or after 60 s.
bool wait_for_new_checkpoint(pid_t pid, const std::string& file, bool* reaped, int* reaped_status) {
  std::error_code ec;
  const auto before = fs::exists(file, ec) ? fs::last_write_time(file, ec) : fs::file_time_type::min();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      *reaped = true;
      *reaped_status = status;
      return false;
    }
    if (fs::exists(file, ec) && fs::last_write_time(file, ec) != before) return true;
  }
  return false;
}

TEST(CheckpointKill, SigkillAtRandomPointsNeverLosesTheLastCheckpoint) {
  const fs::path dir = fs::temp_directory_path() / ("kfactor_ckpt_kill_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string ckpt = (dir / "run.h5").string(), final_path = (dir / "final.h5").string();
  const int iters = 400, m = 300, n = 200, k = 8;  // long enough that no child finishes before its kill
  const std::vector<std::string> cmd = {
      KFACTOR_TOY_RUN,  ckpt, final_path, std::to_string(iters), std::to_string(m), std::to_string(n),
      std::to_string(k)};

  using Exec = Kokkos::DefaultExecutionSpace;
  Exec exec;
  const auto A = toy::planted<double>(exec, m, n, 4, 5);
  toy::Options o;
  o.max_iterations = iters;
  o.rank = k;
  CheckpointMeta meta;
  meta.solver = "toy";
  meta.input = fingerprint(exec, A);
  meta.rank = k;

  const CounterRng schedule(2026, RngStream::user);
  int killed = 0, last_iteration = 0;
  std::size_t partial_writes = 0;  // kills that landed inside a write
  for (int round = 0; round < 10; ++round) {
    const pid_t pid = spawn(cmd);
    ASSERT_GT(pid, 0);
    // Once the child has saved at least once, kill it anywhere in its next ~1-2 iterations.
    bool reaped = false;
    int status = 0;
    if (wait_for_new_checkpoint(pid, ckpt, &reaped, &status))
      std::this_thread::sleep_for(std::chrono::microseconds(schedule.bits(round) % 20000));
    if (!reaped) {
      ::kill(pid, SIGKILL);
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      ++killed;
    else
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed on its own";
    std::size_t temporaries = 0;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("run.h5.tmp.", 0) == 0) ++temporaries;
    EXPECT_LE(temporaries, 1u) << "stale temporaries of earlier kills were not removed";
    partial_writes += temporaries;
    if (!fs::exists(ckpt)) continue;  // killed before its first save completed
    auto s = toy::init<double>(exec, A, o);
    const auto stored = load_checkpoint(ckpt, s, meta);  // must not throw
    EXPECT_EQ(stored.iteration, s.iteration);
    EXPECT_GE(s.iteration, last_iteration) << "round " << round;
    last_iteration = s.iteration;
  }
  EXPECT_GE(killed, 8) << "the child finished before most kills; the schedule no longer tests anything";
  EXPECT_GT(last_iteration, 0) << "no checkpoint was ever written";
  // Leftover temporaries are partial files of killed writers; the checkpoint itself is whole.
  const pid_t pid = spawn(cmd);
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  std::size_t temporaries = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("run.h5.tmp.", 0) == 0) ++temporaries;
  std::printf("%d of 10 children killed, %zu inside a write; last checkpoint at iteration %d (of %d)\n", killed,
              partial_writes, last_iteration, iters);
  EXPECT_EQ(temporaries, 0u) << "the last run did not remove the temporaries of the killed ones";
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  auto reference = toy::init<double>(exec, A, o);
  toy::solve<double>(exec, A, o, reference);
  auto restarted = toy::init<double>(exec, A, o);
  load_checkpoint(final_path, restarted, meta);
  EXPECT_EQ(restarted.iteration, iters);
  EXPECT_TRUE(toy::bitwise_equal(restarted, reference));
  fs::remove_all(dir);
}

}  // namespace
