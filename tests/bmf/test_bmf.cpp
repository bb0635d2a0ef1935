// CuBin BMF solver: the window's held lines, exact incremental error (dense and sparse C), greedy
// monotonicity, planted recovery, k = 1 / 33 / 200, all-zero and all-ones C,
// dense/sparse and thread-count determinism, options and stop rules, the
// solver contract, exact restarts of Metropolis runs that keep the best
// factors, and restarts that refuse changed options.
#include <kfactor/bmf/bmf.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/io/checkpoint.hpp>

#include "common/restart_refusal.hpp"
#include "common/test_spaces.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {
using namespace kfactor;

static_assert(
    kfactor::Solver<Kokkos::DefaultHostExecutionSpace, bmf::Problem<Kokkos::DefaultHostExecutionSpace::memory_space>,
                    bmf::Options, bmf::State<Kokkos::DefaultHostExecutionSpace::memory_space>>);

template <class Space>
class BmfTest : public ::testing::Test {};
TYPED_TEST_SUITE(BmfTest, test::ExecutionSpaces, test::SpaceNames);

template <class Space>
bmf::Problem<typename Space::memory_space> problem_of(const bmf::Planted& p, bmf::DenseC mode) {
  bmf::Options o;
  o.dense_c = mode;
  return bmf::make_problem(Space{}, p.rows, p.cols, p.one_rows, p.one_cols, o);
}

/// Error of the planted factors on the noisy C.
template <class Space>
BooleanErrors planted_error(const bmf::Planted& p, const bmf::Problem<typename Space::memory_space>& prob) {
  using Mem = typename Space::memory_space;
  return bmf::full_error(Space{}, prob, copy_to<Mem>(p.A), copy_to<Mem>(p.Bt));
}

template <class Mem>
std::vector<bit_word_t> words_of(const BitMatrix<Mem>& X) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X.words);
  return std::vector<bit_word_t>(h.data(), h.data() + h.size());
}

// Runs `iters` steps by hand and checks the tracked counts against a full
// recomputation after every iteration.
template <class Space>
void check_tracking(const bmf::Problem<typename Space::memory_space>& prob, const bmf::Options& o, int iters,
                    bool greedy) {
  auto s = bmf::init(Space{}, prob, o);
  const auto e0 = bmf::full_error(Space{}, prob, s.A, s.Bt);
  ASSERT_EQ(s.false_pos, e0.false_pos);
  ASSERT_EQ(s.false_neg, e0.false_neg);
  std::uint64_t prev = s.false_pos + s.false_neg;
  for (int t = 0; t < iters; ++t) {
    bmf::step(Space{}, prob, o, s);
    ++s.iteration;
    const auto e = bmf::full_error(Space{}, prob, s.A, s.Bt);
    ASSERT_EQ(s.false_pos, e.false_pos) << "iteration " << t;
    ASSERT_EQ(s.false_neg, e.false_neg) << "iteration " << t;
    if (greedy) ASSERT_LE(s.false_pos + s.false_neg, prev) << "greedy increased the error at " << t;
    prev = s.false_pos + s.false_neg;
  }
  EXPECT_GT(s.accepted, 0u);
}

// The window's lines held in [lo, hi), from window_runs' runs, against the
// lines listed one by one: each held line once, at its own slot; and every
// line of the window distinct.
TEST(BmfWindow, RunsListTheHeldLinesOfTheSpreadWindow) {
  for (std::int64_t num_lines : {1, 7, 90, 97, 1000})
    for (std::int64_t count : {std::int64_t(1), std::int64_t(3), num_lines / 3 + 1, num_lines / 2, num_lines})
      for (std::int64_t start = 0; start < num_lines; start += std::max<std::int64_t>(1, num_lines / 13))
        for (std::int64_t lo : {std::int64_t(0), num_lines / 4, num_lines / 2 + 1})
          for (std::int64_t hi : {lo + 1, num_lines * 3 / 4 + 1, num_lines}) {
            if (count < 1 || count > num_lines || lo >= hi || hi > num_lines) continue;
            const std::int64_t stride = bmf::detail::window_stride(count, num_lines);
            std::vector<std::pair<std::int64_t, std::int64_t>> want;  // (line, slot)
            std::vector<bool> seen(std::size_t(num_lines), false);
            for (std::int64_t s = 0; s < count; ++s) {
              const std::int64_t line = (start + s * stride) % num_lines;
              ASSERT_FALSE(seen[line]) << "line " << line << " twice in a window of " << count;
              seen[line] = true;
              if (line >= lo && line < hi) want.emplace_back(line, s);
            }
            bmf::detail::WindowRun runs[2];
            const int n = bmf::detail::window_runs(start, count, stride, num_lines, lo, hi, runs);
            std::vector<std::pair<std::int64_t, std::int64_t>> got;
            for (int r = 0; r < n; ++r)
              for (std::int64_t j = 0; j < runs[r].count; ++j)
                got.emplace_back(runs[r].first + j * stride, runs[r].slot + j);
            std::sort(want.begin(), want.end());
            std::sort(got.begin(), got.end());
            EXPECT_EQ(got, want) << num_lines << " lines, " << count << " from " << start << ", held [" << lo << ", "
                                 << hi << ")";
          }
}

TYPED_TEST(BmfTest, TrackedErrorEqualsRecomputationDenseAndSparse) {
  using Space = TypeParam;
  const auto p = bmf::make_planted(90, 70, 6, 0.2, 0.05, 3);
  for (auto mode : {bmf::DenseC::on, bmf::DenseC::off}) {
    const auto prob = problem_of<Space>(p, mode);
    EXPECT_EQ(prob.dense, mode == bmf::DenseC::on);
    bmf::Options o;
    o.rank = 6;
    o.batch = 25;  // windows wrap around
    o.init = bmf::Init::dost;
    check_tracking<Space>(prob, o, 30, true);
    // Metropolis and weighted acceptance: worse changes are taken too, still exact.
    o.temperature = 2.0;
    o.weight_ones = 2.5;
    o.flip_prob = 0.3;
    check_tracking<Space>(prob, o, 30, false);
    // Data-driven start (B's rows sampled from C), greedy.
    o.temperature = 0.0;
    o.weight_ones = 1.0;
    o.init = bmf::Init::sample_rows;
    check_tracking<Space>(prob, o, 10, true);
    // Greedy cover start: its error is exact from the first count on.
    o.init = bmf::Init::cover;
    check_tracking<Space>(prob, o, 10, true);
  }
}

TYPED_TEST(BmfTest, RanksOneThirtyThreeAndTwoHundred) {
  using Space = TypeParam;
  for (int k : {1, 33, 200}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    // k <= min(m, n): make_problem refuses a larger rank.
    const auto p = bmf::make_planted(std::max(60, k + 10), std::max(50, k + 5), k, std::min(0.5, std::sqrt(0.25 / k)),
                                     0.02, 10 + k);
    const auto prob = problem_of<Space>(p, k == 33 ? bmf::DenseC::off : bmf::DenseC::on);
    bmf::Options o;
    o.rank = k;
    o.batch = 40;
    o.init = bmf::Init::dost;
    o.flip_prob = k == 1 ? 0.5 : 2.0 / k;
    check_tracking<Space>(prob, o, 10, true);
    // The solve from the default (cover) start: a random start at k = 200
    // begins far above the all-zero error on a matrix this small.
    o.init = bmf::Options{}.init;
    o.stop.max_iterations = 400;
    const auto r = bmf::solve(Space{}, prob, o);
    const double all_zero = prob.density();
    EXPECT_LT(r.report.metrics.get("relative_error"), 0.8 * all_zero) << "k " << k;
    EXPECT_EQ(bmf::factor_a(r.state).extent(1), std::size_t(k));
    EXPECT_EQ(bmf::factor_b(r.state).extent(0), std::size_t(k));
  }
}

TYPED_TEST(BmfTest, PlantedFactorsRecoveredToTheNoiseLevel) {
  using Space = TypeParam;
  for (double noise : {0.01, 0.05, 0.10}) {
    const auto p = bmf::make_planted(160, 120, 4, 0.3, noise, 7);
    const auto prob = problem_of<Space>(p, bmf::DenseC::automatic);
    const auto truth = planted_error<Space>(p, prob);
    bmf::Options o;
    o.rank = 4;
    o.stop.max_iterations = 1500;
    o.batch = 100;
    o.flip_prob = 0.25;
    o.init = bmf::Init::dost;
    o.every_line_changed = 100;
    double best = 1.0;
    for (std::uint64_t seed : {1, 2}) {
      o.seed = seed;
      const auto r = bmf::solve(Space{}, prob, o);
      best = std::min(best, r.report.metrics.get("relative_error"));
    }
    std::printf("noise %.2f: planted E_rec %.5f, found %.5f, density %.4f\n", noise, truth.relative(), best,
                prob.density());
    EXPECT_LE(best, 1.1 * truth.relative() + 1e-4) << "noise " << noise;
  }
}

// At the sparsity of the 10^6 x 10^6 benchmark (about 10 ones per row,
// factor lines of about 0.5% density) random starts find nothing (the
// error stays at the all-zero answer's); the cover start recovers the
// planted blocks through the sparse path.
TYPED_TEST(BmfTest, SparsePlantedRecoveredFromCoverStart) {
  using Space = TypeParam;
  for (double noise : {0.01, 0.10}) {
    SCOPED_TRACE("noise " + std::to_string(noise));
    const auto p = bmf::make_planted(20000, 20000, 20, 0.005, noise, 11);
    const auto prob = problem_of<Space>(p, bmf::DenseC::off);
    ASSERT_FALSE(prob.dense);
    const auto truth = planted_error<Space>(p, prob);
    bmf::Options o;
    o.rank = 20;
    o.stop.max_iterations = 20;
    o.every_line_changed = 0;
    o.init = bmf::Init::cover;
    const auto r = bmf::solve(Space{}, prob, o);
    const double found = r.report.metrics.get("relative_error");
    std::printf("sparse planted, noise %.2f: planted E_rec %.3g, found %.3g, all-zero %.3g\n", noise, truth.relative(),
                found, prob.density());
    EXPECT_LE(found, 1.02 * truth.relative());
    EXPECT_LT(truth.relative(), 0.25 * prob.density());  // the planted answer is far below the all-zero one
  }
}

TYPED_TEST(BmfTest, AllZeroAndAllOnesC) {
  using Space = TypeParam;
  const int m = 40, n = 23;
  bmf::Options o;
  o.rank = 3;
  o.stop.max_iterations = 200;
  // All-zero C: nothing to factorize, refused as input.
  EXPECT_THROW(bmf::make_problem(Space{}, m, n, {}, {}, o), InputError);
  // All-ones C: found exactly (one column of A and one row of B all ones).
  {
    std::vector<ordinal_t> r_, c_;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        r_.push_back(i);
        c_.push_back(j);
      }
    for (auto mode : {bmf::DenseC::on, bmf::DenseC::off}) {
      o.dense_c = mode;
      const auto prob = bmf::make_problem(Space{}, m, n, r_, c_, o);
      EXPECT_DOUBLE_EQ(prob.density(), 1.0);
      o.init = bmf::Init::density;  // p = 1: everything set, error 0 at once
      auto r = bmf::solve(Space{}, prob, o);
      EXPECT_EQ(r.report.metrics.get("errors"), 0.0);
      o.init = bmf::Init::density100;  // p = 1/100: must be found by search
      o.flip_prob = 0.5;
      r = bmf::solve(Space{}, prob, o);
      EXPECT_EQ(r.report.metrics.get("errors"), 0.0);
      EXPECT_EQ(r.report.stop_reason, "target_reached");
    }
  }
}

TYPED_TEST(BmfTest, DenseAndSparseGiveIdenticalFactors) {
  using Space = TypeParam;
  const auto p = bmf::make_planted(150, 110, 8, 0.15, 0.05, 21);
  bmf::Options o;
  o.rank = 8;
  o.init = bmf::Init::density100;  // a seeded random start: another seed, other factors
  o.batch = 60;
  o.stop.max_iterations = 60;
  o.temperature = 1.0;
  o.temp_step = 10;
  o.temp_factor = 0.5;
  const auto d = bmf::solve(Space{}, problem_of<Space>(p, bmf::DenseC::on), o);
  const auto s = bmf::solve(Space{}, problem_of<Space>(p, bmf::DenseC::off), o);
  EXPECT_EQ(d.report.info.at("c_storage"), "dense_bits");
  EXPECT_EQ(s.report.info.at("c_storage"), "sparse_csr");
  EXPECT_EQ(words_of(d.state.A), words_of(s.state.A));
  EXPECT_EQ(words_of(d.state.Bt), words_of(s.state.Bt));
  EXPECT_EQ(d.state.accepted, s.state.accepted);
  EXPECT_EQ(d.report.metrics.get("errors"), s.report.metrics.get("errors"));
  // Without the inverted bit index (plain scans of the fixed factor): the same.
  o.index_min_lines = std::int64_t(1) << 40;
  for (auto mode : {bmf::DenseC::on, bmf::DenseC::off}) {
    const auto x = bmf::solve(Space{}, problem_of<Space>(p, mode), o);
    EXPECT_EQ(words_of(d.state.A), words_of(x.state.A));
    EXPECT_EQ(words_of(d.state.Bt), words_of(x.state.Bt));
  }
  o.index_min_lines = -1;
  // The cover start reads only C's ones: the same factors from both storages.
  {
    auto oc = o;
    oc.init = bmf::Init::cover;
    const auto dc = bmf::solve(Space{}, problem_of<Space>(p, bmf::DenseC::on), oc);
    const auto sc = bmf::solve(Space{}, problem_of<Space>(p, bmf::DenseC::off), oc);
    EXPECT_EQ(words_of(dc.state.A), words_of(sc.state.A));
    EXPECT_EQ(words_of(dc.state.Bt), words_of(sc.state.Bt));
  }
  // A different seed gives different factors.
  o.seed = 43;
  const auto other = bmf::solve(Space{}, problem_of<Space>(p, bmf::DenseC::on), o);
  EXPECT_NE(words_of(d.state.A), words_of(other.state.A));
}

// Digest of a start: its factors' words and its exact error.
template <class Mem>
std::string digest_of(const bmf::State<Mem>& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (auto w : words_of(s.A)) h = CounterRng::mix(h ^ w);
  for (auto w : words_of(s.Bt)) h = CounterRng::mix(h ^ w);
  return std::to_string(h) + " fp " + std::to_string(s.false_pos) + " fn " + std::to_string(s.false_neg);
}

// The cover start on fixed problems against digests recorded from the serial
// implementation it replaced (commit 9a62ae8): the parallel candidate
// evaluation must choose exactly the same lines. The cases cover one and two
// words per line (k = 70), both storages, ranks the cover cannot fill (sides
// stop early), few candidates, and wins of either orientation.
TYPED_TEST(BmfTest, CoverStartMatchesRecordedSerialFactors) {
  using Space = TypeParam;
  struct Case {
    std::int64_t m, n;
    int k_planted, k;
    double density, noise;
    std::uint64_t planted_seed, seed;
    int candidates;
    bmf::DenseC mode;
    const char* digest;
  };
  const Case cases[] = {
      {90, 70, 6, 6, 0.2, 0.05, 3, 42, 64, bmf::DenseC::on, "3065441343311041021 fp 211 fn 57"},
      {300, 200, 12, 70, 0.15, 0.05, 4, 7, 64, bmf::DenseC::off, "15025906516003697870 fp 2211 fn 342"},
      {2000, 1500, 16, 16, 0.02, 0.02, 5, 1, 64, bmf::DenseC::off, "15805486370826189121 fp 414 fn 414"},
      {1500, 400, 10, 24, 0.05, 0.10, 6, 3, 8, bmf::DenseC::on, "1390583501233304673 fp 1348 fn 1256"},
      {200, 900, 8, 8, 0.08, 0.03, 8, 5, 3, bmf::DenseC::automatic, "6748064067584105104 fp 304 fn 304"},
      {40, 30, 2, 9, 0.3, 0.0, 9, 11, 64, bmf::DenseC::off, "5785006089525694136 fp 0 fn 0"},
      // cover_digest()'s case
      {700, 500, 24, 30, 0.06, 0.05, 12, 4, 100, bmf::DenseC::automatic, "11745168368690118545 fp 1495 fn 1442"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.m) + " x " + std::to_string(c.n) + ", k " + std::to_string(c.k));
    const auto p = bmf::make_planted(c.m, c.n, c.k_planted, c.density, c.noise, c.planted_seed);
    const auto prob = problem_of<Space>(p, c.mode);
    bmf::Options o;
    o.rank = c.k;
    o.seed = c.seed;
    o.cover_candidates = c.candidates;
    o.init = bmf::Init::cover;
    const auto s = bmf::init(Space{}, prob, o);
    std::printf("cover digest %s\n", digest_of(s).c_str());
    EXPECT_EQ(digest_of(s), c.digest);
  }
}

// Thread-count independence: the parent runs the solver, then runs this test
// binary again in a child process with a different OMP_NUM_THREADS (1, or 3
// when the parent already has 1), and compares a digest of the factors the
// child writes to a file: of a whole run and of the cover start alone.
// Threads are a host-space notion, so this runs on the host space even in a
// CUDA build.
std::string run_digest(std::uint64_t seed) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto p = bmf::make_planted(200, 180, 20, 0.08, 0.05, 5);
  bmf::Options o;
  o.rank = 20;
  o.batch = 50;
  o.stop.max_iterations = 40;
  o.seed = seed;
  o.temperature = 0.5;
  const auto prob = bmf::make_problem(Space{}, p.rows, p.cols, p.one_rows, p.one_cols, o);
  const auto r = bmf::solve(Space{}, prob, o);
  std::uint64_t h = 1469598103934665603ULL;
  for (auto w : words_of(r.state.A)) h = CounterRng::mix(h ^ w);
  for (auto w : words_of(r.state.Bt)) h = CounterRng::mix(h ^ w);
  return std::to_string(h) + " " + std::to_string(r.state.accepted) + " " + std::to_string(r.state.false_pos) + " " +
         std::to_string(r.state.false_neg);
}

// The cover start alone (computed in parallel on the host): many candidates
// per factor line, so that every thread evaluates some.
std::string cover_digest() {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto p = bmf::make_planted(700, 500, 24, 0.06, 0.05, 12);
  bmf::Options o;
  o.rank = 30;
  o.seed = 4;
  o.init = bmf::Init::cover;
  o.cover_candidates = 100;
  const auto prob = bmf::make_problem(Space{}, p.rows, p.cols, p.one_rows, p.one_cols, o);
  return digest_of(bmf::init(Space{}, prob, o));
}

TEST(BmfThreads, ChildDigest) {
  const char* out = std::getenv("KFACTOR_BMF_CHILD_OUT");
  if (!out) GTEST_SKIP() << "only runs as the child of SameSeedSameFactorsAcrossThreadCounts";
  std::ofstream(out) << run_digest(9) << " threads " << Kokkos::DefaultHostExecutionSpace().concurrency() << "\n"
                     << cover_digest() << "\n";
}

TEST(BmfThreads, SameSeedSameFactorsAcrossThreadCounts) {
  const int mine = Kokkos::DefaultHostExecutionSpace().concurrency();
  const int child = mine == 1 ? 3 : 1;
  const std::string file = ::testing::TempDir() + "/kfactor_bmf_child_" + std::to_string(::getpid()) + ".txt";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "KFACTOR_BMF_CHILD_OUT=" + file + " OMP_NUM_THREADS=" + std::to_string(child) +
                          " OMP_PROC_BIND=false " + self + " --gtest_filter=BmfThreads.ChildDigest > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(file);
  std::string digest, accepted, fp, fn, word;
  int threads = 0;
  in >> digest >> accepted >> fp >> fn >> word >> threads >> std::ws;
  std::string cover;
  std::getline(in, cover);
  std::remove(file.c_str());
  EXPECT_EQ(threads, child);
  EXPECT_NE(threads, mine);
  EXPECT_EQ(digest + " " + accepted + " " + fp + " " + fn, run_digest(9));
  EXPECT_EQ(cover, cover_digest());
}

TYPED_TEST(BmfTest, StopRulesAndGreedyHistory) {
  using Space = TypeParam;
  const auto p = bmf::make_planted(120, 90, 4, 0.25, 0.03, 2);
  const auto prob = problem_of<Space>(p, bmf::DenseC::automatic);
  bmf::Options o;
  o.rank = 4;
  o.batch = 1000;
  o.every_line_changed = 5;  // limit (120 / 1000 + 1) * 5 = 5
  o.stop.max_iterations = 100000;
  const auto r = bmf::solve(Space{}, prob, o);
  EXPECT_EQ(r.report.stop_reason, "no_improvement");
  EXPECT_EQ(r.state.no_improve, 5);
  EXPECT_EQ(r.report.info.at("max_no_improve"), "5");
  const auto& h = r.report.history;
  ASSERT_EQ(h.size(), std::size_t(r.report.iterations));
  for (std::size_t t = 1; t < h.size(); ++t) EXPECT_LE(h.rows[t][0], h.rows[t - 1][0]);  // greedy: monotone
  // Target error: stops as soon as E_rec <= target.
  o.stop.target = 0.5 * prob.density();
  o.every_line_changed = 0;
  const auto t = bmf::solve(Space{}, prob, o);
  EXPECT_EQ(t.report.stop_reason, "target_reached");
  EXPECT_LE(t.report.metrics.get("relative_error"), o.stop.target);
  // Max iterations.
  o.stop.target = 0;
  o.stop.max_iterations = 7;
  EXPECT_EQ(bmf::solve(Space{}, prob, o).report.iterations, 7);
  // Continuing a state gives the same as one long run.
  o.stop.max_iterations = 12;
  const auto full = bmf::solve(Space{}, prob, o);
  o.stop.max_iterations = 5;
  auto part = bmf::solve(Space{}, prob, o);
  o.stop.max_iterations = 12;
  auto cont = std::move(part.state);
  const auto cont_report = bmf::resume(Space{}, prob, o, cont);
  EXPECT_EQ(cont_report.iterations, 12);
  EXPECT_EQ(words_of(full.state.A), words_of(cont.A));
  EXPECT_EQ(words_of(full.state.Bt), words_of(cont.Bt));
  EXPECT_EQ(full.report.metrics.get("errors"), cont_report.metrics.get("errors"));
}

TYPED_TEST(BmfTest, InputAndOptionErrors) {
  using Space = TypeParam;
  bmf::Options o;
  o.rank = 2;
  EXPECT_THROW(bmf::make_problem(Space{}, 3, 3, {0, 3}, {0, 0}, o), InputError);
  EXPECT_THROW(bmf::make_problem(Space{}, 3, 3, {0}, {-1}, o), InputError);
  const auto prob = bmf::make_problem(Space{}, 3, 4, {0, 0, 2, 2}, {1, 1, 3, 0}, o);  // duplicate merged
  EXPECT_EQ(prob.ones, 3u);
  for (auto f : {+[](bmf::Options& x) { x.rank = 0; }, +[](bmf::Options& x) { x.rank = 5000; },
                 +[](bmf::Options& x) { x.flip_prob = 0; }, +[](bmf::Options& x) { x.batch = 0; },
                 +[](bmf::Options& x) { x.temperature = -1; }, +[](bmf::Options& x) { x.temp_factor = 1.5; },
                 +[](bmf::Options& x) { x.weight_ones = 0; }, +[](bmf::Options& x) { x.cover_candidates = 0; }}) {
    bmf::Options bad;
    f(bad);
    EXPECT_THROW(bad.validate(), UsageError);
  }
  EXPECT_THROW(bmf::parse_init("x"), UsageError);
  EXPECT_EQ(bmf::parse_init("cover"), bmf::Init::cover);
  EXPECT_EQ(bmf::parse_dense_c("off"), bmf::DenseC::off);
  // Automatic storage: dense under the limit, sparse above it.
  o.dense_limit_bytes = 0;
  EXPECT_FALSE(bmf::make_problem(Space{}, 3, 4, {0}, {1}, o).dense);
  o.dense_limit_bytes = 1 << 20;
  EXPECT_TRUE(bmf::make_problem(Space{}, 3, 4, {0}, {1}, o).dense);
  EXPECT_FALSE(bmf::use_dense(bmf::DenseC::automatic, 1000000, 1000000, std::size_t(1) << 30));
  // A rank above min(m, n) is refused, naming the rank, by make_problem and
  // by init for a problem built with a smaller one.
  o.rank = 4;
  try {
    bmf::make_problem(Space{}, 3, 4, {0}, {1}, o);
    ADD_FAILURE() << "rank 4 accepted for a 3 x 4 C";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
  o.rank = 3;
  const auto fits = bmf::make_problem(Space{}, 3, 4, {0}, {1}, o);
  o.rank = 4;
  EXPECT_THROW(bmf::init(Space{}, fits, o), UsageError);
}

// Every numeric option against 0, -1, NaN, Inf and an absurdly large value:
// validate() accepts exactly the values inside the option's declared range
// and names the option when it refuses one.
TEST(BmfOptions, EveryNumericOptionHasARange) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    std::function<void(bmf::Options&, double)> set;
    std::vector<std::pair<double, bool>> values;  // value, accepted
  };
  const double big_int = double(INT_MAX);
  const std::vector<Case> cases = {
      {"rank",
       [](bmf::Options& o, double v) { o.rank = int(v); },
       {{0, false}, {-1, false}, {big_int, false}, {1024, true}}},
      {"stop.max_iterations",
       [](bmf::Options& o, double v) { o.stop.max_iterations = int(v); },
       {{0, true}, {-1, false}, {big_int, false}}},
      {"stop.tolerance",
       [](bmf::Options& o, double v) { o.stop.tolerance = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}}},
      {"stop.target",
       [](bmf::Options& o, double v) { o.stop.target = v; },
       {{0, true}, {-1, false}, {nan, true}, {inf, false}, {1e300, false}}},
      {"batch", [](bmf::Options& o, double v) { o.batch = int(v); }, {{0, false}, {-1, false}, {big_int, true}}},
      {"flip_prob",
       [](bmf::Options& o, double v) { o.flip_prob = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {1, true}}},
      {"temperature",
       [](bmf::Options& o, double v) { o.temperature = v; },
       {{0, true}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}}},
      {"temp_step",
       [](bmf::Options& o, double v) { o.temp_step = int(v); },
       {{0, false}, {-1, false}, {big_int, true}}},
      {"temp_factor",
       [](bmf::Options& o, double v) { o.temp_factor = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {1, true}}},
      {"weight_ones",
       [](bmf::Options& o, double v) { o.weight_ones = v; },
       {{0, false}, {-1, false}, {nan, false}, {inf, false}, {1e300, false}, {2, true}}},
      {"every_line_changed",
       [](bmf::Options& o, double v) { o.every_line_changed = int(v); },
       {{0, true}, {-1, false}, {big_int, false}}},
      {"cover_candidates",
       [](bmf::Options& o, double v) { o.cover_candidates = int(v); },
       {{0, false}, {-1, false}, {big_int, false}}},
      {"proposal_group",
       [](bmf::Options& o, double v) { o.proposal_group = int(v); },
       {{0, false}, {-1, false}, {big_int, true}}},
      {"index_min_lines",
       [](bmf::Options& o, double v) { o.index_min_lines = std::int64_t(v); },
       {{0, true}, {-1, true}, {-2, false}, {1e15, true}}},
      {"dense_limit_bytes",
       [](bmf::Options& o, double v) { o.dense_limit_bytes = std::size_t(v); },
       {{0, true}, {1e18, false}}},
  };
  for (const auto& c : cases)
    for (const auto& [v, ok] : c.values) {
      SCOPED_TRACE(std::string(c.name) + " = " + std::to_string(v));
      bmf::Options o;
      c.set(o, v);
      if (ok) {
        EXPECT_NO_THROW(o.validate());
      } else {
        try {
          o.validate();
          ADD_FAILURE() << "accepted";
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
        }
      }
    }
}

#if defined(KFACTOR_HAVE_HDF5)
/// The bits of a history's iterations and values: equal histories compare
/// equal, NaN entries included.
std::vector<std::uint64_t> history_bits(const MetricHistory& h) {
  std::vector<std::uint64_t> out(h.iterations.begin(), h.iterations.end());
  for (const auto& row : h.rows)
    for (double v : row) out.push_back(std::bit_cast<std::uint64_t>(v));
  return out;
}

std::vector<std::uint64_t> metric_bits(const Metrics& m) {
  std::vector<std::uint64_t> out;
  for (const auto& [name, v] : m.items) out.push_back(std::bit_cast<std::uint64_t>(v));
  return out;
}

/// Two runs left the same state and report, bit for bit (timings aside).
template <class Mem>
void expect_same_run(const bmf::State<Mem>& a, const Report& ra, const bmf::State<Mem>& b, const Report& rb) {
  EXPECT_EQ(a.iteration, b.iteration);
  EXPECT_EQ(words_of(a.A), words_of(b.A));
  EXPECT_EQ(words_of(a.Bt), words_of(b.Bt));
  EXPECT_EQ(words_of(a.best_A), words_of(b.best_A));
  EXPECT_EQ(words_of(a.best_Bt), words_of(b.best_Bt));
  EXPECT_EQ(a.false_pos, b.false_pos);
  EXPECT_EQ(a.false_neg, b.false_neg);
  EXPECT_EQ(a.best_false_pos, b.best_false_pos);
  EXPECT_EQ(a.best_false_neg, b.best_false_neg);
  EXPECT_EQ(a.accepted, b.accepted);
  EXPECT_EQ(a.no_improve, b.no_improve);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(a.temperature), std::bit_cast<std::uint64_t>(b.temperature));
  EXPECT_EQ(a.history.names, b.history.names);
  EXPECT_EQ(history_bits(a.history), history_bits(b.history));
  EXPECT_EQ(ra.iterations, rb.iterations);
  EXPECT_EQ(ra.stop_reason, rb.stop_reason);
  EXPECT_EQ(metric_bits(ra.metrics), metric_bits(rb.metrics));
  EXPECT_EQ(history_bits(ra.history), history_bits(rb.history));
  const auto fa = bmf::factor_a(a), fb = bmf::factor_a(b);
  EXPECT_EQ(std::vector<std::uint8_t>(fa.data(), fa.data() + fa.size()),
            std::vector<std::uint8_t>(fb.data(), fb.data() + fb.size()));
}
#endif

// Metropolis with keep_best: the State keeps the current iterate and the best
// factors beside it, so a restart from a checkpoint taken during the run, or
// from the final checkpoint of a finished run given more iterations, follows
// the uninterrupted run bit for bit; the result (factors, report) is still
// the best seen.
TYPED_TEST(BmfTest, MetropolisKeepBestRestartsExactly) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  using Space = TypeParam;
  const auto p = bmf::make_planted(90, 70, 5, 0.2, 0.05, 8);
  const auto prob = problem_of<Space>(p, bmf::DenseC::automatic);
  bmf::Options o;
  o.rank = 5;
  o.batch = 30;
  o.init = bmf::Init::sample_rows;
  o.flip_prob = 0.1;
  o.temperature = 5.0;
  o.temp_step = 4;
  o.temp_factor = 0.9;
  o.every_line_changed = 0;  // only max_iterations stops the run
  o.stop.max_iterations = 24;
  o.seed = 9;  // a run that ends above its best at 13 and at 24 iterations (asserted below)
  ASSERT_TRUE(o.keep_best);
  auto meta = checkpoint_meta<std::uint64_t, Space>("bmf", option_values(o), InputFingerprint{}, o.rank);
  meta.precision = "bits";
  const std::string path = ::testing::TempDir() + "/kfactor_bmf_best_" + std::to_string(::getpid()) + ".h5";

  const auto full = bmf::solve(Space{}, prob, o);
  ASSERT_TRUE(full.state.has_best_copy);
  // The run ends above its best, so the result and the last iterate differ.
  ASSERT_LT(full.state.best_errors().hamming(), full.state.errors().hamming());
  // The result is the best seen: the lowest error of the start and of every
  // iteration, recomputed from the best factors, and what factor_a gives.
  const double start = double(bmf::init(Space{}, prob, o).errors().hamming());
  double lowest = start;
  const auto& h = full.report.history;
  const auto col = std::find(h.names.begin(), h.names.end(), "errors") - h.names.begin();
  for (const auto& row : h.rows) lowest = std::min(lowest, row[col]);
  ASSERT_LT(lowest, start);  // the best was found by the search, not the start
  EXPECT_EQ(full.report.metrics.get("errors"), lowest);
  EXPECT_EQ(double(bmf::full_error(Space{}, prob, full.state.best_A, full.state.best_Bt).hamming()), lowest);
  {
    const auto fa = bmf::factor_a(full.state);
    const auto best = copy_to<Kokkos::HostSpace>(full.state.best_A);
    bool same = true;
    for (std::int64_t i = 0; i < best.lines; ++i)
      for (std::int64_t l = 0; l < best.bits; ++l) same = same && (fa(i, l) != 0) == best.get(i, l);
    EXPECT_TRUE(same) << "factor_a is not the best A";
  }

  // A checkpoint taken at iteration 13 of the same run (the observer saves at
  // multiples of 13), restored into a fresh state and continued to 24.
  {
    auto s = bmf::init(Space{}, prob, o);
    bmf::resume(Space{}, prob, o, s, checkpoint_observer(path, 13, s, meta));
  }
  auto restored = bmf::init(Space{}, prob, o);
  const auto stored = load_checkpoint(path, restored, meta);
  ASSERT_EQ(stored.iteration, 13);
  EXPECT_TRUE(stored.setup_change.empty()) << stored.setup_change;
  EXPECT_LT(restored.best_errors().hamming(), restored.errors().hamming());
  const auto cont = bmf::resume(Space{}, prob, o, restored);
  expect_same_run(full.state, full.report, restored, cont);

  // The final checkpoint of a finished 13-iteration run (saved after the
  // run, as `kfactor bmf --checkpoint` does), resumed with 24 iterations.
  auto shorter = o;
  shorter.stop.max_iterations = 13;
  auto first = bmf::solve(Space{}, prob, shorter);
  ASSERT_LT(first.state.best_errors().hamming(), first.state.errors().hamming());
  save_checkpoint(path, first.state, meta);
  auto again = bmf::init(Space{}, prob, o);
  load_checkpoint(path, again, meta);
  const auto longer = bmf::resume(Space{}, prob, o, again);
  expect_same_run(full.state, full.report, again, longer);
  std::remove(path.c_str());
#endif
}

// A restart must repeat every option that decides the iterates: the
// checkpoint records Options::visit's list and load_checkpoint refuses a
// difference with a UsageError naming the option, before touching the state.
TYPED_TEST(BmfTest, RestartWithAChangedOptionIsRefusedNamingIt) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  using Space = TypeParam;
  const auto p = bmf::make_planted(80, 60, 4, 0.2, 0.03, 5);
  const auto prob = problem_of<Space>(p, bmf::DenseC::automatic);
  bmf::Options o;
  o.rank = 4;
  o.batch = 30;
  o.stop.max_iterations = 3;
  o.init = bmf::Init::dost;
  auto meta_of = [](const bmf::Options& x) {
    auto m = checkpoint_meta<std::uint64_t, Space>("bmf", option_values(x), InputFingerprint{}, x.rank);
    m.precision = "bits";
    return m;
  };
  const std::string path = ::testing::TempDir() + "/kfactor_bmf_options_" + std::to_string(::getpid()) + ".h5";
  auto run = bmf::solve(Space{}, prob, o);
  save_checkpoint(path, run.state, meta_of(o));
  // Restored into a state that ran from another seed: load_checkpoint drops
  // the workspace derived from its old factors.
  auto other = o;
  other.seed += 1;
  auto state = bmf::solve(Space{}, prob, other).state;
  // Unchanged options, and a longer stop rule, restore the state.
  auto longer = o;
  longer.stop.max_iterations = 9;
  longer.every_line_changed = 0;
  EXPECT_NO_THROW(load_checkpoint(path, state, meta_of(longer)));
  EXPECT_EQ(state.iteration, 3);
  EXPECT_EQ(words_of(state.A), words_of(run.state.A));
  EXPECT_EQ(bmf::resume(Space{}, prob, longer, state).iterations, 9);
  EXPECT_EQ(words_of(state.A), words_of(bmf::solve(Space{}, prob, longer).state.A));
  const std::vector<kfactor::test::OptionChange<bmf::Options>> changes = {
      {"seed", [](bmf::Options& x) { x.seed += 1; }},
      {"flip_prob", [](bmf::Options& x) { x.flip_prob = 0.25; }},
      {"weight_ones", [](bmf::Options& x) { x.weight_ones = 2; }},
      {"batch", [](bmf::Options& x) { x.batch = 31; }},
      {"order", [](bmf::Options& x) { x.order = bmf::Order::rows_first; }},
      {"proposal_group", [](bmf::Options& x) { x.proposal_group = 2; }},
      {"temperature", [](bmf::Options& x) { x.temperature = 0.5; }},
      {"temp_step", [](bmf::Options& x) { x.temp_step = 10; }},
      {"temp_factor", [](bmf::Options& x) { x.temp_factor = 0.5; }},
      {"keep_best", [](bmf::Options& x) { x.keep_best = false; }},
      {"init", [](bmf::Options& x) { x.init = bmf::Init::cover; }},
      {"cover_candidates", [](bmf::Options& x) { x.cover_candidates = 3; }},
  };
  kfactor::test::expect_restart_refused(path, state, o, meta_of, changes);
  std::remove(path.c_str());
#endif
}

}  // namespace
