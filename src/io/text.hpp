#pragma once
// Private helpers of the readers: a line scanner over a memory buffer, field
// splitting, checked number parsing, and error construction. Host only.
#include <kfactor/core/error.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include <sys/resource.h>
#include <unistd.h>

namespace kfactor::io::detail {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

inline std::string_view trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c; }

inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

/// A token as error messages show it: quoted, at most 40 characters,
/// non-printable bytes as \xHH.
inline std::string show(std::string_view t) {
  std::string out = "'";
  const std::size_t n = t.size() < 40 ? t.size() : 40;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (t.size() > n) out += "...";
  return out + "'";
}

/// A number as messages print it: the shortest form that reads back exactly
/// ("1e+300", "0.1", "3"), never hundreds of digits.
inline std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// `limit`, or when it is 0 the default budget of a read: this machine's
/// physical memory, or the process's address-space limit (`ulimit -v`) when
/// that is lower, since an allocation beyond it fails however much memory
/// the machine has.
inline std::uint64_t memory_limit_or_physical(std::uint64_t limit) {
  if (limit) return limit;
  std::uint64_t cap = std::numeric_limits<std::uint64_t>::max();
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) cap = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
  struct rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    cap = std::min<std::uint64_t>(cap, static_cast<std::uint64_t>(as.rlim_cur));
  return cap;
}

/// A byte count as messages print it, in GiB with 3 significant digits.
inline std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

/// Raises InputError(name, line, msg); line 0 becomes 1 so that every
/// message about content names a line.
[[noreturn]] inline void fail(const std::string& name, std::int64_t line, const std::string& msg) {
  throw InputError(name, line > 0 ? line : 1, msg);
}

/// One line at a time from a buffer. A line ends at "\n", "\r\n" or a lone
/// "\r" (classic Mac files: without this, a CR-only file is one long line
/// that a reader may accept as a single row). A UTF-8 byte-order mark at the
/// very start of a file is skipped. A buffer may be a line-aligned range of a
/// file (io/detail/text_ranges.hpp): `at_file_start` says whether it starts
/// at the file's first byte (where a byte-order mark may be), and line
/// numbers continue from the `lines_before` lines that precede it.
class Lines {
 public:
  explicit Lines(std::string_view text, bool at_file_start = true, std::int64_t lines_before = 0)
      : text_(text), no_(lines_before) {
    if (at_file_start && text_.size() >= 3 && text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    find_newline();
  }
  bool next(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    if (nl_ < pos_) find_newline();
    std::size_t end = nl_;
    std::size_t next = nl_ + 1;
    if (const void* cr = std::memchr(text_.data() + pos_, '\r', end - pos_)) {
      const auto at = static_cast<std::size_t>(static_cast<const char*>(cr) - text_.data());
      end = at;
      next = at + 1 == nl_ ? nl_ + 1 : at + 1;  // CRLF is one line end
    }
    line = text_.substr(pos_, end - pos_);
    pos_ = std::min(next, text_.size());
    ++no_;
    return true;
  }
  /// 1-based number of the line last returned (0 before the first).
  [[nodiscard]] std::int64_t number() const { return no_; }
  /// Bytes not yet scanned.
  [[nodiscard]] std::size_t remaining() const { return text_.size() - pos_; }
  /// Offset of the next line's first byte in the buffer.
  [[nodiscard]] std::size_t position() const { return pos_; }

 private:
  // The next '\n' at or after pos_ (text_.size() if none) is remembered, so
  // that a long CR-only file costs one scan for '\n', not one per line.
  void find_newline() {
    const std::size_t nl = text_.find('\n', pos_);
    nl_ = nl == std::string_view::npos ? text_.size() : nl;
  }
  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t nl_ = 0;
  std::int64_t no_ = 0;
};

/// Up to 8 fields of a line; `n` counts all fields (may exceed 8).
struct Fields {
  std::array<std::string_view, 8> f{};
  int n = 0;
  std::string_view operator[](int i) const { return f[static_cast<std::size_t>(i)]; }
  void push(std::string_view t) {
    if (n < static_cast<int>(f.size())) f[static_cast<std::size_t>(n)] = t;
    ++n;
  }
};

/// Calls fn(token) for every whitespace-separated token of `line`.
template <class Fn>
void for_each_token(std::string_view line, Fn&& fn) {
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (true) {
    while (i < n && is_space(line[i])) ++i;
    if (i >= n) return;
    const std::size_t b = i;
    while (i < n && !is_space(line[i])) ++i;
    fn(line.substr(b, i - b));
  }
}

inline Fields split_ws(std::string_view line) {
  Fields out;
  for_each_token(line, [&](std::string_view t) { out.push(t); });
  return out;
}

/// Splits on `sep` (e.g. "," or "::"), trimming blanks around each field.
inline Fields split_sep(std::string_view line, std::string_view sep) {
  Fields out;
  std::size_t b = 0;
  while (true) {
    const std::size_t p = line.find(sep, b);
    if (p == std::string_view::npos) {
      out.push(trim(line.substr(b)));
      return out;
    }
    out.push(trim(line.substr(b, p - b)));
    b = p + sep.size();
  }
}

/// Is the line blank or a comment starting with one of `comment_chars`?
inline bool skip_line(std::string_view line, std::string_view comment_chars) {
  const auto t = trim(line);
  return t.empty() || comment_chars.find(t.front()) != std::string_view::npos;
}

inline std::string_view drop_plus(std::string_view t) {
  if (t.size() > 1 && t[0] == '+' && t[1] != '-' && t[1] != '+') t.remove_prefix(1);
  return t;
}

/// Whole-token integer parse; false if not an integer (or out of int64 range).
inline bool try_int(std::string_view t, std::int64_t& v) {
  t = drop_plus(t);
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

/// Whole-token real parse; false if not a number. May yield NaN/Inf.
inline bool try_real(std::string_view t, double& v) {
  t = drop_plus(t);
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (r.ptr != t.data() + t.size()) return false;
  if (r.ec == std::errc()) return true;
  if (r.ec == std::errc::result_out_of_range) {
    // Overflow gives Inf (rejected by the caller), underflow a tiny or zero value.
    const std::string copy(t);
    v = std::strtod(copy.c_str(), nullptr);
    return true;
  }
  return false;
}

inline bool is_number(std::string_view t) {
  double v;
  return try_real(t, v);
}

/// Checked parsing with file:line errors.
struct Context {
  const std::string& name;

  [[noreturn]] void fail(std::int64_t line, const std::string& msg) const { detail::fail(name, line, msg); }

  std::int64_t integer(std::int64_t line, std::string_view t, const char* what) const {
    std::int64_t v = 0;
    if (try_int(t, v)) return v;
    const std::string_view body = !t.empty() && t[0] == '-' ? t.substr(1) : drop_plus(t);
    bool digits = !body.empty();
    for (char c : body) digits = digits && c >= '0' && c <= '9';
    if (digits) {
      // Its magnitude, not its digits: a 300-digit token prints as 1e+300.
      double d = 0;
      (void)try_real(t, d);
      fail(line, std::string(what) + " " + num(d) + " is out of the 64-bit integer range");
    }
    double d;
    if (try_real(t, d)) {
      if (std::isfinite(d)) fail(line, std::string(what) + " must be an integer, found " + show(t));
      fail(line, std::string(what) + " is NaN or Inf: " + show(t));
    }
    fail(line, std::string(what) + " is not a number: " + show(t));
  }

  double real(std::int64_t line, std::string_view t, const char* what) const {
    double v = 0;
    if (!try_real(t, v)) fail(line, std::string(what) + " is not a number: " + show(t));
    if (!std::isfinite(v)) fail(line, std::string(what) + " is NaN or Inf (or overflows): " + show(t));
    return v;
  }
};

}  // namespace kfactor::io::detail
