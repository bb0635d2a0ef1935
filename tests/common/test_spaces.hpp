#pragma once
// Typed-test lists built from the execution spaces this Kokkos enables, so the
// same test runs on OpenMP here and on CUDA (and OpenMP) on the GPU machine.
#include <kfactor/core/spaces.hpp>

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>

namespace kfactor::test {

template <class Tuple>
struct ToGTest;
template <class... Ts>
struct ToGTest<std::tuple<Ts...>> {
  using type = ::testing::Types<Ts...>;
};

/// One entry per enabled execution space.
using ExecutionSpaces = ToGTest<EnabledExecutionSpaces>::type;

/// (execution space, scalar) pairs: every space with float and double.
template <class Space, class Scalar>
struct SpaceScalar {
  using space = Space;
  using scalar = Scalar;
};
template <class Tuple>
struct WithScalars;
template <class... Ss>
struct WithScalars<std::tuple<Ss...>> {
  using type = ::testing::Types<SpaceScalar<Ss, float>..., SpaceScalar<Ss, double>...>;
};
using SpacesAndScalars = WithScalars<EnabledExecutionSpaces>::type;

/// Path of a file in ../shared/data (override with KFACTOR_DATA).
inline std::string data_path(const std::string& relative) {
  const char* env = std::getenv("KFACTOR_DATA");
  return std::string(env && *env ? env : KFACTOR_SHARED_DATA) + "/" + relative;
}

/// Names typed tests by their space (and scalar) instead of 0, 1, ...
struct SpaceNames {
  template <class T>
  static std::string GetName(int) {
    if constexpr (requires { typename T::scalar; })
      return backend_name<typename T::space>() + "_" + (sizeof(typename T::scalar) == 4 ? "float" : "double");
    else
      return backend_name<T>();
  }
};

}  // namespace kfactor::test
