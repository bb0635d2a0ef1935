// Distributed SDDMM under mpiexec (checklist 12): the union of the ranks'
// outputs, gathered on rank 0, equals the single-rank output bitwise; each
// rank holds all of A, only its rows of B and its nonzeros; ranks may own no
// columns. Every column split (balanced by nonzeros, equal widths, timed).
// The output left distributed on disk (write_part): the parts together hold
// exactly the gathered file's entries, values bit for bit, each part of S's
// shape with its entries in its rank's columns.
#include <kfactor/distributed/sddmm.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/sddmm_output.hpp>

#include "distributed/mpi_test_util.hpp"
#include "sddmm_test_util.hpp"

#include <cstring>
#include <filesystem>
#include <tuple>

#if defined(KFACTOR_HAVE_MPI)
namespace {
using namespace kfactor;

TEST(SddmmMpi, GatheredRanksEqualSingleRun) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  const Space exec;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (auto [n, split] : {std::pair{3, ColumnSplit::balanced}, std::pair{40, ColumnSplit::balanced},
                          std::pair{3, ColumnSplit::equal_width}, std::pair{40, ColumnSplit::equal_width},
                          std::pair{3, ColumnSplit::timed}, std::pair{40, ColumnSplit::timed}}) {
    // n = 3 < P leaves ranks without columns
    auto c = kfactor::test::random_sddmm_pattern(60, n, 4, 5);
    CooMatrix<double> ct{c.num_rows, c.num_cols, c.rows, c.cols, c.values};
    auto S = to_csr(exec, ct);
    const int K = 20;
    auto A = kfactor::test::random_dense<double>(exec, S.num_rows(), K, 1);
    auto B = kfactor::test::random_dense<double>(exec, S.num_cols, K, 2);
    SddmmOptions o;
    o.kernel = SddmmKernel::rowsplit;
    o.column_tiles = false;
    o.staged = SddmmStaged::a;
    distributed::SddmmRankPlan<Space, double> plan(exec, MPI_COMM_WORLD, S, K, o, split);
    EXPECT_EQ(plan.bounds().size(), std::size_t(size) + 1);
    if (split != ColumnSplit::timed) {
      const auto expected_bounds =
          split == ColumnSplit::balanced ? balanced_column_blocks(S, size) : equal_column_blocks(S.num_cols, size);
      EXPECT_EQ(plan.bounds(), expected_bounds) << to_string(split);
    } else {  // measured times differ run to run: only a valid split, the same on every rank
      EXPECT_EQ(plan.bounds().front(), 0);
      EXPECT_EQ(plan.bounds().back(), S.num_cols);
      EXPECT_TRUE(std::is_sorted(plan.bounds().begin(), plan.bounds().end()));
      std::vector<ordinal_t> root_bounds = plan.bounds();
      MPI_Bcast(root_bounds.data(), size + 1, MPI_INT, 0, MPI_COMM_WORLD);
      EXPECT_EQ(plan.bounds(), root_bounds);
    }
    auto B_local = Kokkos::subview(B, Kokkos::make_pair(plan.begin(), plan.end()), Kokkos::ALL);
    Kokkos::View<double*, Mem> out_local("out_local", plan.local_nnz());
    plan.apply(exec, A, B_local, out_local);
    unsigned long long local = plan.local_nnz(), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(total, S.nnz());
    const auto gathered = plan.gather(out_local, 0);
    if (rank == 0) {
      Kokkos::View<double*, Mem> full("full", S.nnz());
      SddmmPlan<Space, double>(exec, S, K, o).apply(exec, A, B, full);
      auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, full);
      ASSERT_EQ(gathered.size(), S.nnz());
      for (std::size_t e = 0; e < S.nnz(); ++e)
        ASSERT_EQ(gathered[e], h(e)) << "P=" << size << " e=" << e << " " << to_string(split);
    }
  }
}

/// (row, column, value bits) of every entry of the Matrix Market file
/// `path`, sorted.
std::vector<std::tuple<ordinal_t, ordinal_t, std::uint32_t>> entries_of(const std::string& path) {
  const auto A = io::read_matrix_market<float>(path);
  std::vector<std::tuple<ordinal_t, ordinal_t, std::uint32_t>> out;
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &A.values[e], sizeof bits);
    out.emplace_back(A.rows[e], A.cols[e], bits);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SddmmMpi, PartsOnDiskHoldTheGatheredOutput) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  const Space exec;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto dir = kfactor::test::shared_dir("sddmm_parts");
  for (const int n : {3, 40}) {  // n = 3 < P = 4 leaves a rank without columns
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto S = kfactor::test::random_sddmm_csr<float>(exec, 60, n, 4, 17 + n);
    const int K = 12;
    auto A = kfactor::test::random_dense<float>(exec, S.num_rows(), K, 3);
    auto B = kfactor::test::random_dense<float>(exec, S.num_cols, K, 4);
    distributed::SddmmRankPlan<Space, float> plan(exec, MPI_COMM_WORLD, S, K);
    auto B_local = Kokkos::subview(B, Kokkos::make_pair(plan.begin(), plan.end()), Kokkos::ALL);
    Kokkos::View<float*, Mem> out_local("out_local", plan.local_nnz());
    plan.apply(exec, A, B_local, out_local);
    const std::string path = (dir / ("p" + std::to_string(n) + ".mtx")).string();
    const std::string whole = (dir / ("whole" + std::to_string(n) + ".mtx")).string();
    EXPECT_EQ(plan.write_part(path, out_local, "part"), distributed::part_path(path, rank));
    const auto gathered = plan.gather(out_local, 0);
    if (rank == 0) io::write_sddmm_output(whole, S, gathered);
    MPI_Barrier(MPI_COMM_WORLD);
    // This rank's part: S's shape, its nonzeros, in its columns.
    const auto mine = io::read_matrix_market<float>(distributed::part_path(path, rank));
    EXPECT_EQ(mine.num_rows, S.num_rows());
    EXPECT_EQ(mine.num_cols, S.num_cols);
    EXPECT_EQ(mine.nnz(), plan.local_nnz());
    for (const auto j : mine.cols) {
      EXPECT_GE(j, plan.begin());
      EXPECT_LT(j, plan.end());
    }
    if (rank == 0) {
      std::vector<std::tuple<ordinal_t, ordinal_t, std::uint32_t>> parts;
      for (int p = 0; p < size; ++p) {
        const auto e = entries_of(distributed::part_path(path, p));
        parts.insert(parts.end(), e.begin(), e.end());
      }
      std::sort(parts.begin(), parts.end());
      const auto all = entries_of(whole);
      ASSERT_EQ(all.size(), S.nnz());
      EXPECT_EQ(parts, all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0) std::filesystem::remove_all(dir);
}

}  // namespace
#else
TEST(SddmmMpi, NotBuilt) { GTEST_SKIP() << "kfactor was built without MPI"; }
#endif
