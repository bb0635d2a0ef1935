// kfactor::OutOfMemory (core/error.hpp): an allocation the library cannot
// make reaches the caller as that type, a RuntimeFailure with exit code 4
// naming what was allocated. The requests here are far beyond a lowered
// address-space limit (RLIMIT_AS), so they fail at once on any machine
// without touching memory; the limit is restored after each test. Host
// space only: RLIMIT_AS does not bound device memory.
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/nmf/nmf.hpp>
#include <kfactor/sddmm/planted.hpp>

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace {
using namespace kfactor;
using Host = Kokkos::DefaultHostExecutionSpace;
using Mem = Host::memory_space;

/// The process's current virtual size in bytes (VmSize of /proc/self/status).
std::uint64_t virtual_size() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmSize:") {
      std::uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

/// Lowers the soft address-space limit to the current size plus `slack`
/// for its lifetime.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(std::uint64_t slack) {
    ok_ = getrlimit(RLIMIT_AS, &saved_) == 0 && virtual_size() > 0;
    if (!ok_) return;
    rlimit lowered = saved_;
    lowered.rlim_cur = virtual_size() + slack;
    if (saved_.rlim_max != RLIM_INFINITY && lowered.rlim_cur > saved_.rlim_max) lowered.rlim_cur = saved_.rlim_max;
    ok_ = setrlimit(RLIMIT_AS, &lowered) == 0;
  }
  ~AddressSpaceLimit() {
    if (ok_) setrlimit(RLIMIT_AS, &saved_);
  }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

constexpr std::uint64_t GiB = std::uint64_t(1) << 30;

/// A rows x cols CSR with one stored entry per row (at column `row`).
CsrMatrix<double, Mem> diagonal_csr(std::int64_t rows, std::int64_t cols) {
  Kokkos::View<offset_t*, Mem> row_map("row_map", rows + 1);
  Kokkos::View<ordinal_t*, Mem> entries("entries", rows);
  Kokkos::View<double*, Mem> values("values", rows);
  for (std::int64_t i = 0; i < rows; ++i) {
    row_map(i + 1) = offset_t(i + 1);
    entries(i) = ordinal_t(i);
    values(i) = 1.0 + double(i);
  }
  return CsrMatrix<double, Mem>(row_map, entries, values, ordinal_t(cols));
}

TEST(OutOfMemory, IsARuntimeFailureWithItsExitCode) {
  const OutOfMemory e("x: cannot allocate y");
  const RuntimeFailure& base = e;
  EXPECT_EQ(base.exit_code(), 4);
  EXPECT_STREQ(base.what(), "x: cannot allocate y");
}

TEST(OutOfMemory, NmfFactorsBeyondMemory) {
  // 64 x 2^22 with 64 ones: the input and its transpose take ~35 MiB, the
  // rank-64 factor H^T 2 GiB.
  const auto A = diagonal_csr(64, std::int64_t(1) << 22);
  const Host exec;
  const auto problem = nmf::make_problem(exec, A);
  nmf::Options o;
  o.rank = 64;
  o.algorithm = nmf::Algorithm::hals;
  o.init = nmf::Init::random;
  const AddressSpaceLimit limit(GiB);
  ASSERT_TRUE(limit.ok());
  try {
    (void)nmf::init(exec, problem, o);
    FAIL() << "a 2 GiB factor was allocated under a 1 GiB limit";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("nmf: cannot allocate"), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), 4);
  }
}

TEST(OutOfMemory, NmfTransposeBeyondMemory) {
  // 2 x 2^31-1 with 2 ones: the transpose's row pointers alone are 16 GiB.
  const auto A = diagonal_csr(2, (std::int64_t(1) << 31) - 1);
  const AddressSpaceLimit limit(GiB);
  ASSERT_TRUE(limit.ok());
  EXPECT_THROW((void)nmf::make_problem(Host{}, A), OutOfMemory);
}

TEST(OutOfMemory, SddmmFactorsBeyondMemory) {
  const AddressSpaceLimit limit(GiB);
  ASSERT_TRUE(limit.ok());
  EXPECT_THROW((void)sddmm_random_factors<double>(Host{}, std::int64_t(1) << 24, std::int64_t(1) << 24, 64, 7),
               OutOfMemory);
}

}  // namespace
