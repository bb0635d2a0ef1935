#pragma once
/// \file
/// Readers: Matrix Market, SNAP-style edge lists, rating files (MovieLens CSV,
/// MovieLens `::`, tab/space separated), the CuBin thesis Boolean format and
/// dense 0/1 text, all producing a host kfactor::CooMatrix<T> (T = float or
/// double).
///
/// Every format has two entry points: `read_X(path, ...)` reads the whole file
/// into memory and calls `parse_X(text, name, ...)`, which parses a memory
/// buffer (the fuzzers and tests use it; `name` is what error messages call the
/// input). Parsing uses std::from_chars on the buffer, not iostreams. The
/// formats with entry lines are parsed by pieces that also run on
/// line-aligned parts of a file, one per process (detail/text_ranges.hpp,
/// kfactor/distributed/read.hpp), with the same results and errors.
/// io/input.hpp's read_input is the entry that also reads HDF5 CSR files.
///
/// ## What every reader guarantees
/// - Bad input throws kfactor::InputError whose message starts with
///   `name:LINE: ` (1-based line; for a file that ends too early, the last
///   line). Nothing else escapes for bad data: no crash, no hang, no silent
///   garbage. Checked: malformed lines, non-numeric fields, wrong field counts,
///   indices out of range / negative / 0 in 1-based formats, NaN and Inf
///   values, values that overflow T, header counts that disagree with the
///   entries, empty files, binary junk.
/// - Line ends: LF, CRLF and a lone CR (classic Mac) all end a line; blank
///   lines and a missing final newline are accepted.
/// - Files: read_file (and so every `read_X`) reads regular files only. A
///   directory, character or block device, FIFO or socket is refused before
///   it is opened (InputError "PATH: is a directory, ..."), so /dev/zero, a
///   FIFO without a writer or /dev/urandom fail at once instead of being read
///   whole or blocking.
/// - Resource limits: sizes in a header are checked BEFORE anything is
///   allocated from them: dimensions must fit the 32-bit `ordinal_t`
///   (< 2^31), a claimed entry count must fit in the matrix and in the bytes
///   left in the file, and the memory the claim implies must fit in
///   ReadOptions::memory_limit (default: physical memory, or the address-space
///   limit `ulimit -v` where that is lower). That memory counts
///   the text, 56 bytes per entry, and 16 bytes per row and per column (the
///   8-byte offsets of the CSR row maps of A and of A^T, and one double of a
///   rank-1 factor): a tiny file whose header claims 2^31 - 1 rows is refused
///   at its header line, naming the claim. The shape an edge list's largest
///   id implies is checked the same way, at that id's line. No reserve() is
///   ever sized by a header alone. Numbers in messages print in their
///   shortest form (1e+300, not 301 digits).
/// - The result is sorted by (row, column) with no duplicate pairs, so it can
///   go to kfactor::to_csr directly. num_rows/num_cols fit ordinal_t.
///   `values` always has one entry per nonzero (1 for pattern inputs).
/// - Negative values are accepted unless ReadOptions::non_negative is set;
///   then the first one in file order is an InputError at its line. A caller
///   whose solver needs A >= 0 should set it rather than check has_negative()
///   afterwards, which can no longer say where the value was.
///
/// ## Duplicate (row, col) pairs: DuplicatePolicy
/// `automatic` (default): an input WITH values (Matrix Market real/integer,
/// weighted edge lists, ratings, dense) rejects duplicates with an InputError
/// naming both lines; a PATTERN input (Matrix Market pattern, unweighted edge
/// lists, the Boolean format) merges them into one entry of value 1 (undirected
/// edge lists often list an edge twice). `error` rejects duplicates in every
/// format, `sum` adds values (pattern entries stay 1), `last` keeps the last
/// one in file order. ReadInfo::duplicates counts the entries merged away.
/// A Matrix Market symmetric file that stores both (i, j) and (j, i) has a
/// duplicate after expansion and follows the same policy.
///
/// ## Formats
/// - `mm`: `%%MatrixMarket matrix coordinate|array real|double|integer|pattern
///   general|symmetric|skew-symmetric`; complex and hermitian are refused.
///   Coordinate: size line `m n nnz`, then exactly nnz lines `i j [v]`,
///   1-based. Array: size line `m n`, then the values in column-major order
///   (lower triangle for symmetric, strictly lower for skew-symmetric), any
///   number per line. Symmetric entries are mirrored (diagonal once);
///   skew-symmetric ones mirrored negated (a diagonal entry is an error).
///   Explicit zeros of array files are dropped unless ReadOptions::keep_zeros.
/// - `edges`: one `u v` or `u v w` per line (all lines the same count),
///   separated by spaces and/or tabs, 0-based ids (1-based with
///   ReadOptions::one_based); `#` and `%` comment lines; an optional leading
///   line holding a single integer (a node or edge count, as in SNAP's
///   p2p-Gnutella08.txt) is kept in ReadInfo::header_count and checked: it
///   must equal the number of edges, or be a node count no smaller than the
///   largest id + 1 (isolated nodes allowed); otherwise InputError at the
///   count line. It does not change the shape.
///   Shape: n x n with n = max id + 1 (ReadOptions::square), or
///   (max u + 1) x (max v + 1). ReadOptions::symmetrize adds (v, u) too
///   (and implies the square shape); the pair listed both ways then merges.
///   Without a weight column the values are 1 (a pattern input).
/// - `ratings`: `user item rating [timestamp]` (or `user item`, implicit 1)
///   with separator `,` (MovieLens CSV), `::` (MovieLens .dat) or
///   whitespace, chosen from the first data line; a first line whose first
///   field is not a number is a header and skipped; `#` comments. User and item
///   ids are any 64-bit integers, remapped to 0..n-1 in ASCENDING order of the
///   original id (so the mapping does not depend on line order); RatingData
///   keeps the maps. The timestamp, when the lines have one, is a 64-bit
///   integer (MovieLens: Unix seconds; a fractional one is an InputError at
///   its line) and RatingData::timestamps keeps it, one per entry of the
///   result; entries merged by a duplicate policy (sum, last) keep the LATEST
///   timestamp of the merged lines, whichever value the policy keeps, so the
///   time-based split (als::leave_last_k_out) sees the pair's last interaction.
/// - `bmf`: the CuBin thesis Boolean format: first line `rows cols nnz`, then
///   exactly nnz lines `row col`, 0-based.
/// - `dense`: one matrix row per line, numbers separated by whitespace, every
///   row the same length; zeros dropped unless ReadOptions::keep_zeros.
///
/// ## Format::automatic (detect_format)
/// Detection picks a format only when the content (or the name) points to
/// one; a file that fits several formats equally is refused with an
/// InputError at its first data line asking for `--format`. In order:
/// 1. text starting with `%%MatrixMarket` (any case, after a UTF-8 BOM), or
///    extension `.mtx`/`.mm` -> mm;
/// 2. extension `.csv`/`.dat` -> ratings;
/// 3. (comments `#`/`%` and blank lines skipped) no data line -> edges (whose
///    reader reports the empty file);
/// 4. a first data line holding `,` or `::`, or whose first field is not a
///    number on a printable line (a header) -> ratings;
/// 5. then the first data line's field count F and a sample of the next 100
///    data lines decide:
///    - F = 1: every sampled line 1 field -> dense (one column); else -> edges
///      (the leading count line of a SNAP file);
///    - F = 3, the three fields integers, the second line 2 fields -> bmf;
///    - F >= 5, or a sampled line whose first two fields are not integers
///      (they cannot be ids) -> dense;
///    - F = 2 -> edges (`u v`, the SNAP convention; implicit ratings without
///      separators need `--format ratings`, 2-column dense `--format dense`);
///    - F = 4 -> ratings (`user item rating timestamp`, MovieLens u.data; a
///      dense file of 4 integer columns needs `--format dense`);
///    - F = 3 otherwise -> AMBIGUOUS: a weighted edge list `u v w` and
///      ratings `user item rating` look alike, so InputError naming
///      `--format edges` or `--format ratings`.
/// The data sets of shared/data are detected as what they are (tests/io).

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::io {

/// Input file formats (CLI `--format auto|mm|edges|ratings|bmf|dense|h5csr`).
/// h5csr, the binary HDF5 CSR of io/hdf5_csr.hpp, is read from its file by
/// io::read_input (it has no text to parse; io/input.hpp detects it by the
/// HDF5 signature).
enum class Format { automatic, matrix_market, edges, ratings, bmf, dense, h5csr };

/// Parses a CLI format name (`auto`, `mm`/`mtx`, `edges`, `ratings`, `bmf`,
/// `dense`, `h5csr`/`h5`/`hdf5`); throws UsageError for anything else.
Format parse_format(std::string_view name);
/// The CLI name of a format (`auto`, `mm`, ...).
std::string_view format_name(Format f);

enum class DuplicatePolicy { automatic, error, sum, last };
DuplicatePolicy parse_duplicate_policy(std::string_view name);  ///< auto|error|sum|last; UsageError
std::string_view duplicate_policy_name(DuplicatePolicy p);

struct ReadOptions {
  DuplicatePolicy duplicates = DuplicatePolicy::automatic;
  bool square = true;       ///< edges: n x n with n = max id + 1; false: (max u + 1) x (max v + 1)
  bool symmetrize = false;  ///< edges: add (v, u) for every (u, v)
  bool one_based = false;   ///< edges: ids start at 1
  bool keep_zeros = false;  ///< mm array / dense: keep explicit zero entries
  /// Refuse negative values: InputError at the value's line (for solvers
  /// that need A >= 0, so the error names where the value is).
  bool non_negative = false;
  /// Bytes a read and the matrix it makes may use (text, entries, row maps;
  /// see the file comment); 0 = this machine's physical memory, or the
  /// address-space limit (`ulimit -v`) where that is lower. Checked before
  /// reading a file and before trusting a header's sizes.
  std::uint64_t memory_limit = 0;
};

/// What a reader saw, for `kfactor info` and diagnostics.
struct ReadInfo {
  Format format = Format::automatic;         ///< the format actually parsed
  std::string detail;                        ///< e.g. "coordinate real symmetric", "ratings ',' with header"
  std::int64_t lines = 0;                    ///< lines in the input
  std::int64_t entries_read = 0;             ///< entries in the file (before mirroring and duplicate handling)
  std::int64_t duplicates = 0;               ///< entries merged away by the duplicate policy
  bool pattern = false;                      ///< the file has no values (all 1)
  bool timestamps = false;                   ///< ratings: the lines have a timestamp (RatingData::timestamps)
  std::optional<std::int64_t> header_count;  ///< edges: the skipped leading count line
};

/// Ratings with the original ids: row r of `matrix` is user user_ids[r],
/// column c is item item_ids[c] (both ascending).
template <class T>
struct RatingData {
  CooMatrix<T> matrix;
  std::vector<std::int64_t> user_ids;
  std::vector<std::int64_t> item_ids;
  /// timestamps[e]: entry e's timestamp (of merged duplicates, the latest),
  /// for a ratings file whose lines have one; empty otherwise.
  std::vector<std::int64_t> timestamps;
};

/// Reads a whole regular file into memory; InputError (line 0) if it does
/// not exist, is not a regular file (directory, device, FIFO, socket: refused
/// before opening, the message says which), cannot be read or is larger than
/// `memory_limit` (0 = physical memory or `ulimit -v`, the lower).
std::string read_file(const std::string& path, std::uint64_t memory_limit = 0);

/// The format of `text` by the rules in the file comment; `path` (may be
/// empty) gives the extension and the name in messages. Throws InputError
/// for a file those rules call ambiguous.
Format detect_format(std::string_view text, std::string_view path = {});

// ---- one format each: parse from memory, or read a file ---------------------
template <class T>
CooMatrix<T> parse_matrix_market(std::string_view text, const std::string& name, const ReadOptions& opt = {},
                                 ReadInfo* info = nullptr);
template <class T>
CooMatrix<T> parse_edges(std::string_view text, const std::string& name, const ReadOptions& opt = {},
                         ReadInfo* info = nullptr);
template <class T>
RatingData<T> parse_ratings(std::string_view text, const std::string& name, const ReadOptions& opt = {},
                            ReadInfo* info = nullptr);
/// The 1-based line of the first rating of (user, item) in a ratings text,
/// as parse_ratings reads it; 0 if there is none. For messages about an
/// entry that the parse took but a later check refuses (reindex_ratings).
std::int64_t rating_line(std::string_view text, std::int64_t user, std::int64_t item);
template <class T>
CooMatrix<T> parse_bmf(std::string_view text, const std::string& name, const ReadOptions& opt = {},
                       ReadInfo* info = nullptr);
template <class T>
CooMatrix<T> parse_dense(std::string_view text, const std::string& name, const ReadOptions& opt = {},
                         ReadInfo* info = nullptr);

/// Any format (ratings lose their id maps; use read_ratings to keep them).
template <class T>
CooMatrix<T> parse_matrix(std::string_view text, const std::string& name, Format format = Format::automatic,
                          const ReadOptions& opt = {}, ReadInfo* info = nullptr);

template <class T>
CooMatrix<T> read_matrix_market(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);
template <class T>
CooMatrix<T> read_edges(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);
template <class T>
RatingData<T> read_ratings(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);
template <class T>
CooMatrix<T> read_bmf(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);
template <class T>
CooMatrix<T> read_dense(const std::string& path, const ReadOptions& opt = {}, ReadInfo* info = nullptr);
/// Reads `path` in `format` (automatic: detect_format on its content and name).
template <class T>
CooMatrix<T> read_matrix(const std::string& path, Format format = Format::automatic, const ReadOptions& opt = {},
                         ReadInfo* info = nullptr);

// ---- small facts about a matrix --------------------------------------------
template <class T>
bool has_negative(const CooMatrix<T>& A) {
  for (const T v : A.values)
    if (v < T(0)) return true;
  return false;
}

struct CooStats {
  std::int64_t empty_rows = 0, empty_cols = 0;
  std::int64_t negatives = 0, zeros = 0;
  double min_value = 0.0, max_value = 0.0;  ///< over stored entries (0 when nnz == 0)
  double density = 0.0;                     ///< nnz / (rows * cols)
};
template <class T>
CooStats coo_stats(const CooMatrix<T>& A);

#define KFACTOR_IO_EXTERN(T)                                                                                           \
  extern template CooMatrix<T> parse_matrix_market<T>(std::string_view, const std::string&, const ReadOptions&,        \
                                                      ReadInfo*);                                                      \
  extern template CooMatrix<T> parse_edges<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);    \
  extern template RatingData<T> parse_ratings<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*); \
  extern template CooMatrix<T> parse_bmf<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);      \
  extern template CooMatrix<T> parse_dense<T>(std::string_view, const std::string&, const ReadOptions&, ReadInfo*);    \
  extern template CooMatrix<T> parse_matrix<T>(std::string_view, const std::string&, Format, const ReadOptions&,       \
                                               ReadInfo*);                                                             \
  extern template CooMatrix<T> read_matrix_market<T>(const std::string&, const ReadOptions&, ReadInfo*);               \
  extern template CooMatrix<T> read_edges<T>(const std::string&, const ReadOptions&, ReadInfo*);                       \
  extern template RatingData<T> read_ratings<T>(const std::string&, const ReadOptions&, ReadInfo*);                    \
  extern template CooMatrix<T> read_bmf<T>(const std::string&, const ReadOptions&, ReadInfo*);                         \
  extern template CooMatrix<T> read_dense<T>(const std::string&, const ReadOptions&, ReadInfo*);                       \
  extern template CooMatrix<T> read_matrix<T>(const std::string&, Format, const ReadOptions&, ReadInfo*);              \
  extern template CooStats coo_stats<T>(const CooMatrix<T>&);
KFACTOR_IO_EXTERN(float)
KFACTOR_IO_EXTERN(double)
#undef KFACTOR_IO_EXTERN

}  // namespace kfactor::io
