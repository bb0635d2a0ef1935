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

TEST(ScratchLevelHost, PassesTheLevelAsAConstant) {
  EXPECT_EQ(with_scratch_level(0, [](auto L) { return decltype(L)::value; }), 0);
  EXPECT_EQ(with_scratch_level(1, [](auto L) { return decltype(L)::value; }), 1);
}

TYPED_TEST(ScratchLevel, TeamsFindTheirScratchAtTheGivenLevel) {
  using Space = TypeParam;
  using Mem = typename Space::memory_space;
  using Policy = Kokkos::TeamPolicy<Space>;
  const int teams = 7, n = 64;
  for (int level : {0, 1}) {
    Kokkos::View<int*, Mem> got("got", std::size_t(teams) * n), seen("seen", teams);
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
                                 [&](int i) { got(std::size_t(tm.league_rank()) * n + i) = buf[n - 1 - i]; });
            return lv;
          });
          Kokkos::single(Kokkos::PerTeam(tm), [&]() { seen(tm.league_rank()) = lv_seen; });
        });
    const auto g = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, got);
    const auto s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, seen);
    for (int t = 0; t < teams; ++t) {
      ASSERT_EQ(s(t), level) << "team " << t;
      for (int i = 0; i < n; ++i) ASSERT_EQ(g(std::size_t(t) * n + i), t * 1000 + n - 1 - i) << "team " << t;
    }
  }
}

}  // namespace
