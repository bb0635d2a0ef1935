#pragma once
/// \file
/// Portable CSR x dense SpMM written once in Kokkos:
///   C = alpha * A * B + beta * C,  A: m x n CSR, B: n x k, C: m x k (row-major).
/// On a device, one launch: most teams handle a row per team thread, the
/// vector lanes of that thread running over the k columns, so a nonzero's row
/// of B is read contiguously (coalesced). Rows with more than `heavy_row_nnz`
/// nonzeros (`heavy_row_nnz_unplanned` without a kfactor::SpmmPlan; power-law
/// inputs: a popular column of a document matrix holds ~all rows) would
/// leave one thread looping while the device idles, so they
/// are cut into chunks of at most `heavy_chunk_nnz` nonzeros with a whole team
/// each: its threads take strided shares of the chunk, their partial sums are
/// added in thread order through team scratch, and the team that finishes a
/// row's last chunk adds the row's chunk sums in chunk order. Implicit ALS
/// runs a few hundred thousand nonzeros through the SpMM eight times an
/// iteration, where every launch counts: one launch instead of a kernel each
/// for light rows, chunks and chunk sums. On a host space one thread owns a
/// row (dynamic schedule) and adds alpha*a_ij*B(j,:) nonzero by nonzero, a
/// chunk of C's row at a time in registers (spmm_host_row_chunks). Every sum
/// is in a fixed order, so the result is deterministic on a backend; light
/// and heavy rows sum in different orders (rounding only).

#include <kfactor/core/detail/light_weight.hpp>
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
};

/// Rows with more nonzeros than this get whole teams in the device SpMM. A
/// thread walks its row's nonzeros one after another, a chain of dependent
/// loads (column index, then the row of B): on a small input (MovieLens
/// latest-small, 100K ratings, its 610 users' rows 20 to 2,698 long) a limit
/// of 512 left 570 rows to single threads, and the product took about
/// 100 us, bound by that latency.
inline constexpr int heavy_row_nnz = 64;
/// The same limit for a product without a kfactor::SpmmPlan, which derives
/// the split on every call (a reduction read back on the host; allocations
/// and a partial sum per chunk when any row is split): it splits only rows
/// longer than a chunk, and a typical sparse NMF input (100 to 200 nonzeros
/// in every row) none, instead of all of its rows on every product.
inline constexpr int heavy_row_nnz_unplanned = 512;
/// Nonzeros per team in the heavy-row kernel: 32 per thread of a team of 16.
/// A Zipf column of implicit feedback (a popular item) holds a few percent of
/// all nonzeros: one team walking it alone bounded the whole product while
/// the other multiprocessors idled.
inline constexpr int heavy_chunk_nnz = 512;
/// Team threads of the device SpMM: on a heavy chunk, or a row each (1024
/// device threads per team at most).
inline int spmm_team_threads(int vector_length) { return 512 / vector_length > 0 ? 512 / vector_length : 1; }

/// The rows of A with more than min_nnz nonzeros (in order), cut into
/// chunks of at most heavy_chunk_nnz nonzeros: rows(h)'s chunks are
/// first(h) .. first(h + 1) - 1, chunk q belongs to rows(chunk_row(q)) and
/// starts (q - first(chunk_row(q))) * heavy_chunk_nnz nonzeros into it.
template <class MemorySpace>
struct HeavyRowChunks {
  int min_nnz = heavy_row_nnz;  ///< rows of more nonzeros are heavy; the others a thread each
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

  KOKKOS_INLINE_FUNCTION bool heavy(int i) const { return row_map(i + 1) - row_map(i) > offset_t(out.min_nnz); }
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
HeavyRowChunks<MemorySpace> heavy_row_chunks(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                             int min_nnz) {
  using Lister = HeavyRowLister<MemorySpace>;
  using CountRows = Kokkos::RangePolicy<ExecutionSpace, typename Lister::CountRows>;
  using ListRows = Kokkos::RangePolicy<ExecutionSpace, typename Lister::ListRows>;
  using CountChunks = Kokkos::RangePolicy<ExecutionSpace, typename Lister::CountChunks>;
  using ListChunks = Kokkos::RangePolicy<ExecutionSpace, typename Lister::ListChunks>;
  Lister f{A.row_map, {}, 0};
  f.out.min_nnz = min_nnz;
  const int m = A.num_rows();
  Kokkos::parallel_reduce("kfactor::spmm_count_heavy_rows", CountRows(exec, 0, m), f, f.count);
  if (f.count == 0) return f.out;
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

/// The device SpMM in one launch of teams of `threads` x `vlen` (any space
/// runs it, the tests on a host). Teams [0, heavy.chunks) take the heavy
/// chunks: chunk q's sum (the threads' strided shares, added in thread order
/// through scratch) goes to partial(q, :), and the team that counts a row's
/// last chunk done (chunks_done, a counter per heavy row that it resets for
/// the next product) sets C's row from the row's chunk sums in chunk order.
/// The other teams take `threads` rows each, a thread per row at or below
/// heavy.min_nnz, lanes over the columns, each lane accumulating in a register.
template <class Member, class S, class MemorySpace, class Matrix, class BV, class CV>
struct SpmmTeamRows {
  using Scratch = Kokkos::View<S**, typename Member::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  int m, k, threads, vlen;
  S alpha, beta;
  Matrix A;
  BV B;
  CV C;
  HeavyRowChunks<MemorySpace> heavy;
  Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace> partial;
  Kokkos::View<int*, MemorySpace> chunks_done;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    if (team.league_rank() < heavy.chunks)
      chunk(team, team.league_rank());
    else
      light_rows(team, (team.league_rank() - heavy.chunks) * threads);
  }

  KOKKOS_INLINE_FUNCTION void light_rows(const Member& team, int r0) const {
    const int r1 = r0 + threads < m ? r0 + threads : m;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, r0, r1), [&](int i) {
      const auto e0 = A.row_map(i), e1 = A.row_map(i + 1);
      if (e1 - e0 > offset_t(heavy.min_nnz)) return;
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, k), [&](int c) {
        S acc = S(0);
        for (auto e = e0; e < e1; ++e) acc += S(A.values(e)) * S(B(A.entries(e), c));
        C(i, c) = alpha * acc + (beta == S(0) ? S(0) : beta * C(i, c));
      });
    });
  }

  KOKKOS_INLINE_FUNCTION void chunk(const Member& team, int q) const {
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
    // The fence orders this chunk's sums before its count; the team that
    // counts last reads the others' sums through atomic (uncached) loads.
    const int chunks = heavy.first(h + 1) - heavy.first(h);
    int last = 0;
    Kokkos::single(
        Kokkos::PerTeam(team),
        [&](int& is_last) {
          Kokkos::memory_fence();
          is_last = Kokkos::atomic_fetch_add(&chunks_done(h), 1) == chunks - 1 ? 1 : 0;
          if (is_last) {
            Kokkos::memory_fence();
            Kokkos::atomic_store(&chunks_done(h), 0);
          }
        },
        last);
    if (!last) return;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, k), [&](int c) {
      S acc = S(0);
      for (int p = heavy.first(h); p < heavy.first(h + 1); ++p) acc += Kokkos::atomic_load(&partial(p, c));
      C(i, c) = alpha * acc + (beta == S(0) ? S(0) : beta * C(i, c));
    });
  }
};

/// What SpmmTeamRows needs of A's pattern beside the operands: its heavy-row
/// chunks, scratch for the chunks' sums (chunks x k, k = C's width) and a
/// zero per heavy row (the count of its finished chunks, left zero).
template <class S, class MemorySpace>
struct HeavyRowWork {
  HeavyRowChunks<MemorySpace> heavy;
  Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace> partial;
  Kokkos::View<int*, MemorySpace> chunks_done;
};

/// HeavyRowWork of A for products k columns wide, rows of more than min_nnz
/// nonzeros split (three reductions read back on the host and five
/// allocations: kfactor::SpmmPlan keeps it across products on one pattern).
template <class S, class ExecutionSpace, class T, class MemorySpace>
HeavyRowWork<S, MemorySpace> heavy_row_work(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A,
                                            std::size_t k, int min_nnz) {
  HeavyRowWork<S, MemorySpace> w;
  w.heavy = heavy_row_chunks(exec, A, min_nnz);
  w.partial = Kokkos::View<S**, Kokkos::LayoutRight, MemorySpace>(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::spmm_heavy_partial"), std::size_t(w.heavy.chunks),
      k);
  w.chunks_done =
      Kokkos::View<int*, MemorySpace>(Kokkos::view_alloc(exec, "kfactor::spmm_chunks_done"), w.heavy.rows.extent(0));
  return w;
}

/// C = alpha A B + beta C by SpmmTeamRows, with A's HeavyRowWork for C's
/// width.
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_team_rows(const ExecutionSpace& exec, typename CV::non_const_value_type alpha,
                    const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta,
                    const CV& C, int threads, int vlen,
                    const HeavyRowWork<typename CV::non_const_value_type, MemorySpace>& work) {
  using S = typename CV::non_const_value_type;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Rows = SpmmTeamRows<typename Policy::member_type, S, MemorySpace, CsrMatrix<T, MemorySpace>, BV, CV>;
  const int m = A.num_rows(), k = static_cast<int>(C.extent(1));
  if (m == 0 || k == 0) return;
  const int league = work.heavy.chunks + (m + threads - 1) / threads;
  const auto bytes = Rows::Scratch::shmem_size(threads, vlen);
  Kokkos::parallel_for("kfactor::spmm_portable",
                       light_weight(Policy(exec, league, threads, vlen).set_scratch_size(0, Kokkos::PerTeam(bytes))),
                       Rows{m, k, threads, vlen, alpha, beta, A, B, C, work.heavy, work.partial, work.chunks_done});
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

/// `work`: A's HeavyRowWork for C's width, derived per call when null.
template <class ExecutionSpace, class T, class MemorySpace, class BV, class CV>
void spmm_portable(const ExecutionSpace& exec, typename CV::non_const_value_type alpha,
                   const CsrMatrix<T, MemorySpace>& A, const BV& B, typename CV::non_const_value_type beta, const CV& C,
                   const HeavyRowWork<typename CV::non_const_value_type, MemorySpace>* work = nullptr) {
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
    const int vlen = Shape::vector_length(k);
    const int threads = spmm_team_threads(vlen);
    spmm_team_rows(exec, alpha, A, B, beta, C, threads, vlen,
                   work ? *work : heavy_row_work<S>(exec, A, C.extent(1), heavy_row_nnz_unplanned));
  }
}

}  // namespace kfactor::detail
