#pragma once
/// \file
/// Bit-packed Boolean matrices and the kernels Boolean matrix factorization
/// is built from: packing, popcount dot products, Boolean products and the
/// Hamming error d(C, A o B) for a bit-packed dense C or a sparse C (CSR of
/// its ones), with precision and recall of the ones.
///
/// Storage (BitMatrix): a matrix of `lines` lines of `bits` bits each; line r
/// is `words_per_line = ceil(bits / 64)` 64-bit words, row-major
/// (LayoutRight), bit l of the line at bit position (l % 64) of word l / 64,
/// least significant bit first. Bits past `bits` in the last word are always
/// zero (every kernel here keeps that invariant and may rely on it).
/// Why 64-bit words: a k <= 64 line is one load and one AND on CPUs and
/// GPUs alike (CUDA has 64-bit popc/AND), and k = 256 is four words.
///
/// In BMF the left factor A (m x k) is a BitMatrix of m lines of k bits (its
/// rows) and the right factor B (k x n) is stored as Bt, n lines of k bits
/// (B's columns), as in CuBin; then (A o B)_ij = [A_i & Bt_j != 0].
/// A dense C (m x n) is m lines of n bits (its rows).

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_BitManipulation.hpp>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace kfactor {

using bit_word_t = std::uint64_t;
inline constexpr int bit_word_bits = 64;

/// Words needed for a line of `bits` bits.
KOKKOS_INLINE_FUNCTION constexpr int bit_words(std::int64_t bits) {
  return static_cast<int>((bits + bit_word_bits - 1) / bit_word_bits);
}

/// `lines` lines of `bits` bits, each in bit_words(bits) 64-bit words.
template <class MemorySpace = Kokkos::DefaultExecutionSpace::memory_space>
struct BitMatrix {
  using memory_space = MemorySpace;
  using words_type = Kokkos::View<bit_word_t**, Kokkos::LayoutRight, MemorySpace>;
  words_type words;  ///< lines x words_per_line
  std::int64_t lines = 0;
  std::int64_t bits = 0;

  BitMatrix() = default;
  BitMatrix(const std::string& label, std::int64_t lines_, std::int64_t bits_)
      : words(label, static_cast<std::size_t>(lines_), static_cast<std::size_t>(bit_words(bits_))),
        lines(lines_),
        bits(bits_) {}

  [[nodiscard]] int words_per_line() const { return static_cast<int>(words.extent(1)); }
  /// Bit (r, l); host-accessible memory only.
  [[nodiscard]] bool get(std::int64_t r, std::int64_t l) const {
    return (words(r, l / bit_word_bits) >> (l % bit_word_bits)) & 1u;
  }
  void set(std::int64_t r, std::int64_t l, bool v) const {
    const bit_word_t m = bit_word_t(1) << (l % bit_word_bits);
    auto& w = words(r, l / bit_word_bits);
    w = v ? (w | m) : (w & ~m);
  }
};

/// Mask of the valid bits of word `q` of a line of `bits` bits.
KOKKOS_INLINE_FUNCTION constexpr bit_word_t bit_tail_mask(std::int64_t bits, int q) {
  const std::int64_t rest = bits - std::int64_t(q) * bit_word_bits;
  return rest >= bit_word_bits ? ~bit_word_t(0) : (rest <= 0 ? bit_word_t(0) : ((bit_word_t(1) << rest) - 1));
}

KOKKOS_INLINE_FUNCTION int popcount64(bit_word_t x) { return Kokkos::Experimental::popcount_builtin(x); }

/// Deep copy (same shape) into another memory space.
template <class DstMemorySpace, class SrcMemorySpace>
BitMatrix<DstMemorySpace> copy_to(const BitMatrix<SrcMemorySpace>& X) {
  BitMatrix<DstMemorySpace> out;
  out.words = Kokkos::create_mirror_view_and_copy(DstMemorySpace{}, X.words);
  out.lines = X.lines;
  out.bits = X.bits;
  return out;
}

/// A fresh copy in the same space.
template <class ExecutionSpace, class MemorySpace>
BitMatrix<MemorySpace> clone(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& X) {
  BitMatrix<MemorySpace> out;
  out.words = typename BitMatrix<MemorySpace>::words_type(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, X.words.label()), X.words.extent(0), X.words.extent(1));
  Kokkos::deep_copy(exec, out.words, X.words);
  out.lines = X.lines;
  out.bits = X.bits;
  return out;
}

/// Popcount dot product of two lines: sum_l a_l b_l over W words.
template <class WordsA, class WordsB>
KOKKOS_INLINE_FUNCTION int popcount_dot(const WordsA& A, std::int64_t i, const WordsB& B, std::int64_t j) {
  int s = 0;
  for (std::size_t q = 0; q < A.extent(1); ++q) s += popcount64(A(i, q) & B(j, q));
  return s;
}

/// Boolean product entry (A o B)_ij = OR_l a_il b_lj = [A_i & Bt_j != 0].
template <class WordsA, class WordsB>
KOKKOS_INLINE_FUNCTION bool boolean_entry(const WordsA& A, std::int64_t i, const WordsB& Bt, std::int64_t j) {
  bit_word_t any = 0;
  for (std::size_t q = 0; q < A.extent(1); ++q) any |= A(i, q) & Bt(j, q);
  return any != 0;
}

/// Packs a dense 0/1 matrix (any value type; nonzero means 1) into a
/// BitMatrix with one line per row of X.
template <class ExecutionSpace, class XView>
BitMatrix<typename ExecutionSpace::memory_space> pack_bits(const ExecutionSpace& exec, const XView& X,
                                                           const std::string& label = "kfactor::bits") {
  static_assert(XView::rank() == 2, "pack_bits takes a rank-2 view");
  BitMatrix<typename ExecutionSpace::memory_space> out(label, X.extent(0), X.extent(1));
  auto words = out.words;
  const std::int64_t bits = X.extent(1);
  const int W = out.words_per_line();
  Kokkos::parallel_for(
      "kfactor::pack_bits",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {X.extent(0), std::size_t(W)}),
      KOKKOS_LAMBDA(std::size_t r, std::size_t q) {
        bit_word_t w = 0;
        const std::int64_t l0 = std::int64_t(q) * bit_word_bits;
        for (int b = 0; b < bit_word_bits && l0 + b < bits; ++b)
          if (X(r, l0 + b) != 0) w |= bit_word_t(1) << b;
        words(r, q) = w;
      });
  return out;
}

/// Unpacks a BitMatrix into a dense 0/1 matrix of `T` (lines x bits).
template <class T, class ExecutionSpace, class MemorySpace>
DenseMatrix<T, MemorySpace> unpack_bits(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& X) {
  DenseMatrix<T, MemorySpace> out(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::unpacked"), X.lines,
                                  X.bits);
  auto words = X.words;
  Kokkos::parallel_for(
      "kfactor::unpack_bits",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {std::size_t(X.lines), std::size_t(X.bits)}),
      KOKKOS_LAMBDA(std::size_t r, std::size_t l) {
        out(r, l) = T((words(r, l / bit_word_bits) >> (l % bit_word_bits)) & 1u);
      });
  return out;
}

/// Transposes a BitMatrix (lines x bits -> bits x lines); O(lines * bits).
template <class ExecutionSpace, class MemorySpace>
BitMatrix<MemorySpace> transpose_bits(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& X) {
  BitMatrix<MemorySpace> out("kfactor::bits_t", X.bits, X.lines);
  auto in = X.words;
  auto words = out.words;
  const std::int64_t lines = X.lines;
  Kokkos::parallel_for(
      "kfactor::transpose_bits",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0},
                                                             {std::size_t(X.bits), std::size_t(out.words_per_line())}),
      KOKKOS_LAMBDA(std::size_t l, std::size_t q) {
        bit_word_t w = 0;
        const std::int64_t r0 = std::int64_t(q) * bit_word_bits;
        for (int b = 0; b < bit_word_bits && r0 + b < lines; ++b)
          w |= ((in(r0 + b, l / bit_word_bits) >> (l % bit_word_bits)) & 1u) << b;
        words(l, q) = w;
      });
  return out;
}

/// Dense bit rows of the 0/1 matrix whose ones are the pattern of `ones`
/// (every stored entry counts as a one, whatever its value).
template <class ExecutionSpace, class T, class MemorySpace>
BitMatrix<MemorySpace> pack_csr_bits(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& ones) {
  BitMatrix<MemorySpace> out("kfactor::c_bits", ones.num_rows(), ones.num_cols);
  auto words = out.words;
  auto row_map = ones.row_map;
  auto entries = ones.entries;
  // One thread per row: its words are written by nobody else (no atomics).
  Kokkos::parallel_for(
      "kfactor::pack_csr_bits", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, ones.num_rows()),
      KOKKOS_LAMBDA(ordinal_t r) {
        for (auto e = row_map(r); e < row_map(r + 1); ++e) {
          const auto c = entries(e);
          words(r, c / bit_word_bits) |= bit_word_t(1) << (c % bit_word_bits);
        }
      });
  return out;
}

/// The Boolean product A o B as a dense BitMatrix (m lines of n bits), from
/// A (m lines of k bits) and Bt (n lines of k bits). O(m n k / 64).
template <class ExecutionSpace, class MemorySpace>
BitMatrix<MemorySpace> boolean_product(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& A,
                                       const BitMatrix<MemorySpace>& Bt) {
  if (A.bits != Bt.bits)
    throw UsageError("boolean_product: A has " + std::to_string(A.bits) + " bits per row, B " +
                     std::to_string(Bt.bits) + " per column");
  BitMatrix<MemorySpace> out("kfactor::boolean_product", A.lines, Bt.lines);
  auto a = A.words;
  auto b = Bt.words;
  auto words = out.words;
  const std::int64_t n = Bt.lines;
  Kokkos::parallel_for(
      "kfactor::boolean_product",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0},
                                                             {std::size_t(A.lines), std::size_t(out.words_per_line())}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t q) {
        bit_word_t w = 0;
        const std::int64_t j0 = std::int64_t(q) * bit_word_bits;
        for (int t = 0; t < bit_word_bits && j0 + t < n; ++t)
          if (boolean_entry(a, i, b, j0 + t)) w |= bit_word_t(1) << t;
        words(i, q) = w;
      });
  return out;
}

/// Exact error counts of an approximation C' of a Boolean C.
struct BooleanErrors {
  std::uint64_t false_pos = 0;  ///< c = 0, c' = 1 (spurious ones)
  std::uint64_t false_neg = 0;  ///< c = 1, c' = 0 (missed ones)
  std::uint64_t ones = 0;       ///< ones of C
  std::int64_t rows = 0, cols = 0;

  /// d(C, C') = Hamming distance.
  [[nodiscard]] std::uint64_t hamming() const { return false_pos + false_neg; }
  /// E_rec = d(C, C') / (m n) (0 for an empty shape).
  [[nodiscard]] double relative() const {
    const double mn = double(rows) * double(cols);
    return mn > 0 ? double(hamming()) / mn : 0.0;
  }
  /// Weighted error: a missed one costs `weight_ones`, a spurious one 1.
  [[nodiscard]] double weighted(double weight_ones) const {
    return double(false_pos) + weight_ones * double(false_neg);
  }
  /// TP / (TP + FP); 1 when C' has no ones.
  [[nodiscard]] double precision() const {
    const double tp = double(ones - false_neg);
    return tp + double(false_pos) > 0 ? tp / (tp + double(false_pos)) : 1.0;
  }
  /// TP / ones; 1 when C has no ones.
  [[nodiscard]] double recall() const { return ones > 0 ? double(ones - false_neg) / double(ones) : 1.0; }
};

/// d(C, A o B) with C a dense BitMatrix (m lines of n bits). O(m n k / 64).
template <class ExecutionSpace, class MemorySpace>
BooleanErrors hamming_error(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& C,
                            const BitMatrix<MemorySpace>& A, const BitMatrix<MemorySpace>& Bt) {
  if (A.lines != C.lines || Bt.lines != C.bits || A.bits != Bt.bits)
    throw UsageError("hamming_error: factor shapes do not fit C");
  auto a = A.words;
  auto b = Bt.words;
  auto c = C.words;
  const std::int64_t n = C.bits;
  const int Wc = C.words_per_line();
  std::uint64_t fp = 0, fn = 0, ones = 0;
  Kokkos::parallel_reduce(
      "kfactor::hamming_error_dense",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {std::size_t(C.lines), std::size_t(Wc)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t q, std::uint64_t& sfp, std::uint64_t& sfn, std::uint64_t& so) {
        bit_word_t p = 0;
        const std::int64_t j0 = std::int64_t(q) * bit_word_bits;
        for (int t = 0; t < bit_word_bits && j0 + t < n; ++t)
          if (boolean_entry(a, i, b, j0 + t)) p |= bit_word_t(1) << t;
        const bit_word_t cw = c(i, q);
        sfp += popcount64(p & ~cw);
        sfn += popcount64(cw & ~p);
        so += popcount64(cw);
      },
      fp, fn, ones);
  BooleanErrors e;
  e.false_pos = fp;
  e.false_neg = fn;
  e.ones = ones;
  e.rows = C.lines;
  e.cols = C.bits;
  return e;
}

namespace detail {
/// Indices of the nonzero lines of X (ascending), on the device.
template <class ExecutionSpace, class MemorySpace>
Kokkos::View<std::int64_t*, MemorySpace> nonzero_lines(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& X,
                                                       std::int64_t& count) {
  auto words = X.words;
  const int W = X.words_per_line();
  Kokkos::View<std::int64_t*, MemorySpace> idx(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::nz_lines"), X.lines);
  std::int64_t total = 0;
  Kokkos::parallel_scan(
      "kfactor::nonzero_lines", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, X.lines),
      KOKKOS_LAMBDA(std::int64_t r, std::int64_t& pos, bool final) {
        bit_word_t any = 0;
        for (int q = 0; q < W; ++q) any |= words(r, q);
        if (any != 0) {
          if (final) idx(pos) = r;
          ++pos;
        }
      },
      total);
  count = total;
  return idx;
}
}  // namespace detail

/// Number of ones of A o B: pairs (i, j) of nonzero lines with A_i & Bt_j != 0.
/// Only nonzero lines are visited, so the cost is O(nzA * nzB * k / 64),
/// not O(m n k / 64) (sparse factors of huge matrices stay cheap).
template <class ExecutionSpace, class MemorySpace>
std::uint64_t boolean_product_ones(const ExecutionSpace& exec, const BitMatrix<MemorySpace>& A,
                                   const BitMatrix<MemorySpace>& Bt) {
  std::int64_t na = 0, nb = 0;
  auto ia = detail::nonzero_lines(exec, A, na);
  auto ib = detail::nonzero_lines(exec, Bt, nb);
  if (na == 0 || nb == 0) return 0;
  auto a = A.words;
  auto b = Bt.words;
  using Team = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  std::uint64_t total = 0;
  Kokkos::parallel_reduce(
      "kfactor::boolean_product_ones", Kokkos::TeamPolicy<ExecutionSpace>(exec, na, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team& team, std::uint64_t& acc) {
        const std::int64_t i = ia(team.league_rank());
        std::uint64_t s = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, nb),
            [&](std::int64_t t, std::uint64_t& x) { x += boolean_entry(a, i, b, ib(t)) ? 1u : 0u; }, s);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { acc += s; });
      },
      total);
  return total;
}

/// d(C, A o B) with C given by the CSR of its ones (m x n; stored values are
/// ignored). TP = ones of C covered by A o B (O(nnz k / 64)); FP = ones of
/// A o B - TP (boolean_product_ones); FN = nnz - TP. Never forms m x n.
template <class ExecutionSpace, class T, class MemorySpace>
BooleanErrors hamming_error(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& C,
                            const BitMatrix<MemorySpace>& A, const BitMatrix<MemorySpace>& Bt) {
  if (A.lines != C.num_rows() || Bt.lines != C.num_cols || A.bits != Bt.bits)
    throw UsageError("hamming_error: factor shapes do not fit C");
  auto a = A.words;
  auto b = Bt.words;
  auto row_map = C.row_map;
  auto entries = C.entries;
  std::uint64_t tp = 0;
  Kokkos::parallel_reduce(
      "kfactor::hamming_error_sparse", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, C.num_rows()),
      KOKKOS_LAMBDA(ordinal_t i, std::uint64_t& s) {
        for (auto e = row_map(i); e < row_map(i + 1); ++e) s += boolean_entry(a, i, b, entries(e)) ? 1u : 0u;
      },
      tp);
  const std::uint64_t predicted = boolean_product_ones(exec, A, Bt);
  BooleanErrors e;
  e.ones = C.nnz();
  e.false_neg = e.ones - tp;
  e.false_pos = predicted - tp;
  e.rows = C.num_rows();
  e.cols = C.num_cols;
  return e;
}

}  // namespace kfactor
