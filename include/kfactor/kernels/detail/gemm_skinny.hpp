#pragma once
/// \file
/// The host kernels of kfactor::gemm_skinny: C = A B and C = A^T B for a
/// large row-major A and narrow row-major B and C (a factor of NMF, ALS or
/// a sketch: up to skinny_max_columns columns).
///
/// A BLAS GEMM packs both operands into panels before its kernel runs. With
/// a narrow C each panel of the large A is used once, so the packing copies
/// A (reads and writes it) for every product: on 2 cores, for the dense
/// 2000 x 1000 input of NMF at K = 16, OpenBLAS spent 2.4 times as long in
/// its copies of A as in its kernel. These kernels stream A once from its
/// own storage, with register blocks of C (a 16-column block of rows or
/// columns of A times the matching rows of B) so that each value of A
/// feeds 16 multiply-adds. The narrow operand every block of rows of A
/// meets (B in A B, a thread's partial C in A^T B) is taken in slices of
/// at most skinny_block_bytes, so that it stays in L2 while all of A's rows
/// pass: whole, at K = 64 in double on a 20000 x 10000 A, it is 5 MB, read
/// again from L3 or memory for every 8 rows of A (12.5 GB per product).
/// Each sum still runs in order; the slices may move a float's last bit
/// (the compiler fuses multiply-adds differently in a loop's remainder), and
/// for one shape the result is fixed.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

// A loop unrolled whole by the host compiler (GCC and Clang read the
// pragma); device passes, which never run these kernels, see nothing.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KFACTOR_UNROLL_WHOLE
#else
#define KFACTOR_UNROLL_WHOLE _Pragma("GCC unroll 16")
#endif

namespace kfactor::detail {

/// C's widest shape that gemm_skinny sends to these kernels; wider products
/// amortise the packing and take the BLAS.
inline constexpr int skinny_max_columns = 64;

/// The largest slice of the narrow operand (see the file comment): with 8
/// rows of A's slice beside it, well inside the 1-2 MB of L2 per core of
/// current x86 servers.
inline constexpr std::size_t skinny_block_bytes = std::size_t(512) << 10;

/// `len` lines of `width` values in slices of at most block_bytes (at
/// least 8 lines; one slice when all fit, also when len is 0): slice q is
/// lines [begin(q), end(q)), q < count.
struct SkinnySlices {
  int len = 0, size = 1, count = 1;
  SkinnySlices(int len_, int width, std::size_t value_bytes, std::size_t block_bytes) : len(len_) {
    const std::size_t line = std::size_t(width > 0 ? width : 1) * value_bytes;
    const std::size_t fit = block_bytes / line;
    size = std::size_t(len) * line <= block_bytes ? (len > 0 ? len : 1) : (fit < 8 ? 8 : int(fit));
    count = len > 0 ? (len + size - 1) / size : 1;
  }
  KOKKOS_INLINE_FUNCTION int begin(int q) const { return q * size; }
  KOKKOS_INLINE_FUNCTION int end(int q) const { return (q + 1) * size < len ? (q + 1) * size : len; }
};

/// Bytes of the vector register file kfactor's host code is compiled for:
/// 32 registers of 64 bytes with AVX-512 (whose 512-bit vectors the build
/// prefers where the CPU has them), 16 of 32 with AVX, 32 of 16 with NEON.
inline constexpr std::size_t vector_register_bytes =
#if defined(__AVX512F__)
    32 * 64;
#elif defined(__AVX__) || defined(__aarch64__)
    512;
#else
    256;
#endif

/// The widest block of C's columns (16, 8 or 4) whose sums for 8 rows take at
/// most half the vector registers: the other half holds a row of B and the
/// broadcast values of A. Wider blocks spill sums to the stack, where a
/// multiply-add then waits on a store and a load: the dense 20000 x 10000
/// product at K = 64 in double on two threads took 680-820 ms with 16 columns
/// in 256-bit vectors, 590-640 with 8, and 440-490 with 16 in 512-bit ones.
template <class T>
inline constexpr int skinny_block_columns = vector_register_bytes / 2 >= 8 * 16 * sizeof(T)  ? 16
                                            : vector_register_bytes / 2 >= 8 * 8 * sizeof(T) ? 8
                                                                                             : 4;

/// Rows [i0, i0 + rows) (rows <= 8) and columns [c0, c0 + NB) of C = A B,
/// the terms l0 <= l < l1 of each sum added in order in registers to 0
/// (l0 = 0) or to C's value (the sum so far): eight arrays, one per row of A,
/// whose loops over the columns are unrolled whole so that the compiler
/// keeps every sum in a vector register (an array reached through a pointer,
/// or a loop left rolled, kept the sums on the stack: 1090-1110 ms for the
/// product above, against 440-490). Eight rows, not four: each row of B read from
/// cache then feeds twice as many multiply-adds (K = 64 on 2 cores of the
/// dense 20000 x 10000 NMF input: 144-162 against 101-133 GFLOP/s). A block of
/// fewer rows repeats its first row in the unused slots and stores only its
/// own rows.
template <int NB, class BV, class CV, class T = typename CV::non_const_value_type>
KOKKOS_INLINE_FUNCTION void gemm_skinny_rows8_block(const T* const* a, const BV& B, const CV& C, int i0, int rows,
                                                    int c0, int l0, int l1) {
  const T *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5], *a6 = a[6], *a7 = a[7];
  T s0[NB], s1[NB], s2[NB], s3[NB], s4[NB], s5[NB], s6[NB], s7[NB];
  KFACTOR_UNROLL_WHOLE
  for (int c = 0; c < NB; ++c) {
    const bool sum = l0 > 0;
    s0[c] = sum ? C(i0, c0 + c) : T(0);
    s1[c] = sum && rows > 1 ? C(i0 + 1, c0 + c) : T(0);
    s2[c] = sum && rows > 2 ? C(i0 + 2, c0 + c) : T(0);
    s3[c] = sum && rows > 3 ? C(i0 + 3, c0 + c) : T(0);
    s4[c] = sum && rows > 4 ? C(i0 + 4, c0 + c) : T(0);
    s5[c] = sum && rows > 5 ? C(i0 + 5, c0 + c) : T(0);
    s6[c] = sum && rows > 6 ? C(i0 + 6, c0 + c) : T(0);
    s7[c] = sum && rows > 7 ? C(i0 + 7, c0 + c) : T(0);
  }
  for (int l = l0; l < l1; ++l) {
    const T* b = &B(l, c0);
    const T x0 = a0[l], x1 = a1[l], x2 = a2[l], x3 = a3[l], x4 = a4[l], x5 = a5[l], x6 = a6[l], x7 = a7[l];
    KFACTOR_UNROLL_WHOLE
    for (int c = 0; c < NB; ++c) {
      s0[c] += x0 * b[c];
      s1[c] += x1 * b[c];
      s2[c] += x2 * b[c];
      s3[c] += x3 * b[c];
      s4[c] += x4 * b[c];
      s5[c] += x5 * b[c];
      s6[c] += x6 * b[c];
      s7[c] += x7 * b[c];
    }
  }
  KFACTOR_UNROLL_WHOLE
  for (int c = 0; c < NB; ++c) {
    C(i0, c0 + c) = s0[c];
    if (rows > 1) C(i0 + 1, c0 + c) = s1[c];
    if (rows > 2) C(i0 + 2, c0 + c) = s2[c];
    if (rows > 3) C(i0 + 3, c0 + c) = s3[c];
    if (rows > 4) C(i0 + 4, c0 + c) = s4[c];
    if (rows > 5) C(i0 + 5, c0 + c) = s5[c];
    if (rows > 6) C(i0 + 6, c0 + c) = s6[c];
    if (rows > 7) C(i0 + 7, c0 + c) = s7[c];
  }
}

/// Rows [i0, i1) of C (m x n) = A (m x k) B (k x n), in blocks of 8 rows of
/// A, which stay in L1 while C's columns are summed over k in blocks of
/// skinny_block_columns, then 8, 4 and 1 (gemm_skinny_rows8_block: a runtime-width loop
/// ran scalar). A's rows and B's rows must be contiguous; C may have any
/// layout (a host sweep writes the transpose of its tile). Every C(i, c) is
/// the sum over l in order, whatever the blocking. With [l0, l1) given, only
/// those terms, added to C when l0 > 0 (gemm_skinny_nn's slices of B). The
/// work item of gemm_skinny_nn, and a host sweep's own rows of a product and
/// of its tile (kfactor::nmf's tile_sweep_host).
template <class AV, class BV, class CV>
KOKKOS_INLINE_FUNCTION void gemm_skinny_nn_rows(const AV& A, const BV& B, const CV& C, int i0, int i1, int l0 = 0,
                                                int l1 = -1) {
  using T = typename CV::non_const_value_type;
  const int n = static_cast<int>(C.extent(1));
  const int k = l1 < 0 ? static_cast<int>(A.extent(1)) : l1;
  for (; i0 < i1; i0 += 8) {
    const int rows = i1 - i0 < 8 ? i1 - i0 : 8;
    const T* a[8];
    for (int r = 0; r < 8; ++r) a[r] = &A(i0 + (r < rows ? r : 0), 0);
    int c0 = 0;
    if constexpr (skinny_block_columns<T> >= 16)
      for (; c0 + 16 <= n; c0 += 16) gemm_skinny_rows8_block<16>(a, B, C, i0, rows, c0, l0, k);
    if constexpr (skinny_block_columns<T> >= 8)
      for (; c0 + 8 <= n; c0 += 8) gemm_skinny_rows8_block<8>(a, B, C, i0, rows, c0, l0, k);
    for (; c0 + 4 <= n; c0 += 4) gemm_skinny_rows8_block<4>(a, B, C, i0, rows, c0, l0, k);
    for (; c0 < n; ++c0) gemm_skinny_rows8_block<1>(a, B, C, i0, rows, c0, l0, k);
  }
}

/// C (m x n) = A (m x k) B (k x n): a work item per block of 8 rows of A
/// (gemm_skinny_nn_rows), a launch per slice of B's rows (block_bytes at
/// most; one when B fits).
template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_skinny_nn(const ExecutionSpace& exec, const AV& A, const BV& B, const CV& C,
                    std::size_t block_bytes = skinny_block_bytes) {
  using T = typename CV::non_const_value_type;
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(A.extent(1));
  const SkinnySlices slices(k, n, sizeof(T), block_bytes);
  for (int q = 0; q < slices.count; ++q) {
    const int l0 = slices.begin(q), l1 = slices.end(q);
    Kokkos::parallel_for(
        "kfactor::gemm_skinny_nn", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, (m + 7) / 8),
        KOKKOS_LAMBDA(const int blk) {
          gemm_skinny_nn_rows(A, B, C, blk * 8, blk * 8 + 8 < m ? blk * 8 + 8 : m, l0, l1);
        });
  }
}

/// The scratch bytes gemm_skinny_tn needs: a partial C per thread.
template <class ExecutionSpace, class CV>
std::size_t gemm_skinny_tn_bytes(const ExecutionSpace& exec, const CV& C) {
  return std::size_t(exec.concurrency()) * C.extent(0) * C.extent(1) * sizeof(typename CV::non_const_value_type);
}

/// Whether gemm_skinny_tn's partials fit the space's team scratch.
template <class ExecutionSpace, class CV>
bool gemm_skinny_tn_fits(const ExecutionSpace& exec, const CV& C) {
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  return gemm_skinny_tn_bytes(exec, C) <= std::size_t(Policy(exec, 1, 1).scratch_size_max(1));
}

/// C (m x n) = A^T B, A (k x m), B (k x n), in one team of all threads:
/// each thread sums its contiguous rows of A into its own partial C (in team
/// scratch, which the pool keeps between launches), reading 8 rows of A
/// contiguously at a time against their rows of B held in registers; then
/// the threads add the partials, each for its share of C's rows, in thread
/// order. (A work item per block of columns of A walked each row of A with
/// a stride of a row: it waited on memory for 60% of its time.) C's rows
/// are taken in slices of at most block_bytes of a partial, each summed
/// over all of the thread's rows of A and then added up.
template <class ExecutionSpace, class AV, class BV, class CV>
void gemm_skinny_tn(const ExecutionSpace& exec, const AV& A, const BV& B, const CV& C,
                    std::size_t block_bytes = skinny_block_bytes) {
  using T = typename CV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  constexpr int IB = 8, NB = skinny_block_columns<T>;  // IB: the rows b0..b7 below
  const int m = static_cast<int>(C.extent(0)), n = static_cast<int>(C.extent(1));
  const int k = static_cast<int>(A.extent(0));
  const std::size_t bytes = gemm_skinny_tn_bytes(exec, C);
  const SkinnySlices slices(m, n, sizeof(T), block_bytes);
  const auto body = KOKKOS_LAMBDA(const typename Policy::member_type& team) {
    T* all = static_cast<T*>(team.team_scratch(1).get_shmem(bytes));
    const int p = team.team_rank(), threads = team.team_size();
    T* part = all + std::size_t(p) * m * n;
    const int ia = int(std::int64_t(k) * p / threads), ib = int(std::int64_t(k) * (p + 1) / threads);
    for (int q = 0; q < slices.count; ++q) {
      const int j0 = slices.begin(q), j1 = slices.end(q);
      for (std::size_t e = std::size_t(j0) * n; e < std::size_t(j1) * n; ++e) part[e] = T(0);
      int i = ia;
      for (; i + IB <= ib; i += IB) {
        const T* a[IB];
        for (int r = 0; r < IB; ++r) a[r] = &A(i + r, 0);
        int c0 = 0;
        for (; c0 + NB <= n; c0 += NB) {
          // The 8 rows of B spelled out, so that the compiler vectorises over
          // C's columns (with a loop over the rows it vectorised over them and
          // added horizontally).
          T b0[NB], b1[NB], b2[NB], b3[NB], b4[NB], b5[NB], b6[NB], b7[NB];
          for (int c = 0; c < NB; ++c) {
            b0[c] = B(i, c0 + c);
            b1[c] = B(i + 1, c0 + c);
            b2[c] = B(i + 2, c0 + c);
            b3[c] = B(i + 3, c0 + c);
            b4[c] = B(i + 4, c0 + c);
            b5[c] = B(i + 5, c0 + c);
            b6[c] = B(i + 6, c0 + c);
            b7[c] = B(i + 7, c0 + c);
          }
          for (int j = j0; j < j1; ++j) {
            T* out = part + std::size_t(j) * n + c0;
            const T x0 = a[0][j], x1 = a[1][j], x2 = a[2][j], x3 = a[3][j];
            const T x4 = a[4][j], x5 = a[5][j], x6 = a[6][j], x7 = a[7][j];
            for (int c = 0; c < NB; ++c)
              out[c] += ((x0 * b0[c] + x1 * b1[c]) + (x2 * b2[c] + x3 * b3[c])) +
                        ((x4 * b4[c] + x5 * b5[c]) + (x6 * b6[c] + x7 * b7[c]));
          }
        }
        for (int j = j0; j < j1; ++j)
          for (int c = c0; c < n; ++c)
            for (int r = 0; r < IB; ++r) part[std::size_t(j) * n + c] += a[r][j] * B(i + r, c);
      }
      for (; i < ib; ++i)
        for (int j = j0; j < j1; ++j)
          for (int c = 0; c < n; ++c) part[std::size_t(j) * n + c] += A(i, j) * B(i, c);
      team.team_barrier();
      const int ja = j0 + int(std::int64_t(j1 - j0) * p / threads);
      const int jb = j0 + int(std::int64_t(j1 - j0) * (p + 1) / threads);
      for (int j = ja; j < jb; ++j)
        for (int c = 0; c < n; ++c) {
          T s = all[std::size_t(j) * n + c];
          for (int q = 1; q < threads; ++q) s += all[std::size_t(q) * m * n + std::size_t(j) * n + c];
          C(j, c) = s;
        }
    }
  };
  Kokkos::parallel_for("kfactor::gemm_skinny_tn",
                       Policy(exec, 1, exec.concurrency()).set_scratch_size(1, Kokkos::PerTeam(bytes)), body);
}

}  // namespace kfactor::detail
