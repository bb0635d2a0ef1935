// Distributed SDDMM under mpiexec (checklist 12): the union of the ranks'
// outputs, gathered on rank 0, equals the single-rank output bitwise; each
// rank holds all of A, only its rows of B and its nonzeros; ranks may own no
// columns. Every column split (balanced by nonzeros, equal widths, timed).
#include <kfactor/distributed/sddmm.hpp>

#include "sddmm_test_util.hpp"

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

}  // namespace
#else
TEST(SddmmMpi, NotBuilt) { GTEST_SKIP() << "kfactor was built without MPI"; }
#endif
