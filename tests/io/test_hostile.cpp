// Hostile input, one sweep per class of attack rather than one example each:
// factor files mutated line by line, non-regular files (directory, FIFO,
// device node) that must fail fast, header claims priced against memory,
// numbers in messages (of the readers and of every solver's option checks),
// edge-list count lines, CR-only line ends in every format, format
// detection, bad values at every line of every format, and held-out entries
// with unknown ids named by their line.
#include <kfactor/als/als.hpp>
#include <kfactor/bmf/bmf.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include <kfactor/nmf/nmf.hpp>
#include <kfactor/sddmm/options.hpp>

#include "common/test_spaces.hpp"
#include "io_test_util.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {
using namespace kfactor;
using namespace kfactor::io;
using kfactor::test::expect_input_error;
using kfactor::test::TempDir;

/// Splits text into lines (LF only: the generators below write LF).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b < text.size()) {
    const auto e = text.find('\n', b);
    out.push_back(text.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines, const std::string& end = "\n") {
  std::string s;
  for (const auto& l : lines) s += l + end;
  return s;
}

/// Replaces comma-separated field `k` of `line`.
std::string with_field(const std::string& line, std::size_t k, const std::string& value, char sep = ',') {
  std::vector<std::string> f;
  std::size_t b = 0;
  while (true) {
    const auto p = line.find(sep, b);
    f.push_back(line.substr(b, p == std::string::npos ? std::string::npos : p - b));
    if (p == std::string::npos) break;
    b = p + 1;
  }
  f.at(k) = value;
  std::string out;
  for (std::size_t i = 0; i < f.size(); ++i) out += (i ? std::string(1, sep) : "") + f[i];
  return out;
}

/// The spellings of values no reader may accept as a finite number.
const std::vector<std::string> bad_values = {"nan",    "NaN",  "-nan",  "inf", "-inf", "Infinity", "1e999",
                                             "-1e400", "0x10", "1.2.3", "4,5", "x",    "1e",       "--1"};

/// A factor CSV as write_factor_csv writes it: `rows` rows of rank K with
/// shuffled, sparse ids.
std::string factor_csv(std::mt19937_64& rng, int rows, int K) {
  std::string s = "id";
  for (int k = 0; k < K; ++k) s += ",f" + std::to_string(k);
  s += "\n";
  for (int r = 0; r < rows; ++r) {
    s += std::to_string(std::int64_t(r) * 7919 + 3);
    for (int k = 0; k < K; ++k) s += "," + std::to_string(double(rng() % 2001) / 1000.0 - 1.0);
    s += "\n";
  }
  return s;
}

// ---- 1. factor files --------------------------------------------------------------

TEST(Hostile, FactorFileRoundTripsTheWriter) {
  std::mt19937_64 rng(11);
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> F("F", 37, 5);
  std::vector<std::int64_t> ids(37);
  for (int r = 0; r < 37; ++r) {
    ids[r] = std::int64_t(rng() % 1000000) * 37 + r;  // unique, unordered
    for (int k = 0; k < 5; ++k) F(r, k) = double(std::int64_t(rng() % 2000001) - 1000000) * 1e-7;
  }
  TempDir dir("factor");
  write_factor_csv(dir.file("x.csv"), F, ids);
  write_factor(dir.file("x.mtx"), F);
  const auto csv = read_factor_file(dir.file("x.csv"));
  const auto mm = read_factor_file(dir.file("x.mtx"));
  ASSERT_EQ(csv.rank, 5);
  ASSERT_EQ(mm.rank, 5);
  ASSERT_EQ(csv.rows(), 37u);
  ASSERT_EQ(mm.rows(), 37u);
  EXPECT_EQ(csv.ids, ids);
  for (int r = 0; r < 37; ++r) {
    const auto at = csv.find(ids[r]);
    ASSERT_TRUE(at.has_value());
    EXPECT_EQ(*at, std::size_t(r));
    EXPECT_EQ(mm.ids[r], r);
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(csv.row(r)[k], F(r, k));  // bit-identical: shortest round-trip text
      EXPECT_EQ(mm.row(r)[k], F(r, k));
    }
  }
}

TEST(Hostile, FactorFileEveryRowMutated) {
  std::mt19937_64 rng(12);
  const int rows = 12, K = 3;
  const auto lines = split_lines(factor_csv(rng, rows, K));
  const std::string name = "f.csv";
  auto expect_error_at = [&](const std::vector<std::string>& ls, std::int64_t line, const std::string& what) {
    SCOPED_TRACE(what + " at line " + std::to_string(line));
    expect_input_error([&] { (void)parse_factor_file(join_lines(ls), name); }, name, line);
  };
  ASSERT_NO_THROW((void)parse_factor_file(join_lines(lines), name));
  // Header only, and every header that is not 'id,...' with >= 1 column.
  expect_error_at({lines[0]}, 1, "header only");
  expect_error_at({lines[0], "", ""}, 3, "header and blank lines");
  for (const std::string h : {"id", "ID ", "user,f0", "f0,id", "1,f0", ""}) {
    auto ls = lines;
    ls[0] = h;
    expect_error_at(ls, h.empty() ? 2 : 1, "header '" + h + "'");
  }
  for (std::size_t r = 1; r < lines.size(); ++r) {
    const auto ln = static_cast<std::int64_t>(r + 1);
    auto ls = lines;
    ls[r] = lines[r].substr(0, lines[r].rfind(','));  // ragged: one field short
    expect_error_at(ls, ln, "short row");
    ls[r] = lines[r] + ",0.5";  // one field more than the header
    expect_error_at(ls, ln, "long row");
    // row r takes another row's id: the later of the two lines is named
    const std::size_t other = r == 1 ? 2 : 1;
    ls[r] = with_field(lines[r], 0, lines[other].substr(0, lines[other].find(',')));
    expect_error_at(ls, static_cast<std::int64_t>(std::max(r, other) + 1), "duplicate id");
    for (std::size_t k = 0; k <= static_cast<std::size_t>(K); ++k)
      for (const auto& bad : bad_values) {
        ls[r] = with_field(lines[r], k, bad);
        expect_error_at(ls, ln, "field " + std::to_string(k) + " = " + bad);
      }
    ls[r] = with_field(lines[r], 0, "99999999999999999999");
    expect_error_at(ls, ln, "id beyond int64");
  }
  // Every truncation at a byte boundary reads or fails with a line, never more.
  const std::string text = join_lines(lines);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    try {
      const auto f = parse_factor_file(std::string_view(text).substr(0, cut), name);
      EXPECT_EQ(f.values.size(), f.rows() * std::size_t(K));
    } catch (const InputError& e) {
      EXPECT_GE(e.line(), 1) << e.what();
    }
  }
}

// ---- 2. non-regular files -------------------------------------------------------------

/// Runs `read` on `path` and expects an InputError naming the path and
/// `kind` within 10 s. A read that blocks (a FIFO opened for reading waits
/// for a writer) is released by opening the FIFO for writing, then failed.
void expect_refused_fast(const std::string& path, const std::string& kind, const std::string& reader,
                         const std::function<void(const std::string&)>& read, bool fifo) {
  SCOPED_TRACE(reader + " on " + path);
  const auto start = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] { expect_input_error([&] { read(path); }, path, 0, kind); });
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << reader << " did not return within 10 s";
    if (fifo) {
      const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
    }
  }
  done.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(Hostile, NonRegularInputsFailFastNamingWhatTheyAre) {
  TempDir dir("nonregular");
  struct Node {
    std::string path, kind;
    bool fifo = false;
  };
  std::vector<Node> nodes;
  std::filesystem::create_directory(dir.file("a_directory.mtx"));
  nodes.push_back({dir.file("a_directory.mtx"), "is a directory"});
  ASSERT_EQ(::mkfifo(dir.file("a_fifo.txt").c_str(), 0600), 0);
  nodes.push_back({dir.file("a_fifo.txt"), "is a FIFO", true});
  std::filesystem::create_symlink(dir.file("a_fifo.txt"), dir.file("link_to_fifo.csv"));
  nodes.push_back({dir.file("link_to_fifo.csv"), "is a FIFO", true});
  // A device node of /dev/zero's numbers in the temp folder (root only): the
  // test never points a reader at a real device.
  if (::geteuid() == 0 && ::mknod(dir.file("zero_device.in").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0)
    nodes.push_back({dir.file("zero_device.in"), "is a character device"});
  else
    std::fprintf(stderr, "note: not root (or mknod refused): character device case skipped\n");
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers = {
      {"read_file", [](const std::string& p) { (void)read_file(p); }},
      {"read_matrix auto", [](const std::string& p) { (void)read_matrix<double>(p); }},
      {"read_matrix_market", [](const std::string& p) { (void)read_matrix_market<float>(p); }},
      {"read_edges", [](const std::string& p) { (void)read_edges<double>(p); }},
      {"read_ratings", [](const std::string& p) { (void)read_ratings<double>(p); }},
      {"read_bmf", [](const std::string& p) { (void)read_bmf<float>(p); }},
      {"read_dense", [](const std::string& p) { (void)read_dense<double>(p); }},
      {"read_factor_file", [](const std::string& p) { (void)read_factor_file(p); }},
  };
  for (const auto& n : nodes)
    for (const auto& [name, read] : readers) expect_refused_fast(n.path, n.kind, name, read, n.fifo);
  // a missing file still says so
  expect_input_error([&] { (void)read_file(dir.file("missing.mtx")); }, dir.file("missing.mtx"), 0, "cannot open");
}

// ---- 3. header claims priced against memory ----------------------------------------------

TEST(Hostile, ClaimedShapesArePricedBeforeAllocating) {
  ReadOptions one_gib;
  one_gib.memory_limit = std::uint64_t(1) << 30;
  ReadOptions one_tib;
  one_tib.memory_limit = std::uint64_t(1) << 40;
  const std::string mm = "%%MatrixMarket matrix coordinate real general\n";
  const std::string mma = "%%MatrixMarket matrix array real general\n";
  // (rows, cols): each costs 16 bytes per row and column at least.
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {2147483647, 2}, {2, 2147483647}, {2147483647, 2147483647}, {100000000, 1}, {1000000000, 1000000000}};
  for (const auto& [m, n] : shapes) {
    const std::string dims = std::to_string(m) + " " + std::to_string(n);
    const std::string claim = std::to_string(m) + " x " + std::to_string(n);
    SCOPED_TRACE(claim);
    expect_input_error([&] { (void)parse_matrix_market<double>(mm + dims + " 1\n1 1 1\n", "c.mtx", one_gib); }, "c.mtx",
                       2, claim);
    expect_input_error([&] { (void)parse_matrix_market<double>(mm + "%c\n" + dims + " 1\n1 1 1\n", "c.mtx", one_gib); },
                       "c.mtx", 3, "memory limit");
    expect_input_error([&] { (void)parse_bmf<float>(dims + " 1\n0 0\n", "c.in", one_gib); }, "c.in", 1, claim);
    expect_input_error([&] { (void)parse_matrix_market<double>(mma + dims + "\n1\n", "a.mtx", one_gib); }, "a.mtx", 2,
                       "memory limit");
    // An edge list's largest id implies the shape: priced at that id's line.
    const std::string far = std::to_string(std::max(m, n) - 1);
    expect_input_error([&] { (void)parse_edges<double>("0 1\n" + far + " 0\n1 1\n", "e.txt", one_gib); }, "e.txt", 2,
                       "memory limit");
    // Only memory refuses these: with room for the row maps they read.
    if (std::uint64_t(m + n + 2) * 16 < one_tib.memory_limit) {
      const auto A = parse_matrix_market<double>(mm + dims + " 1\n1 1 1\n", "c.mtx", one_tib);
      EXPECT_EQ(A.num_rows, m);
      EXPECT_EQ(A.num_cols, n);
      EXPECT_EQ(parse_bmf<float>(dims + " 1\n0 0\n", "c.in", one_tib).num_rows, m);
    }
  }
  // the default limit is this machine's memory: 2^31 - 1 square needs 64 GiB
  // of row maps, more than any test machine here (skip where it is not)
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (double(pages) * double(page) < 64.0 * (1 << 30))
    expect_input_error([&] { (void)parse_matrix_market<double>(mm + "2147483647 2147483647 0\n", "d.mtx"); }, "d.mtx",
                       2, "memory limit");
}

TEST(Hostile, DefaultLimitHonoursTheAddressSpaceLimit) {
#if defined(KFACTOR_SANITIZED)
  GTEST_SKIP() << "AddressSanitizer needs an unlimited address space";
#else
  // Under `ulimit -v 4G` a claim of 8 GiB is refused by the default limit,
  // whatever the machine's memory; in a child, so the limit stays there.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit as{rlim_t(4) << 30, rlim_t(4) << 30};
    if (::setrlimit(RLIMIT_AS, &as) != 0) ::_exit(2);
    try {
      (void)parse_matrix_market<double>("%%MatrixMarket matrix coordinate real general\n268435456 268435456 1\n1 1 1\n",
                                        "c.mtx");
    } catch (const InputError& e) {
      ::_exit(std::string(e.what()).find("memory limit of 4 GiB") != std::string::npos ? 0 : 3);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: setrlimit failed, 3: other message, 4: other exception, 5: accepted";
#endif
}

TEST(Hostile, NumbersInMessagesAreShort) {
  // A run of 25 digits or more in a message is a number printed in full.
  const std::regex long_number("[0-9]{25,}");
  const std::string digits300 = "1" + std::string(300, '0');
  const std::string mm = "%%MatrixMarket matrix coordinate real general\n";
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"mm float overflow", [&] { (void)parse_matrix_market<float>(mm + "1 1 1\n1 1 1e300\n", "v"); }},
      {"mm float overflow neg", [&] { (void)parse_matrix_market<float>(mm + "1 1 1\n1 1 -3.5e38\n", "v"); }},
      {"mm row count", [&] { (void)parse_matrix_market<double>(mm + digits300 + " 1 1\n1 1 1\n", "v"); }},
      {"mm index", [&] { (void)parse_matrix_market<double>(mm + "1 1 1\n" + digits300 + " 1 1\n", "v"); }},
      {"bmf header", [&] { (void)parse_bmf<double>("2 2 " + digits300 + "\n0 0\n", "v"); }},
      {"edges id", [&] { (void)parse_edges<double>("0 " + digits300 + "\n", "v"); }},
      {"edges weight float", [&] { (void)parse_edges<float>("0 1 1e300\n", "v"); }},
      {"ratings user", [&] { (void)parse_ratings<double>("u,i,r\n-" + digits300 + ",1,1\n", "v"); }},
      {"ratings float", [&] { (void)parse_ratings<float>("u,i,r\n1,1,1e300\n", "v"); }},
      {"dense float", [&] { (void)parse_dense<float>("1 1e300\n", "v"); }},
      {"factor id", [&] { (void)parse_factor_file("id,f0\n" + digits300 + ",1\n", "v"); }},
  };
  for (const auto& [what, f] : cases) {
    SCOPED_TRACE(what);
    try {
      f();
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_FALSE(std::regex_search(std::string(e.what()), long_number)) << e.what();
      EXPECT_GE(e.line(), 1) << e.what();
    }
  }
  try {
    (void)parse_matrix_market<float>(mm + "1 1 1\n1 1 1e300\n", "v");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("1e+300"), std::string::npos) << e.what();
  }
}

// ---- 4. edge lists: count lines and line ends ------------------------------------------------

TEST(Hostile, OptionMessagesPrintNumbersShort) {
  // Every solver family's option check, given values far outside its
  // ranges: a UsageError naming the field, the range and the value in a
  // short form (std::to_string(1e300) would print 301 digits).
  const std::regex long_number("[0-9]{25,}");
  const double huge = 1e300, nan = std::nan("");
  const std::vector<std::tuple<std::string, std::string, std::function<void()>>> cases = {
      {"als lambda", "lambda",
       [&] {
         als::Options o;
         o.lambda = huge;
         o.validate();
       }},
      {"als lambda nan", "lambda",
       [&] {
         als::Options o;
         o.lambda = nan;
         o.validate();
       }},
      {"als tolerance", "stop.tolerance",
       [&] {
         als::Options o;
         o.stop.tolerance = -huge;
         o.validate();
       }},
      {"nmf epsilon", "epsilon",
       [&] {
         nmf::Options o;
         o.epsilon = huge;
         o.validate();
       }},
      {"nmf target", "stop.target",
       [&] {
         nmf::Options o;
         o.stop.target = -huge;
         o.validate();
       }},
      {"bmf temperature", "temperature",
       [&] {
         bmf::Options o;
         o.temperature = huge;
         o.validate();
       }},
      {"mnmf lambda_w", "lambda_w",
       [&] {
         mnmf::Options o;
         o.lambda_w = huge;
         o.validate();
       }},
      {"mnmf init_high", "init_high",
       [&] {
         mnmf::Options o;
         o.init_high = huge;
         o.validate();
       }},
      {"knn sigma", "sigma",
       [&] {
         mnmf::GraphOptions g;
         g.sigma = -huge;
         g.validate();
       }},
      {"sddmm hot cache", "hot_cache_fraction",
       [&] {
         SddmmOptions o;
         o.hot_cache_fraction = huge;
         o.validate();
       }},
      {"split fraction", "test fraction", [&] { (void)split_train_test(CooMatrix<double>{}, huge, 1); }},
  };
  for (const auto& [what, field, f] : cases) {
    SCOPED_TRACE(what);
    try {
      f();
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_FALSE(std::regex_search(m, long_number)) << m;
      EXPECT_LT(m.size(), 200u) << m;
      EXPECT_NE(m.find(field), std::string::npos) << m;
      EXPECT_NE(m.find("must be"), std::string::npos) << m;  // the range
      EXPECT_TRUE(m.find("1e+300") != std::string::npos || m.find("nan") != std::string::npos) << m;
    }
  }
}

TEST(Hostile, EdgeCountLineMustBeEdgesOrNodes) {
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 20; ++trial) {
    const int edges = 5 + int(rng() % 40);
    std::string body;
    std::int64_t max_id = 0;
    for (int k = 0; k < edges; ++k) {
      // ids unique per line so that no pair repeats
      const std::int64_t u = k, v = k + 1 + std::int64_t(rng() % 50);
      max_id = std::max({max_id, u, v});
      body += std::to_string(u) + "\t" + std::to_string(v) + "\n";
    }
    const std::int64_t nodes = max_id + 1;
    for (std::int64_t c : {std::int64_t(0), std::int64_t(1), std::int64_t(edges), std::int64_t(edges) + 1, nodes - 1,
                           nodes, nodes + 3, std::int64_t(3000000000)}) {
      SCOPED_TRACE("edges " + std::to_string(edges) + ", nodes " + std::to_string(nodes) + ", count " +
                   std::to_string(c));
      const std::string text = "# comment\n" + std::to_string(c) + "\n" + body;
      if (c == edges || (c >= nodes && c <= 2147483647)) {
        ReadInfo info;
        const auto A = parse_edges<double>(text, "g.txt", {}, &info);
        EXPECT_EQ(A.num_rows, nodes);  // the count never changes the shape
        EXPECT_EQ(info.header_count.value_or(-1), c);
      } else {
        expect_input_error([&] { (void)parse_edges<double>(text, "g.txt"); }, "g.txt", 2, "count line");
      }
    }
  }
}

/// What detect_format says: a format, or nullopt for an ambiguous file
/// (an InputError that asks for --format).
std::optional<Format> detected(std::string_view text, std::string_view name) {
  try {
    return detect_format(text, name);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--format"), std::string::npos) << e.what();
    return std::nullopt;
  }
}

/// A valid text of each format (LF line ends), how to read it, and what
/// detection says of it (nullopt: ambiguous).
struct Sample {
  std::string name, text;
  Format format;
  std::optional<Format> detect;
};
std::vector<Sample> samples() {
  return {
      {"m.mtx", "%%MatrixMarket matrix coordinate real general\n% c\n3 4 3\n1 1 1.5\n3 4 -2\n2 2 7\n",
       Format::matrix_market, Format::matrix_market},
      {"a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n0\n3\n4\n", Format::matrix_market,
       Format::matrix_market},
      {"e.txt", "# c\n4\n0\t1\n1\t3\n3\t0\n", Format::edges, Format::edges},
      {"w.txt", "0 1 0.5\n1 3 2\n3 0 -1\n", Format::edges, std::nullopt},
      {"r.csv", "userId,movieId,rating,timestamp\n1,10,4.0,5\n2,10,3.5,6\n2,30,1,7\n", Format::ratings,
       Format::ratings},
      {"r.dat", "1::10::4::5\n2::10::3::6\n", Format::ratings, Format::ratings},
      {"u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n", Format::ratings, Format::ratings},
      {"r.tsv", "196\t242\t3\n186\t302\t3.5\n", Format::ratings, std::nullopt},
      {"b.in", "3 3 3\n0 0\n1 2\n2 1\n", Format::bmf, Format::bmf},
      {"d.txt", "0 1 0 1 1\n1 0 0 0 1\n", Format::dense, Format::dense},
      {"d3.txt", "0.5 1 2\n1.5 0 0\n", Format::dense, Format::dense},
  };
}

TEST(Hostile, CrOnlyAndCrlfLineEndsReadAsLf) {
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.name);
    ReadInfo lf_info, cr_info;
    const auto lf = parse_matrix<double>(s.text, s.name, s.format, {}, &lf_info);
    for (const std::string end : {"\r", "\r\n"}) {
      const std::string text = join_lines(split_lines(s.text), end);
      const auto other = parse_matrix<double>(text, s.name, s.format, {}, &cr_info);
      EXPECT_EQ(other.num_rows, lf.num_rows);
      EXPECT_EQ(other.num_cols, lf.num_cols);
      EXPECT_EQ(kfactor::test::as_map(other), kfactor::test::as_map(lf));
      EXPECT_EQ(cr_info.lines, lf_info.lines);
      EXPECT_EQ(detected(text, s.name), s.detect);
    }
    // an error keeps its line number whatever the line ends
    auto broken = split_lines(s.text);
    broken.back() += " x";
    const auto line = static_cast<std::int64_t>(broken.size());
    for (const std::string end : {"\n", "\r", "\r\n"})
      expect_input_error([&] { (void)parse_matrix<double>(join_lines(broken, end), s.name, s.format); }, s.name, line);
  }
  std::mt19937_64 rng(44);
  const std::string f = factor_csv(rng, 5, 2);
  const auto lf = parse_factor_file(f, "f.csv");
  for (const std::string end : {"\r", "\r\n"}) {
    const auto other = parse_factor_file(join_lines(split_lines(f), end), "f.csv");
    EXPECT_EQ(other.ids, lf.ids);
    EXPECT_EQ(other.values, lf.values);
  }
}

// ---- 5. format detection ---------------------------------------------------------------------

TEST(Hostile, DetectionIsRightOrAsksForFormat) {
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.name);
    EXPECT_EQ(detected(s.text, s.name), s.detect);
    EXPECT_EQ(detected(s.text, ""), s.detect);  // the content alone decides
    // a detected format is the right one, and reads the file
    if (s.detect) {
      EXPECT_NO_THROW((void)parse_matrix<double>(s.text, s.name));
    }
  }
  // Three numeric columns fit weighted edges and ratings alike: refused,
  // whatever the values, asking for --format.
  std::mt19937_64 rng(51);
  for (int trial = 0; trial < 30; ++trial) {
    std::string text = trial % 3 == 0 ? "# user item rating\n" : "";
    const std::string sep = trial % 2 ? "\t" : " ";
    for (int k = 0; k < 1 + trial; ++k)
      text += std::to_string(rng() % 1000) + sep + std::to_string(rng() % 1000) + sep +
              (trial % 4 ? std::to_string(1 + rng() % 5) : std::to_string(double(rng() % 10) / 2)) + "\n";
    SCOPED_TRACE(text.substr(0, 60));
    expect_input_error([&] { (void)detect_format(text, "x.tsv"); }, "x.tsv", trial % 3 == 0 ? 2 : 1, "--format");
    expect_input_error([&] { (void)parse_matrix<double>(text, "x.tsv"); }, "x.tsv", trial % 3 == 0 ? 2 : 1,
                       "--format ratings");
    // with the format given, each reader takes it
    EXPECT_NO_THROW((void)parse_ratings<double>(text, "x.tsv", {.duplicates = DuplicatePolicy::last}));
  }
}

TEST(Hostile, DetectionOnEveryDataSet) {
  // Every file of the shared data folder (its README lists them): the format
  // it is in. A file not listed here fails, so that a new data set gets its
  // detection checked.
  const std::map<std::string, Format> expected = {{"movielens-latest-small/ratings.csv", Format::ratings},
                                                  {"snap/facebook_combined.txt", Format::edges},
                                                  {"snap/p2p-Gnutella08.txt", Format::edges},
                                                  {"bmf/APatio.in", Format::bmf},
                                                  {"bmf/AOffice.in", Format::bmf},
                                                  {"bmf/ATools.in", Format::bmf},
                                                  {"bmf/c_salt_MovieRec.in", Format::bmf}};
  const std::filesystem::path root = kfactor::test::data_path("");
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "missing " << root;
  int seen = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().filename().string().starts_with("README")) continue;
    const std::string rel = std::filesystem::relative(entry.path(), root).generic_string();
    SCOPED_TRACE(rel);
    const auto it = expected.find(rel);
    ASSERT_NE(it, expected.end()) << "data set without an expected format";
    const std::string text = read_file(entry.path().string());
    EXPECT_EQ(detect_format(text, entry.path().string()), it->second);
    // and by content alone (a copy under another name)
    EXPECT_EQ(detect_format(text, "copy"), it->second);
    ++seen;
  }
  EXPECT_EQ(seen, static_cast<int>(expected.size()));
}

// ---- 6. values: every bad value at every line names its line ----------------------------------

TEST(Hostile, BadValuesNameTheirLineInEveryFormat) {
  struct Valued {
    std::string name, text;
    Format format;
    std::size_t first_data_line;  // 0-based index of the first line holding values
    std::size_t field;            // which whitespace/comma field holds the value
    char sep;
  };
  const std::vector<Valued> inputs = {
      {"m.mtx", "%%MatrixMarket matrix coordinate real general\n3 4 3\n1 1 1.5\n3 4 2\n2 2 7\n", Format::matrix_market,
       2, 2, ' '},
      {"a.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", Format::matrix_market, 2, 0, ' '},
      {"w.txt", "0 1 0.5\n1 3 2\n3 0 1\n", Format::edges, 0, 2, ' '},
      {"r.csv", "u,i,r,t\n1,10,4.0,5\n2,10,3.5,6\n2,30,1,7\n", Format::ratings, 1, 2, ','},
      {"d.txt", "0 1 0 1 1\n1 0 0 0 1\n", Format::dense, 0, 3, ' '},
  };
  for (const auto& in : inputs) {
    const auto lines = split_lines(in.text);
    for (std::size_t r = in.first_data_line; r < lines.size(); ++r) {
      const auto ln = static_cast<std::int64_t>(r + 1);
      for (const auto& bad : bad_values) {
        if (bad.find(in.sep) != std::string::npos) continue;  // it would split the field
        auto ls = lines;
        ls[r] = with_field(lines[r], in.field, bad, in.sep);
        SCOPED_TRACE(in.name + " line " + std::to_string(ln) + " value " + bad);
        expect_input_error([&] { (void)parse_matrix<double>(join_lines(ls), in.name, in.format); }, in.name, ln);
        expect_input_error([&] { (void)parse_matrix<float>(join_lines(ls), in.name, in.format); }, in.name, ln);
      }
      // a negative value: accepted, unless the caller needs A >= 0
      auto ls = lines;
      ls[r] = with_field(lines[r], in.field, "-0.25", in.sep);
      EXPECT_NO_THROW((void)parse_matrix<double>(join_lines(ls), in.name, in.format));
      ReadOptions nn;
      nn.non_negative = true;
      SCOPED_TRACE(in.name + " negative at line " + std::to_string(ln));
      expect_input_error([&] { (void)parse_matrix<double>(join_lines(ls), in.name, in.format, nn); }, in.name, ln,
                         "negative value -0.25");
    }
  }
}

// ---- 7. held-out entries with unknown ids: named by their line ------------------------------

TEST(Hostile, UnknownHeldOutIdsNameTheirLine) {
  // A held-out file whose one entry of an unknown user or item sits at each
  // line in turn, in each ratings spelling (the entries are sorted, so the
  // line must come from the file, not from the entry's place).
  TempDir dir("heldout");
  const auto training = parse_ratings<double>("u,i,r\n1,10,4\n2,10,3\n2,30,1\n3,20,5\n", "train.csv");
  std::mt19937_64 rng(71);
  for (const std::string sep : {",", "::", "\t"}) {
    const std::vector<std::string> known = {"3" + sep + "20" + sep + "2", "1" + sep + "10" + sep + "5",
                                            "2" + sep + "30" + sep + "4"};
    for (std::size_t at = 0; at <= known.size(); ++at)
      for (const std::string unknown : {"9" + sep + "10" + sep + "1", "1" + sep + "99" + sep + "1"}) {
        std::vector<std::string> lines = known;
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(at), unknown);
        const bool header = rng() % 2 == 0;
        if (header) lines.insert(lines.begin(), "user" + sep + "item" + sep + "rating");
        const std::string path = dir.file("heldout.txt");
        std::ofstream(path) << join_lines(lines);
        const auto held = read_ratings<double>(path);
        const auto line = static_cast<std::int64_t>(at + 1 + (header ? 1 : 0));
        SCOPED_TRACE("separator '" + sep + "', unknown entry at line " + std::to_string(line));
        EXPECT_EQ(rating_line(read_file(path), unknown[0] == '9' ? 9 : 1, unknown[0] == '9' ? 10 : 99), line);
        expect_input_error([&] { (void)reindex_ratings(held, training, UnknownIds::reject, path); }, path, line,
                           "is not in the training ratings");
        EXPECT_EQ(reindex_ratings(held, training, UnknownIds::drop, path).dropped, 1u);
      }
  }
  // Held-out data that is no file: the entry alone, by its place.
  const auto held = parse_ratings<double>("1,10,1\n7,10,1\n", "memory");
  expect_input_error([&] { (void)reindex_ratings(held, training, UnknownIds::reject, "memory"); }, "memory", 0,
                     "entry 2 (user 7, item 10)");
}

}  // namespace
