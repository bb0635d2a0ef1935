#pragma once
/// \file
/// How a rank-2 view looks to a BLAS: row- or column-major with a leading
/// dimension, decided at run time from its strides, so subviews (column
/// blocks of row-major factors) go to the vendor library too.

namespace kfactor::detail {

/// A rank-2 view seen as a BLAS matrix: row-major (unit stride along a row)
/// or column-major, with its leading dimension; `ok` is false when neither
/// stride is 1.
struct BlasShape {
  bool ok = false;
  bool row_major = true;
  int ld = 1;
};

template <class V>
BlasShape blas_shape(const V& X) {
  const auto r = X.extent(0), c = X.extent(1);
  const auto s0 = X.stride(0), s1 = X.stride(1);
  BlasShape b;
  if (r == 0 || c == 0) return {true, true, 1};  // never read; callers handle k = 0 themselves
  if (c <= 1 || s1 == 1) {                       // row-major: rows of c contiguous elements, ld >= c
    b.row_major = true;
    b.ld = static_cast<int>(r <= 1 ? (c > 0 ? c : 1) : s0);
    b.ok = b.ld >= static_cast<int>(c > 0 ? c : 1);
    if (b.ok) return b;
  }
  if (r <= 1 || s0 == 1) {  // column-major, ld >= r
    b.row_major = false;
    b.ld = static_cast<int>(c <= 1 ? (r > 0 ? r : 1) : s1);
    b.ok = b.ld >= static_cast<int>(r > 0 ? r : 1);
  }
  return b;
}

}  // namespace kfactor::detail
