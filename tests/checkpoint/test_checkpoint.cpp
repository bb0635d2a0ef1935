// Checkpoints: exact restart of a toy solver, the recorded execution setup,
// every refusal, atomic writes, fingerprints, observers.
#include "checkpoint/toy_solver.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <common/test_spaces.hpp>

#include "checkpoint/write_targets.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace kfactor;
namespace fs = std::filesystem;
namespace toy = kfactor::test::toy;

/// A fresh directory per test, removed afterwards.
struct TempDir {
  fs::path dir;
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (auto& c : name)
      if (c == '/') c = '_';
    dir = fs::temp_directory_path() / ("kfactor_ckpt_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  [[nodiscard]] std::string operator/(const std::string& f) const { return (dir / f).string(); }
  [[nodiscard]] std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T, class Exec>
CheckpointMeta toy_meta(const Exec& exec, const DenseMatrix<T, typename Exec::memory_space>& A, const toy::Options& o) {
  auto m = checkpoint_meta<T, Exec>("toy", option_values(o), fingerprint(exec, A), o.rank);
  EXPECT_EQ(m.precision, sizeof(T) == 4 ? "float" : "double");
  EXPECT_EQ(m.backend, backend_name<Exec>());
  return m;
}

/// InputError whose message contains `needle`.
template <class F>
void expect_input_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no InputError (expected one mentioning '" << needle << "')";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// ---- exact restart, typed over spaces and precisions -------------------------------------

template <class P>
class CheckpointRestart : public ::testing::Test {};
TYPED_TEST_SUITE(CheckpointRestart, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

TYPED_TEST(CheckpointRestart, RestartIsBitwiseEqualToTheUninterruptedRun) {
  using Exec = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  TempDir tmp;
  Exec exec;
  const auto A = toy::planted<T>(exec, 70, 45, 5, 11);
  toy::Options o;
  o.max_iterations = 17;
  const auto meta = toy_meta<T>(exec, A, o);

  auto full = toy::init<T>(exec, A, o);
  toy::solve<T>(exec, A, o, full);
  ASSERT_EQ(full.iteration, 17);

  // Stop at t = 6 through an observer, save, restore into a fresh state, go on to 17.
  auto first = toy::init<T>(exec, A, o);
  toy::Options stop_early = o;
  stop_early.max_iterations = 6;
  toy::solve<T>(exec, A, stop_early, first);
  save_checkpoint(tmp / "ckpt.h5", first, meta);
  auto resumed = toy::init<T>(exec, A, o);
  EXPECT_FALSE(toy::bitwise_equal(resumed, first));
  const auto stored = load_checkpoint(tmp / "ckpt.h5", resumed, meta);
  EXPECT_EQ(stored.iteration, 6);
  EXPECT_EQ(stored.solver, "toy");
  EXPECT_EQ(stored.options, option_values(o));
  EXPECT_TRUE(toy::bitwise_equal(resumed, first));
  toy::solve<T>(exec, A, o, resumed);
  EXPECT_TRUE(toy::bitwise_equal(resumed, full));
  EXPECT_EQ(resumed.history.size(), 17u);
  EXPECT_EQ(tmp.files(), std::vector<std::string>{"ckpt.h5"});  // no temporaries left
}

TYPED_TEST(CheckpointRestart, ObserverSavesEveryNAndTheLastOneRestarts) {
  using Exec = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  TempDir tmp;
  Exec exec;
  const auto A = toy::planted<T>(exec, 40, 30, 4, 3);
  toy::Options o;
  o.max_iterations = 11;
  const auto meta = toy_meta<T>(exec, A, o);
  auto full = toy::init<T>(exec, A, o);
  toy::solve<T>(exec, A, o, full);

  auto run = toy::init<T>(exec, A, o);
  int seen = 0;
  Observer count = [&](const IterationEvent&) {
    ++seen;
    return ObserverAction::proceed;
  };
  toy::solve<T>(exec, A, o, run, chain(checkpoint_observer(tmp / "c.h5", 4, run, meta), count));
  EXPECT_EQ(seen, 11);
  auto resumed = toy::init<T>(exec, A, o);
  EXPECT_EQ(load_checkpoint(tmp / "c.h5", resumed, meta).iteration, 8);
  EXPECT_EQ(resumed.iteration, 8);
  EXPECT_EQ(resumed.history.size(), 8u);
  toy::solve<T>(exec, A, o, resumed);
  EXPECT_TRUE(toy::bitwise_equal(resumed, full));
}

// ---- every field kind ------------------------------------------------------------------

template <class Mem>
struct AllKinds {
  Kokkos::View<float*, Mem> f1;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> d2;
  Kokkos::View<double**, Kokkos::LayoutLeft, Mem> d2_left;
  Kokkos::View<int*, Mem> i1;
  Kokkos::View<std::int64_t**, Mem> l2;
  Kokkos::View<std::uint32_t*, Kokkos::LayoutLeft, Mem> u1;
  Kokkos::View<std::uint64_t**, Mem> ul2;
  Kokkos::View<std::int8_t*, Mem> b1;
  Kokkos::View<double**, Kokkos::LayoutRight, Mem> parent;  // a strided column block of it is a field
  int i = 0;
  double d = 0;
  std::uint64_t u = 0;
  std::int64_t l = 0;
  float f = 0;
  bool flag = false;

  template <class F>
  void visit(F&& fn) {
    fn("f1", f1);
    fn("d2", d2);
    fn("d2_left", d2_left);
    fn("i1", i1);
    fn("l2", l2);
    fn("u1", u1);
    fn("ul2", ul2);
    fn("b1", b1);
    fn(std::string("strided"), Kokkos::subview(parent, Kokkos::ALL, Kokkos::make_pair(1, 3)));
    fn("i", i);
    fn("d", d);
    fn("u", u);
    fn("l", l);
    fn("f", f);
    fn("flag", flag);
  }
};

template <class Exec>
AllKinds<typename Exec::memory_space> make_all_kinds(const Exec& exec, std::uint64_t seed) {
  AllKinds<typename Exec::memory_space> s;
  s.f1 = decltype(s.f1)("f1", 7);
  s.d2 = decltype(s.d2)("d2", 5, 3);
  s.d2_left = decltype(s.d2_left)("d2_left", 4, 6);
  s.i1 = decltype(s.i1)("i1", 9);
  s.l2 = decltype(s.l2)("l2", 2, 5);
  s.u1 = decltype(s.u1)("u1", 8);
  s.ul2 = decltype(s.ul2)("ul2", 3, 3);
  s.b1 = decltype(s.b1)("b1", 0);  // empty views round-trip too
  s.parent = decltype(s.parent)("parent", 6, 4);
  const CounterRng rng(seed, RngStream::user);
  auto f1 = s.f1;
  auto d2 = s.d2;
  auto d2l = s.d2_left;
  auto i1 = s.i1;
  auto l2 = s.l2;
  auto u1 = s.u1;
  auto ul2 = s.ul2;
  auto parent = s.parent;
  Kokkos::parallel_for(
      "all_kinds", Kokkos::RangePolicy<Exec>(exec, 0, 64), KOKKOS_LAMBDA(int e) {
        if (e < 7) f1(e) = rng.uniformf(e);
        if (e < 15) d2(e / 3, e % 3) = rng.uniform(100 + e) - 0.5;
        if (e < 24) d2l(e % 4, e / 4) = rng.uniform(200 + e);
        if (e < 9) i1(e) = static_cast<int>(rng.bits(300 + e));
        if (e < 10) l2(e / 5, e % 5) = static_cast<std::int64_t>(rng.bits(400 + e));
        if (e < 8) u1(e) = static_cast<std::uint32_t>(rng.bits(500 + e));
        if (e < 9) ul2(e / 3, e % 3) = rng.bits(600 + e);
        if (e < 24) parent(e / 4, e % 4) = rng.uniform(700 + e);
      });
  exec.fence();
  s.i = -17 + static_cast<int>(seed);
  s.d = 0.1 * static_cast<double>(seed);
  s.u = ~0ULL - seed;
  s.l = -static_cast<std::int64_t>(seed) * 1000000007LL;
  s.f = 1.5f * static_cast<float>(seed);
  s.flag = seed % 2 == 1;
  return s;
}

template <class Mem>
std::vector<std::vector<unsigned char>> contents(const AllKinds<Mem>& s) {
  using toy::bytes_of;
  auto strided = Kokkos::subview(s.parent, Kokkos::ALL, Kokkos::make_pair(1, 3));
  auto raw = [](const auto& x) {
    std::vector<unsigned char> v(sizeof(x));
    std::memcpy(v.data(), &x, sizeof(x));
    return v;
  };
  return {bytes_of(s.f1),     bytes_of(s.d2), bytes_of(s.d2_left),
          bytes_of(s.i1),     bytes_of(s.l2), bytes_of(s.u1),
          bytes_of(s.ul2),    bytes_of(s.b1), bytes_of(strided),
          bytes_of(s.parent), raw(s.i),       raw(s.d),
          raw(s.u),           raw(s.l),       raw(s.f),
          raw(s.flag)};
}

template <class Exec>
class CheckpointKinds : public ::testing::Test {};
TYPED_TEST_SUITE(CheckpointKinds, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(CheckpointKinds, EveryElementTypeLayoutAndScalarRoundTrips) {
  using Exec = TypeParam;
  TempDir tmp;
  Exec exec;
  auto a = make_all_kinds(exec, 5);
  auto b = make_all_kinds(exec, 8);
  ASSERT_NE(contents(a), contents(b));
  CheckpointMeta meta;
  meta.solver = "kinds";
  save_checkpoint(tmp / "k.h5", a, meta);
  load_checkpoint(tmp / "k.h5", b, meta);
  // The parent's columns outside the strided block keep b's values.
  auto ca = contents(a), cb = contents(b);
  for (std::size_t f = 0; f < ca.size(); ++f)
    if (f != 9) {
      EXPECT_EQ(ca[f], cb[f]) << "field " << f;
    }
  EXPECT_NE(ca[9], cb[9]);

  const auto info = inspect_checkpoint(tmp / "k.h5");
  ASSERT_EQ(info.fields.size(), 15u);
  EXPECT_EQ(info.fields[0].name, "f1");  // creation order is kept
  EXPECT_EQ(info.fields[1].rows, 5);
  EXPECT_EQ(info.fields[1].cols, 3);
  EXPECT_EQ(std::string(detail::to_string(info.fields[5].type)), "uint32");
  EXPECT_EQ(info.fields[8].cols, 2);
  EXPECT_EQ(info.fields[14].rank, 0);
}

TYPED_TEST(CheckpointKinds, UnallocatedViewsTakeTheStoredShapes) {
  using Exec = TypeParam;
  TempDir tmp;
  Exec exec;
  const auto A = toy::planted<double>(exec, 20, 10, 3, 1);
  toy::Options o;
  o.max_iterations = 3;
  auto s = toy::init<double>(exec, A, o);
  toy::solve<double>(exec, A, o, s);
  save_checkpoint(tmp / "s.h5", s, CheckpointMeta{});
  toy::State<double, typename Exec::memory_space> empty;
  load_checkpoint(tmp / "s.h5", empty, CheckpointMeta{});
  EXPECT_TRUE(toy::bitwise_equal(empty, s));
}

// ---- the execution setup ---------------------------------------------------------------

// A checkpoint records the execution space, its concurrency and the number of
// MPI ranks that wrote it. load_checkpoint names any difference from the
// loading run (setup_change) and loads all the same; in the same setup it
// names nothing and the restart is bit-exact. A file without the record (as
// kfactor wrote before it kept one) loads with no note.
TYPED_TEST(CheckpointKinds, TheExecutionSetupIsRecordedAndAChangeIsNamed) {
  using Exec = TypeParam;
  TempDir tmp;
  Exec exec;
  const auto A = toy::planted<double>(exec, 40, 30, 4, 21);
  toy::Options o;
  o.max_iterations = 9;
  const auto meta = toy_meta<double>(exec, A, o);
  const std::string space = Exec::name();
  const int threads = exec.concurrency();
  EXPECT_EQ(meta.execution_space, space);
  EXPECT_EQ(meta.concurrency, threads);
  ASSERT_GT(threads, 0);

  auto full = toy::init<double>(exec, A, o);
  toy::solve<double>(exec, A, o, full);
  toy::Options stop_early = o;
  stop_early.max_iterations = 4;
  auto first = toy::init<double>(exec, A, o);
  toy::solve<double>(exec, A, stop_early, first);
  save_checkpoint(tmp / "same.h5", first, meta);
  const auto info = inspect_checkpoint(tmp / "same.h5");
  EXPECT_EQ(info.meta.execution_space, space);
  EXPECT_EQ(info.meta.concurrency, threads);
  EXPECT_EQ(info.meta.mpi_ranks, 1);

  // The same setup: nothing to note, and the continuation is bit-exact.
  auto resumed = toy::init<double>(exec, A, o);
  const auto same = load_checkpoint(tmp / "same.h5", resumed, meta);
  EXPECT_EQ(same.setup_change, "");
  toy::solve<double>(exec, A, o, resumed);
  EXPECT_TRUE(toy::bitwise_equal(resumed, full));

  const std::string tail = ": the continuation is not guaranteed to be bit-identical to an uninterrupted run";
  // Another thread count: named, and the state loads all the same.
  auto more = meta;
  more.concurrency = threads + 3;
  save_checkpoint(tmp / "threads.h5", first, more);
  auto t = toy::init<double>(exec, A, o);
  EXPECT_EQ(load_checkpoint(tmp / "threads.h5", t, meta).setup_change,
            "checkpoint written with " + space + " x " + std::to_string(threads + 3) + " threads, resuming with " +
                space + " x " + std::to_string(threads) + tail);
  EXPECT_TRUE(toy::bitwise_equal(t, first));
  // Another execution space with the same concurrency.
  auto other = meta;
  other.execution_space = space == "Cuda" ? "OpenMP" : "Cuda";
  save_checkpoint(tmp / "space.h5", first, other);
  EXPECT_EQ(load_checkpoint(tmp / "space.h5", t, meta).setup_change,
            "checkpoint written with " + other.execution_space + " x " + std::to_string(threads) +
                " threads, resuming with " + space + " x " + std::to_string(threads) + tail);

  // No record in the file: it loads, with nothing to note.
  auto unrecorded = meta;
  unrecorded.execution_space.clear();
  unrecorded.concurrency = 0;
  save_checkpoint(tmp / "old.h5", first, unrecorded);
  const auto old_info = inspect_checkpoint(tmp / "old.h5");
  EXPECT_EQ(old_info.meta.execution_space, "");
  EXPECT_EQ(old_info.meta.concurrency, 0);
  auto u = toy::init<double>(exec, A, o);
  EXPECT_EQ(load_checkpoint(tmp / "old.h5", u, meta).setup_change, "");
  EXPECT_TRUE(toy::bitwise_equal(u, first));
  // Nor when the loading run does not say its setup.
  EXPECT_EQ(load_checkpoint(tmp / "threads.h5", u, unrecorded).setup_change, "");
}

// ---- refusals --------------------------------------------------------------------------

struct Fixture {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  Exec exec;
  toy::Options o;
  DenseMatrix<double, Mem> A;
  CheckpointMeta meta;
  toy::State<double, Mem> state;
  explicit Fixture(const TempDir& tmp, const std::string& file = "c.h5") {
    o.max_iterations = 4;
    A = toy::planted<double>(exec, 30, 20, 3, 2);
    meta = toy_meta<double>(exec, A, o);
    state = toy::init<double>(exec, A, o);
    toy::solve<double>(exec, A, o, state);
    save_checkpoint(tmp / file, state, meta);
  }
  [[nodiscard]] toy::State<double, Mem> fresh() const { return toy::init<double>(exec, A, o); }
};

TEST(CheckpointRefusal, MissingTruncatedAndForeignFiles) {
  TempDir tmp;
  Fixture fx(tmp);
  auto s = fx.fresh();
  expect_input_error([&] { load_checkpoint(tmp / "none.h5", s, fx.meta); }, "does not exist");
  const std::string bytes = read_bytes(tmp / "c.h5");
  for (std::size_t keep : {bytes.size() / 2, bytes.size() - 1, std::size_t(100), std::size_t(0)}) {
    write_bytes(tmp / "t.h5", bytes.substr(0, keep));
    expect_input_error([&] { load_checkpoint(tmp / "t.h5", s, fx.meta); }, "t.h5");
    EXPECT_THROW(inspect_checkpoint(tmp / "t.h5"), InputError) << keep;
  }
  write_bytes(tmp / "text.h5", "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2.0\n");
  expect_input_error([&] { load_checkpoint(tmp / "text.h5", s, fx.meta); }, "not a readable");
  expect_input_error([&] { load_checkpoint(tmp.dir.string(), s, fx.meta); }, "directory");
}

TEST(CheckpointRefusal, CorruptDataFailsItsChecksum) {
  TempDir tmp;
  Fixture fx(tmp);
  // Find W's raw bytes in the file and flip one bit in the middle of them.
  const auto w = toy::bytes_of(fx.state.W);
  std::string bytes = read_bytes(tmp / "c.h5");
  const auto at = bytes.find(std::string(w.begin(), w.begin() + 64));
  ASSERT_NE(at, std::string::npos);
  bytes[at + w.size() / 2] ^= 0x10;
  write_bytes(tmp / "bad.h5", bytes);
  auto s = fx.fresh();
  expect_input_error([&] { load_checkpoint(tmp / "bad.h5", s, fx.meta); }, "field 'W' fails its checksum");
  expect_input_error([&] { inspect_checkpoint(tmp / "bad.h5"); }, "checksum");
  EXPECT_NO_THROW(inspect_checkpoint(tmp / "bad.h5", false));
}

/// B with one entry changed by 1e-9 (a free function: CUDA lambdas cannot live in a test body).
template <class Exec, class View>
View nudged(const Exec& exec, View B) {
  Kokkos::parallel_for("nudge", Kokkos::RangePolicy<Exec>(exec, 0, 1), KOKKOS_LAMBDA(int) { B(7, 3) += 1e-9; });
  exec.fence();
  return B;
}

TEST(CheckpointRefusal, MetadataMismatches) {
  TempDir tmp;
  Fixture fx(tmp);
  auto s = fx.fresh();
  auto expect = [&](auto change, const std::string& needle) {
    CheckpointMeta m = fx.meta;
    change(m);
    expect_input_error([&] { load_checkpoint(tmp / "c.h5", s, m); }, needle);
  };
  expect([](CheckpointMeta& m) { m.solver = "als"; }, "written by solver 'toy', not 'als'");
  expect([](CheckpointMeta& m) { m.precision = "float"; }, "holds double factors; this run uses float");
  expect([](CheckpointMeta& m) { m.rank = 4; }, "rank K = 6; this run asks for K = 4");
  // Another matrix: one value changed.
  const auto fb = fingerprint(fx.exec, nudged(fx.exec, toy::planted<double>(fx.exec, 30, 20, 3, 2)));
  EXPECT_EQ(fb.rows, fx.meta.input.rows);
  EXPECT_NE(fb.checksum, fx.meta.input.checksum);
  expect([&](CheckpointMeta& m) { m.input = fb; }, "another input matrix");
  expect([](CheckpointMeta& m) { m.format_version = 2; }, "format version 1, expected 2");
  // A file of another format version.
  CheckpointMeta future = fx.meta;
  future.format_version = 2;
  save_checkpoint(tmp / "v2.h5", fx.state, future);
  expect_input_error([&] { load_checkpoint(tmp / "v2.h5", s, fx.meta); },
                     "format version 2 is not supported (this build reads version 1)");
  // The refusals came before anything was copied.
  EXPECT_TRUE(toy::bitwise_equal(s, fx.fresh()));
  // Unchecked items (empty expected) pass.
  EXPECT_NO_THROW(load_checkpoint(tmp / "c.h5", s, CheckpointMeta{}));
}

/// UsageError whose message contains every one of `needles`.
template <class F>
void expect_usage_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(CheckpointOptions, AChangedOptionIsRefusedByName) {
  TempDir tmp;
  Fixture fx(tmp);
  EXPECT_EQ(fx.meta.options, (std::map<std::string, std::string>{{"jitter", "0.01"}, {"rank", "6"}, {"seed", "7"}}));
  auto s = fx.fresh();
  toy::Options jitter = fx.o;
  jitter.jitter = 0.02;
  auto m = fx.meta;
  m.options = option_values(jitter);
  expect_usage_error([&] { load_checkpoint(tmp / "c.h5", s, m); }, {"jitter = 0.01", "this run has jitter = 0.02"});
  toy::Options seed = fx.o;
  seed.seed = 8;
  m.options = option_values(seed);
  expect_usage_error([&] { load_checkpoint(tmp / "c.h5", s, m); }, {"seed = 7", "seed = 8"});
  // An option the file does not record (another version of the solver).
  m = fx.meta;
  m.options["momentum"] = "0.9";
  expect_usage_error([&] { load_checkpoint(tmp / "c.h5", s, m); }, {"does not record option 'momentum'"});
  EXPECT_TRUE(toy::bitwise_equal(s, fx.fresh()));  // refused before anything was copied
}

TEST(CheckpointOptions, AnUnchangedOptionSetLoadsBitExactlyAndTheStopRuleMayGrow) {
  TempDir tmp;
  Fixture fx(tmp);
  toy::Options longer = fx.o;
  longer.max_iterations = 9;  // not an option that decides the iterates
  auto m = fx.meta;
  m.options = option_values(longer);
  EXPECT_EQ(m.options, fx.meta.options);
  auto s = fx.fresh();
  const auto stored = load_checkpoint(tmp / "c.h5", s, m);
  EXPECT_EQ(stored.options, fx.meta.options);
  EXPECT_TRUE(toy::bitwise_equal(s, fx.state));
  // The resumed run equals the uninterrupted one.
  toy::solve<double>(fx.exec, fx.A, longer, s);
  auto full = toy::init<double>(fx.exec, fx.A, longer);
  toy::solve<double>(fx.exec, fx.A, longer, full);
  EXPECT_TRUE(toy::bitwise_equal(s, full));
}

template <class Mem>
struct WithExtra : toy::State<double, Mem> {
  Kokkos::View<double*, Mem> extra{"extra", 3};
  template <class F>
  void visit(F&& f) {
    toy::State<double, Mem>::visit(f);
    f("extra", extra);
  }
};

TEST(CheckpointRefusal, MissingFieldsAndWrongShapesOrTypes) {
  TempDir tmp;
  Fixture fx(tmp);
  using Mem = Fixture::Mem;
  WithExtra<Mem> extra;
  static_cast<toy::State<double, Mem>&>(extra) = fx.fresh();
  expect_input_error([&] { load_checkpoint(tmp / "c.h5", extra, fx.meta); },
                     "field 'extra' is missing from the checkpoint (it has: W, Ht, momentum");
  // Another shape: a state for a 31 x 20 matrix.
  toy::Options o = fx.o;
  auto A31 = toy::planted<double>(fx.exec, 31, 20, 3, 2);
  auto s31 = toy::init<double>(fx.exec, A31, o);
  expect_input_error([&] { load_checkpoint(tmp / "c.h5", s31, CheckpointMeta{}); },
                     "field 'W' is stored as 30 x 6 but the state holds 31 x 6");
  // Another element type (precision left unchecked).
  auto Af = toy::planted<float>(fx.exec, 30, 20, 3, 2);
  auto sf = toy::init<float>(fx.exec, Af, o);
  expect_input_error([&] { load_checkpoint(tmp / "c.h5", sf, CheckpointMeta{}); },
                     "field 'W' is stored as float64 but the state holds float32");
}

// ---- failing writes keep the previous checkpoint --------------------------------------

template <class Mem>
struct Poisoned : toy::State<double, Mem> {
  int mode = 0;  // 1: throw midway, 2: repeat a name, 3: bad name
  template <class F>
  void visit(F&& f) {
    f("W", this->W);
    if (mode == 1) throw std::runtime_error("disk full (simulated)");
    if (mode == 2) f("W", this->Ht);
    if (mode == 3) f("a/b", this->Ht);
  }
};

TEST(CheckpointAtomicity, AFailingWriteLeavesThePreviousCheckpoint) {
  TempDir tmp;
  Fixture fx(tmp);
  const std::string before = read_bytes(tmp / "c.h5");
  Poisoned<Fixture::Mem> p;
  static_cast<toy::State<double, Fixture::Mem>&>(p) = fx.state;
  p.mode = 1;
  EXPECT_THROW(save_checkpoint(tmp / "c.h5", p, fx.meta), std::runtime_error);
  p.mode = 2;
  EXPECT_THROW(save_checkpoint(tmp / "c.h5", p, fx.meta), UsageError);
  p.mode = 3;
  EXPECT_THROW(save_checkpoint(tmp / "c.h5", p, fx.meta), UsageError);
  EXPECT_EQ(read_bytes(tmp / "c.h5"), before);
  EXPECT_EQ(tmp.files(), std::vector<std::string>{"c.h5"});
  auto s = fx.fresh();
  load_checkpoint(tmp / "c.h5", s, fx.meta);
  EXPECT_TRUE(toy::bitwise_equal(s, fx.state));
  // Unwritable targets: a missing directory, and a directory in the way of the rename.
  EXPECT_THROW(save_checkpoint(tmp / "missing/c.h5", fx.state, fx.meta), RuntimeFailure);
  fs::create_directories(tmp.dir / "d.h5" / "x");
  EXPECT_THROW(save_checkpoint(tmp / "d.h5", fx.state, fx.meta), UsageError);
  EXPECT_EQ(tmp.files(), (std::vector<std::string>{"c.h5", "d.h5"}));
}

/// One field of `n` doubles: small or large checkpoints on demand.
struct Blob {
  Kokkos::View<double*, Kokkos::HostSpace> v;  // unallocated: takes the stored shape on load
  Blob() = default;
  explicit Blob(std::size_t n) : v("blob", n) {
    for (std::size_t i = 0; i < n; ++i) v(i) = 0.5 * static_cast<double>(i) - 3.0;
  }
  template <class F>
  void visit(F&& f) {
    f("v", v);
  }
};

TEST(CheckpointTargets, EveryTargetKindEndsWithTheRightErrorAndNoDamage) {
  TempDir tmp;
  Blob small(100), large(100000);  // 800 B and 800 kB of data
  CheckpointMeta meta;
  meta.solver = "blob";
  auto save = [&](Blob& b) {
    return [&](const std::string& path, const std::vector<std::string>& inputs) {
      CheckpointMeta m = meta;
      m.input_files = inputs;
      save_checkpoint(path, b, m);
    };
  };
  test::check_write_targets(tmp.dir, save(small), save(large), [&](const std::string& path) {
    Blob back;
    load_checkpoint(path, back, meta);
    ASSERT_EQ(back.v.extent(0), 100u) << path;
    for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(back.v(i), small.v(i)) << path;
  });
}

TEST(CheckpointTargets, TheSameStateWritesTheSameBytes) {
  TempDir tmp;
  Fixture fx(tmp);
  ASSERT_GT(fx.state.history.size(), 0u);  // the /history group is covered too
  test::expect_same_bytes_a_second_apart(tmp.dir,
                                         [&](const std::string& path) { save_checkpoint(path, fx.state, fx.meta); });
}

TEST(CheckpointTargets, ASecondRunOnTheSameCheckpointIsRefused) {
  TempDir tmp;
  Fixture fx(tmp);
  const std::string path = tmp / "c.h5";
  const std::string before = read_bytes(path);
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // The other run: holds the checkpoint's lock as its observer would (system calls only).
    const int fd = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
    const char r = (fd >= 0 && ::flock(fd, LOCK_EX) == 0) ? 'y' : 'n';
    (void)!::write(ready[1], &r, 1);
    char c;
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char locked = 0;
  ASSERT_EQ(::read(ready[0], &locked, 1), 1);
  ASSERT_EQ(locked, 'y');
  auto run = fx.fresh();
  try {
    save_checkpoint(path, fx.state, fx.meta);
    ADD_FAILURE() << "a save under another run's lock went through";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path + " is being written by another run"), std::string::npos) << e.what();
  }
  // The observer refuses at once, before the run starts.
  EXPECT_THROW(checkpoint_observer(path, 1, run, fx.meta), UsageError);
  (void)!::write(done[1], "x", 1);
  ::waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  EXPECT_EQ(read_bytes(path), before);
  // The other run has ended: this one takes the path, for as long as its observer lives.
  {
    auto observer = checkpoint_observer(path, 2, run, fx.meta);
    toy::solve<double>(fx.exec, fx.A, fx.o, run, observer);
    EXPECT_TRUE(fs::exists(path + ".lock"));
    auto again = fx.fresh();
    EXPECT_EQ(load_checkpoint(path, again, fx.meta).iteration, 4);
  }
  EXPECT_FALSE(fs::exists(path + ".lock"));
}

TEST(CheckpointSeal, RangesThatAreNotTheDatasetsRawDataAreRefused) {
  TempDir tmp;
  Fixture fx(tmp);
  const std::string bytes = read_bytes(tmp / "c.h5");
  // The seal lists (offset, length) pairs after its 48-byte header. Widen
  // the first one by 8 bytes of metadata and recompute the hash, as a
  // damaged or forged file could: the hash then matches, so only the
  // reader's own list of the datasets' raw data can refuse the file.
  auto u64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    return v;
  };
  ASSERT_GE(u64(40), 1u);
  const std::uint64_t offset = u64(48), length = u64(56);
  ASSERT_GT(length, 16u);
  std::string forged = bytes;
  auto put = [&](std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) forged[at + i] = static_cast<char>(v >> (8 * i));
  };
  put(48, offset - 8);
  put(56, length + 8);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::uint64_t r = 0; r < u64(40); ++r) {
    const std::uint64_t o = r == 0 ? offset - 8 : u64(48 + 16 * r), l = r == 0 ? length + 8 : u64(56 + 16 * r);
    ranges.emplace_back(o, l);
  }
  const std::uint64_t size = forged.size();
  std::uint64_t h = CounterRng::mix(size - 4096);
  std::uint64_t at = 4096;
  auto span = [&](std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t i = from; i < to; ++i)
      h = CounterRng::mix(h ^ (std::uint64_t(static_cast<unsigned char>(forged[i])) | (i << 8)));
  };
  for (const auto& [o, l] : ranges) {
    span(at, o);
    at = o + l;
  }
  span(at, size);
  put(32, h);
  write_bytes(tmp / "forged.h5", forged);
  auto s = fx.fresh();
  expect_input_error([&] { load_checkpoint(tmp / "forged.h5", s, fx.meta); }, "the ranges its seal leaves out");
  EXPECT_THROW(inspect_checkpoint(tmp / "forged.h5"), InputError);
}

// ---- fingerprints -----------------------------------------------------------------------

template <class Exec>
class CheckpointFingerprint : public ::testing::Test {};
TYPED_TEST_SUITE(CheckpointFingerprint, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(CheckpointFingerprint, SparseAndDenseAgreeAndEveryChangeShows) {
  using Exec = TypeParam;
  Exec exec;
  CooMatrix<double> coo;
  coo.num_rows = 50;
  coo.num_cols = 40;
  const CounterRng rng(9, RngStream::user);
  for (int e = 0; e < 300; ++e) {
    const int i = static_cast<int>(rng.bits(3 * e) % 50), j = static_cast<int>(rng.bits(3 * e + 1) % 40);
    bool dup = false;
    for (std::size_t q = 0; q < coo.rows.size(); ++q) dup = dup || (coo.rows[q] == i && coo.cols[q] == j);
    if (dup) continue;
    coo.rows.push_back(i);
    coo.cols.push_back(j);
    coo.values.push_back(0.5 + rng.uniform(3 * e + 2));
  }
  const auto A = to_csr(exec, coo);
  const auto f = fingerprint(exec, A);
  EXPECT_EQ(f.rows, 50);
  EXPECT_EQ(f.cols, 40);
  EXPECT_EQ(f.nnz, static_cast<std::int64_t>(coo.nnz()));
  EXPECT_EQ(fingerprint(exec, to_dense(exec, A)), f);
  EXPECT_EQ(fingerprint(copy_to<Kokkos::HostSpace>(A)), f);  // host default space
  EXPECT_EQ(fingerprint(exec, A), f);                        // stable

  auto changed = coo;
  changed.values[17] = std::nextafter(changed.values[17], 2.0);
  EXPECT_NE(fingerprint(exec, to_csr(exec, changed)).checksum, f.checksum);
  auto moved = coo;  // same values, one entry in another column
  moved.cols[5] = (moved.cols[5] + 1) % 40;
  bool clash = false;
  for (std::size_t q = 0; q < moved.rows.size(); ++q)
    clash = clash || (q != 5 && moved.rows[q] == moved.rows[5] && moved.cols[q] == moved.cols[5]);
  if (!clash) {
    EXPECT_NE(fingerprint(exec, to_csr(exec, moved)).checksum, f.checksum);
  }
  auto wider = coo;
  wider.num_cols = 41;
  EXPECT_NE(fingerprint(exec, to_csr(exec, wider)), f);
}

TEST(CheckpointObservers, ChainCallsBothAndStopsWhenEitherAsks) {
  int a = 0, b = 0;
  Observer oa = [&](const IterationEvent&) {
    ++a;
    return ObserverAction::proceed;
  };
  Observer ob = [&](const IterationEvent& e) {
    ++b;
    return e.iteration >= 2 ? ObserverAction::stop : ObserverAction::proceed;
  };
  auto c = chain(oa, ob);
  EXPECT_EQ(c(IterationEvent{1, 0.0, nullptr}), ObserverAction::proceed);
  EXPECT_EQ(c(IterationEvent{2, 0.0, nullptr}), ObserverAction::stop);
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
  EXPECT_FALSE(chain(nullptr, nullptr));
  EXPECT_EQ(chain(nullptr, oa)(IterationEvent{3, 0.0, nullptr}), ObserverAction::proceed);
  EXPECT_EQ(a, 3);
  toy::State<double, Kokkos::HostSpace> s;
  EXPECT_THROW(checkpoint_observer("x.h5", 0, s, CheckpointMeta{}), UsageError);
}

}  // namespace

namespace {

TEST(CheckpointChecksum, BlocksAddUpToTheWholeWhateverTheSplit) {
  // Large enough that the whole is summed in parallel and the halves serially.
  std::vector<double> v(100003);
  const CounterRng rng(5, RngStream::user);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = rng.uniform(i);
  const auto n = static_cast<std::int64_t>(v.size());
  const auto whole = detail::block_checksum(v.data(), detail::CheckpointType::f64, 0, n);
  const std::int64_t cut = 40000;
  EXPECT_EQ(detail::block_checksum(v.data(), detail::CheckpointType::f64, 0, cut) +
                detail::block_checksum(v.data() + cut, detail::CheckpointType::f64, cut, n - cut),
            whole);
  v[77777] = std::nextafter(v[77777], 1.0);
  EXPECT_NE(detail::block_checksum(v.data(), detail::CheckpointType::f64, 0, n), whole);
  std::swap(v[1], v[2]);  // position matters, not only the multiset of values
  v[77777] = std::nextafter(v[77777], 0.0);
  EXPECT_NE(detail::block_checksum(v.data(), detail::CheckpointType::f64, 0, n), whole);
}

}  // namespace
