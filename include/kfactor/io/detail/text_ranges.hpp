#pragma once
/// \file
/// The line-oriented sparse readers of kfactor/io/read.hpp (Matrix Market
/// coordinate, edge lists, ratings, the Boolean format) in pieces, so that a
/// file can be parsed as line-aligned byte ranges, one range per process
/// (kfactor/distributed/read.hpp), with exactly the checks and messages of
/// the whole-file reader, which is these same pieces run over one range:
///
///   1. parse_text_header() on a prefix of the file: the banner, size or
///      count line, separator and field count, and where the entry lines
///      (the body) start;
///   2. count_range() and parse_range() on each line-aligned byte range of
///      the body, given the lines and data lines before it (an exclusive
///      scan of count_range() over the ranges), so that every message names
///      the line of the whole file;
///   3. check_totals() with the sums over the ranges (header claims against
///      what the file held, the shape);
///   4. ratings: the sorted distinct ids of all ranges (check_id_count()),
///      map_ratings(); then check_non_negative() in file order, and
///      finalize() (sorted by (row, column), duplicate policy, conversion to
///      T, ratings' timestamps) on the entries of whole rows, in file order.
///
/// A range boundary is a line boundary of the io::detail::Lines scanner:
/// after "\n", or after a "\r" not followed by "\n" (range_start()).

#include <kfactor/core/matrix.hpp>
#include <kfactor/io/read.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::io::detail {

/// What the header of a sparse text input says, and where its body starts.
struct TextHeader {
  Format format = Format::automatic;  ///< matrix_market (coordinate), edges, ratings or bmf
  std::string name;                   ///< the input's name in messages
  std::uint64_t file_size = 0;        ///< bytes in the whole input
  std::uint64_t body_offset = 0;      ///< first byte of the entry lines
  std::int64_t body_line = 0;         ///< lines before body_offset
  // Matrix Market coordinate and the Boolean format: the size line.
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::int64_t size_line = 0;  ///< line of the size (mm) or header (bmf) line
  bool pattern = false, integer = false;
  bool array = false;          ///< mm: an array (dense, no entry lines: read it whole)
  std::uint64_t capacity = 0;  ///< mm: the entries the shape and symmetry allow
  int symmetry = 0;            ///< mm: 0 general, 1 symmetric, 2 skew-symmetric
  std::string detail;          ///< ReadInfo::detail (ratings and edges: completed by describe())
  // Edge lists.
  std::optional<std::int64_t> header_count;  ///< the leading count line
  std::int64_t header_line = 0;              ///< its line
  // Edge lists and ratings: fields of the first entry line (0: no entry line).
  int fields = 0;
  // Ratings.
  std::string separator;  ///< "," "::" or empty (whitespace)
  bool header = false;    ///< a header line was skipped
  /// Set by the caller: the values go to float, so a value float cannot
  /// hold is an error at its line (as for the whole-file reader in float).
  bool single_precision = false;
};

/// Parses the header of `prefix`, the first bytes of an input of
/// `file_size` bytes (all of it when prefix.size() == file_size) in
/// `format` (Format::automatic is resolved by detect_format() on the
/// prefix). The prefix must end at a line boundary (range_start()). Returns
/// nullopt when the header (or, for automatic detection, the sample
/// detect_format() looks at) reaches past a prefix that is not the whole
/// input: read more and call again. Throws the whole-file reader's
/// InputError for a bad header. Formats without entry lines come back
/// without a body: Format::dense as it is, a Matrix Market array with
/// `array` set (both are read whole).
std::optional<TextHeader> parse_text_header(std::string_view prefix, std::uint64_t file_size, const std::string& name,
                                            Format format, const ReadOptions& opt);

/// True when a range may start at `pos` of `text` (a line boundary): pos is
/// 0 or text.size(), or text[pos - 1] is '\n', or a '\r' with no '\n' at pos.
bool range_start(std::string_view text, std::size_t pos);

// ---- on a file (the checks of read_file: regular files only) ----------------

/// Size of the regular file `path` (InputError as read_file's otherwise).
std::uint64_t file_size(const std::string& path);
/// parse_text_header() on as much of the file's start as the header needs
/// (read in doubling prefixes, each cut at a line boundary).
TextHeader read_text_header(const std::string& path, Format format, const ReadOptions& opt);
/// The first line boundary (range_start()) at or after `offset` in the file
/// of `size` bytes (0 stays 0; `size` when there is none).
std::uint64_t next_range_start(const std::string& path, std::uint64_t offset, std::uint64_t size);
/// Bytes [offset, offset + length) of the file; InputError when `length`
/// exceeds the memory limit (0: physical memory or `ulimit -v`).
std::string read_range(const std::string& path, std::uint64_t offset, std::uint64_t length, std::uint64_t memory_limit);

/// Lines and data lines (neither blank nor a comment) in a range of the body.
struct RangeLines {
  std::int64_t lines = 0, data_lines = 0;
};
/// `range`: line-aligned bytes of the body; `at_file_start`: it starts at
/// byte 0 of the input (a UTF-8 byte-order mark there is skipped).
RangeLines count_range(const TextHeader& h, std::string_view range, bool at_file_start);

/// Triplets as read from entry lines, in file order, with the line each came
/// from (a symmetric Matrix Market entry or a symmetrized edge gives two).
/// Ratings keep the raw ids in user_ids/item_ids until map_ratings() fills
/// rows and cols.
struct TextEntries {
  std::vector<ordinal_t> rows, cols;
  std::vector<double> vals;
  std::vector<std::int64_t> lines;
  std::vector<std::int64_t> user_ids, item_ids;
  std::vector<std::int64_t> times;  ///< ratings with a timestamp column: one per entry; empty otherwise
  std::int64_t count = 0;           ///< entry lines read
  std::int64_t max_u = -1, max_v = -1, max_id_line = 0;  ///< edges: largest ids (0-based) and the largest one's line
  void reserve(std::size_t n);
  void add(std::int64_t i, std::int64_t j, double v, std::int64_t line);
  [[nodiscard]] std::size_t size() const { return vals.size(); }
};

/// Parses the entry lines of `range`, a line-aligned range of the body
/// preceded by `lines_before` lines of the input and `data_before` data
/// lines of the body, appending to `out`; returns the lines and entry lines
/// it read. Throws the whole-file reader's InputError at the first bad line.
RangeLines parse_range(const TextHeader& h, std::string_view range, bool at_file_start, std::int64_t lines_before,
                       std::int64_t data_before, const ReadOptions& opt, TextEntries& out);

/// Sums over all ranges, for check_totals().
struct TextTotals {
  std::int64_t lines = 0;    ///< lines of the whole input
  std::int64_t count = 0;    ///< entry lines read
  std::uint64_t stored = 0;  ///< triplets (TextEntries::size())
  std::int64_t max_u = -1, max_v = -1, max_id_line = 0;
};
/// The checks after the last line (entry counts against the header, an
/// edge list's count line and the memory its largest id implies; ratings:
/// at least one rating); returns the shape (ratings: 0 x 0, the ids decide).
std::pair<std::int64_t, std::int64_t> check_totals(const TextHeader& h, const TextTotals& t, const ReadOptions& opt);

/// Ratings: InputError unless `distinct` (user or item ids) fits 32-bit indices.
void check_id_count(const TextHeader& h, const TextTotals& t, std::size_t distinct, const char* what);
/// Sorted distinct values of `ids`.
std::vector<std::int64_t> distinct_ids(std::vector<std::int64_t> ids);
/// Ratings: rows and cols from the raw ids, by their position in the sorted
/// `users` and `items` (which hold every id of the entries); frees the raw ids.
void map_ratings(TextEntries& e, const std::vector<std::int64_t>& users, const std::vector<std::int64_t>& items);

/// Fills `info` as the whole-file reader does (format, detail, lines, entries).
void describe(const TextHeader& h, const TextTotals& t, const ReadOptions& opt, ReadInfo* info);

/// Whether the entries are a pattern (values all 1; duplicates merge by default).
bool is_pattern(const TextHeader& h);

/// How an index is shown in messages: with the file's base, or as the
/// original id of a remapped ratings file.
struct IndexDisplay {
  std::int64_t base = 0;
  const std::vector<std::int64_t>* row_ids = nullptr;
  const std::vector<std::int64_t>* col_ids = nullptr;
  [[nodiscard]] std::string pair(ordinal_t i, ordinal_t j) const;
};
/// The display of h's format (ratings: the id maps).
IndexDisplay index_display(const TextHeader& h, const ReadOptions& opt, const std::vector<std::int64_t>* users,
                           const std::vector<std::int64_t>* items);

/// ReadOptions::non_negative: InputError at the first negative value in `e`'s order.
void check_non_negative(const std::string& name, const TextEntries& e, const ReadOptions& opt,
                        const IndexDisplay& show_index);

/// Sorts by (row, col, order in `e`), applies the duplicate policy and
/// converts to T (an m x n matrix; `e` holds whole rows, in file order).
/// Fills info->duplicates and info->pattern. With `times` and e.times set,
/// *times gets one timestamp per result entry: the latest of the lines it
/// merges (read.hpp, ratings).
template <class T>
CooMatrix<T> finalize(const std::string& name, TextEntries& e, std::int64_t m, std::int64_t n, bool pattern,
                      const ReadOptions& opt, ReadInfo* info, const IndexDisplay& show_index,
                      std::vector<std::int64_t>* times = nullptr);
extern template CooMatrix<float> finalize<float>(const std::string&, TextEntries&, std::int64_t, std::int64_t, bool,
                                                 const ReadOptions&, ReadInfo*, const IndexDisplay&,
                                                 std::vector<std::int64_t>*);
extern template CooMatrix<double> finalize<double>(const std::string&, TextEntries&, std::int64_t, std::int64_t, bool,
                                                   const ReadOptions&, ReadInfo*, const IndexDisplay&,
                                                   std::vector<std::int64_t>*);

}  // namespace kfactor::io::detail
