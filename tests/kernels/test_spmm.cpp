#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/kernels/spmm.hpp>

#include "common/test_spaces.hpp"

#include <cmath>
#include <vector>

namespace {
using namespace kfactor;

template <class P>
class SpmmTest : public ::testing::Test {};
TYPED_TEST_SUITE(SpmmTest, kfactor::test::SpacesAndScalars, kfactor::test::SpaceNames);

// Random CSR (empty rows included) times dense, every path against a float64
// host reference, for several widths k (on a host: every register chunk of
// spmm_host_row_chunks, 300 = 256 + 32 + 8 + 4 floats or 2 x 128 + 32 + 8 + 4
// doubles, and single columns), with alpha and beta. Rows 0 and 1 are
// heavy (more than detail::heavy_row_nnz nonzeros: a team each on a device),
// row 2 sits exactly at the limit; rows 0 and 3 are heavy without a plan too
// (more than detail::heavy_row_nnz_unplanned).
TYPED_TEST(SpmmTest, MatchesFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  const Space exec;
  const int m = 53, n = 1500;
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-13;
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(7, RngStream::user);
  const int limit = detail::heavy_row_nnz, unplanned = detail::heavy_row_nnz_unplanned;
  for (int i = 0; i < m; ++i) {
    if (i % 9 == 4) continue;  // empty rows
    for (int j = 0; j < n; ++j)
      if ((i == 0) || (i == 1 && j <= limit) || (i == 2 && j < limit) || (i == 3 && j <= unplanned) ||
          (i > 3 && rng.uniform(std::uint64_t(i) * n + j) < 0.05)) {
        coo.rows.push_back(i);
        coo.cols.push_back(j);
        coo.values.push_back(T(rng.uniform(1000000 + std::uint64_t(i) * n + j) * 2 - 1));
      }
  }
  auto A = to_csr(exec, coo);
  auto hA = copy_to<Kokkos::HostSpace>(A);
  for (int k : {1, 7, 33, 64, 300}) {
    DenseMatrix<T, Mem> B("B", n, k), C0("C0", m, k);
    fill_uniform(exec, B, 11 + k, RngStream::user, T(-1), T(1));
    fill_uniform(exec, C0, 12 + k, RngStream::user, T(-1), T(1));
    auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
    auto hC0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C0);
    const SpmmPlan<T, Mem> plan(exec, A, k);
    for (auto [alpha, beta] : {std::pair<T, T>{T(1), T(0)}, {T(-0.75), T(1)}, {T(2), T(-0.5)}}) {
      auto check = [&](auto&& run, const char* path) {
        DenseMatrix<T, Mem> C("C", m, k);
        Kokkos::deep_copy(C, C0);
        run(C);
        auto hC = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C);
        for (int i = 0; i < m; ++i)
          for (int c = 0; c < k; ++c) {
            double s = 0, sa = 0;
            for (auto e = hA.row_map(i); e < hA.row_map(i + 1); ++e) {
              s += double(hA.values(e)) * double(hB(hA.entries(e), c));
              sa += std::abs(double(hA.values(e)) * double(hB(hA.entries(e), c)));
            }
            const double ref = double(alpha) * s + double(beta) * double(hC0(i, c));
            ASSERT_NEAR(double(hC(i, c)), ref, tol * (1 + sa + std::abs(ref)))
                << path << " k=" << k << " i=" << i << " c=" << c;
          }
      };
      check([&](auto& C) { spmm(exec, alpha, A, B, beta, C); }, "dispatch");
      check([&](auto& C) { spmm(exec, plan, alpha, A, B, beta, C); }, "plan");
      check([&](auto& C) { detail::spmm_portable(exec, alpha, A, B, beta, C); }, "portable");
      // Column-major operands take the Kokkos Kernels path where it exists.
      Kokkos::View<T**, Kokkos::LayoutLeft, Mem> BL("BL", n, k), CL("CL", m, k);
      Kokkos::deep_copy(BL, B);
      check(
          [&](auto& C) {
            Kokkos::deep_copy(CL, C);
            spmm(exec, alpha, A, BL, beta, CL);
            Kokkos::deep_copy(C, CL);
          },
          "dispatch-column-major");
    }
  }
}

// The device kernel on its own (a host runs it here, with two threads a
// team): rows cut into several chunks (one exactly three chunks less a few),
// one chunk to the nonzero and one past it, the first heavy length, the limit
// and an empty row, against a float64 reference, split at the planned limit
// and at the limit of products without a plan (a chunk: rows of one chunk
// stay a thread's). A plan's chunks, scratch and counts give the same bits
// as the split at its limit, and again on a second product: the team that
// finishes a row's chunks leaves its count at zero.
TYPED_TEST(SpmmTest, HeavyRowChunksMatchFloat64Reference) {
  using Space = typename TypeParam::space;
  using T = typename TypeParam::scalar;
  using Mem = typename Space::memory_space;
  using Shape = detail::RowTeamShape<Space>;
  const Space exec;
  const int chunk = detail::heavy_chunk_nnz, limit = detail::heavy_row_nnz;
  const std::vector<int> lengths = {3 * chunk - 7, chunk, chunk + 1, limit + 1, limit, 0, 2 * chunk + 100};
  const int m = int(lengths.size()), n = 3 * chunk;
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-13;
  CooMatrix<T> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(19, RngStream::user);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < lengths[i]; ++j) {
      coo.rows.push_back(i);
      coo.cols.push_back((j * 7 + i) % n);  // 7 and n coprime: distinct columns
      coo.values.push_back(T(rng.uniform(std::uint64_t(i) * n + j) * 2 - 1));
    }
  auto A = to_csr(exec, coo);
  auto hA = copy_to<Kokkos::HostSpace>(A);
  for (int k : {1, 33, 64}) {
    const int vlen = Shape::vector_length(k);
    const int threads = Shape::host ? 2 : detail::spmm_team_threads(vlen);
    DenseMatrix<T, Mem> B("B", n, k), C0("C0", m, k), C("C", m, k);
    fill_uniform(exec, B, 21 + k, RngStream::user, T(-1), T(1));
    fill_uniform(exec, C0, 22 + k, RngStream::user, T(-1), T(1));
    Kokkos::deep_copy(C, C0);
    auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
    auto hC0 = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C0);
    const T alpha = T(-0.75), beta = T(0.5);
    const SpmmPlan<T, Mem> plan(exec, A, k);
    std::vector<decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C))> split, planned;
    for (int min_nnz : {limit, detail::heavy_row_nnz_unplanned}) {
      Kokkos::deep_copy(C, C0);
      detail::spmm_team_rows(exec, alpha, A, B, beta, C, threads, vlen,
                             detail::heavy_row_work<T>(exec, A, std::size_t(k), min_nnz));
      split.push_back(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C));
    }
    for (int run = 0; run < 2; ++run) {
      Kokkos::deep_copy(C, C0);
      detail::spmm_team_rows(exec, alpha, A, B, beta, C, threads, vlen, plan.work());
      planned.push_back(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, C));
    }
    for (int i = 0; i < m; ++i)
      for (int c = 0; c < k; ++c) {
        double s = 0, sa = 0;
        for (auto e = hA.row_map(i); e < hA.row_map(i + 1); ++e) {
          s += double(hA.values(e)) * double(hB(hA.entries(e), c));
          sa += std::abs(double(hA.values(e)) * double(hB(hA.entries(e), c)));
        }
        const double ref = double(alpha) * s + double(beta) * double(hC0(i, c));
        for (std::size_t v = 0; v < split.size(); ++v)
          ASSERT_NEAR(double(split[v](i, c)), ref, tol * (1 + sa + std::abs(ref)))
              << "split " << v << ", k=" << k << " i=" << i << " c=" << c;
        for (int run = 0; run < 2; ++run)
          ASSERT_EQ(planned[run](i, c), split[0](i, c))
              << "plan, product " << run << ", k=" << k << " i=" << i << " c=" << c;
      }
  }
}

// A plan serves its own pattern at its own width: another pattern (even one
// of the same shape) or another width of C is a usage error.
TEST(Spmm, PlanOfAnotherPatternOrWidthIsAUsageError) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  const Space exec;
  CooMatrix<double> coo;
  coo.num_rows = 3;
  coo.num_cols = 4;
  coo.rows = {0, 2};
  coo.cols = {1, 3};
  coo.values = {1.0, 2.0};
  const auto A = to_csr(exec, coo), A2 = to_csr(exec, coo);
  const SpmmPlan<double, Mem> plan(exec, A, 2);
  DenseMatrix<double, Mem> B("B", 4, 2), C("C", 3, 2), B3("B3", 4, 3), C3("C3", 3, 3);
  EXPECT_NO_THROW(spmm(exec, plan, 1.0, A, B, 0.0, C));
  EXPECT_THROW(spmm(exec, plan, 1.0, A2, B, 0.0, C), UsageError);
  EXPECT_THROW(spmm(exec, plan, 1.0, A, B3, 0.0, C3), UsageError);
}

TEST(Spmm, ShapeMismatchIsAUsageError) {
  using Mem = Kokkos::DefaultExecutionSpace::memory_space;
  CooMatrix<double> coo;
  coo.num_rows = 3;
  coo.num_cols = 4;
  auto A = to_csr(Kokkos::DefaultExecutionSpace{}, coo);
  DenseMatrix<double, Mem> B("B", 5, 2), C("C", 3, 2);
  EXPECT_THROW(spmm(Kokkos::DefaultExecutionSpace{}, 1.0, A, B, 0.0, C), UsageError);
}

}  // namespace
