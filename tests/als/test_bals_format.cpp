// The BALS tiled format (digest checklist 1-5, 7, 12, 15) and the reordering.
#include <kfactor/als/als.hpp>
#include <kfactor/als/bals_format.hpp>
#include <kfactor/als/reorder.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace {
using namespace kfactor;
using namespace kfactor::als;
using HostCsr = CsrMatrix<double, Kokkos::HostSpace>;

HostCsr host_csr(const CooMatrix<double>& coo) {
  return copy_to<Kokkos::HostSpace>(to_csr(Kokkos::DefaultHostExecutionSpace{}, coo));
}

/// Random sparse matrix with power-law-ish rows and columns.
CooMatrix<double> random_coo(int m, int n, double density, std::uint64_t seed, bool skewed = false) {
  CooMatrix<double> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      // skewed: a random subset of heavy rows/columns (not at the front)
      const double pi = skewed ? (rng.uniform(std::uint64_t(3000000 + i)) < 0.2 ? 0.9 : 0.05) : density;
      const double pj = skewed ? (rng.uniform(std::uint64_t(4000000 + j)) < 0.2 ? 0.9 : 0.05) : 1.0;
      if (rng.uniform(std::uint64_t(i) * n + j) < pi * pj) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
        coo.values.push_back(1 + std::floor(5 * rng.uniform(std::uint64_t(1) << 40 | (std::uint64_t(i) * n + j))));
      }
    }
  return coo;
}

TEST(BalsFormat, SizesRoundTripAndFirstAppearanceOrder) {
  for (auto [m, n, xb, yb] : std::vector<std::array<int, 4>>{
           {9, 6, 2, 3}, {37, 23, 4, 5}, {50, 41, 1, 7}, {33, 64, 8, 16}, {5, 3, 8, 16}, {64, 64, 3, 64}}) {
    const auto A = host_csr(random_coo(m, n, 0.25, 100 + m + n));
    const auto B = build_bals_host(A, xb, yb);
    // 1: array sizes.
    const std::int64_t tiles = std::int64_t((m + xb - 1) / xb) * ((n + yb - 1) / yb);
    ASSERT_EQ(B.num_tiles(), tiles);
    ASSERT_EQ(std::int64_t(B.tile_ptr.extent(0)), tiles + 1);
    ASSERT_EQ(std::int64_t(B.seg_ptr.extent(0)), tiles * xb + 1);
    ASSERT_EQ(B.seg_colidx.extent(0), A.nnz());
    ASSERT_EQ(B.value.extent(0), A.nnz());
    ASSERT_EQ(B.seg_ptr(tiles * xb), A.nnz());
    // 2: decoding gives R exactly.
    const auto D = bals_to_csr(B);
    for (int r = 0; r <= m; ++r) ASSERT_EQ(D.row_map(r), A.row_map(r));
    for (std::size_t e = 0; e < A.nnz(); ++e) {
      ASSERT_EQ(D.entries(e), A.entries(e));
      ASSERT_EQ(D.values(e), A.values(e));
    }
    // 3: per tile, distinct columns in first-appearance order inside the window.
    std::int64_t distinct_total = 0;
    for (std::int64_t t = 0; t < tiles; ++t) {
      const std::int64_t rb = t / B.num_tile_cols, tc = t % B.num_tile_cols;
      std::vector<ordinal_t> expect;
      for (int r = int(rb * xb); r < std::min<int>(m, int(rb * xb + xb)); ++r)
        for (auto e = A.row_map(r); e < A.row_map(r + 1); ++e) {
          const auto c = A.entries(e);
          if (c >= tc * yb && c < (tc + 1) * yb && std::find(expect.begin(), expect.end(), c) == expect.end())
            expect.push_back(c);
        }
      ASSERT_EQ(B.tile_ptr(t + 1) - B.tile_ptr(t), expect.size()) << "tile " << t;
      for (std::size_t k = 0; k < expect.size(); ++k) ASSERT_EQ(B.tile_colidx(B.tile_ptr(t) + k), expect[k]);
      distinct_total += std::int64_t(expect.size());
      // 2: tile_colidx[tile_ptr[t] + seg_colidx[k]] is the column of nonzero k.
      for (auto k = B.seg_ptr(t * xb); k < B.seg_ptr(t * xb + xb); ++k) {
        ASSERT_GE(B.seg_colidx(k), 0);
        ASSERT_LT(offset_t(B.seg_colidx(k)), B.tile_ptr(t + 1) - B.tile_ptr(t));
      }
    }
    const auto st = bals_stats(B);
    EXPECT_EQ(st.distinct_tile_columns, distinct_total);
    EXPECT_EQ(st.redundancy, std::int64_t(A.nnz()) - std::int64_t(B.tile_ptr(tiles)));
    int mx = 0;
    for (std::int64_t t = 0; t < tiles; ++t) mx = std::max<int>(mx, int(B.tile_ptr(t + 1) - B.tile_ptr(t)));
    EXPECT_EQ(B.max_tile_columns, mx);
  }
}

TEST(BalsFormat, Fig6TilesZeroAndOne) {
  // 9 x 6, xb = 2, yb = 3; tile 0: (0,0)=3 (0,2)=5 (1,0)=2 (1,1)=4; tile 1: (0,4)=1 (1,3)=6;
  // tile 4 (rows 4-5, columns 0-2) vacant.
  CooMatrix<double> coo;
  coo.num_rows = 9;
  coo.num_cols = 6;
  auto add = [&](int r, int c, double v) {
    coo.rows.push_back(r);
    coo.cols.push_back(c);
    coo.values.push_back(v);
  };
  add(0, 0, 3), add(0, 2, 5), add(1, 0, 2), add(1, 1, 4), add(0, 4, 1), add(1, 3, 6);
  add(2, 1, 7), add(3, 1, 8), add(5, 5, 9), add(8, 2, 1);
  const auto B = build_bals_host(host_csr(coo), 2, 3);
  EXPECT_EQ(B.num_tiles(), 10);
  const std::vector<ordinal_t> cols{0, 2, 1, 4, 3};
  for (std::size_t k = 0; k < cols.size(); ++k) EXPECT_EQ(B.tile_colidx(k), cols[k]);
  const std::vector<offset_t> seg{0, 2, 4};
  for (std::size_t k = 0; k < seg.size(); ++k) EXPECT_EQ(B.seg_ptr(k), seg[k]);
  const std::vector<int> slots{0, 1, 0, 2};
  for (std::size_t k = 0; k < slots.size(); ++k) EXPECT_EQ(B.seg_colidx(k), slots[k]);
  EXPECT_EQ(B.value(0), 3);
  EXPECT_EQ(B.value(2), 2);
  EXPECT_EQ(B.value(3), 4);
  EXPECT_EQ(B.tile_ptr(5), B.tile_ptr(4));  // tile 4 vacant
  // 5: vacancy. Tiles: 0 {r0,r1} occ, 1 occ, 2 (r2-3,c0-2) occ, 3 vacant, 4 vacant, 5 (r4-5,c3-5) occ,
  // 6 vacant, 7 vacant, 8 (r8, c0-2) occ, 9 vacant.
  const auto st = bals_stats(B);
  EXPECT_EQ(st.tiles, 10);
  EXPECT_EQ(st.vacant_tiles, 5);
  // occupied tiles' segments (real rows only): 0:2, 1:2, 2:2, 5:2, 8:1 -> 9; vacant among them:
  // tile 5 row 4, tile 8 none -> 1
  EXPECT_EQ(st.segments_in_occupied_tiles, 9);
  EXPECT_EQ(st.vacant_segments, 1);
  EXPECT_EQ(st.redundancy, 10 - std::int64_t(B.tile_ptr(10)));
  EXPECT_EQ(st.redundancy, 2);  // column 0 shared in tile 0, column 1 in tile 2
  EXPECT_NEAR(st.vacant_tiles_percent(), 50.0, 1e-12);
}

TEST(BalsFormat, ColumnMapRelabelsOnlyTileColumns) {
  const auto A = host_csr(random_coo(20, 17, 0.3, 5));
  std::vector<ordinal_t> map(17);
  for (int j = 0; j < 17; ++j) map[j] = 100 + 16 - j;
  const auto B0 = build_bals_host(A, 3, 4);
  const auto B1 = build_bals_host(A, 3, 4, map);
  ASSERT_EQ(B0.tile_colidx.extent(0), B1.tile_colidx.extent(0));
  for (std::size_t k = 0; k < B0.tile_colidx.extent(0); ++k) EXPECT_EQ(B1.tile_colidx(k), map[B0.tile_colidx(k)]);
  for (std::size_t k = 0; k < B0.seg_colidx.extent(0); ++k) EXPECT_EQ(B1.seg_colidx(k), B0.seg_colidx(k));
}

TEST(BalsFormat, RejectsEmptyTile) {
  const auto A = host_csr(random_coo(4, 4, 0.5, 1));
  EXPECT_THROW(build_bals_host(A, 0, 3), UsageError);
}

TEST(Reorder, DescendingCountsStableBijection) {
  const auto A = host_csr(random_coo(80, 60, 0.1, 9, true));
  const auto [pr, pc] = count_orderings(A);
  // 12: bijection, non-increasing counts, ties in original order.
  auto check = [](const Permutation& p, const std::vector<std::int64_t>& cnt) {
    std::vector<ordinal_t> sorted = p.new_to_old;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], ordinal_t(i));
    for (std::size_t i = 0; i < cnt.size(); ++i) ASSERT_EQ(p.new_to_old[p.old_to_new[i]], ordinal_t(i));
    for (std::size_t i = 1; i < cnt.size(); ++i) {
      ASSERT_GE(cnt[p.new_to_old[i - 1]], cnt[p.new_to_old[i]]);
      if (cnt[p.new_to_old[i - 1]] == cnt[p.new_to_old[i]]) ASSERT_LT(p.new_to_old[i - 1], p.new_to_old[i]);
    }
  };
  std::vector<std::int64_t> rc(80), cc(60, 0);
  for (int r = 0; r < 80; ++r) {
    rc[r] = std::int64_t(A.row_map(r + 1) - A.row_map(r));
    for (auto e = A.row_map(r); e < A.row_map(r + 1); ++e) ++cc[A.entries(e)];
  }
  check(pr, rc);
  check(pc, cc);
  // The permuted matrix holds the same entries under the new labels.
  const auto P = copy_to<Kokkos::HostSpace>(permute(
      Kokkos::DefaultHostExecutionSpace{}, copy_to<Kokkos::DefaultHostExecutionSpace::memory_space>(A), pr, pc));
  std::set<std::tuple<int, int, double>> a, b;
  for (int r = 0; r < 80; ++r) {
    for (auto e = A.row_map(r); e < A.row_map(r + 1); ++e) a.insert({r, A.entries(e), A.values(e)});
    for (auto e = P.row_map(r); e < P.row_map(r + 1); ++e)
      b.insert({pr.new_to_old[r], pc.new_to_old[P.entries(e)], P.values(e)});
  }
  EXPECT_EQ(a, b);
}

TEST(Reorder, RaisesVacantTilesAndLowersVacantSegmentsOnSkewedMatrix) {
  // 15: heavy rows/columns scattered at random; after reordering they gather
  // in the leading tiles, so empty space merges into whole vacant tiles.
  const auto A = host_csr(random_coo(400, 300, 0.0, 21, true));
  const auto [pr, pc] = count_orderings(A);
  const auto P = copy_to<Kokkos::HostSpace>(permute(
      Kokkos::DefaultHostExecutionSpace{}, copy_to<Kokkos::DefaultHostExecutionSpace::memory_space>(A), pr, pc));
  const auto before = bals_stats(build_bals_host(A, 8, 16));
  const auto after = bals_stats(build_bals_host(P, 8, 16));
  EXPECT_GT(after.vacant_tiles_percent(), before.vacant_tiles_percent());
  EXPECT_LT(after.vacant_segments_percent(), before.vacant_segments_percent());
}

TEST(Autotune, CandidatesFitScratchAndTeam) {
  // 7: shared memory within the budget, threads within the team limit.
  using Space = Kokkos::DefaultExecutionSpace;
  using Tn = als::detail::Tuning<Space>;
  for (int f : {10, 32, 100, 128, 256}) {
    const auto c = als::detail::tile_candidates<Space, float>(480189, 17770, 99000000, f);
    ASSERT_FALSE(c.empty());
    for (auto [xb, yb] : c) {
      EXPECT_LE((als::detail::normal_equation_scratch<Space, float>(true, f, xb, yb)), Tn::scratch_budget);
      EXPECT_LE((als::detail::normal_equation_scratch<Space, float>(true, f, xb, yb)),
                als::detail::fast_scratch_bytes<Space>());
      const als::detail::TileShape sh(f, Tn::block, xb);
      if (!is_host_space_v<Space> && xb > 1) EXPECT_LE(sh.total, Tn::max_team * Tn::tiles_per_thread);
      EXPECT_GE(xb, 1);
      EXPECT_GE(yb, 1);
    }
  }
}

// Segment arrays stay bounded (seg_ptr has m/xb * n/yb * xb entries): on
// YahooMusic's R^T (98,212 x 1,948,882, 114.7M ratings) the autotuner once
// chose a 1 x 64 tile whose seg_ptr took 22 GiB and did not fit on an H100.
// When no candidate is within the bound, none: that half-step runs on CSR.
TEST(Autotune, CandidatesBoundTheSegmentArray) {
  using Space = Kokkos::DefaultExecutionSpace;
  const std::int64_t m = 98212, n = 1948882, nnz = 114688775;
  for (int f : {10, 100, 128, 512}) {
    for (auto [xb, yb] : als::detail::tile_candidates<Space, float>(m, n, nnz, f))
      EXPECT_LE(als::detail::bals_segments(m, n, xb, yb), 8 * nnz + (std::int64_t(1) << 22)) << xb << " x " << yb;
  }
  EXPECT_EQ(als::detail::bals_segments(98212, 1948882, 1, 64), std::int64_t(98212) * 30452);
  EXPECT_EQ(als::detail::bals_segments(10, 10, 4, 3), 3 * 4 * 4);
  // A nearly empty 10^6 x 10^6 matrix: no tile is within the bound.
  EXPECT_TRUE((als::detail::tile_candidates<Space, float>(1000000, 1000000, 10, 32).empty()));
  // With a bound nothing reaches (huge nnz) every tile is a candidate.
  EXPECT_FALSE((als::detail::tile_candidates<Space, float>(1000000, 1000000, std::int64_t(1) << 40, 32).empty()));
}

// A side whose tiles would all exceed the segment bound runs on CSR and says
// so in the report, and the run equals the plain CSR run bit for bit: a
// 60000 x 60000 matrix with 300 ratings (m n / yb > 8 nnz + 4M on both sides
// for every candidate yb, up to a device's 512).
TEST(Autotune, UnboundedSideRunsOnCsr) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  CooMatrix<double> coo;
  coo.num_rows = coo.num_cols = 60000;
  const CounterRng rng(11, RngStream::user);
  std::set<std::pair<int, int>> seen;
  for (std::uint64_t e = 0; seen.size() < 300; ++e) {
    const int r = int(rng.uniform(3 * e) * 60000), c = int(rng.uniform(3 * e + 1) * 60000);
    if (!seen.insert({r, c}).second) continue;
    coo.rows.push_back(r);
    coo.cols.push_back(c);
    coo.values.push_back(1.0 + 4.0 * rng.uniform(3 * e + 2));
  }
  const auto problem = als::make_problem(exec, coo, 0.0, 1);
  als::Options o;
  o.rank = 3;
  o.seed = 3;
  o.layout = als::Layout::bals;
  auto tiled = als::init(exec, problem, o);
  EXPECT_EQ(tiled.plan->info.at("layout_user"), "csr");
  EXPECT_EQ(tiled.plan->info.at("layout_item"), "csr");
  EXPECT_NE(tiled.plan->info.at("autotune_items").find("csr"), std::string::npos);
  o.layout = als::Layout::csr;
  auto plain = als::init(exec, problem, o);
  for (int it = 0; it < 2; ++it) {
    als::step(exec, problem, o, tiled);
    als::step(exec, problem, o, plain);
  }
  const auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tiled.X);
  const auto px = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, plain.X);
  const auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tiled.Y);
  const auto py = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, plain.Y);
  double norm = 0;
  for (std::size_t r = 0; r < hx.extent(0); ++r)
    for (std::size_t k = 0; k < hx.extent(1); ++k) {
      EXPECT_EQ(hx(r, k), px(r, k));
      norm += hx(r, k) * hx(r, k);
    }
  EXPECT_GT(norm, 0.0);  // the rated users got non-zero factors
  for (std::size_t r = 0; r < hy.extent(0); ++r)
    for (std::size_t k = 0; k < hy.extent(1); ++k) EXPECT_EQ(hy(r, k), py(r, k));
}

}  // namespace
