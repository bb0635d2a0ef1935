// Resource limits and damaged checkpoints, as a user meets them on the
// command line (no MPI):
// - a factorization rank too large for memory ends with exit 4 and a message
//   giving the sizes involved, not an abort (run under `ulimit -v` so the
//   allocation fails the same way on any machine, instead of overcommitting);
// - a checkpoint that was damaged never reaches HDF5 unchecked: the file the
//   checkpoint fuzzer found (HDF5 loops forever reading its attributes) and
//   sealed checkpoints with damaged metadata, seal or length exit 3 promptly,
//   naming the file; damaged raw data is still reported by field.
#include "common/cli.hpp"

#include <gtest/gtest.h>
#include <Kokkos_Macros.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {
using kfactor::test::quote;
using kfactor::test::slurp;
using kfactor::test::TempDir;

struct Run {
  int code = -1;
  std::string out, err;
};

/// `kfactor ARGS` with at most `vmem_kb` of address space (0: no limit),
/// killed after 120 s (exit 124: a hang).
Run kfactor(const TempDir& dir, const std::string& args, long vmem_kb = 0) {
  static int serial = 0;
  const std::string tag = std::to_string(serial++);
  const std::string out = dir.file("out" + tag), err = dir.file("err" + tag);
  std::string cmd = "timeout 120 " + quote(std::string(KFACTOR_BINARY_DIR) + "/kfactor") + " " + args;
  if (vmem_kb > 0) cmd = "ulimit -v " + std::to_string(vmem_kb) + " && exec " + cmd;
  cmd = "sh -c " + quote(cmd) + " >" + quote(out) + " 2>" + quote(err);
  const int status = std::system(cmd.c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

constexpr long vmem_kb = 8L << 20;  // 8 GiB of address space

/// A 2,000,000 x 1,000,000 input with three nonzeros: tiny to read, but any
/// dense factor of rank 10^5 needs hundreds of GiB.
std::string wide_input(const TempDir& dir) {
  const std::string path = dir.file("wide.mtx");
  std::ofstream(path) << "%%MatrixMarket matrix coordinate real general\n2000000 1000000 3\n1 1 1.0\n5 7 2.0\n"
                         "2000000 1000000 3.0\n";
  return path;
}

// AddressSanitizer reserves terabytes of address space, and the CUDA runtime
// maps the device's memory into it: no `ulimit -v` there (under it, CUDA
// cannot even count devices, which kfactor reports as exit 4 too).
#if defined(KFACTOR_SANITIZED)
#define SKIP_UNDER_SANITIZERS() GTEST_SKIP() << "ulimit -v and AddressSanitizer do not mix"
#elif defined(KOKKOS_ENABLE_CUDA)
#define SKIP_UNDER_SANITIZERS() GTEST_SKIP() << "ulimit -v and the CUDA runtime do not mix"
#else
#define SKIP_UNDER_SANITIZERS() (void)0
#endif

TEST(Limits, NmfRankTooLargeForMemoryExits4WithSizes) {
  SKIP_UNDER_SANITIZERS();
  TempDir dir;
  const auto r = kfactor(dir, "nmf --quiet --iters 1 -k 100000 --input " + quote(wide_input(dir)), vmem_kb);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("kfactor: error: nmf: cannot allocate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("x 100000"), std::string::npos) << r.err;  // the factor's shape
  EXPECT_NE(r.err.find("GiB"), std::string::npos) << r.err;       // and its size
}

TEST(Limits, SddmmRankTooLargeForMemoryExits4WithSizes) {
  SKIP_UNDER_SANITIZERS();
  TempDir dir;
  const auto r = kfactor(dir, "sddmm --reps 1 -k 100000 --input " + quote(wide_input(dir)), vmem_kb);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("sddmm: cannot allocate A (2000000 x 100000) and B (1000000 x 100000)"), std::string::npos)
      << r.err;
}

TEST(Limits, ClaimedShapeBeyondMemoryExits3BeforeAllocating) {
  SKIP_UNDER_SANITIZERS();
  TempDir dir;
  // 2^31 - 1 rows and columns: the row maps alone would take 64 GiB. The
  // reader prices the claim against the memory limit before allocating.
  const std::string path = dir.file("tall.in");
  std::ofstream(path) << "2147483647 2147483647 2\n0 0\n2147483646 2147483646\n";
  const auto r = kfactor(dir, "bmf --quiet --iters 1 -k 4 --input " + quote(path), vmem_kb);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("tall.in:1: header claims a 2147483647 x 2147483647 matrix"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("memory limit"), std::string::npos) << r.err;
}

std::string data(const std::string& name) { return std::string(KFACTOR_SOURCE_DIR) + "/tests/drivers/data/" + name; }

TEST(Limits, FuzzFoundCheckpointExits3WithoutReachingHdf5) {
  TempDir dir;
  // HDF5 (1.14, Debian) loops forever reading a string attribute of this
  // file; the seal check refuses it first.
  const std::string path = data("checkpoint_hdf5_hang_unsealed.h5");
  const auto r = kfactor(dir, "checkpoint-info " + quote(path));
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find(path + ": not a readable kfactor checkpoint (no kfactor seal"), std::string::npos) << r.err;
}

TEST(Limits, DamagedSealedCheckpointsExit3) {
  TempDir dir;
  const std::string input = dir.file("a.mtx"), ck = dir.file("run.h5");
  {
    std::ofstream f(input);
    f << "%%MatrixMarket matrix coordinate real general\n12 10 30\n";
    for (int e = 0; e < 30; ++e) f << e % 12 + 1 << " " << (e * 7) % 10 + 1 << " " << 1.0 + e % 5 << "\n";
  }
  const auto w = kfactor(dir, "nmf --quiet --iters 3 -k 3 --input " + quote(input) + " --checkpoint " + quote(ck));
  ASSERT_EQ(w.code, 0) << w.err;
  const std::string good = slurp(ck);
  ASSERT_GT(good.size(), 4096u + 512u);
  ASSERT_EQ(kfactor(dir, "checkpoint-info " + quote(ck)).code, 0);
  auto variant = [&](const std::string& name, std::string bytes, const std::string& needle) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary) << bytes;
    const auto r = kfactor(dir, "checkpoint-info " + quote(path));
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find(path + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  std::string superblock = good;
  superblock[4096 + 9] ^= 0x40;  // inside HDF5's superblock
  variant("superblock.h5", superblock, "fails the kfactor seal's checksum");
  // A restart from it fails the same way, before the solver starts.
  const auto rr = kfactor(
      dir, "nmf --quiet --iters 4 -k 3 --input " + quote(input) + " --restart " + quote(dir.file("superblock.h5")));
  EXPECT_EQ(rr.code, 3) << rr.err;
  EXPECT_NE(rr.err.find("fails the kfactor seal's checksum"), std::string::npos) << rr.err;
  std::string magic = good;
  magic[3] ^= 1;
  variant("magic.h5", magic, "no kfactor seal");
  variant("truncated.h5", good.substr(0, good.size() - 100), "truncated or corrupt checkpoint");
  variant("short.h5", good.substr(0, 1000), "truncated checkpoint");
  variant("extended.h5", good + "x", "truncated or corrupt checkpoint");
}

#if defined(KOKKOS_ENABLE_CUDA)
// Under the same address-space limit the CUDA runtime cannot start: kfactor
// says so and exits 4 instead of aborting in Kokkos::initialize.
TEST(Limits, DeviceThatCannotStartExits4) {
  TempDir dir("limits");
  const auto r = kfactor(dir, "demo", vmem_kb);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("kfactor: error: cannot initialize Kokkos"), std::string::npos) << r.err;
}
#endif

}  // namespace
