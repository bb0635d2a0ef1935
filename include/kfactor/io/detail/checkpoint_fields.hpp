#pragma once
/// \file
/// Internals of io/checkpoint.hpp that need no HDF5: the type-erased form of
/// one state field (a host, row-major block of elements) and the copies
/// between a Kokkos View in any memory space and such a block.

#include <kfactor/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

namespace kfactor::detail {

/// Element types a checkpoint stores (HDF5 native integer / IEEE types).
enum class CheckpointType : int { i8, u8, i16, u16, i32, u32, i64, u64, f32, f64 };

inline const char* to_string(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8: return "int8";
    case CheckpointType::u8: return "uint8";
    case CheckpointType::i16: return "int16";
    case CheckpointType::u16: return "uint16";
    case CheckpointType::i32: return "int32";
    case CheckpointType::u32: return "uint32";
    case CheckpointType::i64: return "int64";
    case CheckpointType::u64: return "uint64";
    case CheckpointType::f32: return "float32";
    case CheckpointType::f64: return "float64";
  }
  return "unknown";
}

/// Bytes per element.
inline std::size_t size_of(CheckpointType t) {
  switch (t) {
    case CheckpointType::i8:
    case CheckpointType::u8: return 1;
    case CheckpointType::i16:
    case CheckpointType::u16: return 2;
    case CheckpointType::i32:
    case CheckpointType::u32:
    case CheckpointType::f32: return 4;
    default: return 8;
  }
}

template <class T>
constexpr CheckpointType checkpoint_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) {
    return CheckpointType::f32;
  } else if constexpr (std::is_same_v<U, double>) {
    return CheckpointType::f64;
  } else if constexpr (std::is_integral_v<U>) {
    constexpr bool s = std::is_signed_v<U> && !std::is_same_v<U, bool>;
    if constexpr (sizeof(U) == 1) return s ? CheckpointType::i8 : CheckpointType::u8;
    if constexpr (sizeof(U) == 2) return s ? CheckpointType::i16 : CheckpointType::u16;
    if constexpr (sizeof(U) == 4) return s ? CheckpointType::i32 : CheckpointType::u32;
    if constexpr (sizeof(U) == 8) return s ? CheckpointType::i64 : CheckpointType::u64;
  } else {
    static_assert(sizeof(U) == 0, "checkpoint fields hold float, double or integer elements");
  }
}

/// One field, or this rank's row block of it, as host row-major memory.
/// A scalar has rank 0 and one element; a rank-1 field has cols == 1.
struct FieldBlock {
  std::string name;
  CheckpointType type = CheckpointType::f64;
  int rank = 0;
  std::int64_t global_rows = 1;  ///< rows of the whole field (the dataset)
  std::int64_t cols = 1;
  std::int64_t first_row = 0;   ///< first row held here
  std::int64_t local_rows = 1;  ///< rows held here
  void* data = nullptr;         ///< local_rows * cols elements, row-major
  std::shared_ptr<void> keep;   ///< keeps `data` alive
  bool partitioned = false;     ///< rows are spread over MPI ranks
};

/// Everything a stored dataset says about itself.
struct FieldInfo {
  std::string name;
  CheckpointType type = CheckpointType::f64;
  int rank = 0;
  std::int64_t rows = 1, cols = 1;
  std::uint64_t checksum = 0;
};

/// Sum over elements of a mixed hash of (global linear index, element bits):
/// order-free, so row blocks hashed on different ranks add up to the hash
/// of the whole dataset. Stored as each dataset's `checksum` attribute.
std::uint64_t block_checksum(const void* data, CheckpointType type, std::int64_t first_index, std::int64_t count);

template <class V>
inline constexpr bool is_plain_layout_v =
    std::is_same_v<typename V::array_layout, Kokkos::LayoutRight> ||
    (V::rank() == 1 && std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft>);

/// Host row-major copy of a rank-1 or rank-2 view from any memory space.
/// Contiguous row-major views are mirrored directly; other layouts are first
/// copied to a LayoutRight view in their own space (a same-space deep_copy
/// may change layout; a cross-space one may not).
template <class V>
FieldBlock view_to_block(const std::string& name, const V& v) {
  static_assert(V::rank() == 1 || V::rank() == 2, "checkpoint views have rank 1 or 2");
  using T = typename V::non_const_value_type;
  using Mem = typename V::memory_space;
  FieldBlock b;
  b.name = name;
  b.type = checkpoint_type_of<T>();
  b.rank = static_cast<int>(V::rank());
  b.global_rows = b.local_rows = static_cast<std::int64_t>(v.extent(0));
  b.cols = V::rank() == 2 ? static_cast<std::int64_t>(v.extent(1)) : 1;
  bool direct = false;
  if constexpr (is_plain_layout_v<V>) direct = v.span_is_contiguous();
  if (direct) {
    if constexpr (is_plain_layout_v<V>) {
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
      b.data = const_cast<T*>(h.data());
      b.keep = std::make_shared<decltype(h)>(h);
      return b;
    }
  }
  if constexpr (V::rank() == 1) {
    Kokkos::View<T*, Kokkos::LayoutRight, Mem> tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, name), v.extent(0));
    Kokkos::deep_copy(tmp, v);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tmp);
    b.data = h.data();
    b.keep = std::make_shared<decltype(h)>(h);
  } else {
    Kokkos::View<T**, Kokkos::LayoutRight, Mem> tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, name), v.extent(0),
                                                    v.extent(1));
    Kokkos::deep_copy(tmp, v);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tmp);
    b.data = h.data();
    b.keep = std::make_shared<decltype(h)>(h);
  }
  return b;
}

/// The type and shape of `v` as a block, without data.
template <class V>
FieldBlock shape_of_view(const std::string& name, const V& v) {
  static_assert(V::rank() == 1 || V::rank() == 2, "checkpoint views have rank 1 or 2");
  FieldBlock b;
  b.name = name;
  b.type = checkpoint_type_of<typename V::non_const_value_type>();
  b.rank = static_cast<int>(V::rank());
  b.global_rows = b.local_rows = static_cast<std::int64_t>(v.extent(0));
  b.cols = V::rank() == 2 ? static_cast<std::int64_t>(v.extent(1)) : 1;
  return b;
}

/// A host buffer shaped like `v`, to read a dataset (or a row block) into.
template <class V>
FieldBlock block_for_view(const std::string& name, const V& v) {
  using T = typename V::non_const_value_type;
  FieldBlock b = shape_of_view(name, v);
  auto buf = std::shared_ptr<T[]>(new T[static_cast<std::size_t>(b.local_rows * b.cols)]);
  b.data = buf.get();
  b.keep = buf;
  return b;
}

/// Copies a block read by block_for_view() into `v` (any space and layout).
template <class V>
void block_to_view(const FieldBlock& b, const V& v) {
  using T = typename V::value_type;
  static_assert(!std::is_const_v<T>, "a checkpoint is loaded into views of non-const elements");
  using Mem = typename V::memory_space;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  T* p = static_cast<T*>(b.data);
  if constexpr (V::rank() == 1) {
    using L = std::conditional_t<is_plain_layout_v<V>, typename V::array_layout, Kokkos::LayoutRight>;
    Kokkos::View<T*, L, Kokkos::HostSpace, Unmanaged> h(p, v.extent(0));
    if (is_plain_layout_v<V> && v.span_is_contiguous()) {
      if constexpr (is_plain_layout_v<V>) Kokkos::deep_copy(v, h);
    } else {
      Kokkos::View<T*, Kokkos::LayoutRight, Mem> tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, b.name),
                                                     v.extent(0));
      Kokkos::deep_copy(tmp, Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged>(p, v.extent(0)));
      Kokkos::deep_copy(v, tmp);
    }
  } else {
    Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged> h(p, v.extent(0), v.extent(1));
    if (is_plain_layout_v<V> && v.span_is_contiguous()) {
      if constexpr (is_plain_layout_v<V>) Kokkos::deep_copy(v, h);
    } else {
      Kokkos::View<T**, Kokkos::LayoutRight, Mem> tmp(Kokkos::view_alloc(Kokkos::WithoutInitializing, b.name),
                                                      v.extent(0), v.extent(1));
      Kokkos::deep_copy(tmp, h);
      Kokkos::deep_copy(v, tmp);
    }
  }
  Kokkos::fence("kfactor::checkpoint_load");
}

}  // namespace kfactor::detail
