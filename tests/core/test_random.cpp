#include <kfactor/core/random.hpp>

#include "common/test_spaces.hpp"

#include <cmath>
#include <set>

namespace {
using namespace kfactor;

template <class Space>
class RandomTest : public ::testing::Test {};
TYPED_TEST_SUITE(RandomTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(RandomTest, FillMatchesHostCounterAndIgnoresLayout) {
  using Space = TypeParam;
  const Space exec;
  Kokkos::View<double**, Kokkos::LayoutRight, typename Space::memory_space> R("R", 37, 11);
  Kokkos::View<double**, Kokkos::LayoutLeft, typename Space::memory_space> L("L", 37, 11);
  fill_uniform(exec, R, 1234, RngStream::factor_w, 0.5, 2.0);
  fill_uniform(exec, L, 1234, RngStream::factor_w, 0.5, 2.0);
  auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, R);
  auto hl = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, L);
  const CounterRng rng(1234, RngStream::factor_w);
  for (std::size_t i = 0; i < 37; ++i)
    for (std::size_t j = 0; j < 11; ++j) {
      EXPECT_EQ(hr(i, j), hl(i, j));
      EXPECT_EQ(hr(i, j), rng.uniform<double>(i * 11 + j, 0.5, 2.0));
      EXPECT_GE(hr(i, j), 0.5);
      EXPECT_LT(hr(i, j), 2.0);
    }
}

TEST(CounterRng, StreamsAndSeedsAreIndependent) {
  const CounterRng a(7, RngStream::factor_w), b(7, RngStream::factor_h), c(8, RngStream::factor_w);
  int same_ab = 0, same_ac = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same_ab += a.bits(i) == b.bits(i);
    same_ac += a.bits(i) == c.bits(i);
  }
  EXPECT_EQ(same_ab, 0);
  EXPECT_EQ(same_ac, 0);
}

TEST(CounterRng, UniformMomentsAndRange) {
  const CounterRng rng(42, RngStream::user);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  int low_bits_set = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform(static_cast<std::uint64_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum2 += u * u;
    low_bits_set += static_cast<int>(rng.bits(i) & 1u);
    const float f = rng.uniformf(i);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
  EXPECT_NEAR(low_bits_set / double(n), 0.5, 0.005);
}

}  // namespace
