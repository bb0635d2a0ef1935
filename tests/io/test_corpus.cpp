// Every file of the malformed-input corpus through the library: err files
// raise InputError naming the file and the expected line (in float and
// double, from disk and from memory), or for HDF5 CSR the dataset or
// attribute; ok files read. Automatic detection must never crash either
// way. Factor files go through read_factor_file.
#include <kfactor/config.hpp>
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>

#include "corpus.hpp"
#include "io_test_util.hpp"

namespace {
using namespace kfactor;
using kfactor::test::corpus_files;

TEST(Corpus, HasAtLeastFiftyMalformedFiles) {
  const auto files = corpus_files();
  const auto bad = std::count_if(files.begin(), files.end(), [](const auto& c) { return !c.ok; });
  EXPECT_GE(bad, 50);
  for (const auto& c : files) EXPECT_FALSE(c.format.empty()) << "badly named corpus file " << c.filename;
  for (const char* f : {"mm", "edges", "ratings", "bmf", "dense", "factor", "h5csr"})
    EXPECT_TRUE(std::any_of(files.begin(), files.end(), [&](const auto& c) { return c.format == f && !c.ok; }))
        << "no malformed " << f << " file";
}

template <class T>
void check_file(const kfactor::test::CorpusFile& c) {
  SCOPED_TRACE(c.filename);
  io::ReadOptions opt;
  if (c.strict_duplicates) opt.duplicates = io::DuplicatePolicy::error;
  const auto format = io::parse_format(c.format);
  if (c.ok) {
    io::ReadInfo info;
    CooMatrix<T> A;
    ASSERT_NO_THROW(A = io::read_matrix<T>(c.path, format, opt, &info));
    kfactor::test::expect_canonical(A);
    EXPECT_GT(A.nnz(), 0u);
    return;
  }
  ASSERT_GT(c.line, 0) << "err files name their expected line";
  kfactor::test::expect_input_error([&] { (void)io::read_matrix<T>(c.path, format, opt); }, c.path, c.line);
  const std::string text = io::read_file(c.path);
  kfactor::test::expect_input_error([&] { (void)io::parse_matrix<T>(text, "buffer", format, opt); }, "buffer", c.line);
  // Automatic detection may misjudge a broken file, but must fail cleanly or
  // produce a canonical matrix.
  try {
    kfactor::test::expect_canonical(io::parse_matrix<T>(text, c.filename, io::Format::automatic, opt));
  } catch (const InputError& e) {
    EXPECT_GE(e.line(), 1) << e.what();
    EXPECT_EQ(e.file(), c.filename);
  }
}

void check_factor_file(const kfactor::test::CorpusFile& c) {
  SCOPED_TRACE(c.filename);
  if (c.ok) {
    io::FactorFile f;
    ASSERT_NO_THROW(f = io::read_factor_file(c.path));
    EXPECT_GE(f.rank, 1);
    EXPECT_GE(f.rows(), 1u);
    EXPECT_EQ(f.values.size(), f.rows() * static_cast<std::size_t>(f.rank));
    return;
  }
  ASSERT_GT(c.line, 0) << "err files name their expected line";
  kfactor::test::expect_input_error([&] { (void)io::read_factor_file(c.path); }, c.path, c.line);
  // From memory under the file's own name (which picks CSV or Matrix Market).
  const std::string text = io::read_file(c.path);
  kfactor::test::expect_input_error([&] { (void)io::parse_factor_file(text, c.filename); }, c.filename, c.line);
}

/// HDF5 CSR: InputError naming the file (line 0: no lines) and the dataset
/// or attribute, from read_input with --format h5csr and, for a file with the
/// HDF5 signature, detected.
template <class T>
void check_h5csr_file(const kfactor::test::CorpusFile& c) {
  SCOPED_TRACE(c.filename);
  if (c.ok) {
    io::RatingData<T> r;
    ASSERT_NO_THROW(r = io::read_input<T>(c.path, io::Format::h5csr));
    kfactor::test::expect_canonical(r.matrix);
    EXPECT_EQ(r.user_ids.empty(), r.item_ids.empty());
    return;
  }
  ASSERT_TRUE(!c.object.empty() || c.filename.find("_file_") != std::string::npos)
      << "h5csr err files name their dataset or attribute";
  kfactor::test::expect_input_error([&] { (void)io::read_input<T>(c.path, io::Format::h5csr); }, c.path, 0, c.object);
  if (io::is_hdf5_file(c.path))
    kfactor::test::expect_input_error([&] { (void)io::read_input<T>(c.path); }, c.path, 0, c.object);
}

TEST(Corpus, EveryFileGivesItsOutcome) {
  for (const auto& c : corpus_files()) {
    if (c.format == "factor") {
      check_factor_file(c);
      continue;
    }
    if (c.format == "h5csr") {
#if defined(KFACTOR_HAVE_HDF5)
      check_h5csr_file<double>(c);
      check_h5csr_file<float>(c);
#endif
      continue;
    }
    check_file<double>(c);
    check_file<float>(c);
  }
}

TEST(Corpus, WellFormedFilesHaveTheExpectedContent) {
  const std::string dir = std::string(KFACTOR_SOURCE_DIR) + "/tests/io/malformed/";
  const auto crlf = io::read_matrix_market<double>(dir + "mm_ok_crlf.mtx");
  EXPECT_EQ((kfactor::test::as_map(crlf)), (std::map<std::pair<int, int>, double>{{{0, 0}, 1.5}, {{2, 1}, -2}}));
  io::ReadInfo info;
  const auto g = io::read_edges<double>(dir + "edges_ok_crlf_tabs_count_line.txt", {}, &info);
  EXPECT_EQ(g.num_rows, 5);
  EXPECT_EQ(g.nnz(), 3u);
  EXPECT_EQ(info.header_count.value_or(-1), 5);
  const auto r = io::read_ratings<double>(dir + "ratings_ok_crlf.csv");
  EXPECT_EQ(r.user_ids, (std::vector<std::int64_t>{1, 6}));
  EXPECT_EQ(r.matrix.nnz(), 3u);
  const auto b = io::read_bmf<double>(dir + "bmf_ok_duplicates_merged.in", {}, &info);
  EXPECT_EQ(b.nnz(), 2u);
  EXPECT_EQ(info.duplicates, 1);
  const auto d = io::read_dense<double>(dir + "dense_ok_crlf.txt");
  EXPECT_EQ(d.num_rows, 3);
  EXPECT_EQ(d.num_cols, 4);
  EXPECT_EQ(d.nnz(), 5u);
  // CR-only line ends are line ends, not one long row
  const auto cr = io::read_dense<double>(dir + "dense_ok_cr_only.txt");
  EXPECT_EQ(cr.num_rows, 3);
  EXPECT_EQ(cr.num_cols, 3);
  const auto ecr = io::read_edges<double>(dir + "edges_ok_cr_only_line_ends.txt", {}, &info);
  EXPECT_EQ((kfactor::test::as_map(ecr)),
            (std::map<std::pair<int, int>, double>{{{0, 1}, 1}, {{1, 2}, 1}, {{2, 0}, 1}}));
  EXPECT_EQ(info.lines, 3);
  const auto fac = io::read_factor_file(dir + "factor_ok_written.csv");
  ASSERT_EQ(fac.rank, 2);
  EXPECT_EQ(fac.ids, (std::vector<std::int64_t>{10, 3}));
  EXPECT_EQ(fac.values, (std::vector<double>{0.5, -1, 2, 0}));
  EXPECT_EQ(fac.find(3), std::optional<std::size_t>(1));
  EXPECT_FALSE(fac.find(4).has_value());
  const auto arr = io::read_factor_file(dir + "factor_ok_array.mtx");
  ASSERT_EQ(arr.rank, 2);
  EXPECT_EQ(arr.ids, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(arr.values, (std::vector<double>{1, 3, 2, 4}));  // column-major in the file
  // read_file refuses a file larger than the memory limit before reading it
  kfactor::test::expect_input_error([&] { (void)io::read_file(dir + "mm_ok_crlf.mtx", 10); }, dir + "mm_ok_crlf.mtx", 0,
                                    "memory limit");
}

}  // namespace
