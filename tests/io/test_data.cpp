// Readers on the real files in ../shared/data: shapes and counts as the data
// README states them, plus checksums computed independently (awk) from the
// raw text, so a reader that drops or shifts entries fails.
#include <kfactor/io/read.hpp>

#include "common/test_spaces.hpp"
#include "io_test_util.hpp"

#include <filesystem>
#include <numeric>

namespace {
using namespace kfactor;
using namespace kfactor::io;
using kfactor::test::data_path;
using kfactor::test::expect_canonical;

bool have_data(const std::string& rel) { return std::filesystem::exists(data_path(rel)); }
#define REQUIRE_DATA(rel) \
  if (!have_data(rel)) GTEST_SKIP() << "missing " << data_path(rel)

/// sum over entries of (a * row + b * col), in 64 bits.
template <class T>
std::int64_t index_checksum(const CooMatrix<T>& A, std::int64_t a, std::int64_t b) {
  std::int64_t s = 0;
  for (std::size_t e = 0; e < A.nnz(); ++e) s += a * A.rows[e] + b * A.cols[e];
  return s;
}

TEST(RealData, FacebookEdges) {
  REQUIRE_DATA("snap/facebook_combined.txt");
  const auto path = data_path("snap/facebook_combined.txt");
  ReadInfo info;
  const auto A = read_matrix<double>(path, Format::automatic, {}, &info);
  expect_canonical(A);
  EXPECT_EQ(info.format, Format::edges);
  EXPECT_EQ(A.num_rows, 4039);
  EXPECT_EQ(A.num_cols, 4039);
  EXPECT_EQ(A.nnz(), 88234u);
  EXPECT_EQ(info.entries_read, 88234);
  EXPECT_EQ(info.duplicates, 0);
  EXPECT_FALSE(info.header_count.has_value());
  EXPECT_EQ(index_checksum(A, 1, 2), 456933980);
  // undirected: each edge once in the file, both directions after symmetrize (no self loops)
  ReadOptions sym;
  sym.symmetrize = true;
  const auto S = read_edges<float>(path, sym, &info);
  EXPECT_EQ(S.nnz(), 2u * 88234u);
  EXPECT_EQ(info.duplicates, 0);
}

TEST(RealData, GnutellaEdgesWithCountLineTabsCrlf) {
  REQUIRE_DATA("snap/p2p-Gnutella08.txt");
  ReadInfo info;
  const auto A = read_matrix<float>(data_path("snap/p2p-Gnutella08.txt"), Format::automatic, {}, &info);
  expect_canonical(A);
  EXPECT_EQ(info.format, Format::edges);
  EXPECT_EQ(A.num_rows, 6301);
  EXPECT_EQ(A.num_cols, 6301);
  EXPECT_EQ(A.nnz(), 20777u);
  ASSERT_TRUE(info.header_count.has_value());
  EXPECT_EQ(*info.header_count, 6350);
  EXPECT_EQ(info.lines, 20778);
  EXPECT_EQ(index_checksum(A, 1, 2), 148867542);
  EXPECT_EQ(A.rows[0], 0);
  EXPECT_EQ(A.cols[0], 1);
}

TEST(RealData, MovieLensRatings) {
  REQUIRE_DATA("movielens-latest-small/ratings.csv");
  const auto path = data_path("movielens-latest-small/ratings.csv");
  ReadInfo info;
  const auto R = read_ratings<double>(path, {}, &info);
  expect_canonical(R.matrix);
  EXPECT_EQ(info.format, Format::ratings);
  EXPECT_EQ(R.matrix.num_rows, 610);
  EXPECT_EQ(R.matrix.num_cols, 9724);  // distinct movies that have a rating
  EXPECT_EQ(R.matrix.nnz(), 100836u);
  ASSERT_EQ(R.user_ids.size(), 610u);
  ASSERT_EQ(R.item_ids.size(), 9724u);
  EXPECT_EQ(R.user_ids.front(), 1);
  EXPECT_EQ(R.user_ids.back(), 610);
  EXPECT_TRUE(std::is_sorted(R.item_ids.begin(), R.item_ids.end()));
  const double sum = std::accumulate(R.matrix.values.begin(), R.matrix.values.end(), 0.0);
  EXPECT_DOUBLE_EQ(sum, 353083.0);
  const auto s = coo_stats(R.matrix);
  EXPECT_EQ(s.min_value, 0.5);
  EXPECT_EQ(s.max_value, 5.0);
  EXPECT_EQ(s.empty_rows, 0);
  EXPECT_EQ(s.empty_cols, 0);
  // first line of data: user 1 rated movie 1 with 4.0 -> entry (0, 0)
  EXPECT_EQ(R.matrix.rows[0], 0);
  EXPECT_EQ(R.matrix.cols[0], 0);
  EXPECT_EQ(R.matrix.values[0], 4.0);
  // auto detection gives the same matrix
  const auto A = read_matrix<double>(path);
  EXPECT_EQ(A.nnz(), R.matrix.nnz());
  EXPECT_EQ(A.values, R.matrix.values);
}

TEST(RealData, BooleanThesisFiles) {
  struct Case {
    const char* file;
    std::int64_t rows, cols, nnz, checksum;  // checksum: sum of 3*row + col
  };
  for (const Case c :
       {Case{"bmf/APatio.in", 1686, 962, 12080, 34950944}, Case{"bmf/AOffice.in", 4905, 2420, 50402, 383973433},
        Case{"bmf/ATools.in", 16638, 10217, 124371, 3413158623},
        Case{"bmf/c_salt_MovieRec.in", 4442, 1995, 326048, 2523375801}}) {
    SCOPED_TRACE(c.file);
    if (!have_data(c.file)) continue;
    ReadInfo info;
    const auto B = read_matrix<float>(data_path(c.file), Format::automatic, {}, &info);
    expect_canonical(B);
    EXPECT_EQ(info.format, Format::bmf);
    EXPECT_EQ(B.num_rows, c.rows);
    EXPECT_EQ(B.num_cols, c.cols);
    EXPECT_EQ(static_cast<std::int64_t>(B.nnz()), c.nnz);
    EXPECT_EQ(info.duplicates, 0);
    if (c.checksum) EXPECT_EQ(index_checksum(B, 3, 1), c.checksum);
    for (float v : B.values) ASSERT_EQ(v, 1.0f);
  }
}

}  // namespace
