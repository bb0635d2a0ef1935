#pragma once
/// \file
/// Host-side construction of an SDDMM plan's layout (compiled once in
/// src/sddmm/plan_build.cpp; independent of the value and input types).
///
/// The *orientation* is S itself (staged matrix A, rows of S) or S^T (staged
/// B, rows = S's columns) as eq. 4 decides. The *tiled layout* orders the
/// nonzeros tile by tile (tiles = contiguous ranges of T_j streamed indices),
/// rows ascending within a tile, indices ascending within a row; `dst(e)` is
/// the nonzero's position in S's CSR, where its output and value live.
///
/// The *panel layout* (panel_rows > 0) orders each tile's active rows by
/// their nonzero count in the tile (most first, ties by row), cuts them into
/// panels of panel_rows rows, and orders each panel's nonzeros by streamed
/// index, then row. active_rows lists each panel's rows, lrow holds each
/// nonzero's index into active_rows, and every panel's nonzeros are cut into
/// blocks of at most panel_nnz (blocks never straddle panels).

#include <kfactor/core/matrix.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>

#include <cstdint>
#include <vector>

namespace kfactor::detail {

struct SddmmLayoutRequest {
  bool transposed = false;     ///< orientation S^T (stage B)
  ordinal_t tile_cols = 1;     ///< T_j over the streamed index
  bool rowsplit = true;        ///< build row-split work items
  bool nzsplit = false;        ///< keep the staged row of every layout position (rows)
  int chunk = 32;              ///< max nonzeros per item
  bool sort_items = true;      ///< longest items first within a tile
  bool sm_l2 = false;          ///< build active-row lists, blocks, lrow
  bool active_rows = true;     ///< false: every staged row is "active" in every tile
  int ti = 1;                  ///< SM-L2 rows per block
  ordinal_t panel_rows = 0;    ///< > 0: the panel layout (SddmmKernel::panels) with this many staged rows per panel
  offset_t panel_nnz = 32768;  ///< panels: max nonzeros per block (work item)
};

struct SddmmHostLayout {
  ordinal_t staged_rows = 0, streamed_rows = 0;
  ordinal_t tile_cols = 1;
  std::int64_t ntiles = 1;
  bool identity = true;                       ///< the layout is S's CSR itself (cols = S.entries, dst(e) = e)
  std::vector<offset_t> tile_offsets;         ///< ntiles + 1 nonzero offsets of the tiles in the layout
  std::vector<ordinal_t> cols;                ///< streamed index per layout nonzero (empty when identity)
  std::vector<offset_t> dst;                  ///< S position per layout nonzero (empty when identity)
  std::vector<SddmmItem> items;               ///< row-split work items
  std::vector<ordinal_t> rows;                ///< nzsplit: staged row per layout position
  std::vector<ordinal_t> active_rows;         ///< SM-L2: active staged rows, tile after tile
  std::vector<offset_t> tile_active_offsets;  ///< ntiles + 1 offsets into active_rows
  std::vector<ordinal_t> lrow;                ///< SM-L2: index into active_rows per layout nonzero
  std::vector<SddmmBlock> blocks;             ///< SM-L2 blocks
};

/// Checks a host CSR pattern: row_map starts at 0, never decreases, ends at
/// nnz; column indices in [0, n) and strictly increasing within each row.
/// Throws InputError naming the first offence.
void validate_sddmm_pattern(const offset_t* row_map, const ordinal_t* entries, ordinal_t m, ordinal_t n, offset_t nnz);

/// A layout's streamed indices for the hinted nzsplit kernel: every index
/// outside the `budget` most used ones (those of at least two nonzeros,
/// ties to the lower index) carries sddmm_cold_bit.
struct SddmmHintedCols {
  std::vector<ordinal_t> cols;
  std::size_t hot = 0;  ///< indices kept (<= budget)
};
SddmmHintedCols mark_cold_indices(std::vector<ordinal_t> cols, ordinal_t num_streamed, std::size_t budget);

/// Sets sddmm_one_row_bit on every position of each batch of `batch`
/// consecutive layout positions (the last batch may be shorter) whose staged
/// rows are all equal, so the nzsplit kernel needs no shuffles to find out.
void mark_one_row_batches(std::vector<ordinal_t>& rows, int batch);

SddmmHostLayout build_sddmm_layout(const offset_t* row_map, const ordinal_t* entries, ordinal_t m, ordinal_t n,
                                   offset_t nnz, const SddmmLayoutRequest& req);

}  // namespace kfactor::detail
