// Per-user held-out splits: leave-k-out holds out exactly k entries of
// every user with more than k, none of the others, is disjoint from and
// together with the training part the input, and depends only on the seed
// (not on file order); leave-last-k-out holds out the latest k.
#include <kfactor/als/split.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace {
using namespace kfactor;

using Key = std::tuple<int, int, float>;

CooMatrix<float> random_interactions(int m, int n, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<float> c;
  c.num_rows = m;
  c.num_cols = n;
  for (int u = 0; u < m; ++u)
    for (int i = 0; i < n; ++i) {
      // Users with 0..n interactions: density grows with the user id.
      if (rng.uniform(std::uint64_t(u) * n + i) >= double(u) / m) continue;
      c.rows.push_back(u);
      c.cols.push_back(i);
      c.values.push_back(float(1 + (u + i) % 5));
    }
  return c;
}

std::multiset<Key> entries(const CooMatrix<float>& c) {
  std::multiset<Key> s;
  for (std::size_t e = 0; e < c.nnz(); ++e) s.insert({c.rows[e], c.cols[e], c.values[e]});
  return s;
}

std::map<int, int> per_user(const CooMatrix<float>& c) {
  std::map<int, int> n;
  for (int r : c.rows) ++n[r];
  return n;
}

TEST(LeaveKOut, ExactlyKPerEligibleUserDisjointAndDeterministic) {
  const auto all = random_interactions(60, 30, 4);
  const auto total = per_user(all);
  for (int k : {1, 3}) {
    const auto [train, test] = als::leave_k_out(all, k, 17);
    EXPECT_EQ(train.num_rows, all.num_rows);
    EXPECT_EQ(test.num_cols, all.num_cols);
    const auto held = per_user(test);
    int eligible = 0;
    for (const auto& [u, n] : total) {
      const int h = held.count(u) ? held.at(u) : 0;
      EXPECT_EQ(h, n > k ? k : 0) << "user " << u << " with " << n;
      eligible += n > k;
    }
    EXPECT_GT(eligible, 40);
    // Disjoint, and together the input.
    auto a = entries(train), b = entries(test);
    for (const auto& e : b) EXPECT_EQ(a.count(e), 0u);
    a.insert(b.begin(), b.end());
    EXPECT_EQ(a, entries(all));
    // Same seed: same split, also from the entries in reverse order.
    CooMatrix<float> rev = all;
    std::reverse(rev.rows.begin(), rev.rows.end());
    std::reverse(rev.cols.begin(), rev.cols.end());
    std::reverse(rev.values.begin(), rev.values.end());
    EXPECT_EQ(entries(als::leave_k_out(rev, k, 17).second), entries(test));
    EXPECT_EQ(als::leave_k_out(all, k, 17).second.cols, test.cols);
    // Another seed: another choice.
    EXPECT_NE(entries(als::leave_k_out(all, k, 18).second), entries(test));
  }
  EXPECT_THROW(als::leave_k_out(all, 0, 1), UsageError);
}

TEST(LeaveLastKOut, HoldsOutTheLatest) {
  const auto all = random_interactions(40, 20, 6);
  std::vector<std::int64_t> time(all.nnz());
  for (std::size_t e = 0; e < all.nnz(); ++e) time[e] = (all.cols[e] * 7 + all.rows[e]) % 11;  // ties included
  const int k = 2;
  const auto [train, test] = als::leave_last_k_out(all, time, k);
  // Every held-out entry is at least as late as every training entry of its
  // user (ties: the higher item is later).
  std::map<int, std::vector<std::pair<std::int64_t, int>>> tr, te;
  for (std::size_t e = 0; e < all.nnz(); ++e) {
    bool held = false;
    for (std::size_t t = 0; t < test.nnz(); ++t) held |= test.rows[t] == all.rows[e] && test.cols[t] == all.cols[e];
    (held ? te : tr)[all.rows[e]].push_back({time[e], all.cols[e]});
  }
  for (const auto& [u, h] : te) {
    EXPECT_EQ(int(h.size()), k);
    for (const auto& a : h)
      for (const auto& b : tr[u]) EXPECT_GT(a, b) << "user " << u;
  }
  for (const auto& [u, n] : per_user(all)) EXPECT_EQ(te.count(u) ? int(te[u].size()) : 0, n > k ? k : 0);
  EXPECT_THROW(als::leave_last_k_out(all, std::vector<std::int64_t>(3), k), UsageError);
}

}  // namespace
