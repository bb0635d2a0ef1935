// The readers of include/kfactor/io/read.hpp. Host code only (no Kokkos
// calls), so the fuzz targets can compile this file on its own.
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
  throw UsageError("unknown input format '" + std::string(name) + "' (expected auto|mm|edges|ratings|bmf|dense)");
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::automatic: return "auto";
    case Format::matrix_market: return "mm";
    case Format::edges: return "edges";
    case Format::ratings: return "ratings";
    case Format::bmf: return "bmf";
    case Format::dense: return "dense";
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

/// Triplets as read, with the line each came from.
struct Entries {
  std::vector<ordinal_t> rows, cols;
  std::vector<double> vals;
  std::vector<std::int64_t> lines;
  void reserve(std::size_t n) {
    rows.reserve(n);
    cols.reserve(n);
    vals.reserve(n);
    lines.reserve(n);
  }
  void add(std::int64_t i, std::int64_t j, double v, std::int64_t line) {
    rows.push_back(static_cast<ordinal_t>(i));
    cols.push_back(static_cast<ordinal_t>(j));
    vals.push_back(v);
    lines.push_back(line);
  }
  [[nodiscard]] std::size_t size() const { return rows.size(); }
};

/// How finalize() shows an index in a message: with the file's base, or as
/// the original id of a remapped ratings file.
struct IndexDisplay {
  std::int64_t base = 0;
  const std::vector<std::int64_t>* row_ids = nullptr;
  const std::vector<std::int64_t>* col_ids = nullptr;
  [[nodiscard]] std::string pair(ordinal_t i, ordinal_t j) const {
    const auto r = row_ids ? (*row_ids)[static_cast<std::size_t>(i)] : i + base;
    const auto c = col_ids ? (*col_ids)[static_cast<std::size_t>(j)] : j + base;
    return "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
  }
};

/// Sorts by (row, col, file order), applies the duplicate policy and converts
/// to T. `pattern`: the values are all 1 and duplicates merge by default.
template <class T>
CooMatrix<T> finalize(const Context& ctx, Entries& e, std::int64_t m, std::int64_t n, bool pattern,
                      const ReadOptions& opt, ReadInfo* info, const IndexDisplay& show_index) {
  const std::size_t nnz = e.size();
  if (opt.non_negative)
    for (std::size_t k = 0; k < nnz; ++k)
      if (e.vals[k] < 0)
        ctx.fail(e.lines[k], "negative value " + num(e.vals[k]) + " at " + show_index.pair(e.rows[k], e.cols[k]) +
                                 " (this input must be non-negative)");
  const auto ncols = static_cast<std::uint64_t>(n);
  auto key = [&](std::size_t k) {
    return static_cast<std::uint64_t>(e.rows[k]) * ncols + static_cast<std::uint64_t>(e.cols[k]);
  };
  std::vector<std::size_t> order(nnz);
  for (std::size_t k = 0; k < nnz; ++k) order[k] = k;
  bool sorted = true;
  for (std::size_t k = 1; k < nnz && sorted; ++k) sorted = key(k - 1) < key(k);
  if (!sorted) {
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
  std::int64_t duplicates = 0;
  for (std::size_t s = 0; s < nnz;) {
    const std::size_t first = order[s];
    double v = pattern ? 1.0 : e.vals[first];
    std::size_t t = s + 1;
    for (; t < nnz && key(order[t]) == key(first); ++t) {
      const std::size_t dup = order[t];
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
    s = t;
  }
  if (info) {
    info->duplicates = duplicates;
    info->pattern = pattern;
  }
  return out;
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

/// Printable text (tabs and UTF-8 allowed): what a header line may hold.
bool is_text(std::string_view line) {
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t') return false;
    if (u == 0x7f) return false;
  }
  return true;
}

/// The rating lines of a ratings text, split into fields: the separator
/// ("::", "," or whitespace) is the first data line's, and a first data line
/// of text is a header, skipped. Shared by parse_ratings and rating_line, so
/// that both see the same lines.
class RatingLines {
 public:
  explicit RatingLines(std::string_view text) : lines_(text) {}
  /// The next rating line's fields; false at the end.
  bool next(Fields& f) {
    std::string_view line;
    while (next_data_line(lines_, line, "#")) {
      if (first_) {
        if (line.find("::") != std::string_view::npos)
          sep_ = "::";
        else if (line.find(',') != std::string_view::npos)
          sep_ = ",";
      }
      f = sep_.empty() ? detail::split_ws(line) : detail::split_sep(line, sep_);
      if (first_) {
        first_ = false;
        if (f.n > 0 && !detail::is_number(f[0]) && is_text(line)) {
          header_ = true;
          continue;
        }
      }
      return true;
    }
    return false;
  }
  /// 1-based number of the line last returned.
  [[nodiscard]] std::int64_t number() const { return lines_.number(); }
  [[nodiscard]] const std::string& separator() const { return sep_; }  ///< empty: whitespace
  [[nodiscard]] bool header() const { return header_; }

 private:
  Lines lines_;
  std::string sep_;
  bool first_ = true, header_ = false;
};

// ---- Matrix Market -----------------------------------------------------------

enum class Symmetry { general, symmetric, skew };

}  // namespace

template <class T>
CooMatrix<T> parse_matrix_market(std::string_view text, const std::string& name, const ReadOptions& opt,
                                 ReadInfo* info) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  if (!lines.next(line) || (detail::trim(line).empty() && lines.remaining() == 0))
    ctx.fail(1, "empty file; expected a '%%MatrixMarket matrix ...' header");
  const Fields h = detail::split_ws(line);
  if (h.n == 0 || !detail::iequals(h[0], "%%MatrixMarket"))
    ctx.fail(1, "not a Matrix Market file: the first line must start with %%MatrixMarket, found " +
                    show(detail::trim(line)));
  if (h.n != 5)
    ctx.fail(1,
             "the header needs 5 fields '%%MatrixMarket matrix coordinate|array real|integer|pattern "
             "general|symmetric|skew-symmetric', found " +
                 std::to_string(h.n));
  if (!detail::iequals(h[1], "matrix")) ctx.fail(1, "unsupported Matrix Market object " + show(h[1]));
  bool coordinate = false;
  if (detail::iequals(h[2], "coordinate"))
    coordinate = true;
  else if (!detail::iequals(h[2], "array"))
    ctx.fail(1, "unknown Matrix Market format " + show(h[2]) + " (expected coordinate or array)");
  bool pattern = false, integer = false;
  if (detail::iequals(h[3], "pattern"))
    pattern = true;
  else if (detail::iequals(h[3], "integer"))
    integer = true;
  else if (!detail::iequals(h[3], "real") && !detail::iequals(h[3], "double"))
    ctx.fail(1, "unsupported Matrix Market field " + show(h[3]) + " (expected real, integer or pattern)");
  Symmetry sym = Symmetry::general;
  if (detail::iequals(h[4], "symmetric"))
    sym = Symmetry::symmetric;
  else if (detail::iequals(h[4], "skew-symmetric"))
    sym = Symmetry::skew;
  else if (!detail::iequals(h[4], "general"))
    ctx.fail(1,
             "unsupported Matrix Market symmetry " + show(h[4]) + " (expected general, symmetric or skew-symmetric)");
  if (pattern && !coordinate) ctx.fail(1, "a pattern matrix must use the coordinate format");
  if (pattern && sym == Symmetry::skew) ctx.fail(1, "a pattern matrix cannot be skew-symmetric");

  if (!next_data_line(lines, line, "%"))
    ctx.fail(lines.number(), "file ends before the size line ('rows cols nnz' or 'rows cols')");
  const std::int64_t size_line = lines.number();
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
  if (sym != Symmetry::general && m != n)
    ctx.fail(size_line,
             "a symmetric matrix must be square, the header says " + std::to_string(m) + " x " + std::to_string(n));
  const auto um = static_cast<std::uint64_t>(m), un = static_cast<std::uint64_t>(n);
  const std::uint64_t capacity = sym == Symmetry::general     ? um * un
                                 : sym == Symmetry::symmetric ? un * (un + 1) / 2
                                                              : (un == 0 ? 0 : un * (un - 1) / 2);
  const std::string cap_what = std::to_string(m) + " x " + std::to_string(n) +
                               (sym == Symmetry::general ? " matrix" : " matrix stored as a triangle");
  std::string detail = std::string(coordinate ? "coordinate " : "array ") +
                       (pattern   ? "pattern"
                        : integer ? "integer"
                                  : "real") +
                       " " +
                       (sym == Symmetry::general     ? "general"
                        : sym == Symmetry::symmetric ? "symmetric"
                                                     : "skew-symmetric");

  const double sign = sym == Symmetry::skew ? -1.0 : 1.0;
  Entries e;
  std::int64_t count = 0;
  auto value_of = [&](std::int64_t ln, std::string_view t) -> double {
    const double v = integer ? static_cast<double>(ctx.integer(ln, t, "value")) : ctx.real(ln, t, "value");
    (void)to_value<T>(ctx, ln, v);
    return v;
  };

  if (coordinate) {
    const std::int64_t nnz = ctx.integer(size_line, s[2], "entry count");
    const std::size_t fit = check_claim(ctx, size_line, m, n, nnz, capacity, cap_what, lines.remaining(),
                                        pattern ? 4 : 6, text.size(), opt);
    e.reserve(fit * (sym == Symmetry::general ? 1 : 2));
    auto index = [&](std::int64_t ln, std::string_view t, std::int64_t bound, const char* what) {
      const std::int64_t i = ctx.integer(ln, t, what);
      if (i == 0) ctx.fail(ln, std::string(what) + " 0: Matrix Market indices are 1-based");
      if (i < 0) ctx.fail(ln, std::string("negative ") + what + " " + std::to_string(i));
      if (i > bound)
        ctx.fail(ln, std::string(what) + " " + std::to_string(i) + " out of range 1.." + std::to_string(bound));
      return i - 1;
    };
    const int fields = pattern ? 2 : 3;
    while (lines.next(line)) {
      if (detail::skip_line(line, "%")) continue;
      const std::int64_t ln = lines.number();
      const Fields f = detail::split_ws(line);
      if (count == nnz)
        ctx.fail(ln, "more entries than the " + std::to_string(nnz) + " the size line (line " +
                         std::to_string(size_line) + ") declares");
      if (f.n != fields)
        ctx.fail(ln, std::string("expected ") + (pattern ? "2 fields 'row col'" : "3 fields 'row col value'") +
                         ", found " + std::to_string(f.n));
      const std::int64_t i = index(ln, f[0], m, "row index");
      const std::int64_t j = index(ln, f[1], n, "column index");
      const double v = pattern ? 1.0 : value_of(ln, f[2]);
      if (sym == Symmetry::skew && i == j) ctx.fail(ln, "diagonal entry in a skew-symmetric matrix");
      e.add(i, j, v, ln);
      if (sym != Symmetry::general && i != j) e.add(j, i, sign * v, ln);
      ++count;
    }
    if (count < nnz)
      ctx.fail(lines.number(), "file ends after " + std::to_string(count) + " of the " + std::to_string(nnz) +
                                   " entries the size line (line " + std::to_string(size_line) + ") declares");
  } else {
    (void)check_claim(ctx, size_line, m, n, static_cast<std::int64_t>(capacity), capacity, cap_what, lines.remaining(),
                      2, text.size(), opt);
    // Column-major cursor over the stored part: all of it, the lower
    // triangle (symmetric) or the strictly lower triangle (skew).
    std::int64_t ci = sym == Symmetry::skew ? 1 : 0, cj = 0;
    const auto total = static_cast<std::int64_t>(capacity);
    while (lines.next(line)) {
      if (detail::skip_line(line, "%")) continue;
      const std::int64_t ln = lines.number();
      detail::for_each_token(line, [&](std::string_view t) {
        if (count == total)
          ctx.fail(ln, "more values than the " + std::to_string(total) + " the size line (line " +
                           std::to_string(size_line) + ") declares");
        const double v = value_of(ln, t);
        if (v != 0.0 || opt.keep_zeros) {
          e.add(ci, cj, v, ln);
          if (sym != Symmetry::general && ci != cj) e.add(cj, ci, sign * v, ln);
        }
        ++count;
        if (++ci == m) {
          ++cj;
          ci = sym == Symmetry::general ? 0 : sym == Symmetry::symmetric ? cj : cj + 1;
        }
      });
    }
    if (count < total)
      ctx.fail(lines.number(), "file ends after " + std::to_string(count) + " of the " + std::to_string(total) +
                                   " values the size line (line " + std::to_string(size_line) + ") declares");
  }
  set_info(info, Format::matrix_market, detail, lines.number(), count);
  return finalize<T>(ctx, e, m, n, pattern, opt, info, IndexDisplay{1});
}

// ---- edge lists ----------------------------------------------------------------

template <class T>
CooMatrix<T> parse_edges(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  Entries e;
  int fields = 0;
  bool first = true;
  std::optional<std::int64_t> header_count;
  std::int64_t header_line = 0;
  std::int64_t max_u = -1, max_v = -1, count = 0;
  std::int64_t max_id_line = 0;  // the line of the largest id (it sets the shape)
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
  while (next_data_line(lines, line, "#%")) {
    const std::int64_t ln = lines.number();
    const Fields f = detail::split_ws(line);
    if (first && f.n == 1) {
      first = false;
      const std::int64_t c = ctx.integer(ln, f[0], "count line");
      if (c < 0) ctx.fail(ln, "negative count " + std::to_string(c));
      header_count = c;
      header_line = ln;
      continue;
    }
    first = false;
    if (f.n < 2 || f.n > 3)
      ctx.fail(ln, "expected 2 fields 'u v' or 3 fields 'u v weight', found " + std::to_string(f.n));
    if (fields == 0) fields = f.n;
    if (f.n != fields)
      ctx.fail(ln, "found " + std::to_string(f.n) + " fields but the first edge has " + std::to_string(fields));
    const std::int64_t u = id(ln, f[0], "source id");
    const std::int64_t v = id(ln, f[1], "target id");
    double w = 1.0;
    if (fields == 3) {
      w = ctx.real(ln, f[2], "weight");
      (void)to_value<T>(ctx, ln, w);
    }
    if (std::max(u, v) > std::max(max_u, max_v)) max_id_line = ln;
    max_u = std::max(max_u, u);
    max_v = std::max(max_v, v);
    e.add(u, v, w, ln);
    if (opt.symmetrize && u != v) e.add(v, u, w, ln);
    ++count;
  }
  if (count == 0) ctx.fail(lines.number(), header_count ? "no edges after the count line" : "no edges (empty file)");
  const std::int64_t nodes = std::max(max_u, max_v) + 1;
  if (header_count && *header_count != count && *header_count > max_dim)
    ctx.fail(header_line, "the count line says " + std::to_string(*header_count) + ": not the " +
                              std::to_string(count) + " edges of the file, and more nodes than 32-bit ids allow");
  if (header_count && *header_count != count && *header_count < nodes)
    ctx.fail(header_line, "the count line says " + std::to_string(*header_count) + " but the file has " +
                              std::to_string(count) + " edges and " + std::to_string(nodes) + " nodes (ids up to " +
                              std::to_string(nodes - 1 + base) + ", line " + std::to_string(max_id_line) +
                              "); a leading count must be the edge count or a node count at least that large");
  std::int64_t m = max_u + 1, n = max_v + 1;
  if (opt.square || opt.symmetrize) m = n = std::max(m, n);
  check_memory(
      ctx, max_id_line, m, n, e.size(), text.size(), opt,
      "id " + std::to_string(nodes - 1 + base) + " makes the matrix " + std::to_string(m) + " x " + std::to_string(n));
  set_info(info, Format::edges,
           std::string(fields == 3 ? "weighted" : "unweighted") + (header_count ? ", leading count line" : "") +
               (opt.symmetrize ? ", symmetrized" : ""),
           lines.number(), count);
  if (info) info->header_count = header_count;
  return finalize<T>(ctx, e, m, n, fields == 2, opt, info, IndexDisplay{base});
}

// ---- ratings -------------------------------------------------------------------

template <class T>
RatingData<T> parse_ratings(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{name};
  RatingLines lines(text);
  Fields f;
  int fields = 0;
  std::vector<std::int64_t> users, items;
  std::vector<double> vals;
  std::vector<std::int64_t> where;
  while (lines.next(f)) {
    const std::int64_t ln = lines.number();
    const std::string& sep = lines.separator();
    if (f.n < 2 || f.n > 4)
      ctx.fail(ln, "expected 'user item rating [timestamp]' (2 to 4 fields), found " + std::to_string(f.n) + " fields" +
                       (sep.empty() ? "" : " separated by '" + sep + "'"));
    if (fields == 0) fields = f.n;
    if (f.n != fields)
      ctx.fail(ln, "found " + std::to_string(f.n) + " fields but the first rating has " + std::to_string(fields));
    for (int k = 0; k < f.n; ++k)
      if (f[k].empty()) ctx.fail(ln, "empty field " + std::to_string(k + 1));
    users.push_back(ctx.integer(ln, f[0], "user id"));
    items.push_back(ctx.integer(ln, f[1], "item id"));
    double r = 1.0;
    if (fields >= 3) {
      r = ctx.real(ln, f[2], "rating");
      (void)to_value<T>(ctx, ln, r);
    }
    if (fields == 4) (void)ctx.real(ln, f[3], "timestamp");
    vals.push_back(r);
    where.push_back(ln);
  }
  const bool header = lines.header();
  if (users.empty()) ctx.fail(lines.number(), header ? "no ratings after the header" : "no ratings (empty file)");

  RatingData<T> out;
  auto ids = [&](const std::vector<std::int64_t>& raw, const char* what) {
    std::vector<std::int64_t> u(raw);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    if (static_cast<std::int64_t>(u.size()) > max_dim)
      ctx.fail(lines.number(), std::string("more than 2^31-1 distinct ") + what + " ids");
    return u;
  };
  out.user_ids = ids(users, "user");
  out.item_ids = ids(items, "item");
  Entries e;
  e.reserve(users.size());
  auto pos = [](const std::vector<std::int64_t>& sorted, std::int64_t id) {
    return static_cast<std::int64_t>(std::lower_bound(sorted.begin(), sorted.end(), id) - sorted.begin());
  };
  for (std::size_t k = 0; k < users.size(); ++k)
    e.add(pos(out.user_ids, users[k]), pos(out.item_ids, items[k]), vals[k], where[k]);
  const auto count = static_cast<std::int64_t>(users.size());
  // Free the raw columns before finalize allocates its own.
  std::vector<std::int64_t>().swap(users);
  std::vector<std::int64_t>().swap(items);
  std::vector<double>().swap(vals);
  std::vector<std::int64_t>().swap(where);
  const std::string sep_name = lines.separator().empty() ? "whitespace" : "'" + lines.separator() + "'";
  set_info(
      info, Format::ratings,
      "ratings, " + sep_name + " separated, " + std::to_string(fields) + " fields" + (header ? ", header line" : ""),
      lines.number(), count);
  out.matrix = finalize<T>(ctx, e, static_cast<std::int64_t>(out.user_ids.size()),
                           static_cast<std::int64_t>(out.item_ids.size()), fields == 2, opt, info,
                           IndexDisplay{0, &out.user_ids, &out.item_ids});
  return out;
}

std::int64_t rating_line(std::string_view text, std::int64_t user, std::int64_t item) {
  RatingLines lines(text);
  Fields f;
  std::int64_t u = 0, i = 0;
  while (lines.next(f))
    if (f.n >= 2 && detail::try_int(f[0], u) && detail::try_int(f[1], i) && u == user && i == item)
      return lines.number();
  return 0;
}

// ---- CuBin Boolean format ------------------------------------------------------

template <class T>
CooMatrix<T> parse_bmf(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  if (!next_data_line(lines, line, "#%")) ctx.fail(lines.number(), "empty file; expected a header 'rows cols nnz'");
  const std::int64_t hl = lines.number();
  const Fields h = detail::split_ws(line);
  if (h.n != 3) ctx.fail(hl, "the header needs 3 fields 'rows cols nnz', found " + std::to_string(h.n));
  const std::int64_t m = ctx.integer(hl, h[0], "row count");
  const std::int64_t n = ctx.integer(hl, h[1], "column count");
  const std::int64_t nnz = ctx.integer(hl, h[2], "entry count");
  check_dim(ctx, hl, m, "row count");
  check_dim(ctx, hl, n, "column count");
  const std::size_t fit =
      check_claim(ctx, hl, m, n, nnz, static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(n),
                  std::to_string(m) + " x " + std::to_string(n) + " matrix", lines.remaining(), 4, text.size(), opt);
  Entries e;
  e.reserve(fit);
  std::int64_t count = 0;
  auto index = [&](std::int64_t ln, std::string_view t, std::int64_t bound, const char* what) {
    const std::int64_t i = ctx.integer(ln, t, what);
    if (i < 0) ctx.fail(ln, std::string("negative ") + what + " " + std::to_string(i));
    if (i >= bound)
      ctx.fail(ln, std::string(what) + " " + std::to_string(i) + " out of range 0.." + std::to_string(bound - 1) +
                       (i == bound ? " (indices are 0-based)" : ""));
    return i;
  };
  while (next_data_line(lines, line, "#%")) {
    const std::int64_t ln = lines.number();
    const Fields f = detail::split_ws(line);
    if (count == nnz)
      ctx.fail(ln, "more entries than the " + std::to_string(nnz) + " the header (line " + std::to_string(hl) +
                       ") declares");
    if (f.n != 2) ctx.fail(ln, "expected 2 fields 'row col', found " + std::to_string(f.n));
    const std::int64_t i = index(ln, f[0], m, "row index");
    const std::int64_t j = index(ln, f[1], n, "column index");
    e.add(i, j, 1.0, ln);
    ++count;
  }
  if (count < nnz)
    ctx.fail(lines.number(), "file ends after " + std::to_string(count) + " of the " + std::to_string(nnz) +
                                 " entries the header (line " + std::to_string(hl) + ") declares");
  set_info(info, Format::bmf, "Boolean 'rows cols nnz' + 0-based pairs", lines.number(), count);
  return finalize<T>(ctx, e, m, n, true, opt, info, IndexDisplay{0});
}

// ---- dense text ------------------------------------------------------------------

template <class T>
CooMatrix<T> parse_dense(std::string_view text, const std::string& name, const ReadOptions& opt, ReadInfo* info) {
  const Context ctx{name};
  Lines lines(text);
  std::string_view line;
  Entries e;
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
  return finalize<T>(ctx, e, rows, cols, false, opt, info, IndexDisplay{0});
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
  ~Fd() { ::close(fd); }
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
