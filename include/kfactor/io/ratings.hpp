#pragma once
/// \file
/// Facts about read ratings beyond their matrix: the range of their
/// timestamps, and held-out ratings in the training ratings' index space.
///
/// A ratings file is read with its original ids (read_ratings: row r is user
/// user_ids[r], column c item item_ids[c], both ascending). A held-out file
/// read on its own has its own index space; a model trained on the training
/// file predicts only for the users and items that file holds. reindex_ratings
/// maps every held-out entry through its original ids into the training
/// rows and columns, and handles ids the training file lacks by an explicit
/// policy:
///  - UnknownIds::reject: an InputError naming the held-out file, the entry
///    (1-based, in the order of the held-out matrix) and the unknown id: for
///    a test set whose ids must all be known (a typo, the wrong file);
///  - UnknownIds::drop: the entry is left out and counted: for a held-out set
///    drawn independently of the training one, where new users and items are
///    expected and cannot be predicted.
/// An empty id list means "index = id" (a file without ids, e.g. Matrix
/// Market): on the training side an id is known when 0 <= id < rows (or cols).

#include <kfactor/core/matrix.hpp>
#include <kfactor/io/read.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kfactor::io {

/// The earliest and the latest timestamp of read ratings.
struct TimestampRange {
  std::int64_t first = 0;  ///< the earliest
  std::int64_t last = 0;   ///< the latest
};

/// The range of RatingData::timestamps as the reader kept them: one per
/// entry, of merged duplicates the latest, so a duplicate's earlier line
/// does not count. nullopt when there are none (a file without a
/// timestamp column, or a format that has no timestamps).
std::optional<TimestampRange> timestamp_range(const std::vector<std::int64_t>& timestamps);

/// What reindex_ratings does with an id the training ratings lack.
enum class UnknownIds { reject, drop };

const char* to_string(UnknownIds p);
UnknownIds parse_unknown_ids(const std::string& s);  ///< "reject" | "drop"; UsageError otherwise

/// Held-out ratings in the training index space.
template <class T>
struct ReindexedRatings {
  CooMatrix<T> matrix;      ///< training shape; entries in the held-out order, unknown ones left out under drop
  std::size_t dropped = 0;  ///< entries left out (always 0 under reject)
};

/// Re-indexes `heldout` (with its own ids) into the index space of
/// `training` (see the file comment). `source` names the held-out data in
/// errors (its file name). InputError under UnknownIds::reject for the first
/// entry with an unknown user or item id; UsageError when an id list does not
/// match its matrix's shape. `first_entry`: how many entries of the whole
/// held-out matrix precede `heldout`'s when it is one part of it (one rank's
/// rows), so that messages number entries in the whole matrix.
template <class T>
ReindexedRatings<T> reindex_ratings(const RatingData<T>& heldout, const RatingData<T>& training, UnknownIds policy,
                                    const std::string& source, std::size_t first_entry = 0);

extern template ReindexedRatings<float> reindex_ratings<float>(const RatingData<float>&, const RatingData<float>&,
                                                               UnknownIds, const std::string&, std::size_t);
extern template ReindexedRatings<double> reindex_ratings<double>(const RatingData<double>&, const RatingData<double>&,
                                                                 UnknownIds, const std::string&, std::size_t);

}  // namespace kfactor::io
