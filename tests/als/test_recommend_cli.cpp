// `kfactor recommend` and `kfactor similar` as a user runs them on factors
// that `kfactor als --implicit --output` wrote: lists equal to a float64
// brute force over the written factors, training pairs filtered, unknown
// ids refused with FILE:LINE (exit 3) or skipped and counted, the CSV
// output, bad N, N above the candidates and id lists that answer nothing;
// `kfactor als --split leave-last-k-out:K` on a file's
// timestamps, and --eval-k above the item count.
#include "common/cli.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/als/split.hpp>
#include <kfactor/io/read.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::slurp;
using kfactor::test::TempDir;

/// id -> factor row of a written CSV factor file.
std::map<long long, std::vector<double>> read_factors(const std::string& path) {
  std::map<long long, std::vector<double>> out;
  std::istringstream in(slurp(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("id", 0) == 0) continue;
    std::istringstream l(line);
    std::string field;
    std::getline(l, field, ',');
    const long long id = std::stoll(field);
    while (std::getline(l, field, ',')) out[id].push_back(std::stod(field));
  }
  return out;
}

struct Served {
  TempDir dir{"recommend_cli"};
  std::string ratings = dir.file("r.txt"), prefix = dir.file("m");
  std::set<std::pair<long long, long long>> seen;
  Served() {
    // 60 users (ids 100, 103, ...) x 40 items (ids 7, 12, ...), counts 1..4.
    std::ofstream r(ratings);
    for (int u = 0; u < 60; ++u)
      for (int i = 0; i < 40; ++i)
        if ((u * 7 + i * 13) % 9 < 3 || (u % 4 == i % 4 && (u + i) % 3 == 0)) {
          r << 100 + 3 * u << " " << 7 + 5 * i << " " << 1 + (u + i) % 4 << "\n";
          seen.insert({100 + 3 * u, 7 + 5 * i});
        }
  }
  /// The kfactor command in this directory (output slot `slot`).
  [[nodiscard]] kfactor::test::CliRun run(const std::string& args, int slot) const {
    return run_kfactor(args, dir, "", slot);
  }
  /// Trains the served model (rank k, n iterations) into `prefix`; the exit code.
  [[nodiscard]] int train(int k, int n) const {
    return run("als --quiet --implicit --format ratings --input " + quote(ratings) + " -k " + std::to_string(k) +
                   " -n " + std::to_string(n) + " --output " + quote(prefix),
               0)
        .code;
  }
};

TEST(RecommendCli, ListsEqualBruteForceAndFilterTrainingPairs) {
  const Served s;
  auto run = [&](const std::string& args, int slot) { return s.run(args, slot); };
  ASSERT_EQ(s.train(4, 3), 0);
  const auto X = read_factors(s.prefix + "_X.csv"), Y = read_factors(s.prefix + "_Y.csv");
  ASSERT_EQ(X.size(), 60u);
  ASSERT_EQ(Y.size(), 40u);
  const std::string users = s.dir.file("users.txt");
  std::ofstream(users) << "user\n103\n\n# a comment\n190\n";
  const auto r = run("recommend --factors " + quote(s.prefix) + " --users " + quote(users) + " --n 5 --filter-seen " +
                         quote(s.ratings) + " --json",
                     1);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "recommend");
  ASSERT_EQ(j["rankings"].size(), 2u);
  for (const auto& l : j["rankings"]) {
    const long long u = l["query"];
    // Brute force over the written factors, training pairs left out.
    std::vector<std::pair<double, long long>> all;
    for (const auto& [i, y] : Y) {
      if (s.seen.count({u, i})) continue;
      double d = 0;
      for (std::size_t k = 0; k < y.size(); ++k) d += X.at(u)[k] * y[k];
      all.emplace_back(-d, i);
    }
    std::sort(all.begin(), all.end());
    ASSERT_EQ(l["ids"].size(), 5u);
    for (int k = 0; k < 5; ++k) {
      EXPECT_FALSE(s.seen.count({u, l["ids"][k].get<long long>()}));
      EXPECT_NEAR(l["scores"][k].get<double>(), -all[k].first, 1e-9);
      if (std::abs(all[k].first - all[std::min(k + 1, 4)].first) > 1e-9) EXPECT_EQ(l["ids"][k], all[k].second);
    }
  }
  // -o: the CSV with a stamp, the header and 5 lines per user.
  const std::string out = s.dir.file("rec.csv");
  const auto w = run("recommend --quiet --factors " + quote(s.prefix) + " --all-users --n 3 -o " + quote(out), 2);
  ASSERT_EQ(w.code, 0) << w.err;
  const std::string text = slurp(out);
  EXPECT_EQ(text.rfind("# kfactor-set", 0), 0u) << text.substr(0, 80);
  EXPECT_NE(text.find("\nuser,rank,item,score\n"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2 + 60 * 3);
}

TEST(RecommendCli, UnknownIdsAndBadN) {
  const Served s;
  auto run = [&](const std::string& args, int slot) { return s.run(args, slot); };
  ASSERT_EQ(s.train(3, 1), 0);
  const std::string users = s.dir.file("users.txt");
  std::ofstream(users) << "103\n104\n106\n";
  const std::string base = "recommend --factors " + quote(s.prefix) + " --users " + quote(users);
  const auto bad = run(base, 1);
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("users.txt:2"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("104"), std::string::npos) << bad.err;
  const auto skip = run(base + " --unknown skip --json", 2);
  ASSERT_EQ(skip.code, 0) << skip.err;
  const auto j = nlohmann::json::parse(skip.out);
  EXPECT_EQ(j["skipped"], 1.0);
  EXPECT_EQ(j["queries"], 2.0);
  EXPECT_EQ(run(base + " --n 0", 3).code, 2);
  EXPECT_EQ(run(base + " --n -1", 4).code, 2);
  EXPECT_EQ(run("recommend --factors " + quote(s.prefix) + " --n 3", 5).code, 2);  // no users
  // N above the item count: every unseen item.
  const auto wide = run(base + " --unknown skip --n 1000 --json", 6);
  ASSERT_EQ(wide.code, 0) << wide.err;
  EXPECT_EQ(nlohmann::json::parse(wide.out)["rankings"][0]["ids"].size(), 40u);
  // similar: the query itself never appears; unknown item ids exit 3.
  const std::string items = s.dir.file("items.txt");
  std::ofstream(items) << "7\n12\n";
  const auto sim = run("similar --factors " + quote(s.prefix) + " --items " + quote(items) + " --n 39 --json", 7);
  ASSERT_EQ(sim.code, 0) << sim.err;
  const auto similar = nlohmann::json::parse(sim.out);
  for (const auto& l : similar["rankings"]) {
    EXPECT_EQ(l["ids"].size(), 39u);
    for (const auto& i : l["ids"]) EXPECT_NE(i, l["query"]);
  }
  std::ofstream(items) << "7\n8\n";
  const auto simbad = run("similar --factors " + quote(s.prefix) + " --items " + quote(items), 8);
  EXPECT_EQ(simbad.code, 3);
  EXPECT_NE(simbad.err.find("items.txt:2"), std::string::npos) << simbad.err;
}

// N above what remains: recommend returns exactly each user's unseen items
// (the report's n is the item count), similar every other row (n is the
// row count less one). Unknown user ids of similar --users are refused
// with FILE:LINE or skipped and counted. An id list that answers nothing
// is an input error naming its line: a first line that is a number but not
// a 64-bit integer (it is no header), a header alone, an empty file.
TEST(RecommendCli, ListsBeyondTheCandidatesAndIdListsThatAnswerNothing) {
  const Served s;
  auto run = [&](const std::string& args, int slot) { return s.run(args, slot); };
  ASSERT_EQ(s.train(3, 1), 0);
  const auto Y = read_factors(s.prefix + "_Y.csv");
  ASSERT_EQ(Y.size(), 40u);
  const std::string users = s.dir.file("users.txt");
  std::ofstream(users) << "100\n103\n106\n";
  const auto wide = run("recommend --json --factors " + quote(s.prefix) + " --users " + quote(users) +
                            " --n 100000 --filter-seen " + quote(s.ratings),
                        1);
  ASSERT_EQ(wide.code, 0) << wide.err;
  const auto w = nlohmann::json::parse(wide.out);
  EXPECT_EQ(w["info"]["n"], "40");
  ASSERT_EQ(w["rankings"].size(), 3u);
  for (const auto& l : w["rankings"]) {
    const long long u = l["query"];
    std::set<long long> unseen, got;
    for (const auto& [i, y] : Y)
      if (!s.seen.count({u, i})) unseen.insert(i);
    for (const auto& i : l["ids"]) got.insert(i.get<long long>());
    EXPECT_EQ(l["ids"].size(), unseen.size()) << u;  // no item twice
    EXPECT_EQ(got, unseen) << u;
    EXPECT_LT(unseen.size(), 40u);  // the filter took some
  }
  const std::string items = s.dir.file("items.txt");
  std::ofstream(items) << "7\n197\n";
  const auto sim = run("similar --json --factors " + quote(s.prefix) + " --items " + quote(items) + " --n 100000", 2);
  ASSERT_EQ(sim.code, 0) << sim.err;
  const auto j = nlohmann::json::parse(sim.out);
  EXPECT_EQ(j["info"]["n"], "39");
  for (const auto& l : j["rankings"]) {
    std::set<long long> got;
    for (const auto& i : l["ids"]) got.insert(i.get<long long>());
    EXPECT_EQ(l["ids"].size(), 39u);
    EXPECT_EQ(got.size(), 39u);
    EXPECT_FALSE(got.count(l["query"].get<long long>()));
  }
  // similar --users: the user id 101 is not in the model (ids 100, 103, ...).
  std::ofstream(users) << "userId\n100\n101\n103\n";
  const std::string by_user = "similar --factors " + quote(s.prefix) + " --users " + quote(users);
  const auto bad = run(by_user, 3);
  EXPECT_EQ(bad.code, 3) << bad.err;
  EXPECT_NE(bad.err.find(users + ":3: unknown user id 101"), std::string::npos) << bad.err;
  const auto skip = run(by_user + " --unknown skip --json --n 4", 4);
  ASSERT_EQ(skip.code, 0) << skip.err;
  const auto k = nlohmann::json::parse(skip.out);
  EXPECT_EQ(k["skipped"], 1.0);
  EXPECT_EQ(k["queries"], 2.0);
  for (const auto& l : k["rankings"]) EXPECT_EQ(l["ids"].size(), 4u);
  EXPECT_EQ(run(by_user + " --unknown skip --n 0", 5).code, 2);
  // Id lists that answer nothing, for both commands.
  const std::string list = s.dir.file("list.txt");
  for (const auto& [text, says] : {std::pair<std::string, std::string>{"10.5\n103\n", ":1: '10.5' is not a 64-bit"},
                                   {"99999999999999999999\n", ":1: '99999999999999999999' is not a 64-bit"},
                                   {"103\n1e3\n", ":2: '1e3' is not a 64-bit"},
                                   {"userId\n\n# none\n", ":3: no ids after the header"},
                                   {"", ": no ids (empty file)"}}) {
    std::ofstream(list) << text;
    for (const std::string& command : {"recommend --users", "similar --users"}) {
      SCOPED_TRACE(command + " on " + text);
      const auto r = run(command.substr(0, command.find(' ')) + " --factors " + quote(s.prefix) +
                             command.substr(command.find(' ')) + " " + quote(list) + " --unknown skip",
                         6);
      EXPECT_EQ(r.code, 3) << r.err;
      EXPECT_NE(r.err.find(list + says), std::string::npos) << r.err;
      EXPECT_EQ(r.out, "");
    }
  }
}

/// Interactions with known times: user u (id 100 + 3u) has 2 + u % 6 items
/// (ids 7 + 5i), each at a distinct time; the lines are in no time order.
/// latest[u] / earliest[u]: the (user, item) indices of its 2 latest and 2
/// earliest interactions.
struct Timed {
  TempDir dir{"split_cli"};
  std::string file = dir.file("timed.csv"), untimed = dir.file("untimed.csv");
  static constexpr int users = 30, items = 15;
  std::vector<std::tuple<int, int, double, long long>> lines;  // user, item, count, time
  std::set<std::pair<int, int>> latest, earliest;
  Timed() {
    for (int u = 0; u < users; ++u) {
      const int n = 2 + u % 6;
      std::vector<std::pair<long long, int>> by_time;
      for (int k = 0; k < n; ++k) {
        const int i = (u * 4 + k * 7) % items;
        const long long t = 1000000 + 1000 * ((k * 11 + u) % n) + u;  // distinct per user: 11 is prime to n
        lines.emplace_back(u, i, 1 + (u + k) % 4, t);
        by_time.emplace_back(t, i);
      }
      std::sort(by_time.begin(), by_time.end());
      // Users with 2 interactions keep them: the split holds out users with more.
      if (n > 2)
        for (int k = 0; k < 2; ++k) {
          latest.insert({u, by_time[n - 1 - k].second});
          earliest.insert({u, by_time[k].second});
        }
    }
    std::ofstream t(file), p(untimed);
    t << "userId,movieId,rating,timestamp\n";
    p << "userId,movieId,rating\n";
    for (std::size_t k = 0; k < lines.size(); ++k) {
      const auto& [u, i, c, time] = lines[(k * 37) % lines.size()];  // 37 is prime to the line count
      t << 100 + 3 * u << "," << 7 + 5 * i << "," << c << "," << time << "\n";
      p << 100 + 3 * u << "," << 7 + 5 * i << "," << c << "\n";
    }
  }
  /// (train, test) with `held` held out, in (user, item) order.
  [[nodiscard]] std::pair<kfactor::CooMatrix<double>, kfactor::CooMatrix<double>> split(
      const std::set<std::pair<int, int>>& held) const {
    std::vector<std::tuple<int, int, double>> sorted;
    for (const auto& [u, i, c, time] : lines) sorted.emplace_back(u, i, c);
    std::sort(sorted.begin(), sorted.end());
    kfactor::CooMatrix<double> train, test;
    for (auto* m : {&train, &test}) {
      m->num_rows = users;
      m->num_cols = items;
    }
    for (const auto& [u, i, c] : sorted) {
      auto& m = held.count({u, i}) ? test : train;
      m.rows.push_back(u);
      m.cols.push_back(i);
      m.values.push_back(c);
    }
    return {train, test};
  }
};

/// The loss and ranking metrics per iteration of the single-rank solver on
/// `split` with the options the CLI line below gives.
kfactor::MetricHistory solve_split(const std::pair<kfactor::CooMatrix<double>, kfactor::CooMatrix<double>>& split) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto problem = kfactor::als::make_problem(exec, split.first, 0.0, 42, &split.second);
  kfactor::als::Options o;
  o.implicit = true;
  o.rank = 4;
  o.alpha = 8;
  o.seed = 5;
  o.eval_k = 5;
  o.layout = kfactor::als::Layout::csr;
  o.stop.max_iterations = 3;
  return kfactor::als::solve(exec, problem, o).report.history;
}

/// The largest relative difference between the CLI's JSON history and `h`.
double history_difference(const nlohmann::json& j, const kfactor::MetricHistory& h) {
  double worst = 0;
  for (std::size_t c = 0; c < h.names.size(); ++c) {
    const auto& col = j["history"][h.names[c]];
    if (col.size() != h.rows.size()) return 1e300;
    for (std::size_t r = 0; r < h.rows.size(); ++r)
      worst = std::max(worst, std::abs(col[r].get<double>() - h.rows[r][c]) / std::max(1.0, std::abs(h.rows[r][c])));
  }
  return worst;
}

// `kfactor als --split leave-last-k-out:2` holds out each user's 2 latest
// interactions by the file's timestamp column: its loss and ranking metrics
// at every iteration are the solver's on exactly that split (and not on the
// 2 earliest), and the library's leave_last_k_out on the file as read holds
// out the same entries. On a file without timestamps the split is an exit 3
// naming the file; a malformed split is an exit 2.
TEST(SplitCli, LeaveLastKOutHoldsOutTheLatestInteractions) {
  Timed d;
  auto run = [&](const std::string& args, int slot) { return run_kfactor(args, d.dir, "", slot); };
  const std::string common =
      "als --implicit --format ratings -k 4 -n 3 --seed 5 --alpha 8 --eval-k 5 --layout csr "
      "--precision double --json --input ";
  const auto r = run(common + quote(d.file) + " --split leave-last-k-out:2", 0);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["info"]["split"], "leave-last-k-out:2");
  const auto want = solve_split(d.split(d.latest));
  ASSERT_EQ(want.names.size(), 6u);  // loss and the five ranking metrics
  EXPECT_LE(history_difference(j, want), 1e-12) << r.out.substr(0, 400);
  EXPECT_GT(history_difference(j, solve_split(d.split(d.earliest))), 1e-6) << "another split, the same numbers";

  const auto R = kfactor::io::read_ratings<double>(d.file);
  ASSERT_EQ(R.timestamps.size(), R.matrix.nnz());
  const auto [train, test] = kfactor::als::leave_last_k_out(R.matrix, R.timestamps, 2);
  std::set<std::pair<int, int>> held;
  for (std::size_t e = 0; e < test.nnz(); ++e) held.insert({test.rows[e], test.cols[e]});
  EXPECT_EQ(held, d.latest);

  const auto untimed = run(common + quote(d.untimed) + " --split leave-last-k-out:2", 1);
  EXPECT_EQ(untimed.code, 3) << untimed.err;
  EXPECT_NE(untimed.err.find("untimed.csv"), std::string::npos) << untimed.err;
  EXPECT_NE(untimed.err.find("timestamp"), std::string::npos) << untimed.err;
  for (const char* bad : {"leave-last-k-out:0", "leave-last-k-out", "latest:2"}) {
    const auto b = run(common + quote(d.file) + " --split " + bad, 2);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.err;
    EXPECT_NE(b.err.find("--split"), std::string::npos) << b.err;
  }
  EXPECT_EQ(run(common + quote(d.file) + " --split leave-last-k-out:1 --test-fraction 0.1", 3).code, 2);
}

// --eval-k above the item count ranks every unseen item (reported as the
// item count): every held-out item is found, so recall and precision are 1.
TEST(SplitCli, EvalKAboveTheItemCountRanksEveryItem) {
  Timed d;
  const auto r = run_kfactor(
      "als --implicit --quiet --json -k 3 -n 2 --eval-k 1000 --split leave-k-out:1 --input " + quote(d.file), d.dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["info"]["eval_k"], std::to_string(Timed::items));
  ASSERT_EQ(j["history"]["recall_at_k"].size(), 2u);
  for (const auto& v : j["history"]["recall_at_k"]) EXPECT_EQ(v.get<double>(), 1.0);
  for (const auto& v : j["history"]["precision_at_k"]) EXPECT_EQ(v.get<double>(), 1.0);
}

}  // namespace
