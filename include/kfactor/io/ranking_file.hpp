#pragma once
/// \file
/// Files of the serving commands (`kfactor recommend`, `kfactor similar`):
/// the factor pair PREFIX_X.csv / PREFIX_Y.csv read back as one model, a
/// list of ids to query, and the ranked lists written as CSV.
///
/// Id lists: one id per line, the first field of the line (fields split by
/// spaces, tabs or commas, so a ratings file serves as well); blank lines
/// and lines starting with `#` or `%` are skipped; a first line whose first
/// field is not a number is a header and skipped too. Any other line whose
/// first field is not a 64-bit integer (the first line's too when it is a
/// number, such as 10.5 or 1e30) is an InputError naming FILE:LINE, and so
/// is a list without ids (an empty file, or a header alone): queries from
/// such a file would answer nothing.
///
/// Ranked lists: `QUERY,rank,ITEM,score` (the header names the columns,
/// e.g. `user,rank,item,score`), one line per ranked entry, rank from 1,
/// after a `# kfactor-set` stamp line, written atomically (write.hpp).

#include <kfactor/core/error.hpp>
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::io {

/// X and Y of one model with their original ids.
struct FactorPair {
  FactorFile X, Y;
};

/// Reads PREFIX_X.csv and PREFIX_Y.csv. Files written by `kfactor als`
/// carry a set stamp and must come from one run (verify_output_set);
/// unstamped files are taken as they are. InputError for unreadable or
/// malformed files and for two ranks.
inline FactorPair read_factor_pair(const std::string& prefix) {
  const std::string xpath = prefix + "_X.csv", ypath = prefix + "_Y.csv";
  FactorPair p{read_factor_file(xpath), read_factor_file(ypath)};
  if (!read_output_stamp(xpath).set.empty() || !read_output_stamp(ypath).set.empty()) verify_output_set({xpath, ypath});
  if (p.X.rank != p.Y.rank)
    throw InputError(ypath, 1,
                     "rank " + std::to_string(p.Y.rank) + " but " + xpath + " has rank " + std::to_string(p.X.rank));
  return p;
}

/// One id of an id list and the 1-based line it came from.
struct IdLine {
  std::int64_t id = 0;
  std::int64_t line = 0;
};

namespace detail {
/// Whether `field` is a number as a whole (any double, in range or not):
/// such a first field is an id, not a header.
inline bool is_number(std::string_view field) {
  double v = 0;
  const auto r = std::from_chars(field.data(), field.data() + field.size(), v);
  return r.ptr == field.data() + field.size() && (r.ec == std::errc() || r.ec == std::errc::result_out_of_range);
}
}  // namespace detail

/// Parses an id list (file comment); `name` is what messages call it.
inline std::vector<IdLine> parse_id_list(std::string_view text, const std::string& name) {
  std::vector<IdLine> out;
  std::int64_t line = 0;
  bool first = true, header = false;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(at, end - at);
    at = end + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    const std::size_t b = l.find_first_not_of(" \t");
    if (b == std::string_view::npos || l[b] == '#' || l[b] == '%') continue;
    const std::size_t e = l.find_first_of(" \t,", b);
    const std::string_view field = l.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
    std::int64_t id = 0;
    const auto r = std::from_chars(field.data(), field.data() + field.size(), id);
    const bool ok = r.ec == std::errc() && r.ptr == field.data() + field.size();
    if (!ok && first && !detail::is_number(field)) {
      first = false;
      header = true;
      continue;
    }
    first = false;
    if (!ok) throw InputError(name, line, "'" + std::string(field) + "' is not a 64-bit integer id");
    out.push_back({id, line});
  }
  if (out.empty()) throw InputError(name, line, header ? "no ids after the header" : "no ids (empty file)");
  return out;
}

/// read_file, then parse_id_list.
inline std::vector<IdLine> read_id_list(const std::string& path) { return parse_id_list(read_file(path), path); }

/// Writes ranked lists (file comment): for query q, the ids
/// ranked_ids[q][r] with scores[q][r]; `columns` names the four columns.
inline void write_ranked_lists(const std::string& path, const std::string& columns,
                               const std::vector<std::int64_t>& query_ids,
                               const std::vector<std::vector<std::int64_t>>& ranked_ids,
                               const std::vector<std::vector<double>>& scores, const OutputOptions& out = {}) {
  detail::TextWriter w(path, out);
  w.put_csv_stamp();
  w.put(columns);
  w.put('\n');
  for (std::size_t q = 0; q < query_ids.size(); ++q)
    for (std::size_t r = 0; r < ranked_ids[q].size(); ++r) {
      w.put_int(query_ids[q]);
      w.put(',');
      w.put_int(std::int64_t(r + 1));
      w.put(',');
      w.put_int(ranked_ids[q][r]);
      w.put(',');
      w.put_real(scores[q][r]);
      w.put('\n');
    }
  w.close();
}

}  // namespace kfactor::io
