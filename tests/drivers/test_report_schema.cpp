// docs/report-schema.md, checked against the commands themselves: every
// command run with --json on a tiny input prints exactly one JSON object on
// stdout whose fields have the documented types, and whose top level holds
// the command's documented metrics.
#include "common/cli.hpp"

#include <kfactor/config.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

namespace {
using kfactor::test::quote;
using kfactor::test::run_kfactor;
using kfactor::test::TempDir;
using nlohmann::json;

/// The tiny inputs: a positive 30 x 20 matrix with 40% of its entries, its
/// 0/1 pattern, and 40 users x 30 items of ratings.
struct Inputs {
  TempDir dir{"report_schema"};
  std::string matrix = dir.file("a.mtx"), binary = dir.file("b.mtx"), ratings = dir.file("r.txt");
  Inputs() {
    std::vector<std::string> entries, ones;
    for (int i = 0; i < 30; ++i)
      for (int j = 0; j < 20; ++j)
        if ((i * 7 + j * 3) % 5 < 2) {
          entries.push_back(std::to_string(i + 1) + " " + std::to_string(j + 1) + " " +
                            std::to_string(1 + (i * 13 + j * 5) % 9) + "\n");
          ones.push_back(std::to_string(i + 1) + " " + std::to_string(j + 1) + " 1\n");
        }
    std::ofstream a(matrix), b(binary);
    a << "%%MatrixMarket matrix coordinate real general\n30 20 " << entries.size() << "\n";
    b << "%%MatrixMarket matrix coordinate real general\n30 20 " << ones.size() << "\n";
    for (const auto& e : entries) a << e;
    for (const auto& e : ones) b << e;
    std::ofstream r(ratings);
    for (int u = 0; u < 40; ++u)
      for (int i = 0; i < 30; ++i)
        if ((u * 5 + i * 11) % 7 < 3) r << u << " " << i << " " << 1 + (u + 2 * i) % 5 << "\n";
  }
};

const Inputs& inputs() {
  static const Inputs in;
  return in;
}

/// Runs `kfactor ARGS --json`, expects exit 0 and one JSON object on stdout.
json run_json(const std::string& args) {
  static int slot = 0;
  const auto r = run_kfactor(args + " --json", inputs().dir, "", slot++);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  json j;
  try {
    j = json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << args << ": stdout is not one JSON document (" << e.what() << "):\n" << r.out;
  }
  EXPECT_TRUE(j.is_object()) << args << "\n" << r.out;
  return j;
}

bool number_or_null(const json& v) { return v.is_number() || v.is_null(); }

/// The fields every report has (docs/report-schema.md, "Every report").
void expect_report(const json& j, const std::string& command, const std::vector<std::string>& metrics, bool iterative) {
  SCOPED_TRACE(command);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.value("command", ""), command);
  for (const char* s : {"backend", "precision"}) EXPECT_TRUE(j.contains(s) && j[s].is_string()) << s;
  for (const char* i : {"rows", "cols", "nnz", "rank", "iterations"})
    EXPECT_TRUE(j.contains(i) && j[i].is_number_integer()) << i;
  EXPECT_TRUE(j.contains("seconds") && j["seconds"].is_number());
  if (j.contains("stop_reason")) EXPECT_TRUE(j["stop_reason"].is_string());
  if (iterative) {
    EXPECT_TRUE(j.contains("stop_reason"));
    EXPECT_GE(j.value("iterations", 0), 1);
  }
  ASSERT_TRUE(j.contains("timings") && j["timings"].is_object());
  for (const auto& [name, v] : j["timings"].items()) EXPECT_TRUE(number_or_null(v)) << "timings." << name;
  ASSERT_TRUE(j.contains("info") && j["info"].is_object());
  for (const auto& [name, v] : j["info"].items()) EXPECT_TRUE(v.is_string()) << "info." << name;
  ASSERT_TRUE(j.contains("history") && j["history"].is_object());
  const auto& h = j["history"];
  ASSERT_TRUE(h.contains("iteration") && h["iteration"].is_array());
  for (const auto& [name, column] : h.items()) {
    ASSERT_TRUE(column.is_array()) << "history." << name;
    EXPECT_EQ(column.size(), h["iteration"].size()) << "history." << name;
    for (const auto& v : column) EXPECT_TRUE(name == "iteration" ? v.is_number_integer() : number_or_null(v));
  }
  if (iterative) EXPECT_EQ(h["iteration"].size(), std::size_t(j.value("iterations", 0)));
  for (const auto& m : metrics) {
    EXPECT_TRUE(j.contains(m) && number_or_null(j[m])) << "metric " << m;
    if (iterative) EXPECT_TRUE(h.contains(m)) << "history." << m;
  }
}

TEST(ReportSchema, Nmf) {
  expect_report(run_json("nmf --input " + quote(inputs().matrix) + " -k 3 -n 4 --quiet"), "nmf", {"relative_error"},
                true);
}

TEST(ReportSchema, Als) {
  expect_report(
      run_json("als --input " + quote(inputs().ratings) + " --format ratings -k 3 -n 3 --test-fraction 0.2 --quiet"),
      "als", {"train_rmse", "test_rmse", "loss"}, true);
}

TEST(ReportSchema, Bmf) {
  const json j = run_json("bmf --input " + quote(inputs().binary) + " -k 3 -n 4 --quiet");
  expect_report(
      j, "bmf",
      {"relative_error", "errors", "ones_precision", "ones_recall", "false_pos", "false_neg", "weighted_error"}, true);
  // The metrics of the ones are named apart from the report's `precision`
  // field, which keeps the element type.
  EXPECT_EQ(j.value("precision", ""), "bits");
  EXPECT_FALSE(j.contains("recall"));
}

TEST(ReportSchema, Mnmf) {
  expect_report(run_json("mnmf --input " + quote(inputs().ratings) +
                         " --format ratings -k 3 -n 3 --neighbors 3 --test-fraction 0.2 --quiet"),
                "mnmf", {"train_rmse", "objective", "test_rmse", "test_mae"}, true);
}

TEST(ReportSchema, Sddmm) {
  const json j = run_json("sddmm --input " + quote(inputs().matrix) + " -k 8 --reps 2 --check --quiet");
  expect_report(j, "sddmm", {"gflops", "apply_seconds", "max_diff_vs_reference"}, false);
  EXPECT_EQ(j.value("iterations", 0), 2);  // the timed repetitions
  for (const char* k : {"kernel", "options", "input"}) EXPECT_TRUE(j["info"].contains(k)) << k;
}

TEST(ReportSchema, Info) {
  expect_report(run_json("info --input " + quote(inputs().matrix)), "info",
                {"density", "min_value", "max_value", "entries_read", "duplicates_merged", "empty_rows", "empty_cols",
                 "negative_values", "explicit_zeros", "lines"},
                false);
}

TEST(ReportSchema, AlsImplicitRankingMetrics) {
  const json j = run_json("als --input " + quote(inputs().ratings) +
                          " --format ratings --implicit -k 3 -n 2 --split leave-k-out:2 --eval-k 5 --quiet");
  expect_report(j, "als", {"loss", "precision_at_k", "recall_at_k", "map_at_k", "ndcg_at_k", "auc"}, true);
  EXPECT_EQ(j["info"].value("eval_k", ""), "5");
}

TEST(ReportSchema, RecommendAndSimilar) {
  const std::string prefix = inputs().dir.file("serving");
  const auto r = run_kfactor(
      "als --quiet --format ratings --input " + quote(inputs().ratings) + " -k 3 -n 1 --output " + quote(prefix),
      inputs().dir, "", 901);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& command :
       std::vector<std::string>{"recommend --all-users", "similar --users " + quote(inputs().ratings)}) {
    const json j = run_json(command + " --factors " + quote(prefix) + " --n 4");
    const std::string name = command.substr(0, command.find(' '));
    expect_report(j, name, {"queries", "skipped"}, false);
    ASSERT_TRUE(j.contains("rankings") && j["rankings"].is_array()) << name;
    EXPECT_EQ(j["rankings"].size(), std::size_t(j.value("queries", 0.0)));
    for (const auto& l : j["rankings"]) {
      EXPECT_TRUE(l["query"].is_number_integer());
      EXPECT_EQ(l["ids"].size(), 4u);
      EXPECT_EQ(l["scores"].size(), 4u);
    }
  }
}

TEST(ReportSchema, DemoHoldsOneReportPerSolver) {
  const json j = run_json("demo --only nmf --seed 3");
  EXPECT_EQ(j.value("command", ""), "demo");
  EXPECT_TRUE(j.contains("seconds") && j["seconds"].is_number());
  EXPECT_TRUE(j.contains("seed") && j["seed"].is_number_integer());
  ASSERT_TRUE(j.contains("demos") && j["demos"].is_array());
  ASSERT_EQ(j["demos"].size(), 1u);
  expect_report(j["demos"][0], "nmf", {"relative_error"}, true);
}

#if defined(KFACTOR_HAVE_HDF5)
TEST(ReportSchema, CheckpointInfo) {
  const std::string ck = inputs().dir.file("schema.h5");
  const auto r = run_kfactor("nmf --input " + quote(inputs().matrix) + " -k 3 -n 2 --quiet --checkpoint " + quote(ck),
                             inputs().dir, "", 900);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = run_json("checkpoint-info " + quote(ck));
  for (const char* s : {"solver", "precision", "backend"}) EXPECT_TRUE(j.contains(s) && j[s].is_string()) << s;
  for (const char* i : {"format_version", "rank", "iteration", "mpi_ranks", "concurrency"})
    EXPECT_TRUE(j.contains(i) && j[i].is_number_integer()) << i;
  EXPECT_TRUE(j.contains("execution_space") && j["execution_space"].is_string());
  EXPECT_EQ(j.value("solver", ""), "nmf");
  EXPECT_EQ(j.value("iteration", -1), 2);
  EXPECT_TRUE(j.contains("options") && j["options"].is_object());
  ASSERT_TRUE(j.contains("input") && j["input"].is_object());
  for (const char* i : {"rows", "cols", "nnz"}) EXPECT_TRUE(j["input"][i].is_number_integer()) << i;
  EXPECT_TRUE(j["input"]["checksum"].is_string());
  ASSERT_TRUE(j.contains("fields") && j["fields"].is_array());
  for (const auto& f : j["fields"]) {
    EXPECT_TRUE(f["name"].is_string());
    EXPECT_TRUE(f["type"].is_string());
    EXPECT_TRUE(f["shape"].is_array());
  }
  EXPECT_TRUE(j["history"]["names"].is_array());
  EXPECT_TRUE(j["history"]["rows"].is_number_integer());
  EXPECT_EQ(j.value("verified", false), true);
}
#endif

}  // namespace
