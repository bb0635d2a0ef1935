// io::reindex_ratings: held-out ratings mapped through their original ids
// into the training index space, under both unknown-id policies, against a
// map built independently from (id, id) pairs; io::timestamp_range against
// a sorted copy.
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/ratings.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {
using namespace kfactor;

/// Ratings over the given (ascending) ids: every (u, i) pair drawn with
/// probability `p`, value = a function of the ids, so that the same pair has
/// the same value in both sets.
io::RatingData<double> ratings_over(const std::vector<std::int64_t>& users, const std::vector<std::int64_t>& items,
                                    double p, std::uint64_t seed) {
  io::RatingData<double> d;
  d.user_ids = users;
  d.item_ids = items;
  d.matrix.num_rows = std::int64_t(users.size());
  d.matrix.num_cols = std::int64_t(items.size());
  const CounterRng rng(seed, RngStream::split);
  std::uint64_t t = 0;
  // Reverse order: entries need not be sorted.
  for (std::size_t r = users.size(); r-- > 0;)
    for (std::size_t c = 0; c < items.size(); ++c)
      if (rng.uniform(t++) < p) {
        d.matrix.rows.push_back(ordinal_t(r));
        d.matrix.cols.push_back(ordinal_t(c));
        d.matrix.values.push_back(double(users[r] * 1000 + items[c]));
      }
  return d;
}

std::vector<std::int64_t> ids_from(std::uint64_t seed, int count, std::int64_t range) {
  const CounterRng rng(seed, RngStream::user);
  std::set<std::int64_t> s;
  for (std::uint64_t t = 0; int(s.size()) < count; ++t) s.insert(std::int64_t(rng.bits(t) % std::uint64_t(range)));
  return {s.begin(), s.end()};
}

TEST(RatingIds, DropKeepsExactlyTheKnownPairsWithTheirValues) {
  const auto train = ratings_over(ids_from(1, 40, 100), ids_from(2, 30, 80), 0.3, 3);
  // Held-out ids overlap the training ones partly.
  const auto held = ratings_over(ids_from(4, 35, 100), ids_from(5, 25, 80), 0.4, 6);
  std::map<std::int64_t, std::int64_t> user_index, item_index;
  for (std::size_t r = 0; r < train.user_ids.size(); ++r) user_index[train.user_ids[r]] = std::int64_t(r);
  for (std::size_t c = 0; c < train.item_ids.size(); ++c) item_index[train.item_ids[c]] = std::int64_t(c);
  std::vector<std::tuple<std::int64_t, std::int64_t, double>> expected;
  std::size_t unknown = 0;
  for (std::size_t e = 0; e < held.matrix.nnz(); ++e) {
    const auto u = held.user_ids[std::size_t(held.matrix.rows[e])], i = held.item_ids[std::size_t(held.matrix.cols[e])];
    if (!user_index.count(u) || !item_index.count(i)) {
      ++unknown;
      continue;
    }
    expected.emplace_back(user_index[u], item_index[i], held.matrix.values[e]);
  }
  ASSERT_GT(unknown, 0u);
  ASSERT_GT(expected.size(), 0u);

  const auto out = io::reindex_ratings(held, train, io::UnknownIds::drop, "held.csv");
  EXPECT_EQ(out.dropped, unknown);
  EXPECT_EQ(out.matrix.num_rows, train.matrix.num_rows);
  EXPECT_EQ(out.matrix.num_cols, train.matrix.num_cols);
  ASSERT_EQ(out.matrix.nnz(), expected.size());
  for (std::size_t e = 0; e < expected.size(); ++e) {
    EXPECT_EQ(out.matrix.rows[e], std::get<0>(expected[e]));
    EXPECT_EQ(out.matrix.cols[e], std::get<1>(expected[e]));
    EXPECT_EQ(out.matrix.values[e], std::get<2>(expected[e]));
    // The value encodes the original ids: they survive the mapping.
    EXPECT_EQ(out.matrix.values[e], double(train.user_ids[std::size_t(out.matrix.rows[e])] * 1000 +
                                           train.item_ids[std::size_t(out.matrix.cols[e])]));
  }
}

TEST(RatingIds, RejectNamesTheFileTheEntryAndTheId) {
  const auto train = ratings_over({3, 5, 9}, {10, 20}, 1.0, 1);
  io::RatingData<double> held;
  held.user_ids = {5, 9};
  held.item_ids = {10, 20, 30};
  held.matrix.num_rows = 2;
  held.matrix.num_cols = 3;
  held.matrix.rows = {0, 1, 1};
  held.matrix.cols = {1, 0, 2};  // entry 3: item 30 is unknown
  held.matrix.values = {1, 2, 3};
  try {
    io::reindex_ratings(held, train, io::UnknownIds::reject, "test.csv");
    ADD_FAILURE() << "an unknown item was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), "test.csv");
    EXPECT_NE(what.find("entry 3"), std::string::npos) << what;
    EXPECT_NE(what.find("item 30"), std::string::npos) << what;
  }
  // Known ids only: reject maps everything, the same as drop.
  held.matrix.rows.pop_back();
  held.matrix.cols.pop_back();
  held.matrix.values.pop_back();
  const auto r = io::reindex_ratings(held, train, io::UnknownIds::reject, "test.csv");
  const auto d = io::reindex_ratings(held, train, io::UnknownIds::drop, "test.csv");
  EXPECT_EQ(r.dropped, 0u);
  EXPECT_EQ(d.dropped, 0u);
  EXPECT_EQ(r.matrix.rows, (std::vector<ordinal_t>{1, 2}));
  EXPECT_EQ(r.matrix.cols, (std::vector<ordinal_t>{1, 0}));
  EXPECT_EQ(r.matrix.rows, d.matrix.rows);
  EXPECT_EQ(r.matrix.cols, d.matrix.cols);
  // An unknown user under reject.
  held.user_ids = {4, 9};
  try {
    io::reindex_ratings(held, train, io::UnknownIds::reject, "test.csv");
    ADD_FAILURE() << "an unknown user was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("user 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("entry 1"), std::string::npos) << e.what();
  }
}

TEST(RatingIds, FilesWithoutIdsUseTheIndexAndTheTrainingShape) {
  io::RatingData<float> train, held;
  train.matrix.num_rows = 4;
  train.matrix.num_cols = 3;
  held.matrix.num_rows = 6;
  held.matrix.num_cols = 3;
  held.matrix.rows = {0, 3, 5, 2};
  held.matrix.cols = {2, 1, 0, 0};
  held.matrix.values = {1, 2, 3, 4};
  const auto out = io::reindex_ratings(held, train, io::UnknownIds::drop, "held.mtx");
  EXPECT_EQ(out.dropped, 1u);  // row 5 is outside the 4 training rows
  EXPECT_EQ(out.matrix.rows, (std::vector<ordinal_t>{0, 3, 2}));
  EXPECT_EQ(out.matrix.values, (std::vector<float>{1, 2, 4}));
  EXPECT_THROW(io::reindex_ratings(held, train, io::UnknownIds::reject, "held.mtx"), InputError);
  // An id list that does not match its matrix is a usage error.
  held.user_ids = {1, 2};
  EXPECT_THROW(io::reindex_ratings(held, train, io::UnknownIds::drop, "held.mtx"), UsageError);
  EXPECT_EQ(io::parse_unknown_ids("drop"), io::UnknownIds::drop);
  EXPECT_THROW(io::parse_unknown_ids("keep"), UsageError);
}

TEST(RatingTimestamps, RangeIsTheEarliestAndTheLatest) {
  EXPECT_FALSE(io::timestamp_range({}).has_value());
  const CounterRng rng(77, RngStream::split);
  for (std::uint64_t trial = 0; trial < 20; ++trial) {
    // 1 to 200 timestamps anywhere in the 64-bit range, in no order.
    const std::size_t n = 1 + std::size_t(rng.uniform(trial * 1000) * 200);
    std::vector<std::int64_t> t(n);
    for (std::size_t e = 0; e < n; ++e) t[e] = std::int64_t(rng.bits(trial * 1000 + 1 + e));
    if (trial == 0) t[n / 2] = std::numeric_limits<std::int64_t>::min();
    auto sorted = t;
    std::sort(sorted.begin(), sorted.end());
    const auto r = io::timestamp_range(t);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->first, sorted.front());
    EXPECT_EQ(r->last, sorted.back());
  }
}

}  // namespace
