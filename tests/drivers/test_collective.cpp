// distributed/collective.hpp under mpiexec (P = 2 and 3): an error thrown by
// one rank inside agree() reaches every rank as the same kfactor error (kind,
// message of the lowest failing rank, prefixed with that rank); results pass
// through; the communicator stays usable afterwards; require_same detects a
// value that differs on one rank and names both values and ranks.
#include <kfactor/config.hpp>

#include <gtest/gtest.h>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>

#include <memory>
#include <new>
#include <string>

namespace {
using namespace kfactor;

int rank_of() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size_of() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// The communicator still works: a sum over ranks is right.
void expect_comm_usable() {
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(sum, size_of());
}

TEST(Collective, InputErrorOnOneRankReachesEveryRank) {
  ASSERT_GE(size_of(), 2) << "run under mpiexec -n 2 or more";
  const int bad = size_of() - 1;  // the last rank, so that rank 0 must learn it
  bool caught = false;
  try {
    distributed::agree(MPI_COMM_WORLD, [&] {
      if (rank_of() == bad) throw InputError("data.mtx", 7, "index 9 out of range");
    });
  } catch (const InputError& e) {
    caught = true;
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(bad) + ": data.mtx:7: index 9 out of range");
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_TRUE(distributed::is_agreed(e));
  } catch (...) {
    ADD_FAILURE() << "not an InputError";
  }
  EXPECT_TRUE(caught) << "rank " << rank_of() << " did not throw";
  expect_comm_usable();
}

TEST(Collective, LowestFailingRankWinsAndKindsSurvive) {
  ASSERT_GE(size_of(), 2);
  // Every rank but 0 fails, each with another kind: rank 1's error wins.
  auto fail = [] {
    switch (rank_of() % 3) {
      case 1: throw UsageError("bad option on rank 1");
      case 2: throw RuntimeFailure("device out of memory on rank 2");
      default: break;
    }
  };
  try {
    distributed::agree(MPI_COMM_WORLD, fail);
    ADD_FAILURE() << "no error on rank " << rank_of();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1: bad option on rank 1");
    EXPECT_EQ(e.exit_code(), 2);
  } catch (...) {
    ADD_FAILURE() << "not a UsageError on rank " << rank_of();
  }
  // std::bad_alloc and other exceptions become RuntimeFailure (exit 4).
  try {
    distributed::agree(MPI_COMM_WORLD, [] {
      if (rank_of() == 0) throw std::bad_alloc();
    });
    ADD_FAILURE();
  } catch (const RuntimeFailure& e) {
    EXPECT_EQ(std::string(e.what()), "rank 0: out of memory");
    EXPECT_TRUE(distributed::is_agreed(e));
  }
  expect_comm_usable();
}

TEST(Collective, ResultsPassThrough) {
  const auto v = distributed::agree(MPI_COMM_WORLD, [] { return 10 * rank_of() + 1; });
  EXPECT_EQ(v, 10 * rank_of() + 1);
  // A move-only result.
  auto p = distributed::agree(MPI_COMM_WORLD, [] { return std::make_unique<int>(rank_of()); });
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, rank_of());
  // A failure after results on some ranks: no rank returns.
  bool returned = false;
  try {
    (void)distributed::agree(MPI_COMM_WORLD, [] {
      if (rank_of() == 1) throw InputError("late");
      return 1;
    });
    returned = true;
  } catch (const InputError&) {
  }
  EXPECT_FALSE(returned);
  expect_comm_usable();
}

TEST(Collective, RequireSameDetectsAMismatch) {
  ASSERT_GE(size_of(), 2);
  EXPECT_NO_THROW(distributed::require_same(MPI_COMM_WORLD, 12345, "rank K"));
  const int odd = size_of() - 1;
  const std::uint64_t value = rank_of() == odd ? 0xFFFFFFFFFFFFFFF0ULL : 42;  // beyond int64 too
  try {
    distributed::require_same(MPI_COMM_WORLD, value, "input fingerprint");
    ADD_FAILURE() << "no mismatch found on rank " << rank_of();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "ranks disagree on input fingerprint: rank 0 has 42, rank " + std::to_string(odd) +
                                         " has 18446744073709551600");
    EXPECT_TRUE(distributed::is_agreed(e));
    EXPECT_EQ(e.exit_code(), 3);
  }
  expect_comm_usable();
}

TEST(Collective, NestedAgreementKeepsTheMessage) {
  ASSERT_GE(size_of(), 2);
  // An agreed error passing through an outer agree() (every rank holds it)
  // keeps its message: no second "rank 0: " prefix.
  try {
    distributed::agree(MPI_COMM_WORLD, [] {
      distributed::agree(MPI_COMM_WORLD, [] {
        if (rank_of() == 1) throw InputError("f.csv", 3, "bad rating");
      });
    });
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1: f.csv:3: bad rating");
  }
  expect_comm_usable();
}

TEST(Collective, LocalErrorsAreNotAgreed) {
  // What main() uses to decide between ending normally and MPI_Abort.
  EXPECT_FALSE(distributed::is_agreed(InputError("local")));
  EXPECT_FALSE(distributed::is_agreed(std::runtime_error("local")));
}

}  // namespace
#else
TEST(Collective, NotBuilt) { GTEST_SKIP() << "kfactor was built without MPI"; }
#endif
