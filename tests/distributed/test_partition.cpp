// Partitions (kfactor/distributed/partition.hpp) against their definitions,
// checked by brute force on random counts with fixed seeds: row blocks tile
// the rows in rank order with sizes differing by at most one; column blocks
// start where the prefix count first reaches p * nnz / P.
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/partition.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

using namespace kfactor;

TEST(Partition, BalancedRowBlocksTileTheRowsInRankOrder) {
  for (int size : {1, 2, 3, 7, 16})
    for (std::int64_t rows : {0, 1, 5, 23, 1000003}) {
      std::int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        const auto b = distributed::balanced_row_block(rows, size, r);
        EXPECT_EQ(b.global_rows, rows);
        EXPECT_EQ(b.first_row, next) << "rows " << rows << " rank " << r << " of " << size;
        const std::int64_t end = r + 1 < size ? distributed::balanced_row_block(rows, size, r + 1).first_row : rows;
        // The first rows % size ranks hold one row more.
        EXPECT_EQ(end - b.first_row, rows / size + (r < rows % size ? 1 : 0));
        next = end;
      }
      EXPECT_EQ(next, rows);
    }
}

TEST(Partition, RowBlocksRefuseImpossibleRanks) {
  EXPECT_THROW(distributed::balanced_row_block(5, 2, 2), UsageError);
  EXPECT_THROW(distributed::balanced_row_block(5, 2, -1), UsageError);
  EXPECT_THROW(distributed::balanced_row_block(5, 0, 0), UsageError);
  EXPECT_THROW(distributed::balanced_row_block(-1, 2, 0), UsageError);
}

/// The definition, literally: b_p is the smallest c with prefix(c) * P >= p * nnz.
std::vector<ordinal_t> reference_column_blocks(const std::vector<offset_t>& counts, int parts) {
  std::vector<long double> prefix(counts.size() + 1, 0);
  for (std::size_t c = 0; c < counts.size(); ++c) prefix[c + 1] = prefix[c] + static_cast<long double>(counts[c]);
  const long double nnz = prefix.back();
  std::vector<ordinal_t> b(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p) {
    std::size_t c = 0;
    while (c < counts.size() && prefix[c] * parts < p * nnz) ++c;
    b[static_cast<std::size_t>(p)] = static_cast<ordinal_t>(c);
  }
  b.back() = static_cast<ordinal_t>(counts.size());
  return b;
}

TEST(Partition, BalancedColumnBlocksMatchTheDefinitionAndBoundTheLoad) {
  const CounterRng rng(31, RngStream::user);
  std::uint64_t draw = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto n = static_cast<std::size_t>(rng.bits(draw++) % 200);
    std::vector<offset_t> counts(n);
    const bool heavy = trial % 3 == 0;  // a few columns much denser than the rest
    for (auto& c : counts) {
      c = static_cast<offset_t>(rng.bits(draw++) % 20);
      if (heavy && rng.uniform(draw++) < 0.05) c *= 100;
    }
    const offset_t nnz = [&] {
      offset_t s = 0;
      for (auto c : counts) s += c;
      return s;
    }();
    const offset_t max_col = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
    for (int parts : {1, 2, 3, 8, 301}) {
      const auto b = distributed::balanced_column_blocks(counts, parts);
      ASSERT_EQ(b, reference_column_blocks(counts, parts)) << "trial " << trial << " parts " << parts;
      ASSERT_EQ(b.front(), 0);
      ASSERT_EQ(b.back(), static_cast<ordinal_t>(n));
      for (int p = 0; p < parts; ++p) {
        ASSERT_LE(b[p], b[p + 1]);
        offset_t load = 0;
        for (auto c = b[p]; c < b[p + 1]; ++c) load += counts[static_cast<std::size_t>(c)];
        EXPECT_LE(load * parts, nnz + max_col * parts) << "part " << p << " of " << parts;
      }
    }
  }
  EXPECT_THROW(distributed::balanced_column_blocks(std::vector<offset_t>{1, 2}, 0), UsageError);
}

TEST(Partition, ColumnBlocksSurviveCountsWhoseProductsOverflow64Bits) {
  // nnz = 2^63, so p * nnz exceeds 2^64 here: the split must still be the exact one.
  const offset_t big = offset_t(1) << 61;
  const std::vector<offset_t> counts{big, big, big, big};
  EXPECT_EQ(distributed::balanced_column_blocks(counts, 4), (std::vector<ordinal_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(distributed::balanced_column_blocks(counts, 2), (std::vector<ordinal_t>{0, 2, 4}));
}

}  // namespace
