#pragma once
// Running a program under `mpiexec -n P` from a test, as a user runs it: the
// job is wrapped in `timeout`, so a hang shows as exit 124 instead of
// stalling the suite, and a small shell wrapper records every rank's own
// exit code. One rank may run other arguments than the rest.
#include "common/cli.hpp"

#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace kfactor::test {

struct MpiRun {
  int code = -1;                 ///< mpiexec's (timeout's) exit code; 124: it hung
  std::map<int, int> rank_exit;  ///< rank -> the program's own exit code (ranks that ended normally)
  std::string out, err;
  double seconds = 0;  ///< wall time of the whole job
};

/// Names in the environment before main(), so before MPI_Init: whatever the
/// user (or the machine) set for Open MPI, e.g. its launch agent, stays.
inline const std::set<std::string> startup_environment = [] {
  std::set<std::string> names;
  for (char** e = environ; *e != nullptr; ++e) names.insert(std::string(*e).substr(0, std::string(*e).find('=')));
  return names;
}();

/// A test program is itself an MPI process (a singleton), and Open MPI hands
/// its singleton state to children in OMPI_/PMIX_ variables; an mpiexec
/// started with them fails at once. `env -u` prefix that drops the MPI
/// variables MPI_Init added.
inline std::string without_singleton_environment() {
  std::string prefix = "env";
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string name = kv.substr(0, kv.find('='));
    const bool mpi = name.rfind("OMPI_", 0) == 0 || name.rfind("PMIX_", 0) == 0 || name.rfind("OPAL_", 0) == 0 ||
                     name.rfind("ORTE_", 0) == 0 || name.rfind("PMI_", 0) == 0;
    if (mpi && startup_environment.count(name) == 0) prefix += " -u " + quote(name);
  }
  return prefix + " ";
}

/// Runs `PROGRAM ARGS` on P ranks (oversubscribed), where rank `odd_rank`
/// runs `PROGRAM ODD_ARGS` instead (odd_rank < 0: none). ARGS are shell
/// words, quoted where needed. `env` ("NAME=value ...") is added to every
/// rank's environment; the job is killed after `timeout_seconds`.
inline MpiRun mpi_run(const TempDir& dir, int P, const std::string& program, const std::string& args, int odd_rank = -1,
                      const std::string& odd_args = {}, const std::string& env = {}, int timeout_seconds = 120) {
  static int serial = 0;
  const std::string tag = "mpi" + std::to_string(serial++);
  const std::string out = dir.file("out" + tag), err = dir.file("err" + tag), codes = dir.file("codes" + tag);
  // $OMPI_COMM_WORLD_RANK is Open MPI's; PMIX_RANK / PMI_RANK cover others.
  const std::string wrapper =
      "r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}; a=\"$2\"; [ \"$r\" = \"$3\" ] && a=\"$4\"; "
      "eval \"\\\"$1\\\" $a\"; c=$?; echo \"$r $c\" >>\"$5\"; exit $c";
  const std::string cmd = "timeout -k 10 " + std::to_string(timeout_seconds) + " " + without_singleton_environment() +
                          env + " " + quote(KFACTOR_MPIEXEC) + " " + KFACTOR_MPIEXEC_NUMPROC_FLAG + " " +
                          std::to_string(P) + " --oversubscribe sh -c " + quote(wrapper) + " sh " + quote(program) +
                          " " + quote(args) + " " + std::to_string(odd_rank) + " " + quote(odd_args) + " " +
                          quote(codes) + " >" + quote(out) + " 2>" + quote(err);
  MpiRun r;
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  std::istringstream c(slurp(codes));
  int rank = 0, code = 0;
  while (c >> rank >> code) r.rank_exit[rank] = code;
  return r;
}

/// The `kfactor` command of this build.
inline std::string kfactor_binary() { return std::string(KFACTOR_BINARY_DIR) + "/kfactor"; }

/// Occurrences of `needle` in `hay`.
inline std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace kfactor::test
