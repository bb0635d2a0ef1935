// with_scratch_level (core/scratch_level.hpp): the body gets the level it
// is called with as a compile-time constant, and team code that takes its
// scratch through it finds the memory requested at that level (only that
// level is given scratch: the other one would hand back a null pointer).
#include <kfactor/core/scratch_level.hpp>

#include "common/test_spaces.hpp"

#include <cstdint>
#include <vector>

namespace {
using namespace kfactor;

template <class Space>
class ScratchLevel : public ::testing::Test {};
TYPED_TEST_SUITE(ScratchLevel, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

/// The level the body was instantiated for.
struct LevelOf {
  template <class L>
  KOKKOS_INLINE_FUNCTION int operator()(L) const {
    return L::value;
  }
};

TEST(ScratchLevelHost, PassesTheLevelAsAConstant) {
  EXPECT_EQ(with_scratch_level(0, LevelOf{}), 0);
  EXPECT_EQ(with_scratch_level(1, LevelOf{}), 1);
}

// Each team takes n ints through with_scratch_level(level, ...) from the
// scratch of that level (the only level given any), fills them, reads them
// back reversed into got, and reports the level its body saw (-1: no scratch
// there). A free function: CUDA lambdas cannot live in a test's body.
template <class Space>
void scratch_round_trip(int level, int teams, int n, std::vector<int>& got, std::vector<int>& seen) {
  using Mem = typename Space::memory_space;
  using Policy = Kokkos::TeamPolicy<Space>;
  Kokkos::View<int*, Mem> g("got", std::size_t(teams) * n), s("seen", teams);
  Policy policy(teams, Kokkos::AUTO);
  policy.set_scratch_size(level, Kokkos::PerTeam(n * sizeof(int) + 16));
  Kokkos::parallel_for(
      policy, KOKKOS_LAMBDA(const typename Policy::member_type& tm) {
        const int lv_seen = with_scratch_level(level, [&](auto L) {
          constexpr int lv = decltype(L)::value;
          int* buf = static_cast<int*>(tm.team_scratch(lv).get_shmem(n * sizeof(int)));
          if (buf == nullptr) return -1;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, n), [&](int i) { buf[i] = tm.league_rank() * 1000 + i; });
          tm.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, n),
                               [&](int i) { g(std::size_t(tm.league_rank()) * n + i) = buf[n - 1 - i]; });
          return lv;
        });
        Kokkos::single(Kokkos::PerTeam(tm), [&]() { s(tm.league_rank()) = lv_seen; });
      });
  got.resize(g.extent(0));
  seen.resize(s.extent(0));
  using Host = Kokkos::View<int*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(Host(got.data(), got.size()), g);
  Kokkos::deep_copy(Host(seen.data(), seen.size()), s);
}

TYPED_TEST(ScratchLevel, TeamsFindTheirScratchAtTheGivenLevel) {
  const int teams = 7, n = 64;
  for (int level : {0, 1}) {
    std::vector<int> got, seen;
    scratch_round_trip<TypeParam>(level, teams, n, got, seen);
    for (int t = 0; t < teams; ++t) {
      ASSERT_EQ(seen[t], level) << "team " << t;
      for (int i = 0; i < n; ++i) ASSERT_EQ(got[std::size_t(t) * n + i], t * 1000 + n - 1 - i) << "team " << t;
    }
  }
}

}  // namespace
