// The whole-file readers in pieces (io/detail/text_ranges.hpp), as a
// partitioned read runs them: for every corpus file with entry lines and
// every byte where a range may be cut, the body parsed as two line-aligned
// ranges (the second told the lines and entry lines before it) gives exactly
// the whole body's entries and line count, or the same first error (message
// and line); next_range_start() on the file finds the boundary the
// in-memory rule (range_start) names; headers read from doubling prefixes
// equal the whole file's; the shared data sets split at many places read as
// they do whole.
#include <kfactor/io/detail/text_ranges.hpp>
#include <kfactor/io/read.hpp>

#include "common/test_spaces.hpp"
#include "corpus.hpp"
#include "io_test_util.hpp"

#include <fstream>
#include <optional>

namespace {
using namespace kfactor;
namespace iod = kfactor::io::detail;

/// What parsing a body gave: its entries and lines, or its first error.
struct Outcome {
  std::optional<std::string> error;
  iod::TextEntries e;
  std::int64_t lines = 0;
};

void expect_same(const Outcome& a, const Outcome& b, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_EQ(a.error.has_value(), b.error.has_value()) << (a.error ? *a.error : "") << (b.error ? *b.error : "");
  if (a.error) {
    EXPECT_EQ(*a.error, *b.error);
    return;
  }
  EXPECT_EQ(a.lines, b.lines);
  EXPECT_EQ(a.e.rows, b.e.rows);
  EXPECT_EQ(a.e.cols, b.e.cols);
  EXPECT_EQ(a.e.vals, b.e.vals);
  EXPECT_EQ(a.e.lines, b.e.lines);
  EXPECT_EQ(a.e.user_ids, b.e.user_ids);
  EXPECT_EQ(a.e.item_ids, b.e.item_ids);
  EXPECT_EQ(a.e.count, b.e.count);
}

/// The body of `text` as ranges cut at `cuts` (ascending line boundaries).
Outcome parse_ranges(const iod::TextHeader& h, std::string_view text, const io::ReadOptions& opt,
                     const std::vector<std::size_t>& cuts) {
  Outcome out;
  std::vector<std::size_t> at{static_cast<std::size_t>(h.body_offset)};
  at.insert(at.end(), cuts.begin(), cuts.end());
  at.push_back(text.size());
  std::int64_t lines = h.body_line, data = 0;
  for (std::size_t k = 0; k + 1 < at.size(); ++k) {
    const auto range = text.substr(at[k], at[k + 1] - at[k]);
    const auto counts = iod::count_range(h, range, at[k] == 0);
    iod::TextEntries part;
    try {
      const auto seen = iod::parse_range(h, range, at[k] == 0, lines, data, opt, part);
      EXPECT_EQ(seen.lines, counts.lines);
      EXPECT_EQ(seen.data_lines, counts.data_lines);
    } catch (const InputError& err) {
      out.error = err.what();
      return out;
    }
    lines += counts.lines;
    data += counts.data_lines;
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(out.e.rows, part.rows);
    append(out.e.cols, part.cols);
    append(out.e.vals, part.vals);
    append(out.e.lines, part.lines);
    append(out.e.user_ids, part.user_ids);
    append(out.e.item_ids, part.item_ids);
    out.e.count += part.count;
  }
  out.lines = lines;
  return out;
}

/// Header of a corpus file, or nullopt when its header is bad or it has no
/// entry lines (dense layouts): nothing to split.
std::optional<iod::TextHeader> header_of(const std::string& path, io::Format format, const io::ReadOptions& opt) {
  try {
    auto h = iod::read_text_header(path, format, opt);
    if (h.format == io::Format::dense || h.array) return std::nullopt;
    return h;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

TEST(TextRanges, EveryCutOfEveryCorpusFileParsesAsTheWhole) {
  int files = 0, cuts = 0;
  for (const auto& c : kfactor::test::corpus_files()) {
    if (c.format == "factor" || c.format == "h5csr" || c.format == "dense") continue;
    for (const bool single : {false, true}) {
      io::ReadOptions opt;
      if (c.strict_duplicates) opt.duplicates = io::DuplicatePolicy::error;
      auto h = header_of(c.path, io::parse_format(c.format), opt);
      if (!h) continue;
      h->single_precision = single;
      const std::string text = io::read_file(c.path);
      // The header read from the file's start equals the whole text's.
      const auto whole_header = iod::parse_text_header(text, text.size(), c.path, io::parse_format(c.format), opt);
      ASSERT_TRUE(whole_header.has_value());
      EXPECT_EQ(whole_header->body_offset, h->body_offset) << c.filename;
      EXPECT_EQ(whole_header->body_line, h->body_line) << c.filename;
      const Outcome whole = parse_ranges(*h, text, opt, {});
      ++files;
      for (std::size_t offset = h->body_offset; offset <= text.size(); ++offset) {
        const std::uint64_t cut = iod::next_range_start(c.path, offset, text.size());
        std::uint64_t want = offset;
        while (want < text.size() && !iod::range_start(text, want)) ++want;
        ASSERT_EQ(cut, offset == 0 ? 0 : want) << c.filename << " at " << offset;
        expect_same(whole, parse_ranges(*h, text, opt, {static_cast<std::size_t>(std::max(cut, h->body_offset))}),
                    c.filename + " cut at " + std::to_string(cut));
        ++cuts;
      }
    }
  }
  EXPECT_GE(files, 60);
  EXPECT_GT(cuts, 2000);
}

TEST(TextRanges, SharedDataSetsSplitManyWays) {
  const std::vector<std::pair<std::string, io::Format>> sets = {
      {"movielens-latest-small/ratings.csv", io::Format::automatic},
      {"snap/p2p-Gnutella08.txt", io::Format::automatic},
      {"bmf/APatio.in", io::Format::bmf}};
  for (const auto& [rel, format] : sets) {
    const auto path = kfactor::test::data_path(rel);
    if (!std::ifstream(path).good()) GTEST_SKIP() << "missing " << path;
    const io::ReadOptions opt;
    const auto h = iod::read_text_header(path, format, opt);
    const std::string text = io::read_file(path);
    const Outcome whole = parse_ranges(h, text, opt, {});
    ASSERT_FALSE(whole.error) << *whole.error;
    // 2 to 9 ranges at equal byte steps, as P ranks cut them.
    for (std::size_t parts = 2; parts <= 9; ++parts) {
      std::vector<std::size_t> at;
      for (std::size_t p = 1; p < parts; ++p)
        at.push_back(
            iod::next_range_start(path, h.body_offset + (text.size() - h.body_offset) * p / parts, text.size()));
      expect_same(whole, parse_ranges(h, text, opt, at), rel + " in " + std::to_string(parts));
    }
  }
}

TEST(TextRanges, HeadersNeedingMoreThanTheFirstPrefix) {
  kfactor::test::TempDir dir("text_ranges");
  // 100 KB of comments before the size line: the first 64 KiB prefix ends
  // inside them, so the header is read from a longer one.
  const std::string path = dir.file("long.mtx");
  {
    std::ofstream f(path);
    f << "%%MatrixMarket matrix coordinate real general\n";
    for (int k = 0; k < 5000; ++k) f << "% comment line number " << k << "\n";
    f << "2 2 1\n1 2 3.5\n";
  }
  const auto h = iod::read_text_header(path, io::Format::automatic, {});
  EXPECT_EQ(h.format, io::Format::matrix_market);
  EXPECT_EQ(h.size_line, 5002);
  EXPECT_EQ(h.body_line, 5002);
  const std::string text = io::read_file(path);
  EXPECT_EQ(text.substr(h.body_offset), "1 2 3.5\n");
  // A CRLF file whose first prefix cut falls between CR and LF.
  const std::string crlf = dir.file("crlf.txt");
  {
    std::ofstream f(crlf, std::ios::binary);
    f << std::string(65535, '#') << "\r\n" << "1 2\r\n0 1\r\n";
  }
  const auto e = iod::read_text_header(crlf, io::Format::edges, {});
  EXPECT_EQ(e.body_line, 1);
  EXPECT_EQ(e.fields, 2);
  const auto a = io::read_edges<double>(crlf);
  EXPECT_EQ(a.nnz(), 2u);
}

}  // namespace
