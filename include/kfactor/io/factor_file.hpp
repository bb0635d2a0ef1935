#pragma once
/// \file
/// Reading a factor file back: the CSV `id,f0,...,f{K-1}` that
/// io::write_factor_csv writes (`kfactor als|nmf|bmf --output`), or the
/// Matrix Market array that io::write_factor writes for other extensions.
/// `kfactor predict` reads its X and Y factors with it.
///
/// Like the matrix readers (read.hpp), bad input throws kfactor::InputError
/// whose message starts with `name:LINE: `, and nothing else escapes:
/// - CSV: the first line must be the header `id,NAME,...` (first field `id`,
///   at least one factor column; the writer names them f0, f1, ...); a file
///   with only the header, or nothing, is refused. Every following line
///   (blank lines skipped; CR, LF and CRLF line ends) holds exactly as many
///   comma-separated fields as the header: a 64-bit integer id, then K finite
///   numbers (NaN, Inf and values beyond double are refused). Ids are
///   unique: a repeated id names both lines.
/// - Matrix Market: `%%MatrixMarket matrix array real|integer general`, row r
///   of the matrix is the factor row of id r (write_factor keeps no ids
///   there). Coordinate files are refused: a factor is dense.
/// - Sizes: the file is read whole within `memory_limit` (0 = physical
///   memory or `ulimit -v`, the lower, as ReadOptions); rows x K is bounded by the file's own text, and
///   an array header's `rows cols` is checked before anything is allocated
///   from it.

#include <kfactor/core/error.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::io {

/// A dense factor with the original id of each row.
struct FactorFile {
  std::int64_t rank = 0;           ///< K: values per row (>= 1)
  std::vector<std::int64_t> ids;   ///< row r's id, in file order
  std::vector<double> values;      ///< row-major, ids.size() x rank
  std::vector<std::size_t> by_id;  ///< row numbers in ascending id order (for find)

  [[nodiscard]] std::size_t rows() const { return ids.size(); }
  /// The K values of row r.
  [[nodiscard]] std::span<const double> row(std::size_t r) const {
    return {values.data() + r * static_cast<std::size_t>(rank), static_cast<std::size_t>(rank)};
  }
  /// The row holding `id`, if any (binary search over by_id).
  [[nodiscard]] std::optional<std::size_t> find(std::int64_t id) const;
};

/// Parses a factor file held in memory: text starting with `%%MatrixMarket`
/// or a `name` ending in `.mtx`/`.mm` as a Matrix Market array, anything
/// else as the CSV. `name` is what messages call the input.
FactorFile parse_factor_file(std::string_view text, const std::string& name, std::uint64_t memory_limit = 0);

/// read_file(path) (regular files only, within `memory_limit`), then
/// parse_factor_file.
FactorFile read_factor_file(const std::string& path, std::uint64_t memory_limit = 0);

}  // namespace kfactor::io
