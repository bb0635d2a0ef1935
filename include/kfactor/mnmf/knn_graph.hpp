#pragma once
/// \file
/// K-nearest-neighbour graphs over the rows of a sparse rating matrix, built
/// in Kokkos on the device in bounded memory: the user graph P is
/// knn_graph(exec, R, opts) (rows = users), the item graph Pb is
/// knn_graph(exec, transpose(exec, R), opts) (rows = items).
///
/// The paper (section 3.3) leaves the similarity open; kfactor pins it:
///  - Distance: squared Euclidean distance between rating rows, with a missing
///    rating entering as 0 (the rows are the sparse vectors themselves):
///      d2(i, l) = max(0, (|v_i|^2 + |v_l|^2) - 2 v_i.v_l),
///    evaluated in double with the dot product summed over the common columns
///    in increasing column order.
///  - Neighbours: the K rows l != i with the smallest (d2, l) in lexicographic
///    order, i.e. ties broken by the lower index; K is capped at m - 1. Rows
///    without ratings are ordinary candidates (d2 = |v_i|^2).
///  - Symmetrization: OR by default (edge {i, l} when l is among i's K or i
///    among l's; every node then has >= K neighbours), AND optionally (both).
///  - Weights, computed once per undirected edge so P == P^T exactly:
///      binary: 1;  heat: exp(-d2 / sigma);  dot: v_i . v_l.
///    sigma <= 0 selects the mean d2 over the graph's edges.
///  - No self-loops. q_ii = row sums (mnmf::make_problem computes them).
///
/// Memory: queries go in blocks of B rows; a block holds a dense n x B slice
/// of the query rows and an m x B tile of dot products (S^T = V * X^T, a
/// sparse-times-dense product, one team per candidate row, summed in column
/// order so the result is deterministic), so the peak is about
/// 8 B (m + n) bytes (8 B (2m + n) on host spaces, which also keep the tile
/// transposed for the selection scan) with B chosen from
/// GraphOptions::block_bytes; nothing is m x m. Selection: one team per query row, each thread keeps a sorted
/// top-K list of its strided candidates in team scratch, then K rounds of
/// team min-reductions merge them. Time is O(m nnz(V)) multiply-adds plus
/// O(m^2) selection work: exact kNN, meant for the data sizes of the paper's
/// experiments on a GPU.

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>
#include <Kokkos_Sort.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace kfactor::mnmf {

enum class Weighting { binary, heat, dot };
enum class Symmetrization { union_or, intersection_and };

inline const char* to_string(Weighting w) {
  return w == Weighting::heat ? "heat" : (w == Weighting::dot ? "dot" : "binary");
}
inline Weighting parse_weighting(const std::string& s) {
  if (s == "binary" || s == "0-1") return Weighting::binary;
  if (s == "heat") return Weighting::heat;
  if (s == "dot") return Weighting::dot;
  throw UsageError("unknown graph weighting '" + s + "' (binary|heat|dot)");
}
inline const char* to_string(Symmetrization s) { return s == Symmetrization::intersection_and ? "and" : "or"; }
inline Symmetrization parse_symmetrization(const std::string& s) {
  if (s == "or") return Symmetrization::union_or;
  if (s == "and") return Symmetrization::intersection_and;
  throw UsageError("unknown graph symmetrization '" + s + "' (or|and)");
}

/// How knn_graph builds a graph. Every numeric field has a Range beside it,
/// checked by validate() (UsageError naming the field and its range).
struct GraphOptions {
  static constexpr Range<int> neighbors_range{.lo = 1, .hi = 1024};
  static constexpr Range<double> sigma_range{.lo = -1e12, .hi = 1e12, .note = "<= 0: automatic"};
  static constexpr Range<std::size_t> block_bytes_range{.lo = 1024, .hi = std::size_t(1) << 50};

  int neighbors = 15;  ///< K (the paper's default), in neighbors_range
  Weighting weighting = Weighting::binary;
  double sigma = 0.0;  ///< heat-kernel width, in sigma_range; <= 0: mean squared distance over the edges
  Symmetrization symmetrization = Symmetrization::union_or;
  std::size_t block_bytes = std::size_t(256) << 20;  ///< bound on the query-block buffers, in block_bytes_range

  void validate() const {
    check_range("knn graph", "neighbors", neighbors, neighbors_range);
    check_range("knn graph", "sigma", sigma, sigma_range);
    check_range("knn graph", "block_bytes", block_bytes, block_bytes_range);
  }
};

namespace detail {

/// Pairs ordered by (distance, index): the tie rule.
KOKKOS_INLINE_FUNCTION bool knn_less(double da, ordinal_t ia, double db, ordinal_t ib) {
  return da < db || (da == db && ia < ib);
}

/// Dot product of two sorted sparse rows over their common columns, in
/// increasing column order, in double.
template <class RowMap, class Cols, class Vals>
KOKKOS_INLINE_FUNCTION double sparse_row_dot(const RowMap& row_map, const Cols& cols, const Vals& vals, ordinal_t a,
                                             ordinal_t b) {
  offset_t p = row_map(a), pe = row_map(a + 1), q = row_map(b), qe = row_map(b + 1);
  double s = 0.0;
  while (p < pe && q < qe) {
    const ordinal_t ca = cols(p), cb = cols(q);
    if (ca == cb) {
      s += double(vals(p)) * double(vals(q));
      ++p;
      ++q;
    } else if (ca < cb) {
      ++p;
    } else {
      ++q;
    }
  }
  return s;
}

/// K nearest neighbours of every row (m x K, sorted by (d2, index)).
template <class ExecutionSpace, class T, class MemorySpace>
Kokkos::View<ordinal_t**, Kokkos::LayoutRight, MemorySpace> knn_select(
    const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& V, int K, std::size_t block_bytes,
    const Kokkos::View<double*, MemorySpace>& norms) {
  using Member = typename Kokkos::TeamPolicy<ExecutionSpace>::member_type;
  const ordinal_t m = V.num_rows();
  const ordinal_t n = V.num_cols;
  Kokkos::View<ordinal_t**, Kokkos::LayoutRight, MemorySpace> nbr(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::knn"), m, K);
  if (K == 0 || m == 0) return nbr;
  // host spaces also keep S transposed (B x m) so that selection streams it
  constexpr bool host = is_host_space_v<ExecutionSpace>;
  const std::size_t per_query = sizeof(double) * ((host ? 2 : 1) * std::size_t(m) + std::size_t(n));
  std::size_t B = block_bytes / per_query;
  if (B < 1) B = 1;
  if (B > std::size_t(m)) B = m;
  using Tile = Kokkos::View<double**, Kokkos::LayoutRight, MemorySpace>;
  Tile X, S, St;
  try {
    X = Tile(Kokkos::view_alloc(exec, "kfactor::mnmf::knn_queries"), n, B);
    S = Tile(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::knn_dots"), m, B);
    if (host) St = Tile(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::knn_dots_t"), B, m);
  } catch (const std::runtime_error& e) {
    throw OutOfMemory("knn graph: cannot allocate the " + std::to_string(B) + "-query block buffers (" +
                      std::to_string(B * per_query) + " bytes): " + e.what());
  }
  auto row_map = V.row_map;
  auto cols = V.entries;
  auto vals = V.values;
  const int Bi = static_cast<int>(B);

  // Selection launch shape: host one thread per query; device up to 128
  // threads, each keeping K (distance, index) pairs in scratch.
  int ts = 1;
  if constexpr (!is_host_space_v<ExecutionSpace>) {
    ts = 128;
    while (ts > 32 && std::size_t(ts) * K * (sizeof(double) + sizeof(ordinal_t)) > 32768) ts /= 2;
  }
  using ScratchD = Kokkos::View<double*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  using ScratchI = Kokkos::View<ordinal_t*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  for (ordinal_t b0 = 0; b0 < m; b0 += Bi) {
    const int nb = static_cast<int>(Kokkos::min<std::int64_t>(Bi, std::int64_t(m) - b0));
    // 1. scatter the query rows into X (n x B), zero elsewhere (X is zeroed
    // once; each block clears only what it wrote, at its end)
    Kokkos::parallel_for(
        "kfactor::mnmf::knn_scatter", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nb), KOKKOS_LAMBDA(int b) {
          const ordinal_t i = b0 + b;
          for (offset_t e = row_map(i); e < row_map(i + 1); ++e) X(cols(e), b) = double(vals(e));
        });
    // 2. S(l, b) = v_l . x_b over l's nonzeros in column order. Device:
    // threads over b, the sum in a register (coalesced reads of X rows).
    // Host: nonzeros outer, b inner, so X and S rows stream through the
    // cache. Both add the same terms in the same order: identical S.
    if constexpr (is_host_space_v<ExecutionSpace>) {
      Kokkos::parallel_for(
          "kfactor::mnmf::knn_dots", Kokkos::RangePolicy<ExecutionSpace, Kokkos::Schedule<Kokkos::Dynamic>>(exec, 0, m),
          KOKKOS_LAMBDA(ordinal_t l) {
            for (int b = 0; b < nb; ++b) S(l, b) = 0.0;
            for (offset_t e = row_map(l); e < row_map(l + 1); ++e) {
              const ordinal_t c = cols(e);
              const double v = double(vals(e));
              for (int b = 0; b < nb; ++b) S(l, b) += X(c, b) * v;
            }
          });
    } else {
      Kokkos::parallel_for(
          "kfactor::mnmf::knn_dots", Kokkos::TeamPolicy<ExecutionSpace>(exec, m, Kokkos::AUTO),
          KOKKOS_LAMBDA(const Member& team) {
            const ordinal_t l = team.league_rank();
            const offset_t e0 = row_map(l), e1 = row_map(l + 1);
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, nb), [&](int b) {
              double s = 0.0;
              for (offset_t e = e0; e < e1; ++e) s += X(cols(e), b) * double(vals(e));
              S(l, b) = s;
            });
          });
    }
    if constexpr (host) {
      Kokkos::parallel_for(
          "kfactor::mnmf::knn_transpose",
          Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {std::int64_t(m), std::int64_t(nb)},
                                                                 {64, 64}),
          KOKKOS_LAMBDA(std::int64_t l, std::int64_t b) { St(b, l) = S(l, b); });
    }
    // 3. top-K per query
    const std::size_t bytes = ScratchD::shmem_size(std::size_t(ts) * K) + ScratchI::shmem_size(std::size_t(ts) * K) +
                              ScratchI::shmem_size(std::size_t(ts)) * 2;
    Kokkos::TeamPolicy<ExecutionSpace> policy(exec, nb, ts, 1);
    policy.set_scratch_size(0, Kokkos::PerTeam(bytes));
    Kokkos::parallel_for(
        "kfactor::mnmf::knn_select", policy, KOKKOS_LAMBDA(const Member& team) {
          const int b = team.league_rank();
          const ordinal_t i = b0 + b;
          const int T_ = team.team_size(), t = team.team_rank();
          ScratchD dist(team.team_scratch(0), std::size_t(T_) * K);
          ScratchI idx(team.team_scratch(0), std::size_t(T_) * K);
          ScratchI cnt(team.team_scratch(0), T_);
          ScratchI head(team.team_scratch(0), T_);
          double* myd = &dist(std::size_t(t) * K);
          ordinal_t* myi = &idx(std::size_t(t) * K);
          int c = 0;
          const double ni = norms(i);
          for (ordinal_t l = t; l < m; l += T_) {
            if (l == i) continue;
            double d = (ni + norms(l)) - 2.0 * (host ? St(b, l) : S(l, b));
            d = d > 0.0 ? d : 0.0;
            if (c == K && !knn_less(d, l, myd[K - 1], myi[K - 1])) continue;
            int p = c < K ? c : K - 1;  // slot to fill, then bubble down
            while (p > 0 && knn_less(d, l, myd[p - 1], myi[p - 1])) {
              myd[p] = myd[p - 1];
              myi[p] = myi[p - 1];
              --p;
            }
            myd[p] = d;
            myi[p] = l;
            if (c < K) ++c;
          }
          cnt(t) = c;
          head(t) = 0;
          team.team_barrier();
          const int Keff = K;
          for (int k = 0; k < Keff; ++k) {
            double best = 0.0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, T_),
                [&](int s, double& v) {
                  const double cand =
                      head(s) < cnt(s) ? dist(std::size_t(s) * K + head(s)) : Kokkos::reduction_identity<double>::min();
                  v = cand < v ? cand : v;
                },
                Kokkos::Min<double>(best));
            ordinal_t who = 0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, T_),
                [&](int s, ordinal_t& v) {
                  if (head(s) < cnt(s) && dist(std::size_t(s) * K + head(s)) == best) {
                    const ordinal_t cand = idx(std::size_t(s) * K + head(s));
                    v = cand < v ? cand : v;
                  }
                },
                Kokkos::Min<ordinal_t>(who));
            team.team_barrier();
            Kokkos::single(Kokkos::PerTeam(team), [&]() {
              nbr(i, k) = who;
              head(who % T_) += 1;
            });
            team.team_barrier();
          }
        });
    Kokkos::parallel_for(
        "kfactor::mnmf::knn_unscatter", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nb), KOKKOS_LAMBDA(int b) {
          const ordinal_t i = b0 + b;
          for (offset_t e = row_map(i); e < row_map(i + 1); ++e) X(cols(e), b) = 0.0;
        });
  }
  return nbr;
}

}  // namespace detail

namespace detail {

/// Squared Euclidean norm of every row of V, in double, column order.
template <class ExecutionSpace, class T, class MemorySpace>
Kokkos::View<double*, MemorySpace> row_norms(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& V) {
  const ordinal_t m = V.num_rows();
  auto row_map = V.row_map;
  auto vals = V.values;
  Kokkos::View<double*, MemorySpace> norms(Kokkos::view_alloc(exec, "kfactor::mnmf::knn_norms"), m);
  Kokkos::parallel_for(
      "kfactor::mnmf::knn_norms", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, m), KOKKOS_LAMBDA(ordinal_t i) {
        double s = 0.0;
        for (offset_t e = row_map(i); e < row_map(i + 1); ++e) s += double(vals(e)) * double(vals(e));
        norms(i) = s;
      });
  return norms;
}

/// The symmetrized, weighted graph from directed neighbour lists nbr (m x K,
/// no self-loops): keys {min, max} sorted, OR keeps every distinct key, AND
/// keys present twice, weights computed once per undirected edge.
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> graph_from_neighbors(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& V,
                                               const Kokkos::View<ordinal_t**, Kokkos::LayoutRight, MemorySpace>& nbr,
                                               const GraphOptions& options,
                                               const Kokkos::View<double*, MemorySpace>& norms) {
  const ordinal_t m = V.num_rows();
  const int K = static_cast<int>(nbr.extent(1));
  auto row_map = V.row_map;
  auto cols = V.entries;
  auto vals = V.values;
  // undirected edge keys min * m + max, sorted
  const std::size_t E = std::size_t(m) * K;
  Kokkos::View<std::uint64_t*, MemorySpace> keys(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::knn_keys"), E);
  const auto m64 = static_cast<std::uint64_t>(m);
  Kokkos::parallel_for(
      "kfactor::mnmf::knn_keys", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, E), KOKKOS_LAMBDA(std::size_t p) {
        const ordinal_t i = static_cast<ordinal_t>(p / K), l = nbr(i, p % K);
        const std::uint64_t a = i < l ? i : l, c = i < l ? l : i;
        keys(p) = a * m64 + c;
      });
  Kokkos::sort(exec, keys);
  const bool keep_or = options.symmetrization == Symmetrization::union_or;
  // compact: OR keeps every distinct key, AND keeps keys present twice
  std::size_t U = 0;
  Kokkos::View<std::size_t*, MemorySpace> pos(
      Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::knn_pos"), E);
  Kokkos::parallel_scan(
      "kfactor::mnmf::knn_unique", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, E),
      KOKKOS_LAMBDA(std::size_t p, std::size_t& u, bool final) {
        const bool first = p == 0 || keys(p) != keys(p - 1);
        const bool twice = p + 1 < E && keys(p + 1) == keys(p);
        const bool keep = first && (keep_or || twice);
        if (final) pos(p) = keep ? u : ~std::size_t(0);
        if (keep) ++u;
      },
      U);
  Kokkos::View<ordinal_t*, MemorySpace> ra(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::g_r"),
                                           2 * U);
  Kokkos::View<ordinal_t*, MemorySpace> ca(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::g_c"),
                                           2 * U);
  Kokkos::View<T*, MemorySpace> va(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::g_v"), 2 * U);
  Kokkos::View<double*, MemorySpace> d2(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::g_d2"),
                                        U);
  Kokkos::View<double*, MemorySpace> dots(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::mnmf::g_dot"),
                                          U);
  Kokkos::parallel_for(
      "kfactor::mnmf::knn_edges", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, E), KOKKOS_LAMBDA(std::size_t p) {
        const std::size_t u = pos(p);
        if (u == ~std::size_t(0)) return;
        const ordinal_t a = static_cast<ordinal_t>(keys(p) / m64), c = static_cast<ordinal_t>(keys(p) % m64);
        const double s = detail::sparse_row_dot(row_map, cols, vals, a, c);
        const double d = (norms(a) + norms(c)) - 2.0 * s;
        dots(u) = s;
        d2(u) = d > 0.0 ? d : 0.0;
        ra(2 * u) = a;
        ca(2 * u) = c;
        ra(2 * u + 1) = c;
        ca(2 * u + 1) = a;
      });
  double sigma = options.sigma;
  if (options.weighting == Weighting::heat && !(sigma > 0.0)) {
    double total = 0.0;
    Kokkos::parallel_reduce(
        "kfactor::mnmf::knn_sigma", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, U),
        KOKKOS_LAMBDA(std::size_t u, double& s) { s += d2(u); }, total);
    sigma = U > 0 ? total / double(U) : 1.0;
    if (!(sigma > 0.0)) sigma = 1.0;
  }
  const int wmode = options.weighting == Weighting::binary ? 0 : (options.weighting == Weighting::heat ? 1 : 2);
  Kokkos::parallel_for(
      "kfactor::mnmf::knn_weights", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, U), KOKKOS_LAMBDA(std::size_t u) {
        const double w = wmode == 0 ? 1.0 : (wmode == 1 ? Kokkos::exp(-d2(u) / sigma) : dots(u));
        va(2 * u) = T(w);
        va(2 * u + 1) = T(w);
      });
  return kfactor::detail::csr_from_triplets<ExecutionSpace, T, MemorySpace>(
      exec, Kokkos::View<const ordinal_t*, MemorySpace>(ra), Kokkos::View<const ordinal_t*, MemorySpace>(ca),
      Kokkos::View<const T*, MemorySpace>(va), m, m);
}

}  // namespace detail

/// The symmetric kNN graph over the rows of V (see the file comment).
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> knn_graph(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& V,
                                    const GraphOptions& options) {
  options.validate();
  const ordinal_t m = V.num_rows();
  const int K = static_cast<int>(Kokkos::min<std::int64_t>(options.neighbors, std::int64_t(m) - 1));
  auto norms = detail::row_norms(exec, V);
  if (K <= 0) {
    CsrMatrix<T, MemorySpace> empty;
    empty.num_cols = m;
    empty.row_map = Kokkos::View<offset_t*, MemorySpace>(Kokkos::view_alloc(exec, "kfactor::mnmf::graph_rows"), m + 1);
    return empty;
  }
  auto nbr = detail::knn_select(exec, V, K, options.block_bytes, norms);
  return detail::graph_from_neighbors(exec, V, nbr, options, norms);
}

}  // namespace kfactor::mnmf

#include <kfactor/core/detail/eti.hpp>
#define KFACTOR_MNMF_KNN_ETI(EXTERN, S, T)                                         \
  EXTERN template kfactor::CsrMatrix<T, S::memory_space> kfactor::mnmf::knn_graph( \
      const S&, const kfactor::CsrMatrix<T, S::memory_space>&, const kfactor::mnmf::GraphOptions&);
#define KFACTOR_MNMF_KNN_EXTERN(S, T) KFACTOR_MNMF_KNN_ETI(extern, S, T)
KFACTOR_ETI_FOR_EACH(KFACTOR_MNMF_KNN_EXTERN)
#undef KFACTOR_MNMF_KNN_EXTERN
