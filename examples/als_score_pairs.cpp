// ALS on a ratings file, then scoring (user, item) pairs with the factors:
// the pairs form a sparse pattern S and their scores are one SDDMM,
// x_u . y_i at every stored (u, i).
//
//   als_score_pairs RATINGS PAIRS [f]
#include <kfactor/kfactor.hpp>

#include <cstdio>
#include <string>
#include <unordered_map>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RATINGS PAIRS [f]\n", argv[0]);
    return 2;
  }
  try {
    const Kokkos::DefaultExecutionSpace exec;
    // Ratings keep their original ids: row r is user user_ids[r], column c item item_ids[c].
    const auto ratings = kfactor::io::read_ratings<double>(argv[1]);

    kfactor::als::Options options;
    options.rank = argc > 3 ? std::stoi(argv[3]) : 4;
    options.lambda = 0.05;
    options.stop.max_iterations = 15;
    options.validate();
    // 20% of the ratings held out (deterministic for the seed) for test RMSE.
    const auto problem = kfactor::als::make_problem(exec, ratings.matrix, 0.2, /*split_seed=*/1);
    auto [state, report] = kfactor::als::solve(exec, problem, options);
    const auto last = state.history.last();
    std::printf("ALS f=%d: train_rmse=%.4f test_rmse=%.4f after %d iterations\n", options.rank, last.get("train_rmse"),
                last.get("test_rmse"), state.iteration);

    // The pairs to score, mapped to the factor rows.
    const auto pairs = kfactor::io::read_ratings<double>(argv[2]);
    std::unordered_map<std::int64_t, int> user_row, item_row;
    for (std::size_t r = 0; r < ratings.user_ids.size(); ++r) user_row[ratings.user_ids[r]] = int(r);
    for (std::size_t c = 0; c < ratings.item_ids.size(); ++c) item_row[ratings.item_ids[c]] = int(c);
    kfactor::CooMatrix<double> S;
    S.num_rows = ratings.matrix.num_rows;
    S.num_cols = ratings.matrix.num_cols;
    for (std::size_t e = 0; e < pairs.matrix.values.size(); ++e) {
      const auto u = pairs.user_ids[pairs.matrix.rows[e]], i = pairs.item_ids[pairs.matrix.cols[e]];
      if (!user_row.count(u) || !item_row.count(i)) {
        std::printf("user %lld item %lld: unknown id, not scored\n", (long long)u, (long long)i);
        continue;
      }
      S.rows.push_back(user_row[u]);
      S.cols.push_back(item_row[i]);
      S.values.push_back(1.0);
    }
    const auto S_dev = kfactor::to_csr(exec, S);
    Kokkos::View<double*, Kokkos::DefaultExecutionSpace::memory_space> scores("scores", S_dev.nnz());
    kfactor::sddmm_unscaled(exec, S_dev, state.X, state.Y, scores);

    // Print in CSR order (rows by user, then item).
    auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S_dev.row_map);
    auto cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S_dev.entries);
    auto h_scores = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, scores);
    for (std::size_t r = 0; r + 1 < row_map.extent(0); ++r)
      for (auto e = row_map(r); e < row_map(r + 1); ++e)
        std::printf("user %lld item %lld score %.3f\n", (long long)ratings.user_ids[r],
                    (long long)ratings.item_ids[cols(e)], h_scores(e));
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
