// Readers on small in-memory inputs: every format, its options and its
// error paths (file:line messages), duplicate policies, resource limits,
// format detection.
#include <kfactor/io/read.hpp>

#include "io_test_util.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace {
using namespace kfactor;
using namespace kfactor::io;
using kfactor::test::as_map;
using kfactor::test::expect_canonical;
using kfactor::test::expect_input_error;

template <class T>
class ReadersTyped : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ReadersTyped, Scalars);

// ---- Matrix Market ------------------------------------------------------------

TYPED_TEST(ReadersTyped, MatrixMarketCoordinateReal) {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\n% comment\n\n4 3 4\n4 3 -2.5\n1 1 1e2\n2 3 +0.25\n1 2 3\n";
  ReadInfo info;
  const auto A = parse_matrix_market<TypeParam>(text, "a.mtx", {}, &info);
  expect_canonical(A);
  EXPECT_EQ(A.num_rows, 4);
  EXPECT_EQ(A.num_cols, 3);
  const auto m = as_map(A);
  const std::map<std::pair<int, int>, double> want{{{0, 0}, 100.0}, {{0, 1}, 3.0}, {{1, 2}, 0.25}, {{3, 2}, -2.5}};
  EXPECT_EQ(m, want);
  EXPECT_EQ(info.format, Format::matrix_market);
  EXPECT_EQ(info.entries_read, 4);
  EXPECT_EQ(info.duplicates, 0);
  EXPECT_FALSE(info.pattern);
  EXPECT_EQ(info.detail, "coordinate real general");
  EXPECT_TRUE(has_negative(A));
}

TEST(Readers, MatrixMarketSymmetricExpandsDiagonalOnce) {
  const std::string text = "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 5\n3 1 -2\n2 3 7\n";
  const auto A = parse_matrix_market<double>(text, "s.mtx");
  expect_canonical(A);
  const std::map<std::pair<int, int>, double> want{{{0, 0}, 5}, {{2, 0}, -2}, {{0, 2}, -2}, {{1, 2}, 7}, {{2, 1}, 7}};
  EXPECT_EQ(as_map(A), want);
}

TEST(Readers, MatrixMarketSkewSymmetricNegatesMirror) {
  const auto A =
      parse_matrix_market<double>("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n3 1 2.5\n", "k.mtx");
  const std::map<std::pair<int, int>, double> want{{{2, 0}, 2.5}, {{0, 2}, -2.5}};
  EXPECT_EQ(as_map(A), want);
  expect_input_error(
      [] {
        (void)parse_matrix_market<double>("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n",
                                          "k.mtx");
      },
      "k.mtx", 3, "skew");
}

TEST(Readers, MatrixMarketPatternAndDuplicates) {
  const std::string text = "%%MatrixMarket matrix coordinate pattern general\n2 3 4\n1 3\n2 1\n1 3\n1 1\n";
  ReadInfo info;
  const auto A = parse_matrix_market<float>(text, "p.mtx", {}, &info);
  expect_canonical(A);
  EXPECT_EQ(A.nnz(), 3u);
  EXPECT_EQ(info.duplicates, 1);
  EXPECT_TRUE(info.pattern);
  for (float v : A.values) EXPECT_EQ(v, 1.0f);
  ReadOptions strict;
  strict.duplicates = DuplicatePolicy::error;
  expect_input_error([&] { (void)parse_matrix_market<float>(text, "p.mtx", strict); }, "p.mtx", 5, "first at line 3");
}

TEST(Readers, DuplicatePoliciesOnValuedInput) {
  const std::string text = "%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n2 2 5\n1 1 2\n";
  expect_input_error([&] { (void)parse_matrix_market<double>(text, "d.mtx"); }, "d.mtx", 5, "duplicate entry (1, 1)");
  ReadOptions o;
  o.duplicates = DuplicatePolicy::sum;
  ReadInfo info;
  EXPECT_EQ((as_map(parse_matrix_market<double>(text, "d.mtx", o, &info))),
            (std::map<std::pair<int, int>, double>{{{0, 0}, 3.0}, {{1, 1}, 5.0}}));
  EXPECT_EQ(info.duplicates, 1);
  o.duplicates = DuplicatePolicy::last;
  EXPECT_EQ((as_map(parse_matrix_market<double>(text, "d.mtx", o))),
            (std::map<std::pair<int, int>, double>{{{0, 0}, 2.0}, {{1, 1}, 5.0}}));
}

TEST(Readers, MatrixMarketArrayGeneralAndSymmetric) {
  // 2 x 3, column-major: [[1, 0, 5], [2, 4, 6]]; several values per line allowed.
  const auto A =
      parse_matrix_market<double>("%%MatrixMarket matrix array real general\n2 3\n1\n2\n0 4\n5\n6\n", "a.mtx");
  expect_canonical(A);
  EXPECT_EQ(A.num_rows, 2);
  EXPECT_EQ(A.num_cols, 3);
  EXPECT_EQ((as_map(A)),
            (std::map<std::pair<int, int>, double>{{{0, 0}, 1}, {{1, 0}, 2}, {{1, 1}, 4}, {{0, 2}, 5}, {{1, 2}, 6}}));
  ReadOptions keep;
  keep.keep_zeros = true;
  EXPECT_EQ(
      parse_matrix_market<double>("%%MatrixMarket matrix array real general\n2 3\n1\n2\n0 4\n5\n6\n", "a.mtx", keep)
          .nnz(),
      6u);
  // symmetric 3 x 3, lower triangle by columns: a00 a10 a20 a11 a21 a22
  const auto S = parse_matrix_market<double>("%%MatrixMarket matrix array real symmetric\n3 3\n1 2 3 4 5 6\n", "s.mtx");
  EXPECT_EQ((as_map(S)), (std::map<std::pair<int, int>, double>{{{0, 0}, 1},
                                                                {{1, 0}, 2},
                                                                {{0, 1}, 2},
                                                                {{2, 0}, 3},
                                                                {{0, 2}, 3},
                                                                {{1, 1}, 4},
                                                                {{2, 1}, 5},
                                                                {{1, 2}, 5},
                                                                {{2, 2}, 6}}));
  // skew-symmetric 3 x 3, strictly lower: a10 a20 a21
  const auto K =
      parse_matrix_market<double>("%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n", "k.mtx");
  EXPECT_EQ((as_map(K)), (std::map<std::pair<int, int>, double>{
                             {{1, 0}, 1}, {{0, 1}, -1}, {{2, 0}, 2}, {{0, 2}, -2}, {{2, 1}, 3}, {{1, 2}, -3}}));
}

TEST(Readers, MatrixMarketErrorsNameLine) {
  const std::string h = "%%MatrixMarket matrix coordinate real general\n";
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "3 3 1\n0 1 1\n", "x.mtx"); }, "x.mtx", 3, "1-based");
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "3 3 1\n1 4 1\n", "x.mtx"); }, "x.mtx", 3,
                     "out of range 1..3");
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "3 3 1\n1 1 nan\n", "x.mtx"); }, "x.mtx", 3, "NaN");
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "3 3 2\n1 1 1\n", "x.mtx"); }, "x.mtx", 3,
                     "file ends after 1 of the 2");
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "%c\n3 3 1\n1 1 1\n1 2 1\n", "x.mtx"); }, "x.mtx", 5,
                     "more entries");
  expect_input_error([&] { (void)parse_matrix_market<double>("", "x.mtx"); }, "x.mtx", 1, "empty");
  expect_input_error([&] { (void)parse_matrix_market<float>(h + "1 1 1\n1 1 1e300\n", "x.mtx"); }, "x.mtx", 3, "float");
  for (auto [tok, msg] :
       {std::pair{"99999999999999999999", "64-bit integer range"}, std::pair{"1.5", "must be an integer"},
        std::pair{"abc", "not a number"}, std::pair{"-", "not a number"}, std::pair{"inf", "NaN or Inf"},
        std::pair{"\x01\x02", "'\\x01\\x02'"}})
    expect_input_error([&] { (void)parse_matrix_market<double>(h + "3 3 1\n1 " + tok + " 1\n", "t.mtx"); }, "t.mtx", 3,
                       msg);
  // the same value is fine in double
  EXPECT_EQ(parse_matrix_market<double>(h + "1 1 1\n1 1 1e300\n", "x.mtx").values[0], 1e300);
}

TEST(Readers, HeaderClaimsAreCheckedBeforeAllocating) {
  const std::string h = "%%MatrixMarket matrix coordinate real general\n";
  // 10^12 entries: more than memory (and than the file), refused at the size line.
  expect_input_error(
      [&] { (void)parse_matrix_market<double>(h + "1000000 1000000 1000000000000\n1 1 1\n", "big.mtx"); }, "big.mtx", 2,
      "memory limit");
  // a plausible count in a small memory budget
  ReadOptions small;
  small.memory_limit = 1 << 20;
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "1000 1000 100000\n1 1 1\n", "m.mtx", small); },
                     "m.mtx", 2, "memory limit");
  // more entries than the file can hold: nothing sized by the claim, the
  // file fails at its end
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "10000 10000 10000000\n1 1 1\n", "b.mtx"); }, "b.mtx",
                     3, "file ends after 1 of the 10000000");
  // 32-bit index overflow
  expect_input_error([&] { (void)parse_matrix_market<double>(h + "2147483648 1 0\n", "o.mtx"); }, "o.mtx", 2, "32-bit");
  expect_input_error([&] { (void)parse_bmf<double>("10 10 1000000000000\n0 0\n", "c.in"); }, "c.in", 1,
                     "holds at most 100");
  // the largest legal dimension is fine when nothing is stored and the
  // memory allows its row maps (2 x 2^31 x 16 bytes = 64 GiB)
  ReadOptions huge;
  huge.memory_limit = std::uint64_t(1) << 40;
  const auto A = parse_matrix_market<double>(h + "2147483647 2147483647 0\n", "ok.mtx", huge);
  EXPECT_EQ(A.num_rows, 2147483647);
  EXPECT_EQ(A.nnz(), 0u);
}

// ---- edge lists -------------------------------------------------------------------

TEST(Readers, EdgesCountLineTabsCrlfComments) {
  const std::string text = "# SNAP header\n# Nodes: 5\n7\r\n0\t1\r\n3 \t 2\r\n% konect comment\n4\t0";
  ReadInfo info;
  const auto A = parse_edges<double>(text, "g.txt", {}, &info);
  expect_canonical(A);
  EXPECT_EQ(A.num_rows, 5);
  EXPECT_EQ(A.num_cols, 5);
  EXPECT_EQ((as_map(A)), (std::map<std::pair<int, int>, double>{{{0, 1}, 1}, {{3, 2}, 1}, {{4, 0}, 1}}));
  ASSERT_TRUE(info.header_count.has_value());
  EXPECT_EQ(*info.header_count, 7);
  EXPECT_TRUE(info.pattern);
}

TEST(Readers, EdgesOptions) {
  const std::string text = "0 1\n1 0\n2 5\n2 2\n";
  ReadInfo info;
  auto A = parse_edges<double>(text, "g", {}, &info);
  EXPECT_EQ(A.num_rows, 6);
  EXPECT_EQ(A.nnz(), 4u);
  EXPECT_EQ(info.duplicates, 0);
  ReadOptions o;
  o.square = false;
  A = parse_edges<double>(text, "g", o);
  EXPECT_EQ(A.num_rows, 3);
  EXPECT_EQ(A.num_cols, 6);
  o.symmetrize = true;
  A = parse_edges<double>(text, "g", o, &info);
  EXPECT_EQ(A.num_rows, 6);
  EXPECT_EQ(A.num_cols, 6);
  EXPECT_EQ(A.nnz(), 5u);  // (0,1) (1,0) (2,2) (2,5) (5,2)
  EXPECT_EQ(info.duplicates, 2);
  ReadOptions one;
  one.one_based = true;
  A = parse_edges<double>("1 2\n3 1\n", "g", one);
  EXPECT_EQ((as_map(A)), (std::map<std::pair<int, int>, double>{{{0, 1}, 1}, {{2, 0}, 1}}));
  expect_input_error([&] { (void)parse_edges<double>("1 2\n0 1\n", "g", one); }, "g", 2, "1-based");
}

TEST(Readers, EdgesWeighted) {
  const auto A = parse_edges<double>("0 1 0.5\n1 2 -3\n", "w");
  EXPECT_EQ((as_map(A)), (std::map<std::pair<int, int>, double>{{{0, 1}, 0.5}, {{1, 2}, -3}}));
  expect_input_error([] { (void)parse_edges<double>("0 1 0.5\n1 2 -3\n0 1 2\n", "w"); }, "w", 3, "duplicate");
  expect_input_error([] { (void)parse_edges<double>("0 1 0.5\n1 2\n", "w"); }, "w", 2, "fields");
  expect_input_error([] { (void)parse_edges<double>("0 1\n1 -2\n", "w"); }, "w", 2, "negative");
}

// ---- ratings --------------------------------------------------------------------------

TYPED_TEST(ReadersTyped, RatingsCsvRemapsIdsAscending) {
  const std::string text =
      "userId,movieId,rating,timestamp\r\n30,500,4.0,1\r\n7,20,3.5,2\r\n30,20,5,3\r\n7,9999,0.5,4\r\n";
  ReadInfo info;
  const auto R = parse_ratings<TypeParam>(text, "r.csv", {}, &info);
  expect_canonical(R.matrix);
  EXPECT_EQ(R.user_ids, (std::vector<std::int64_t>{7, 30}));
  EXPECT_EQ(R.item_ids, (std::vector<std::int64_t>{20, 500, 9999}));
  EXPECT_EQ(R.matrix.num_rows, 2);
  EXPECT_EQ(R.matrix.num_cols, 3);
  EXPECT_EQ((as_map(R.matrix)),
            (std::map<std::pair<int, int>, double>{{{0, 0}, 3.5}, {{0, 2}, 0.5}, {{1, 0}, 5}, {{1, 1}, 4}}));
  EXPECT_NE(info.detail.find("header"), std::string::npos);
}

TEST(Readers, RatingsDatTabAndImplicit) {
  const auto D = parse_ratings<double>("1::1193::5::978300760\n2::661::3::978302109\n", "r.dat");
  EXPECT_EQ(D.matrix.nnz(), 2u);
  EXPECT_EQ(D.item_ids, (std::vector<std::int64_t>{661, 1193}));
  const auto T = parse_ratings<double>("196\t242\t3\t881250949\n186  302 3 891717742\n", "u.data");
  EXPECT_EQ(T.user_ids, (std::vector<std::int64_t>{186, 196}));
  EXPECT_EQ((as_map(T.matrix)), (std::map<std::pair<int, int>, double>{{{1, 0}, 3}, {{0, 1}, 3}}));
  ReadInfo info;
  const auto I = parse_ratings<double>("5 6\n5 7\n5 6\n", "imp", {}, &info);  // implicit: pattern
  EXPECT_EQ(I.matrix.nnz(), 2u);
  EXPECT_EQ(info.duplicates, 1);
  expect_input_error([] { (void)parse_ratings<double>("u,i,r\n1,2,3\n1,2,4\n", "dup.csv"); }, "dup.csv", 3,
                     "duplicate entry (1, 2)");
  expect_input_error([] { (void)parse_ratings<double>("u,i,r\n1,2,x\n", "bad.csv"); }, "bad.csv", 2, "rating");
}

// A timestamp column is kept, one per entry in the result's (row, column)
// order, with its separators; duplicates merged by sum or last keep the
// latest timestamp of their lines (not the last line's); files without the
// column have none; a fractional timestamp is refused at its line.
TEST(Readers, RatingsKeepTimestamps) {
  ReadInfo info;
  const auto C = parse_ratings<double>("userId,movieId,rating,timestamp\n30,500,4,17\n7,20,3.5,-2\n30,20,5,9\n",
                                       "r.csv", {}, &info);
  EXPECT_TRUE(info.timestamps);
  // (7, 20), (30, 20), (30, 500) in the result's order.
  EXPECT_EQ(C.timestamps, (std::vector<std::int64_t>{-2, 9, 17}));
  const auto D = parse_ratings<float>("2::661::3::978302109\n1::1193::5::978300760\n", "r.dat");
  EXPECT_EQ(D.timestamps, (std::vector<std::int64_t>{978300760, 978302109}));
  const auto W = parse_ratings<double>("196\t242\t3\t9223372036854775807\n186 302 3 0\n", "u.data");
  EXPECT_EQ(W.timestamps, (std::vector<std::int64_t>{0, 9223372036854775807}));
  // (1, 2) three times, its latest line not the last; (1, 3) once.
  const std::string dup = "1 2 1 50\n1 3 4 7\n1 2 2 80\n1 2 3 60\n";
  for (const auto policy : {DuplicatePolicy::sum, DuplicatePolicy::last}) {
    ReadOptions o;
    o.duplicates = policy;
    const auto M = parse_ratings<double>(dup, "dup", o);
    EXPECT_EQ(M.timestamps, (std::vector<std::int64_t>{80, 7})) << duplicate_policy_name(policy);
    EXPECT_EQ(M.matrix.values[0], policy == DuplicatePolicy::sum ? 6.0 : 3.0);
  }
  ReadInfo none;
  const auto N = parse_ratings<double>("u,i,r\n1,2,3\n2,2,1\n", "n.csv", {}, &none);
  EXPECT_TRUE(N.timestamps.empty());
  EXPECT_FALSE(none.timestamps);
  expect_input_error([] { (void)parse_ratings<double>("u,i,r,t\n1,2,3,5\n1,3,3,5.5\n", "f.csv"); }, "f.csv", 3,
                     "timestamp must be an integer");
}

// ---- Boolean and dense ----------------------------------------------------------------

TEST(Readers, BmfFormat) {
  ReadInfo info;
  const auto B = parse_bmf<float>("3 4 3\n2 3\n0 0\n1 2\n", "b.in", {}, &info);
  expect_canonical(B);
  EXPECT_EQ(B.num_rows, 3);
  EXPECT_EQ(B.num_cols, 4);
  EXPECT_EQ((as_map(B)), (std::map<std::pair<int, int>, double>{{{0, 0}, 1}, {{1, 2}, 1}, {{2, 3}, 1}}));
  expect_input_error([] { (void)parse_bmf<float>("3 4 2\n0 0\n3 1\n", "b.in"); }, "b.in", 3, "0-based");
  expect_input_error([] { (void)parse_bmf<float>("3 4 2\n0 0\n", "b.in"); }, "b.in", 2, "file ends after 1 of the 2");
}

TEST(Readers, DenseText) {
  const auto D = parse_dense<double>("0 1 1 0\n1 0 0 0.5\n\n0 0 0 0\n", "d.txt");
  expect_canonical(D);
  EXPECT_EQ(D.num_rows, 3);
  EXPECT_EQ(D.num_cols, 4);
  EXPECT_EQ(D.nnz(), 4u);
  expect_input_error([] { (void)parse_dense<double>("0 1\n1\n", "d.txt"); }, "d.txt", 2, "first row");
}

// ---- detection, names, stats --------------------------------------------------------------

TEST(Readers, DetectFormat) {
  EXPECT_EQ(detect_format("%%matrixmarket matrix coordinate real general\n1 1 0\n"), Format::matrix_market);
  EXPECT_EQ(detect_format("whatever", "x.MTX"), Format::matrix_market);
  EXPECT_EQ(detect_format("1,2,3\n"), Format::ratings);
  EXPECT_EQ(detect_format("userId movieId rating\n1 2 3\n"), Format::ratings);
  EXPECT_EQ(detect_format("1::2::3::4\n"), Format::ratings);
  EXPECT_EQ(detect_format("1 2 3 4\n"), Format::ratings);
  EXPECT_EQ(detect_format("10 20 3\n0 1\n2 3\n4 5\n"), Format::bmf);
  expect_input_error([] { (void)detect_format("# w\n0 1 0.5\n1 2 3\n", "g.txt"); }, "g.txt", 2, "--format");
  EXPECT_EQ(detect_format("# c\n6350\n0\t1\n"), Format::edges);
  EXPECT_EQ(detect_format("0 1\n"), Format::edges);
  EXPECT_EQ(detect_format(std::string_view("\x7f"
                                           "ELF\x00\x01 2\n",
                                           9)),
            Format::dense);  // binary: not a header, not ids
  EXPECT_EQ(detect_format("0 1 1 0 1\n1 1 0 0 1\n"), Format::dense);
  EXPECT_EQ(detect_format("1 2", "r.csv"), Format::ratings);
  for (auto f : {Format::automatic, Format::matrix_market, Format::edges, Format::ratings, Format::bmf, Format::dense})
    EXPECT_EQ(parse_format(format_name(f)), f);
  EXPECT_THROW(parse_format("xml"), UsageError);
  EXPECT_THROW(parse_duplicate_policy("max"), UsageError);
  // parse_matrix dispatches on the detected format
  EXPECT_EQ(parse_matrix<double>("10 20 2\n0 1\n2 3\n", "b").num_rows, 10);
}

TEST(Readers, StatsAndNegatives) {
  const auto A = parse_matrix_market<double>(
      "%%MatrixMarket matrix coordinate real general\n4 5 3\n1 1 -2\n1 3 0\n3 3 7\n", "s.mtx");
  const auto s = coo_stats(A);
  EXPECT_EQ(s.empty_rows, 2);
  EXPECT_EQ(s.empty_cols, 3);
  EXPECT_EQ(s.negatives, 1);
  EXPECT_EQ(s.zeros, 1);
  EXPECT_EQ(s.min_value, -2.0);
  EXPECT_EQ(s.max_value, 7.0);
  EXPECT_DOUBLE_EQ(s.density, 3.0 / 20.0);
  EXPECT_TRUE(has_negative(A));
}

TEST(Readers, LargeInputIsLinear) {
  // 200K edges (about 2.4 MB): the parser must not be quadratic; also checks
  // duplicates merge in a big unsorted input. No timing assertion (see perf/).
  std::string text;
  text.reserve(3u << 20);
  for (int k = 0; k < 200000; ++k) {
    text += std::to_string((k * 7919LL) % 50000);
    text += '\t';
    text += std::to_string((k * 104729LL) % 40000);
    text += '\n';
  }
  ReadInfo info;
  const auto A = parse_edges<float>(text, "big", {}, &info);
  expect_canonical(A);
  EXPECT_EQ(A.num_rows, 50000);
  EXPECT_EQ(static_cast<std::int64_t>(A.nnz()) + info.duplicates, 200000);
}

}  // namespace
