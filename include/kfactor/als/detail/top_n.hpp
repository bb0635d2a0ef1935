#pragma once
/// \file
/// The top-N scoring kernel behind als::recommend, similar_items and the
/// ranking metrics: scores of a batch of query rows against every row of a
/// factor by kfactor::gemm, optional exclusions set to -inf, then a
/// team-level partial selection per query row.
///
/// Selection: every thread of a team keeps a sorted list of its best N
/// entries of a strided slice of the row (in team scratch; most entries are
/// refused by one comparison with the list's last), then one thread merges
/// the team's lists. The order is total (higher score first, the lower item
/// index among equal scores), so the result depends neither on the team
/// size nor on the batch size. Entries scored -inf (excluded) or NaN are
/// never selected. merge_top_n() joins the lists of blocks of items (the
/// blocks of Y a distributed evaluation sees in turn) under the same order,
/// so the joined list is the list over all the items.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/scratch_level.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/gemm.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace kfactor::als {

/// The best entries of each query row: row b's first count(b) columns hold
/// item indices and scores in descending score (ties: ascending index);
/// past count(b) items are -1 and scores -inf.
template <class T, class MemorySpace>
struct TopN {
  Kokkos::View<ordinal_t**, Kokkos::LayoutRight, MemorySpace> items;  ///< queries x width
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> scores;         ///< queries x width
  Kokkos::View<int*, MemorySpace> count;                              ///< entries returned per query
  [[nodiscard]] std::size_t width() const { return items.extent(1); }
};

namespace detail {

/// Whether (sa, ia) ranks before (sb, ib): higher score, then lower index.
template <class T>
KOKKOS_INLINE_FUNCTION bool ranks_before(T sa, ordinal_t ia, T sb, ordinal_t ib) {
  return sa > sb || (sa == sb && ia < ib);
}

/// Bytes of query scores per batch when the caller gives 0: a batch that
/// stays in a host's cache, or a large share of a device's memory.
template <class ExecutionSpace>
std::size_t default_score_batch_bytes() {
  return is_host_space_v<ExecutionSpace> ? std::size_t(32) << 20 : std::size_t(1) << 30;
}

/// What to exclude from a query row's candidates.
template <class T, class MemorySpace>
struct Exclusions {
  /// Row q of `seen` (q = the query's row of Q) lists items to exclude; null: none.
  const CsrMatrix<T, MemorySpace>* seen = nullptr;
  bool self = false;  ///< exclude the item whose index is the query's row (similarity of one factor)
};

/// The top `n` of Q(rows[b], :) . F(j, :) over j, for every b (see the file
/// comment); `max_batch_bytes` bounds the scores held at once (0: per
/// space). UsageError for n < 1, mismatched ranks or a row outside Q; n
/// larger than F's rows is clamped to them. `team_size` > 0 asks for that
/// many threads per query row (within the space's limit; tests use it to
/// merge several lists on hosts, which run one thread per row otherwise).
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> top_n(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& Q,
                           const DenseMatrix<T, MemorySpace>& F, const std::vector<ordinal_t>& rows, int n,
                           const Exclusions<T, MemorySpace>& ex, std::size_t max_batch_bytes, int team_size = 0) {
  if (n < 1) throw UsageError("top-N: N must be at least 1, got " + std::to_string(n));
  if (Q.extent(1) != F.extent(1))
    throw UsageError("top-N: query rank " + std::to_string(Q.extent(1)) + " differs from the factor's " +
                     std::to_string(F.extent(1)));
  const ordinal_t nq = ordinal_t(Q.extent(0)), ni = ordinal_t(F.extent(0));
  for (std::size_t b = 0; b < rows.size(); ++b)
    if (rows[b] < 0 || rows[b] >= nq)
      throw UsageError("top-N: query " + std::to_string(b) + " is row " + std::to_string(rows[b]) + ", outside 0.." +
                       std::to_string(nq - 1));
  if (ex.seen && ex.seen->num_rows() != nq)
    throw UsageError("top-N: the exclusion matrix has " + std::to_string(ex.seen->num_rows()) + " rows, not " +
                     std::to_string(nq));
  const int width = int(std::min<std::int64_t>(n, ni));
  const std::size_t nrows = rows.size();
  TopN<T, MemorySpace> out;
  out.items =
      decltype(out.items)(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::items"), nrows, width);
  out.scores = decltype(out.scores)(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::scores"),
                                    nrows, width);
  out.count = decltype(out.count)(Kokkos::view_alloc(exec, "kfactor::top_n::count"), nrows);
  if (nrows == 0 || width == 0) return out;
  const std::size_t f = Q.extent(1);

  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::View<ordinal_t*, MemorySpace> drows(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::rows"), nrows);
  Kokkos::deep_copy(exec, drows, Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(rows.data(), nrows));

  if (max_batch_bytes == 0) max_batch_bytes = default_score_batch_bytes<ExecutionSpace>();
  const std::size_t row_bytes = (std::size_t(ni) + f) * sizeof(T);
  const std::size_t batch = std::clamp<std::size_t>(max_batch_bytes / row_bytes, 1, nrows);
  DenseMatrix<T, MemorySpace> Qb(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::Q"), batch, f);
  DenseMatrix<T, MemorySpace> S(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::S"), batch,
                                std::size_t(ni));

  // Team shape: on devices up to 128 threads, fewer when their lists would
  // not fit the fast scratch; level-1 scratch when not even one list fits.
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Member = typename Policy::member_type;
  const std::size_t entry = sizeof(T) + sizeof(ordinal_t);
  const std::size_t fast =
      is_host_space_v<ExecutionSpace> ? std::size_t(1) << 20 : std::size_t(Policy(exec, 1, 1).scratch_size_max(0));
  int team = team_size > 0 ? team_size : is_host_space_v<ExecutionSpace> ? 1 : 128;
  if constexpr (is_host_space_v<ExecutionSpace>) team = std::max(1, std::min(team, exec.concurrency()));
  auto team_bytes = [&](int t) { return std::size_t(t) * (std::size_t(width) * entry + 2 * sizeof(int)) + 64; };
  while (team > 1 && team_bytes(team) > fast) team /= 2;
  const int level = team_bytes(team) <= fast ? 0 : 1;
  const std::size_t scratch = team_bytes(team);

  const auto items = out.items;
  const auto scores = out.scores;
  const auto count = out.count;
  const bool self = ex.self;
  CsrMatrix<T, MemorySpace> seen;
  if (ex.seen) seen = *ex.seen;
  const bool use_seen = ex.seen != nullptr;
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();

  for (std::size_t b0 = 0; b0 < nrows; b0 += batch) {
    const std::size_t nb = std::min(batch, nrows - b0);
    const auto Qv = Kokkos::subview(Qb, Kokkos::make_pair(std::size_t(0), nb), Kokkos::ALL);
    const auto Sv = Kokkos::subview(S, Kokkos::make_pair(std::size_t(0), nb), Kokkos::ALL);
    Kokkos::parallel_for(
        "kfactor::top_n::gather", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {nb, f}),
        KOKKOS_LAMBDA(std::size_t b, std::size_t k) { Qv(b, k) = Q(drows(b0 + b), k); });
    gemm(exec, Trans::none, Trans::transpose, T(1), Qv, F, T(0), Sv);
    if (use_seen || self)
      Kokkos::parallel_for(
          "kfactor::top_n::exclude", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nb), KOKKOS_LAMBDA(std::size_t b) {
            const ordinal_t q = drows(b0 + b);
            if (use_seen)
              for (auto e = seen.row_map(q); e < seen.row_map(q + 1); ++e)
                if (seen.entries(e) < ni) Sv(b, seen.entries(e)) = minus_inf;
            if (self && q < ni) Sv(b, q) = minus_inf;
          });
    Kokkos::parallel_for(
        "kfactor::top_n::select", Policy(exec, int(nb), team).set_scratch_size(level, Kokkos::PerTeam(scratch)),
        KOKKOS_LAMBDA(const Member& m) {
          with_scratch_level(level, [&](auto L) {
            constexpr int lv = decltype(L)::value;
            const int ts = m.team_size(), t = m.team_rank();
            const std::size_t b = m.league_rank();
            T* ls = static_cast<T*>(m.team_scratch(lv).get_shmem(sizeof(T) * std::size_t(ts) * width));
            ordinal_t* li =
                static_cast<ordinal_t*>(m.team_scratch(lv).get_shmem(sizeof(ordinal_t) * std::size_t(ts) * width));
            int* lc = static_cast<int*>(m.team_scratch(lv).get_shmem(sizeof(int) * ts));
            int* head = static_cast<int*>(m.team_scratch(lv).get_shmem(sizeof(int) * ts));
            T* s = ls + std::size_t(t) * width;
            ordinal_t* id = li + std::size_t(t) * width;
            int c = 0;
            for (ordinal_t j = t; j < ni; j += ts) {
              const T v = Sv(b, j);
              if (!(v > minus_inf)) continue;  // excluded, or NaN
              if (c == width && !ranks_before(v, j, s[c - 1], id[c - 1])) continue;
              int p = c < width ? c++ : width - 1;
              for (; p > 0 && ranks_before(v, j, s[p - 1], id[p - 1]); --p) {
                s[p] = s[p - 1];
                id[p] = id[p - 1];
              }
              s[p] = v;
              id[p] = j;
            }
            lc[t] = c;
            head[t] = 0;
            m.team_barrier();
            Kokkos::single(Kokkos::PerTeam(m), [&]() {
              const std::size_t row = b0 + b;
              int r = 0;
              for (; r < width; ++r) {
                int best = -1;
                for (int u = 0; u < ts; ++u) {
                  if (head[u] == lc[u]) continue;
                  const std::size_t at = std::size_t(u) * width + head[u];
                  if (best < 0 || ranks_before(ls[at], li[at], ls[std::size_t(best) * width + head[best]],
                                               li[std::size_t(best) * width + head[best]]))
                    best = u;
                }
                if (best < 0) break;
                const std::size_t at = std::size_t(best) * width + head[best]++;
                items(row, r) = li[at];
                scores(row, r) = ls[at];
              }
              count(row) = r;
              for (int q = r; q < width; ++q) {
                items(row, q) = -1;
                scores(row, q) = minus_inf;
              }
            });
          });
        });
  }
  exec.fence();
  return out;
}

/// Lists of no items for `rows` query rows: where merge_top_n() starts.
template <class T, class MemorySpace, class ExecutionSpace>
TopN<T, MemorySpace> empty_top_n(const ExecutionSpace& exec, std::size_t rows) {
  TopN<T, MemorySpace> out;
  out.items = decltype(out.items)(Kokkos::view_alloc(exec, "kfactor::top_n::items"), rows, 0);
  out.scores = decltype(out.scores)(Kokkos::view_alloc(exec, "kfactor::top_n::scores"), rows, 0);
  out.count = decltype(out.count)(Kokkos::view_alloc(exec, "kfactor::top_n::count"), rows);
  return out;
}

/// The best `n` entries per query row of two ranked lists of disjoint item
/// sets for the same query rows: `a`'s items as they are, `b`'s plus
/// `b_offset` (b ranks a block of items by local index). Ordered by
/// ranks_before on the shifted indices, so merging the top n of every block
/// of items into empty_top_n(), blocks in any order, gives the top n over
/// all of them, entry for entry. Width min(n, a's width + b's width).
template <class ExecutionSpace, class T, class MemorySpace>
TopN<T, MemorySpace> merge_top_n(const ExecutionSpace& exec, const TopN<T, MemorySpace>& a,
                                 const TopN<T, MemorySpace>& b, ordinal_t b_offset, int n) {
  const std::size_t nrows = b.items.extent(0);
  if (a.items.extent(0) != nrows)
    throw UsageError("top-N merge: lists of " + std::to_string(a.items.extent(0)) + " and " + std::to_string(nrows) +
                     " query rows");
  const int wa = int(a.width()), wb = int(b.width());
  const int width = std::min(n, wa + wb);
  TopN<T, MemorySpace> out;
  out.items =
      decltype(out.items)(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::items"), nrows, width);
  out.scores = decltype(out.scores)(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::top_n::scores"),
                                    nrows, width);
  out.count = decltype(out.count)(Kokkos::view_alloc(exec, "kfactor::top_n::count"), nrows);
  const auto ai = a.items, bi = b.items, oi = out.items;
  const auto as = a.scores, bs = b.scores, os = out.scores;
  const auto ac = a.count, bc = b.count, oc = out.count;
  constexpr T minus_inf = -std::numeric_limits<T>::infinity();
  Kokkos::parallel_for(
      "kfactor::top_n::merge", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nrows), KOKKOS_LAMBDA(std::size_t r) {
        const int ca = ac(r), cb = bc(r);
        int x = 0, y = 0, c = 0;
        for (; c < width && (x < ca || y < cb); ++c) {
          const bool take_a =
              y == cb || (x < ca && ranks_before(as(r, x), ai(r, x), bs(r, y), ordinal_t(bi(r, y) + b_offset)));
          if (take_a) {
            oi(r, c) = ai(r, x);
            os(r, c) = as(r, x++);
          } else {
            oi(r, c) = bi(r, y) + b_offset;
            os(r, c) = bs(r, y++);
          }
        }
        oc(r) = c;
        for (int q = c; q < width; ++q) {
          oi(r, q) = -1;
          os(r, q) = minus_inf;
        }
      });
  return out;
}

}  // namespace detail
}  // namespace kfactor::als
