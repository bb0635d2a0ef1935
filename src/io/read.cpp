// The readers of include/kfactor/io/read.hpp. Host code only (no Kokkos
// calls), so the fuzz targets can compile this file on its own.
#include <kfactor/io/detail/text_ranges.hpp>
#include <kfactor/io/read.hpp>

#include "text.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kfactor::io {

using detail::Context;
using detail::Fields;
using detail::Lines;
using detail::show;

// ---- names ----------------------------------------------------------------

Format parse_format(std::string_view name) {
  if (name == "auto" || name == "automatic") return Format::automatic;
  if (name == "mm" || name == "mtx" || name == "matrix-market" || name == "matrixmarket") return Format::matrix_market;
  if (name == "edges" || name == "edgelist" || name == "snap") return Format::edges;
  if (name == "ratings" || name == "csv") return Format::ratings;
  if (name == "bmf" || name == "boolean") return Format::bmf;
  if (name == "dense") return Format::dense;
  if (name == "h5csr" || name == "h5" || name == "hdf5") return Format::h5csr;
  throw UsageError("unknown input format '" + std::string(name) + "' (expected auto|mm|edges|ratings|bmf|dense|h5csr)");
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::automatic: return "auto";
    case Format::matrix_market: return "mm";
    case Format::edges: return "edges";
    case Format::ratings: return "ratings";
    case Format::bmf: return "bmf";
    case Format::dense: return "dense";
    case Format::h5csr: return "h5csr";
  }
  return "?";
}

DuplicatePolicy parse_duplicate_policy(std::string_view name) {
  if (name == "auto" || name == "automatic") return DuplicatePolicy::automatic;
  if (name == "error") return DuplicatePolicy::error;
  if (name == "sum") return DuplicatePolicy::sum;
  if (name == "last") return DuplicatePolicy::last;
  throw UsageError("unknown duplicate policy '" + std::string(name) + "' (expected auto|error|sum|last)");
}

std::string_view duplicate_policy_name(DuplicatePolicy p) {
  switch (p) {
    case DuplicatePolicy::automatic: return "auto";
    case DuplicatePolicy::error: return "error";
    case DuplicatePolicy::sum: return "sum";
    case DuplicatePolicy::last: return "last";
  }
  return "?";
}

namespace {

constexpr std::int64_t max_dim = std::numeric_limits<ordinal_t>::max();  // 2^31 - 1
/// Bytes one entry costs while reading (triplet, line number, sort key) and
/// in the result: the factor a header's count is multiplied by before it is
/// trusted.
constexpr std::uint64_t bytes_per_entry = 56;

std::uint64_t memory_limit(const ReadOptions& opt) { return detail::memory_limit_or_physical(opt.memory_limit); }

using detail::gib;
using detail::num;

/// Bytes a matrix costs after the read per row and per column, before any
/// entry: an 8-byte offset in the CSR row maps of A and of its transpose,
/// and one double of a rank-1 factor (every solver holds at least that). A
/// tiny file may claim 2^31 - 1 rows; this is what makes the claim expensive.
constexpr std::uint64_t bytes_per_dim = 16;

/// Checks what a read and the matrix it makes will need (`entries` at
/// bytes_per_entry, the text, bytes_per_dim per row and column) against the
/// memory limit before anything is sized by it. `claim` says who claimed
/// the sizes ("header claims a 3 x 4 matrix with 5 entries").
void check_memory(const Context& ctx, std::int64_t line, std::int64_t m, std::int64_t n, std::uint64_t entries,
                  std::size_t text_size, const ReadOptions& opt, const std::string& claim) {
  const std::uint64_t limit = memory_limit(opt);
  const long double need = static_cast<long double>(entries) * bytes_per_entry + static_cast<long double>(text_size) +
                           (static_cast<long double>(m) + static_cast<long double>(n) + 2) * bytes_per_dim;
  if (need > static_cast<long double>(limit))
    ctx.fail(line, claim + ": about " + gib(double(need)) +
                       " with its row maps and a rank-1 factor, more than the memory limit of " + gib(double(limit)));
}

/// Checks a dimension from a header or the data: 0 <= d < 2^31.
void check_dim(const Context& ctx, std::int64_t line, std::int64_t d, const char* what) {
  if (d < 0) ctx.fail(line, std::string("negative ") + what + " " + std::to_string(d));
  if (d > max_dim)
    ctx.fail(line, std::string(what) + " " + std::to_string(d) +
                       " exceeds the 32-bit index range (at most 2147483647 rows or columns)");
}

/// Checks the sizes a header claims before anything is sized by them: the
/// entry count must fit the matrix, and entries, rows and columns the memory
/// limit (check_memory). Returns how many entries may be reserved: the claim
/// capped by what the bytes left in the input can hold (a truncated file then
/// fails at its end, naming the count it reached).
std::size_t check_claim(const Context& ctx, std::int64_t line, std::int64_t m, std::int64_t n, std::int64_t claimed,
                        std::uint64_t capacity, const std::string& capacity_what, std::size_t bytes_left,
                        std::size_t min_bytes, std::size_t text_size, const ReadOptions& opt) {
  if (claimed < 0) ctx.fail(line, "negative entry count " + std::to_string(claimed));
  const auto c = static_cast<std::uint64_t>(claimed);
  if (c > capacity)
    ctx.fail(line, "header claims " + std::to_string(claimed) + " entries but " + capacity_what + " holds at most " +
                       std::to_string(capacity));
  check_memory(ctx, line, m, n, c, text_size, opt,
               "header claims a " + std::to_string(m) + " x " + std::to_string(n) + " matrix with " +
                   std::to_string(claimed) + " entries");
  const std::uint64_t fit = (static_cast<std::uint64_t>(bytes_left) + 1) / min_bytes;
  return static_cast<std::size_t>(std::min(c, fit));
}

/// Converts a parsed double to T, rejecting values T cannot hold.
template <class T>
T to_value(const Context& ctx, std::int64_t line, double v) {
  if constexpr (std::is_same_v<T, float>) {
    if (std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max()))
      ctx.fail(line, "value " + num(v) + " does not fit in single precision (float)");
  }
  return static_cast<T>(v);
}

/// Rejects, when the values go to single precision, a value float cannot hold.
void check_fits(const Context& ctx, std::int64_t line, double v, bool single_precision) {
  if (single_precision) (void)to_value<float>(ctx, line, v);
}

void set_info(ReadInfo* info, Format f, std::string detail, std::int64_t lines, std::int64_t entries) {
  if (!info) return;
  info->format = f;
  info->detail = std::move(detail);
  info->lines = lines;
  info->entries_read = entries;
}

/// Next line that is neither blank nor a comment; false at the end.
bool next_data_line(Lines& lines, std::string_view& line, std::string_view comment_chars) {
  while (lines.next(line))
    if (!detail::skip_line(line, comment_chars)) return true;
  return false;
}

/// next_data_line that also gives the offset where the returned line starts.
bool next_data_line(Lines& lines, std::string_view& line, std::string_view comment_chars, std::size_t& start) {
  while (true) {
    start = lines.position();
    if (!lines.next(line)) return false;
    if (!detail::skip_line(line, comment_chars)) return true;
  }
}

/// Printable text (tabs and UTF-8 allowed): what a header line may hold.
bool is_text(std::string_view line) {
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

/// The comment characters of a format's entry lines.
std::string_view comment_chars(Format f) {
  switch (f) {
    case Format::matrix_market: return "%";
    case Format::ratings: return "#";
    default: return "#%";
  }
}

enum Symmetry { general = 0, symmetric = 1, skew = 2 };

// ---- headers -----------------------------------------------------------------
// Each returns nullopt when `prefix` (not the whole input) ends before the
// header does. `h` arrives with name and file_size set.

using MaybeHeader = std::optional<detail::TextHeader>;

MaybeHeader mm_header(std::string_view prefix, bool whole, detail::TextHeader h, const ReadOptions& opt) {
  const Context ctx{h.name};
  Lines lines(prefix);
  std::string_view line;
  if (!lines.next(line) || (detail::trim(line).empty() && lines.remaining() == 0)) {
    if (!whole) return std::nullopt;
    ctx.fail(1, "empty file; expected a '%%MatrixMarket matrix ...' header");
  }
  const Fields b = detail::split_ws(line);
  if (b.n == 0 || !detail::iequals(b[0], "%%MatrixMarket"))
    ctx.fail(1, "not a Matrix Market file: the first line must start with %%MatrixMarket, found " +
                    show(detail::trim(line)));
  if (b.n != 5)
    ctx.fail(1,
             "the header needs 5 fields '%%MatrixMarket matrix coordinate|array real|integer|pattern "
             "general|symmetric|skew-symmetric', found " +
                 std::to_string(b.n));
  if (!detail::iequals(b[1], "matrix")) ctx.fail(1, "unsupported Matrix Market object " + show(b[1]));
  bool coordinate = false;
  if (detail::iequals(b[2], "coordinate"))
    coordinate = true;
  else if (!detail::iequals(b[2], "array"))
    ctx.fail(1, "unknown Matrix Market format " + show(b[2]) + " (expected coordinate or array)");
  if (detail::iequals(b[3], "pattern"))
    h.pattern = true;
  else if (detail::iequals(b[3], "integer"))
    h.integer = true;
  else if (!detail::iequals(b[3], "real") && !detail::iequals(b[3], "double"))
    ctx.fail(1, "unsupported Matrix Market field " + show(b[3]) + " (expected real, integer or pattern)");
  if (detail::iequals(b[4], "symmetric"))
    h.symmetry = symmetric;
  else if (detail::iequals(b[4], "skew-symmetric"))
    h.symmetry = skew;
  else if (!detail::iequals(b[4], "general"))
    ctx.fail(1,
             "unsupported Matrix Market symmetry " + show(b[4]) + " (expected general, symmetric or skew-symmetric)");
  if (h.pattern && !coordinate) ctx.fail(1, "a pattern matrix must use the coordinate format");
  if (h.pattern && h.symmetry == skew) ctx.fail(1, "a pattern matrix cannot be skew-symmetric");
  h.array = !coordinate;

  if (!next_data_line(lines, line, "%")) {
    if (!whole) return std::nullopt;
    ctx.fail(lines.number(), "file ends before the size line ('rows cols nnz' or 'rows cols')");
  }
  const std::int64_t size_line = lines.number();
  h.size_line = size_line;
  h.body_offset = lines.position();
  h.body_line = size_line;
  const Fields s = detail::split_ws(line);
  const int want = coordinate ? 3 : 2;
  if (s.n != want)
    ctx.fail(size_line, std::string("the size line needs ") +
                            (coordinate ? "3 fields 'rows cols nnz'" : "2 fields 'rows cols'") + ", found " +
                            std::to_string(s.n));
  const std::int64_t m = ctx.integer(size_line, s[0], "row count");
  const std::int64_t n = ctx.integer(size_line, s[1], "column count");
  check_dim(ctx, size_line, m, "row count");
  check_dim(ctx, size_line, n, "column count");
  if (h.symmetry != general && m != n)
    ctx.fail(size_line,
             "a symmetric matrix must be square, the header says " + std::to_string(m) + " x " + std::to_string(n));
  h.rows = m;
  h.cols = n;
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n);
  const std::uint64_t capacity = h.symmetry == general     ? um * un
                                 : h.symmetry == symmetric ? un * (un + 1) / 2
                                                           : (un == 0 ? 0 : un * (un - 1) / 2);
  h.capacity = capacity;
  const std::string cap_what = std::to_string(m) + " x " + std::to_string(n) +
                               (h.symmetry == general ? " matrix" : " matrix stored as a triangle");
  h.detail = std::string(coordinate ? "coordinate " : "array ") +
             (h.pattern   ? "pattern"
              : h.integer ? "integer"
                          : "real") +
             " " +
             (h.symmetry == general     ? "general"
              : h.symmetry == symmetric ? "symmetric"
                                        : "skew-symmetric");
  const std::size_t bytes_left = static_cast<std::size_t>(h.file_size - h.body_offset);
  const auto text_size = static_cast<std::size_t>(h.file_size);
  if (coordinate) {
    h.nnz = ctx.integer(size_line, s[2], "entry count");
    (void)check_claim(ctx, size_line, m, n, h.nnz, capacity, cap_what, bytes_left, h.pattern ? 4 : 6, text_size, opt);
  } else {
    (void)check_claim(ctx, size_line, m, n, static_cast<std::int64_t>(capacity), capacity, cap_what, bytes_left, 2,
                      text_size, opt);
  }
  return h;
}

MaybeHeader edges_header(std::string_view prefix, bool whole, detail::TextHeader h) {
  const Context ctx{h.name};
  Lines lines(prefix);
  std::string_view line;
  std::size_t start = 0;
  // No (further) data line: the body is empty, and check_totals reports it.
  auto no_entries = [&]() -> MaybeHeader {
    if (!whole) return std::nullopt;
    h.body_offset = prefix.size();
    h.body_line = lines.number();
    return h;
  };
  if (!next_data_line(lines, line, "#%", start)) return no_entries();
  Fields f = detail::split_ws(line);
  if (f.n == 1) {
    const std::int64_t ln = lines.number();
    const std::int64_t c = ctx.integer(ln, f[0], "count line");
    if (c < 0) ctx.fail(ln, "negative count " + std::to_string(c));
    h.header_count = c;
    h.header_line = ln;
    if (!next_data_line(lines, line, "#%", start)) return no_entries();
    f = detail::split_ws(line);
  }
  h.fields = f.n;
  h.body_offset = start;
  h.body_line = lines.number() - 1;
  return h;
}

MaybeHeader ratings_header(std::string_view prefix, bool whole, detail::TextHeader h) {
  Lines lines(prefix);
  std::string_view line;
  std::size_t start = 0;
  auto no_entries = [&]() -> MaybeHeader {
    if (!whole) return std::nullopt;
    h.body_offset = prefix.size();
    h.body_line = lines.number();
    return h;
  };
  if (!next_data_line(lines, line, "#", start)) return no_entries();
  // The first data line picks the separator and may be a header.
  if (line.find("::") != std::string_view::npos)
    h.separator = "::";
  else if (line.find(',') != std::string_view::npos)
    h.separator = ",";
  auto split = [&](std::string_view l) {
    return h.separator.empty() ? detail::split_ws(l) : detail::split_sep(l, h.separator);
  };
  Fields f = split(line);
  if (f.n > 0 && !detail::is_number(f[0]) && is_text(line)) {
    h.header = true;
    if (!next_data_line(lines, line, "#", start)) return no_entries();
    f = split(line);
  }
  h.fields = f.n;
  h.body_offset = start;
  h.body_line = lines.number() - 1;
  return h;
}

MaybeHeader bmf_header(std::string_view prefix, bool whole, detail::TextHeader h, const ReadOptions& opt) {
  const Context ctx{h.name};
  Lines lines(prefix);
  std::string_view line;
  if (!next_data_line(lines, line, "#%")) {
    if (!whole) return std::nullopt;
    ctx.fail(lines.number(), "empty file; expected a header 'rows cols nnz'");
  }
  const std::int64_t hl = lines.number();
  h.size_line = hl;
  h.body_offset = lines.position();
  h.body_line = hl;
  const Fields f = detail::split_ws(line);
  if (f.n != 3) ctx.fail(hl, "the header needs 3 fields 'rows cols nnz', found " + std::to_string(f.n));
  const std::int64_t m = ctx.integer(hl, f[0], "row count");
  const std::int64_t n = ctx.integer(hl, f[1], "column count");
  const std::int64_t nnz = ctx.integer(hl, f[2], "entry count");
  check_dim(ctx, hl, m, "row count");
  check_dim(ctx, hl, n, "column count");
  (void)check_claim(ctx, hl, m, n, nnz, static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(n),
                    std::to_string(m) + " x " + std::to_string(n) + " matrix",
                    static_cast<std::size_t>(h.file_size - h.body_offset), 4, static_cast<std::size_t>(h.file_size),
                    opt);
  h.rows = m;
  h.cols = n;
  h.nnz = nnz;
  h.pattern = true;
  h.detail = "Boolean 'rows cols nnz' + 0-based pairs";
  return h;
}

/// Does `prefix` hold everything detect_format() looks at (the first data
/// line and the 100 after it)?
bool holds_detection_sample(std::string_view prefix) {
  Lines lines(prefix);
  std::string_view line;
  for (int k = 0; k < 101 + 1; ++k)
    if (!next_data_line(lines, line, "#%")) return false;
  return true;
}

}  // namespace

// ---- the pieces of io/detail/text_ranges.hpp -------------------------------------

namespace detail {

void TextEntries::reserve(std::size_t n) {
  rows.reserve(n);
  cols.reserve(n);
  vals.reserve(n);
  lines.reserve(n);
}

void TextEntries::add(std::int64_t i, std::int64_t j, double v, std::int64_t line) {
  rows.push_back(static_cast<ordinal_t>(i));
  cols.push_back(static_cast<ordinal_t>(j));
  vals.push_back(v);
  lines.push_back(line);
}

std::string IndexDisplay::pair(ordinal_t i, ordinal_t j) const {
  const auto r = row_ids ? (*row_ids)[static_cast<std::size_t>(i)] : i + base;
  const auto c = col_ids ? (*col_ids)[static_cast<std::size_t>(j)] : j + base;
  return "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

std::optional<TextHeader> parse_text_header(std::string_view prefix, std::uint64_t file_size, const std::string& name,
                                            Format format, const ReadOptions& opt) {
  const bool whole = prefix.size() == file_size;
  if (format == Format::automatic) {
    if (!whole && !holds_detection_sample(prefix)) return std::nullopt;
    format = detect_format(prefix, name);
  }
  TextHeader h;
  h.format = format;
  h.name = name;
  h.file_size = file_size;
  switch (format) {
    case Format::matrix_market: return mm_header(prefix, whole, std::move(h), opt);
    case Format::edges: return edges_header(prefix, whole, std::move(h));
    case Format::ratings: return ratings_header(prefix, whole, std::move(h));
    case Format::bmf: return bmf_header(prefix, whole, std::move(h), opt);
    case Format::dense: return h;
    default: break;
  }
  throw UsageError("no text format to read " + name + " in");
}

bool range_start(std::string_view text, std::size_t pos) {
  if (pos == 0 || pos >= text.size()) return true;
  const char before = text[pos - 1];
  return before == '\n' || (before == '\r' && text[pos] != '\n');
}

RangeLines count_range(const TextHeader& h, std::string_view range, bool at_file_start) {
  Lines lines(range, at_file_start);
  const std::string_view comments = comment_chars(h.format);
  std::string_view line;
  RangeLines out;
  while (lines.next(line))
    if (!skip_line(line, comments)) ++out.data_lines;
  out.lines = lines.number();
  return out;
}

namespace {

RangeLines parse_mm_range(const TextHeader& h, Lines& lines, std::int64_t data_before, TextEntries& e) {
  const Context ctx{h.name};
  const std::int64_t m = h.rows, n = h.cols, nnz = h.nnz;
  const double sign = h.symmetry == skew ? -1.0 : 1.0;
  auto index = [&](std::int64_t ln, std::string_view t, std::int64_t bound, const char* what) {
    const std::int64_t i = ctx.integer(ln, t, what);
    if (i == 0) ctx.fail(ln, std::string(what) + " 0: Matrix Market indices are 1-based");
    if (i < 0) ctx.fail(ln, std::string("negative ") + what + " " + std::to_string(i));
    if (i > bound)
      ctx.fail(ln, std::string(what) + " " + std::to_string(i) + " out of range 1.." + std::to_string(bound));
    return i - 1;
  };
  const int fields = h.pattern ? 2 : 3;
  std::int64_t count = data_before;
  std::string_view line;
  RangeLines seen;
  while (lines.next(line)) {
    if (skip_line(line, "%")) continue;
    const std::int64_t ln = lines.number();
    const Fields f = split_ws(line);
    if (count == nnz)
      ctx.fail(ln, "more entries than the " + std::to_string(nnz) + " the size line (line " +
                       std::to_string(h.size_line) + ") declares");
    if (f.n != fields)
      ctx.fail(ln, std::string("expected ") + (h.pattern ? "2 fields 'row col'" : "3 fields 'row col value'") +
                       ", found " + std::to_string(f.n));
    const std::int64_t i = index(ln, f[0], m, "row index");
    const std::int64_t j = index(ln, f[1], n, "column index");
    double v = 1.0;
    if (!h.pattern) {
      v = h.integer ? static_cast<double>(ctx.integer(ln, f[2], "value")) : ctx.real(ln, f[2], "value");
      check_fits(ctx, ln, v, h.single_precision);
    }
    if (h.symmetry == skew && i == j) ctx.fail(ln, "diagonal entry in a skew-symmetric matrix");
    e.add(i, j, v, ln);
    if (h.symmetry != general && i != j) e.add(j, i, sign * v, ln);
    ++count;
    ++seen.data_lines;
  }
  e.count += seen.data_lines;
  return seen;
}

RangeLines parse_edges_range(const TextHeader& h, Lines& lines, const ReadOptions& opt, TextEntries& e) {
  const Context ctx{h.name};
  const std::int64_t base = opt.one_based ? 1 : 0;
  auto id = [&](std::int64_t ln, std::string_view t, const char* what) {
    const std::int64_t v = ctx.integer(ln, t, what);
    if (v < base) {
      if (v == 0) ctx.fail(ln, std::string(what) + " 0 in a 1-based edge list");
      ctx.fail(ln, std::string("negative ") + what + " " + std::to_string(v));
    }
    if (v - base >= max_dim)
      ctx.fail(ln, std::string(what) + " " + std::to_string(v) + " exceeds the 32-bit index range");
    return v - base;
  };
  std::string_view line;
  RangeLines seen;
  while (next_data_line(lines, line, "#%")) {
    const std::int64_t ln = lines.number();
    const Fields f = split_ws(line);
    if (f.n < 2 || f.n > 3)
      ctx.fail(ln, "expected 2 fields 'u v' or 3 fields 'u v weight', found " + std::to_string(f.n));
    if (f.n != h.fields)
      ctx.fail(ln, "found " + std::to_string(f.n) + " fields but the first edge has " + std::to_string(h.fields));
    const std::int64_t u = id(ln, f[0], "source id");
    const std::int64_t v = id(ln, f[1], "target id");
    double w = 1.0;
    if (h.fields == 3) {
      w = ctx.real(ln, f[2], "weight");
      check_fits(ctx, ln, w, h.single_precision);
    }
    if (std::max(u, v) > std::max(e.max_u, e.max_v)) e.max_id_line = ln;
    e.max_u = std::max(e.max_u, u);
    e.max_v = std::max(e.max_v, v);
    e.add(u, v, w, ln);
    if (opt.symmetrize && u != v) e.add(v, u, w, ln);
    ++seen.data_lines;
  }
  e.count += seen.data_lines;
  return seen;
}

RangeLines parse_ratings_range(const TextHeader& h, Lines& lines, TextEntries& e) {
  const Context ctx{h.name};
  const std::string& sep = h.separator;
  std::string_view line;
  RangeLines seen;
  while (next_data_line(lines, line, "#")) {
    const std::int64_t ln = lines.number();
    const Fields f = sep.empty() ? split_ws(line) : split_sep(line, sep);
    if (f.n < 2 || f.n > 4)
      ctx.fail(ln, "expected 'user item rating [timestamp]' (2 to 4 fields), found " + std::to_string(f.n) + " fields" +
                       (sep.empty() ? "" : " separated by '" + sep + "'"));
    if (f.n != h.fields)
      ctx.fail(ln, "found " + std::to_string(f.n) + " fields but the first rating has " + std::to_string(h.fields));
    for (int k = 0; k < f.n; ++k)
      if (f[k].empty()) ctx.fail(ln, "empty field " + std::to_string(k + 1));
    e.user_ids.push_back(ctx.integer(ln, f[0], "user id"));
    e.item_ids.push_back(ctx.integer(ln, f[1], "item id"));
    double r = 1.0;
    if (h.fields >= 3) {
      r = ctx.real(ln, f[2], "rating");
      check_fits(ctx, ln, r, h.single_precision);
    }
    if (h.fields == 4) e.times.push_back(ctx.integer(ln, f[3], "timestamp"));
    e.vals.push_back(r);
    e.lines.push_back(ln);
    ++seen.data_lines;
  }
  e.count += seen.data_lines;
  return seen;
}

RangeLines parse_bmf_range(const TextHeader& h, Lines& lines, std::int64_t data_before, TextEntries& e) {
  const Context ctx{h.name};
  const std::int64_t m = h.rows, n = h.cols, nnz = h.nnz;
  auto index = [&](std::int64_t ln, std::string_view t, std::int64_t bound, const char* what) {
    const std::int64_t i = ctx.integer(ln, t, what);
    if (i < 0) ctx.fail(ln, std::string("negative ") + what + " " + std::to_string(i));
    if (i >= bound)
      ctx.fail(ln, std::string(what) + " " + std::to_string(i) + " out of range 0.." + std::to_string(bound - 1) +
                       (i == bound ? " (indices are 0-based)" : ""));
    return i;
  };
  std::int64_t count = data_before;
  std::string_view line;
  RangeLines seen;
  while (next_data_line(lines, line, "#%")) {
    const std::int64_t ln = lines.number();
    const Fields f = split_ws(line);
    if (count == nnz)
      ctx.fail(ln, "more entries than the " + std::to_string(nnz) + " the header (line " + std::to_string(h.size_line) +
                       ") declares");
    if (f.n != 2) ctx.fail(ln, "expected 2 fields 'row col', found " + std::to_string(f.n));
    const std::int64_t i = index(ln, f[0], m, "row index");
    const std::int64_t j = index(ln, f[1], n, "column index");
    e.add(i, j, 1.0, ln);
    ++count;
    ++seen.data_lines;
  }
  e.count += seen.data_lines;
  return seen;
}

}  // namespace

RangeLines parse_range(const TextHeader& h, std::string_view range, bool at_file_start, std::int64_t lines_before,
                       std::int64_t data_before, const ReadOptions& opt, TextEntries& out) {
  Lines lines(range, at_file_start, lines_before);
  // Room for the entries the range can hold (a header's claim is never
  // trusted for more than the bytes can carry).
  const std::size_t min_bytes = h.format == Format::matrix_market && !h.pattern ? 6 : 4;
  std::uint64_t fit = (static_cast<std::uint64_t>(range.size()) + 1) / min_bytes;
  if (h.format == Format::matrix_market || h.format == Format::bmf)
    fit = std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(std::max<std::int64_t>(h.nnz - data_before, 0)));
  const std::uint64_t per_line =
      (h.format == Format::matrix_market && h.symmetry != general) || (h.format == Format::edges && opt.symmetrize) ? 2
                                                                                                                    : 1;
  if (h.format != Format::edges && h.format != Format::ratings) out.reserve(static_cast<std::size_t>(fit * per_line));
  RangeLines seen;
  switch (h.format) {
    case Format::matrix_market: seen = parse_mm_range(h, lines, data_before, out); break;
    case Format::edges: seen = parse_edges_range(h, lines, opt, out); break;
    case Format::ratings: seen = parse_ratings_range(h, lines, out); break;
    case Format::bmf: seen = parse_bmf_range(h, lines, data_before, out); break;
    default: throw UsageError("no entry lines to parse in " + h.name);
  }
  seen.lines = lines.number() - lines_before;
  return seen;
}

std::pair<std::int64_t, std::int64_t> check_totals(const TextHeader& h, const TextTotals& t, const ReadOptions& opt) {
  const Context ctx{h.name};
  switch (h.format) {
    case Format::matrix_market:
      if (t.count < h.nnz)
        ctx.fail(t.lines, "file ends after " + std::to_string(t.count) + " of the " + std::to_string(h.nnz) +
                              " entries the size line (line " + std::to_string(h.size_line) + ") declares");
      return {h.rows, h.cols};
    case Format::bmf:
      if (t.count < h.nnz)
        ctx.fail(t.lines, "file ends after " + std::to_string(t.count) + " of the " + std::to_string(h.nnz) +
                              " entries the header (line " + std::to_string(h.size_line) + ") declares");
      return {h.rows, h.cols};
    case Format::ratings:
      if (t.count == 0) ctx.fail(t.lines, h.header ? "no ratings after the header" : "no ratings (empty file)");
      return {0, 0};
    case Format::edges: break;
    default: throw UsageError("no entry lines in " + h.name);
  }
  if (t.count == 0) ctx.fail(t.lines, h.header_count ? "no edges after the count line" : "no edges (empty file)");
  const std::int64_t base = opt.one_based ? 1 : 0;
  const std::int64_t nodes = std::max(t.max_u, t.max_v) + 1;
  const auto& header_count = h.header_count;
  if (header_count && *header_count != t.count && *header_count > max_dim)
    ctx.fail(h.header_line, "the count line says " + std::to_string(*header_count) + ": not the " +
                                std::to_string(t.count) + " edges of the file, and more nodes than 32-bit ids allow");
  if (header_count && *header_count != t.count && *header_count < nodes)
    ctx.fail(h.header_line, "the count line says " + std::to_string(*header_count) + " but the file has " +
                                std::to_string(t.count) + " edges and " + std::to_string(nodes) + " nodes (ids up to " +
                                std::to_string(nodes - 1 + base) + ", line " + std::to_string(t.max_id_line) +
                                "); a leading count must be the edge count or a node count at least that large");
  std::int64_t m = t.max_u + 1, n = t.max_v + 1;
  if (opt.square || opt.symmetrize) m = n = std::max(m, n);
  check_memory(
      ctx, t.max_id_line, m, n, t.stored, static_cast<std::size_t>(h.file_size), opt,
      "id " + std::to_string(nodes - 1 + base) + " makes the matrix " + std::to_string(m) + " x " + std::to_string(n));
  return {m, n};
}

void check_id_count(const TextHeader& h, const TextTotals& t, std::size_t distinct, const char* what) {
  if (static_cast<std::int64_t>(distinct) > max_dim)
    fail(h.name, t.lines, std::string("more than 2^31-1 distinct ") + what + " ids");
}

std::vector<std::int64_t> distinct_ids(std::vector<std::int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

void map_ratings(TextEntries& e, const std::vector<std::int64_t>& users, const std::vector<std::int64_t>& items) {
  auto pos = [](const std::vector<std::int64_t>& sorted, std::int64_t id) {
    return static_cast<ordinal_t>(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin());
  };
  e.rows.resize(e.user_ids.size());
  e.cols.resize(e.item_ids.size());
  for (std::size_t k = 0; k < e.user_ids.size(); ++k) {
    e.rows[k] = pos(users, e.user_ids[k]);
    e.cols[k] = pos(items, e.item_ids[k]);
  }
  // Free the raw ids before finalize allocates its own.
  std::vector<std::int64_t>().swap(e.user_ids);
  std::vector<std::int64_t>().swap(e.item_ids);
}

void describe(const TextHeader& h, const TextTotals& t, const ReadOptions& opt, ReadInfo* info) {
  std::string detail = h.detail;
  if (h.format == Format::edges) {
    detail = std::string(h.fields == 3 ? "weighted" : "unweighted") + (h.header_count ? ", leading count line" : "") +
             (opt.symmetrize ? ", symmetrized" : "");
  } else if (h.format == Format::ratings) {
    const std::string sep_name = h.separator.empty() ? "whitespace" : "'" + h.separator + "'";
    detail = "ratings, " + sep_name + " separated, " + std::to_string(h.fields) + " fields" +
             (h.header ? ", header line" : "");
  }
  set_info(info, h.format, detail, t.lines, t.count);
  if (info && h.format == Format::edges) info->header_count = h.header_count;
  if (info) info->timestamps = h.format == Format::ratings && h.fields == 4;
}

bool is_pattern(const TextHeader& h) {
  switch (h.format) {
    case Format::edges:
    case Format::ratings: return h.fields == 2;
    default: return h.pattern;
  }
}

IndexDisplay index_display(const TextHeader& h, const ReadOptions& opt, const std::vector<std::int64_t>* users,
                           const std::vector<std::int64_t>* items) {
  switch (h.format) {
    case Format::matrix_market: return IndexDisplay{1};
    case Format::edges: return IndexDisplay{opt.one_based ? 1 : 0};
    case Format::ratings: return IndexDisplay{0, users, items};
    default: return IndexDisplay{0};
  }
}

void check_non_negative(const std::string& name, const TextEntries& e, const ReadOptions& opt,
                        const IndexDisplay& show_index) {
  if (!opt.non_negative) return;
  const Context ctx{name};
  for (std::size_t k = 0; k < e.size(); ++k)
    if (e.vals[k] < 0)
      ctx.fail(e.lines[k], "negative value " + num(e.vals[k]) + " at " + show_index.pair(e.rows[k], e.cols[k]) +
                               " (this input must be non-negative)");
}

template <class T>
CooMatrix<T> finalize(const std::string& name, TextEntries& e, std::int64_t m, std::int64_t n, bool pattern,
                      const ReadOptions& opt, ReadInfo* info, const IndexDisplay& show_index,
                      std::vector<std::int64_t>* times) {
  const Context ctx{name};
  const std::size_t nnz = e.size();
  const auto ncols = static_cast<std::uint64_t>(n);
  auto key = [&](std::size_t k) {
    return static_cast<std::uint64_t>(e.rows[k]) * ncols + static_cast<std::uint64_t>(e.cols[k]);
  };
  std::vector<std::size_t> order(nnz);
  for (std::size_t k = 0; k < nnz; ++k) order[k] = k;
  bool sorted = true;
  for (std::size_t k = 1; k < nnz && sorted; ++k) sorted = key(k - 1) < key(k);
  bool column_major = !sorted;
  for (std::size_t k = 1; k < nnz && column_major; ++k)
    column_major = e.cols[k - 1] < e.cols[k] || (e.cols[k - 1] == e.cols[k] && e.rows[k - 1] < e.rows[k]);
  if (column_major) {
    // Matrix Market arrays and column-sorted files: a counting sort by row
    // keeps each row's columns ascending, O(nnz) where a sort of 200M keys
    // took longer than parsing them.
    std::vector<std::size_t> next(static_cast<std::size_t>(m) + 1, 0);
    for (std::size_t k = 0; k < nnz; ++k) ++next[static_cast<std::size_t>(e.rows[k]) + 1];
    for (std::size_t r = 1; r < next.size(); ++r) next[r] += next[r - 1];
    for (std::size_t k = 0; k < nnz; ++k) order[next[static_cast<std::size_t>(e.rows[k])]++] = k;
  } else if (!sorted) {
    std::vector<std::pair<std::uint64_t, std::size_t>> kv(nnz);
    for (std::size_t k = 0; k < nnz; ++k) kv[k] = {key(k), k};
    std::sort(kv.begin(), kv.end());
    for (std::size_t k = 0; k < nnz; ++k) order[k] = kv[k].second;
  }
  const bool reject =
      opt.duplicates == DuplicatePolicy::error || (opt.duplicates == DuplicatePolicy::automatic && !pattern);
  CooMatrix<T> out;
  out.num_rows = m;
  out.num_cols = n;
  out.rows.reserve(nnz);
  out.cols.reserve(nnz);
  out.values.reserve(nnz);
  const bool timed = times && e.times.size() == nnz;
  if (times) times->clear();
  if (timed) times->reserve(nnz);
  std::int64_t duplicates = 0;
  for (std::size_t s = 0; s < nnz;) {
    const std::size_t first = order[s];
    double v = pattern ? 1.0 : e.vals[first];
    std::int64_t latest = timed ? e.times[first] : 0;
    std::size_t t = s + 1;
    for (; t < nnz && key(order[t]) == key(first); ++t) {
      const std::size_t dup = order[t];
      if (timed) latest = std::max(latest, e.times[dup]);
      if (reject) {
        const std::string where = e.lines[dup] == e.lines[first]
                                      ? " (its mirror image on the same line)"
                                      : " (first at line " + std::to_string(e.lines[first]) + ")";
        ctx.fail(e.lines[dup], "duplicate entry " + show_index.pair(e.rows[dup], e.cols[dup]) + where +
                                   "; choose a duplicate policy (sum, last) to accept duplicates");
      }
      if (!pattern) {
        if (opt.duplicates == DuplicatePolicy::sum) {
          v += e.vals[dup];
          if (!std::isfinite(v)) ctx.fail(e.lines[dup], "sum of duplicate entries overflows");
        } else {
          v = e.vals[dup];
        }
      }
      ++duplicates;
    }
    out.rows.push_back(e.rows[first]);
    out.cols.push_back(e.cols[first]);
    out.values.push_back(to_value<T>(ctx, e.lines[order[t - 1]], v));
    if (timed) times->push_back(latest);
    s = t;
  }
  if (info) {
    info->duplicates = duplicates;
    info->pattern = pattern;
  }
  return out;
}

template CooMatrix<float> finalize<float>(const std::string&, TextEntries&, std::int64_t, std::int64_t, bool,
                                          const ReadOptions&, ReadInfo*, const IndexDisplay&,
                                          std::vector<std::int64_t>*);
template CooMatrix<double> finalize<double>(const std::string&, TextEntries&, std::int64_t, std::int64_t, bool,
                                            const ReadOptions&, ReadInfo*, const IndexDisplay&,
                                            std::vector<std::int64_t>*);

}  // namespace detail

namespace {

using detail::TextEntries;
using detail::TextHeader;

/// The whole-file reader of a format with entry lines: the pieces of
/// io/detail/text_ranges.hpp over one range, the whole body.
template <class T>
RatingData<T> parse_body(std::string_view text, TextHeader h, const ReadOptions& opt, ReadInfo* info) {
  h.single_precision = std::is_same_v<T, float>;
  TextEntries e;
  const auto seen = detail::parse_range(h, text.substr(h.body_offset), h.body_offset == 0, h.body_line, 0, opt, e);
  const detail::TextTotals t{h.body_line + seen.lines, e.count, e.size(), e.max_u, e.max_v, e.max_id_line};
  auto [m, n] = detail::check_totals(h, t, opt);
  RatingData<T> out;
  if (h.format == Format::ratings) {
    out.user_ids = detail::distinct_ids(e.user_ids);
    detail::check_id_count(h, t, out.user_ids.size(), "user");
    out.item_ids = detail::distinct_ids(e.item_ids);
    detail::check_id_count(h, t, out.item_ids.size(), "item");
    detail::map_ratings(e, out.user_ids, out.item_ids);
    m = static_cast<std::int64_t>(out.user_ids.size());
    n = static_cast<std::int64_t>(out.item_ids.size());
  }
  detail::describe(h, t, opt, info);
  const auto show_index = detail::index_display(h, opt, &out.user_ids, &out.item_ids);
  detail::check_non_negative(h.name, e, opt, show_index);
  out.matrix = detail::finalize<T>(h.name, e, m, n, detail::is_pattern(h), opt, info, show_index, &out.timestamps);
  return out;
}

TextHeader whole_header(std::string_view text, const std::string& name, Format format, const ReadOptions& opt) {
  return *detail::parse_text_header(text, text.size(), name, format, opt);
}

/// A Matrix Market array body: the values in column-major order.
template <class T>
CooMatrix<T> parse_mm_array(std::string_view text, const TextHeader& h, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{h.name};
  Lines lines(text.substr(h.body_offset), h.body_offset == 0, h.body_line);
  std::string_view line;
  const std::int64_t m = h.rows, n = h.cols;
  const double sign = h.symmetry == skew ? -1.0 : 1.0;
  TextEntries e;
  e.reserve(h.symmetry == general ? h.capacity : 2 * h.capacity);
  std::int64_t count = 0;
  // Column-major cursor over the stored part: all of it, the lower
  // triangle (symmetric) or the strictly lower triangle (skew).
  std::int64_t ci = h.symmetry == skew ? 1 : 0, cj = 0;
  const auto total = static_cast<std::int64_t>(h.capacity);
  while (lines.next(line)) {
    if (detail::skip_line(line, "%")) continue;
    const std::int64_t ln = lines.number();
    detail::for_each_token(line, [&](std::string_view t) {
      if (count == total)
        ctx.fail(ln, "more values than the " + std::to_string(total) + " the size line (line " +
                         std::to_string(h.size_line) + ") declares");
      const double v = h.integer ? static_cast<double>(ctx.integer(ln, t, "value")) : ctx.real(ln, t, "value");
      (void)to_value<T>(ctx, ln, v);
      if (v != 0.0 || opt.keep_zeros) {
        e.add(ci, cj, v, ln);
        if (h.symmetry != general && ci != cj) e.add(cj, ci, sign * v, ln);
      }
      ++count;
      if (++ci == m) {
        ++cj;
        ci = h.symmetry == general ? 0 : h.symmetry == symmetric ? cj : cj + 1;
      }
    });
  }
  if (count < total)
    ctx.fail(lines.number(), "file ends after " + std::to_string(count) + " of the " + std::to_string(total) +
                                 " values the size line (line " + std::to_string(h.size_line) + ") declares");
  set_info(info, Format::matrix_market, h.detail, lines.number(), count);
  const detail::IndexDisplay show_index{1};
  detail::check_non_negative(h.name, e, opt, show_index);
  return detail::finalize<T>(h.name, e, m, n, false, opt, info, show_index);
}

}  // namespace

template <class T>
CooMatrix<T> parse_matrix_market(std::string_view text, const std::string& name, const ReadOptions& opt,
                                 ReadInfo* info) {
  const TextHeader h = whole_header(text, name, Format::matrix_market, opt);
  if (h.array) return parse_mm_array<T>(text, h, opt, info);
  return parse_body<T>(text, h, opt, info).matrix;
}

template <class T>
CooMatrix<T> parse_edges(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  return parse_body<T>(text, whole_header(text, name, Format::edges, opt), opt, info).matrix;
}

template <class T>
RatingData<T> parse_ratings(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  return parse_body<T>(text, whole_header(text, name, Format::ratings, opt), opt, info);
}

std::int64_t rating_line(std::string_view text, std::int64_t user, std::int64_t item) {
  // The separator and header line as parse_ratings takes them.
  const TextHeader h = whole_header(text, std::string(), Format::ratings, ReadOptions{});
  Lines lines(text.substr(h.body_offset), h.body_offset == 0, h.body_line);
  std::string_view line;
  std::int64_t u = 0, i = 0;
  while (next_data_line(lines, line, "#")) {
    const Fields f = h.separator.empty() ? detail::split_ws(line) : detail::split_sep(line, h.separator);
    if (f.n >= 2 && detail::try_int(f[0], u) && detail::try_int(f[1], i) && u == user && i == item)
      return lines.number();
  }
  return 0;
}

template <class T>
CooMatrix<T> parse_bmf(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  return parse_body<T>(text, whole_header(text, name, Format::bmf, opt), opt, info).matrix;
}

// ---- dense text ------------------------------------------------------------------

template <class T>
CooMatrix<T> parse_dense(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  detail::TextEntries e;
  std::int64_t rows = 0, cols = -1, first_line = 0;
  while (next_data_line(lines, line, "#%")) {
    const std::int64_t ln = lines.number();
    if (rows == max_dim) ctx.fail(ln, "more than 2^31-1 rows");
    std::int64_t j = 0;
    detail::for_each_token(line, [&](std::string_view t) {
      if (j == max_dim) ctx.fail(ln, "more than 2^31-1 columns");
      const double v = ctx.real(ln, t, "value");
      (void)to_value<T>(ctx, ln, v);
      if (v != 0.0 || opt.keep_zeros) e.add(rows, j, v, ln);
      ++j;
    });
    if (cols < 0) {
      cols = j;
      first_line = ln;
    } else if (j != cols) {
      ctx.fail(ln, "row has " + std::to_string(j) + " values but the first row (line " + std::to_string(first_line) +
                       ") has " + std::to_string(cols));
    }
    ++rows;
  }
  if (rows == 0) ctx.fail(lines.number(), "no rows (empty file)");
  set_info(info, Format::dense, "dense text, " + std::to_string(cols) + " columns", lines.number(),
           static_cast<std::int64_t>(e.size()));
  const detail::IndexDisplay show_index{0};
  detail::check_non_negative(name, e, opt, show_index);
  return detail::finalize<T>(name, e, rows, cols, false, opt, info, show_index);
}

// ---- detection and dispatch ------------------------------------------------------

Format detect_format(std::string_view text, std::string_view path) {
  const std::string name = path.empty() ? std::string("input") : std::string(path);
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  if (text.size() >= 14 && detail::iequals(text.substr(0, 14), "%%MatrixMarket")) return Format::matrix_market;
  std::string ext;
  if (const auto dot = path.rfind('.'); dot != std::string_view::npos && path.find('/', dot) == std::string_view::npos)
    for (char c : path.substr(dot + 1)) ext += detail::lower(c);
  if (ext == "mtx" || ext == "mm") return Format::matrix_market;
  if (ext == "csv" || ext == "dat") return Format::ratings;
  Lines lines(text);
  std::string_view line;
  if (!next_data_line(lines, line, "#%")) return Format::edges;  // the edge reader names what is missing
  const std::int64_t first_line = lines.number();
  if (line.find("::") != std::string_view::npos || line.find(',') != std::string_view::npos) return Format::ratings;
  const Fields f = detail::split_ws(line);
  if (f.n > 0 && !detail::is_number(f[0]) && is_text(line)) return Format::ratings;  // a header
  // A sample of the following lines: their field counts, and whether every
  // line so far starts with two integers (ids, as edges and ratings need).
  auto two_ints = [](const Fields& g) {
    std::int64_t a, b;
    return g.n >= 2 && detail::try_int(g[0], a) && detail::try_int(g[1], b);
  };
  int second = 0;  // fields of the second data line (0: none)
  bool ids = f.n < 2 || two_ints(f);
  bool all_single = f.n == 1;
  constexpr int sample = 100;
  for (int k = 0; k < sample && next_data_line(lines, line, "#%"); ++k) {
    const Fields g = detail::split_ws(line);
    if (k == 0) second = g.n;
    all_single = all_single && g.n == 1;
    ids = ids && two_ints(g);
  }
  if (f.n == 1) return all_single ? Format::dense : Format::edges;  // a leading count line, or a column
  if (f.n == 3 && ids && second == 2) {
    std::int64_t nnz;
    if (detail::try_int(f[2], nnz)) return Format::bmf;  // 'rows cols nnz', then 'row col'
  }
  if (f.n >= 5 || !ids) return Format::dense;
  if (f.n == 2) return Format::edges;
  if (f.n == 4) return Format::ratings;
  detail::fail(name, first_line,
               "cannot tell the format: lines of 3 numbers fit a weighted edge list 'u v weight' and ratings "
               "'user item rating' alike; pass --format edges or --format ratings (or --format dense)");
}

template <class T>
CooMatrix<T> parse_matrix(std::string_view text, const std::string& name, Format format, const ReadOptions& opt,
                          ReadInfo* info) {
  if (format == Format::automatic) format = detect_format(text, name);
  switch (format) {
    case Format::matrix_market: return parse_matrix_market<T>(text, name, opt, info);
    case Format::edges: return parse_edges<T>(text, name, opt, info);
    case Format::ratings: return parse_ratings<T>(text, name, opt, info).matrix;
    case Format::bmf: return parse_bmf<T>(text, name, opt, info);
    case Format::dense: return parse_dense<T>(text, name, opt, info);
    case Format::h5csr: throw UsageError(name + ": an HDF5 CSR input is read from its file (io::read_input)");
    case Format::automatic: break;
  }
  throw UsageError("no input format");
}

namespace {

/// What a non-regular file is, for the message refusing it.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

[[noreturn]] void refuse_kind(const std::string& path, mode_t mode) {
  throw InputError(path, 0,
                   std::string(file_kind(mode)) +
                       ", not a regular file (inputs are read whole, so "
                       "devices, pipes and directories are refused)");
}

struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_file(const std::string& path, std::uint64_t limit) {
  ReadOptions o;
  o.memory_limit = limit;
  const std::uint64_t cap = memory_limit(o);
  // stat() before open(): opening a FIFO without a writer blocks, and a
  // device like /dev/zero never ends.
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_kind(path, st.st_mode);
  // O_NONBLOCK: should the path become a FIFO after stat(), open() still
  // returns at once, and fstat() below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  const Fd guard{fd};
  if (::fstat(fd, &st) != 0) throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_kind(path, st.st_mode);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > cap)
    throw InputError(path, 0, "file of " + gib(double(size)) + " exceeds the memory limit of " + gib(double(cap)));
  // Read until the end rather than trusting st_size: the file may grow
  // while it is read (bounded by the limit), and /proc files report 0.
  constexpr std::size_t step = 1 << 16;
  std::string text;
  // Room for the whole file and one more read that finds its end, so that a
  // file of the size stat() reported is never copied to grow the buffer.
  text.reserve(static_cast<std::size_t>(size) + step);
  std::size_t chunk = std::max<std::size_t>(static_cast<std::size_t>(size) + 1, step);
  while (true) {
    const std::size_t old = text.size();
    if (old + chunk > cap) throw InputError(path, 0, "file exceeds the memory limit of " + gib(double(cap)));
    text.resize(old + chunk);
    ssize_t got = 0;
    do {
      got = ::read(fd, text.data() + old, chunk);
    } while (got < 0 && errno == EINTR);
    if (got < 0) throw InputError(path, 0, std::string("read error: ") + std::strerror(errno));
    text.resize(old + static_cast<std::size_t>(got));
    if (got == 0) break;
    chunk = step;
  }
  return text;
}

namespace detail {

namespace {

/// An open regular file, for reads at offsets (the checks of read_file).
Fd open_regular(const std::string& path, std::uint64_t& size) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_kind(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  Fd guard{fd};
  if (::fstat(fd, &st) != 0) throw InputError(path, 0, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_kind(path, st.st_mode);
  size = static_cast<std::uint64_t>(st.st_size);
  return guard;
}

/// Up to `length` bytes at `offset` (fewer at the end of the file).
std::string pread_all(const Fd& f, const std::string& path, std::uint64_t offset, std::uint64_t length) {
  std::string out(static_cast<std::size_t>(length), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::pread(f.fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path, 0, std::string("read error: ") + std::strerror(errno));
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  out.resize(done);
  return out;
}

}  // namespace

std::uint64_t file_size(const std::string& path) {
  std::uint64_t size = 0;
  (void)open_regular(path, size);
  return size;
}

TextHeader read_text_header(const std::string& path, Format format, const ReadOptions& opt) {
  std::uint64_t size = 0;
  const Fd f = open_regular(path, size);
  // Twice as much each round: a header (or the format's detection sample)
  // that needs k bytes costs O(k) reads.
  for (std::uint64_t want = std::uint64_t(1) << 16;; want *= 2) {
    const bool whole = want >= size;
    if (!whole && want > memory_limit_or_physical(opt.memory_limit))
      throw InputError(path, 0, "no end of the header within the memory limit");
    std::string prefix = pread_all(f, path, 0, whole ? size : want + 1);
    if (whole || prefix.size() < want + 1) return *parse_text_header(prefix, prefix.size(), path, format, opt);
    // Cut at the last line boundary; the byte after it tells a CRLF apart.
    std::size_t cut = prefix.size() - 1;
    while (cut > 0 && !range_start(prefix, cut)) --cut;
    prefix.resize(cut);
    if (auto h = parse_text_header(prefix, size, path, format, opt)) return *h;
  }
}

std::uint64_t next_range_start(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  if (offset == 0 || offset >= size) return std::min(offset, size);
  std::uint64_t ignored = 0;
  const Fd f = open_regular(path, ignored);
  constexpr std::uint64_t window = std::uint64_t(1) << 16;
  // range_start() at p looks at bytes p - 1 and p.
  for (std::uint64_t at = offset - 1; at < size; at += window) {
    const std::string w = pread_all(f, path, at, window + 1);
    for (std::size_t k = 1; k < w.size(); ++k)
      if (range_start(w, k)) return at + k;
    if (w.size() <= window) break;
  }
  return size;
}

std::string read_range(const std::string& path, std::uint64_t offset, std::uint64_t length,
                       std::uint64_t memory_limit) {
  const std::uint64_t cap = memory_limit_or_physical(memory_limit);
  if (length > cap)
    throw InputError(path, 0, "a range of " + gib(double(length)) + " exceeds the memory limit of " + gib(double(cap)));
  std::uint64_t ignored = 0;
  const Fd f = open_regular(path, ignored);
  std::string out = pread_all(f, path, offset, length);
  if (out.size() != length) throw InputError(path, 0, "the file shrank while it was read");
  return out;
}

}  // namespace detail

template <class T>
CooMatrix<T> read_matrix_market(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  return parse_matrix_market<T>(read_file(path, opt.memory_limit), path, opt, info);
}
template <class T>
CooMatrix<T> read_edges(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  return parse_edges<T>(read_file(path, opt.memory_limit), path, opt, info);
}
template <class T>
RatingData<T> read_ratings(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  return parse_ratings<T>(read_file(path, opt.memory_limit), path, opt, info);
}
template <class T>
CooMatrix<T> read_bmf(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  return parse_bmf<T>(read_file(path, opt.memory_limit), path, opt, info);
}
template <class T>
CooMatrix<T> read_dense(const std::string& path, const ReadOptions& opt, ReadInfo* info) {
  return parse_dense<T>(read_file(path, opt.memory_limit), path, opt, info);
}
template <class T>
CooMatrix<T> read_matrix(const std::string& path, Format format, const ReadOptions& opt, ReadInfo* info) {
  const std::string text = read_file(path, opt.memory_limit);
  if (format == Format::automatic) format = detect_format(text, path);
  return parse_matrix<T>(text, path, format, opt, info);
}

template <class T>
CooStats coo_stats(const CooMatrix<T>& A) {
  CooStats s;
  const std::size_t nnz = A.nnz();
  for (std::size_t e = 0; e < nnz; ++e) {
    const double v = A.values.empty() ? 1.0 : static_cast<double>(A.values[e]);
    if (e == 0) s.min_value = s.max_value = v;
    s.min_value = std::min(s.min_value, v);
    s.max_value = std::max(s.max_value, v);
    if (v < 0) ++s.negatives;
    if (v == 0) ++s.zeros;
  }
  // Distinct rows and columns by sorting copies (no bitmap of the full
  // dimension, which a header may make 2^31 long).
  auto distinct = [](std::vector<ordinal_t> v) {
    std::sort(v.begin(), v.end());
    return static_cast<std::int64_t>(std::unique(v.begin(), v.end()) - v.begin());
  };
  s.empty_rows = A.num_rows - distinct(A.rows);
  s.empty_cols = A.num_cols - distinct(A.cols);
  const double cells = static_cast<double>(A.num_rows) * static_cast<double>(A.num_cols);
  s.density = cells > 0 ? static_cast<double>(nnz) / cells : 0.0;
  return s;
}

#define KFACTOR_IO_INSTANTIATE(T)                                                                                     \
  template CooMatrix<T> parse_matrix_market<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);  \
  template CooMatrix<T> parse_edges<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);          \
  template RatingData<T> parse_ratings<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);       \
  template CooMatrix<T> parse_bmf<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);            \
  template CooMatrix<T> parse_dense<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);          \
  template CooMatrix<T> parse_matrix<T>(std::string_view, const std::string&, Format, const ReadOptions&, ReadInfo*); \
  template CooMatrix<T> read_matrix_market<T>(const std::string&, const ReadOptions&, ReadInfo*);                     \
  template CooMatrix<T> read_edges<T>(const std::string&, const ReadOptions&, ReadInfo*);                             \
  template RatingData<T> read_ratings<T>(const std::string&, const ReadOptions&, ReadInfo*);                          \
  template CooMatrix<T> read_bmf<T>(const std::string&, const ReadOptions&, ReadInfo*);                               \
  template CooMatrix<T> read_dense<T>(const std::string&, const ReadOptions&, ReadInfo*);                             \
  template CooMatrix<T> read_matrix<T>(const std::string&, Format, const ReadOptions&, ReadInfo*);                    \
  template CooStats coo_stats<T>(const CooMatrix<T>&);
KFACTOR_IO_INSTANTIATE(float)
KFACTOR_IO_INSTANTIATE(double)

}  // namespace kfactor::io
