#pragma once
/// \file
/// Ranking metrics of a factor model on held-out interactions, with the
/// definitions of the `implicit` library's ranking_metrics_at_k
/// (implicit/evaluation.pyx), so numbers compare with it directly.
///
/// For every user u with at least one positive held-out item (value > 0 in
/// `test`; T_u the set, P = |T_u|), rank the items by x_u . y_i with the
/// user's training items excluded, take the top K (als::recommend), and let
/// rel_i = [i-th ranked item in T_u] for i = 1..K. With n items in all and
/// N_neg = n - P:
///   - precision\@K = sum_u hits_u / sum_u min(K, P_u)  (micro-averaged, and
///     divided by min(K, P) rather than K: a user with fewer than K test
///     items can still reach 1);
///   - recall\@K = mean_u hits_u / P_u (not in `implicit`; the usual one);
///   - MAP\@K = mean_u (sum_i rel_i hits_at_i / i) / min(K, P_u);
///   - nDCG\@K = mean_u (sum_i rel_i / log2(i + 1)) / (sum_{i <= min(K, P_u)} 1 / log2(i + 1));
///   - AUC = mean_u AUC_u, the area under the ROC curve of the top-K list
///     with every unranked item tied below it: walking the K ranked items,
///     each miss adds the hits ranked before it; then
///     (hits + P) / 2 * (N_neg - misses) for the unranked negatives; divided
///     by P N_neg (a user with N_neg = 0 counts 1).
/// A user with fewer than K unexcluded items has fewer ranked items; the
/// sums run over those. Users without positive test items are left out.

#include <kfactor/als/detail/top_n.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/range.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::als {

/// The cut-off K of the ranking metrics (als::Options::eval_k, --eval-k).
inline constexpr Range<int> eval_k_range{.lo = 1, .hi = 100000};

/// The metrics of the file comment, over `users` evaluated users.
struct RankingMetrics {
  int k = 0;               ///< the cut-off K
  std::int64_t users = 0;  ///< users with at least one positive test item
  double precision = 0.0;  ///< precision\@K
  double recall = 0.0;     ///< recall\@K
  double map = 0.0;        ///< MAP\@K
  double ndcg = 0.0;       ///< nDCG\@K
  double auc = 0.0;        ///< AUC of the top-K lists
};

/// The users with a positive test entry (ascending).
template <class T, class MemorySpace>
std::vector<ordinal_t> users_with_positives(const CsrMatrix<T, MemorySpace>& test) {
  const auto rm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, test.row_map);
  const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, test.values);
  std::vector<ordinal_t> out;
  for (ordinal_t u = 0; u < test.num_rows(); ++u)
    for (auto e = rm(u); e < rm(u + 1); ++e)
      if (v(e) > T(0)) {
        out.push_back(u);
        break;
      }
  return out;
}

namespace detail {

/// The sums over users behind RankingMetrics. They add up over any split of
/// the users (the ranks of a distributed run): parts are summed, then
/// finished once (finish_ranking).
struct RankingSums {
  enum { hits, cut, recall, ap, ndcg, auc, users, count };
  double v[count] = {};
};

/// The cut-off the metrics use for `k` over lists of `width` items out of
/// `num_items`: k, or the width when k exceeds it and the lists hold every
/// item (k above the item count). UsageError for k outside eval_k_range or
/// above a width that is not the item count.
inline int ranking_cutoff(int k, std::size_t width, std::int64_t num_items) {
  check_range("ranking metrics", "k", k, eval_k_range);
  if (std::size_t(k) <= width) return k;
  if (std::int64_t(width) != num_items)
    throw UsageError("ranking metrics: k = " + std::to_string(k) + " exceeds the " + std::to_string(width) +
                     " ranked items per user");
  return int(width);
}

/// The metrics of the file comment from their sums.
inline RankingMetrics finish_ranking(const RankingSums& s, int k) {
  RankingMetrics out;
  out.k = k;
  const double total = s.v[RankingSums::users];
  out.users = std::int64_t(total);
  if (total > 0) {
    out.precision = s.v[RankingSums::hits] / s.v[RankingSums::cut];
    out.recall = s.v[RankingSums::recall] / total;
    out.map = s.v[RankingSums::ap] / total;
    out.ndcg = s.v[RankingSums::ndcg] / total;
    out.auc = s.v[RankingSums::auc] / total;
  }
  return out;
}

/// The sums of the metrics at cut-off `k` (ranking_cutoff) of ranked lists:
/// row b of `top` ranks items (indices in `test`'s columns) for user
/// users[b] (a row of `test`); `num_items` is n. Rows whose user has no
/// positive test item add nothing.
template <class ExecutionSpace, class T, class MemorySpace>
RankingSums ranking_sums(const ExecutionSpace& exec, const TopN<T, MemorySpace>& top,
                         const std::vector<ordinal_t>& users, const CsrMatrix<T, MemorySpace>& test, int k,
                         std::int64_t num_items) {
  if (users.size() != top.items.extent(0))
    throw UsageError("ranking metrics: " + std::to_string(users.size()) + " users for " +
                     std::to_string(top.items.extent(0)) + " ranked lists");
  RankingSums out;
  if (users.empty()) return out;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  Kokkos::View<ordinal_t*, MemorySpace> du(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::rm::users"),
                                           users.size());
  Kokkos::deep_copy(exec, du, Kokkos::View<const ordinal_t*, Kokkos::HostSpace, Unmanaged>(users.data(), users.size()));
  const auto items = top.items;
  const auto count = top.count;
  const auto rm = test.row_map;
  const auto ent = test.entries;
  const auto val = test.values;
  const ordinal_t test_rows = test.num_rows();
  const double n = double(num_items);
  auto& v = out.v;
  using S = RankingSums;
  Kokkos::parallel_reduce(
      "kfactor::ranking_metrics", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, users.size()),
      KOKKOS_LAMBDA(std::size_t b, double& h, double& pd, double& rc, double& a, double& nd, double& au, double& tt) {
        const ordinal_t u = du(b);
        if (u < 0 || u >= test_rows) return;
        const auto lo = rm(u), hi = rm(u + 1);
        int pos = 0;
        for (auto e = lo; e < hi; ++e) pos += val(e) > T(0) ? 1 : 0;
        if (pos == 0) return;
        const int kk = count(b) < k ? count(b) : k;
        const int cut = pos < k ? pos : k;
        double idcg = 0.0;
        for (int i = 0; i < cut; ++i) idcg += 1.0 / Kokkos::log2(double(i + 2));
        double hit = 0, miss = 0, ap_u = 0, dcg = 0, auc_u = 0;
        for (int i = 0; i < kk; ++i) {
          const ordinal_t it = items(b, i);
          // Binary search of the sorted test row.
          auto l = lo, r = hi;
          while (l < r) {
            const auto mid = l + (r - l) / 2;
            if (ent(mid) < it)
              l = mid + 1;
            else
              r = mid;
          }
          if (l < hi && ent(l) == it && val(l) > T(0)) {
            hit += 1;
            ap_u += hit / double(i + 1);
            dcg += 1.0 / Kokkos::log2(double(i + 2));
          } else {
            miss += 1;
            auc_u += hit;
          }
        }
        const double neg = n - double(pos);
        auc_u += (hit + double(pos)) / 2.0 * (neg - miss);
        h += hit;
        pd += double(cut);
        rc += hit / double(pos);
        a += ap_u / double(cut);
        nd += dcg / idcg;
        au += neg > 0 ? auc_u / (double(pos) * neg) : 1.0;
        tt += 1.0;
      },
      v[S::hits], v[S::cut], v[S::recall], v[S::ap], v[S::ndcg], v[S::auc], v[S::users]);
  return out;
}

}  // namespace detail

/// The metrics at `k` of ranked lists: row b of `top` ranks items for user
/// users[b] (a row of `test`); `num_items` is n. Rows whose user has no
/// positive test item are skipped. UsageError when k exceeds top's width
/// (unless the width is num_items: then k is clamped to it) or is below 1.
template <class ExecutionSpace, class T, class MemorySpace>
RankingMetrics ranking_metrics(const ExecutionSpace& exec, const TopN<T, MemorySpace>& top,
                               const std::vector<ordinal_t>& users, const CsrMatrix<T, MemorySpace>& test, int k,
                               ordinal_t num_items) {
  k = detail::ranking_cutoff(k, top.width(), num_items);
  return detail::finish_ranking(detail::ranking_sums(exec, top, users, test, k, num_items), k);
}

/// The metrics at `k` of the model X Y^T on `test`, ranking for every user
/// with a positive test item the items outside its row of `train` (the
/// file comment). k larger than the item count is clamped to it.
/// `max_batch_bytes` bounds the scores held at once (0: per space).
template <class ExecutionSpace, class T, class MemorySpace>
RankingMetrics ranking_metrics(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& X,
                               const DenseMatrix<T, MemorySpace>& Y, const CsrMatrix<T, MemorySpace>& train,
                               const CsrMatrix<T, MemorySpace>& test, int k, std::size_t max_batch_bytes = 0) {
  check_range("ranking metrics", "k", k, eval_k_range);
  if (test.num_rows() > ordinal_t(X.extent(0)) || test.num_cols > ordinal_t(Y.extent(0)))
    throw UsageError("ranking metrics: the test set is " + std::to_string(test.num_rows()) + " x " +
                     std::to_string(test.num_cols) + ", larger than the factors' " + std::to_string(X.extent(0)) +
                     " x " + std::to_string(Y.extent(0)));
  const auto users = users_with_positives(test);
  const detail::Exclusions<T, MemorySpace> ex{&train, false};
  const auto top = detail::top_n(exec, X, Y, users, k, ex, max_batch_bytes);
  return ranking_metrics(exec, top, users, test, int(std::min<std::size_t>(std::size_t(k), top.width())),
                         ordinal_t(Y.extent(0)));
}

}  // namespace kfactor::als
