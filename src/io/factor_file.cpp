// The factor-file reader of include/kfactor/io/factor_file.hpp. Host code
// only (no Kokkos calls), so the fuzz target can compile it with read.cpp.
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/read.hpp>

#include "text.hpp"

#include <algorithm>
#include <cstring>

namespace kfactor::io {

using detail::Context;
using detail::Fields;
using detail::Lines;

std::optional<std::size_t> FactorFile::find(std::int64_t id) const {
  const auto it =
      std::lower_bound(by_id.begin(), by_id.end(), id, [&](std::size_t r, std::int64_t v) { return ids[r] < v; });
  if (it == by_id.end() || ids[*it] != id) return std::nullopt;
  return *it;
}

namespace {

/// Line ends in `text` + 1: at least the number of lines.
std::size_t count_lines(std::string_view text) {
  std::size_t n = 1;
  for (const char c : text) n += (c == '\n' || c == '\r');
  return n;
}

/// Orders rows by id (ties by row) and refuses a repeated id, naming both
/// lines.
void index_ids(const Context& ctx, FactorFile& f, const std::vector<std::int64_t>& lines) {
  f.by_id.resize(f.ids.size());
  for (std::size_t r = 0; r < f.by_id.size(); ++r) f.by_id[r] = r;
  std::sort(f.by_id.begin(), f.by_id.end(),
            [&](std::size_t a, std::size_t b) { return f.ids[a] != f.ids[b] ? f.ids[a] < f.ids[b] : a < b; });
  for (std::size_t k = 1; k < f.by_id.size(); ++k) {
    const std::size_t a = f.by_id[k - 1], b = f.by_id[k];
    if (f.ids[a] == f.ids[b])
      ctx.fail(lines[b], "id " + std::to_string(f.ids[b]) + " repeated (first at line " + std::to_string(lines[a]) +
                             "); a factor file holds one row per id");
  }
}

FactorFile parse_factor_mm(std::string_view text, const std::string& name, std::uint64_t memory_limit) {
  const Context ctx{name};
  ReadOptions opt;
  opt.keep_zeros = true;  // a factor is dense: zeros are values
  opt.memory_limit = memory_limit;
  ReadInfo info;
  const auto A = parse_matrix_market<double>(text, name, opt, &info);
  if (info.detail.rfind("array", 0) != 0 || info.detail.find("general") == std::string::npos)
    ctx.fail(
        1, "a Matrix Market factor must be 'matrix array real general' (a dense factor), found '" + info.detail + "'");
  // The size line: the first line after the banner that is not a comment.
  Lines lines(text);
  std::string_view line;
  std::int64_t size_line = 1;
  (void)lines.next(line);
  while (lines.next(line))
    if (!detail::skip_line(line, "%")) {
      size_line = lines.number();
      break;
    }
  if (A.num_rows == 0 || A.num_cols == 0)
    ctx.fail(size_line,
             "the factor is empty (" + std::to_string(A.num_rows) + " x " + std::to_string(A.num_cols) + ")");
  FactorFile f;
  f.rank = A.num_cols;
  f.ids.resize(static_cast<std::size_t>(A.num_rows));
  for (std::size_t r = 0; r < f.ids.size(); ++r) f.ids[r] = static_cast<std::int64_t>(r);
  f.values.assign(f.ids.size() * static_cast<std::size_t>(f.rank), 0.0);
  for (std::size_t e = 0; e < A.nnz(); ++e)
    f.values[static_cast<std::size_t>(A.rows[e]) * static_cast<std::size_t>(f.rank) +
             static_cast<std::size_t>(A.cols[e])] = A.values[e];
  f.by_id.resize(f.ids.size());
  for (std::size_t r = 0; r < f.by_id.size(); ++r) f.by_id[r] = r;
  return f;
}

FactorFile parse_factor_csv(std::string_view text, const std::string& name, std::uint64_t memory_limit) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  // The header is the first line, as the writer puts it, after the stamp
  // line of an output set (io/write.hpp) when it has one.
  while (lines.next(line))
    if (!detail::trim(line).empty() && !line.starts_with("# kfactor-set ")) break;
  if (detail::trim(line).empty() || lines.number() == 0)
    ctx.fail(lines.number(), "empty factor file; expected the header 'id,f0,f1,...'");
  const std::int64_t header_line = lines.number();
  // Count the header's fields without the 8-field cap of Fields.
  std::int64_t columns = 1;
  for (const char c : line) columns += c == ',';
  const Fields h = detail::split_sep(line, ",");
  if (!detail::iequals(h[0], "id"))
    ctx.fail(header_line, "expected the header 'id,f0,f1,...' of a factor file, found " + detail::show(line));
  if (columns < 2) ctx.fail(header_line, "the header names no factor column ('id,f0,f1,...')");
  FactorFile f;
  f.rank = columns - 1;
  // Rows are bounded by the lines left and by the text (a row needs at
  // least 2 bytes per field), so reserving that is never more than the file
  // justifies; it must still fit the memory limit next to the text.
  const auto K = static_cast<std::size_t>(f.rank);
  const std::size_t max_rows =
      std::min(count_lines(text.substr(text.size() - lines.remaining())), lines.remaining() / (2 * (K + 1)) + 1);
  const long double need = static_cast<long double>(text.size()) +
                           static_cast<long double>(max_rows) * (static_cast<long double>(K) * 8 + 24);
  const std::uint64_t limit = detail::memory_limit_or_physical(memory_limit);
  if (need > static_cast<long double>(limit))
    ctx.fail(header_line, "a factor of up to " + std::to_string(max_rows) + " rows x " + std::to_string(K) +
                              " values needs about " + detail::gib(double(need)) + ", more than the memory limit of " +
                              detail::gib(double(limit)));
  f.ids.reserve(max_rows);
  f.values.reserve(max_rows * K);
  std::vector<std::int64_t> where;
  where.reserve(max_rows);
  while (lines.next(line)) {
    if (detail::trim(line).empty()) continue;
    const std::int64_t ln = lines.number();
    std::size_t field = 0, b = 0;
    while (true) {
      const std::size_t p = line.find(',', b);
      const std::string_view t = detail::trim(line.substr(b, p == std::string_view::npos ? p : p - b));
      if (field > K)
        ctx.fail(ln, "more than the " + std::to_string(K + 1) + " fields of the header (line " +
                         std::to_string(header_line) + ")");
      if (t.empty()) ctx.fail(ln, "empty field " + std::to_string(field + 1));
      if (field == 0)
        f.ids.push_back(ctx.integer(ln, t, "id"));
      else
        f.values.push_back(ctx.real(ln, t, "factor value"));
      ++field;
      if (p == std::string_view::npos) break;
      b = p + 1;
    }
    if (field != K + 1)
      ctx.fail(ln, "found " + std::to_string(field) + " fields but the header (line " + std::to_string(header_line) +
                       ") has " + std::to_string(K + 1));
    where.push_back(ln);
  }
  if (f.ids.empty())
    ctx.fail(lines.number(), "no factor rows after the header (line " + std::to_string(header_line) + ")");
  index_ids(ctx, f, where);
  return f;
}

}  // namespace

FactorFile parse_factor_file(std::string_view text, const std::string& name, std::uint64_t memory_limit) {
  std::string_view body = text;
  if (body.size() >= 3 && body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  std::string ext;
  if (const auto dot = name.rfind('.'); dot != std::string::npos && name.find('/', dot) == std::string::npos)
    for (char c : name.substr(dot + 1)) ext += detail::lower(c);
  if (ext == "mtx" || ext == "mm" || (body.size() >= 14 && detail::iequals(body.substr(0, 14), "%%MatrixMarket")))
    return parse_factor_mm(text, name, memory_limit);
  return parse_factor_csv(text, name, memory_limit);
}

FactorFile read_factor_file(const std::string& path, std::uint64_t memory_limit) {
  return parse_factor_file(read_file(path, memory_limit), path, memory_limit);
}

}  // namespace kfactor::io
