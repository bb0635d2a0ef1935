// Reading an input on P ranks (include/kfactor/distributed/read.hpp): the
// byte ranges of a text input, the rows of an HDF5 CSR file, and the
// all-to-alls that move entries to the ranks that own their rows or columns.
// Communication goes through distributed::detail::Collectives.
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/distributed/read.hpp>
#include <kfactor/io/detail/text_ranges.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

namespace kfactor::distributed {

namespace {

using Coll = detail::Collectives;
namespace iod = io::detail;

// ---- errors every rank throws alike --------------------------------------------

/// An InputError with its file and line that every rank throws.
class AgreedInputError final : public InputError, public AgreedError {
 public:
  AgreedInputError(const std::string& file, std::int64_t line, const std::string& what)
      : InputError(file, line, what) {}
};

/// An error as it travels between ranks: kind (exit code), file, line and
/// message (without the "file:line: " prefix, when it has a file).
struct Failure {
  int code = 0;  ///< 0: none
  std::int64_t line = 0;
  std::string file, message;
};

template <class F>
Failure capture(F&& f) {
  Failure out;
  try {
    f();
  } catch (const io::detail::FailedElsewhere&) {
    // Another rank's part of a collective HDF5 read failed; that rank reports it.
  } catch (const InputError& e) {
    out.code = 3;
    out.file = e.file();
    out.line = e.line();
    out.message = e.what();
    if (!e.file().empty()) {
      const std::string prefix = e.file() + (e.line() > 0 ? ":" + std::to_string(e.line()) : "") + ": ";
      if (out.message.rfind(prefix, 0) == 0) out.message.erase(0, prefix.size());
    }
  } catch (const Error& e) {
    out.code = e.exit_code() == 2 ? 2 : 4;
    out.message = e.what();
  } catch (const std::bad_alloc&) {
    out.code = 4;
    out.message = "out of memory";
  } catch (const std::exception& e) {
    out.code = 4;
    out.message = e.what();
  }
  return out;
}

/// Collective: when any rank failed, every rank throws the error of the
/// lowest failing rank (the first in file order, where ranks hold
/// consecutive parts of the file).
void settle(Coll& coll, const Failure& mine) {
  const auto failed = coll.allgather_host(std::vector<int>{mine.code != 0 ? 1 : 0});
  const auto first = std::find(failed.begin(), failed.end(), 1) - failed.begin();
  if (first == static_cast<std::ptrdiff_t>(failed.size())) return;
  std::vector<char> wire;
  if (coll.rank() == first) {
    auto put = [&](const void* p, std::size_t n) {
      const auto* c = static_cast<const char*>(p);
      wire.insert(wire.end(), c, c + n);
    };
    const std::int64_t head[4] = {mine.code, mine.line, static_cast<std::int64_t>(mine.file.size()),
                                  static_cast<std::int64_t>(mine.message.size())};
    put(head, sizeof head);
    put(mine.file.data(), mine.file.size());
    put(mine.message.data(), mine.message.size());
  }
  coll.broadcast_host(wire, static_cast<int>(first));
  std::int64_t head[4];
  std::memcpy(head, wire.data(), sizeof head);
  const std::string file(wire.data() + sizeof head, static_cast<std::size_t>(head[2]));
  const std::string message(wire.data() + sizeof head + head[2], static_cast<std::size_t>(head[3]));
  if (head[0] == 3 && !file.empty()) throw AgreedInputError(file, head[1], message);
  detail::throw_kind(static_cast<int>(head[0]), message);
}

/// Runs f on every rank, then settle(): a step of the read that may fail.
template <class F>
void step(Coll& coll, F&& f) {
  settle(coll, capture(std::forward<F>(f)));
}

/// P + 1 boundaries of equal contiguous row blocks (balanced_row_block).
std::vector<ordinal_t> equal_blocks(std::int64_t rows, int P) {
  std::vector<ordinal_t> b(static_cast<std::size_t>(P) + 1);
  for (int p = 0; p < P; ++p) b[p] = static_cast<ordinal_t>(balanced_row_block(rows, P, p).first_row);
  b[P] = static_cast<ordinal_t>(rows);
  return b;
}

/// The rank whose block of `bounds` holds row r.
int owner(const std::vector<ordinal_t>& bounds, ordinal_t r) {
  return static_cast<int>(std::upper_bound(bounds.begin() + 1, bounds.end() - 1, r) - (bounds.begin() + 1));
}

/// One entry on its way to its row's owner, before the duplicate policy:
/// indices, the value as read, and its line.
struct RawEntry {
  ordinal_t row, col;
  double value;
  std::int64_t line;
};

/// One entry of a finished matrix on its way.
template <class T>
struct Entry {
  ordinal_t row, col;
  T value;
};

template <class T>
RowSlice<T> start_slice(const Coll& coll) {
  RowSlice<T> s;
  s.rank = coll.rank();
  s.size = coll.size();
  return s;
}

/// Sum of `v` over the ranks.
std::int64_t sum_over(Coll& coll, std::int64_t v) {
  const auto all = coll.allgather_host(std::vector<std::int64_t>{v});
  std::int64_t s = 0;
  for (const auto x : all) s += x;
  return s;
}

// ---- text ---------------------------------------------------------------------------

template <class T>
RowSlice<T> read_dense_whole(Coll& coll, const std::string& path, io::Format format, const io::ReadOptions& opt) {
  RowSlice<T> out = start_slice<T>(coll);
  io::RatingData<T> all;
  step(coll, [&] { all = io::read_input<T>(path, format, opt, &out.info); });
  const auto& A = all.matrix;
  out.row_bounds = equal_blocks(A.num_rows, coll.size());
  const ordinal_t r0 = out.row_bounds[coll.rank()], r1 = out.row_bounds[coll.rank() + 1];
  const auto b = std::lower_bound(A.rows.begin(), A.rows.end(), r0) - A.rows.begin();
  const auto e = std::lower_bound(A.rows.begin(), A.rows.end(), r1) - A.rows.begin();
  out.entries.num_rows = A.num_rows;
  out.entries.num_cols = A.num_cols;
  out.entries.rows.assign(A.rows.begin() + b, A.rows.begin() + e);
  out.entries.cols.assign(A.cols.begin() + b, A.cols.begin() + e);
  out.entries.values.assign(A.values.begin() + b, A.values.begin() + e);
  out.global_nnz = static_cast<std::int64_t>(A.nnz());
  return out;
}

template <class T>
RowSlice<T> read_text(Coll& coll, const std::string& path, io::Format format, const io::ReadOptions& opt) {
  const int P = coll.size(), me = coll.rank();
  iod::TextHeader h;
  step(coll, [&] { h = iod::read_text_header(path, format, opt); });
  if (h.format == io::Format::dense || h.array) return read_dense_whole<T>(coll, path, h.format, opt);
  h.single_precision = std::is_same_v<T, float>;
  // Ranks may read copies of the input (node-local disks); each parses part
  // of its own copy, so the copies must at least be equally long.
  require_same(coll.comm(), h.file_size, "the size of " + path);

  // This rank's line-aligned byte range of the body.
  const std::uint64_t body = h.body_offset, size = h.file_size;
  std::uint64_t start = body;
  step(coll, [&] {
    const auto nominal = static_cast<std::uint64_t>(static_cast<unsigned __int128>(size - body) *
                                                    static_cast<unsigned>(me) / static_cast<unsigned>(P));
    if (me > 0) start = iod::next_range_start(path, body + nominal, size);
  });
  const auto starts = coll.allgather_host(std::vector<std::uint64_t>{start});
  const std::uint64_t end = me + 1 < P ? starts[me + 1] : size;
  std::string text;
  step(coll, [&] { text = iod::read_range(path, start, end - start, opt.memory_limit); });

  // Lines before the range, then its entries.
  const auto counts = iod::count_range(h, text, start == 0);
  const auto all_counts = coll.allgather_host(std::vector<std::int64_t>{counts.lines, counts.data_lines});
  std::int64_t lines_before = h.body_line, data_before = 0, total_lines = h.body_line;
  for (int q = 0; q < P; ++q) {
    if (q < me) {
      lines_before += all_counts[2 * q];
      data_before += all_counts[2 * q + 1];
    }
    total_lines += all_counts[2 * q];
  }
  iod::TextEntries e;
  step(coll, [&] { (void)iod::parse_range(h, text, start == 0, lines_before, data_before, opt, e); });
  std::string().swap(text);

  // The checks after the last line, on the sums.
  const auto stats = coll.allgather_host(
      std::vector<std::int64_t>{e.count, static_cast<std::int64_t>(e.size()), e.max_u, e.max_v, e.max_id_line});
  iod::TextTotals t;
  t.lines = total_lines;
  for (int q = 0; q < P; ++q) {
    const auto* s = &stats[5 * static_cast<std::size_t>(q)];
    t.count += s[0];
    t.stored += static_cast<std::uint64_t>(s[1]);
    t.max_u = std::max(t.max_u, s[2]);
    t.max_v = std::max(t.max_v, s[3]);
  }
  // The largest id's line: its first appearance, in the first range that holds it.
  for (int q = 0; q < P; ++q) {
    const auto* s = &stats[5 * static_cast<std::size_t>(q)];
    if (s[0] > 0 && std::max(s[2], s[3]) == std::max(t.max_u, t.max_v)) {
      t.max_id_line = s[4];
      break;
    }
  }
  std::int64_t m = 0, n = 0;
  step(coll, [&] { std::tie(m, n) = iod::check_totals(h, t, opt); });

  RowSlice<T> out = start_slice<T>(coll);
  if (h.format == io::Format::ratings) {
    // One id map on every rank: the merged distinct ids of all ranges.
    out.row_ids = iod::distinct_ids(coll.allgather_host(iod::distinct_ids(e.user_ids)));
    out.col_ids = iod::distinct_ids(coll.allgather_host(iod::distinct_ids(e.item_ids)));
    step(coll, [&] {
      iod::check_id_count(h, t, out.row_ids.size(), "user");
      iod::check_id_count(h, t, out.col_ids.size(), "item");
    });
    iod::map_ratings(e, out.row_ids, out.col_ids);
    m = static_cast<std::int64_t>(out.row_ids.size());
    n = static_cast<std::int64_t>(out.col_ids.size());
  }
  iod::describe(h, t, opt, &out.info);
  const auto show_index = iod::index_display(h, opt, &out.row_ids, &out.col_ids);
  step(coll, [&] { iod::check_non_negative(path, e, opt, show_index); });

  // Every entry to its row's owner, arriving in file order (ranks in order,
  // each rank's entries in its order).
  out.row_bounds = equal_blocks(m, P);
  std::vector<std::int64_t> send_counts(static_cast<std::size_t>(P), 0);
  std::vector<int> dest(e.size());
  for (std::size_t k = 0; k < e.size(); ++k) ++send_counts[dest[k] = owner(out.row_bounds, e.rows[k])];
  std::vector<std::int64_t> offset(static_cast<std::size_t>(P), 0);
  for (int q = 1; q < P; ++q) offset[q] = offset[q - 1] + send_counts[q - 1];
  std::vector<RawEntry> send(e.size());
  // Timestamps (ratings that have them) travel in a second all-to-all of
  // the same counts, so that the files without them move no more bytes.
  std::vector<std::int64_t> send_times(e.times.size());
  for (std::size_t k = 0; k < e.size(); ++k) {
    if (!e.times.empty()) send_times[offset[dest[k]]] = e.times[k];
    send[offset[dest[k]]++] = {e.rows[k], e.cols[k], e.vals[k], e.lines[k]};
  }
  const bool timed = out.info.timestamps;
  e = iod::TextEntries{};
  std::vector<int>().swap(dest);
  const auto received = coll.alltoallv_host(send, send_counts);
  std::vector<RawEntry>().swap(send);
  if (timed) e.times = coll.alltoallv_host(send_times, send_counts);
  std::vector<std::int64_t>().swap(send_times);
  e.reserve(received.size());
  for (const auto& r : received) e.add(r.row, r.col, r.value, r.line);

  io::ReadInfo local = out.info;
  step(coll, [&] {
    out.entries = iod::finalize<T>(path, e, m, n, iod::is_pattern(h), opt, &local, show_index, &out.timestamps);
  });
  out.info.pattern = local.pattern;
  out.info.duplicates = sum_over(coll, local.duplicates);
  out.global_nnz = sum_over(coll, static_cast<std::int64_t>(out.entries.nnz()));
  return out;
}

// ---- HDF5 CSR ---------------------------------------------------------------------------

template <class T>
RowSlice<T> read_h5(Coll& coll, const std::string& path, const io::ReadOptions& opt) {
  RowSlice<T> out = start_slice<T>(coll);
  std::optional<io::Hdf5CsrReader> reader;
  step(coll, [&] { reader.emplace(path, coll.comm(), opt); });
  const std::vector<std::int64_t>* rm = nullptr;
  step(coll, [&] { rm = &reader->row_map(); });
  const auto& l = reader->layout();
  std::vector<offset_t> counts(static_cast<std::size_t>(l.rows));
  for (std::size_t r = 0; r < counts.size(); ++r) counts[r] = static_cast<offset_t>((*rm)[r + 1] - (*rm)[r]);
  out.row_bounds = balanced_column_blocks(counts, coll.size());
  io::CsrRows<T> rows;
  step(coll,
       [&] { rows = reader->template read_rows<T>(out.row_bounds[coll.rank()], out.row_bounds[coll.rank() + 1]); });
  step(coll, [&] {
    out.row_ids = reader->row_ids();
    out.col_ids = reader->col_ids();
  });
  out.info = reader->info();
  auto& A = out.entries;
  A.num_rows = l.rows;
  A.num_cols = l.cols;
  A.rows.resize(rows.cols.size());
  for (std::size_t r = 0; r + 1 < rows.row_map.size(); ++r)
    std::fill(A.rows.begin() + rows.row_map[r], A.rows.begin() + rows.row_map[r + 1],
              static_cast<ordinal_t>(rows.first_row + static_cast<std::int64_t>(r)));
  A.cols = std::move(rows.cols);
  A.values = std::move(rows.values);
  out.global_nnz = l.nnz;
  return out;
}

/// Entries sorted by (row, col): a stable sort when they are not already.
template <class T>
void sort_entries(CooMatrix<T>& A) {
  const std::size_t nnz = A.nnz();
  bool sorted = true;
  for (std::size_t k = 1; k < nnz && sorted; ++k)
    sorted = A.rows[k - 1] < A.rows[k] || (A.rows[k - 1] == A.rows[k] && A.cols[k - 1] < A.cols[k]);
  if (sorted) return;
  std::vector<std::size_t> order(nnz);
  for (std::size_t k = 0; k < nnz; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return A.rows[a] < A.rows[b] || (A.rows[a] == A.rows[b] && A.cols[a] < A.cols[b]);
  });
  CooMatrix<T> s;
  s.num_rows = A.num_rows;
  s.num_cols = A.num_cols;
  s.rows.resize(nnz);
  s.cols.resize(nnz);
  s.values.resize(nnz);
  for (std::size_t k = 0; k < nnz; ++k) {
    s.rows[k] = A.rows[order[k]];
    s.cols[k] = A.cols[order[k]];
    s.values[k] = A.values[order[k]];
  }
  A = std::move(s);
}

/// Sends entry k of `A` (with its row and column swapped when `swap`) to
/// rank dest(k); returns what arrives, in rank order.
template <class T, class Dest>
std::vector<Entry<T>> exchange(Coll& coll, const CooMatrix<T>& A, bool swap, Dest&& dest) {
  const int P = coll.size();
  std::vector<std::int64_t> counts(static_cast<std::size_t>(P), 0);
  std::vector<int> to(A.nnz());
  for (std::size_t k = 0; k < A.nnz(); ++k) ++counts[to[k] = dest(k)];
  std::vector<std::int64_t> offset(static_cast<std::size_t>(P), 0);
  for (int q = 1; q < P; ++q) offset[q] = offset[q - 1] + counts[q - 1];
  std::vector<Entry<T>> send(A.nnz());
  for (std::size_t k = 0; k < A.nnz(); ++k)
    send[offset[to[k]]++] =
        swap ? Entry<T>{A.cols[k], A.rows[k], A.values[k]} : Entry<T>{A.rows[k], A.cols[k], A.values[k]};
  return coll.alltoallv_host(send, counts);
}

template <class T>
void unpack(const std::vector<Entry<T>>& in, CooMatrix<T>& A) {
  A.rows.resize(in.size());
  A.cols.resize(in.size());
  A.values.resize(in.size());
  for (std::size_t k = 0; k < in.size(); ++k) {
    A.rows[k] = in[k].row;
    A.cols[k] = in[k].col;
    A.values[k] = in[k].value;
  }
}

void check_bounds(const std::vector<ordinal_t>& bounds, int P, std::int64_t rows, const char* what) {
  bool ok = bounds.size() == static_cast<std::size_t>(P) + 1 && bounds.front() == 0 && bounds.back() == rows;
  for (std::size_t p = 1; ok && p < bounds.size(); ++p) ok = bounds[p - 1] <= bounds[p];
  if (!ok)
    throw UsageError(std::string("distributed: ") + what + " are not " + std::to_string(P + 1) +
                     " ascending boundaries from 0 to " + std::to_string(rows));
}

}  // namespace

io::InputKind probe_input(MPI_Comm comm, const std::string& path, io::Format format, const io::ReadOptions& opt) {
  Coll coll(comm);
  io::InputKind kind;
  step(coll, [&] { kind = io::probe_input(path, format, opt); });
  return kind;
}

template <class T>
RowSlice<T> read_rows(MPI_Comm comm, const std::string& path, io::Format format, const io::ReadOptions& opt) {
  Coll coll(comm);
  bool h5 = format == io::Format::h5csr;
  if (format == io::Format::automatic) step(coll, [&] { h5 = io::is_hdf5_file(path); });
  return h5 ? read_h5<T>(coll, path, opt) : read_text<T>(coll, path, format, opt);
}

template <class T>
RowSlice<T> move_rows(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& bounds) {
  Coll coll(comm);
  check_bounds(bounds, coll.size(), slice.entries.num_rows, "row bounds");
  RowSlice<T> out = slice;
  const auto& A = slice.entries;
  unpack(exchange(coll, A, false, [&](std::size_t k) { return owner(bounds, A.rows[k]); }), out.entries);
  sort_entries(out.entries);
  out.row_bounds = bounds;
  return out;
}

template <class T>
CooMatrix<T> move_blocks(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& row_bounds,
                         const std::vector<ordinal_t>& col_bounds) {
  Coll coll(comm);
  const auto& A = slice.entries;
  const int pr = static_cast<int>(row_bounds.size()) - 1, pc = static_cast<int>(col_bounds.size()) - 1;
  if (pr < 1 || pc < 1 || std::int64_t(pr) * pc != coll.size())
    throw UsageError("distributed: a grid of " + std::to_string(pr) + " x " + std::to_string(pc) + " blocks for " +
                     std::to_string(coll.size()) + " ranks");
  check_bounds(row_bounds, pr, A.num_rows, "row bounds");
  check_bounds(col_bounds, pc, A.num_cols, "column bounds");
  CooMatrix<T> out;
  unpack(exchange(coll, A, false,
                  [&](std::size_t k) { return owner(row_bounds, A.rows[k]) * pc + owner(col_bounds, A.cols[k]); }),
         out);
  const int i = coll.rank() / pc, j = coll.rank() % pc;
  out.num_rows = row_bounds[i + 1] - row_bounds[i];
  out.num_cols = col_bounds[j + 1] - col_bounds[j];
  for (auto& r : out.rows) r -= row_bounds[i];
  for (auto& c : out.cols) c -= col_bounds[j];
  sort_entries(out);
  return out;
}

template <class T>
std::vector<offset_t> global_row_counts(MPI_Comm comm, const RowSlice<T>& slice) {
  Coll coll(comm);
  const auto& A = slice.entries;
  if (!slice.row_bounds.empty()) {
    // The ranks' blocks in rank order are all rows once.
    std::vector<offset_t> mine(static_cast<std::size_t>(slice.local_rows()), 0);
    for (const ordinal_t r : A.rows) ++mine[static_cast<std::size_t>(r - slice.first_row())];
    return coll.allgather_host(mine);
  }
  std::vector<offset_t> counts(static_cast<std::size_t>(A.num_rows), 0);
  for (const ordinal_t r : A.rows) ++counts[static_cast<std::size_t>(r)];
  coll.allreduce_sum_host(counts.data(), static_cast<int>(counts.size()));
  return counts;
}

template <class T>
std::vector<offset_t> global_column_counts(MPI_Comm comm, const RowSlice<T>& slice) {
  Coll coll(comm);
  std::vector<offset_t> counts(static_cast<std::size_t>(slice.entries.num_cols), 0);
  for (const ordinal_t c : slice.entries.cols) ++counts[static_cast<std::size_t>(c)];
  coll.allreduce_sum_host(counts.data(), static_cast<int>(counts.size()));
  return counts;
}

template <class T>
RowSlice<T> transpose_rows(MPI_Comm comm, const RowSlice<T>& slice, const std::vector<ordinal_t>& col_bounds) {
  Coll coll(comm);
  const auto& A = slice.entries;
  check_bounds(col_bounds, coll.size(), A.num_cols, "column bounds");
  RowSlice<T> out = start_slice<T>(coll);
  out.entries.num_rows = A.num_cols;
  out.entries.num_cols = A.num_rows;
  // Arriving from row blocks in rank order, each column's rows ascend;
  // sort_entries keeps that order within a column (stable) where it sorts.
  unpack(exchange(coll, A, true, [&](std::size_t k) { return owner(col_bounds, A.cols[k]); }), out.entries);
  sort_entries(out.entries);
  out.row_bounds = col_bounds;
  out.row_ids = slice.col_ids;
  out.col_ids = slice.row_ids;
  out.global_nnz = slice.global_nnz;
  out.info = slice.info;
  return out;
}

template <class T>
RowSlice<T> reindex_rows(MPI_Comm comm, const RowSlice<T>& heldout, const RowSlice<T>& training, io::UnknownIds policy,
                         const std::string& source) {
  Coll coll(comm);
  // Entries of the held-out matrix on lower ranks (its order: ranks in order).
  const auto nnz = coll.allgather_host(std::vector<std::int64_t>{static_cast<std::int64_t>(heldout.entries.nnz())});
  std::size_t before = 0;
  for (int q = 0; q < coll.rank(); ++q) before += static_cast<std::size_t>(nnz[q]);
  io::RatingData<T> held, train;
  held.matrix = heldout.entries;
  held.user_ids = heldout.row_ids;
  held.item_ids = heldout.col_ids;
  train.matrix.num_rows = training.entries.num_rows;
  train.matrix.num_cols = training.entries.num_cols;
  train.user_ids = training.row_ids;
  train.item_ids = training.col_ids;
  RowSlice<T> out = start_slice<T>(coll);
  step(coll, [&] { out.entries = io::reindex_ratings(held, train, policy, source, before).matrix; });
  out.row_ids = training.row_ids;
  out.col_ids = training.col_ids;
  out.info = heldout.info;
  out.global_nnz = sum_over(coll, static_cast<std::int64_t>(out.entries.nnz()));
  return out;
}

#define KFACTOR_DISTRIBUTED_READ_INSTANTIATE(T)                                                          \
  template RowSlice<T> read_rows<T>(MPI_Comm, const std::string&, io::Format, const io::ReadOptions&);   \
  template RowSlice<T> move_rows<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&);        \
  template CooMatrix<T> move_blocks<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&,      \
                                       const std::vector<ordinal_t>&);                                   \
  template std::vector<offset_t> global_row_counts<T>(MPI_Comm, const RowSlice<T>&);                     \
  template std::vector<offset_t> global_column_counts<T>(MPI_Comm, const RowSlice<T>&);                  \
  template RowSlice<T> transpose_rows<T>(MPI_Comm, const RowSlice<T>&, const std::vector<ordinal_t>&);   \
  template RowSlice<T> reindex_rows<T>(MPI_Comm, const RowSlice<T>&, const RowSlice<T>&, io::UnknownIds, \
                                       const std::string&);
KFACTOR_DISTRIBUTED_READ_INSTANTIATE(float)
KFACTOR_DISTRIBUTED_READ_INSTANTIATE(double)

}  // namespace kfactor::distributed
