#pragma once
/// \file
/// The BALS tiled sparse format (Chen et al., TPDS 2021, section 4.1), built
/// from the text and Fig. 6 (the printed Algorithm 1 has defects; see the
/// digest 001-bals.md section 2).
///
/// R (m x n) is cut into xb x yb tiles numbered row-major: tile
/// t = rb * ntc + tc for row block rb < ceil(m / xb) and tile column
/// tc < ntc = ceil(n / yb). A *segment* is one row of one tile: segment
/// s = t * xb + rho (rho < xb) lies in tile s / xb. Five arrays:
///  * value[nnz]       the nonzeros in tile order, then row in tile, then CSR
///                     (column) order;
///  * tile_colidx[...] per tile, its distinct columns in order of first
///                     appearance (row-major scan of the tile); global ids,
///                     or, when a column map is given, the mapped ids;
///  * tile_ptr[tiles+1] offsets into tile_colidx; equal neighbours = a vacant
///                     tile; the last entry is nnz - redundancy;
///  * seg_colidx[nnz]  per nonzero, the local slot of its column within its
///                     tile (tile_colidx[tile_ptr[t] + slot] is the column);
///  * seg_ptr[tiles*xb+1] offsets of the segments into value / seg_colidx;
///                     equal neighbours = a vacant segment.
/// A row of a tile is padded when m is not a multiple of xb (rows >= m are
/// vacant segments of the last row block).
///
/// The builder runs on the host (parallel over row blocks in the default host
/// execution space) and copies to the target memory space; it is part of the
/// preprocessing time the ALS solver reports.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::als {

template <class T, class MemorySpace>
struct BalsMatrix {
  ordinal_t num_rows = 0, num_cols = 0;
  int xb = 1, yb = 1;
  ordinal_t num_row_blocks = 0;  ///< ceil(m / xb)
  ordinal_t num_tile_cols = 0;   ///< ceil(n / yb)
  int max_tile_columns = 0;      ///< largest number of distinct columns in one tile (<= yb)
  Kokkos::View<T*, MemorySpace> value;
  Kokkos::View<ordinal_t*, MemorySpace> tile_colidx;
  Kokkos::View<offset_t*, MemorySpace> tile_ptr;
  Kokkos::View<int*, MemorySpace> seg_colidx;
  Kokkos::View<offset_t*, MemorySpace> seg_ptr;

  [[nodiscard]] std::int64_t num_tiles() const { return std::int64_t(num_row_blocks) * num_tile_cols; }
  [[nodiscard]] offset_t nnz() const { return value.extent(0); }
};

/// The paper's Table 3 statistics of one BALS structure.
struct BalsStats {
  std::int64_t tiles = 0;
  std::int64_t vacant_tiles = 0;
  std::int64_t segments_in_occupied_tiles = 0;  ///< xb * (tiles - vacant tiles), real rows only
  std::int64_t vacant_segments = 0;             ///< vacant segments of occupied tiles (real rows only)
  std::int64_t distinct_tile_columns = 0;       ///< tile_ptr[last]: Y-row loads per half-step
  std::int64_t redundancy = 0;                  ///< nnz - distinct_tile_columns
  [[nodiscard]] double vacant_tiles_percent() const { return tiles ? 100.0 * vacant_tiles / tiles : 0.0; }
  [[nodiscard]] double vacant_segments_percent() const {
    return segments_in_occupied_tiles ? 100.0 * vacant_segments / segments_in_occupied_tiles : 0.0;
  }
};

/// Builds the BALS format of a host CSR (sorted columns per row). `col_map`,
/// when non-empty, relabels the columns stored in tile_colidx (tile windows
/// and first-appearance order use the CSR's own column ids).
template <class T>
BalsMatrix<T, Kokkos::HostSpace> build_bals_host(const CsrMatrix<T, Kokkos::HostSpace>& A, int xb, int yb,
                                                 const std::vector<ordinal_t>& col_map = {}) {
  if (xb < 1 || yb < 1)
    throw UsageError("BALS tile must be at least 1 x 1, got " + std::to_string(xb) + " x " + std::to_string(yb));
  BalsMatrix<T, Kokkos::HostSpace> B;
  const ordinal_t m = A.num_rows(), n = A.num_cols;
  B.num_rows = m;
  B.num_cols = n;
  B.xb = xb;
  B.yb = yb;
  B.num_row_blocks = (m + xb - 1) / xb;
  B.num_tile_cols = (n + yb - 1) / yb;
  const std::int64_t ntc = B.num_tile_cols, nrb = B.num_row_blocks;
  const std::int64_t tiles = nrb * ntc;
  const offset_t nnz = A.nnz();
  auto rm = A.row_map;
  auto ent = A.entries;
  auto val = A.values;
  B.tile_ptr = Kokkos::View<offset_t*, Kokkos::HostSpace>("kfactor::bals::tile_ptr", tiles + 1);
  B.seg_ptr = Kokkos::View<offset_t*, Kokkos::HostSpace>("kfactor::bals::seg_ptr", tiles * xb + 1);
  B.value =
      Kokkos::View<T*, Kokkos::HostSpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::bals::value"), nnz);
  B.seg_colidx = Kokkos::View<int*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::bals::seg_colidx"), nnz);
  auto tile_ptr = B.tile_ptr;
  auto seg_ptr = B.seg_ptr;
  using HostExec = Kokkos::DefaultHostExecutionSpace;
  // Pass 1, per row block: segment lengths and distinct columns per tile.
  // Columns of a row are sorted, so a row's segment of tile column tc is a
  // contiguous run of its entries.
  Kokkos::parallel_for("kfactor::bals::count", Kokkos::RangePolicy<HostExec>(0, nrb), [&](std::int64_t rb) {
    std::vector<int> seen(yb, -1);
    const ordinal_t r0 = ordinal_t(rb * xb);
    const ordinal_t r1 = std::min<ordinal_t>(m, ordinal_t(r0 + xb));
    std::vector<offset_t> cursor(xb);
    for (ordinal_t r = r0; r < r1; ++r) cursor[r - r0] = rm(r);
    for (std::int64_t tc = 0; tc < ntc; ++tc) {
      const std::int64_t t = rb * ntc + tc;
      const ordinal_t c1 = ordinal_t(std::min<std::int64_t>(n, (tc + 1) * yb));
      std::int64_t distinct = 0;
      for (ordinal_t r = r0; r < r1; ++r) {
        offset_t e = cursor[r - r0];
        const offset_t e0 = e;
        while (e < rm(r + 1) && ent(e) < c1) {
          const int lc = int(ent(e) - tc * yb);
          if (seen[lc] != int(tc)) {
            seen[lc] = int(tc);
            ++distinct;
          }
          ++e;
        }
        seg_ptr(t * xb + (r - r0) + 1) = e - e0;
        cursor[r - r0] = e;
      }
      tile_ptr(t + 1) = offset_t(distinct);
    }
  });
  // Prefix sums (sequential: deterministic and cheap next to the passes).
  for (std::int64_t t = 0; t < tiles; ++t) tile_ptr(t + 1) += tile_ptr(t);
  for (std::int64_t s = 0; s < tiles * xb; ++s) seg_ptr(s + 1) += seg_ptr(s);
  const offset_t distinct_total = tile_ptr(tiles);
  B.tile_colidx = Kokkos::View<ordinal_t*, Kokkos::HostSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::bals::tile_colidx"), distinct_total);
  auto tile_colidx = B.tile_colidx;
  auto value = B.value;
  auto seg_colidx = B.seg_colidx;
  const bool mapped = !col_map.empty();
  const ordinal_t* cmap = mapped ? col_map.data() : nullptr;
  int max_cols = 0;
  // Pass 2: fill value, seg_colidx (local slots) and tile_colidx in
  // first-appearance order.
  Kokkos::parallel_reduce(
      "kfactor::bals::fill", Kokkos::RangePolicy<HostExec>(0, nrb),
      [&](std::int64_t rb, int& mx) {
        std::vector<int> slot(yb, -1);
        std::vector<int> touched;
        touched.reserve(yb);
        const ordinal_t r0 = ordinal_t(rb * xb);
        const ordinal_t r1 = std::min<ordinal_t>(m, ordinal_t(r0 + xb));
        std::vector<offset_t> cursor(xb);
        for (ordinal_t r = r0; r < r1; ++r) cursor[r - r0] = rm(r);
        for (std::int64_t tc = 0; tc < ntc; ++tc) {
          const std::int64_t t = rb * ntc + tc;
          const ordinal_t c1 = ordinal_t(std::min<std::int64_t>(n, (tc + 1) * yb));
          int next = 0;
          for (ordinal_t r = r0; r < r1; ++r) {
            offset_t e = cursor[r - r0];
            offset_t out = seg_ptr(t * xb + (r - r0));
            while (e < rm(r + 1) && ent(e) < c1) {
              const int lc = int(ent(e) - tc * yb);
              if (slot[lc] < 0) {
                slot[lc] = next;
                tile_colidx(tile_ptr(t) + next) = mapped ? cmap[ent(e)] : ent(e);
                touched.push_back(lc);
                ++next;
              }
              value(out) = val(e);
              seg_colidx(out) = slot[lc];
              ++out;
              ++e;
            }
            cursor[r - r0] = e;
          }
          for (int lc : touched) slot[lc] = -1;
          touched.clear();
          if (next > mx) mx = next;
        }
      },
      Kokkos::Max<int>(max_cols));
  B.max_tile_columns = max_cols;
  return B;
}

/// Deep copy of a BALS structure into another memory space.
template <class DstMemorySpace, class T, class SrcMemorySpace>
BalsMatrix<T, DstMemorySpace> copy_to(const BalsMatrix<T, SrcMemorySpace>& A) {
  BalsMatrix<T, DstMemorySpace> B;
  B.num_rows = A.num_rows;
  B.num_cols = A.num_cols;
  B.xb = A.xb;
  B.yb = A.yb;
  B.num_row_blocks = A.num_row_blocks;
  B.num_tile_cols = A.num_tile_cols;
  B.max_tile_columns = A.max_tile_columns;
  B.value = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.value);
  B.tile_colidx = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.tile_colidx);
  B.tile_ptr = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.tile_ptr);
  B.seg_colidx = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.seg_colidx);
  B.seg_ptr = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, A.seg_ptr);
  return B;
}

/// Table 3 statistics (host structure). Segments of rows >= m (padding of the
/// last row block) are not counted.
template <class T>
BalsStats bals_stats(const BalsMatrix<T, Kokkos::HostSpace>& B) {
  BalsStats s;
  s.tiles = B.num_tiles();
  for (std::int64_t t = 0; t < s.tiles; ++t) {
    if (B.tile_ptr(t + 1) == B.tile_ptr(t)) {
      ++s.vacant_tiles;
      continue;
    }
    const std::int64_t rb = t / B.num_tile_cols;
    for (int rho = 0; rho < B.xb; ++rho) {
      if (rb * B.xb + rho >= B.num_rows) break;
      ++s.segments_in_occupied_tiles;
      const std::int64_t seg = t * B.xb + rho;
      if (B.seg_ptr(seg + 1) == B.seg_ptr(seg)) ++s.vacant_segments;
    }
  }
  s.distinct_tile_columns = std::int64_t(B.tile_ptr(s.tiles));
  s.redundancy = std::int64_t(B.nnz()) - s.distinct_tile_columns;
  return s;
}

/// Decodes a host BALS structure back to CSR (tests: the round trip must give
/// R exactly). Columns are tile_colidx ids (mapped ids when a map was used).
template <class T>
CsrMatrix<T, Kokkos::HostSpace> bals_to_csr(const BalsMatrix<T, Kokkos::HostSpace>& B) {
  const ordinal_t m = B.num_rows;
  CsrMatrix<T, Kokkos::HostSpace> A;
  A.num_cols = B.num_cols;
  A.row_map = Kokkos::View<offset_t*, Kokkos::HostSpace>("row_map", std::size_t(m) + 1);
  A.entries = Kokkos::View<ordinal_t*, Kokkos::HostSpace>("entries", B.nnz());
  A.values = Kokkos::View<T*, Kokkos::HostSpace>("values", B.nnz());
  const std::int64_t ntc = B.num_tile_cols;
  for (ordinal_t r = 0; r < m; ++r) {
    const std::int64_t rb = r / B.xb, rho = r % B.xb;
    offset_t len = 0;
    for (std::int64_t tc = 0; tc < ntc; ++tc) {
      const std::int64_t seg = (rb * ntc + tc) * B.xb + rho;
      len += B.seg_ptr(seg + 1) - B.seg_ptr(seg);
    }
    A.row_map(r + 1) = A.row_map(r) + len;
  }
  for (ordinal_t r = 0; r < m; ++r) {
    const std::int64_t rb = r / B.xb, rho = r % B.xb;
    offset_t out = A.row_map(r);
    for (std::int64_t tc = 0; tc < ntc; ++tc) {
      const std::int64_t t = rb * ntc + tc;
      const std::int64_t seg = t * B.xb + rho;
      for (offset_t k = B.seg_ptr(seg); k < B.seg_ptr(seg + 1); ++k) {
        A.entries(out) = B.tile_colidx(B.tile_ptr(t) + B.seg_colidx(k));
        A.values(out) = B.value(k);
        ++out;
      }
    }
  }
  return A;
}

}  // namespace kfactor::als
