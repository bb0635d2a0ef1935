// Bit-packed matrices: packing round trips (sizes not multiples of 32/64),
// popcount dot products, Boolean products and the Hamming error (dense bits
// and CSR of ones) against plain host loops.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/kernels/bit_matrix.hpp>

#include "common/test_spaces.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {
using namespace kfactor;

template <class Space>
class BitMatrixTest : public ::testing::Test {};
TYPED_TEST_SUITE(BitMatrixTest, test::ExecutionSpaces, test::SpaceNames);

using HostDense = DenseMatrix<std::uint8_t, Kokkos::HostSpace>;

HostDense random01(std::int64_t r, std::int64_t c, double p, std::uint64_t seed) {
  HostDense X("X", r, c);
  const CounterRng rng(seed, RngStream::user);
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) X(i, j) = rng.uniform(std::uint64_t(i * c + j)) < p ? 1 : 0;
  return X;
}

template <class Space>
BitMatrix<typename Space::memory_space> to_bits(const HostDense& X) {
  auto d = Kokkos::create_mirror_view_and_copy(typename Space::memory_space{}, X);
  return pack_bits(Space{}, d);
}

TYPED_TEST(BitMatrixTest, PackUnpackRoundTripsForOddSizes) {
  using Space = TypeParam;
  for (auto [r, c] :
       std::vector<std::pair<int, int>>{{1, 1}, {7, 31}, {5, 33}, {3, 63}, {4, 65}, {9, 130}, {33, 200}}) {
    const auto X = random01(r, c, 0.5, 11 + r * 1000 + c);
    auto B = to_bits<Space>(X);
    EXPECT_EQ(B.words_per_line(), (c + 63) / 64);
    auto back = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, unpack_bits<std::uint8_t>(Space{}, B));
    auto hw = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B.words);
    for (int i = 0; i < r; ++i) {
      for (int j = 0; j < c; ++j) ASSERT_EQ(back(i, j), X(i, j)) << r << "x" << c << " at " << i << "," << j;
      // Bits past the end of the line stay zero.
      EXPECT_EQ(hw(i, B.words_per_line() - 1) & ~bit_tail_mask(c, B.words_per_line() - 1), 0u);
    }
    auto T = transpose_bits(Space{}, B);
    auto TT = transpose_bits(Space{}, T);
    auto tt = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, unpack_bits<std::uint8_t>(Space{}, TT));
    auto t = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, unpack_bits<std::uint8_t>(Space{}, T));
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) {
        ASSERT_EQ(t(j, i), X(i, j));
        ASSERT_EQ(tt(i, j), X(i, j));
      }
  }
}

TYPED_TEST(BitMatrixTest, PopcountDotAndBooleanProductMatchLoops) {
  using Space = TypeParam;
  for (int k : {1, 20, 64, 65, 200}) {
    const int m = 37, n = 29;
    const auto A = random01(m, k, 0.1, 5 + k), Bt = random01(n, k, 0.1, 6 + k);
    auto a = to_bits<Space>(A);
    auto b = to_bits<Space>(Bt);
    auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.words);
    auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.words);
    auto P = copy_to<Kokkos::HostSpace>(boolean_product(Space{}, a, b));
    int ones = 0;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int dot = 0;
        for (int l = 0; l < k; ++l) dot += A(i, l) * Bt(j, l);
        ASSERT_EQ(popcount_dot(ha, i, hb, j), dot);
        ASSERT_EQ(boolean_entry(ha, i, hb, j), dot > 0);
        ASSERT_EQ(P.get(i, j), dot > 0);
        ones += dot > 0;
      }
    EXPECT_EQ(boolean_product_ones(Space{}, a, b), std::uint64_t(ones)) << "k " << k;
    if (k == 20) EXPECT_GT(ones, 0);
  }
}

TYPED_TEST(BitMatrixTest, HammingErrorDenseAndSparseMatchLoops) {
  using Space = TypeParam;
  using Mem = typename Space::memory_space;
  const int m = 45, n = 70, k = 33;
  const auto A = random01(m, k, 0.05, 1), Bt = random01(n, k, 0.05, 2), C = random01(m, n, 0.2, 3);
  std::uint64_t fp = 0, fn = 0, ones = 0;
  CooMatrix<double> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      bool p = false;
      for (int l = 0; l < k; ++l) p |= A(i, l) && Bt(j, l);
      fp += p && !C(i, j);
      fn += !p && C(i, j);
      ones += C(i, j);
      if (C(i, j)) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
      }
    }
  ASSERT_GT(fp, 0u);
  ASSERT_GT(fn, 0u);
  auto a = to_bits<Space>(A);
  auto b = to_bits<Space>(Bt);
  const auto dense = hamming_error(Space{}, to_bits<Space>(C), a, b);
  const auto csr = to_csr(Space{}, coo);
  const auto sparse = hamming_error(Space{}, csr, a, b);
  // The CSR packed into bits is the same C.
  const auto packed = hamming_error(Space{}, pack_csr_bits(Space{}, csr), a, b);
  for (const auto& e : {dense, sparse, packed}) {
    EXPECT_EQ(e.false_pos, fp);
    EXPECT_EQ(e.false_neg, fn);
    EXPECT_EQ(e.ones, ones);
    EXPECT_DOUBLE_EQ(e.relative(), double(fp + fn) / (m * n));
    EXPECT_DOUBLE_EQ(e.precision(), double(ones - fn) / double(ones - fn + fp));
    EXPECT_DOUBLE_EQ(e.recall(), double(ones - fn) / double(ones));
    EXPECT_DOUBLE_EQ(e.weighted(3.0), double(fp) + 3.0 * double(fn));
  }
  (void)sizeof(Mem);
}

TYPED_TEST(BitMatrixTest, EmptyFactorsGiveTheDensityOfC) {
  using Space = TypeParam;
  const int m = 10, n = 130;
  const auto C = random01(m, n, 0.3, 9);
  BitMatrix<typename Space::memory_space> a("a", m, 5), b("b", n, 5);
  const auto e = hamming_error(Space{}, to_bits<Space>(C), a, b);
  EXPECT_EQ(e.false_pos, 0u);
  EXPECT_EQ(e.false_neg, e.ones);
  EXPECT_DOUBLE_EQ(e.precision(), 1.0);
  EXPECT_DOUBLE_EQ(e.recall(), 0.0);
  EXPECT_EQ(boolean_product_ones(Space{}, a, b), 0u);
}

}  // namespace
