// The communication engines of detail::Collectives under mpiexec (1..4
// ranks), on the default execution space: the device engine (NCCL on CUDA
// builds that have it and one GPU per rank; host memory otherwise) moves
// exactly what the host-staged path moves: all-gathers of unequal row blocks,
// all-reductions of integer-valued data (exact in any summation order) and
// ring shifts, compared value by value with what each rank computes itself;
// and a distributed NMF run ends with the same factors on either engine,
// reporting which one ran.
#include <kfactor/config.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/distributed/detail/collectives.hpp>
#include <kfactor/distributed/nmf.hpp>
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
using kfactor::test::world_rank;
using kfactor::test::world_size;
using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
using distributed::detail::Collectives;

/// Runs fn with KFACTOR_COMM_ENGINE set to `engine` (read when a
/// Collectives is made), restoring the variable afterwards.
template <class F>
void with_engine(const char* engine, F&& fn) {
  const char* old = std::getenv("KFACTOR_COMM_ENGINE");
  const std::string saved = old != nullptr ? old : "";
  setenv("KFACTOR_COMM_ENGINE", engine, 1);
  fn();
  if (old != nullptr)
    setenv("KFACTOR_COMM_ENGINE", saved.c_str(), 1);
  else
    unsetenv("KFACTOR_COMM_ENGINE");
}

/// Row p of the gathered matrix holds 1000 p + column: any misplaced or
/// missing value shows.
double cell(int row, int col) { return 1000.0 * row + col; }

template <class T>
void check_collectives(const char* engine) {
  const Exec exec;
  const int P = world_size(), me = world_rank();
  const int K = 3;
  // Unequal blocks: rank p owns p + 2 rows.
  std::vector<ordinal_t> bounds(P + 1, 0);
  for (int p = 0; p < P; ++p) bounds[p + 1] = bounds[p] + p + 2;
  with_engine(engine, [&] {
    Collectives coll(MPI_COMM_WORLD);
    DenseMatrix<T, Mem> local("local", bounds[me + 1] - bounds[me], K), full("full", bounds.back(), K);
    auto hl = Kokkos::create_mirror_view(local);
    for (std::size_t i = 0; i < hl.extent(0); ++i)
      for (int j = 0; j < K; ++j) hl(i, j) = T(cell(int(bounds[me] + i), j));
    Kokkos::deep_copy(local, hl);
    coll.allgather_rows(exec, local, full, bounds);
    const auto hf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, full);
    for (std::size_t i = 0; i < hf.extent(0); ++i)
      for (int j = 0; j < K; ++j) ASSERT_EQ(double(hf(i, j)), cell(int(i), j)) << engine << " all-gather row " << i;

    // All-reduce: rank p contributes p + 1 at every position.
    Kokkos::View<T*, Mem> v("v", 1000);
    Kokkos::deep_copy(v, T(me + 1));
    coll.allreduce_sum(exec, v);
    const auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
    for (std::size_t i = 0; i < hv.extent(0); ++i) ASSERT_EQ(double(hv(i)), P * (P + 1) / 2.0) << engine;

    // Ring shift: rank p sends its block to p + 1 and receives p - 1's.
    if (P > 1) {
      const int dest = (me + 1) % P, source = (me + P - 1) % P;
      DenseMatrix<T, Mem> recv("recv", bounds[source + 1] - bounds[source], K);
      coll.shift_rows(exec, local, dest, recv, source);
      const auto hr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, recv);
      for (std::size_t i = 0; i < hr.extent(0); ++i)
        for (int j = 0; j < K; ++j) ASSERT_EQ(double(hr(i, j)), cell(int(bounds[source] + i), j)) << engine << " shift";
    }
    const std::string name = coll.engine_name<Exec, Mem>();
    if (P == 1)
      EXPECT_EQ(name, "none");
    else if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible)
      EXPECT_EQ(name, "mpi");
    else if (std::string(engine) == "host")
      EXPECT_EQ(name, "host-staged");
    else
      EXPECT_NE(name, "mpi");
  });
}

TEST(CollectiveEngines, HostStagedPathIsExact) {
  check_collectives<double>("host");
  check_collectives<float>("host");
}

TEST(CollectiveEngines, AutomaticEngineIsExact) {
  check_collectives<double>("auto");
  check_collectives<float>("auto");
}

TEST(CollectiveEngines, UnknownEngineIsAUsageError) {
  with_engine("carrier-pigeon", [] { EXPECT_THROW(Collectives{MPI_COMM_WORLD}, UsageError); });
}

/// A planted 48 x 40 sparse problem: the same 10 HALS epochs over either
/// engine end with the same factors (the host and device engines may sum the
/// Gram all-reductions in different orders on more than two ranks).
TEST(CollectiveEngines, DistributedNmfAgreesAcrossEngines) {
  const Exec exec;
  CooMatrix<double> c;
  c.num_rows = 48;
  c.num_cols = 40;
  for (int i = 0; i < 48; ++i)
    for (int j = 0; j < 40; ++j)
      if ((i * 7 + j * 3) % 4 != 0) {
        c.rows.push_back(i);
        c.cols.push_back(j);
        c.values.push_back(1.0 + std::sin(0.3 * i) * std::cos(0.2 * j) + 0.01 * ((i * j) % 5));
      }
  const auto A = to_csr(exec, c);
  nmf::Options o;
  o.rank = 5;
  o.stop.max_iterations = 10;
  o.seed = 3;
  auto run = [&](const char* engine) {
    DenseMatrix<double, Mem> W;
    std::string name;
    with_engine(engine, [&] {
      const auto problem = distributed::nmf::make_problem(exec, MPI_COMM_WORLD, A);
      auto res = distributed::nmf::solve(exec, problem, o);
      W = distributed::nmf::gather_W(exec, res.state);
      name = res.report.info.at("comm_engine");
    });
    return std::make_pair(W, name);
  };
  const auto [W_host, host_name] = run("host");
  const auto [W_auto, auto_name] = run("auto");
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, W_host);
  const auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, W_auto);
  ASSERT_EQ(h.extent(0), 48u);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) {
      diff = std::max(diff, std::abs(h(i, j) - a(i, j)));
      scale = std::max(scale, std::abs(h(i, j)));
    }
  EXPECT_GT(scale, 0.0);
  // Two ranks: a sum of two partial sums is the same in any order.
  if (world_size() <= 2)
    EXPECT_EQ(diff, 0.0) << host_name << " vs " << auto_name;
  else
    EXPECT_LE(diff, 1e-10 * scale) << host_name << " vs " << auto_name;
  if (world_size() > 1 && !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible)
    EXPECT_EQ(host_name, "host-staged");
}

}  // namespace
