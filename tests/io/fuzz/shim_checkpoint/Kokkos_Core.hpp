#pragma once
// Stand-in for Kokkos_Core.hpp in the checkpoint fuzz build only (see
// ../shim/Kokkos_Core.hpp for why the fuzz builds avoid the real Kokkos).
// src/checkpoint/checkpoint.cpp's reader needs no Kokkos at run time: its one
// parallel loop runs only when Kokkos::is_initialized(), false here. The
// public headers merely name Kokkos in templates the fuzz target never
// instantiates, so declarations suffice.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#define KOKKOS_INLINE_FUNCTION inline
#define KOKKOS_FUNCTION
#define KOKKOS_LAMBDA [=]
namespace Kokkos {
struct LayoutRight {};
struct LayoutLeft {};
struct HostSpace;
struct DefaultHostExecutionSpace {
  using memory_space = HostSpace;
};
struct HostSpace {
  using execution_space = DefaultHostExecutionSpace;
};
struct DefaultExecutionSpace {
  using memory_space = HostSpace;
};
struct Unmanaged_t {};
inline constexpr unsigned Unmanaged = 1;
struct AUTO_t {};
inline constexpr AUTO_t AUTO{};
struct WithoutInitializing_t {};
inline constexpr WithoutInitializing_t WithoutInitializing{};
template <unsigned>
struct MemoryTraits {};
template <unsigned N, class...>
struct Rank {};
template <class... P>
struct RangePolicy {
  template <class... A>
  RangePolicy(A&&...) {}
};
template <class... P>
struct MDRangePolicy {
  template <class... A>
  MDRangePolicy(A&&...) {}
};
template <class... P>
struct TeamPolicy {
  template <class... A>
  TeamPolicy(A&&...) {}
};
template <class DataType, class... Properties>
class View;
template <class T>
inline constexpr bool is_view_v = false;
template <class A, class B>
struct SpaceAccessibility {
  static constexpr bool accessible = true;
};
inline bool is_initialized() { return false; }
template <class... A>
void parallel_for(A&&...) {
  std::abort();
}
template <class... A>
void parallel_reduce(A&&...) {
  std::abort();
}
template <class... A>
void deep_copy(A&&...) {
  std::abort();
}
template <class... A>
auto create_mirror_view_and_copy(A&&...) {
  std::abort();
}
template <class... A>
auto view_alloc(A&&...) {
  std::abort();
}
template <class... A>
void fence(A&&...) {}
template <class... A>
auto TeamThreadRange(A&&...) {
  std::abort();
}
template <class... A>
auto PerTeam(A&&...) {
  std::abort();
}
template <class... A>
void single(A&&...) {
  std::abort();
}
template <class T>
T abs(T x) {
  return x < 0 ? -x : x;
}
template <class T>
T max(T a, T b) {
  return a < b ? b : a;
}
template <class To, class From>
To bit_cast(const From& f) {
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}
}  // namespace Kokkos
