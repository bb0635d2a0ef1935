#pragma once
/// \file
/// The allowed values of a numeric option, declared once beside the option:
/// the library's Options::validate() checks the field against its Range, and
/// the `kfactor` command line checks the option that sets the field against
/// the same Range (and lists it in --help and --help-options-json).

#include <kfactor/core/error.hpp>

#include <charconv>
#include <limits>
#include <string>
#include <type_traits>

namespace kfactor {

/// `v` as messages print it: integers in full, reals in their shortest form
/// that reads back exactly ("1e+300", "0.001", "2", "nan", "inf"), never
/// hundreds of digits.
template <class T>
std::string number_text(T v) {
  static_assert(std::is_arithmetic_v<T>);
  if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v));
    return std::string(buf, r.ptr);
  }
}

/// An interval of allowed values, closed or open at either end. NaN lies in
/// no Range. Aggregate: declare one with designated initializers,
/// `Range<double>{.lo = 0, .hi = 1, .hi_open = true, .note = "0: off"}`.
template <class T>
struct Range {
  static_assert(std::is_arithmetic_v<T>);
  T lo = std::numeric_limits<T>::lowest();  ///< lower bound
  T hi = std::numeric_limits<T>::max();     ///< upper bound
  bool lo_open = false;                     ///< lo itself is excluded
  bool hi_open = false;                     ///< hi itself is excluded
  /// What special values of the range mean ("0: automatic"); "" if none.
  const char* note = "";

  /// Whether `v` lies in the range (never for NaN).
  [[nodiscard]] constexpr bool contains(T v) const {
    return (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  }

  /// Whether lo (hi) is the type's own limit, so that only the other bound
  /// restricts (an unsigned type's 0 still counts as a bound: it is the one
  /// a negative value misses).
  [[nodiscard]] constexpr bool unbounded_below() const {
    return std::is_signed_v<T> && lo == std::numeric_limits<T>::lowest() && !lo_open;
  }
  [[nodiscard]] constexpr bool unbounded_above() const { return hi == std::numeric_limits<T>::max() && !hi_open; }

  /// The interval as messages print it: "[0, 1)", "(0, 1e+06]", "[1, 1024]";
  /// a bound at the type's limit is left out ("> 0", ">= 1", "<= 5", "any").
  /// Without the note.
  [[nodiscard]] std::string interval() const {
    if (unbounded_below() && unbounded_above()) return "any";
    if (unbounded_above()) return (lo_open ? "> " : ">= ") + number_text(lo);
    if (unbounded_below()) return (hi_open ? "< " : "<= ") + number_text(hi);
    return (lo_open ? "(" : "[") + number_text(lo) + ", " + number_text(hi) + (hi_open ? ")" : "]");
  }

  /// What a value must be, as messages print it: "must be in [0, 1) (0:
  /// off)", "must be an integer in [1, 1024]", "must be an integer >= 1",
  /// "must be a finite number".
  [[nodiscard]] std::string requirement() const {
    std::string s = "must be ";
    if (unbounded_below() && unbounded_above())
      s += std::is_integral_v<T> ? "an integer" : "a finite number";
    else if (unbounded_below() || unbounded_above())
      s += (std::is_integral_v<T> ? "an integer " : "") + interval();
    else
      s += (std::is_integral_v<T> ? "an integer in " : "in ") + interval();
    if (note[0] != '\0') s += std::string(" (") + note + ")";
    return s;
  }
};

/// Throws UsageError "`who`: `name` must be in RANGE (note), got V" unless
/// `range` contains `v`; `who` names the solver ("nmf") and may be empty.
template <class T>
void check_range(const std::string& who, const std::string& name, T v, const Range<T>& range) {
  if (range.contains(v)) return;
  throw UsageError((who.empty() ? std::string() : who + ": ") + name + " " + range.requirement() + ", got " +
                   number_text(v));
}

}  // namespace kfactor
