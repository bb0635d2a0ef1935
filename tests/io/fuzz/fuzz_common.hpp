#pragma once
// Shared body of the reader fuzz targets: parse a buffer in float and double;
// InputError is the only acceptable failure, and a successful parse must give
// a canonical matrix (sorted, unique, in range). Anything else aborts, which
// libFuzzer reports as a crash.
#include <kfactor/io/read.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace kfactor::fuzz {

template <class T>
void check(const CooMatrix<T>& A) {
  auto die = [](const char* what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  };
  if (A.num_rows < 0 || A.num_cols < 0 || A.num_rows > 2147483647 || A.num_cols > 2147483647) die("shape");
  if (A.cols.size() != A.rows.size() || A.values.size() != A.rows.size()) die("sizes");
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    if (A.rows[e] < 0 || A.rows[e] >= A.num_rows || A.cols[e] < 0 || A.cols[e] >= A.num_cols) die("index range");
    if (e > 0 && !(A.rows[e - 1] < A.rows[e] || (A.rows[e - 1] == A.rows[e] && A.cols[e - 1] < A.cols[e])))
      die("order or duplicate");
    if (!(A.values[e] == A.values[e])) die("NaN value");
  }
}

inline io::ReadOptions options(const std::uint8_t* data, std::size_t size) {
  io::ReadOptions o;
  o.memory_limit = std::uint64_t(1) << 30;
  // Let the last byte pick options so that their paths are fuzzed too.
  const unsigned k = size ? data[size - 1] : 0;
  o.duplicates = static_cast<io::DuplicatePolicy>(k % 4);
  o.square = (k >> 2) & 1;
  o.symmetrize = (k >> 3) & 1;
  o.one_based = (k >> 4) & 1;
  o.keep_zeros = (k >> 5) & 1;
  o.non_negative = (k >> 6) & 1;
  return o;
}

template <class Parse>
int run(const std::uint8_t* data, std::size_t size, Parse&& parse) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto opt = options(data, size);
  try {
    parse(text, opt, double{});
  } catch (const InputError& e) {
    if (e.line() < 1 || e.file() != "fuzz") std::abort();
  }
  try {
    parse(text, opt, float{});
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace kfactor::fuzz
