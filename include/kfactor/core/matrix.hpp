#pragma once
/// \file
/// kfactor's matrix types.
///
/// Dense factors are rank-2 Kokkos Views. The interchange layout is
/// LayoutRight (row-major): one row of K features is contiguous, which is what
/// per-row GPU work (SDDMM, ALS, BMF rows, MNMF rows) reads; kernels that need
/// another layout say so in their own header and convert once.
///
/// Sparse matrices are CSR with the members of KokkosSparse::CrsMatrix (row
/// map, column indices, values, column count) so that Kokkos Kernels' SpMV/SpMM
/// can wrap them without copies. Column indices are 32-bit (every input we
/// target has fewer than 2^31 columns); row offsets are 64-bit so that nnz may
/// exceed 2^31. CooMatrix is the host-side triplet form the readers produce.

#include <Kokkos_Core.hpp>

// nvcc 12.9 and later lay out [[no_unique_address]] members differently in
// host and device code, so a Kokkos whose mdspan-based View uses the
// attribute passes corrupt Views to every kernel (silent wrong results and
// illegal addresses; kokkos/mdspan#434, kokkos/kokkos#8615). Refuse to build
// against such a Kokkos rather than compute garbage.
#if defined(__NVCC__) && (__CUDACC_VER_MAJOR__ * 100 + __CUDACC_VER_MINOR__ * 10 >= 1290) && \
    defined(MDSPAN_IMPL_USE_ATTRIBUTE_NO_UNIQUE_ADDRESS) &&                                  \
    !defined(MDSPAN_IMPL_USE_FAKE_ATTRIBUTE_NO_UNIQUE_ADDRESS) && !defined(KOKKOS_ENABLE_IMPL_VIEW_LEGACY)
#error \
    "kfactor: this Kokkos enables [[no_unique_address]] in View under nvcc >= 12.9, which breaks View layout between host and device; use a Kokkos that includes kokkos/kokkos#8615 (or disable the attribute in its mdspan config.hpp)"
#endif

#include <cstdint>
#include <vector>

namespace kfactor {

using ordinal_t = int;         ///< row/column index type
using offset_t = std::size_t;  ///< CSR row offset type (64-bit nnz)

/// Dense row-major matrix in MemorySpace.
template <class T, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
using DenseMatrix = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>;

/// Compressed sparse rows. Within a row, column indices are strictly
/// increasing (readers sort and reject or merge duplicates; see io/).
template <class T, class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
struct CsrMatrix {
  using value_type = T;
  using ordinal_type = ordinal_t;
  using size_type = offset_t;
  using memory_space = MemorySpace;

  Kokkos::View<size_type*, MemorySpace> row_map;     ///< num_rows()+1 offsets
  Kokkos::View<ordinal_type*, MemorySpace> entries;  ///< column index per nonzero
  Kokkos::View<T*, MemorySpace> values;              ///< value per nonzero
  ordinal_type num_cols = 0;

  CsrMatrix() = default;
  CsrMatrix(Kokkos::View<size_type*, MemorySpace> rm, Kokkos::View<ordinal_type*, MemorySpace> e,
            Kokkos::View<T*, MemorySpace> v, ordinal_type ncols)
      : row_map(rm), entries(e), values(v), num_cols(ncols) {}

  KOKKOS_INLINE_FUNCTION ordinal_type num_rows() const {
    return row_map.extent(0) > 0 ? static_cast<ordinal_type>(row_map.extent(0) - 1) : 0;
  }
  KOKKOS_INLINE_FUNCTION size_type nnz() const { return entries.extent(0); }
};

/// Host triplets (row, col, value), 0-based, in file order unless sorted.
template <class T>
struct CooMatrix {
  std::int64_t num_rows = 0;
  std::int64_t num_cols = 0;
  std::vector<ordinal_t> rows;
  std::vector<ordinal_t> cols;
  std::vector<T> values;

  [[nodiscard]] std::size_t nnz() const { return rows.size(); }
};

}  // namespace kfactor
