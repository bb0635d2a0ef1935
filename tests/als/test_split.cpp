// Per-user held-out splits: leave-k-out holds out exactly k entries of
// every user with more than k, none of the others, is disjoint from and
// together with the training part the input, and depends only on the seed
// (not on file order); leave-last-k-out holds out the latest k; the CLI's
// split names.
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

// The CLI's names of the splits: parsed with K and the seed, refused with
// UsageError when malformed; split_per_user applies the named split, and
// refuses the time split without timestamps (InputError naming the input).
TEST(PerUserSplit, ParsesNamesAndAppliesThem) {
  const auto a = als::parse_per_user_split("leave-k-out:3", 17);
  EXPECT_EQ(a.kind, als::SplitKind::leave_k_out);
  EXPECT_EQ(a.k, 3);
  EXPECT_EQ(a.seed, 17u);
  EXPECT_EQ(als::to_string(a), "leave-k-out:3");
  const auto b = als::parse_per_user_split("leave-last-k-out:2");
  EXPECT_EQ(b.kind, als::SplitKind::leave_last_k_out);
  EXPECT_EQ(b.k, 2);
  EXPECT_EQ(als::to_string(b), "leave-last-k-out:2");
  for (const char* bad :
       {"", "leave-k-out", "leave-k-out:", "leave-k-out:0", "leave-k-out:-1", "leave-k-out:1.5", "leave-k-out:2x",
        "leave-last-k-out:1000001", "leave-last-k-out:99999999999", "last:2", "leave-k-out: 2"})
    EXPECT_THROW(als::parse_per_user_split(bad), UsageError) << bad;

  const auto all = random_interactions(40, 20, 6);
  std::vector<std::int64_t> time(all.nnz());
  for (std::size_t e = 0; e < all.nnz(); ++e) time[e] = (all.cols[e] * 5 + all.rows[e] * 3) % 13;
  EXPECT_EQ(entries(als::split_per_user(all, a, nullptr, "r.csv").second),
            entries(als::leave_k_out(all, 3, 17).second));
  EXPECT_EQ(entries(als::split_per_user(all, b, &time, "r.csv").second),
            entries(als::leave_last_k_out(all, time, 2).second));
  try {
    (void)als::split_per_user(all, b, nullptr, "r.csv");
    ADD_FAILURE() << "no timestamps: not refused";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "r.csv");
    EXPECT_NE(std::string(e.what()).find("timestamp"), std::string::npos) << e.what();
  }
}

}  // namespace
