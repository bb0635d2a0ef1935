// `kfactor info` as a user runs it: every corpus file gives exit code 3 and a
// stderr message naming the file and line, or for HDF5 CSR the dataset or
// attribute (ok files exit 0); --json prints one object with the real data
// set's shape; usage errors exit 2; a ratings file's timestamp range is
// the one the reader kept. `kfactor convert` writes an HDF5 CSR file that
// info and the library read as the text it came from.
#include <kfactor/config.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>

#include "common/cli.hpp"
#include "common/test_spaces.hpp"
#include "corpus.hpp"
#include "io_test_util.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include <sys/stat.h>
#include <sys/wait.h>

namespace {
using kfactor::test::CliRun;
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::slurp;
using kfactor::test::TempDir;

TEST(CliInfo, CorpusExitCodesAndMessages) {
  TempDir dir;
  // Factor files are not matrices `kfactor info` reads (test_corpus.cpp
  // reads them through the library).
  auto files = kfactor::test::corpus_files();
  std::erase_if(files, [](const auto& c) { return c.format == "factor"; });
#if !defined(KFACTOR_HAVE_HDF5)
  std::erase_if(files, [](const auto& c) { return c.format == "h5csr"; });
#endif
  // Process start-up dominates (about 0.3-0.7 s here), so run a few at once.
  std::vector<CliRun> runs(files.size());
  constexpr std::size_t parallel = 4;
  for (std::size_t b = 0; b < files.size(); b += parallel) {
    std::vector<std::future<void>> batch;
    for (std::size_t k = b; k < std::min(files.size(), b + parallel); ++k)
      batch.push_back(std::async(std::launch::async, [&, k] {
        const auto& c = files[k];
        std::string args = "info --input " + quote(c.path) + " --format " + c.format;
        if (c.strict_duplicates) args += " --duplicates error";
        runs[k] = run_kfactor(args, dir, "", static_cast<int>(k));
      }));
    for (auto& f : batch) f.get();
  }
  int checked = 0;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const auto& c = files[k];
    const auto& r = runs[k];
    SCOPED_TRACE(c.filename);
    if (c.ok) {
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_NE(r.out.find("shape"), std::string::npos) << r.out;
      continue;
    }
    EXPECT_EQ(r.code, 3) << r.err;
    if (c.format == "h5csr")  // no lines: the file, then the dataset or attribute
      EXPECT_NE(r.err.find(c.path + ": " + c.object), std::string::npos) << r.err;
    else
      EXPECT_NE(r.err.find(c.path + ":" + std::to_string(c.line) + ": "), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

TEST(CliInfo, JsonOnRealData) {
  const auto path = kfactor::test::data_path("snap/p2p-Gnutella08.txt");
  if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
  TempDir dir;
  const CliRun r = run_kfactor("info --input " + quote(path) + " --json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "info");
  EXPECT_EQ(j["rows"], 6301);
  EXPECT_EQ(j["cols"], 6301);
  EXPECT_EQ(j["nnz"], 20777);
  EXPECT_EQ(j["info"]["format"], "edges");
  EXPECT_EQ(j["info"]["header_count"], "6350");
  EXPECT_EQ(j["duplicates_merged"], 0);
  EXPECT_DOUBLE_EQ(j["density"].get<double>(), 20777.0 / (6301.0 * 6301.0));
  // human output names the format too
  const CliRun h = run_kfactor("info --input " + quote(path), dir);
  ASSERT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("6301 x 6301"), std::string::npos) << h.out;
}

TEST(CliInfo, NonRegularAndAmbiguousInputs) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("folder.mtx"));
  ASSERT_EQ(::mkfifo(dir.file("pipe.txt").c_str(), 0600), 0);
  // `timeout` turns a read that blocks on the FIFO into exit 124, not a hang.
  for (const auto& [path, kind] : {std::pair{dir.file("folder.mtx"), std::string("is a directory")},
                                   std::pair{dir.file("pipe.txt"), std::string("is a FIFO")}}) {
    const CliRun r = run_kfactor("info --input " + quote(path), dir, "timeout 20");
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find(path + ": " + kind), std::string::npos) << r.err;
  }
  // three numeric columns: auto refuses and asks for --format; given, it reads
  const std::string tsv = dir.file("ratings.tsv");
  std::ofstream(tsv) << "196\t242\t3\n186\t302\t3\n";
  const CliRun a = run_kfactor("info --input " + quote(tsv), dir);
  EXPECT_EQ(a.code, 3) << a.err;
  EXPECT_NE(a.err.find(tsv + ":1: "), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("--format ratings"), std::string::npos) << a.err;
  const CliRun b = run_kfactor("info --input " + quote(tsv) + " --format ratings --json", dir);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out)["rows"], 2);
}

TEST(CliInfo, TimestampRangeIsTheOneTheReaderKept) {
  // Random ratings with random 64-bit timestamps (the largest int64 among
  // them, negatives too); one (user, item) pair is listed twice, its first
  // line holding the earliest timestamp of the file. The reader keeps the
  // pair's latest timestamp, so the earliest the report may name is the
  // earliest of the kept ones, not of the lines.
  TempDir dir("info_times");
  std::mt19937_64 rng(20250219);
  std::uniform_int_distribution<std::int64_t> when(-1'000'000'000'000, 4'000'000'000'000'000'000);
  std::map<std::pair<int, int>, std::int64_t> kept;  // (user, item) -> latest timestamp
  const std::string timed = dir.file("timed.csv");
  {
    std::ofstream f(timed);
    f << "userId,movieId,rating,timestamp\n";
    for (int u = 0; u < 40; ++u)
      for (int i = 0; i < 25; ++i) {
        const bool largest = u == 11 && i == 0;
        if (rng() % 3 != 0 && !largest && !(u == 7 && i == 3)) continue;
        const std::int64_t t = largest ? std::numeric_limits<std::int64_t>::max() : when(rng);
        f << 1000 + 17 * u << "," << 50 + 3 * i << "," << 1 + rng() % 5 << "," << t << "\n";
        kept[{u, i}] = t;
      }
    // The duplicate, after every other line: its first line is the earliest.
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (const auto& [pair, t] : kept) earliest = std::min(earliest, t);
    f << 1000 + 17 * 7 << "," << 50 + 3 * 3 << ",2," << earliest - 5 << "\n";
    kept[{7, 3}] = std::max(kept[{7, 3}], earliest - 5);
  }
  ASSERT_TRUE(kept.count({11, 0}));
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const auto& [pair, t] : kept) {
    first = std::min(first, t);
    last = std::max(last, t);
  }
  EXPECT_EQ(last, std::numeric_limits<std::int64_t>::max());
  for (const char* policy : {"last", "sum"}) {
    SCOPED_TRACE(policy);
    const CliRun r = run_kfactor("info --json --duplicates " + std::string(policy) + " --input " + quote(timed), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["nnz"], kept.size());
    EXPECT_EQ(j["duplicates_merged"], 1);
    EXPECT_EQ(j["info"]["has_timestamps"], "true");
    // Strings: a double would round the largest int64.
    EXPECT_EQ(j["info"]["first_timestamp"], std::to_string(first));
    EXPECT_EQ(j["info"]["last_timestamp"], std::to_string(last));
  }
  // The default policy refuses the duplicate (a file with values).
  EXPECT_EQ(run_kfactor("info --input " + quote(timed), dir).code, 3);
  // The text output names the same facts.
  const CliRun text = run_kfactor("info --duplicates last --input " + quote(timed), dir);
  ASSERT_EQ(text.code, 0) << text.err;
  for (const std::string& line :
       {std::string("has_timestamps       true"), "first_timestamp      " + std::to_string(first),
        "last_timestamp       " + std::to_string(last)})
    EXPECT_NE(text.out.find("  " + line + "\n"), std::string::npos) << line << "\n" << text.out;
  // Without a timestamp column (ratings, and a format that has none): false,
  // and no range.
  const std::string untimed = dir.file("untimed.csv"), mm = dir.file("a.mtx");
  std::ofstream(untimed) << "userId,movieId,rating\n1,10,4\n2,10,3.5\n";
  std::ofstream(mm) << "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.5\n2 2 -3\n";
  for (const auto& path : {untimed, mm}) {
    SCOPED_TRACE(path);
    const CliRun r = run_kfactor("info --json --input " + quote(path), dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["info"]["has_timestamps"], "false");
    EXPECT_FALSE(j["info"].contains("first_timestamp")) << r.out;
    EXPECT_FALSE(j["info"].contains("last_timestamp")) << r.out;
    const CliRun t = run_kfactor("info --input " + quote(path), dir);
    ASSERT_EQ(t.code, 0) << t.err;
    EXPECT_NE(t.out.find("has_timestamps       false\n"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("first_timestamp"), std::string::npos) << t.out;
  }
}

TEST(CliInfo, UsageAndMissingFiles) {
  TempDir dir;
  const std::string some = quote(std::string(KFACTOR_SOURCE_DIR) + "/tests/io/malformed/mm_ok_crlf.mtx");
  EXPECT_EQ(run_kfactor("info --input " + some + " --format xml", dir).code, 2);
  EXPECT_EQ(run_kfactor("info", dir).code, 2);
  const CliRun missing = run_kfactor("info --input " + quote(dir.file("does-not-exist.mtx")), dir);
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("does-not-exist.mtx"), std::string::npos) << missing.err;
}

TEST(Hdf5CsrCli, ConvertThenInfoAndEveryReader) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#endif
  const auto path = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
  TempDir dir("h5csr_cli");
  const std::string h5 = dir.file("ratings.h5");
  const auto c = run_kfactor("convert " + quote(path) + " " + quote(h5) + " --json", dir);
  ASSERT_EQ(c.code, 0) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["command"], "convert");
  EXPECT_EQ(j["nnz"], 100836);
  EXPECT_EQ(j["info"]["ids"], "row_ids, col_ids");
  // The file holds what the text reader reads, ids included.
  const auto text = kfactor::io::read_ratings<double>(path);
  const auto bin = kfactor::io::read_input<double>(h5);
  EXPECT_EQ(bin.matrix.rows, text.matrix.rows);
  EXPECT_EQ(bin.matrix.cols, text.matrix.cols);
  EXPECT_EQ(bin.matrix.values, text.matrix.values);
  EXPECT_EQ(bin.user_ids, text.user_ids);
  EXPECT_EQ(bin.item_ids, text.item_ids);
  // `kfactor info` on both: the same shape and values.
  const auto a = run_kfactor("info --json --input " + quote(path), dir);
  const auto b = run_kfactor("info --json --input " + quote(h5), dir);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  for (const char* k : {"rows", "cols", "nnz", "min_value", "max_value", "empty_rows"}) EXPECT_EQ(ja[k], jb[k]) << k;
  EXPECT_EQ(jb["info"]["format"], "h5csr");
  EXPECT_EQ(ja["info"]["user_id_range"], jb["info"]["user_id_range"]);
  // OUT == IN is refused (exit 2), under another spelling too; the input stays.
  const auto size = std::filesystem::file_size(h5);
  const auto same = run_kfactor("convert " + quote(h5) + " " + quote(dir.path.string() + "/./ratings.h5"), dir);
  EXPECT_EQ(same.code, 2) << same.err;
  EXPECT_EQ(std::filesystem::file_size(h5), size);
  // A malformed input: exit 3 naming the file and line; no output appears.
  const std::string bad = std::string(KFACTOR_SOURCE_DIR) + "/tests/io/malformed/ratings_err_L3_inf_rating.csv";
  const auto e = run_kfactor("convert " + quote(bad) + " " + quote(dir.file("bad.h5")), dir);
  EXPECT_EQ(e.code, 3) << e.err;
  EXPECT_NE(e.err.find(bad + ":3: "), std::string::npos) << e.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.h5")));
  // --format h5csr on a text file: exit 3 naming it.
  const auto t = run_kfactor("info --format h5csr --input " + quote(path), dir);
  EXPECT_EQ(t.code, 3) << t.err;
  EXPECT_NE(t.err.find(path + ": "), std::string::npos) << t.err;
}

}  // namespace
