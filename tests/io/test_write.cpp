// Writers, checked by reading back: exact (bit-identical) round trips for
// float and double, from host COO, from CSR and dense Views in every enabled
// space; the factor CSV with original ids; failures as RuntimeFailure; safe
// writes (every kind of target, inputs, full disk) and output-set stamps.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include "checkpoint/write_targets.hpp"
#include "common/test_spaces.hpp"
#include "io_test_util.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace {
using namespace kfactor;
using kfactor::test::TempDir;

/// Random COO with distinct pairs (sorted), values spanning many magnitudes
/// and signs so that a lossy number format would show.
template <class T>
CooMatrix<T> random_coo(std::int64_t m, std::int64_t n, double density, std::uint64_t seed) {
  CooMatrix<T> A;
  A.num_rows = m;
  A.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      const auto c = static_cast<std::uint64_t>(i * n + j);
      if (rng.uniform(c) < density) {
        A.rows.push_back(static_cast<ordinal_t>(i));
        A.cols.push_back(static_cast<ordinal_t>(j));
        const double mag = std::pow(10.0, 12.0 * rng.uniform(c + (1ull << 40)) - 6.0);
        A.values.push_back(static_cast<T>((rng.uniform(c + (2ull << 40)) < 0.3 ? -1 : 1) * mag / 3.0));
      }
    }
  return A;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

template <class T>
class WriteTyped : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(WriteTyped, Scalars);

TYPED_TEST(WriteTyped, CooRoundTripIsExact) {
  TempDir dir;
  const auto A = random_coo<TypeParam>(37, 53, 0.2, 7);
  ASSERT_GT(A.nnz(), 100u);
  const auto path = dir.file("a.mtx");
  io::write_matrix_market(path, A, "round trip\nsecond line");
  const std::string text = slurp(path);
  EXPECT_EQ(text.rfind("%%MatrixMarket matrix coordinate real general\n% round trip\n% second line\n", 0), 0u);
  io::ReadInfo info;
  const auto B = io::read_matrix<TypeParam>(path, io::Format::automatic, {}, &info);
  EXPECT_EQ(info.format, io::Format::matrix_market);
  EXPECT_EQ(B.num_rows, A.num_rows);
  EXPECT_EQ(B.num_cols, A.num_cols);
  EXPECT_EQ(B.rows, A.rows);
  EXPECT_EQ(B.cols, A.cols);
  EXPECT_EQ(B.values, A.values);  // bit-identical
}

template <class Space>
class WriteSpaces : public ::testing::Test {};
TYPED_TEST_SUITE(WriteSpaces, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(WriteSpaces, CsrRoundTrip) {
  const TypeParam exec;
  TempDir dir;
  auto A = random_coo<double>(41, 29, 0.15, 11);
  A.num_rows = 45;  // trailing empty rows survive
  const auto csr = to_csr(exec, A);
  const auto path = dir.file("csr.mtx");
  io::write_matrix_market(path, csr);
  EXPECT_NE(slurp(path).find("\n% written by kfactor\n"), std::string::npos);
  const auto B = io::read_matrix_market<double>(path);
  EXPECT_EQ(B.num_rows, 45);
  EXPECT_EQ(B.num_cols, 29);
  EXPECT_EQ(B.rows, A.rows);
  EXPECT_EQ(B.cols, A.cols);
  EXPECT_EQ(B.values, A.values);
}

TYPED_TEST(WriteSpaces, DenseArrayRoundTrip) {
  using Mem = typename TypeParam::memory_space;
  const std::int64_t m = 13, n = 6;
  DenseMatrix<float, Mem> F("F", m, n);
  fill_uniform(TypeParam(), F, 5, RngStream::user, -1.0f, 1.0f);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), F);
  h(3, 2) = 0.0f;  // an explicit zero
  Kokkos::deep_copy(F, h);
  TempDir dir;
  const auto path = dir.file("f.mtx");
  io::write_matrix_market_array(path, F, "factor W");
  io::ReadOptions keep;
  keep.keep_zeros = true;
  const auto B = io::read_matrix<float>(path, io::Format::automatic, keep);
  ASSERT_EQ(B.nnz(), static_cast<std::size_t>(m * n));
  for (std::size_t e = 0; e < B.nnz(); ++e) EXPECT_EQ(B.values[e], h(B.rows[e], B.cols[e]));
  EXPECT_EQ(io::read_matrix<float>(path).nnz(), static_cast<std::size_t>(m * n - 1));  // zero dropped by default
}

TYPED_TEST(WriteSpaces, FactorCsvKeepsOriginalIds) {
  using Mem = typename TypeParam::memory_space;
  // Ids from a ratings file: the factor rows get them back.
  const auto R = io::parse_ratings<double>("u,i,r\n30,7,1\n7,8,2\n1000,7,3\n", "r.csv");
  DenseMatrix<double, Mem> W("W", R.user_ids.size(), 3);
  fill_uniform(TypeParam(), W, 9, RngStream::user, 0.0, 1.0);
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), W);
  TempDir dir;
  const auto path = dir.file("W.csv");
  io::write_factor_csv(path, W, R.user_ids);
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "id,f0,f1,f2");
  for (std::size_t i = 0; i < R.user_ids.size(); ++i) {
    ASSERT_TRUE(std::getline(in, line));
    std::istringstream row(line);
    std::string field;
    std::getline(row, field, ',');
    EXPECT_EQ(std::stoll(field), R.user_ids[i]);
    for (int k = 0; k < 3; ++k) {
      std::getline(row, field, ',');
      EXPECT_EQ(std::strtod(field.c_str(), nullptr), h(i, k));
    }
  }
  EXPECT_FALSE(std::getline(in, line));
  EXPECT_THROW(io::write_factor_csv(path, W, std::vector<std::int64_t>{1, 2}), UsageError);
}

TEST(Write, FactorPicksFormatByExtension) {
  DenseMatrix<double, Kokkos::HostSpace> F("F", 3, 2);
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 2; ++k) F(i, k) = 0.5 * i - k;
  TempDir dir;
  io::write_factor(dir.file("F.CSV"), F, {10, 20, 30});
  EXPECT_EQ(slurp(dir.file("F.CSV")).rfind("id,f0,f1\n10,0,-1\n20,0.5,-0.5\n30,1,0\n", 0), 0u);
  io::write_factor(dir.file("F.mtx"), F, {10, 20, 30});
  const std::string text = slurp(dir.file("F.mtx"));
  EXPECT_NE(text.find("% row ids: 10 20 30\n"), std::string::npos) << text;
  io::ReadOptions keep;
  keep.keep_zeros = true;
  const auto B = io::read_matrix_market<double>(dir.file("F.mtx"), keep);
  ASSERT_EQ(B.nnz(), 6u);
  for (std::size_t e = 0; e < B.nnz(); ++e) EXPECT_EQ(B.values[e], F(B.rows[e], B.cols[e]));
}

TEST(Write, FailuresAreRuntimeFailures) {
  CooMatrix<double> A;
  A.num_rows = A.num_cols = 1;
  EXPECT_THROW(io::write_matrix_market("/nonexistent-dir/x/a.mtx", A), RuntimeFailure);
}

TEST(SafeWrite, EveryTargetKindEndsWithTheRightErrorAndNoDamage) {
  TempDir dir;
  const auto small = random_coo<double>(20, 20, 0.3, 3);
  const auto large = random_coo<double>(300, 300, 0.5, 4);  // about 1.5 MB of text
  DenseMatrix<double, Kokkos::HostSpace> F("F", 40, 3);
  test::check_write_targets(
      dir.path,
      [&](const std::string& path, const std::vector<std::string>& inputs) {
        io::OutputOptions out;
        out.inputs = inputs;
        io::write_matrix_market(path, small, "small", out);
      },
      [&](const std::string& path, const std::vector<std::string>& inputs) {
        io::OutputOptions out;
        out.inputs = inputs;
        io::write_matrix_market(path, large, "large", out);
      },
      [&](const std::string& path) { EXPECT_EQ(io::read_matrix_market<double>(path).values, small.values) << path; });
  // The factor writers take the same path.
  EXPECT_THROW(io::write_factor(dir.file("dir"), F, {}, {}, {}), UsageError);
  EXPECT_THROW(io::write_factor_csv(dir.file("dir"), F), UsageError);
}

TEST(SafeWrite, CheckWriteTargetComparesFilesNotNames) {
  TempDir dir;
  {
    std::ofstream(dir.file("a")) << "x";
  }
  EXPECT_NO_THROW(io::check_write_target(dir.file("new"), {dir.file("a")}));
  EXPECT_NO_THROW(io::check_write_target(dir.file("a"), {dir.file("missing")}));
  EXPECT_THROW(io::check_write_target(dir.file("a"), {dir.file("missing"), dir.file("a")}), UsageError);
  EXPECT_THROW(io::check_write_target("", {}), UsageError);
}

TEST(SafeWrite, OutputLockRefusesASecondProcess) {
  TempDir dir;
  const std::string path = dir.file("ckpt.h5");
  {
    io::OutputLock mine(path);
    io::OutputLock again(path);  // the same process shares its lock
    EXPECT_EQ(mine.lock_path(), path + ".lock");
    int ready[2], done[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(done), 0);
    const pid_t child = ::fork();
    if (child == 0) {
      // Only system calls in the child: try the lock the way another run would.
      const int fd = ::open((path + ".lock").c_str(), O_RDWR);
      const char r = (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0) ? 'y' : 'n';
      (void)!::write(ready[1], &r, 1);
      ::_exit(0);
    }
    char refused = 0;
    ASSERT_EQ(::read(ready[0], &refused, 1), 1);
    ::waitpid(child, nullptr, 0);
    EXPECT_EQ(refused, 'y');
    for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".lock"));  // removed with its last holder

  // Another process holds it: this one is refused, naming the path and the holder.
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
    const char r = (fd >= 0 && ::flock(fd, LOCK_EX) == 0) ? 'y' : 'n';
    const std::string pid = std::to_string(::getpid()) + "\n";
    (void)!::write(fd, pid.data(), pid.size());
    (void)!::write(ready[1], &r, 1);
    char c;
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char locked = 0;
  ASSERT_EQ(::read(ready[0], &locked, 1), 1);
  ASSERT_EQ(locked, 'y');
  try {
    io::OutputLock second(path);
    ADD_FAILURE() << "a second run got the lock";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + " is being written by another run (process " + std::to_string(child)), std::string::npos)
        << what;
  }
  (void)!::write(done[1], "x", 1);
  ::waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  // The holder is gone (its lock file stays, unlocked): the path is free again.
  EXPECT_NO_THROW(io::OutputLock{path});
}

TEST(SafeWrite, OutputSetsTieTheFilesOfOneRun) {
  TempDir dir;
  DenseMatrix<double, Kokkos::HostSpace> W("W", 5, 2), H("H", 4, 2);
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 2; ++k) W(i, k) = i + 0.25 * k;
  const io::OutputSet run({}, {"W", "H"});
  EXPECT_EQ(run.id().size(), 16u);
  io::write_factor(dir.file("W.mtx"), W, {}, "factor W", run["W"]);
  io::write_factor(dir.file("H.csv"), H, {}, {}, run["H"]);
  EXPECT_EQ(io::verify_output_set({dir.file("W.mtx"), dir.file("H.csv")}), run.id());
  const auto stamp = io::read_output_stamp(dir.file("H.csv"));
  EXPECT_EQ(stamp.set, run.id());
  EXPECT_EQ(stamp.member, "H");
  EXPECT_EQ(stamp.members, (std::vector<std::string>{"W", "H"}));
  // The stamp does not disturb the readers.
  io::ReadOptions keep;
  keep.keep_zeros = true;
  EXPECT_EQ(io::read_matrix_market<double>(dir.file("W.mtx"), keep).nnz(), 10u);
  EXPECT_EQ(slurp(dir.file("H.csv")).rfind("# kfactor-set " + run.id() + " H W,H\nid,f0,f1\n", 0), 0u);

  // H of another run, a missing member, an unstamped file.
  const io::OutputSet other({}, {"W", "H"});
  EXPECT_NE(other.id(), run.id());
  io::write_factor(dir.file("H2.mtx"), H, {}, {}, other["H"]);
  io::write_factor(dir.file("W2.mtx"), W, {}, {}, other["W"]);
  test::expect_input_error([&] { io::verify_output_set({dir.file("W.mtx"), dir.file("H2.mtx")}); }, dir.file("H2.mtx"),
                           0, "belongs to output set " + other.id());
  test::expect_input_error([&] { io::verify_output_set({dir.file("W.mtx")}); }, dir.file("W.mtx"), 0,
                           "misses its member 'H'");
  // Some members of one set: fine when that is what the reader expects.
  EXPECT_EQ(io::verify_output_set({dir.file("W.mtx")}, io::SetMembers::some), run.id());
  test::expect_input_error(
      [&] { io::verify_output_set({dir.file("W.mtx"), dir.file("H2.mtx")}, io::SetMembers::some); }, dir.file("H2.mtx"),
      0, "belongs to output set " + other.id());
  test::expect_input_error([&] { io::verify_output_set({dir.file("W.mtx"), dir.file("W.mtx")}, io::SetMembers::some); },
                           dir.file("W.mtx"), 0, "twice");
  io::write_factor(dir.file("plain.mtx"), H);
  test::expect_input_error([&] { io::verify_output_set({dir.file("W.mtx"), dir.file("plain.mtx")}); },
                           dir.file("plain.mtx"), 0, "no kfactor-set stamp");
  EXPECT_THROW((void)run["X"], UsageError);
  EXPECT_THROW(io::OutputSet({}, {"W", "W"}), UsageError);
}

// The members of a set are published together: none is in place until the
// last is written, and a set that fails or is abandoned before that leaves
// none of its new files, the old ones as they were, and no temporary.
TEST(SafeWrite, OutputSetMembersArePublishedTogether) {
  TempDir dir;
  DenseMatrix<double, Kokkos::HostSpace> W("W", 6, 3), H("H", 5, 3);
  const CounterRng rng(11, RngStream::user);
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 3; ++k) W(i, k) = rng.uniform(std::uint64_t(i * 3 + k));
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 3; ++k) H(i, k) = rng.uniform(std::uint64_t(100 + i * 3 + k));
  const std::string w = dir.file("run_W.mtx"), h = dir.file("run_H.csv");
  {
    const io::OutputSet set({}, {"W", "H"});
    io::write_factor(w, W, {}, {}, set["W"]);
    EXPECT_FALSE(std::filesystem::exists(w)) << "published before its set is complete";
    EXPECT_EQ(test::leftovers(dir.path).size(), 1u);  // W's finished temporary
    io::write_factor(h, H, {}, {}, set["H"]);
    EXPECT_TRUE(std::filesystem::exists(w));
    EXPECT_TRUE(std::filesystem::exists(h));
    EXPECT_TRUE(test::leftovers(dir.path).empty());
    EXPECT_EQ(io::verify_output_set({w, h}), set.id());
  }
  const auto before = test::snapshot(dir.path);
  {
    // Abandoned after W: the old W stays, the new one is removed.
    const io::OutputSet set({}, {"W", "H"});
    io::write_factor(w, H, {}, {}, set["W"]);
  }
  EXPECT_EQ(test::snapshot(dir.path), before);
  {
    // Two members aimed at one file (another spelling): refused before it is written.
    const io::OutputSet set({}, {"W", "H"});
    io::write_factor(w, W, {}, {}, set["W"]);
    EXPECT_THROW(io::write_factor((dir.path / "." / "run_W.mtx").string(), H, {}, {}, set["H"]), UsageError);
    EXPECT_THROW(io::write_factor(dir.file("other.mtx"), H, {}, {}, set["W"]), UsageError);  // W again
  }
  EXPECT_EQ(test::snapshot(dir.path), before);

  // A full disk while writing the last member: nothing of the new set.
  std::filesystem::create_directory(dir.file("full"));
  const std::string full = dir.file("full");
  test::ScopedTmpfs mount(full, "size=64k");
  const std::string fw = full + "/run_W.mtx", fh = full + "/run_H.mtx";
  {
    const io::OutputSet set({}, {"W", "H"});
    io::write_factor(fw, W, {}, {}, set["W"]);
    io::write_factor(fh, H, {}, {}, set["H"]);
  }
  const auto full_before = test::snapshot(full);
  DenseMatrix<double, Kokkos::HostSpace> big("big", 20000, 4);  // about 1.5 MB of text
  for (int i = 0; i < 20000; ++i)
    for (int k = 0; k < 4; ++k) big(i, k) = rng.uniform(std::uint64_t(1000 + i * 4 + k));
  {
    std::unique_ptr<test::FileSizeLimit> limit;
    if (!mount.ok()) {
      std::printf("[ note ] no tmpfs: full disk simulated with RLIMIT_FSIZE\n");
      limit = std::make_unique<test::FileSizeLimit>(64 * 1024);
    }
    const io::OutputSet set({}, {"W", "H"});
    io::write_factor(fw, W, {}, {}, set["W"]);
    test::expect_error<RuntimeFailure>([&] { io::write_factor(fh, big, {}, {}, set["H"]); }, fh, "full disk");
  }
  EXPECT_EQ(test::snapshot(full), full_before);
  EXPECT_TRUE(test::leftovers(full).empty());
}

// A set written by several processes (OutputSet::across_processes): every
// process's set has the id it was given; a member written waits, synced, as
// its temporary until publish(); one never published is removed with the
// set, leaving the old file; publish() on a set that publishes itself and a
// malformed id are usage errors.
TEST(SafeWrite, SetsAcrossProcessesWaitForPublish) {
  TempDir dir;
  DenseMatrix<double, Kokkos::HostSpace> F("F", 7, 2);
  const CounterRng rng(23, RngStream::user);
  for (int i = 0; i < 7; ++i)
    for (int k = 0; k < 2; ++k) F(i, k) = rng.uniform(std::uint64_t(i * 2 + k)) - 0.5;
  const std::string id = io::new_output_set_id();
  const std::vector<std::string> members{"P.rank0", "P.rank1", "P.rank2"};
  const std::string p0 = dir.file("p.rank0.mtx"), p2 = dir.file("p.rank2.mtx");
  {
    // Two of the three "processes", each with its own set object.
    auto first = io::OutputSet::across_processes(id, {}, members);
    auto third = io::OutputSet::across_processes(id, {}, members);
    EXPECT_EQ(first.id(), id);
    io::write_factor(p0, F, {}, "part 0", first["P.rank0"]);
    io::write_factor(p2, F, {}, "part 2", third["P.rank2"]);
    EXPECT_FALSE(std::filesystem::exists(p0)) << "published before publish()";
    EXPECT_FALSE(std::filesystem::exists(p2));
    EXPECT_EQ(test::leftovers(dir.path).size(), 2u);  // the finished temporaries
    first.publish();
    EXPECT_TRUE(std::filesystem::exists(p0));
    EXPECT_FALSE(std::filesystem::exists(p2));
    third.publish();
    third.publish();  // again: nothing more to do
    EXPECT_TRUE(test::leftovers(dir.path).empty());
  }
  EXPECT_EQ(io::verify_output_set({p0, p2}, io::SetMembers::some), id);
  test::expect_input_error([&] { io::verify_output_set({p0, p2}); }, p0, 0, "misses its member 'P.rank1'");
  const auto before = test::snapshot(dir.path);
  {
    // Written but never published (another process failed): the old file stays.
    auto set = io::OutputSet::across_processes(io::new_output_set_id(), {}, members);
    DenseMatrix<double, Kokkos::HostSpace> G("G", 3, 2);
    io::write_factor(p0, G, {}, {}, set["P.rank0"]);
  }
  EXPECT_EQ(test::snapshot(dir.path), before);
  io::OutputSet whole({}, {"W"});
  EXPECT_THROW(whole.publish(), UsageError);
  EXPECT_THROW((void)io::OutputSet::across_processes("", {}, members), UsageError);
  EXPECT_THROW((void)io::OutputSet::across_processes("a b", {}, members), UsageError);
  EXPECT_THROW((void)io::OutputSet::across_processes(id, {}, {"P.rank0", "P.rank0"}), UsageError);
}

// check_run_files: every target of a run against its inputs, the restart
// checkpoint and each other, before anything is written.
TEST(SafeWrite, CheckRunFilesRefusesInputsAndSharedTargets) {
  TempDir dir;
  for (const char* name : {"in.mtx", "test.csv", "ck.h5"}) std::ofstream(dir.file(name)) << name;
  std::filesystem::create_hard_link(dir.file("in.mtx"), dir.file("hard.mtx"));
  std::filesystem::create_symlink("in.mtx", dir.file("soft.mtx"));
  const auto before = test::snapshot(dir.path);
  const auto refused = [&](const io::RunFiles& f, const std::string& a, const std::string& b) {
    try {
      io::check_run_files(f);
      ADD_FAILURE() << "not refused: " << a << " / " << b;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(a), std::string::npos) << what;
      EXPECT_NE(what.find(b), std::string::npos) << what;
    }
  };
  const std::vector<std::string> inputs{dir.file("in.mtx"), dir.file("test.csv")};
  io::RunFiles ok;
  ok.inputs = inputs;
  ok.outputs = {dir.file("out_W.mtx"), dir.file("out_H.mtx")};
  ok.checkpoint = ok.restart = dir.file("ck.h5");  // a run continues its own checkpoint
  ok.appended = {dir.file("cache.txt")};
  EXPECT_NO_THROW(io::check_run_files(ok));

  for (const char* out : {"in.mtx", "hard.mtx", "soft.mtx", "test.csv"}) {
    SCOPED_TRACE(out);
    io::RunFiles f = ok;
    f.outputs[1] = dir.file(out);
    refused(f, dir.file(out), "is the input file");
    f = ok;
    f.checkpoint = dir.file(out);
    refused(f, dir.file(out), "is the input file");
    f = ok;
    f.appended = {dir.file(out)};
    refused(f, dir.file(out), "is the input file");
  }
  io::RunFiles f = ok;
  f.outputs[0] = dir.file("ck.h5");  // the restart checkpoint
  refused(f, dir.file("ck.h5"), "is the input file");
  f = ok;
  f.restart.clear();
  f.outputs[0] = dir.file("ck.h5");  // the checkpoint it is about to write
  refused(f, dir.file("ck.h5"), "written twice");
  f = ok;
  f.outputs[1] = (dir.path / "." / "out_W.mtx").string();  // not yet there, two spellings
  refused(f, (dir.path / "." / "out_W.mtx").string(), "written twice");
  f = ok;
  f.outputs[1] = dir.file("cache.txt");  // not there yet: the run would create it, then replace it
  refused(f, dir.file("cache.txt"), "written twice");
  std::ofstream(dir.file("cache.txt")) << "cache";
  refused(f, dir.file("cache.txt"), "is the input file");
  std::filesystem::remove(dir.file("cache.txt"));
  EXPECT_EQ(test::snapshot(dir.path), before);
}

}  // namespace
