#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

namespace {
using namespace kfactor;

/// Random COO with distinct pairs, in random order, some empty rows/columns.
CooMatrix<double> random_coo(std::int64_t m, std::int64_t n, double density, std::uint64_t seed) {
  CooMatrix<double> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  std::vector<std::tuple<double, int, int>> shuffled;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const auto c = static_cast<std::uint64_t>(i) * n + j;
      if (i % 7 != 3 && rng.uniform(c) < density) shuffled.emplace_back(rng.uniform(c + (1ull << 40)), i, j);
    }
  std::sort(shuffled.begin(), shuffled.end());
  for (auto& [key, i, j] : shuffled) {
    coo.rows.push_back(i);
    coo.cols.push_back(j);
    coo.values.push_back(key - 0.5);
  }
  return coo;
}

template <class Space>
class ConvertTest : public ::testing::Test {};
TYPED_TEST_SUITE(ConvertTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(ConvertTest, CooToCsrIsSortedAndComplete) {
  const TypeParam exec;
  for (auto [m, n, d] : {std::tuple{53, 41, 0.1}, std::tuple{1, 9, 0.5}, std::tuple{9, 1, 0.5}, std::tuple{20, 30, 0.0}}) {
    auto coo = random_coo(m, n, d, 99);
    auto A = to_csr(exec, coo);
    auto h = copy_to<Kokkos::HostSpace>(A);
    ASSERT_EQ(A.num_rows(), m);
    ASSERT_EQ(A.num_cols, n);
    ASSERT_EQ(A.nnz(), coo.nnz());
    std::map<std::pair<int, int>, double> ref;
    for (std::size_t e = 0; e < coo.nnz(); ++e) ref[{coo.rows[e], coo.cols[e]}] = coo.values[e];
    EXPECT_EQ(h.row_map(0), 0u);
    EXPECT_EQ(h.row_map(m), coo.nnz());
    for (int i = 0; i < m; ++i)
      for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) {
        if (e > h.row_map(i)) EXPECT_LT(h.entries(e - 1), h.entries(e));
        EXPECT_EQ(ref.at({i, h.entries(e)}), h.values(e));
      }
  }
}

TYPED_TEST(ConvertTest, TransposeTwiceIsIdentityAndMatchesDense) {
  const TypeParam exec;
  auto A = to_csr(exec, random_coo(47, 29, 0.15, 5));
  auto At = transpose(exec, A);
  ASSERT_EQ(At.num_rows(), 29);
  ASSERT_EQ(At.num_cols, 47);
  auto dA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, to_dense(exec, A));
  auto dAt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, to_dense(exec, At));
  for (int i = 0; i < 47; ++i)
    for (int j = 0; j < 29; ++j) EXPECT_EQ(dA(i, j), dAt(j, i));
  auto Att = copy_to<Kokkos::HostSpace>(transpose(exec, At));
  auto hA = copy_to<Kokkos::HostSpace>(A);
  for (std::size_t e = 0; e < hA.nnz(); ++e) {
    EXPECT_EQ(hA.entries(e), Att.entries(e));
    EXPECT_EQ(hA.values(e), Att.values(e));
  }
}

TEST(Convert, OutOfRangeIndexIsAnInputError) {
  CooMatrix<double> coo;
  coo.num_rows = 3;
  coo.num_cols = 3;
  coo.rows = {0, 3};
  coo.cols = {0, 1};
  coo.values = {1.0, 2.0};
  EXPECT_THROW(to_csr(Kokkos::DefaultHostExecutionSpace{}, coo), InputError);
}

}  // namespace
