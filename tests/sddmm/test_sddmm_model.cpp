// The paper's models and the column partition (digest 004, checklist items
// 3, 4, 5, 10, 11, 15). Host-only arithmetic.
#include <kfactor/core/random.hpp>
#include <kfactor/sddmm/options.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace {
using namespace kfactor;

// Checklist 3: NYTimes on the P100.
TEST(SddmmModel, TileWidthReproducesThePaper) {
  const double rho = 69679427.0 / (300000.0 * 102660.0);
  const auto tj = model_tile_cols_raw(1048576.0, rho, 3.0);
  EXPECT_EQ(tj, 12429);
  const auto rounded = round_tile_cols(tj, 5000, 102660);
  EXPECT_EQ(rounded, 15000);
  EXPECT_EQ(tile_count(102660, rounded), 7);
  // L2 in bytes instead of floats: 25,000 -> 5 tiles (the digest's note).
  EXPECT_EQ(tile_count(102660, round_tile_cols(model_tile_cols_raw(4.0 * 1048576.0, rho, 3.0), 5000, 102660)), 5);
  // T_j >= N means no tiling.
  EXPECT_EQ(round_tile_cols(200000, 5000, 102660), 102660);
  EXPECT_EQ(tile_count(102660, 102660), 1);
  EXPECT_EQ(round_tile_cols(1, 1, 10), 1);
}

// Checklist 4: with T_j T_k = L2, 1/T_j + c rho / T_k is smallest at sqrt(L2 / (c rho)).
TEST(SddmmModel, GridSearchMinimumIsTheModel) {
  for (double rho : {0.002262, 0.0001, 0.05}) {
    const double L2 = 1048576.0, c = 3.0;
    double best = std::numeric_limits<double>::infinity(), best_tj = 0;
    for (double tj = 1; tj < 2e6; tj *= 1.001) {
      const double tk = L2 / tj;
      const double f = 1.0 / tj + c * rho / tk;
      if (f < best) {
        best = f;
        best_tj = tj;
      }
    }
    const double model = std::sqrt(L2 / (c * rho));
    EXPECT_NEAR(best_tj / model, 1.0, 0.002) << rho;
    EXPECT_NEAR(double(model_tile_cols_raw(L2, rho, c)), model, 1.0);
    EXPECT_NEAR(best, 2 * std::sqrt(c * rho / L2), 1e-6 * best);  // AM-GM bound reached
  }
}

// Checklist 5: eq. 4 costs differ by exactly K (N - M) when T_i = T_j; the
// chooser keeps the matrix with fewer rows resident (stages the other).
TEST(SddmmModel, Eq4DifferenceAndChoice) {
  for (auto [m, n] : {std::pair{300000.0, 102660.0}, std::pair{1000.0, 5000.0}, std::pair{7.0, 7.0}}) {
    const double K = 128, T = 1500, nnz = 1e6;
    const auto t = eq4_traffic(m, n, nnz, K, T, T, 64, 3.0);
    EXPECT_NEAR(t.a_staged - t.b_staged, K * (n - m), 1e-9 * std::abs(t.a_staged));
  }
  EXPECT_EQ(eq4_choice(300000, 102660), SddmmStaged::a);  // N < M: B resident, A staged
  EXPECT_EQ(eq4_choice(1000, 5000), SddmmStaged::b);
  EXPECT_EQ(eq4_choice(10, 10), SddmmStaged::a);
}

// Checklist 7 (the arithmetic; the plan test checks the blocks) and 13's rule.
TEST(SddmmModel, BlockAndTileSizes) {
  // 32 KB of floats: T_i = 256 / ... / 16 for T_k = 32 / ... / 512 (Alg. 4).
  EXPECT_EQ(sm_l2_rows_per_block(32768, 32, 4), 256);
  EXPECT_EQ(sm_l2_rows_per_block(32768, 512, 4), 16);
  // SM-SM: (T_i + T_j) K sizeof <= scratch; the paper's K80 example, 48 KB, K = 32, double: T = 96.
  const int t = sm_sm_tile(48 * 1024 + 96 * 8, 32, 8);
  EXPECT_EQ(t, 96);
  for (int K : {1, 32, 100, 512})
    for (std::size_t s : {4096u, 49152u}) {
      const int tt = sm_sm_tile(s, K, 4);
      EXPECT_LE(std::size_t(2 * tt) * K * 4, s);
      EXPECT_GT(std::size_t(2 * (tt + 1)) * K * 4 + (tt + 1) * 8, s);
    }
}

// Checklist 10: contiguous, covers every column once, each part <= nnz/P + max column.
TEST(SddmmPartition, BalancedBlocksProperty) {
  const CounterRng rng(5, RngStream::user);
  std::uint64_t ctr = 0;
  for (int n : {1, 2, 17, 1000}) {
    for (int skew : {0, 1}) {
      std::vector<offset_t> counts(n);
      for (int j = 0; j < n; ++j) {
        const double u = rng.uniform(ctr++);
        counts[j] = skew ? static_cast<offset_t>(5.0 / std::max(u, 1e-3)) : static_cast<offset_t>(10 * u);
        if (j % 7 == 3) counts[j] = 0;  // empty columns
      }
      const offset_t nnz = std::accumulate(counts.begin(), counts.end(), offset_t(0));
      const offset_t maxc = *std::max_element(counts.begin(), counts.end());
      for (int P : {1, 2, 3, 4, 7, n + 3}) {
        const auto b = balanced_column_blocks(counts, P);
        ASSERT_EQ(b.size(), std::size_t(P) + 1);
        EXPECT_EQ(b.front(), 0);
        EXPECT_EQ(b.back(), n);
        offset_t total = 0;
        int empty_parts = 0;
        for (int p = 0; p < P; ++p) {
          ASSERT_LE(b[p], b[p + 1]);
          offset_t part = 0;
          for (int j = b[p]; j < b[p + 1]; ++j) part += counts[j];
          total += part;
          EXPECT_LE(double(part), double(nnz) / P + double(maxc)) << "n=" << n << " P=" << P << " p=" << p;
          empty_parts += b[p] == b[p + 1];
        }
        EXPECT_EQ(total, nnz);
        if (P > n) {
          EXPECT_GE(empty_parts, P - n);
        }
      }
    }
  }
  EXPECT_THROW(balanced_column_blocks(std::vector<offset_t>{1, 2}, 0), UsageError);
  const auto eq = equal_column_blocks(10, 3);
  EXPECT_EQ(eq, (std::vector<ordinal_t>{0, 3, 6, 10}));
}

// Checklist 11 (synthetic): with columns sorted by degree (power law, the
// digest's reading of NYTimes's vocabulary order) an equal 2-way split puts
// most nonzeros on one side while the balanced split halves them; after a
// random column permutation the equal split is balanced too.
TEST(SddmmPartition, EqualSplitOfSortedPowerLawIsSkewed) {
  const int n = 102660;
  std::vector<offset_t> counts(n);
  for (int j = 0; j < n; ++j) counts[j] = static_cast<offset_t>(2e6 / (j + 60.0));
  const offset_t nnz = std::accumulate(counts.begin(), counts.end(), offset_t(0));
  auto share = [&](const std::vector<ordinal_t>& b) {
    offset_t first = 0;
    for (int j = b[0]; j < b[1]; ++j) first += counts[j];
    return double(first) / double(nnz);
  };
  EXPECT_GT(share(equal_column_blocks(n, 2)), 0.85);
  EXPECT_NEAR(share(balanced_column_blocks(counts, 2)), 0.5, 0.01);
  // Random permutation (Fisher-Yates with the counter RNG).
  const CounterRng rng(9, RngStream::user);
  for (int j = n - 1; j > 0; --j) std::swap(counts[j], counts[static_cast<int>(rng.uniform(j) * (j + 1))]);
  EXPECT_NEAR(share(equal_column_blocks(n, 2)), 0.5, 0.05);
}

// The timed split's re-partition: blocks balanced by real weights, each
// part within total / P + the heaviest column of the ideal share; integer
// weights give the nonzero-balanced blocks; bad weights are refused.
TEST(SddmmPartition, WeightedBlocksBalanceRealWeights) {
  const CounterRng rng(21, RngStream::user);
  for (int n : {1, 7, 500}) {
    std::vector<double> w(n);
    std::vector<offset_t> integer(n);
    for (int j = 0; j < n; ++j) {
      integer[j] = static_cast<offset_t>(1 + 1000 * rng.uniform(std::uint64_t(j)) / (j + 1));
      w[j] = double(integer[j]);
    }
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    const double heaviest = *std::max_element(w.begin(), w.end());
    for (int P : {1, 2, 3, 8, 600}) {
      const auto b = weighted_column_blocks(w, P);
      ASSERT_EQ(b.size(), std::size_t(P) + 1);
      EXPECT_EQ(b.front(), 0);
      EXPECT_EQ(b.back(), n);
      EXPECT_EQ(b, balanced_column_blocks(integer, P)) << "n=" << n << " P=" << P;
      for (int p = 0; p < P; ++p) {
        ASSERT_LE(b[p], b[p + 1]);
        const double part = std::accumulate(w.begin() + b[p], w.begin() + b[p + 1], 0.0);
        EXPECT_LE(part, total / P + heaviest + 1e-9) << "n=" << n << " P=" << P << " p=" << p;
      }
    }
  }
  // Doubling the weight of the first half moves the boundary left.
  std::vector<double> w(100, 1.0);
  EXPECT_EQ(weighted_column_blocks(w, 2), (std::vector<ordinal_t>{0, 50, 100}));
  for (int j = 0; j < 50; ++j) w[j] = 2.0;
  EXPECT_EQ(weighted_column_blocks(w, 2), (std::vector<ordinal_t>{0, 38, 100}));
  EXPECT_THROW(weighted_column_blocks({1.0, -1.0}, 2), UsageError);
  EXPECT_THROW(weighted_column_blocks({1.0, std::nan("")}, 2), UsageError);
  EXPECT_THROW(weighted_column_blocks({1.0}, 0), UsageError);
  EXPECT_EQ(parse_column_split("timed"), ColumnSplit::timed);
  EXPECT_STREQ(to_string(parse_column_split("equal")), "equal");
  EXPECT_THROW(parse_column_split("nnz"), UsageError);
}

// Checklist 15: Amdahl reproduces Table IV.
TEST(SddmmModel, AmdahlReproducesTableIV) {
  EXPECT_NEAR(amdahl_speedup(0.5314, 4.15), 1.676, 0.001);
  EXPECT_NEAR(amdahl_speedup(0.5370, 4.03), 1.677, 0.001);
  EXPECT_NEAR(amdahl_speedup(0.4252, 4.64), 1.501, 0.001);
}

TEST(SddmmModel, OptionsValidate) {
  SddmmOptions o;
  EXPECT_NO_THROW(o.validate());
  o.vector_length = 3;
  EXPECT_THROW(o.validate(), UsageError);
  o = {};
  o.tk = 40;
  EXPECT_THROW(o.validate(), UsageError);
  for (double f : {-0.5, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    o = {};
    o.hot_cache_fraction = f;
    EXPECT_THROW(o.validate(), UsageError) << f;
  }
  o.hot_cache_fraction = 0.25;
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(parse_sddmm_kernel("sm_l2"), SddmmKernel::sm_l2);
  EXPECT_EQ(parse_sddmm_kernel("nzsplit"), SddmmKernel::nzsplit);
  EXPECT_EQ(parse_sddmm_kernel("panels"), SddmmKernel::panels);
  for (int rows : {-1, 257}) {
    o = {};
    o.panel_rows = rows;
    EXPECT_THROW(o.validate(), UsageError) << rows;
  }
  o = {};
  o.panel_nnz = -1;
  EXPECT_THROW(o.validate(), UsageError);
  EXPECT_THROW(parse_sddmm_kernel("fast"), UsageError);
}

}  // namespace
