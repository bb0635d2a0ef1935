// SDDMM on the SNAP graphs of ../shared/data (facebook_combined is one of the
// paper's data sets): every kernel against a float64 reference; results do not
// depend on the number of vector lanes (checklist 9) or the tiling.
// The edge lists are read by kfactor::io (read_snap_edges, sddmm_test_util.hpp).
#include "sddmm_test_util.hpp"

namespace {
using namespace kfactor;
using kfactor::test::host_reference;
using kfactor::test::random_dense;
using kfactor::test::scaled_error;

template <class Space>
class SddmmDataTest : public ::testing::Test {};
TYPED_TEST_SUITE(SddmmDataTest, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(SddmmDataTest, SnapGraphsMatchReference) {
  using Space = TypeParam;
  using Mem = typename Space::memory_space;
  const Space exec;
  for (const char* name : {"snap/facebook_combined.txt", "snap/p2p-Gnutella08.txt"}) {
    auto coo = kfactor::test::read_snap_edges(kfactor::test::data_path(name));
    if (coo.nnz() == 0) GTEST_SKIP() << "missing " << name;
    CooMatrix<float> c{coo.num_rows, coo.num_cols, coo.rows, coo.cols, {}};
    for (double v : coo.values) c.values.push_back(float(v));
    auto S = to_csr(exec, c);
    if (std::string(name).find("facebook") != std::string::npos) {
      EXPECT_EQ(S.num_rows(), 4039);
      EXPECT_EQ(S.nnz(), 88234u);
    }
    const int K = 32;
    auto A = random_dense<float>(exec, S.num_rows(), K, 1);
    auto B = random_dense<float>(exec, S.num_cols, K, 2);
    const auto ref = host_reference(S, A, B, true);
    const double eps = std::numeric_limits<float>::epsilon();
    std::vector<SddmmOptions> opts;
    for (int lanes : {1, 2, 4, 8}) {
      SddmmOptions o;
      o.kernel = SddmmKernel::rowsplit;
      o.vector_length = lanes;
      o.tile_cols = 1000;
      opts.push_back(o);
    }
    for (bool tiles : {false, true}) {  // facebook's long rows: whole batches in one row
      SddmmOptions o;
      o.kernel = SddmmKernel::nzsplit;
      o.column_tiles = tiles;
      o.tile_cols = 1000;
      opts.push_back(o);
    }
    SddmmOptions l2;
    l2.kernel = SddmmKernel::sm_l2;
    l2.cache_bytes = 64 * 1024;  // the model tiles these graphs
    opts.push_back(l2);
    l2.tk = 32;
    l2.active_rows = false;
    opts.push_back(l2);
    opts.push_back(SddmmOptions{});
    for (const auto& o : opts) {
      Kokkos::View<float*, Mem> out("out", S.nnz());
      SddmmPlan<Space, float> plan(exec, S, K, o);
      plan.apply(exec, A, B, out);
      EXPECT_LE(scaled_error(out, ref, K, eps), 1.0)
          << name << " " << to_string(o.kernel) << " lanes " << o.vector_length << " tiles " << plan.info().tiles;
    }
  }
}

}  // namespace
