#pragma once
/// \file
/// Portable CSR x dense SpMM written once in Kokkos:
///   C = alpha * A * B + beta * C,  A: m x n CSR, B: n x k, C: m x k (row-major).
/// On a device, one team handles `rows_per_team` rows (one team thread per
/// row) and the vector lanes of that thread run over the k columns, so a
/// nonzero's row of B is read contiguously (coalesced). Rows with more than
/// `heavy_row_nnz` nonzeros (power-law inputs: a popular column of a document
/// matrix holds ~all rows) would leave one thread looping while the device
/// idles, so they are cut into chunks of at most `heavy_chunk_nnz` nonzeros
/// with a whole team each: its threads take strided shares of the chunk, their
/// partial sums are added in thread order through team scratch, and a second
/// kernel adds each row's chunk sums in chunk order. On a host space one thread owns a row (dynamic schedule) and
/// adds alpha*a_ij*B(j,:) nonzero by nonzero, a chunk of C's row at a time in
/// registers (spmm_host_row_chunks). Every sum is in a fixed order, so the
/// result is deterministic on a backend; light and heavy rows sum in different
/// orders (rounding only).

#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

namespace kfactor::detail {

/// Launch shape of the row-team kernels of kfactor (SpMM, NMF sweeps): a
/// tuning trait keyed on whether the space runs on the host.
template <class ExecutionSpace>
struct RowTeamShape {
  static constexpr bool host = is_host_space_v<ExecutionSpace>;
  /// Vector lanes per row for an inner dimension of k (a power of two, at most 32).
  static int vector_length(int k) {
    if constexpr (host) {
      (void)k;
      return 1;
    } else {
      int v = 1;
      while (v < k && v < 32) v *= 2;
      return v;
    }
  }
  /// Rows per team (= team threads on a device; a serial chunk on a host).
  static int rows_per_team(int k) {
    if constexpr (host) {
      (void)k;
      return 16;
    } else {
      return 256 / vector_length(k) > 0 ? 256 / vector_length(k) : 1;
    }
  }
};

/// Rows with more nonzeros than this get whole teams in the device SpMM. A
/// thread walks its row's nonzeros one after another, a chain of dependent
/// loads (column index, then the row of B): on a small input (MovieLens
/// latest-small, 100K ratings, its 610 users' rows 20 to 2,698 long) a limit
/// of 512 left 570 rows to single threads, and the product took about
/// 100 us, bound by that latency.
inline constexpr int heavy_row_nnz = 64;
/// Nonzeros per team in the heavy-row kernel: 32 per thread of a team of 16.
/// A Zipf column of implicit feedback (a popular item) holds a few percent of
/// all nonzeros: one team walking it alone bounded the whole product while
/// the other multiprocessors idled.
inline constexpr int heavy_chunk_nnz = 512;
/// Team threads on one heavy chunk (1024 device threads per team at most).
inline int heavy_row_team_threads(int vector_length) { return 512 / vector_length > 0 ? 512 / vector_length : 1; }

/// The rows of A with more than heavy_row_nnz nonzeros (in order), cut into
/// chunks of at most heavy_chunk_nnz nonzeros: rows(h)'s chunks are
/// first(h) .. first(h + 1) - 1, chunk q belongs to rows(chunk_row(q)) and
/// starts (q - first(chunk_row(q))) * heavy_chunk_nnz nonzeros into it.
template <class MemorySpace>
struct HeavyRowChunks {
  Kokkos::View<int*, MemorySpace> rows;
  Kokkos::View<int*, MemorySpace> first;
  Kokkos::View<int*, MemorySpace> chunk_row;
  int chunks = 0;
};

/// The four passes of heavy_row_chunks, one work tag each (a named functor:
/// see SpmmHeavyChunkSums).
template <class MemorySpace>
struct HeavyRowLister {
  struct CountRows {};
  struct ListRows {};
  struct CountChunks {};
  struct ListChunks {};
  Kokkos::View<offset_t*, MemorySpace> row_map;
  HeavyRowChunks<MemorySpace> out;
  int count = 0;

  KOKKOS_INLINE_FUNCTION bool heavy(int i) const { return row_map(i + 1) - row_map(i) > offset_t(heavy_row_nnz); }
  KOKKOS_INLINE_FUNCTION void operator()(CountRows, int i, int& n) const { n += heavy(i) ? 1 : 0; }
  KOKKOS_INLINE_FUNCTION void operator()(ListRows, int i, int& offset, bool final) const {
    if (final && heavy(i)) out.rows(offset) = i;
    offset += heavy(i) ? 1 : 0;
  }
  KOKKOS_INLINE_FUNCTION void operator()(CountChunks, int h, int& offset, bool final) const {
    if (final) out.first(h) = offset;
    if (h < count) {
      const auto n = row_map(out.rows(h) + 1) - row_map(out.rows(h));
      offset += int((n + heavy_chunk_nnz - 1) / heavy_chunk_nnz);
    }
  }
  KOKKOS_INLINE_FUNCTION void operator()(ListChunks, int h) const {
    for (int q = out.first(h); q < out.first(h + 1); ++q) out.chunk_row(q) = h;
  }
};

template <class ExecutionSpace, class T, class MemorySpace>
HeavyRowChunks<MemorySpace> heavy_row_chunks(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  using Lister = HeavyRowLister<MemorySpace>;
  using CountRows = Kokkos::RangePolicy<ExecutionSpace, typename Lister::CountRows>;
  using ListRows = Kokkos::RangePolicy<ExecutionSpace, typename Lister::ListRows>;
  using CountChunks = Kokkos::RangePolicy<ExecutionSpace, typename Lister::CountChunks>;
  using ListChunks = Kokkos::RangePolicy<ExecutionSpace, typename Lister::ListChunks>;
  Lister f{A.row_map, {}, 0};
  const int m = A.num_rows();
  Kokkos::parallel_reduce("kfactor::spmm_count_heavy_rows", CountRows(exec, 0, m), f, f.count);
  if (f.count == 0) return {};
  f.out.rows = Kokkos::View<int*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::heavy_rows"), f.count);
  f.out.first = Kokkos::View<int*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::heavy_row_chunks"), f.count + 1);
  Kokkos::parallel_scan("kfactor::spmm_list_heavy_rows", ListRows(exec, 0, m), f);
  Kokkos::parallel_scan("kfactor::spmm_count_heavy_chunks", CountChunks(exec, 0, f.count + 1), f, f.out.chunks);
  f.out.chunk_row = Kokkos::View<int*, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::heavy_chunk_row"), f.out.chunks);
  Kokkos::parallel_for("kfactor::spmm_list_heavy_chunks", ListChunks(exec, 0, f.count), f);
  return f.out;
}

/// The kernels below are named functors, not KOKKOS_LAMBDAs: nvcc keeps the
/// host-side helpers of an extended lambda private to each translation unit,
/// and when a template that holds one is instantiated in several (the library
/// and the Python module both instantiate these) the linker may keep a copy of
/// the template whose helper was never set: a host SpMM jumped to address 0.

/// One team per heavy chunk q: its threads' strided shares of the chunk,
/// added in thread order through scratch, into partial(q, :).
template <class Member, class S, class MemorySpace, class Matrix, class BV>
struct SpmmHeavyChunkSums {
  using Scratch = Kokkos::View<S**, typename Member::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  int k, threads, vlen;
  Matrix A;
  BV B;
  HeavyRowChunks<MemorySpace> heavy;
  Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace> partial;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int q = team.league_rank();
    const int h = heavy.chunk_row(q);
    const int i = heavy.rows(h);
    const auto e0 = A.row_map(i) + offset_t(q - heavy.first(h)) * offset_t(heavy_chunk_nnz);
    const auto e1 =
        e0 + offset_t(heavy_chunk_nnz) < A.row_map(i + 1) ? e0 + offset_t(heavy_chunk_nnz) : A.row_map(i + 1);
    Scratch part(team.team_scratch(0), threads, vlen);
    for (int c0 = 0; c0 < k; c0 += vlen) {
      const int cn = k - c0 < vlen ? k - c0 : vlen;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](int t) {
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cn), [&](int c) {
          S acc = S(0);
          for (auto e = e0 + offset_t(t); e < e1; e += offset_t(threads))
            acc += S(A.values(e)) * S(B(A.entries(e), c0 + c));
          part(t, c) = acc;
        });
      });
      team.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](int t) {
        if (t != 0) return;
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, cn), [&](int c) {
          S acc = S(0);
          for (int u = 0; u < threads; ++u) acc += part(u, c);
          partial(q, c0 + c) = acc;
        });
      });
      team.team_barrier();
    }
  }
};

/// One team per heavy row h: C(rows(h), :) from its chunks' sums, in chunk order.
template <class Member, class S, class MemorySpace, class CV>
struct SpmmHeavyRowSums {
  int k;
  S alpha, beta;
  CV C;
  HeavyRowChunks<MemorySpace> heavy;
  Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace> partial;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int h = team.league_rank();
    const int i = heavy.rows(h);
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, k), [&](int c) {
      S acc = S(0);
      for (int q = heavy.first(h); q < heavy.first(h + 1); ++q) acc += partial(q, c);
      C(i, c) = alpha * acc + (beta == S(0) ? S(0) : beta * C(i, c));
    });
  }
};

/// C(i, :) = alpha A(i, :) B + beta C(i, :) for the heavy rows i of A only
/// (the device SpMM's second kernel; any space runs it, the tests on a host):
/// teams of `threads` x `vlen` over the chunks, each chunk's sum in scratch
/// (threads' strided shares added in thread order), then each row's chunk
/// sums added in chunk order.
/// `heavy`: A's heavy_row_chunks; `partial`: at least heavy.chunks x k
/// (C's width) of scratch for the chunks' sums.
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_heavy_rows(
    const ExecutionSpace& exec, typename CV::non_const_value_type alpha, const CsrMatrix<T, MemorySpace>& A,
    const BV& B, typename CV::non_const_value_type beta, const CV& C, int threads, int vlen,
    const HeavyRowChunks<MemorySpace>& heavy,
    const Kokkos::View<typename CV::non_const_value_type**, Kokkos::LayoutRight, MemorySpace>& partial) {
  using S = typename CV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  if (heavy.chunks == 0) return;
  const int k = static_cast<int>(C.extent(1));
  using ChunkSums = SpmmHeavyChunkSums<Member, S, MemorySpace, CsrMatrix<T, MemorySpace>, BV>;
  const auto bytes = ChunkSums::Scratch::shmem_size(threads, vlen);
  Kokkos::parallel_for("kfactor::spmm_portable_heavy_chunks",
                       Policy(exec, heavy.chunks, threads, vlen).set_scratch_size(0, Kokkos::PerTeam(bytes)),
                       ChunkSums{k, threads, vlen, A, B, heavy, partial});
  Kokkos::parallel_for("kfactor::spmm_portable_heavy_rows", Policy(exec, int(heavy.rows.extent(0)), 1, vlen),
                       SpmmHeavyRowSums<Member, S, MemorySpace, CV>{k, alpha, beta, C, heavy, partial});
}

/// The same, with A's chunks and the scratch derived here (three reductions
/// read back on the host and four allocations per call; kfactor::SpmmPlan
/// keeps them across products on one pattern).
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_heavy_rows(const ExecutionSpace& exec, typename CV::non_const_value_type alpha,
                     const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta,
                     const CV& C, int threads, int vlen) {
  using S = typename CV::non_const_value_type;
  const auto heavy = heavy_row_chunks(exec, A);
  if (heavy.chunks == 0) return;
  const Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace> partial(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::spmm_heavy_partial"), heavy.chunks, C.extent(1));
  spmm_heavy_rows(exec, alpha, A, B, beta, C, threads, vlen, heavy, partial);
}

/// Host SpMM, row i: C(i, c0 + [0, N)) for each whole chunk of N columns from
/// c0 on, in N accumulators that the compiler keeps in vector registers (one
/// load of B per multiply-add), written to C once; returns the first column
/// left. Accumulating into C's row instead cost a load and a store of C per
/// multiply-add and ran at a third of the speed (20 Newsgroups-like, K = 256,
/// fp64, 2 cores: 106 -> 38 ms per product). Same sums in the same order: C
/// starts from beta C (or 0) and adds the nonzeros in order.
template <int N, class S, class RowMap, class Entries, class Values, class BV, class CV>
KOKKOS_INLINE_FUNCTION int spmm_host_row_chunks(int i, int c0, int k, S alpha, S beta, const RowMap& row_map,
                                                const Entries& entries, const Values& values, const BV& B,
                                                const CV& C) {
  const auto e0 = row_map(i), e1 = row_map(i + 1);
  for (; c0 + N <= k; c0 += N) {
    S acc[N];
    for (int c = 0; c < N; ++c) acc[c] = beta == S(0) ? S(0) : beta * C(i, c0 + c);
    for (auto e = e0; e < e1; ++e) {
      const S a = alpha * S(values(e));
      const auto j = entries(e);
#if defined(_OPENMP) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#pragma omp simd
#endif
      for (int c = 0; c < N; ++c) acc[c] += a * S(B(j, c0 + c));
    }
    for (int c = 0; c < N; ++c) C(i, c0 + c) = acc[c];
  }
  return c0;
}

/// Row i of C = alpha A B + beta C on a host thread: spmm_host_row_chunks
/// from 1024-byte chunks (16 AVX-512 registers) down through halving chunks
/// to one 32-byte vector, then single columns.
template <class S, class RowMap, class Entries, class Values, class BV, class CV>
KOKKOS_INLINE_FUNCTION void spmm_host_row(int i, int k, S alpha, S beta, const RowMap& row_map, const Entries& entries,
                                          const Values& values, const BV& B, const CV& C) {
  constexpr int W = 1024 / int(sizeof(S));
  int c = spmm_host_row_chunks<W>(i, 0, k, alpha, beta, row_map, entries, values, B, C);
  c = spmm_host_row_chunks<W / 2>(i, c, k, alpha, beta, row_map, entries, values, B, C);
  c = spmm_host_row_chunks<W / 4>(i, c, k, alpha, beta, row_map, entries, values, B, C);
  c = spmm_host_row_chunks<W / 8>(i, c, k, alpha, beta, row_map, entries, values, B, C);
  c = spmm_host_row_chunks<W / 16>(i, c, k, alpha, beta, row_map, entries, values, B, C);
  c = spmm_host_row_chunks<W / 32>(i, c, k, alpha, beta, row_map, entries, values, B, C);
  spmm_host_row_chunks<1>(i, c, k, alpha, beta, row_map, entries, values, B, C);
}

/// Host rows of spmm_portable: one row per call (a named functor: see
/// SpmmHeavyChunkSums).
template <class S, class Matrix, class BV, class CV>
struct SpmmHostRows {
  int k;
  S alpha, beta;
  Matrix A;
  BV B;
  CV C;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const {
    spmm_host_row(i, k, alpha, beta, A.row_map, A.entries, A.values, B, C);
  }
};

/// Device light rows of spmm_portable: a team thread per row, vector lanes
/// over the k columns, each lane accumulating its columns in a register;
/// rows of more than heavy_row_nnz nonzeros are left to spmm_heavy_rows.
template <class Member, class S, class Matrix, class BV, class CV>
struct SpmmLightRows {
  int m, k, rows_per_team;
  S alpha, beta;
  Matrix A;
  BV B;
  CV C;
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int r0 = team.league_rank() * rows_per_team;
    const int r1 = r0 + rows_per_team < m ? r0 + rows_per_team : m;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](int i) {
      const auto e0 = A.row_map(i), e1 = A.row_map(i + 1);
      if (e1 - e0 > offset_t(heavy_row_nnz)) return;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, k), [&](int c) {
        S acc = S(0);
        for (auto e = e0; e < e1; ++e) acc += S(A.values(e)) * S(B(A.entries(e), c));
        C(i, c) = alpha * acc + (beta == S(0) ? S(0) : beta * C(i, c));
      });
    });
  }
};

/// `heavy`, `partial`: A's heavy-row chunks and their scratch (see
/// spmm_heavy_rows), derived per call when `heavy` is null.
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_portable(
    const ExecutionSpace& exec, typename CV::non_const_value_type alpha, const CsrMatrix<T, MemorySpace>& A,
    const BV& B, typename CV::non_const_value_type beta, const CV& C,
    const HeavyRowChunks<MemorySpace>* heavy = nullptr,
    const Kokkos::View<typename CV::non_const_value_type**, Kokkos::LayoutRight, MemorySpace>& partial = {}) {
  using S = typename CV::non_const_value_type;
  using Shape = RowTeamShape<ExecutionSpace>;
  using Matrix = CsrMatrix<T, MemorySpace>;
  const int m = A.num_rows();
  const int k = static_cast<int>(C.extent(1));
  if (m == 0 || k == 0) return;
  if constexpr (Shape::host) {
    Kokkos::parallel_for("kfactor::spmm_portable_host",
                         Kokkos::RangePolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, m),
                         SpmmHostRows<S, Matrix, BV, CV>{k, alpha, beta, A, B, C});
  } else {
    using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
    const int vlen = Shape::vector_length(k);
    const int rpt = Shape::rows_per_team(k);
    const int league = (m + rpt - 1) / rpt;
    Kokkos::parallel_for(
        "kfactor::spmm_portable", Policy(exec, league, rpt, vlen),
        SpmmLightRows<typename Policy::member_type, S, Matrix, BV, CV>{m, k, rpt, alpha, beta, A, B, C});
    if (heavy)
      spmm_heavy_rows(exec, alpha, A, B, beta, C, heavy_row_team_threads(vlen), vlen, *heavy, partial);
    else
      spmm_heavy_rows(exec, alpha, A, B, beta, C, heavy_row_team_threads(vlen), vlen);
  }
}

}  // namespace kfactor::detail
