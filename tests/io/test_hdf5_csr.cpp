// HDF5 CSR files (io/hdf5_csr.hpp, io/input.hpp): write -> read whole gives
// the same matrix and ids bit for bit (float64 and float32 storage); row
// ranges equal the whole read's rows; the layout is scipy's (read back by
// h5py + scipy, and a file h5py writes with int64 indices reads); writes are
// atomic and refuse the input; detection by signature. The malformed files
// are in the corpus (test_corpus.cpp); `kfactor convert` in test_cli_info.cpp.
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include "checkpoint/write_targets.hpp"
#include "common/test_spaces.hpp"
#include "io_test_util.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

namespace {
using namespace kfactor;
using kfactor::test::quote;
using kfactor::test::TempDir;

/// A random m x n matrix with about `density` of its entries (sorted,
/// unique), values with full mantissas, some negative, a few empty rows.
template <class T>
CooMatrix<T> random_matrix(std::int64_t m, std::int64_t n, double density, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  CooMatrix<T> A;
  A.num_rows = m;
  A.num_cols = n;
  for (std::int64_t i = 0; i < m; ++i) {
    if (u(g) < 0.1) continue;  // an empty row
    for (std::int64_t j = 0; j < n; ++j)
      if (u(g) < density) {
        A.rows.push_back(static_cast<ordinal_t>(i));
        A.cols.push_back(static_cast<ordinal_t>(j));
        A.values.push_back(static_cast<T>((u(g) - 0.3) * 1e3 / 7.0));
      }
  }
  return A;
}

std::vector<std::int64_t> ascending_ids(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  std::int64_t id = -50;
  for (auto& x : ids) x = id += 1 + static_cast<std::int64_t>(g() % 1000);
  return ids;
}

template <class T>
void expect_same(const CooMatrix<T>& a, const CooMatrix<T>& b) {
  ASSERT_EQ(a.num_rows, b.num_rows);
  ASSERT_EQ(a.num_cols, b.num_cols);
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.cols, b.cols);
  ASSERT_EQ(a.values.size(), b.values.size());
  EXPECT_EQ(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(T)), 0) << "values differ";
}

template <class T>
class Hdf5Csr : public ::testing::Test {};
using Precisions = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Hdf5Csr, Precisions);

TYPED_TEST(Hdf5Csr, RoundTripIsExact) {
  using T = TypeParam;
  TempDir dir("h5csr");
  const auto A = random_matrix<T>(57, 43, 0.15, 11);
  ASSERT_GT(A.nnz(), 100u);
  const auto rows = ascending_ids(A.num_rows, 1), cols = ascending_ids(A.num_cols, 2);
  const std::string path = dir.file("a.h5");
  io::write_hdf5_csr(path, A, rows, cols);
  EXPECT_TRUE(io::is_hdf5_file(path));
  io::ReadInfo info;
  const auto back = io::read_hdf5_csr<T>(path, {}, &info);
  expect_same(back.matrix, A);
  EXPECT_EQ(back.user_ids, rows);
  EXPECT_EQ(back.item_ids, cols);
  EXPECT_EQ(info.format, io::Format::h5csr);
  EXPECT_EQ(info.entries_read, static_cast<std::int64_t>(A.nnz()));
  EXPECT_NE(info.detail.find("int32 indices"), std::string::npos) << info.detail;
  // Detected by its signature through the common entry, whatever the name.
  const std::string renamed = dir.file("matrix.csv");
  std::filesystem::copy_file(path, renamed);
  expect_same(io::read_input<T>(renamed).matrix, A);
  // Without ids, and with float32 storage (exact for float values).
  io::Hdf5CsrWriteOptions single;
  single.single_precision = true;
  io::write_hdf5_csr(path, A, {}, {}, single);
  const auto b = io::read_hdf5_csr<T>(path, {}, &info);
  EXPECT_TRUE(b.user_ids.empty() && b.item_ids.empty());
  EXPECT_NE(info.detail.find("float32 values"), std::string::npos) << info.detail;
  if constexpr (std::is_same_v<T, float>)
    expect_same(b.matrix, A);
  else
    for (std::size_t e = 0; e < A.nnz(); ++e) ASSERT_EQ(b.matrix.values[e], double(float(A.values[e])));
}

TYPED_TEST(Hdf5Csr, RowRangesEqualTheWholeRead) {
  using T = TypeParam;
  TempDir dir("h5csr_rows");
  const auto A = random_matrix<T>(90, 31, 0.2, 23);
  const std::string path = dir.file("a.h5");
  io::write_hdf5_csr(path, A);
  std::mt19937_64 g(5);
  io::Hdf5CsrReader reader(path);
  for (int trial = 0; trial < 40; ++trial) {
    std::int64_t r0 = static_cast<std::int64_t>(g() % 91), r1 = static_cast<std::int64_t>(g() % 91);
    if (r0 > r1) std::swap(r0, r1);
    const auto part = trial % 2 ? reader.read_rows<T>(r0, r1) : io::read_hdf5_csr_rows<T>(path, r0, r1);
    ASSERT_EQ(part.first_row, r0);
    ASSERT_EQ(part.row_map.size(), static_cast<std::size_t>(r1 - r0 + 1));
    EXPECT_EQ(part.num_rows, A.num_rows);
    EXPECT_EQ(part.num_cols, A.num_cols);
    // The whole read's entries of rows [r0, r1), in order.
    std::size_t k = 0;
    for (std::size_t e = 0; e < A.nnz(); ++e) {
      if (A.rows[e] < r0 || A.rows[e] >= r1) continue;
      ASSERT_LT(k, part.cols.size());
      const auto local = static_cast<std::size_t>(A.rows[e] - r0);
      ASSERT_GE(static_cast<std::int64_t>(k), part.row_map[local]);
      ASSERT_LT(static_cast<std::int64_t>(k), part.row_map[local + 1]);
      EXPECT_EQ(part.cols[k], A.cols[e]);
      EXPECT_EQ(part.values[k], A.values[e]);
      ++k;
    }
    EXPECT_EQ(k, part.cols.size());
  }
  EXPECT_THROW((void)reader.read_rows<T>(5, 3), UsageError);
  EXPECT_THROW((void)reader.read_rows<T>(0, 91), UsageError);
}

TEST(Hdf5CsrFile, NonNegativeAndFloatRangeChecksNameTheEntry) {
  TempDir dir("h5csr_checks");
  CooMatrix<double> A;
  A.num_rows = 2;
  A.num_cols = 3;
  A.rows = {0, 1, 1};
  A.cols = {2, 0, 1};
  A.values = {1.0, -2.0, 1e300};
  const std::string path = dir.file("a.h5");
  io::write_hdf5_csr(path, A);
  io::ReadOptions nonneg;
  nonneg.non_negative = true;
  kfactor::test::expect_input_error([&] { (void)io::read_hdf5_csr<double>(path, nonneg); }, path, 0,
                                    "dataset /data: /data[1] (row 1, column 0) = -2 is negative");
  kfactor::test::expect_input_error([&] { (void)io::read_hdf5_csr<float>(path); }, path, 0,
                                    "/data[2] (row 1, column 1) = 1e+300 does not fit in single precision");
  EXPECT_NO_THROW((void)io::read_hdf5_csr<double>(path));
  // The memory limit is checked before the entries are allocated.
  io::ReadOptions tiny;
  tiny.memory_limit = 16;
  kfactor::test::expect_input_error([&] { (void)io::read_hdf5_csr<double>(path, tiny); }, path, 0, "memory limit");
}

TEST(Hdf5CsrFile, WritesAtomicallyAndNeverOverTheInput) {
  TempDir dir("h5csr_write");
  const auto A = random_matrix<double>(10, 8, 0.3, 3);
  const std::string path = dir.file("a.h5");
  io::write_hdf5_csr(path, A);
  const auto size = std::filesystem::file_size(path);
  {
    io::Hdf5CsrWriteOptions o;
    o.inputs = {path};
    EXPECT_THROW(io::write_hdf5_csr(path, A, {}, {}, o), UsageError);
  }
  EXPECT_EQ(std::filesystem::file_size(path), size);
  // Not canonical: refused before anything is written.
  auto B = A;
  std::swap(B.cols[0], B.cols[1]);
  if (B.rows[0] == B.rows[1]) EXPECT_THROW(io::write_hdf5_csr(dir.file("b.h5"), B), UsageError);
  EXPECT_THROW(io::write_hdf5_csr(dir.file("c.h5"), A, {1, 2}, {}), UsageError);
  // A directory as target; nothing is left beside it.
  std::filesystem::create_directory(dir.file("d.h5"));
  EXPECT_THROW(io::write_hdf5_csr(dir.file("d.h5"), A), UsageError);
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  EXPECT_FALSE(io::is_hdf5_file(dir.file("d.h5")));
  EXPECT_FALSE(io::is_hdf5_file(dir.file("missing.h5")));
}

TEST(Hdf5CsrFile, TheSameMatrixWritesTheSameBytes) {
  TempDir dir("h5csr_same");
  const auto A = random_matrix<double>(20, 9, 0.3, 4);
  kfactor::test::expect_same_bytes_a_second_apart(dir.path, [&](const std::string& path) {
    io::write_hdf5_csr(path, A, ascending_ids(20, 1), ascending_ids(9, 2));
  });
}

/// Whether python3 with h5py and scipy is there.
bool have_scipy() { return std::system("python3 -c 'import h5py, scipy.sparse, numpy' >/dev/null 2>&1") == 0; }

TEST(Hdf5CsrFile, ScipyReadsItAndItReadsH5py) {
  if (!have_scipy()) GTEST_SKIP() << "python3 with h5py and scipy not found";
  TempDir dir("h5csr_scipy");
  const auto A = random_matrix<double>(33, 21, 0.2, 41);
  const auto rows = ascending_ids(A.num_rows, 7), cols = ascending_ids(A.num_cols, 8);
  const std::string ours = dir.file("ours.h5"), theirs = dir.file("theirs.h5"), out = dir.file("out.txt");
  io::write_hdf5_csr(ours, A, rows, cols);
  // scipy builds the matrix from our datasets as its documentation says,
  // prints it as triplets, and writes the transpose with int64 indices and
  // float32 values the way h5py does.
  const std::string script = dir.file("s.py");
  std::ofstream(script) << "import sys, h5py, numpy as np, scipy.sparse as sp\n"
                           "f = h5py.File(sys.argv[1], 'r')\n"
                           "A = sp.csr_matrix((f['data'], f['indices'], f['indptr']), shape=f.attrs['shape'])\n"
                           "C = A.tocoo()\n"
                           "with open(sys.argv[3], 'w') as o:\n"
                           "    o.write('%d %d %d\\n' % (A.shape[0], A.shape[1], A.nnz))\n"
                           "    for i, j, v in zip(C.row, C.col, C.data): o.write('%d %d %r\\n' % (i, j, float(v)))\n"
                           "    o.write(' '.join(map(str, f['row_ids'][:])) + '\\n')\n"
                           "T = A.T.tocsr(); T.sort_indices()\n"
                           "with h5py.File(sys.argv[2], 'w') as g:\n"
                           "    g.attrs['shape'] = np.array(T.shape, dtype=np.int64)\n"
                           "    g['indptr'] = T.indptr.astype(np.int64)\n"
                           "    g['indices'] = T.indices.astype(np.int64)\n"
                           "    g['data'] = T.data.astype(np.float32)\n";
  ASSERT_EQ(
      std::system(("python3 " + quote(script) + " " + quote(ours) + " " + quote(theirs) + " " + quote(out)).c_str()),
      0);
  std::ifstream in(out);
  std::int64_t m = 0, n = 0, nnz = 0;
  in >> m >> n >> nnz;
  EXPECT_EQ(m, A.num_rows);
  EXPECT_EQ(n, A.num_cols);
  ASSERT_EQ(nnz, static_cast<std::int64_t>(A.nnz()));
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    std::int64_t i = 0, j = 0;
    double v = 0;
    in >> i >> j >> v;
    EXPECT_EQ(i, A.rows[e]);
    EXPECT_EQ(j, A.cols[e]);
    EXPECT_EQ(v, A.values[e]);  // repr() round-trips
  }
  for (const auto id : rows) {
    std::int64_t x = 0;
    in >> x;
    EXPECT_EQ(x, id);
  }
  io::ReadInfo info;
  const auto t = io::read_input<double>(theirs, io::Format::automatic, {}, &info);
  EXPECT_NE(info.detail.find("int64 indices, float32 values"), std::string::npos) << info.detail;
  ASSERT_EQ(t.matrix.num_rows, A.num_cols);
  ASSERT_EQ(t.matrix.nnz(), A.nnz());
  std::set<std::tuple<int, int, double>> want, got;
  for (std::size_t e = 0; e < A.nnz(); ++e) want.insert({A.cols[e], A.rows[e], double(float(A.values[e]))});
  for (std::size_t e = 0; e < t.matrix.nnz(); ++e) got.insert({t.matrix.rows[e], t.matrix.cols[e], t.matrix.values[e]});
  EXPECT_EQ(got, want);
  kfactor::test::expect_canonical(t.matrix);
}

}  // namespace
