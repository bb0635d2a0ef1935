// Every solver family keeps the contract of core/solver.hpp, checked at
// compile time by the kfactor::Solver concept, on every enabled execution
// space (the default device space and the default host space) and for each
// value type the family instantiates. A family that drifts from the contract
// fails to build here.
#include <kfactor/als/als.hpp>
#include <kfactor/bmf/bmf.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include <kfactor/nmf/nmf.hpp>

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace {
using namespace kfactor;

template <class Exec, class T>
constexpr bool families_keep_the_contract() {
  using Mem = typename Exec::memory_space;
  static_assert(Solver<Exec, nmf::Problem<DenseMatrix<T, Mem>>, nmf::Options, nmf::State<T, Mem>>);
  static_assert(Solver<Exec, nmf::Problem<CsrMatrix<T, Mem>>, nmf::Options, nmf::State<T, Mem>>);
  static_assert(Solver<Exec, als::Problem<T, Mem>, als::Options, als::State<T, Mem>>);
  static_assert(Solver<Exec, mnmf::Problem<T, Mem>, mnmf::Options, mnmf::State<T, Mem>>);
  static_assert(Solver<Exec, bmf::Problem<Mem>, bmf::Options, bmf::State<Mem>>);
  return true;
}

static_assert(families_keep_the_contract<Kokkos::DefaultExecutionSpace, float>());
static_assert(families_keep_the_contract<Kokkos::DefaultExecutionSpace, double>());
static_assert(families_keep_the_contract<Kokkos::DefaultHostExecutionSpace, float>());
static_assert(families_keep_the_contract<Kokkos::DefaultHostExecutionSpace, double>());

// The stop rule is part of every family's options and is validated there.
TEST(Contract, EveryFamilyValidatesItsStopRule) {
  auto refuses = [](auto options) {
    options.stop.tolerance = -1.0;
    EXPECT_THROW(options.validate(), UsageError);
    options.stop.tolerance = 0.0;
    options.stop.max_iterations = -1;
    EXPECT_THROW(options.validate(), UsageError);
    options.stop.max_iterations = 5;
    EXPECT_NO_THROW(options.validate());
  };
  refuses(nmf::Options{});
  refuses(als::Options{});
  refuses(mnmf::Options{});
  refuses(bmf::Options{});
}

// option_values lists what decides the iterates: the seed does, the
// iteration budget does not (a restart may extend it).
TEST(Contract, OptionValuesListTheIterateDecidingOptions) {
  auto check = [](auto options) {
    const auto before = option_values(options);
    EXPECT_TRUE(before.count("seed")) << "every family's iterates depend on its seed";
    options.stop.max_iterations += 7;
    EXPECT_EQ(option_values(options), before);
    options.seed += 1;
    EXPECT_NE(option_values(options), before);
  };
  check(nmf::Options{});
  check(als::Options{});
  check(mnmf::Options{});
  check(bmf::Options{});
}

}  // namespace
