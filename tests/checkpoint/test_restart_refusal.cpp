// NMF and ALS restarts with a changed option that decides the iterates are
// refused naming the option and both values, another rank K naming both
// ranks (BMF and MNMF run the same check in their own solver tests); the
// unchanged options restart bit for bit.
#include "common/restart_refusal.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/nmf/nmf.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace kfactor;
using Exec = Kokkos::DefaultHostExecutionSpace;
using T = double;

/// A random m x n sparse matrix with about `density` of its entries in
/// (0.5, 5.5], every row and column holding at least one.
CooMatrix<T> random_coo(std::int64_t m, std::int64_t n, double density, std::uint64_t seed) {
  CooMatrix<T> c;
  c.num_rows = m;
  c.num_cols = n;
  std::uint64_t x = seed;
  auto next = [&] {
    return double((x = x * 6364136223846793005ULL + 1442695040888963407ULL) >> 11) / double(1ULL << 53);
  };
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      if (i == j % m || j == i % n || next() < density) {
        c.rows.push_back(ordinal_t(i));
        c.cols.push_back(ordinal_t(j));
        c.values.push_back(0.5 + 5 * next());
      }
  return c;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/kfactor_refusal_" + name + "_" + std::to_string(::getpid()) + ".h5";
}

template <class View>
std::vector<T> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return std::vector<T>(h.data(), h.data() + h.size());
}

/// A restart with another rank K is refused before any option is compared:
/// the stored factors have another shape (InputError naming both ranks).
template <class State>
void expect_rank_refused(const std::string& path, State& state, const CheckpointMeta& other_rank) {
  try {
    load_checkpoint(path, state, other_rank);
    ADD_FAILURE() << "restart with another rank accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rank K = 4"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("K = 5"), std::string::npos) << e.what();
  }
}

TEST(RestartRefusal, NmfRefusesEveryChangedOptionByName) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  const Exec exec;
  const auto problem = nmf::make_problem(exec, to_csr(exec, random_coo(30, 24, 0.3, 5)));
  for (const auto algorithm : {nmf::Algorithm::hals, nmf::Algorithm::alo, nmf::Algorithm::mu}) {
    SCOPED_TRACE(nmf::to_string(algorithm));
    nmf::Options o;
    o.algorithm = algorithm;
    o.rank = 4;
    o.stop.max_iterations = 3;
    auto meta_of = [&](const nmf::Options& x) {
      return checkpoint_meta<T, Exec>("nmf", option_values(x), fingerprint(exec, problem.A), x.rank);
    };
    const std::string path = temp_path("nmf");
    auto first = nmf::solve(exec, problem, o);
    save_checkpoint(path, first.state, meta_of(o));
    std::vector<test::OptionChange<nmf::Options>> changes = {
        {"algorithm",
         [&](nmf::Options& x) {
           x.algorithm = algorithm == nmf::Algorithm::hals ? nmf::Algorithm::mu : nmf::Algorithm::hals;
         }},
        {"epsilon", [](nmf::Options& x) { x.epsilon = 1e-9; }},
        {"seed", [](nmf::Options& x) { x.seed += 1; }},
    };
    if (algorithm == nmf::Algorithm::alo) changes.push_back({"tile", [](nmf::Options& x) { x.tile = 1; }});
    auto state = first.state;
    test::expect_restart_refused(path, state, o, meta_of, changes);
    auto rank5 = o;
    rank5.rank = 5;
    expect_rank_refused(path, state, meta_of(rank5));

    // The same options with a longer stop rule continue as one straight run.
    auto longer = o;
    longer.stop.max_iterations = 6;
    auto restored = nmf::solve(exec, problem, o).state;
    ASSERT_NO_THROW(load_checkpoint(path, restored, meta_of(longer)));
    EXPECT_EQ(nmf::resume(exec, problem, longer, restored).iterations, 6);
    const auto straight = nmf::solve(exec, problem, longer);
    EXPECT_EQ(host_values(restored.W), host_values(straight.state.W));
    EXPECT_EQ(host_values(restored.Ht), host_values(straight.state.Ht));
    std::remove(path.c_str());
  }
#endif
}

TEST(RestartRefusal, AlsRefusesEveryChangedOptionByName) {
#if !defined(KFACTOR_HAVE_HDF5)
  GTEST_SKIP() << "built without HDF5";
#else
  const Exec exec;
  const auto problem = als::make_problem(exec, random_coo(40, 30, 0.25, 9), 0.0, 1);
  als::Options o;
  o.rank = 4;
  o.layout = als::Layout::csr;
  o.stop.max_iterations = 3;
  auto meta_of = [&](const als::Options& x) {
    return checkpoint_meta<T, Exec>("als", option_values(x), fingerprint(exec, problem.train), x.rank);
  };
  const std::string path = temp_path("als");
  auto first = als::solve(exec, problem, o);
  save_checkpoint(path, first.state, meta_of(o));
  const std::vector<test::OptionChange<als::Options>> changes = {
      {"lambda", [](als::Options& x) { x.lambda *= 2; }},
      {"weighting", [](als::Options& x) { x.weighting = als::LambdaWeighting::plain; }},
      {"layout", [](als::Options& x) { x.layout = als::Layout::bals; }},
      {"reorder", [](als::Options& x) { x.reorder = !x.reorder; }},
      {"seed", [](als::Options& x) { x.seed += 1; }},
  };
  auto state = first.state;
  test::expect_restart_refused(path, state, o, meta_of, changes);
  auto rank5 = o;
  rank5.rank = 5;
  expect_rank_refused(path, state, meta_of(rank5));

  auto longer = o;
  longer.stop.max_iterations = 6;
  auto restored = als::solve(exec, problem, o).state;
  ASSERT_NO_THROW(load_checkpoint(path, restored, meta_of(longer)));
  EXPECT_EQ(als::resume(exec, problem, longer, restored).iterations, 6);
  const auto straight = als::solve(exec, problem, longer);
  EXPECT_EQ(host_values(restored.X), host_values(straight.state.X));
  EXPECT_EQ(host_values(restored.Y), host_values(straight.state.Y));
  std::remove(path.c_str());
#endif
}

}  // namespace
