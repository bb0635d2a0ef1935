// `kfactor recommend` and `kfactor similar` as a user runs them on factors
// that `kfactor als --implicit --output` wrote: lists equal to a float64
// brute force over the written factors, training pairs filtered, unknown
// ids refused with FILE:LINE (exit 3) or skipped and counted, the CSV
// output, and bad N.
#include "common/cli.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
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
};

TEST(RecommendCli, ListsEqualBruteForceAndFilterTrainingPairs) {
  Served s;
  auto run = [&](const std::string& args, int slot) { return run_kfactor(args, s.dir, "", slot); };
  ASSERT_EQ(run("als --quiet --implicit --format ratings --input " + quote(s.ratings) + " -k 4 -n 3 --output " +
                    quote(s.prefix),
                0)
                .code,
            0);
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
  Served s;
  auto run = [&](const std::string& args, int slot) { return run_kfactor(args, s.dir, "", slot); };
  ASSERT_EQ(run("als --quiet --implicit --format ratings --input " + quote(s.ratings) + " -k 3 -n 1 --output " +
                    quote(s.prefix),
                0)
                .code,
            0);
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

}  // namespace
