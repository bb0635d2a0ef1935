#include <kfactor/core/error.hpp>
#include <kfactor/kernels/detail/sddmm_nzsplit.hpp>
#include <kfactor/sddmm/detail/plan_build.hpp>
#include <kfactor/sddmm/options.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace kfactor::detail {

void validate_sddmm_pattern(const offset_t* row_map, const ordinal_t* entries, ordinal_t m, ordinal_t n, offset_t nnz) {
  if (m < 0 || n < 0) throw InputError("sddmm: S has a negative dimension");
  if (row_map[0] != 0) throw InputError("sddmm: S's row_map must start at 0");
  if (row_map[m] != nnz)
    throw InputError("sddmm: S's row_map ends at " + std::to_string(row_map[m]) + " but S has " + std::to_string(nnz) +
                     " column indices");
  for (ordinal_t i = 0; i < m; ++i) {
    if (row_map[i + 1] < row_map[i]) throw InputError("sddmm: S's row_map decreases at row " + std::to_string(i));
    for (offset_t e = row_map[i]; e < row_map[i + 1]; ++e) {
      if (entries[e] < 0 || entries[e] >= n)
        throw InputError("sddmm: S's nonzero " + std::to_string(e) + " in row " + std::to_string(i) + " has column " +
                         std::to_string(entries[e]) + ", outside 0.." + std::to_string(n - 1));
      if (e > row_map[i] && entries[e] <= entries[e - 1])
        throw InputError("sddmm: S's row " + std::to_string(i) +
                         " has unsorted or duplicate column indices (sort and merge them first)");
    }
  }
}

SddmmHintedCols mark_cold_indices(std::vector<ordinal_t> cols, ordinal_t num_streamed, std::size_t budget) {
  std::vector<offset_t> uses(static_cast<std::size_t>(num_streamed), 0);
  for (const ordinal_t c : cols) ++uses[static_cast<std::size_t>(c)];
  std::vector<ordinal_t> order(uses.size());
  std::iota(order.begin(), order.end(), ordinal_t(0));
  std::stable_sort(order.begin(), order.end(), [&](ordinal_t a, ordinal_t b) { return uses[a] > uses[b]; });
  std::vector<char> hot(uses.size(), 0);
  SddmmHintedCols h;
  for (const ordinal_t c : order) {
    if (h.hot >= budget || uses[c] < 2) break;
    hot[c] = 1;
    ++h.hot;
  }
  for (ordinal_t& c : cols)
    if (!hot[static_cast<std::size_t>(c)]) c |= sddmm_cold_bit;
  h.cols = std::move(cols);
  return h;
}

void mark_one_row_batches(std::vector<ordinal_t>& rows, int batch) {
  const auto b = static_cast<std::size_t>(std::max(batch, 1));
  for (std::size_t first = 0; first < rows.size(); first += b) {
    const std::size_t last = std::min(rows.size(), first + b);
    if (std::all_of(rows.begin() + first, rows.begin() + last, [&](ordinal_t r) { return r == rows[first]; }))
      for (std::size_t e = first; e < last; ++e) rows[e] |= sddmm_one_row_bit;
  }
}

namespace {
struct Segment {
  ordinal_t row;
  offset_t begin;
  offset_t len;
};

/// The panel layout (see plan_build.hpp) of tiles whose nonzeros are laid
/// out row by row in `segs` (L.cols and L.dst filled in that order).
void build_panels(SddmmHostLayout& L, std::vector<std::vector<Segment>>& segs, ordinal_t panel_rows,
                  offset_t panel_nnz) {
  struct Panel {
    std::size_t tile, first, count;  // segments [first, first + count) of segs[tile]
    ordinal_t active_begin;
    offset_t begin, end;
  };
  const auto ntiles = segs.size();
  const auto P = static_cast<std::size_t>(panel_rows);
  std::vector<Panel> panels;
  L.tile_active_offsets.assign(ntiles + 1, 0);
  for (std::size_t t = 0; t < ntiles; ++t) {
    auto& tile = segs[t];
    std::stable_sort(tile.begin(), tile.end(), [](const Segment& a, const Segment& b) { return a.len > b.len; });
    offset_t pos = L.tile_offsets[t];
    for (std::size_t a = 0; a < tile.size(); a += P) {
      Panel p{t, a, std::min(P, tile.size() - a), static_cast<ordinal_t>(L.active_rows.size()), pos, pos};
      for (std::size_t q = a; q < a + p.count; ++q) {
        L.active_rows.push_back(tile[q].row);
        p.end += tile[q].len;
      }
      pos = p.end;
      panels.push_back(p);
    }
    L.tile_active_offsets[t + 1] = static_cast<offset_t>(L.active_rows.size());
  }
  const std::size_t nnz = L.cols.size();
  std::vector<ordinal_t> cols(nnz), lrow(nnz);
  std::vector<offset_t> dst(nnz);
  using Host = Kokkos::DefaultHostExecutionSpace;
  Kokkos::parallel_for(
      "kfactor::sddmm_panel_layout", Kokkos::RangePolicy<Host, Kokkos::Schedule<Kokkos::Dynamic>>(0, panels.size()),
      [&](std::size_t i) {
        const Panel& p = panels[i];
        // The panel's nonzeros row by row (segments in panel order), then
        // stably by streamed index: rows ascend within one index.
        struct Entry {
          ordinal_t col;
          ordinal_t q;  // row within the panel
          offset_t e;   // position in the row-by-row layout
        };
        std::vector<Entry> entries;
        entries.reserve(static_cast<std::size_t>(p.end - p.begin));
        for (std::size_t q = 0; q < p.count; ++q) {
          const Segment& sg = segs[p.tile][p.first + q];
          for (offset_t e = sg.begin; e < sg.begin + sg.len; ++e)
            entries.push_back({L.cols[e], static_cast<ordinal_t>(q), e});
        }
        std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.col < b.col; });
        for (std::size_t k = 0; k < entries.size(); ++k) {
          const auto to = static_cast<std::size_t>(p.begin) + k;
          cols[to] = entries[k].col;
          dst[to] = L.dst[entries[k].e];
          lrow[to] = p.active_begin + entries[k].q;
        }
      });
  Host().fence();
  L.cols = std::move(cols);
  L.dst = std::move(dst);
  L.lrow = std::move(lrow);
  const offset_t chunk = std::max<offset_t>(panel_nnz, 1);
  for (const Panel& p : panels)
    for (offset_t b = p.begin; b < p.end; b += chunk)
      L.blocks.push_back(SddmmBlock{b, std::min(b + chunk, p.end), p.active_begin, static_cast<ordinal_t>(p.count)});
}
}  // namespace

SddmmHostLayout build_sddmm_layout(const offset_t* row_map, const ordinal_t* entries, ordinal_t m, ordinal_t n,
                                   offset_t nnz, const SddmmLayoutRequest& req) {
  SddmmHostLayout L;
  const bool tr = req.transposed;
  const ordinal_t R = tr ? n : m, C = tr ? m : n;
  L.staged_rows = R;
  L.streamed_rows = C;
  const ordinal_t tj = std::max<ordinal_t>(1, std::min<ordinal_t>(req.tile_cols, std::max<ordinal_t>(C, 1)));
  L.tile_cols = tj;
  L.ntiles = tile_count(C, tj);
  const auto ntiles = static_cast<std::size_t>(L.ntiles);

  // The orientation: S's CSR, or its CSC by a counting sort (rows ascending
  // within each column, since S is walked row by row).
  std::vector<offset_t> tptr, tpos;
  std::vector<ordinal_t> tidx;
  const offset_t* optr = row_map;
  const ordinal_t* oidx = entries;
  if (tr) {
    tptr.assign(static_cast<std::size_t>(n) + 1, 0);
    for (offset_t e = 0; e < nnz; ++e) ++tptr[static_cast<std::size_t>(entries[e]) + 1];
    for (ordinal_t j = 0; j < n; ++j) tptr[j + 1] += tptr[j];
    tidx.resize(nnz);
    tpos.resize(nnz);
    std::vector<offset_t> fill(tptr.begin(), tptr.end() - 1);
    for (ordinal_t i = 0; i < m; ++i)
      for (offset_t e = row_map[i]; e < row_map[i + 1]; ++e) {
        const offset_t p = fill[entries[e]]++;
        tidx[p] = i;
        tpos[p] = e;
      }
    optr = tptr.data();
    oidx = tidx.data();
  }

  // Row-split items index S's CSR directly in the normal orientation, tiled
  // or not (a row's nonzeros within one tile are contiguous in S, since its
  // columns are sorted): no copy, no indirection. nzsplit walks the layout
  // position by position, so it is S's CSR only when there is one tile.
  const bool panels = req.panel_rows > 0;
  L.identity = !tr && !req.sm_l2 && !panels && !(req.nzsplit && L.ntiles > 1);
  L.tile_offsets.assign(ntiles + 1, 0);
  for (offset_t e = 0; e < nnz; ++e) ++L.tile_offsets[static_cast<std::size_t>(oidx[e] / tj) + 1];
  for (std::size_t t = 0; t < ntiles; ++t) L.tile_offsets[t + 1] += L.tile_offsets[t];

  std::vector<offset_t> fill(L.tile_offsets.begin(), L.tile_offsets.end() - 1);
  if (!L.identity) {
    L.cols.resize(nnz);
    L.dst.resize(nnz);
  }
  if (req.nzsplit) L.rows.resize(static_cast<std::size_t>(nnz));
  std::vector<std::vector<Segment>> segs(ntiles);
  for (ordinal_t r = 0; r < R; ++r) {
    offset_t e = optr[r];
    const offset_t end = optr[r + 1];
    while (e < end) {
      const auto t = static_cast<std::size_t>(oidx[e] / tj);
      offset_t e2 = e + 1;
      while (e2 < end && static_cast<std::size_t>(oidx[e2] / tj) == t) ++e2;
      offset_t begin = e;
      if (!L.identity) {
        begin = fill[t];
        for (offset_t q = e; q < e2; ++q) {
          L.cols[fill[t]] = oidx[q];
          L.dst[fill[t]] = tr ? tpos[q] : q;
          ++fill[t];
        }
      }
      segs[t].push_back({r, begin, e2 - e});
      if (req.nzsplit) std::fill_n(L.rows.begin() + static_cast<std::ptrdiff_t>(begin), e2 - e, r);
      e = e2;
    }
  }

  if (panels) {
    if (req.panel_rows > 256) throw UsageError("sddmm: panels hold at most 256 staged rows");
    build_panels(L, segs, req.panel_rows, req.panel_nnz);
  }

  if (req.rowsplit) {
    const auto chunk = static_cast<offset_t>(std::max(req.chunk, 1));
    for (std::size_t t = 0; t < ntiles; ++t) {
      const std::size_t first = L.items.size();
      for (const auto& s : segs[t])
        for (offset_t off = 0; off < s.len; off += chunk)
          L.items.push_back(SddmmItem{s.begin + off, s.row, static_cast<ordinal_t>(std::min(chunk, s.len - off))});
      if (req.sort_items)
        std::stable_sort(L.items.begin() + static_cast<std::ptrdiff_t>(first), L.items.end(),
                         [](const SddmmItem& a, const SddmmItem& b) { return a.len > b.len; });
    }
  }

  if (req.sm_l2) {
    const int ti = std::max(req.ti, 1);
    L.tile_active_offsets.assign(ntiles + 1, 0);
    L.lrow.resize(nnz);
    for (std::size_t t = 0; t < ntiles; ++t) {
      const auto a0 = static_cast<ordinal_t>(L.active_rows.size());
      if (req.active_rows) {
        for (const auto& s : segs[t]) L.active_rows.push_back(s.row);
        for (std::size_t q = 0; q < segs[t].size(); ++q)
          std::fill_n(L.lrow.begin() + static_cast<std::ptrdiff_t>(segs[t][q].begin), segs[t][q].len,
                      a0 + static_cast<ordinal_t>(q));
      } else {
        for (ordinal_t r = 0; r < R; ++r) L.active_rows.push_back(r);
        for (const auto& s : segs[t])
          std::fill_n(L.lrow.begin() + static_cast<std::ptrdiff_t>(s.begin), s.len, a0 + s.row);
      }
      const auto a1 = static_cast<ordinal_t>(L.active_rows.size());
      L.tile_active_offsets[t + 1] = static_cast<offset_t>(a1);
      // Layout position where the nonzeros of staged rows >= r start in tile t.
      auto start_of = [&](ordinal_t r) -> offset_t {
        auto it = std::lower_bound(segs[t].begin(), segs[t].end(), r,
                                   [](const Segment& s, ordinal_t v) { return s.row < v; });
        return it == segs[t].end() ? L.tile_offsets[t + 1] : it->begin;
      };
      for (ordinal_t b0 = a0; b0 < a1; b0 += ti) {
        const ordinal_t nr = std::min<ordinal_t>(ti, a1 - b0);
        SddmmBlock blk;
        blk.active_begin = b0;
        blk.nrows = nr;
        blk.begin = start_of(L.active_rows[b0]);
        blk.end = b0 + nr < a1 ? start_of(L.active_rows[b0 + nr]) : L.tile_offsets[t + 1];
        L.blocks.push_back(blk);
      }
    }
  }
  return L;
}

}  // namespace kfactor::detail
