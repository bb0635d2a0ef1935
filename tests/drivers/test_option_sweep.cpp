// Every option of every `kfactor` command against hostile values, through
// the command line as a user meets it. The options are discovered, not
// listed here: `kfactor --help-options-json` names the commands and the
// global Kokkos options, `kfactor CMD --help-options-json` each command's
// options with their kind and declared range (or choices). Each numeric
// option runs on a tiny valid input with its value replaced by 0, -1, nan,
// inf, -inf, 1e300, 1e-300, 99999999999999999999 and abc:
// - every run ends within 20 s, by exit code 0, 2, 3 or 4 (no signal, no
//   abort), with a short message (no number printed in 25 digits or more);
// - NaN, Inf, a non-number and any value outside the declared range (or
//   not an integer, for an integer option) end with exit 2 and a message
//   that names the option and says the range.
// Every value option that is not numeric and lists choices gets an unknown
// value: exit 2, naming the option and listing every choice. A numeric
// option without a declared range, or an option that --help shows and the
// listing lacks, fails the test.
#include "common/cli.hpp"

#include <kfactor/config.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace {
using kfactor::test::CliRun;
using kfactor::test::quote;
using kfactor::test::TempDir;

/// `kfactor ARGS` under `timeout`: 124 (or 137 after the kill) is a hang.
/// `slot` keeps the captures of runs at the same time apart.
CliRun kfactor(const std::string& args, const TempDir& dir, int slot = 0) {
  return kfactor::test::run_kfactor(args, dir, "timeout -k 5 20", slot);
}

/// One run of the sweep and what it must show.
struct Case {
  std::string args;
  std::string name;                  ///< the option under test
  bool refused = false;              ///< must end with exit 2, naming the option and...
  std::vector<std::string> mention;  ///< ...these (the range, or every choice)
  /// A file given to the option: where the message names it ("PATH: ..."
  /// or "PATH is ..."), it says what the file is, one of `kinds`.
  std::string path;
  std::vector<std::string> kinds;
  int code = -1;  ///< the exit code the run must end with; -1: any of 0, 2, 3, 4
};

/// Runs every case, a few at a time (most runs spend their time starting
/// the process), and checks each.
void run_cases(const std::vector<Case>& cases, const TempDir& dir) {
  std::vector<CliRun> results(cases.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      for (std::size_t i; (i = next++) < cases.size();) results[i] = kfactor(cases[i].args, dir, 100 + w);
    });
  for (auto& t : workers) t.join();
  static const std::regex long_number("[0-9]{25,}");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const CliRun& r = results[i];
    SCOPED_TRACE("kfactor " + c.args + "\n" + r.err);
    // Every run: an end within the time bound by one of kfactor's exit
    // codes, and a short message.
    EXPECT_TRUE(r.code == 0 || r.code == 2 || r.code == 3 || r.code == 4)
        << "exit " << r.code << (r.code == 124 || r.code == 137 ? " (did not end within 20 s)" : "");
    EXPECT_FALSE(std::regex_search(r.err, long_number));
    EXPECT_LT(r.err.size(), 600u);
    if (c.code >= 0) EXPECT_EQ(r.code, c.code);
    if (!c.path.empty() && r.code != 0 &&
        (r.err.find(c.path + ": ") != std::string::npos || r.err.find(c.path + " is") != std::string::npos)) {
      bool said = false;
      for (const auto& k : c.kinds) said = said || r.err.find(k) != std::string::npos;
      EXPECT_TRUE(said) << "names " << c.path << " without saying what it is";
    }
    if (!c.refused) continue;
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find(c.name), std::string::npos);
    for (const auto& m : c.mention) EXPECT_NE(r.err.find(m), std::string::npos) << "lacks " << m;
  }
}

/// The tiny inputs every command runs on: a positive 8 x 6 matrix, a 0/1
/// pattern, ratings of 12 users and 10 items (values 1..5), all drawn from
/// a fixed seed.
struct Inputs {
  TempDir dir{"option_sweep"};
  std::string matrix = dir.file("a.mtx"), pattern = dir.file("b.mtx"), ratings = dir.file("r.csv");
  Inputs() {
    std::mt19937_64 rng(20240611);
    std::ofstream a(matrix);
    a << "%%MatrixMarket matrix coordinate real general\n8 6 48\n";
    for (int i = 1; i <= 8; ++i)
      for (int j = 1; j <= 6; ++j) a << i << " " << j << " " << 1 + double(rng() % 1000) / 100 << "\n";
    std::vector<std::pair<int, int>> ones;
    for (int i = 1; i <= 12; ++i)
      for (int j = 1; j <= 10; ++j)
        if (rng() % 3 == 0 || i == j) ones.emplace_back(i, j);
    std::ofstream b(pattern);
    b << "%%MatrixMarket matrix coordinate pattern general\n12 10 " << ones.size() << "\n";
    for (const auto& [i, j] : ones) b << i << " " << j << "\n";
    std::ofstream r(ratings);
    r << "userId,movieId,rating\n";
    for (int u = 1; u <= 12; ++u)
      for (int i = 1; i <= 10; ++i)
        if (rng() % 2 == 0 || u == i) r << u << "," << 100 + i << "," << 1 + rng() % 5 << "\n";
  }
};

/// A command line as (option, value) pairs; "" for a flag or a positional's
/// name. with() replaces an option (by any of its names) or appends it.
struct Line {
  std::string command;
  std::vector<std::pair<std::string, std::string>> args;

  [[nodiscard]] Line with(std::vector<std::string> names, const std::string& value) const {
    if (names.empty()) names = {""};  // the positional
    Line l = *this;
    const std::string name = names.back();
    for (auto it = l.args.begin(); it != l.args.end(); ++it)
      for (const auto& n : names)
        if (it->first == n) {
          l.args.erase(it);
          l.args.emplace_back(name, value);
          return l;
        }
    l.args.emplace_back(name, value);
    return l;
  }
  [[nodiscard]] std::string text() const {
    std::string s = command;
    for (const auto& [name, value] : args) {
      if (name.empty()) {
        s += " " + quote(value);  // a positional
      } else if (value.empty()) {
        s += " " + name;
      } else if (name.starts_with("--")) {
        // One word: "--tol -inf" would read -inf as the short options -i -n -f.
        s += " " + quote(name + "=" + value);
      } else {
        s += " " + name + " " + quote(value);
      }
    }
    return s;
  }
};

nlohmann::json listing(const std::string& command, const TempDir& dir) {
  const auto r = kfactor(command + " --help-options-json", dir);
  EXPECT_EQ(r.code, 0) << command << ": " << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << command << " --help-options-json printed no JSON object: " << e.what() << "\n" << r.out;
    return nlohmann::json::object();
  }
}

const std::vector<std::string> hostile = {"0",  "-1", "nan", "inf", "-inf", "1e300", "1e-300", "99999999999999999999",
                                          "abc"};

/// Whether `text` must be refused by a numeric option of `option`'s range.
bool out_of_range(const nlohmann::json& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return true;
  const auto& r = option["range"];
  if (option["kind"] == "integer" && v != std::floor(v)) return true;
  const double lo = r["lo"].get<double>(), hi = r["hi"].get<double>();
  const bool below = r["lo_open"].get<bool>() ? !(v > lo) : !(v >= lo);
  const bool above = r["hi_open"].get<bool>() ? !(v < hi) : !(v <= hi);
  return below || above;
}

/// The sweep's cases of one command: every hostile value of every numeric
/// option and an unknown value of every option with choices, each on
/// `base`.
void add_cases(std::vector<Case>& cases, const Line& base, const nlohmann::json& options) {
  for (const auto& option : options) {
    const std::string name = option["name"];
    const std::string kind = option["kind"];
    const auto names = option["names"].get<std::vector<std::string>>();
    if (kind == "number") {
      ADD_FAILURE() << base.command << " " << name << " is a number without a declared range";
    } else if (kind == "integer" || kind == "real") {
      for (const auto& v : hostile)
        cases.push_back({base.with(names, v).text(),
                         name,
                         out_of_range(option, v),
                         {option["range"]["requirement"].get<std::string>()}});
    } else if (kind == "choice") {
      cases.push_back(
          {base.with(names, "no-such-choice").text(), name, true, option["choices"].get<std::vector<std::string>>()});
    }
  }
}

/// The long options a command's --help shows.
std::set<std::string> help_options(const std::string& command, const TempDir& dir) {
  const auto r = kfactor(command + " --help", dir);
  EXPECT_EQ(r.code, 0) << r.err;
  std::set<std::string> out;
  static const std::regex option_word("(^|[ ,])(--[a-z0-9][a-z0-9-]*)");
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    const auto first = l.find_first_not_of(' ');
    if (first == std::string::npos || l[first] != '-') continue;  // not an option line
    const std::string head = l.substr(first, l.find("  ", first) - first);
    for (std::sregex_iterator it(head.begin(), head.end(), option_word), e; it != e; ++it) out.insert((*it)[2]);
  }
  return out;
}

/// The inputs, a tiny valid command line of every command (with the factors
/// predict reads and the checkpoint checkpoint-info reads), and the
/// commands --help-options-json names.
struct Commands {
  Inputs in;
  const TempDir& dir = in.dir;
  std::string prefix = dir.file("f"), ckpt = dir.file("run.h5");
  std::map<std::string, Line> base = {
      {"nmf", {"nmf", {{"--input", in.matrix}, {"--rank", "2"}, {"--iters", "2"}, {"--quiet", ""}}}},
      {"als", {"als", {{"--input", in.ratings}, {"--rank", "2"}, {"--iters", "1"}, {"--quiet", ""}}}},
      {"predict", {"predict", {{"--factors", prefix}, {"--pairs", in.ratings}, {"--quiet", ""}}}},
      {"recommend", {"recommend", {{"--factors", prefix}, {"--all-users", ""}, {"--n", "3"}, {"--quiet", ""}}}},
      {"similar", {"similar", {{"--factors", prefix}, {"--users", in.ratings}, {"--n", "3"}, {"--quiet", ""}}}},
      {"bmf", {"bmf", {{"--input", in.pattern}, {"--rank", "2"}, {"--iters", "5"}, {"--quiet", ""}}}},
      {"mnmf",
       {"mnmf", {{"--input", in.ratings}, {"--rank", "2"}, {"--iters", "2"}, {"--neighbors", "3"}, {"--quiet", ""}}}},
      {"sddmm",
       {"sddmm",
        {{"--rows", "40"}, {"--cols", "30"}, {"--nnz", "200"}, {"--rank", "4"}, {"--reps", "1"}, {"--quiet", ""}}}},
      {"demo", {"demo", {{"--only", "nmf"}, {"--quiet", ""}}}},
      {"info", {"info", {{"--input", in.matrix}, {"--quiet", ""}}}},
      {"checkpoint-info", {"checkpoint-info", {{"", ckpt}}}},
      {"convert", {"convert", {{"", in.matrix}, {"", dir.file("converted.h5")}, {"--quiet", ""}}}},
  };
  nlohmann::json top;
  std::set<std::string> names;

  Commands() {
    EXPECT_EQ(kfactor("als --quiet --input " + quote(in.ratings) + " -k 2 -n 1 --output " + quote(prefix), dir).code,
              0);
#if defined(KFACTOR_HAVE_HDF5)
    EXPECT_EQ(kfactor("nmf --quiet --input " + quote(in.matrix) + " -k 2 -n 1 --checkpoint " + quote(ckpt), dir).code,
              0);
#endif
    top = listing("", dir);
    EXPECT_TRUE(top.contains("commands")) << top.dump();
    for (const auto& c : top["commands"]) names.insert(c.get<std::string>());
  }
};

TEST(OptionSweep, EveryOptionOfEveryCommandEndsCleanly) {
  const auto t0 = std::chrono::steady_clock::now();
  Commands all;
  const TempDir& dir = all.dir;
  auto& base = all.base;
  const auto& top = all.top;
  const auto& commands = all.names;
  std::set<std::string> known;
  for (const auto& [name, line] : base) known.insert(name);
  // A new command needs a tiny run here before the sweep can cover it.
  EXPECT_EQ(commands, known);

  std::vector<Case> cases;
  int options = 0;
  for (const auto& command : commands) {
    if (!base.count(command)) continue;
    SCOPED_TRACE(command);
    const auto list = listing(command, dir);
    ASSERT_TRUE(list.contains("options")) << list.dump();
    // The listing is complete: every option --help shows is in it.
    std::set<std::string> listed;
    for (const auto& o : list["options"])
      for (const auto& n : o["names"]) listed.insert(n.get<std::string>());
    for (const auto& shown : help_options(command, dir))
      EXPECT_TRUE(listed.count(shown) || shown == "--help") << command << " --help shows " << shown << ", not listed";
    // The base line itself runs (so that a refusal below is the value's).
    const auto ok = kfactor(base[command].text(), dir);
#if !defined(KFACTOR_HAVE_HDF5)
    if (command != "checkpoint-info")
#endif
      EXPECT_EQ(ok.code, 0) << base[command].text() << "\n" << ok.err;
    add_cases(cases, base[command], list["options"]);
    options += static_cast<int>(list["options"].size());
  }
  // The global Kokkos options (given as --kokkos-NAME=VALUE), before a quick
  // command.
  const Line quick = base["info"];
  for (const auto& option : top["options"]) {
    if (!option.contains("form")) continue;  // kfactor's own --help, --version
    const std::string name = option["name"];
    ++options;
    if (option["kind"] == "choice") {
      cases.push_back({quick.text() + " " + quote(name + "=no-such-choice"), name, true,
                       option["choices"].get<std::vector<std::string>>()});
      continue;
    }
    for (const auto& v : hostile)
      cases.push_back({quick.text() + " " + quote(name + "=" + v),
                       name,
                       out_of_range(option, v),
                       {option["range"]["requirement"].get<std::string>()}});
  }
  run_cases(cases, dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%zu runs over %d options of %zu commands in %.1f s\n", cases.size(), options, commands.size(), seconds);
  EXPECT_GT(options, 60);  // the discovery found the options (about 90 today)
}

TEST(OptionSweep, FileOptionsRefuseDirectoriesAndFifosPromptly) {
  // Every option that takes a file or a prefix (kind "text"), given a
  // directory and a FIFO: the run ends within the time bound (a FIFO opened
  // for reading blocks until a writer comes) by one of kfactor's codes, and
  // a message that names the path says what it is. An --input of either
  // kind is an input error.
  Commands all;
  const TempDir& dir = all.dir;
  const std::string directory = dir.file("a_directory"), fifo = dir.file("a_fifo");
  std::filesystem::create_directory(directory);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::vector<Case> cases;
  for (const auto& command : all.names) {
    if (!all.base.count(command)) continue;
    Line base = all.base[command];
    // sddmm reads and appends its --tune-cache only when autotuning.
    if (command == "sddmm") base.args.emplace_back("--autotune", "");
    const auto list = listing(command, dir);
    for (const auto& option : list["options"]) {
      if (option["kind"] != "text") continue;
      const auto names = option["names"].get<std::vector<std::string>>();
      const int code = option["name"] == "--input" ? 3 : -1;
      cases.push_back({base.with(names, directory).text(), option["name"], false, {}, directory, {"directory"}, code});
      cases.push_back(
          {base.with(names, fifo).text(), option["name"], false, {}, fifo, {"FIFO", "not a regular file"}, code});
    }
  }
  EXPECT_GT(cases.size(), 20u);
  run_cases(cases, dir);
  // An input's message in full: the path, then what it is.
  for (const auto& [path, kind] : {std::pair{directory, "is a directory"}, std::pair{fifo, "is a FIFO"}}) {
    const auto r = kfactor("info --input " + quote(path), dir);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find(path + ": " + kind), std::string::npos) << r.err;
  }
}

TEST(OptionSweep, ValueErrorsInInputsNameTheirLine) {
  // Values the solver refuses are refused by the reader, at their line:
  // a negative entry for nmf and mnmf (both need A >= 0), and a held-out
  // rating whose user the training ratings lack.
  Inputs in;
  const TempDir& dir = in.dir;
  std::mt19937_64 rng(5);
  auto lines_of = [](const std::string& path) {
    std::vector<std::string> out;
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  };
  auto write = [](const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const auto& l : lines) f << l << "\n";
  };
  const auto mm = lines_of(in.matrix), csv = lines_of(in.ratings);
  // A random data line of each (past the Matrix Market banner and size line,
  // the ratings header).
  const std::size_t at_mm = 2 + rng() % (mm.size() - 2), at_csv = 1 + rng() % (csv.size() - 1);
  auto bad_mm = mm;
  bad_mm[at_mm] = bad_mm[at_mm].substr(0, bad_mm[at_mm].rfind(' ')) + " -0.5";
  auto bad_csv = csv;
  bad_csv[at_csv] = bad_csv[at_csv].substr(0, bad_csv[at_csv].rfind(',')) + ",-2";
  const std::string neg_mm = dir.file("neg.mtx"), neg_csv = dir.file("neg.csv"), held = dir.file("held.csv");
  write(neg_mm, bad_mm);
  write(neg_csv, bad_csv);
  write(held, {"userId,movieId,rating", "1,101,3", "2,102,4", "99,101,5", "3,103,1"});
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"nmf -q -k 2 -n 1 --input " + quote(neg_mm), neg_mm + ":" + std::to_string(at_mm + 1) + ": negative value"},
      {"mnmf -q -k 2 -n 1 --neighbors 3 --input " + quote(neg_csv),
       neg_csv + ":" + std::to_string(at_csv + 1) + ": negative value"},
      {"mnmf -q -k 2 -n 1 --neighbors 3 --unknown-test-ids reject --input " + quote(in.ratings) + " --test-input " +
           quote(held),
       held + ":4: entry (user 99, item 101)"},
  };
  for (const auto& [args, message] : runs) {
    const auto r = kfactor(args, dir);
    EXPECT_EQ(r.code, 3) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
  }
}

}  // namespace
