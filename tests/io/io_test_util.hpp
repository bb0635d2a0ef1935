#pragma once
#include "common/cli.hpp"
// Helpers shared by the io tests.
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include <unistd.h>

namespace kfactor::test {

/// Runs f, expects an InputError whose file() is `name`, whose line() is
/// `line` and whose message contains `text`. line 0: an error about the file
/// as a whole (cannot open, too large), whose message has no line.
template <class F>
void expect_input_error(F&& f, const std::string& name, std::int64_t line, const std::string& text = {}) {
  try {
    f();
    ADD_FAILURE() << "no InputError; expected " << name << ":" << line << ": ..." << text;
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), name) << what;
    EXPECT_EQ(e.line(), line) << what;
    const std::string prefix = line > 0 ? name + ":" + std::to_string(line) + ": " : name + ": ";
    EXPECT_EQ(what.rfind(prefix, 0), 0u) << what;
    if (!text.empty())
      EXPECT_NE(what.find(text), std::string::npos) << "message '" << what << "' lacks '" << text << "'";
  }
}

/// COO as a map (row, col) -> value.
template <class T>
std::map<std::pair<int, int>, double> as_map(const CooMatrix<T>& A) {
  std::map<std::pair<int, int>, double> m;
  for (std::size_t e = 0; e < A.nnz(); ++e) m[{A.rows[e], A.cols[e]}] = static_cast<double>(A.values[e]);
  return m;
}

/// Checks the reader contract: sorted by (row, col), no duplicates, in range,
/// one value per entry.
template <class T>
void expect_canonical(const CooMatrix<T>& A) {
  ASSERT_EQ(A.rows.size(), A.cols.size());
  ASSERT_EQ(A.values.size(), A.rows.size());
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    ASSERT_GE(A.rows[e], 0);
    ASSERT_LT(A.rows[e], A.num_rows);
    ASSERT_GE(A.cols[e], 0);
    ASSERT_LT(A.cols[e], A.num_cols);
    if (e > 0) ASSERT_TRUE(std::pair(A.rows[e - 1], A.cols[e - 1]) < std::pair(A.rows[e], A.cols[e])) << "entry " << e;
  }
}

/// A scratch directory removed at scope exit.

}  // namespace kfactor::test
