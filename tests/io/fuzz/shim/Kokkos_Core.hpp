#pragma once
// Stand-in for Kokkos_Core.hpp in the fuzz builds only. The readers
// (src/io/read.cpp) use no Kokkos; core/matrix.hpp merely names Kokkos types
// in templates the readers never instantiate. With this shim the fuzz targets
// compile with clang's -fsanitize=fuzzer against nothing but the C++ library,
// also where Kokkos was built with g++/OpenMP and clang has no OpenMP runtime
// (Debian's clang without libomp-dev).
#define KOKKOS_INLINE_FUNCTION inline
#define KOKKOS_FUNCTION
namespace Kokkos {
struct LayoutRight {};
struct HostSpace {};
struct DefaultExecutionSpace {
  using memory_space = HostSpace;
};
template <class DataType, class... Properties>
class View;
}  // namespace Kokkos
