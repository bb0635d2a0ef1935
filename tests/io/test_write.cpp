// Writers, checked by reading back: exact (bit-identical) round trips for
// float and double, from host COO, from CSR and dense Views in every enabled
// space; the factor CSV with original ids; failures as RuntimeFailure.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include "common/test_spaces.hpp"
#include "io_test_util.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace {
using namespace kfactor;
using kfactor::test::TempDir;

/// Random COO with distinct pairs (sorted), values spanning many magnitudes
/// and signs so that a lossy number format would show.
template <class T>
CooMatrix<T> random_coo(std::int64_t m, std::int64_t n, double density, std::uint64_t seed) {
  CooMatrix<T> A;
  A.num_rows = m;
  A.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const auto c = static_cast<std::uint64_t>(i * n + j);
      if (rng.uniform(c) < density) {
        A.rows.push_back(static_cast<ordinal_t>(i));
        A.cols.push_back(static_cast<ordinal_t>(j));
        const double mag = std::pow(10.0, 12.0 * rng.uniform(c + (1ull << 40)) - 6.0);
        A.values.push_back(static_cast<T>((rng.uniform(c + (2ull << 40)) < 0.3 ? -1 : 1) * mag / 3.0));
      }
    }
  return A;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

template <class T>
class WriteTyped : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(WriteTyped, Scalars);

TYPED_TEST(WriteTyped, CooRoundTripIsExact) {
  TempDir dir;
  const auto A = random_coo<TypeParam>(37, 53, 0.2, 7);
  ASSERT_GT(A.nnz(), 100u);
  const auto path = dir.file("a.mtx");
  io::write_matrix_market(path, A, "round trip\nsecond line");
  const std::string text = slurp(path);
  EXPECT_EQ(text.rfind("%%MatrixMarket matrix coordinate real general\n% round trip\n% second line\n", 0), 0u);
  io::ReadInfo info;
  const auto B = io::read_matrix<TypeParam>(path, io::Format::automatic, {}, &info);
  EXPECT_EQ(info.format, io::Format::matrix_market);
  EXPECT_EQ(B.num_rows, A.num_rows);
  EXPECT_EQ(B.num_cols, A.num_cols);
  EXPECT_EQ(B.rows, A.rows);
  EXPECT_EQ(B.cols, A.cols);
  EXPECT_EQ(B.values, A.values);  // bit-identical
}

template <class Space>
class WriteSpaces : public ::testing::Test {};
TYPED_TEST_SUITE(WriteSpaces, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(WriteSpaces, CsrRoundTrip) {
  const TypeParam exec;
  TempDir dir;
  auto A = random_coo<double>(41, 29, 0.15, 11);
  A.num_rows = 45;  // trailing empty rows survive
  const auto csr = to_csr(exec, A);
  const auto path = dir.file("csr.mtx");
  io::write_matrix_market(path, csr);
  EXPECT_NE(slurp(path).find("\n% written by kfactor\n"), std::string::npos);
  const auto B = io::read_matrix_market<double>(path);
  EXPECT_EQ(B.num_rows, 45);
  EXPECT_EQ(B.num_cols, 29);
  EXPECT_EQ(B.rows, A.rows);
  EXPECT_EQ(B.cols, A.cols);
  EXPECT_EQ(B.values, A.values);
}

TYPED_TEST(WriteSpaces, DenseArrayRoundTrip) {
  using Mem = typename TypeParam::memory_space;
  const std::int64_t m = 13, n = 6;
  DenseMatrix<float, Mem> F("F", m, n);
  fill_uniform(TypeParam(), F, 5, RngStream::user, -1.0f, 1.0f);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), F);
  h(3, 2) = 0.0f;  // an explicit zero
  Kokkos::deep_copy(F, h);
  TempDir dir;
  const auto path = dir.file("f.mtx");
  io::write_matrix_market_array(path, F, "factor W");
  io::ReadOptions keep;
  keep.keep_zeros = true;
  const auto B = io::read_matrix<float>(path, io::Format::automatic, keep);
  ASSERT_EQ(B.nnz(), static_cast<std::size_t>(m * n));
  for (std::size_t e = 0; e < B.nnz(); ++e) EXPECT_EQ(B.values[e], h(B.rows[e], B.cols[e]));
  EXPECT_EQ(io::read_matrix<float>(path).nnz(), static_cast<std::size_t>(m * n - 1));  // zero dropped by default
}

TYPED_TEST(WriteSpaces, FactorCsvKeepsOriginalIds) {
  using Mem = typename TypeParam::memory_space;
  // Ids from a ratings file: the factor rows get them back.
  const auto R = io::parse_ratings<double>("u,i,r\n30,7,1\n7,8,2\n1000,7,3\n", "r.csv");
  DenseMatrix<double, Mem> W("W", R.user_ids.size(), 3);
  fill_uniform(TypeParam(), W, 9, RngStream::user, 0.0, 1.0);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), W);
  TempDir dir;
  const auto path = dir.file("W.csv");
  io::write_factor_csv(path, W, R.user_ids);
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "id,f0,f1,f2");
  for (std::size_t i = 0; i < R.user_ids.size(); ++i) {
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream row(line);
    std::string field;
    std::getline(row, field, ',');
    EXPECT_EQ(std::stoll(field), R.user_ids[i]);
    for (int k = 0; k < 3; ++k) {
      std::getline(row, field, ',');
      EXPECT_EQ(std::strtod(field.c_str(), nullptr), h(i, k));
    }
  }
  EXPECT_FALSE(std::getline(in, line));
  EXPECT_THROW(io::write_factor_csv(path, W, std::vector<std::int64_t>{1, 2}), UsageError);
}

TEST(Write, FactorPicksFormatByExtension) {
  DenseMatrix<double, Kokkos::HostSpace> F("F", 3, 2);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) F(i, k) = 0.5 * i - k;
  TempDir dir;
  io::write_factor(dir.file("F.CSV"), F, {10, 20, 30});
  EXPECT_EQ(slurp(dir.file("F.CSV")).rfind("id,f0,f1\n10,0,-1\n20,0.5,-0.5\n30,1,0\n", 0), 0u);
  io::write_factor(dir.file("F.mtx"), F, {10, 20, 30});
  const std::string text = slurp(dir.file("F.mtx"));
  EXPECT_NE(text.find("% row ids: 10 20 30\n"), std::string::npos) << text;
  io::ReadOptions keep;
  keep.keep_zeros = true;
  const auto B = io::read_matrix_market<double>(dir.file("F.mtx"), keep);
  ASSERT_EQ(B.nnz(), 6u);
  for (std::size_t e = 0; e < B.nnz(); ++e) EXPECT_EQ(B.values[e], F(B.rows[e], B.cols[e]));
}

TEST(Write, FailuresAreRuntimeFailures) {
  CooMatrix<double> A;
  A.num_rows = A.num_cols = 1;
  EXPECT_THROW(io::write_matrix_market("/nonexistent-dir/x/a.mtx", A), RuntimeFailure);
#if defined(__linux__)
  if (std::ifstream("/dev/full").good()) {
    auto B = random_coo<double>(200, 200, 0.5, 1);
    EXPECT_THROW(io::write_matrix_market("/dev/full", B), RuntimeFailure);
  }
#endif
}

}  // namespace
