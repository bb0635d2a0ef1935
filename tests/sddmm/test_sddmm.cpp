// SDDMM kernels and plans against a float64 host reference (digest 004,
// checklist items 1, 2, 6, 7, 8, 9, 13), edge shapes, reduced precision and
// bad input.
#include "sddmm_test_util.hpp"

#include <kfactor/kernels/detail/sddmm_nzsplit.hpp>
#include <kfactor/sddmm/detail/plan_build.hpp>
#include <kfactor/sddmm/detail/plan_cache.hpp>
#include <kfactor/sddmm/generate.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <tuple>
#include <typeinfo>

namespace {
using namespace kfactor;
using kfactor::test::host_reference;
using kfactor::test::random_dense;
using kfactor::test::random_sddmm_csr;
using kfactor::test::random_sddmm_pattern;
using kfactor::test::scaled_error;

template <class P>
class SddmmTest : public ::testing::Test {};
TYPED_TEST_SUITE(SddmmTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

/// Every mechanism on and off, every kernel.
std::vector<std::pair<std::string, SddmmOptions>> configurations() {
  std::vector<std::pair<std::string, SddmmOptions>> c;
  auto add = [&](const std::string& name, std::function<void(SddmmOptions&)> f) {
    SddmmOptions o;
    f(o);
    c.emplace_back(name, o);
  };
  add("auto", [](SddmmOptions&) {});
  add("reference", [](SddmmOptions& o) { o.kernel = SddmmKernel::reference; });
  add("rowsplit", [](SddmmOptions& o) { o.kernel = SddmmKernel::rowsplit; });
  add("rowsplit-untiled", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::rowsplit;
    o.column_tiles = false;
  });
  add("rowsplit-tiles7-sorted", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::rowsplit;
    o.tile_cols = 7;
    o.sort_items = 1;
  });
  add("rowsplit-stageB-tiles", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::rowsplit;
    o.staged = SddmmStaged::b;
    o.tile_cols = 11;
  });
  add("rowsplit-chunk3-unsorted-lanes4", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::rowsplit;
    o.chunk = 3;
    o.sort_items = 0;
    o.vector_length = 4;
    o.team_size = 2;
  });
  add("nzsplit", [](SddmmOptions& o) { o.kernel = SddmmKernel::nzsplit; });
  add("nzsplit-untiled", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::nzsplit;
    o.column_tiles = false;
  });
  add("nzsplit-tiles7", [](SddmmOptions& o) {  // batches cross tile boundaries, rows restart
    o.kernel = SddmmKernel::nzsplit;
    o.tile_cols = 7;
  });
  add("nzsplit-stageB-tiles", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::nzsplit;
    o.staged = SddmmStaged::b;
    o.tile_cols = 11;
  });
  add("nzsplit-l2-hints", [](SddmmOptions& o) {  // GPUs: a few hot streamed rows, the rest cold
    o.kernel = SddmmKernel::nzsplit;
    o.vector_length = 32;
    o.hot_cache_fraction = 0.5;
    o.cache_bytes = 8192;
  });
  add("nzsplit-l2-hints-auto", [](SddmmOptions& o) {  // one tile larger than the cache: hints, and
    o.kernel = SddmmKernel::nzsplit;                  // 32 lanes from 32 packs on
    o.column_tiles = false;
    o.cache_bytes = 4096;  // keeps 2 (fp64) or 4 (fp32) streamed rows at K = 128
  });
  add("nzsplit-l2-hints-tiles7", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::nzsplit;
    o.vector_length = 32;
    o.hot_cache_fraction = 1;
    o.tile_cols = 7;
  });
  add("sm_l2-tk32-tiles", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::sm_l2;
    o.tk = 32;
    o.tile_cols = 9;
    o.scratch_bytes = 4096;  // small blocks: several per tile, partial last block
  });
  add("sm_l2-no-active-rows-stageB", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::sm_l2;
    o.active_rows = false;
    o.staged = SddmmStaged::b;
    o.tile_cols = 13;
  });
  add("panels", [](SddmmOptions& o) { o.kernel = SddmmKernel::panels; });
  add("panels3-tiles7-nnz5", [](SddmmOptions& o) {  // small panels, cut into blocks of 5 nonzeros
    o.kernel = SddmmKernel::panels;
    o.panel_rows = 3;
    o.tile_cols = 7;
    o.panel_nnz = 5;
  });
  add("panels-stageB-lanes32", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::panels;
    o.staged = SddmmStaged::b;
    o.tile_cols = 11;
    o.vector_length = 32;
  });
  add("panels-wide-index", [](SddmmOptions& o) {  // devices: the form for > 2^24 streamed rows
    o.kernel = SddmmKernel::panels;
    o.compact_index = false;
  });
  add("sm_sm-t5", [](SddmmOptions& o) {
    o.kernel = SddmmKernel::sm_sm;
    o.smsm_tile = 5;
  });
  return c;
}

// Checklist 1, 2, 9: every configuration, scaled and unscaled, K in {1, 7, 32, 33, 128}
// (nzsplit runs 8 lanes at K = 32 and 32 at 128; at 1, 7 and 33 it falls back to rowsplit).
TYPED_TEST(SddmmTest, EveryKernelMatchesFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  const double eps = std::numeric_limits<T>::epsilon();
  auto S = to_csr(exec, [] {
    auto c = random_sddmm_pattern(61, 47, 6, 11);
    CooMatrix<T> t;
    t.num_rows = c.num_rows;
    t.num_cols = c.num_cols;
    t.rows = c.rows;
    t.cols = c.cols;
    for (double v : c.values) t.values.push_back(T(v));
    return t;
  }());
  ASSERT_GT(S.nnz(), 100u);
  for (int K : {1, 7, 32, 33, 128}) {
    auto A = random_dense<T>(exec, S.num_rows(), K, 100 + K);
    auto B = random_dense<T>(exec, S.num_cols, K, 200 + K);
    const auto ref = host_reference(S, A, B, true);
    const auto refu = host_reference(S, A, B, false);
    for (const auto& [name, opt] : configurations()) {
      if (opt.kernel == SddmmKernel::sm_sm && K > 64) continue;  // does not fit the scratch
      Kokkos::View<T*, typename Space::memory_space> out("out", S.nnz());
      SddmmPlan<Space, T> plan(exec, S, K, opt);
      // The hinted kernel runs, with hot and cold indices, where the option
      // asks for it in the 32-lane form (automatically: from 32 packs on).
      const int packs = K % detail::SddmmPack<T>::width == 0 ? K / detail::SddmmPack<T>::width : 0;
      const bool hinted = name.find("l2-hints") != std::string::npos && detail::SddmmTraits<Space>::gpu &&
                          plan.info().kernel == SddmmKernel::nzsplit && packs > 0 &&
                          (opt.vector_length == 32 || packs >= 32);
      if (hinted) {
        EXPECT_GT(plan.info().hot_rows, 0) << name << " K=" << K;
        EXPECT_EQ(plan.info().vector_length, 32) << name << " K=" << K;
      } else {
        EXPECT_EQ(plan.info().hot_rows, -1) << name << " K=" << K;
      }
      plan.apply(exec, A, B, out);
      EXPECT_LE(scaled_error(out, ref, K, eps), 1.0) << name << " K=" << K;
      Kokkos::deep_copy(out, T(12345));
      plan.apply(exec, A, B, out, false);
      EXPECT_LE(scaled_error(out, refu, K, eps), 1.0) << name << " unscaled K=" << K;
    }
    // The one-shot entry points.
    Kokkos::View<T*, typename Space::memory_space> out("out", S.nnz());
    sddmm(exec, S, A, B, out);
    EXPECT_LE(scaled_error(out, ref, K, eps), 1.0);
    sddmm_unscaled(exec, S, A, B, out);
    EXPECT_LE(scaled_error(out, refu, K, eps), 1.0);
    auto P = sddmm(exec, S, A, B);
    EXPECT_EQ(P.row_map.data(), S.row_map.data());  // P's pattern is S's
    EXPECT_LE(scaled_error(P.values, ref, K, eps), 1.0);
    sddmm_reference(exec, S, A, B, out);
    EXPECT_LE(scaled_error(out, ref, K, eps), 1.0);
  }
}

TYPED_TEST(SddmmTest, PlanCacheBuildsOncePerPatternAndRank) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const auto S = random_sddmm_csr<T>(exec, 40, 30, 5, 21);
  const auto other = random_sddmm_csr<T>(exec, 40, 30, 5, 22);
  // The same pattern with other values (as ALS's confidence weights share R's).
  const CsrMatrix<T, Mem> same(S.row_map, S.entries, Kokkos::View<T*, Mem>("v", S.nnz()), S.num_cols);
  detail::SddmmPlanCache<T, Mem> cache;
  const auto* first = &cache.get(exec, S, 8);
  EXPECT_EQ(&cache.get(exec, S, 8), first);
  EXPECT_EQ(&cache.get(exec, same, 8), first);
  EXPECT_NE(&cache.get(exec, other, 8), first);
  EXPECT_NE(&cache.get(exec, S, 16), first);
  // observed_dots: the unscaled products at S's entries, in S's order.
  const auto A = random_dense<T>(exec, S.num_rows(), 8, 31);
  const auto B = random_dense<T>(exec, S.num_cols, 8, 32);
  const auto dots = detail::observed_dots(exec, cache, S, A, B);
  EXPECT_LE(scaled_error(dots, host_reference(S, A, B, false), 8, std::numeric_limits<T>::epsilon()), 1.0);
}

// Checklist 8: at K = 512 every T_k in {32, ..., 512} gives the same P.
TYPED_TEST(SddmmTest, EveryKSliceGivesTheSameResult) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int K = 512;
  auto S = random_sddmm_csr<T>(exec, 23, 19, 4, 5);
  auto A = random_dense<T>(exec, S.num_rows(), K, 1);
  auto B = random_dense<T>(exec, S.num_cols, K, 2);
  const auto ref = host_reference(S, A, B, true);
  const double eps = std::numeric_limits<T>::epsilon();
  std::vector<double> first;
  for (int tk = 32; tk <= K; tk *= 2) {
    SddmmOptions o;
    o.kernel = SddmmKernel::sm_l2;
    o.tk = tk;
    o.tile_cols = 6;
    o.scratch_bytes = std::size_t(tk) * sizeof(T) * 3;  // T_i = 3 rows per block
    SddmmPlan<Space, T> plan(exec, S, K, o);
    EXPECT_EQ(plan.info().tk, tk);
    Kokkos::View<T*, Mem> out("out", S.nnz());
    plan.apply(exec, A, B, out);
    EXPECT_LE(scaled_error(out, ref, K, eps), 1.0) << "T_k=" << tk;
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
    if (first.empty())
      for (std::size_t e = 0; e < h.extent(0); ++e) first.push_back(h(e));
    else
      for (std::size_t e = 0; e < h.extent(0); ++e)
        EXPECT_NEAR(h(e), first[e], 4 * K * eps * ref.bound[e] + 1e-30) << "T_k=" << tk;
  }
}

// Checklist 6 and 7: active rows are the tile's nonempty rows; blocks =
// ceil(active / T_i) with T_i = floor(scratch elements / T_k).
TYPED_TEST(SddmmTest, ActiveRowsAndBlocks) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  const Space exec;
  auto c = random_sddmm_pattern(40, 50, 3, 9);
  CooMatrix<T> ct{c.num_rows, c.num_cols, c.rows, c.cols, {}};
  for (double v : c.values) ct.values.push_back(T(v));
  auto S = to_csr(exec, ct);
  const int K = 64, tk = 32, tj = 8;
  SddmmOptions o;
  o.kernel = SddmmKernel::sm_l2;
  o.tk = tk;
  o.tile_cols = tj;
  o.staged = SddmmStaged::a;
  o.scratch_bytes = 5 * tk * sizeof(T) + 3;  // T_i = 5
  SddmmPlan<Space, T> plan(exec, S, K, o);
  EXPECT_EQ(plan.info().ti, 5);
  EXPECT_EQ(plan.info().ti, sm_l2_rows_per_block(o.scratch_bytes, tk, sizeof(T)));
  const auto active = plan.active_rows_host();
  const auto& off = plan.tile_active_offsets();
  const std::int64_t tiles = (50 + tj - 1) / tj;
  ASSERT_EQ(plan.info().tiles, tiles);
  ASSERT_EQ(off.size(), std::size_t(tiles) + 1);
  std::int64_t blocks = 0;
  for (std::int64_t t = 0; t < tiles; ++t) {
    std::set<int> nonempty;
    for (std::size_t e = 0; e < c.nnz(); ++e)
      if (c.cols[e] / tj == t) nonempty.insert(c.rows[e]);
    std::vector<int> got(active.begin() + off[t], active.begin() + off[t + 1]);
    EXPECT_EQ(got, std::vector<int>(nonempty.begin(), nonempty.end())) << "tile " << t;
    blocks += (static_cast<std::int64_t>(got.size()) + 4) / 5;
  }
  EXPECT_EQ(plan.info().blocks, blocks);
  EXPECT_EQ(plan.info().staged_rows, static_cast<std::int64_t>(active.size()));

  // One nonzero per row: staged rows = M for any tile count.
  CooMatrix<T> diag{30, 30, {}, {}, {}};
  for (int i = 0; i < 30; ++i) {
    diag.rows.push_back(i);
    diag.cols.push_back((i * 7) % 30);
    diag.values.push_back(T(i % 3 - 1));
  }
  auto D = to_csr(exec, diag);
  for (int w : {1, 4, 30}) {
    o.tile_cols = w;
    SddmmPlan<Space, T> p(exec, D, K, o);
    EXPECT_EQ(p.info().staged_rows, 30) << "T_j=" << w;
  }
}

// Checklist 13: SM-SM above the density threshold (and within scratch),
// and it agrees with SM-L2.
TYPED_TEST(SddmmTest, SmSmChosenAboveThresholdAndAgreesWithSmL2) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  auto S = random_sddmm_csr<T>(exec, 70, 60, 20, 3, false);  // about 20% dense
  const int K = 32;
  SddmmOptions o;
  o.scratch_bytes = 16 * 1024;
  SddmmPlan<Space, T> automatic(exec, S, K, o);
  ASSERT_GT(automatic.info().density, 0.05);
  // The automatic rule is the paper's on GPUs; CPUs always take rowsplit.
  constexpr bool gpu = detail::SddmmTraits<Space>::gpu;
  EXPECT_EQ(automatic.info().kernel, gpu ? SddmmKernel::sm_sm : SddmmKernel::rowsplit);
  EXPECT_EQ(choose_sddmm_kernel(true, automatic.info().density, o, 20, true, true), SddmmKernel::sm_sm);
  EXPECT_EQ(choose_sddmm_kernel(true, 0.049, o, 20, true, true), SddmmKernel::nzsplit);
  EXPECT_EQ(choose_sddmm_kernel(true, 0.049, o, 20, true, false), SddmmKernel::rowsplit);  // K not whole packs
  EXPECT_EQ(choose_sddmm_kernel(true, 0.2, o, 20, false, true), SddmmKernel::nzsplit);     // does not fit
  EXPECT_EQ(choose_sddmm_kernel(false, 0.2, o, 20, true, true), SddmmKernel::rowsplit);
  o.kernel = SddmmKernel::sm_sm;
  SddmmPlan<Space, T> forced(exec, S, K, o);
  EXPECT_EQ(forced.info().kernel, SddmmKernel::sm_sm);
  const int t = forced.info().smsm_tile;
  EXPECT_LE(std::size_t(t + t) * K * sizeof(T), o.scratch_bytes);
  EXPECT_EQ(t, sm_sm_tile(o.scratch_bytes, K, sizeof(T)));
  o.kernel = SddmmKernel::automatic;
  o.smsm_density = 0.5;  // threshold above this density: not SM-SM
  EXPECT_EQ(choose_sddmm_kernel(true, automatic.info().density, o, 20, true, true), SddmmKernel::nzsplit);
  EXPECT_NE((SddmmPlan<Space, T>(exec, S, K, o).info().kernel), SddmmKernel::sm_sm);

  auto A = random_dense<T>(exec, S.num_rows(), K, 3);
  auto B = random_dense<T>(exec, S.num_cols, K, 4);
  Kokkos::View<T*, Mem> o1("o1", S.nnz()), o2("o2", S.nnz());
  forced.apply(exec, A, B, o1);
  SddmmOptions l2;
  l2.kernel = SddmmKernel::sm_l2;
  SddmmPlan<Space, T>(exec, S, K, l2).apply(exec, A, B, o2);
  const auto ref = host_reference(S, A, B, true);
  const double eps = std::numeric_limits<T>::epsilon();
  EXPECT_LE(scaled_error(o1, ref, K, eps), 1.0);
  EXPECT_LE(scaled_error(o2, ref, K, eps), 1.0);
}

// Empty rows and columns, a single nonzero, M or N = 1, no nonzeros at all.
TYPED_TEST(SddmmTest, EdgeShapes) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const double eps = std::numeric_limits<T>::epsilon();
  struct Case {
    int m, n;
    std::vector<int> r, c;
  };
  std::vector<Case> cases = {
      {9, 8, {4}, {6}},                            // single nonzero
      {1, 40, {0, 0, 0, 0}, {0, 5, 17, 39}},       // M = 1
      {40, 1, {0, 3, 17, 39}, {0, 0, 0, 0}},       // N = 1
      {12, 12, {}, {}},                            // no nonzeros
      {30, 30, {0, 29, 29, 15}, {29, 0, 29, 15}},  // mostly empty rows and columns
  };
  for (const auto& cs : cases) {
    CooMatrix<T> coo{cs.m, cs.n, cs.r, cs.c, {}};
    for (std::size_t e = 0; e < cs.r.size(); ++e) coo.values.push_back(T(e % 2 ? -1.5 : 0.75));
    auto S = to_csr(exec, coo);
    for (int K : {1, 7, 33}) {
      auto A = random_dense<T>(exec, cs.m, K, 5);
      auto B = random_dense<T>(exec, cs.n, K, 6);
      const auto ref = host_reference(S, A, B, true);
      for (const auto& [name, opt] : configurations()) {
        Kokkos::View<T*, Mem> out("out", S.nnz());
        SddmmPlan<Space, T> plan(exec, S, K, opt);
        plan.apply(exec, A, B, out);
        EXPECT_LE(scaled_error(out, ref, K, eps), 1.0) << name << " " << cs.m << "x" << cs.n << " K=" << K;
      }
    }
  }
}

// A plan is reusable: new A and B, and new values of S, are honoured.
// nzsplit on long rows (whole batches in one row; on GPUs the 8-lane form
// then runs at three teams per multiprocessor) and on short rows, against the
// float64 reference.
TYPED_TEST(SddmmTest, NzsplitLongAndShortRows) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const double eps = std::numeric_limits<T>::epsilon();
  for (double avg : {3.0, 150.0}) {
    auto S = random_sddmm_csr<T>(exec, 120, 700, avg, 91);
    for (int K : {16, 32, 64, 160}) {  // 160 floats: 40 packs, so 8 of 32 lanes run a second pack
      auto A = random_dense<T>(exec, S.num_rows(), K, 5 + K);
      auto B = random_dense<T>(exec, S.num_cols, K, 6 + K);
      const auto ref = host_reference(S, A, B, true);
      for (int lanes : {0, 4, 8, 32}) {  // 8 lanes at K = 64: two packs per lane; 32 at K = 16: idle lanes
        SddmmOptions o;
        o.kernel = SddmmKernel::nzsplit;
        o.vector_length = lanes;
        SddmmPlan<Space, T> plan(exec, S, K, o);
        Kokkos::View<T*, Mem> out("out", S.nnz());
        plan.apply(exec, A, B, out);
        EXPECT_LE(scaled_error(out, ref, K, eps), 1.0) << "avg " << avg << " K=" << K << " lanes " << lanes;
      }
      SddmmOptions bad;
      bad.kernel = SddmmKernel::nzsplit;
      bad.vector_length = 16;
      EXPECT_THROW((SddmmPlan<Space, T>(exec, S, K, bad)), UsageError);
    }
  }
}

TYPED_TEST(SddmmTest, PlanReuseAndNewValues) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const double eps = std::numeric_limits<T>::epsilon();
  auto S = random_sddmm_csr<T>(exec, 33, 29, 5, 21);
  const int K = 16;
  for (auto kernel : {SddmmKernel::rowsplit, SddmmKernel::nzsplit, SddmmKernel::sm_l2}) {
    SddmmOptions o;
    o.kernel = kernel;
    o.tile_cols = 10;
    SddmmPlan<Space, T> plan(exec, S, K, o);
    Kokkos::View<T*, Mem> out("out", S.nnz());
    for (int round = 0; round < 2; ++round) {
      auto A = random_dense<T>(exec, S.num_rows(), K, 40 + round);
      auto B = random_dense<T>(exec, S.num_cols, K, 50 + round);
      plan.apply(exec, A, B, out);
      EXPECT_LE(scaled_error(out, host_reference(S, A, B, true), K, eps), 1.0);
    }
    auto hv = Kokkos::create_mirror(Kokkos::HostSpace{}, S.values);
    Kokkos::deep_copy(hv, S.values);
    for (std::size_t e = 0; e < hv.extent(0); ++e) hv(e) = -2 * hv(e);
    Kokkos::deep_copy(S.values, hv);
    auto A = random_dense<T>(exec, S.num_rows(), K, 60);
    auto B = random_dense<T>(exec, S.num_cols, K, 61);
    plan.apply(exec, A, B, out);
    EXPECT_LE(scaled_error(out, host_reference(S, A, B, true), K, eps), 1.0);
  }
}

// Bad input gives clear errors.
TYPED_TEST(SddmmTest, BadInputIsRejected) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  auto c = random_sddmm_pattern(10, 8, 3, 2);
  CooMatrix<T> ct{c.num_rows, c.num_cols, c.rows, c.cols, {}};
  for (double v : c.values) ct.values.push_back(T(v));
  auto S = to_csr(exec, ct);
  const int K = 4;
  auto A = random_dense<T>(exec, 10, K, 1);
  auto B = random_dense<T>(exec, 8, K, 2);
  Kokkos::View<T*, Mem> out("out", S.nnz());
  // Shapes.
  auto Bbad = random_dense<T>(exec, 9, K, 2);
  EXPECT_THROW(sddmm(exec, S, A, Bbad, out), UsageError);
  auto Abad = random_dense<T>(exec, 10, K + 1, 2);
  EXPECT_THROW(sddmm(exec, S, Abad, B, out), UsageError);
  Kokkos::View<T*, Mem> short_out("short", S.nnz() - 1);
  EXPECT_THROW(sddmm(exec, S, A, B, short_out), UsageError);
  DenseMatrix<T, Mem> A0("A0", 10, 0), B0("B0", 8, 0);
  EXPECT_THROW(sddmm(exec, S, A0, B0, out), UsageError);
  EXPECT_THROW((SddmmPlan<Space, T>(exec, S, 0)), UsageError);
  SddmmPlan<Space, T> plan(exec, S, K);
  auto A8 = random_dense<T>(exec, 10, 8, 1);
  auto B8 = random_dense<T>(exec, 8, 8, 1);
  EXPECT_THROW(plan.apply(exec, A8, B8, out), UsageError);  // built for K = 4
  // Options.
  SddmmOptions bad;
  bad.tk = 48;
  EXPECT_THROW((SddmmPlan<Space, T>(exec, S, K, bad)), UsageError);
  // NaN / Inf in A, B, S.
  // (create_mirror always copies: the host mirror of a host view must not alias A.)
  auto hA = Kokkos::create_mirror(Kokkos::HostSpace{}, A);
  Kokkos::deep_copy(hA, A);
  hA(3, 1) = std::numeric_limits<T>::quiet_NaN();
  auto Anan = random_dense<T>(exec, 10, K, 1);
  Kokkos::deep_copy(Anan, hA);
  EXPECT_THROW(sddmm(exec, S, Anan, B, out), InputError);
  auto hB = Kokkos::create_mirror(Kokkos::HostSpace{}, B);
  Kokkos::deep_copy(hB, B);
  hB(7, 3) = std::numeric_limits<T>::infinity();
  auto Binf = random_dense<T>(exec, 8, K, 2);
  Kokkos::deep_copy(Binf, hB);
  EXPECT_THROW(sddmm(exec, S, A, Binf, out), InputError);
  try {
    sddmm(exec, S, A, Binf, out);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("B has 1 NaN or Inf"), std::string::npos) << "message: " << e.what();
  }
  auto Snan = S;
  Snan.values = Kokkos::View<T*, Mem>("v", S.nnz());
  Kokkos::deep_copy(Snan.values, std::numeric_limits<T>::quiet_NaN());
  EXPECT_THROW(sddmm(exec, Snan, A, B, out), InputError);
  // Out-of-range and unsorted column indices.
  auto Sbad = S;
  Sbad.entries = Kokkos::View<ordinal_t*, Mem>("e", S.nnz());
  auto he = Kokkos::create_mirror(Kokkos::HostSpace{}, S.entries);
  Kokkos::deep_copy(he, S.entries);
  auto he_bad = he;
  he_bad = Kokkos::View<ordinal_t*, Kokkos::HostSpace>("he", S.nnz());
  Kokkos::deep_copy(he_bad, he);
  he_bad(0) = 8;
  Kokkos::deep_copy(Sbad.entries, he_bad);
  EXPECT_THROW(sddmm(exec, Sbad, A, B, out), InputError);
  Kokkos::deep_copy(he_bad, he);
  auto hrm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.row_map);
  int row = 0;
  while (hrm(row + 1) - hrm(row) < 2) ++row;
  std::swap(he_bad(hrm(row)), he_bad(hrm(row) + 1));
  Kokkos::deep_copy(Sbad.entries, he_bad);
  EXPECT_THROW(sddmm(exec, Sbad, A, B, out), InputError);
}

// bf16 / fp16 inputs with fp32 accumulation: exact-input agreement at fp32
// tolerance, and agreement with the unrounded float64 result within the
// documented bound 2 * 2^-p * sum |s a b| (p = 8 for bf16, 11 for fp16).
template <class TI, class Space>
void check_reduced_precision(int p_bits) {
  using Mem = typename Space::memory_space;
  const Space exec;
  auto S = random_sddmm_csr<float>(exec, 45, 37, 6, 17);
  for (int K : {8, 33, 128, 512}) {  // 512: 8 packs per lane, the panels default's bf16 case
    auto A = random_dense<TI>(exec, S.num_rows(), K, 70);
    auto B = random_dense<TI>(exec, S.num_cols, K, 71);
    auto Af = random_dense<float>(exec, S.num_rows(), K, 70);
    auto Bf = random_dense<float>(exec, S.num_cols, K, 71);
    const auto exact = host_reference(S, A, B, true);
    const auto full = host_reference(S, Af, Bf, true);
    for (auto kernel : {SddmmKernel::rowsplit, SddmmKernel::nzsplit, SddmmKernel::sm_l2, SddmmKernel::panels,
                        SddmmKernel::reference}) {
      SddmmOptions o;
      o.kernel = kernel;
      o.tile_cols = 12;
      Kokkos::View<float*, Mem> out("out", S.nnz());
      SddmmPlan<Space, float, TI> plan(exec, S, K, o);
      plan(exec, A, B, out);
      EXPECT_LE(scaled_error(out, exact, K, std::numeric_limits<float>::epsilon()), 1.0) << K;
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
      for (std::size_t e = 0; e < S.nnz(); ++e)
        ASSERT_NEAR(h(e), full.value[e], 2 * std::ldexp(1.0, -p_bits) * full.bound[e] + 1e-6)
            << "K=" << K << " kernel " << to_string(kernel);
    }
  }
}

TYPED_TEST(SddmmTest, ReducedPrecisionInputs) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  if constexpr (std::is_same_v<T, float>) {
    check_reduced_precision<Kokkos::Experimental::bhalf_t, Space>(8);
    check_reduced_precision<Kokkos::Experimental::half_t, Space>(11);
  }
}

// The autotuner returns a configuration that is correct, and caches it.
TYPED_TEST(SddmmTest, AutotuneIsCorrectAndCached) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  auto S = random_sddmm_csr<T>(exec, 64, 48, 6, 31);
  const int K = 32;
  SddmmOptions base;
  base.cache_bytes = 2048;  // the model tiles this small matrix
  const std::string file = std::string(KFACTOR_BINARY_DIR) + "/sddmm_tune_test_" + typeid(T).name() + ".txt";
  std::remove(file.c_str());
  auto r = sddmm_autotune<Space, T>(exec, S, K, base, file, 2);
  EXPECT_FALSE(r.from_cache);
  EXPECT_GE(r.trials.size(), 6u);
  EXPECT_GT(r.best_seconds, 0.0);
  auto A = random_dense<T>(exec, S.num_rows(), K, 1);
  auto B = random_dense<T>(exec, S.num_cols, K, 2);
  Kokkos::View<T*, Mem> out("out", S.nnz());
  SddmmPlan<Space, T>(exec, S, K, r.best).apply(exec, A, B, out);
  EXPECT_LE(scaled_error(out, host_reference(S, A, B, true), K, std::numeric_limits<T>::epsilon()), 1.0);
  auto again = sddmm_autotune<Space, T>(exec, S, K, base, file, 2);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(sddmm_options_string(again.best), sddmm_options_string(r.best));
  // The file alone restores it (as a new process would).
  auto parsed = sddmm_tune_lookup(r.key + "", file);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(sddmm_options_string(*parsed), sddmm_options_string(r.best));
  std::remove(file.c_str());
}

}  // namespace

namespace {
using namespace kfactor;

template <class P>
class SddmmBlockTest : public ::testing::Test {};
TYPED_TEST_SUITE(SddmmBlockTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// Checklist 10 and 12 in one process: the balanced column blocks of S, each
// "rank" holding all of A and only its rows of B and its nonzeros, give
// outputs whose union equals the single-run output bitwise (same kernel
// parameters), for P = 1..4 and P > N (empty parts).
TYPED_TEST(SddmmBlockTest, UnionOfColumnBlocksEqualsSingleRun) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  auto S = kfactor::test::random_sddmm_csr<T>(exec, 50, 13, 4, 77);
  const int K = 24;
  auto A = kfactor::test::random_dense<T>(exec, S.num_rows(), K, 1);
  auto B = kfactor::test::random_dense<T>(exec, S.num_cols, K, 2);
  SddmmOptions o;
  o.kernel = SddmmKernel::rowsplit;
  o.column_tiles = false;
  o.staged = SddmmStaged::a;
  Kokkos::View<T*, Mem> full("full", S.nnz());
  SddmmPlan<Space, T>(exec, S, K, o).apply(exec, A, B, full);
  auto hfull = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, full);
  const auto counts = column_counts(S);
  for (int P : {1, 2, 3, 4, 20}) {
    const auto b = balanced_column_blocks(S, P);
    std::vector<T> merged(S.nnz(), T(-999));
    std::size_t covered = 0;
    for (int p = 0; p < P; ++p) {
      auto blk = extract_column_block(S, b[p], b[p + 1]);
      covered += blk.local.nnz();
      if (blk.local.nnz() == 0) continue;
      auto Bp = Kokkos::subview(B, Kokkos::make_pair(b[p], b[p + 1]), Kokkos::ALL);
      Kokkos::View<T*, Mem> out("out", blk.local.nnz());
      SddmmPlan<Space, T>(exec, blk.local, K, o)(exec, A, Bp, out);
      auto ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
      auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, blk.positions);
      for (std::size_t e = 0; e < ho.extent(0); ++e) merged[hp(e)] = ho(e);
    }
    EXPECT_EQ(covered, S.nnz()) << "P=" << P;
    for (std::size_t e = 0; e < S.nnz(); ++e) ASSERT_EQ(merged[e], hfull(e)) << "P=" << P << " e=" << e;
  }
  EXPECT_EQ(counts.size(), std::size_t(S.num_cols));
}

// L2 hints: the `budget` most used streamed indices (used at least twice)
// stay unmarked, every other nonzero's index carries the cold bit.
TEST(SddmmLayout, MarkColdIndicesKeepsTheMostUsed) {
  const std::vector<ordinal_t> cols = {3, 1, 3, 0, 3, 1, 2, 4, 1, 0, 3};  // uses: 0:2 1:3 2:1 3:4 4:1
  const ordinal_t cold = detail::sddmm_cold_bit;
  auto h = detail::mark_cold_indices(cols, 6, 2);
  EXPECT_EQ(h.hot, 2u);
  EXPECT_EQ(h.cols, (std::vector<ordinal_t>{3, 1, 3, 0 | cold, 3, 1, 2 | cold, 4 | cold, 1, 0 | cold, 3}));
  h = detail::mark_cold_indices(cols, 6, 100);  // indices used once are never kept
  EXPECT_EQ(h.hot, 3u);
  EXPECT_EQ(h.cols, (std::vector<ordinal_t>{3, 1, 3, 0, 3, 1, 2 | cold, 4 | cold, 1, 0, 3}));
  EXPECT_EQ(detail::mark_cold_indices(cols, 6, 0).hot, 0u);
}

// nzsplit's one-row batches: every position of a batch (aligned, the last
// one shorter) carries the bit exactly when all its rows are equal; a batch
// whose first and last rows agree but whose middle ones differ (rows restart
// at tile boundaries) carries none.
// The panel layout: each tile's active rows by nonzero count (most first,
// ties by row), panels of P of them, each panel's nonzeros by streamed index
// and then row, blocks of at most panel_nnz within one panel; the layout is a
// permutation of S's nonzeros (rows, cols and dst agree with S at dst).
TEST(SddmmLayout, PanelLayoutOrdersRowsByCountAndPanelsByStreamedIndex) {
  const auto coo = random_sddmm_pattern(90, 70, 9.0, 17);  // row-major
  const ordinal_t m = 90, n = 70, P = 4;
  const auto nnz = static_cast<offset_t>(coo.rows.size());
  std::vector<offset_t> row_map(m + 1, 0);
  for (auto i : coo.rows) ++row_map[i + 1];
  std::partial_sum(row_map.begin(), row_map.end(), row_map.begin());
  std::vector<ordinal_t> entries(coo.cols.begin(), coo.cols.end());
  for (bool transposed : {false, true})
    for (ordinal_t tile_cols : {ordinal_t(25), ordinal_t(1000)}) {
      detail::SddmmLayoutRequest req;
      req.transposed = transposed;
      req.tile_cols = tile_cols;
      req.rowsplit = false;
      req.panel_rows = P;
      req.panel_nnz = 7;
      const auto L = detail::build_sddmm_layout(row_map.data(), entries.data(), m, n, nnz, req);
      ASSERT_FALSE(L.identity);
      ASSERT_EQ(L.lrow.size(), std::size_t(nnz));
      std::vector<int> seen(static_cast<std::size_t>(nnz), 0);
      for (std::int64_t t = 0; t < L.ntiles; ++t) {
        const auto a0 = static_cast<std::size_t>(L.tile_active_offsets[t]);
        const auto a1 = static_cast<std::size_t>(L.tile_active_offsets[t + 1]);
        std::map<ordinal_t, offset_t> count;  // nonzeros of each staged row in the tile
        for (offset_t e = L.tile_offsets[t]; e < L.tile_offsets[t + 1]; ++e) ++count[L.active_rows[L.lrow[e]]];
        ASSERT_EQ(count.size(), a1 - a0) << "active rows = rows with nonzeros in the tile";
        for (std::size_t a = a0 + 1; a < a1; ++a) {
          const ordinal_t r0 = L.active_rows[a - 1], r1 = L.active_rows[a];
          EXPECT_TRUE(count[r0] > count[r1] || (count[r0] == count[r1] && r0 < r1)) << a;
        }
        for (offset_t e = L.tile_offsets[t]; e < L.tile_offsets[t + 1]; ++e) {
          const offset_t d = L.dst[e];
          ASSERT_TRUE(d >= 0 && d < nnz);
          ++seen[d];
          const auto a = static_cast<std::size_t>(L.lrow[e]);
          ASSERT_TRUE(a >= a0 && a < a1) << e;
          const ordinal_t i =
              static_cast<ordinal_t>(std::upper_bound(row_map.begin(), row_map.end(), d) - row_map.begin() - 1);
          EXPECT_EQ(transposed ? L.cols[e] : L.active_rows[a], i) << e;
          EXPECT_EQ(transposed ? L.active_rows[a] : L.cols[e], entries[d]) << e;
          EXPECT_EQ(L.cols[e] / tile_cols, t) << e;
          if (e > L.tile_offsets[t]) {  // (panel, streamed index, row) ascends
            const auto b = static_cast<std::size_t>(L.lrow[e - 1]);
            EXPECT_LT(std::make_tuple((b - a0) / P, L.cols[e - 1], b), std::make_tuple((a - a0) / P, L.cols[e], a))
                << e;
          }
        }
      }
      EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), nnz);
      // Blocks: consecutive, cover the layout, at most 7 nonzeros, within one panel.
      offset_t next = 0;
      for (const auto& blk : L.blocks) {
        EXPECT_EQ(blk.begin, next);
        EXPECT_GT(blk.end, blk.begin);
        EXPECT_LE(blk.end - blk.begin, 7);
        EXPECT_LE(blk.nrows, P);
        for (offset_t e = blk.begin; e < blk.end; ++e)
          EXPECT_TRUE(L.lrow[e] >= blk.active_begin && L.lrow[e] < blk.active_begin + blk.nrows) << e;
        next = blk.end;
      }
      EXPECT_EQ(next, nnz);
    }
}

// A panel that does not fit a team's scratch is refused with a clear error
// on devices (hosts have no such limit and run it).
TEST(SddmmLayout, PanelsBeyondTheScratchAreRefused) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  const auto S = random_sddmm_csr<float>(exec, 40, 30, 5, 3);
  SddmmOptions o;
  o.kernel = SddmmKernel::panels;
  o.panel_rows = 256;  // 256 rows of K = 4096 floats: 4 MB
  if (detail::SddmmTraits<Space>::gpu)
    EXPECT_THROW((SddmmPlan<Space, float>(exec, S, 4096, o)), UsageError);
  else
    EXPECT_NO_THROW((SddmmPlan<Space, float>(exec, S, 4096, o)));
}

// Automatic plans take panels on long rows with 32 to 64 packs of K (GPUs),
// nzsplit on short rows; CPUs take rowsplit.
TEST(SddmmLayout, AutomaticPlanTakesPanelsOnLongRows) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  for (const double avg : {100.0, 8.0}) {  // M = N (A staged)
    const auto S = random_sddmm_csr<float>(exec, 5000, 5000, avg, 5);
    const double per_row = double(S.nnz()) / 5000;
    ASSERT_TRUE(avg > 50 ? per_row > 64 : per_row < 64) << per_row;
    ASSERT_LT(per_row / 5000, 0.05) << "denser than SM-SM's threshold";
    for (const int K : {32, 128}) {
      SddmmPlan<Space, float> plan(exec, S, K);
      const auto k = plan.info().kernel;
      EXPECT_FALSE(plan.info().transposed);
      if (!detail::SddmmTraits<Space>::gpu)
        EXPECT_EQ(k, SddmmKernel::rowsplit);
      else if (per_row > 64 && K == 128)
        EXPECT_EQ(k, SddmmKernel::panels) << per_row;
      else
        EXPECT_EQ(k, SddmmKernel::nzsplit) << per_row << " K=" << K;
    }
  }
}

// On devices nzsplit runs one wave of resident teams on short rows that fill
// more than 4 waves (8 lanes: two teams per multiprocessor), and in its hinted
// 32-lane form (one team), with many batches per group; those plans still
// match the float64 reference.
TEST(SddmmLayout, ShortRowsRunInOneWaveOnDevices) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  if (!detail::SddmmTraits<Space>::gpu) GTEST_SKIP() << "host spaces run nzsplit one position per work item";
  const Space exec;
  const std::int64_t multiprocessors = std::max<std::int64_t>(exec.concurrency() / 2048, 1);
  struct Case {
    int m, n, K;
    double hints;       // hot_cache_fraction: -1 automatic (none here), 0.5 the hinted form
    int lanes, per_mp;  // expected lanes, resident teams per multiprocessor
  };
  for (const Case c : {Case{200000, 200000, 32, -1.0, 8, 2}, Case{40000, 20000, 128, 0.5, 32, 1}}) {
    const auto S = random_sddmm_csr<float>(exec, c.m, c.n, 5.0, 17);
    SddmmOptions o;
    o.kernel = SddmmKernel::nzsplit;
    o.hot_cache_fraction = c.hints;
    SddmmPlan<Space, float> plan(exec, S, c.K, o);
    const auto& info = plan.info();
    ASSERT_EQ(info.vector_length, c.lanes) << "K=" << c.K;
    const std::int64_t per_team = std::int64_t(info.vector_length) * info.items_per_team;
    const std::int64_t teams = (std::int64_t(S.nnz()) + per_team - 1) / per_team;
    const std::int64_t resident = c.per_mp * multiprocessors;
    EXPECT_LE(teams, resident) << "K=" << c.K << ": " << info.items_per_team << " batches per team";
    EXPECT_GT(teams, resident / 2) << "K=" << c.K << ": one wave should fill the resident slots";
    auto A = random_dense<float>(exec, S.num_rows(), c.K, 71);
    auto B = random_dense<float>(exec, S.num_cols, c.K, 72);
    Kokkos::View<float*, Mem> out("out", S.nnz());
    plan.apply(exec, A, B, out);
    EXPECT_LE(scaled_error(out, host_reference(S, A, B, true), c.K, std::numeric_limits<float>::epsilon()), 1.0)
        << "K=" << c.K;
  }
}

TEST(SddmmLayout, MarkOneRowBatchesFlagsExactlyTheOneRowBatches) {
  const ordinal_t one = detail::sddmm_one_row_bit;
  std::vector<ordinal_t> rows = {0, 0, 0, 0, 0, 0, 1, 1, 5, 9, 2, 5, 7, 7, 7, 7, 3, 3};
  detail::mark_one_row_batches(rows, 4);
  EXPECT_EQ(rows, (std::vector<ordinal_t>{0 | one, 0 | one, 0 | one, 0 | one, 0, 0, 1, 1, 5, 9, 2, 5, 7 | one, 7 | one,
                                          7 | one, 7 | one, 3 | one, 3 | one}));
  std::vector<ordinal_t> single = {4, 2};
  detail::mark_one_row_batches(single, 1);
  EXPECT_EQ(single, (std::vector<ordinal_t>{4 | one, 2 | one}));
}

// The benchmarks' generator (kfactor/sddmm/generate.hpp, the peers' M1 and
// M2): exactly `target` distinct pairs, sorted row-major and in range, with
// power-law columns; and the instance is pinned, so that benchmark records
// of different sessions and spaces time the same matrix (the checksum is the
// one the host-serial generator of session 11 gave).
TEST(SddmmGenerate, PowerLawPatternIsPinnedSortedAndDistinct) {
  const PowerLawSpec spec{3000, 2000, 60000, 1.0, 200.0, 1.0, 60.0, 11};
  const auto c = power_law_pattern<float>(spec);
  ASSERT_EQ(c.rows.size(), std::size_t(spec.target));
  ASSERT_EQ(c.cols.size(), c.rows.size());
  std::vector<std::int64_t> per_col(spec.n, 0);
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over (row, col)
  for (std::size_t e = 0; e < c.rows.size(); ++e) {
    ASSERT_TRUE(c.rows[e] >= 0 && c.rows[e] < spec.m && c.cols[e] >= 0 && c.cols[e] < spec.n) << e;
    if (e > 0) ASSERT_TRUE(c.rows[e - 1] < c.rows[e] || (c.rows[e - 1] == c.rows[e] && c.cols[e - 1] < c.cols[e])) << e;
    ++per_col[c.cols[e]];
    h = (h ^ std::uint64_t(c.rows[e])) * 1099511628211ull;
    h = (h ^ std::uint64_t(c.cols[e])) * 1099511628211ull;
  }
  EXPECT_EQ(h, 7961391102065565324ull);
  const double mean = double(spec.target) / double(spec.n);
  EXPECT_GT(double(*std::max_element(per_col.begin(), per_col.end())), 5 * mean);  // power-law columns (max 9.8x)
  auto other = spec;
  other.seed = 12;
  EXPECT_NE(power_law_pattern<float>(other).cols, c.cols);
}

}  // namespace
