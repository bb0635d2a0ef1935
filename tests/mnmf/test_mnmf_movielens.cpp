// MovieLens latest-small (digest 003 section 6, item 15): with K = 15 and
// lambda chosen on a validation split, the test RMSE with the graph terms is
// at most the RMSE without them, at equal rank, epochs and initialization,
// for both objectives.
//
// The CSV is read by the io/ ratings reader.
#include "mnmf_test_utils.hpp"

#include <kfactor/io/read.hpp>

#include <cstdio>

namespace {
using namespace kfactor;
using namespace kfactor::mnmf;

template <class S>
class MovieLens : public ::testing::Test {};
TYPED_TEST_SUITE(MovieLens, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

TYPED_TEST(MovieLens, GraphRegularizationDoesNotHurtTestRmse) {
  const TypeParam exec;
  const auto all = io::read_ratings<double>(kfactor::test::data_path("movielens-latest-small/ratings.csv")).matrix;
  ASSERT_EQ(all.nnz(), 100836u);
  auto [train, test] = split_train_test(all, 0.2, 7);
  auto [fit, validation] = split_train_test(train, 0.2, 8);
  GraphOptions g;  // K = 15, binary, OR
  auto graphs = [&](const CsrMatrix<double, typename TypeParam::memory_space>& R) {
    return std::make_pair(knn_graph(exec, R, g), knn_graph(exec, transpose(exec, R), g));
  };
  const auto Rfit = to_csr(exec, fit);
  const auto [Pf, Pbf] = graphs(Rfit);
  const auto pfit = make_problem(exec, Rfit, Pf, Pbf, to_csr(exec, validation));
  const auto Rtrain = to_csr(exec, train);
  const auto [Pt, Pbt] = graphs(Rtrain);
  const auto ptrain = make_problem(exec, Rtrain, Pt, Pbt, to_csr(exec, test));
  for (const auto obj : {Objective::euclid, Objective::kl}) {
    Options o;
    o.objective = obj;
    o.rank = 10;
    o.seed = 3;
    o.stop.max_iterations = 40;
    double best_lambda = 0, best_val = 1e300;
    for (double lambda : {0.0, 0.3, 1.0, 3.0, 10.0, 30.0}) {
      o.lambda_w = o.lambda_h = lambda;
      const double val = solve(exec, pfit, o).report.metrics.get("test_rmse");
      std::printf("  %s lambda %g: validation RMSE %.4f\n", to_string(obj), o.lambda_w, val);
      if (val < best_val) {
        best_val = val;
        best_lambda = o.lambda_w;
      }
    }
    o.lambda_w = o.lambda_h = 0;
    const auto plain = solve(exec, ptrain, o).report.metrics;
    o.lambda_w = o.lambda_h = best_lambda;
    const auto reg = solve(exec, ptrain, o).report.metrics;
    std::printf("%s: lambda* = %g; test RMSE %.4f (lambda = 0: %.4f), MAE %.4f (%.4f)\n", to_string(obj), best_lambda,
                reg.get("test_rmse"), plain.get("test_rmse"), reg.get("test_mae"), plain.get("test_mae"));
    EXPECT_LE(reg.get("test_rmse"), plain.get("test_rmse")) << to_string(obj);
    EXPECT_GT(best_lambda, 0.0) << "validation preferred no graph at all for " << to_string(obj);
  }
}

}  // namespace
