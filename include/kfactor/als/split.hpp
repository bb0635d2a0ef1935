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
///     counts as later), from one timestamp per entry (a ratings file's
///     timestamp column: io::RatingData::timestamps).
/// Both return (train, test) with the input's shape, entries in input
/// order, disjoint and together the input. Both decide per user from that
/// user's entries alone, so a part of the input that holds whole users (one
/// rank's rows) splits as it does within the whole.
/// PerUserSplit names either split as `kfactor als --split` takes it, and
/// split_per_user() applies one.

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

/// Which per-user split, as `kfactor als --split NAME:K` names it.
enum class SplitKind {
  leave_k_out,      ///< leave-k-out:K (leave_k_out, with `seed`)
  leave_last_k_out  ///< leave-last-k-out:K (leave_last_k_out, from timestamps)
};

/// A per-user split: the kind, its k and (leave-k-out) the seed.
struct PerUserSplit {
  SplitKind kind = SplitKind::leave_k_out;
  int k = 1;                ///< in leave_k_range
  std::uint64_t seed = 42;  ///< leave-k-out: the seed of the choice
};

/// The split's name: "leave-k-out:K" or "leave-last-k-out:K".
inline std::string to_string(const PerUserSplit& s) {
  return std::string(s.kind == SplitKind::leave_k_out ? "leave-k-out:" : "leave-last-k-out:") + std::to_string(s.k);
}

/// Parses "leave-k-out:K" or "leave-last-k-out:K" (K an integer in
/// leave_k_range); `seed` goes to leave-k-out. UsageError naming the text
/// and what is wrong otherwise.
inline PerUserSplit parse_per_user_split(const std::string& text, std::uint64_t seed = 42) {
  PerUserSplit s;
  s.seed = seed;
  std::string k;
  for (const auto& [name, kind] : {std::pair<std::string, SplitKind>{"leave-k-out:", SplitKind::leave_k_out},
                                   {"leave-last-k-out:", SplitKind::leave_last_k_out}})
    if (text.rfind(name, 0) == 0) {
      s.kind = kind;
      k = text.substr(name.size());
    }
  const bool digits =
      !k.empty() && k.size() <= 9 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    throw UsageError("split '" + text + "': not of the form leave-k-out:K or leave-last-k-out:K with an integer K in " +
                     std::to_string(leave_k_range.lo) + ".." + std::to_string(leave_k_range.hi));
  s.k = std::stoi(k);
  check_range("split '" + text + "'", "K", s.k, leave_k_range);
  return s;
}

/// (train, test) of `all` under `split`. `timestamps`: one per entry of
/// `all` (leave-last-k-out needs them); null when the input has no
/// timestamp column, which leave-last-k-out refuses with an InputError
/// naming `source` (the input file).
template <class T>
std::pair<CooMatrix<T>, CooMatrix<T>> split_per_user(const CooMatrix<T>& all, const PerUserSplit& split,
                                                     const std::vector<std::int64_t>* timestamps,
                                                     const std::string& source) {
  if (split.kind == SplitKind::leave_k_out) return leave_k_out(all, split.k, split.seed);
  if (!timestamps)
    throw InputError(source, 0,
                     "no timestamp column: the split " + to_string(split) +
                         " needs ratings lines 'user item rating timestamp' (as MovieLens ratings.csv or "
                         "ratings.dat)");
  return leave_last_k_out(all, *timestamps, split.k);
}

}  // namespace kfactor::als
