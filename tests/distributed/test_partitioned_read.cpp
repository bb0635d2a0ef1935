// distributed::read_rows under mpiexec (1..4 ranks) against io::read_input
// in one process: on every file of the malformed-input corpus (text, dense
// and HDF5 CSR; float and double) the same error on every rank (kind, file,
// line and message) or the same matrix, ids and read info, each rank holding
// its rows only; on the shared data sets (with options: symmetrized,
// non-negative) and on an HDF5 CSR copy of one; a ratings file's
// timestamps, lines of users interleaved and duplicates merged, are the
// whole-file reader's; move_rows and transpose_rows give each rank exactly
// the whole matrix's rows (or columns) of its block, and the global counts
// are the whole matrix's.
#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/read.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>

#include "common/test_spaces.hpp"
#include "io/corpus.hpp"
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {
using namespace kfactor;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;

/// A read's outcome: the matrix with ids and info, or the error.
template <class T>
struct Outcome {
  std::optional<io::RatingData<T>> data;
  io::ReadInfo info;
  int code = 0;
  std::string what, file;
  std::int64_t line = 0;
  bool agreed = false;
};

template <class T, class F>
Outcome<T> outcome(F&& f) {
  Outcome<T> o;
  try {
    o.data = f(o.info);
  } catch (const InputError& e) {
    o.code = 3;
    o.what = e.what();
    o.file = e.file();
    o.line = e.line();
    o.agreed = distributed::is_agreed(e);
  } catch (const Error& e) {
    o.code = e.exit_code();
    o.what = e.what();
    o.agreed = distributed::is_agreed(e);
  }
  return o;
}

/// Every rank's entries of `slice`, in rank order (the whole matrix when the
/// slice is row-partitioned), with the slice's ids.
template <class T>
io::RatingData<T> gather(const distributed::RowSlice<T>& slice) {
  distributed::detail::Collectives coll(MPI_COMM_WORLD);
  io::RatingData<T> out;
  out.matrix.num_rows = slice.entries.num_rows;
  out.matrix.num_cols = slice.entries.num_cols;
  out.matrix.rows = coll.allgather_host(slice.entries.rows);
  out.matrix.cols = coll.allgather_host(slice.entries.cols);
  out.matrix.values = coll.allgather_host(slice.entries.values);
  out.timestamps = coll.allgather_host(slice.timestamps);
  out.user_ids = slice.row_ids;
  out.item_ids = slice.col_ids;
  return out;
}

/// The slice's own invariants: its rows only, sorted, bounds tiling the rows.
template <class T>
void expect_row_slice(const distributed::RowSlice<T>& s) {
  ASSERT_EQ(s.row_bounds.size(), std::size_t(world_size()) + 1);
  EXPECT_EQ(s.row_bounds.front(), 0);
  EXPECT_EQ(s.row_bounds.back(), s.entries.num_rows);
  EXPECT_EQ(s.rank, world_rank());
  for (std::size_t e = 0; e < s.entries.nnz(); ++e) {
    ASSERT_GE(s.entries.rows[e], s.first_row());
    ASSERT_LT(s.entries.rows[e], s.first_row() + s.local_rows());
    if (e > 0)
      ASSERT_TRUE(std::pair(s.entries.rows[e - 1], s.entries.cols[e - 1]) <
                  std::pair(s.entries.rows[e], s.entries.cols[e]));
  }
}

template <class T>
void expect_same_data(const io::RatingData<T>& a, const io::RatingData<T>& b) {
  EXPECT_EQ(a.matrix.num_rows, b.matrix.num_rows);
  EXPECT_EQ(a.matrix.num_cols, b.matrix.num_cols);
  EXPECT_EQ(a.matrix.rows, b.matrix.rows);
  EXPECT_EQ(a.matrix.cols, b.matrix.cols);
  ASSERT_EQ(a.matrix.values.size(), b.matrix.values.size());
  EXPECT_EQ(std::memcmp(a.matrix.values.data(), b.matrix.values.data(), a.matrix.values.size() * sizeof(T)), 0);
  EXPECT_EQ(a.user_ids, b.user_ids);
  EXPECT_EQ(a.item_ids, b.item_ids);
  EXPECT_EQ(a.timestamps, b.timestamps);
}

/// read_rows on every rank against read_input here: same error or same data.
template <class T>
void compare(const std::string& path, io::Format format, const io::ReadOptions& opt, const std::string& name) {
  SCOPED_TRACE(name + (sizeof(T) == 4 ? " (float)" : " (double)") + " on " + std::to_string(world_size()) + " ranks");
  const auto whole = outcome<T>([&](io::ReadInfo& info) { return io::read_input<T>(path, format, opt, &info); });
  std::optional<distributed::RowSlice<T>> slice;
  const auto part = outcome<T>([&](io::ReadInfo& info) {
    slice = distributed::read_rows<T>(MPI_COMM_WORLD, path, format, opt);
    info = slice->info;
    return gather(*slice);
  });
  ASSERT_EQ(part.code, whole.code) << "whole: " << whole.what << "\npartitioned: " << part.what;
  if (whole.code != 0) {
    EXPECT_EQ(part.what, whole.what);
    EXPECT_EQ(part.file, whole.file);
    EXPECT_EQ(part.line, whole.line);
    EXPECT_TRUE(part.agreed || world_size() == 1) << "an error every rank throws is marked agreed";
    return;
  }
  expect_row_slice(*slice);
  expect_same_data(*part.data, *whole.data);
  EXPECT_EQ(slice->global_nnz, static_cast<std::int64_t>(whole.data->matrix.nnz()));
  EXPECT_EQ(part.info.format, whole.info.format);
  EXPECT_EQ(part.info.detail, whole.info.detail);
  EXPECT_EQ(part.info.lines, whole.info.lines);
  EXPECT_EQ(part.info.entries_read, whole.info.entries_read);
  EXPECT_EQ(part.info.duplicates, whole.info.duplicates);
  EXPECT_EQ(part.info.pattern, whole.info.pattern);
  EXPECT_EQ(part.info.header_count, whole.info.header_count);
  EXPECT_EQ(part.info.timestamps, whole.info.timestamps);
}

TEST(PartitionedRead, EveryCorpusFileGivesTheSingleRankOutcome) {
  int files = 0;
  for (const auto& c : kfactor::test::corpus_files()) {
    if (c.format == "factor") continue;
#if !defined(KFACTOR_HAVE_HDF5)
    if (c.format == "h5csr") continue;
#endif
    io::ReadOptions opt;
    if (c.strict_duplicates) opt.duplicates = io::DuplicatePolicy::error;
    const auto format = io::parse_format(c.format);
    compare<double>(c.path, format, opt, c.filename);
    compare<float>(c.path, format, opt, c.filename);
    // Detection too: the format and its errors as one process sees them.
    compare<double>(c.path, io::Format::automatic, opt, c.filename + " (auto)");
    ++files;
  }
  EXPECT_GE(files, 100);
}

TEST(PartitionedRead, SharedDataSets) {
  struct Case {
    std::string rel;
    io::Format format;
    io::ReadOptions opt;
  };
  io::ReadOptions symmetrize, nonneg, sum;
  symmetrize.symmetrize = true;
  nonneg.non_negative = true;
  sum.duplicates = io::DuplicatePolicy::sum;
  const std::vector<Case> cases = {
      {"movielens-latest-small/ratings.csv", io::Format::automatic, {}},
      {"movielens-latest-small/ratings.csv", io::Format::ratings, nonneg},
      {"snap/facebook_combined.txt", io::Format::automatic, symmetrize},
      {"snap/p2p-Gnutella08.txt", io::Format::automatic, {}},
      {"snap/p2p-Gnutella08.txt", io::Format::edges, sum},
      {"bmf/APatio.in", io::Format::automatic, {}},
  };
  for (const auto& c : cases) {
    const auto path = kfactor::test::data_path(c.rel);
    if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
    compare<double>(path, c.format, c.opt, c.rel);
    compare<float>(path, c.format, c.opt, c.rel);
  }
}

TEST(PartitionedRead, RatingsTimestampsAndMergedDuplicates) {
  const auto dir = shared_dir("partitioned_times");
  const std::string path = (dir / "r.csv").string();
  if (world_rank() == 0) {
    // 600 lines, users interleaved (every range holds several users' lines
    // and a user's lines lie in several ranges), some pairs given more than
    // once with their timestamps in any order.
    const CounterRng rng(11, RngStream::user);
    std::ofstream f(path);
    f << "userId,movieId,rating,timestamp\n";
    for (std::uint64_t k = 0; k < 600; ++k)
      f << 10 + 3 * (k % 37) << "," << 100 + (k * 7) % 11 << "," << 1 + k % 5 << "," << rng.bits(k) % 100000 << "\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  io::ReadOptions sum, last;
  sum.duplicates = io::DuplicatePolicy::sum;
  last.duplicates = io::DuplicatePolicy::last;
  compare<double>(path, io::Format::automatic, sum, "r.csv (sum)");
  compare<float>(path, io::Format::ratings, last, "r.csv (last)");
  // Not vacuous: the file has duplicates and the result its timestamps.
  const auto whole = io::read_ratings<double>(path, sum);
  EXPECT_LT(whole.matrix.nnz(), 600u);
  EXPECT_EQ(whole.timestamps.size(), whole.matrix.nnz());
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(PartitionedRead, Hdf5CsrCopyOfADataSet) {
  const auto path = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
  const auto dir = shared_dir("partitioned_h5");
  const std::string h5 = (dir / "ratings.h5").string();
  if (world_rank() == 0) {
    const auto r = io::read_ratings<double>(path);
    io::write_hdf5_csr(h5, r.matrix, r.user_ids, r.item_ids);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  compare<double>(h5, io::Format::automatic, {}, "ratings.h5");
  compare<float>(h5, io::Format::h5csr, {}, "ratings.h5");
  // The rows are the text's rows (HDF5 CSR files store no timestamps).
  auto text = gather(distributed::read_rows<double>(MPI_COMM_WORLD, path));
  EXPECT_FALSE(text.timestamps.empty());
  text.timestamps.clear();
  const auto bin = distributed::read_rows<double>(MPI_COMM_WORLD, h5);
  expect_row_slice(bin);
  expect_same_data(gather(bin), text);
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}
#endif

TEST(PartitionedRead, MovedAndTransposedRowsAreTheWholeMatrixs) {
  const auto path = kfactor::test::data_path("snap/p2p-Gnutella08.txt");
  if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
  const auto whole = io::read_input<double>(path).matrix;
  const auto slice = distributed::read_rows<double>(MPI_COMM_WORLD, path);
  const int P = world_size(), me = world_rank();
  // Global counts.
  std::vector<offset_t> rows(static_cast<std::size_t>(whole.num_rows), 0),
      cols(static_cast<std::size_t>(whole.num_cols), 0);
  for (std::size_t e = 0; e < whole.nnz(); ++e) {
    ++rows[static_cast<std::size_t>(whole.rows[e])];
    ++cols[static_cast<std::size_t>(whole.cols[e])];
  }
  EXPECT_EQ(distributed::global_row_counts(MPI_COMM_WORLD, slice), rows);
  EXPECT_EQ(distributed::global_column_counts(MPI_COMM_WORLD, slice), cols);
  // Rows to the nnz-balanced blocks, then the columns' side.
  const auto rb = distributed::detail::nonempty_balanced_blocks(rows, P);
  const auto cb = distributed::detail::nonempty_balanced_blocks(cols, P);
  const auto moved = distributed::move_rows(MPI_COMM_WORLD, slice, rb);
  expect_row_slice(moved);
  CooMatrix<double> mine;
  for (std::size_t e = 0; e < whole.nnz(); ++e)
    if (whole.rows[e] >= rb[me] && whole.rows[e] < rb[me + 1]) {
      mine.rows.push_back(whole.rows[e]);
      mine.cols.push_back(whole.cols[e]);
      mine.values.push_back(whole.values[e]);
    }
  EXPECT_EQ(moved.entries.rows, mine.rows);
  EXPECT_EQ(moved.entries.cols, mine.cols);
  EXPECT_EQ(moved.entries.values, mine.values);
  const auto t = distributed::transpose_rows(MPI_COMM_WORLD, moved, cb);
  expect_row_slice(t);
  EXPECT_EQ(t.entries.num_rows, whole.num_cols);
  EXPECT_EQ(t.entries.num_cols, whole.num_rows);
  // Columns of my block, by column then row: the transpose's rows.
  std::vector<std::tuple<int, int, double>> want;
  for (std::size_t e = 0; e < whole.nnz(); ++e)
    if (whole.cols[e] >= cb[me] && whole.cols[e] < cb[me + 1])
      want.emplace_back(whole.cols[e], whole.rows[e], whole.values[e]);
  std::sort(want.begin(), want.end());
  ASSERT_EQ(t.entries.nnz(), want.size());
  for (std::size_t e = 0; e < want.size(); ++e) {
    EXPECT_EQ(t.entries.rows[e], std::get<0>(want[e]));
    EXPECT_EQ(t.entries.cols[e], std::get<1>(want[e]));
    EXPECT_EQ(t.entries.values[e], std::get<2>(want[e]));
  }
  // Bounds that do not tile the rows are refused.
  auto bad = rb;
  bad.back() += 1;
  EXPECT_THROW((void)distributed::move_rows(MPI_COMM_WORLD, slice, bad), UsageError);
}

}  // namespace
