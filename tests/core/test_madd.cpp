// madd (core/madd.hpp): one rounding where the target has a fused
// multiply-add, two where it has none, in device kernels and host code alike.
#include <kfactor/core/madd.hpp>

#include "common/test_spaces.hpp"

#include <cmath>

namespace {
using namespace kfactor;

template <class Space>
class Madd : public ::testing::Test {};

// The kernel lives in a free function: nvcc refuses an extended device lambda
// whose enclosing function (a TYPED_TEST body) is a private member.
template <class Space>
double madd_on(double a, double b, double c) {
  Kokkos::View<double, typename Space::memory_space> out("out");
  Kokkos::parallel_for(Kokkos::RangePolicy<Space>(0, 1), KOKKOS_LAMBDA(int) { out() = madd(a, b, c); });
  double got = 0;
  Kokkos::deep_copy(got, out);
  return got;
}
TYPED_TEST_SUITE(Madd, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

// (1 + 2^-30)(1 - 2^-30) - 1 = -2^-60 exactly; the product alone rounds to 1.
TYPED_TEST(Madd, RoundsOnceWhereTheTargetFuses) {
  using Space = TypeParam;
  const double a = 1.0 + std::ldexp(1.0, -30), b = 1.0 - std::ldexp(1.0, -30);
  const double got = madd_on<Space>(a, b, -1.0);
  const bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Space::memory_space>::accessible;
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  const bool fused = true;
#else
  const bool fused = !host;  // device compilers always fuse
#endif
  EXPECT_EQ(got, fused ? -std::ldexp(1.0, -60) : 0.0);
}

}  // namespace
