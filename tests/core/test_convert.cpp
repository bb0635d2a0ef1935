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
  for (auto [m, n, d] :
       {std::tuple{53, 41, 0.1}, std::tuple{1, 9, 0.5}, std::tuple{9, 1, 0.5}, std::tuple{20, 30, 0.0}}) {
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

/// Entries of A in columns [c0, c1) of the rows with r % 3 != 1, through select_entries.
template <class Space>
CsrMatrix<double, typename Space::memory_space> select_block(const Space& exec,
                                                             const CsrMatrix<double, typename Space::memory_space>& A,
                                                             ordinal_t c0, ordinal_t c1) {
  return select_entries(
      exec, A, c1 - c0, c0, KOKKOS_LAMBDA(ordinal_t r, ordinal_t c) { return r % 3 != 1 && c >= c0 && c < c1; });
}

TYPED_TEST(ConvertTest, SelectEntriesKeepsExactlyThePredicateInOrder) {
  const TypeParam exec;
  const auto coo = random_coo(37, 23, 0.3, 11);
  const auto A = to_csr(exec, coo);
  const auto hA = copy_to<Kokkos::HostSpace>(A);
  const ordinal_t bounds[] = {0, 5, 5, 17, 23};  // an empty block included
  std::vector<std::vector<std::pair<ordinal_t, double>>> rows(37);
  for (int b = 0; b < 4; ++b) {
    const auto S = copy_to<Kokkos::HostSpace>(select_block(exec, A, bounds[b], bounds[b + 1]));
    ASSERT_EQ(S.num_rows(), 37);
    ASSERT_EQ(S.num_cols, bounds[b + 1] - bounds[b]);
    for (int r = 0; r < 37; ++r)
      for (auto e = S.row_map(r); e < S.row_map(r + 1); ++e) {
        ASSERT_LT(S.entries(e), S.num_cols);
        rows[r].emplace_back(S.entries(e) + bounds[b], S.values(e));
      }
  }
  // The blocks, side by side, are A without the dropped rows, in A's order.
  for (int r = 0; r < 37; ++r) {
    std::vector<std::pair<ordinal_t, double>> ref;
    if (r % 3 != 1)
      for (auto e = hA.row_map(r); e < hA.row_map(r + 1); ++e) ref.emplace_back(hA.entries(e), hA.values(e));
    EXPECT_EQ(rows[r], ref) << "row " << r;
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
