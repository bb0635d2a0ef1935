// The timestamp range of read ratings, and held-out ratings re-indexed into
// the training ratings' index space (include/kfactor/io/ratings.hpp).
#include <kfactor/core/error.hpp>
#include <kfactor/io/ratings.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kfactor::io {

std::optional<TimestampRange> timestamp_range(const std::vector<std::int64_t>& timestamps) {
  if (timestamps.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(timestamps.begin(), timestamps.end());
  return TimestampRange{*lo, *hi};
}

const char* to_string(UnknownIds p) { return p == UnknownIds::drop ? "drop" : "reject"; }

UnknownIds parse_unknown_ids(const std::string& s) {
  if (s == "reject") return UnknownIds::reject;
  if (s == "drop") return UnknownIds::drop;
  throw UsageError("unknown-ids policy must be reject or drop, got '" + s + "'");
}

namespace {

void check_ids(const std::vector<std::int64_t>& ids, std::int64_t extent, const std::string& what) {
  if (!ids.empty() && std::int64_t(ids.size()) != extent)
    throw UsageError(what + " has " + std::to_string(ids.size()) + " ids for " + std::to_string(extent) + " lines");
}

/// Training index of `id`, or -1 when the training ratings lack it.
std::int64_t index_of(const std::vector<std::int64_t>& ids, std::int64_t id, std::int64_t extent) {
  if (ids.empty()) return id >= 0 && id < extent ? id : -1;
  const auto it = std::lower_bound(ids.begin(), ids.end(), id);
  return it != ids.end() && *it == id ? std::int64_t(it - ids.begin()) : -1;
}

}  // namespace

template <class T>
ReindexedRatings<T> reindex_ratings(const RatingData<T>& heldout, const RatingData<T>& training, UnknownIds policy,
                                    const std::string& source, std::size_t first_entry) {
  const auto& h = heldout.matrix;
  check_ids(heldout.user_ids, h.num_rows, source + ": the held-out user list");
  check_ids(heldout.item_ids, h.num_cols, source + ": the held-out item list");
  check_ids(training.user_ids, training.matrix.num_rows, "the training user list");
  check_ids(training.item_ids, training.matrix.num_cols, "the training item list");
  ReindexedRatings<T> out;
  out.matrix.num_rows = training.matrix.num_rows;
  out.matrix.num_cols = training.matrix.num_cols;
  for (std::size_t e = 0; e < h.nnz(); ++e) {
    const std::int64_t uid = heldout.user_ids.empty() ? h.rows[e] : heldout.user_ids[std::size_t(h.rows[e])];
    const std::int64_t iid = heldout.item_ids.empty() ? h.cols[e] : heldout.item_ids[std::size_t(h.cols[e])];
    const std::int64_t u = index_of(training.user_ids, uid, training.matrix.num_rows);
    const std::int64_t i = index_of(training.item_ids, iid, training.matrix.num_cols);
    if (u < 0 || i < 0) {
      if (policy == UnknownIds::reject) {
        // The entry's line, from the file once more (ratings files only:
        // elsewhere the ids are indices); the entries are in sorted order.
        std::int64_t line = 0;
        if (!heldout.user_ids.empty()) {
          try {
            line = rating_line(read_file(source), uid, iid);
          } catch (const Error&) {
            // `source` is no readable file: the message names the entry alone
          }
        }
        throw InputError(source, line,
                         "entry " + (line > 0 ? std::string() : std::to_string(first_entry + e + 1) + " ") + "(user " +
                             std::to_string(uid) + ", item " + std::to_string(iid) +
                             "): " + (u < 0 ? "user " + std::to_string(uid) : "item " + std::to_string(iid)) +
                             " is not in the training ratings");
      }
      ++out.dropped;
      continue;
    }
    out.matrix.rows.push_back(ordinal_t(u));
    out.matrix.cols.push_back(ordinal_t(i));
    if (!h.values.empty()) out.matrix.values.push_back(h.values[e]);
  }
  return out;
}

template ReindexedRatings<float> reindex_ratings<float>(const RatingData<float>&, const RatingData<float>&, UnknownIds,
                                                        const std::string&, std::size_t);
template ReindexedRatings<double> reindex_ratings<double>(const RatingData<double>&, const RatingData<double>&,
                                                          UnknownIds, const std::string&, std::size_t);

}  // namespace kfactor::io
