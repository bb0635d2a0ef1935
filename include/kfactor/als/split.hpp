#pragma once
/// \file
/// Held-out splits per user for ranking evaluation, beside the random
/// fraction split of core/metrics.hpp (split_train_test, which
/// als::make_problem applies for a test fraction):
///   - leave_k_out: k interactions of every user with at least k + 1
///     (users with fewer keep them all in training), chosen by the
///     counter-based generator (core/random.hpp) keyed by the seed, the user
///     and the item, so the choice does not depend on file order, thread
///     count or backend;
///   - leave_last_k_out: the k latest interactions by timestamp of every
///     user with at least k + 1 (equal timestamps: the higher item index
///     counts as later). The ratings reader keeps no timestamp column
///     (io::RatingData holds ids and values), so this split takes the
///     timestamps from the caller, one per entry.
/// Both return (train, test) with the input's shape, entries in input
/// order, disjoint and together the input.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/range.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::als {

/// The k of the per-user splits.
inline constexpr Range<int> leave_k_range{.lo = 1, .hi = 1000000};

namespace detail {

/// (train, test) of `all` with test[e] for the entries whose flag is set.
template <class T>
std::pair<CooMatrix<T>, CooMatrix<T>> split_by(const CooMatrix<T>& all, const std::vector<char>& to_test) {
  CooMatrix<T> train, test;
  for (auto* part : {&train, &test}) {
    part->num_rows = all.num_rows;
    part->num_cols = all.num_cols;
  }
  for (std::size_t e = 0; e < all.nnz(); ++e) {
    auto& part = to_test[e] ? test : train;
    part.rows.push_back(all.rows[e]);
    part.cols.push_back(all.cols[e]);
    if (!all.values.empty()) part.values.push_back(all.values[e]);
  }
  return {std::move(train), std::move(test)};
}

/// Marks, per user with more than k entries, the k entries that come first
/// under `before(a, b)` (entry indices of that user).
template <class T, class Before>
std::vector<char> first_k_per_user(const CooMatrix<T>& all, int k, Before&& before) {
  std::vector<std::size_t> order(all.nnz());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return all.rows[a] < all.rows[b] || (all.rows[a] == all.rows[b] && before(a, b));
  });
  std::vector<char> out(all.nnz(), 0);
  for (std::size_t lo = 0; lo < order.size();) {
    std::size_t hi = lo;
    while (hi < order.size() && all.rows[order[hi]] == all.rows[order[lo]]) ++hi;
    if (hi - lo > std::size_t(k))
      for (std::size_t p = lo; p < lo + std::size_t(k); ++p) out[order[p]] = 1;
    lo = hi;
  }
  return out;
}

}  // namespace detail

/// The leave-k-out split of the file comment (k in leave_k_range:
/// UsageError otherwise).
template <class T>
std::pair<CooMatrix<T>, CooMatrix<T>> leave_k_out(const CooMatrix<T>& all, int k, std::uint64_t seed) {
  check_range("leave-k-out", "k", k, leave_k_range);
  const CounterRng rng(seed, RngStream::split);
  std::vector<std::uint64_t> draw(all.nnz());
  for (std::size_t e = 0; e < all.nnz(); ++e)
    draw[e] = rng.bits(std::uint64_t(all.rows[e]) * std::uint64_t(all.num_cols) + std::uint64_t(all.cols[e]));
  return detail::split_by(all, detail::first_k_per_user(all, k, [&](std::size_t a, std::size_t b) {
                            return draw[a] < draw[b] || (draw[a] == draw[b] && all.cols[a] < all.cols[b]);
                          }));
}

/// The time-based split of the file comment: `timestamps[e]` is entry e's
/// time (UsageError when the sizes differ or k is outside leave_k_range).
template <class T>
std::pair<CooMatrix<T>, CooMatrix<T>> leave_last_k_out(const CooMatrix<T>& all,
                                                       const std::vector<std::int64_t>& timestamps, int k) {
  check_range("leave-last-k-out", "k", k, leave_k_range);
  if (timestamps.size() != all.nnz())
    throw UsageError("leave-last-k-out: " + std::to_string(timestamps.size()) + " timestamps for " +
                     std::to_string(all.nnz()) + " interactions");
  return detail::split_by(all, detail::first_k_per_user(all, k, [&](std::size_t a, std::size_t b) {
                            return timestamps[a] > timestamps[b] ||
                                   (timestamps[a] == timestamps[b] && all.cols[a] > all.cols[b]);
                          }));
}

}  // namespace kfactor::als
