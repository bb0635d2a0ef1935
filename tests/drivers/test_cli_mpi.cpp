// `kfactor sddmm --distributed` under `mpiexec -n P`, as a user runs it
// (common/mpi_run.hpp: each job under `timeout`, every rank's own exit code
// recorded).
//
// - A malformed file (all ranks) and a malformed file seen by one rank only:
//   every rank exits 3, and the message naming the file and line is printed
//   once (rank 0 prints agreed errors).
// - Ranks given different inputs: every rank exits 3, "ranks disagree".
// - A failure only rank 0 sees (its --output cannot be written) while the
//   others wait for it: the job ends with the error's exit code (MPI_Abort),
//   one message naming rank 0, no hang.
// - Ranks whose command lines differ (--distributed, --checkpoint or
//   --restart on one rank, other --checkpoint paths, another subcommand,
//   another integer or real value): every rank exits 3 before any
//   collective, within 60 s, naming the option once; the same options in
//   another order, or one given its default value, agree.
// - P = 1..4 (a subset for the variants, and for the timed and equal column
//   splits): the gathered product equals the single-rank command's output
//   (bitwise with the reference kernel, to rounding with the tuned one), and
//   the report's per-rank nonzeros add up to nnz.
#include "common/mpi_run.hpp"

#include <kfactor/config.hpp>
#include <kfactor/io/read.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {
using kfactor::test::count;
using kfactor::test::kfactor_binary;
using kfactor::test::mpi_run;
using kfactor::test::quote;
using kfactor::test::slurp;
using kfactor::test::TempDir;
using Run = kfactor::test::MpiRun;

std::string corpus(const std::string& name) { return std::string(KFACTOR_SOURCE_DIR) + "/tests/io/malformed/" + name; }

constexpr int timeout_seconds = 120;

int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/// Runs `kfactor sddmm --distributed --input INPUT ARGS` on P ranks; rank
/// `odd_rank` gets `odd_input` as --input instead (odd_rank < 0: none).
Run mpirun(const TempDir& dir, int P, const std::string& input, const std::string& args, int odd_rank = -1,
           const std::string& odd_input = {}) {
  const std::string line = "sddmm --distributed --input " + quote(input) + " " + args;
  const std::string odd = "sddmm --distributed --input " + quote(odd_input.empty() ? input : odd_input) + " " + args;
  return mpi_run(dir, P, kfactor_binary(), line, odd_rank, odd, {}, timeout_seconds);
}

/// Runs `kfactor ARGS` on P ranks, where rank `odd_rank` runs `kfactor
/// ODD_ARGS` instead (both already shell-quoted where needed).
Run mpirun_lines(const TempDir& dir, int P, const std::string& args, int odd_rank, const std::string& odd_args) {
  return mpi_run(dir, P, kfactor_binary(), args, odd_rank, odd_args, {}, timeout_seconds);
}

/// The single-rank command (no mpiexec).
Run single(const TempDir& dir, const std::string& args) {
  static int serial = 0;
  const std::string tag = std::to_string(serial++);
  const std::string out = dir.file("sout" + tag), err = dir.file("serr" + tag);
  const std::string cmd = "timeout " + std::to_string(timeout_seconds) + " " + quote(kfactor_binary()) + " sddmm " +
                          args + " >" + quote(out) + " 2>" + quote(err);
  Run r;
  r.code = status_code(std::system(cmd.c_str()));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// Every rank that got to record its exit code exited with `code`, and so
/// did the job. Open MPI 5 lets all P ranks finish; Open MPI 4's mpiexec
/// kills the others as soon as one exits nonzero (with the job then exiting
/// nonzero), so there only the ranks that finished first are seen.
void expect_all_ranks_exit(const Run& r, int P, int code) {
  EXPECT_NE(r.code, 124) << "timed out (hang)\n" << r.err;
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_GE(r.rank_exit.size(), std::size_t(1)) << r.err;
  EXPECT_LE(r.rank_exit.size(), std::size_t(P)) << r.err;
  if (code == 0) EXPECT_EQ(r.rank_exit.size(), std::size_t(P)) << r.err;
  for (const auto& [rank, c] : r.rank_exit) EXPECT_EQ(c, code) << "rank " << rank << "\n" << r.err;
}

class CliMpi : public ::testing::TestWithParam<int> {};

TEST_P(CliMpi, MalformedFileOnEveryRankExits3) {
  const int P = GetParam();
  TempDir dir;
  const std::string bad = corpus("mm_err_L4_nan_value.mtx");
  const auto r = mpirun(dir, P, bad, "--reps 1 -k 4");
  expect_all_ranks_exit(r, P, 3);
  // Printed once, by rank 0, naming the file and the line; rank 0 failed first.
  EXPECT_EQ(count(r.err, "kfactor: error: rank 0: " + bad + ":4: "), 1u) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_P(CliMpi, MalformedFileOnOneRankExits3Everywhere) {
  const int P = GetParam();
  TempDir dir;
  const std::string good = corpus("mm_ok_crlf.mtx"), bad = corpus("mm_err_L4_row_index_out_of_range.mtx");
  const int odd = P - 1;
  const auto r = mpirun(dir, P, good, "--reps 1 -k 4", odd, bad);
  expect_all_ranks_exit(r, P, 3);
  EXPECT_EQ(count(r.err, "kfactor: error: rank " + std::to_string(odd) + ": " + bad + ":4: "), 1u) << r.err;
  EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
}

TEST_P(CliMpi, MismatchedInputsAreDetected) {
  const int P = GetParam();
  TempDir dir;
  // Same shape and nonzero count, other values: only the checksum differs.
  const std::string a = dir.file("a.mtx"), b = dir.file("b.mtx");
  std::ofstream(a) << "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2\n";
  std::ofstream(b) << "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.5\n3 2 -2.5\n";
  const auto r = mpirun(dir, P, a, "--reps 1 -k 4", 1, b);
  expect_all_ranks_exit(r, P, 3);
  EXPECT_EQ(count(r.err, "kfactor: error: ranks disagree on the input's checksum"), 1u) << r.err;
  // Other shapes: caught by the first check.
  const std::string c = dir.file("c.mtx");
  std::ofstream(c) << "%%MatrixMarket matrix coordinate real general\n4 3 1\n1 1 1.5\n";
  const auto r2 = mpirun(dir, P, a, "--reps 1 -k 4", 0, c);
  expect_all_ranks_exit(r2, P, 3);
  EXPECT_EQ(count(r2.err, "kfactor: error: ranks disagree on the input's rows: rank 1 has 3, rank 0 has 4"), 1u)
      << r2.err;
}

TEST_P(CliMpi, OneRankFailureEndsTheJob) {
  const int P = GetParam();
  TempDir dir;
  // Rank 0 alone writes --output; a file in a missing folder passes the
  // targets' check before the run (no file there yet) but cannot be
  // created, so rank 0 fails while the other ranks wait in a collective.
  const std::string missing = dir.file("no_such_folder") + "/p.mtx";
  const auto r = mpirun(dir, P, corpus("mm_ok_crlf.mtx"), "--reps 1 -k 4 --output " + missing);
  EXPECT_NE(r.code, 124) << "timed out (hang)\n" << r.err;
  // MPI_Abort with the error's exit code, which mpiexec returns; one message, naming the rank.
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_EQ(count(r.err, "kfactor: error: rank 0: "), 1u) << r.err;
  EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Ranks, CliMpi, ::testing::Values(2, 3));

// Ranks whose command lines differ in what decides the collectives end with
// exit 3 before the first collective, within a time bound, the message
// naming the option and both values once: one option kind each (a flag on
// one rank, a file option on one rank, other file paths, another
// subcommand, another integer, another real number). Node-local copies of
// the input (other paths, same content), options in another order and an
// option given its default value are not a disagreement.
class CliMpiAgree : public ::testing::TestWithParam<int> {};

constexpr double agreement_time_bound_seconds = 60;

struct Disagreement {
  std::string odd_args, message;
};

TEST_P(CliMpiAgree, DifferingCommandLinesExit3NamingTheOption) {
  const int P = GetParam(), odd = P - 1;
  TempDir dir;
  const std::string in = quote(corpus("mm_ok_crlf.mtx"));
  const std::string base = "sddmm --distributed --reps 1 -k 4 --input " + in;
  const std::string ck = dir.file("a.h5"), other = dir.file("b.h5");
  const std::string nmf = "nmf --quiet -k 2 -n 2 --input " + in;
  const std::string odd_rank = "rank " + std::to_string(odd);
  const std::vector<std::pair<std::string, Disagreement>> cases = {
      {base, {"sddmm --reps 1 -k 4 --input " + in, "ranks disagree on --distributed: rank 0 has '"}},
      {nmf + " --distributed", {nmf, "ranks disagree on --distributed"}},
      {nmf + " --checkpoint " + quote(ck),
       {nmf, "ranks disagree on --checkpoint: rank 0 has '" + ck + "', " + odd_rank + " has none"}},
      {nmf + " --checkpoint " + quote(ck),
       {nmf + " --checkpoint " + quote(other),
        "ranks disagree on --checkpoint: rank 0 has '" + ck + "', " + odd_rank + " has '" + other + "'"}},
      {nmf, {"info --input " + in, "ranks disagree on the subcommand: rank 0 has 'nmf', " + odd_rank + " has 'info'"}},
      {nmf + " --distributed --restart " + quote(ck),
       {nmf + " --distributed", "ranks disagree on --restart: rank 0 has '" + ck + "', " + odd_rank + " has none"}},
      {base,
       {"sddmm --distributed --reps 1 --rank 5 --input " + in,
        "ranks disagree on --rank: rank 0 has '4', " + odd_rank + " has '5'"}},
      {nmf + " --distributed --tol 1e-4",
       {nmf + " --distributed --tol 0.001",
        "ranks disagree on --tol: rank 0 has '1e-4', " + odd_rank + " has '0.001'"}},
  };
  for (const auto& [args, d] : cases) {
    SCOPED_TRACE(args + " | rank " + std::to_string(odd) + ": " + d.odd_args);
    const auto r = mpirun_lines(dir, P, args, odd, d.odd_args);
    expect_all_ranks_exit(r, P, 3);
    EXPECT_LT(r.seconds, agreement_time_bound_seconds) << r.err;
    EXPECT_EQ(count(r.err, "kfactor: error:"), 1u) << r.err;
    EXPECT_EQ(count(r.err, d.message), 1u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_P(CliMpiAgree, NodeLocalInputCopiesAgree) {
  const int P = GetParam();
  TempDir dir;
  const std::string copy = dir.file("copy.mtx");
  std::filesystem::copy_file(corpus("mm_ok_crlf.mtx"), copy);
  const std::string args = "sddmm --distributed --reps 1 -k 4 --json --input ";
  const auto r = mpirun_lines(dir, P, args + quote(corpus("mm_ok_crlf.mtx")), P - 1, args + quote(copy));
  expect_all_ranks_exit(r, P, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out).value("command", ""), "sddmm") << r.out;
}

TEST_P(CliMpiAgree, EquivalentCommandLinesAgree) {
  const int P = GetParam();
  TempDir dir;
  const std::string in = quote(corpus("mm_ok_crlf.mtx"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"info --json --format mm --input " + in, "info --input " + in + " --format mm --json"},
      {"info --json --input " + in, "info --json --format auto --input " + in},
  };
  for (const auto& [args, odd_args] : cases) {
    SCOPED_TRACE(args + " | rank " + std::to_string(P - 1) + ": " + odd_args);
    const auto r = mpirun_lines(dir, P, args, P - 1, odd_args);
    expect_all_ranks_exit(r, P, 0);
    EXPECT_EQ(count(r.err, "kfactor: error:"), 0u) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CliMpiAgree, ::testing::Values(2, 3, 4));

/// Values of a written P (Matrix Market coordinate), in file order.
kfactor::CooMatrix<double> read_p(const std::string& path) { return kfactor::io::read_matrix_market<double>(path); }

TEST(CliMpiSddmm, DistributedEqualsSingleRank) {
  TempDir dir;
  const std::string gen = "--generate powerlaw --rows 700 --cols 500 --nnz 9000 --precision double -k 24 --reps 2";
  // An input file too: exercises every rank reading it.
  const std::string file = dir.file("s.mtx");
  {
    std::ofstream f(file);
    f << "%%MatrixMarket matrix coordinate real general\n40 9 60\n";
    std::uint64_t x = 12345;
    std::map<std::pair<int, int>, int> seen;
    int written = 0;
    while (written < 60) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      const int i = int((x >> 33) % 40), j = int((x >> 17) % 9);
      if (seen[{i, j}]++) continue;
      f << i + 1 << " " << j + 1 << " " << double((x >> 40) % 1000) / 250.0 - 2.0 << "\n";
      ++written;
    }
  }
  const std::string file_opts = "--precision double -k 24 --reps 2";
  // (kernel, from a file, rank counts, column split, extra options): P =
  // 1..4 in full once; the other combinations on fewer rank counts to keep
  // the test short. A Kokkos option passes through to Kokkos.
  struct Case {
    std::string kernel;
    bool from_file;
    std::vector<int> ranks;
    std::string split = "balanced", extra = "";
  };
  for (const auto& [kernel, from_file, ranks, split, extra] :
       {Case{"reference", false, {1, 2, 3, 4}}, Case{"reference", true, {2, 3}}, Case{"auto", false, {3, 4}},
        Case{"reference", false, {2}, "timed", "--kokkos-num-threads=1"}, Case{"reference", false, {3}, "equal"}}) {
    {
      SCOPED_TRACE(kernel + (from_file ? " file " : " generated ") + split + " " + extra);
      // Generated runs pass an empty --input (every rank generates S alike).
      const std::string input = from_file ? file : "";
      const std::string opts =
          (from_file ? file_opts : gen) + " --kernel " + kernel + " --json --column-split " + split + " " + extra;
      const std::string tag = kernel + (from_file ? "_file" : "_gen") + "_" + split;
      const std::string one = dir.file("p1_" + tag + ".mtx");
      const auto s = single(dir, "--input " + quote(input) + " " + opts + " --output " + one);
      ASSERT_EQ(s.code, 0) << s.err;
      const auto ref = read_p(one);
      ASSERT_GT(ref.nnz(), 0u);
      for (const int P : ranks) {
        SCOPED_TRACE("P=" + std::to_string(P));
        const std::string outP = dir.file("p" + std::to_string(P) + "_" + tag + ".mtx");
        const auto r = mpirun(dir, P, input, opts + " --output " + outP);
        expect_all_ranks_exit(r, P, 0);
        auto j = nlohmann::json::parse(r.out);  // exactly one report: rank 0's
        EXPECT_EQ(j["info"]["ranks"], std::to_string(P));
        EXPECT_EQ(j["info"]["column_split"], split);
        std::int64_t total = 0;
        std::istringstream parts(j["info"]["rank_nnz"].get<std::string>());
        for (std::string part; std::getline(parts, part, ',');) total += std::stoll(part);
        EXPECT_EQ(total, j["nnz"].get<std::int64_t>());
        EXPECT_GE(j["nnz_imbalance"].get<double>(), 1.0);
        const auto got = read_p(outP);
        ASSERT_EQ(got.nnz(), ref.nnz());
        ASSERT_EQ(got.rows, ref.rows);
        ASSERT_EQ(got.cols, ref.cols);
        for (std::size_t e = 0; e < ref.nnz(); ++e) {
          if (kernel == "reference")
            ASSERT_EQ(got.values[e], ref.values[e]) << "entry " << e;
          else
            ASSERT_NEAR(got.values[e], ref.values[e], 1e-12 * (1.0 + std::abs(ref.values[e]))) << "entry " << e;
        }
      }
    }
  }
}

}  // namespace
