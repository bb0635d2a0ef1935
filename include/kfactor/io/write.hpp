#pragma once
/// \file
/// Writers: Matrix Market coordinate (from CooMatrix or CsrMatrix in any
/// memory space), Matrix Market array (a dense row-major factor), and a CSV
/// factor file `id,f0,f1,...` that carries original ids (e.g. the user and
/// item ids a RatingData kept).
///
/// Numbers are written with std::to_chars' shortest round-trip form, so
/// reading a written file gives back bit-identical values of the same T.
/// Failures to open or write throw kfactor::RuntimeFailure naming the path.
/// Every Matrix Market file gets a `%` comment line (`comment`, default
/// "written by kfactor"; a multi-line comment becomes several `%` lines).

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::io {

namespace detail {

/// Buffered text output with checked close (RuntimeFailure on any error).
class TextWriter {
 public:
  explicit TextWriter(const std::string& path);
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;
  ~TextWriter();
  void put(std::string_view s);
  void put(char c);
  void put_int(std::int64_t v);
  void put_real(double v);
  void put_real(float v);
  /// `% line` for each line of `comment` (or "% written by kfactor").
  void put_comment(const std::string& comment);
  /// Flushes and closes; throws RuntimeFailure if anything failed.
  void close();

 private:
  void flush();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
};

}  // namespace detail

/// `%%MatrixMarket matrix coordinate real general`, 1-based, in the order of
/// the triplets.
template <class T>
void write_matrix_market(const std::string& path, const CooMatrix<T>& A, const std::string& comment = {}) {
  detail::TextWriter w(path);
  w.put("%%MatrixMarket matrix coordinate real general\n");
  w.put_comment(comment);
  w.put_int(A.num_rows);
  w.put(' ');
  w.put_int(A.num_cols);
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(A.nnz()));
  w.put('\n');
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    w.put_int(std::int64_t(A.rows[e]) + 1);
    w.put(' ');
    w.put_int(std::int64_t(A.cols[e]) + 1);
    w.put(' ');
    w.put_real(A.values.empty() ? T(1) : A.values[e]);
    w.put('\n');
  }
  w.close();
}

/// CSR in any memory space (copied to the host first), row by row.
template <class T, class MemorySpace>
void write_matrix_market(const std::string& path, const CsrMatrix<T, MemorySpace>& A, const std::string& comment = {}) {
  const auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.row_map);
  const auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.entries);
  const auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  const std::int64_t m = A.num_rows();
  detail::TextWriter w(path);
  w.put("%%MatrixMarket matrix coordinate real general\n");
  w.put_comment(comment);
  w.put_int(m);
  w.put(' ');
  w.put_int(A.num_cols);
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(entries.extent(0)));
  w.put('\n');
  for (std::int64_t i = 0; i < m; ++i)
    for (auto e = row_map(i); e < row_map(i + 1); ++e) {
      w.put_int(i + 1);
      w.put(' ');
      w.put_int(std::int64_t(entries(e)) + 1);
      w.put(' ');
      w.put_real(values.extent(0) == entries.extent(0) ? values(e) : T(1));
      w.put('\n');
    }
  w.close();
}

/// `%%MatrixMarket matrix array real general` of a rank-2 View (any layout or
/// memory space; values go out column-major as the format requires).
template <class T, class... P>
void write_matrix_market_array(const std::string& path, const Kokkos::View<T**, P...>& A,
                               const std::string& comment = {}) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  detail::TextWriter w(path);
  w.put("%%MatrixMarket matrix array real general\n");
  w.put_comment(comment);
  w.put_int(static_cast<std::int64_t>(h.extent(0)));
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(h.extent(1)));
  w.put('\n');
  for (std::size_t j = 0; j < h.extent(1); ++j)
    for (std::size_t i = 0; i < h.extent(0); ++i) {
      w.put_real(h(i, j));
      w.put('\n');
    }
  w.close();
}

/// A dense factor as CSV: header `id,f0,f1,...,f{K-1}`, then one line per
/// row `id,v0,v1,...`; `ids[r]` is row r's original id (empty: r itself).
/// Throws UsageError if ids is non-empty and its size is not the row count.
template <class T, class... P>
void write_factor_csv(const std::string& path, const Kokkos::View<T**, P...>& F,
                      const std::vector<std::int64_t>& ids = {}) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), F);
  if (!ids.empty() && ids.size() != h.extent(0))
    throw UsageError("write_factor_csv: " + std::to_string(ids.size()) + " ids for a factor with " +
                     std::to_string(h.extent(0)) + " rows");
  detail::TextWriter w(path);
  w.put("id");
  for (std::size_t k = 0; k < h.extent(1); ++k) {
    w.put(",f");
    w.put_int(static_cast<std::int64_t>(k));
  }
  w.put('\n');
  for (std::size_t i = 0; i < h.extent(0); ++i) {
    w.put_int(ids.empty() ? static_cast<std::int64_t>(i) : ids[i]);
    for (std::size_t k = 0; k < h.extent(1); ++k) {
      w.put(',');
      w.put_real(h(i, k));
    }
    w.put('\n');
  }
  w.close();
}

/// A factor file chosen by extension: `.csv` -> write_factor_csv (with `ids`),
/// anything else -> write_matrix_market_array (row r is factor row r; the ids,
/// if any, are listed in the comment only when there are at most 64 of them,
/// so pair a large ids vector with a .csv path).
template <class T, class... P>
void write_factor(const std::string& path, const Kokkos::View<T**, P...>& F, const std::vector<std::int64_t>& ids = {},
                  const std::string& comment = {}) {
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? std::string() : path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (ext == "csv") {
    write_factor_csv(path, F, ids);
    return;
  }
  std::string note = comment;
  if (!ids.empty() && ids.size() <= 64) {
    note += note.empty() ? "row ids:" : "\nrow ids:";
    for (const auto id : ids) note += " " + std::to_string(id);
  }
  write_matrix_market_array(path, F, note);
}

}  // namespace kfactor::io
