// A distributed checkpoint save that fails on one rank only, in the middle of
// the write (checkpoint_fault_run, under mpiexec -n 2 and 4, collective and
// gathered saves, the failing rank 0 or another): the job ends within a time
// bound with exit 4 and one message naming the rank, the previous checkpoint
// is byte for byte as before and still loads, and no temporary file is left,
// whichever rank held it.
#include "checkpoint/write_targets.hpp"
#include "common/mpi_run.hpp"

#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using kfactor::test::count;
using kfactor::test::file_bytes;
using kfactor::test::leftovers;
using kfactor::test::mpi_run;
using kfactor::test::quote;
using kfactor::test::TempDir;

constexpr double time_bound_seconds = 60;

struct Case {
  std::string mode;
  int ranks, fail_rank;
};

TEST(CheckpointFault, OneRankFailingMidSaveEndsTheJobAndKeepsThePreviousCheckpoint) {
  std::vector<Case> cases = {{"gather", 2, 1}, {"gather", 4, 0}};
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  // Collective: rank 0 holds the temporary file and the lock; another rank
  // failing must still remove the temporary.
  cases.insert(cases.end(), {{"collective", 2, 1}, {"collective", 2, 0}, {"collective", 4, 3}});
#else
  std::printf("[ note ] collective saves skipped (serial HDF5)\n");
#endif
  for (const auto& [mode, P, fail] : cases) {
    SCOPED_TRACE(mode + " P=" + std::to_string(P) + " failing rank " + std::to_string(fail));
    TempDir dir("ckfault");
    const std::string path = dir.file("ck.h5");
    const auto saved = mpi_run(dir, P, KFACTOR_FAULT_RUN, quote(path) + " " + mode);
    ASSERT_EQ(saved.code, 0) << saved.err;
    const std::string before = file_bytes(path);
    ASSERT_FALSE(before.empty());

    const auto r = mpi_run(dir, P, KFACTOR_FAULT_RUN, quote(path) + " " + mode + " " + std::to_string(fail));
    EXPECT_NE(r.code, 124) << "timed out (hang)\n" << r.err;
    EXPECT_EQ(r.code, 4) << r.err;
    EXPECT_LT(r.seconds, time_bound_seconds) << r.err;
    const std::string message = "kfactor: error: rank " + std::to_string(fail) + ": failure injected on rank " +
                                std::to_string(fail) + " while saving the checkpoint";
    EXPECT_EQ(count(r.err, message), 1u) << r.err;
    EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
    EXPECT_EQ(file_bytes(path), before);
    EXPECT_NO_THROW(kfactor::inspect_checkpoint(path));
    for (const auto& name : leftovers(dir.path))
      EXPECT_EQ(name.find(".tmp."), std::string::npos) << "left behind: " << name;
  }
}

}  // namespace
