// Implicit-feedback ALS benchmark: time per iteration and the objective of
// kfactor::als with Options::implicit, exact (cholesky) and conjugate-
// gradient (cg, --cg-steps) half-steps, for several ranks, on a
// MovieLens-20M-shaped synthetic interaction set. The data follow the
// description of the torch peer (shared/peers/torch_implicit_als.py), so
// its loss is comparable: 1.15 nnz draws of users from a Zipf law of
// exponent 0.6 over m ids and items from one of exponent 0.9 over n ids,
// pairs keyed u n + i (in Zipf rank order) deduplicated and sorted, the
// first nnz keys kept, then user and item ids scattered by random
// permutations; every interaction has r = 1, so c = 1 + alpha. The draws
// come from kfactor's counter RNG, not torch's: the same law, not the same
// pairs. Plain regularization lambda (|X|^2 + |Y|^2), as the peer. The peer
// starts X and Y at uniform [0, 0.01); kfactor starts Y at uniform
// [0, 1/sqrt(f)) and computes X first, so the first iterations' losses
// differ while both descend the same objective.
//
//   bench_implicit --help prints the options.
//
// One JSON record per (f, solver) through common/bench.hpp (the loss after
// each iteration in the record's history); a line per iteration on stderr.
// --eval-leave-k K (K > 0) trains on a leave-K-out split (als::leave_k_out,
// seed --seed) and adds to each record P@10 and nDCG@10 of the model and of
// a popularity ranking (items by training count) on the held-out
// interactions, training items filtered (ranking_metrics.hpp), and the time
// of als::recommend for every user at N = 10 (recommend_all_seconds).
#include "common/bench.hpp"
#include "common/zipf_pairs.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/als/ranking_metrics.hpp>
#include <kfactor/als/recommend.hpp>
#include <kfactor/als/split.hpp>
#include <kfactor/core/convert.hpp>

#include <Kokkos_Sort.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace kfactor;

struct Args {
  std::int64_t users = 138493, items = 26744, nnz = 20000000;
  std::vector<int> ranks{64, 128};
  std::vector<std::string> solvers{"cholesky", "cg"};
  int cg_steps = 3, iters = 3;
  double alpha = 40.0, lambda = 0.1;
  std::string precision = "float";
  std::uint64_t seed = 0;
  int eval_leave_k = 0;  ///< > 0: evaluate on a leave-k-out split
};

/// The peer's interaction set (file comment), r = 1.
template <class Space, class T>
CooMatrix<T> interactions(const Space& exec, const Args& a) {
  using Mem = typename Space::memory_space;
  const auto cu = bench::zipf_cdf(a.users, 0.6), ci = bench::zipf_cdf(a.items, 0.9);
  const std::int64_t draws = std::int64_t(double(a.nnz) * 1.15), ni = a.items;
  const Kokkos::View<ordinal_t*, Mem> identity;
  auto keys = bench::zipf_pair_keys(exec, bench::to_device(exec, cu, "cdf_u"), bench::to_device(exec, ci, "cdf_i"),
                                    identity, identity, draws, a.seed);
  Kokkos::sort(exec, keys);
  // The sorted distinct keys, the first nnz of them.
  auto kh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, keys);
  keys = {};
  std::vector<std::uint64_t> uniq;
  uniq.reserve(std::size_t(a.nnz));
  for (std::size_t e = 0; e < kh.extent(0) && std::int64_t(uniq.size()) < a.nnz; ++e)
    if (e == 0 || kh(e) != kh(e - 1)) uniq.push_back(kh(e));
  std::vector<ordinal_t> pu(a.users), pi(a.items);
  std::iota(pu.begin(), pu.end(), 0);
  std::iota(pi.begin(), pi.end(), 0);
  std::mt19937_64 g(a.seed);
  std::shuffle(pu.begin(), pu.end(), g);
  std::shuffle(pi.begin(), pi.end(), g);
  CooMatrix<T> coo;
  coo.num_rows = a.users;
  coo.num_cols = a.items;
  coo.rows.resize(uniq.size());
  coo.cols.resize(uniq.size());
  coo.values.assign(uniq.size(), T(1));
  for (std::size_t e = 0; e < uniq.size(); ++e) {
    coo.rows[e] = pu[uniq[e] / std::uint64_t(ni)];
    coo.cols[e] = pi[uniq[e] % std::uint64_t(ni)];
  }
  std::fprintf(stderr, "bench_implicit: %lld draws -> %zu interactions (%lld x %lld)\n", (long long)draws, uniq.size(),
               (long long)a.users, (long long)a.items);
  return coo;
}

/// P@10 and nDCG@10 of the model and of a popularity ranking, and the time
/// of recommend() for every user at N = 10, into the record's fields.
template <class Space, class T>
void evaluate_ranking(const Space& exec, const als::Problem<T, typename Space::memory_space>& problem,
                      const DenseMatrix<T, typename Space::memory_space>& X,
                      const DenseMatrix<T, typename Space::memory_space>& Y, nlohmann::json& fields) {
  using Mem = typename Space::memory_space;
  const int K = 10;
  const auto model = als::ranking_metrics(exec, X, Y, problem.train, problem.given_test, K);
  // Popularity: every user the vector 1, every item its training count.
  DenseMatrix<T, Mem> ones("ones", X.extent(0), 1), counts("counts", Y.extent(0), 1);
  Kokkos::deep_copy(exec, ones, T(1));
  const auto tr = problem.train;
  Kokkos::parallel_for(
      "bench_implicit::popularity", Kokkos::RangePolicy<Space>(exec, 0, tr.nnz()),
      KOKKOS_LAMBDA(std::size_t e) { Kokkos::atomic_add(&counts(tr.entries(e), 0), T(1)); });
  const auto pop = als::ranking_metrics(exec, ones, counts, problem.train, problem.given_test, K);
  std::vector<ordinal_t> all(X.extent(0));
  std::iota(all.begin(), all.end(), ordinal_t(0));
  exec.fence();
  const auto t0 = std::chrono::steady_clock::now();
  const auto top = als::recommend(exec, X, Y, all, K, &problem.train);
  exec.fence();
  const double rec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr,
               "bench_implicit: %lld users evaluated: P@10 %.4f (popularity %.4f)  nDCG@10 %.4f (popularity %.4f)  "
               "recommend all %zu users at N=10: %.3f s\n",
               (long long)model.users, model.precision, pop.precision, model.ndcg, pop.ndcg, all.size(), rec);
  fields["eval_users"] = model.users;
  fields["p_at_10"] = model.precision;
  fields["ndcg_at_10"] = model.ndcg;
  fields["popularity_p_at_10"] = pop.precision;
  fields["popularity_ndcg_at_10"] = pop.ndcg;
  fields["recommend_all_seconds"] = rec;
  (void)top;
}

template <class T>
void run(const Args& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  als::Problem<T, Space::memory_space> problem;
  const CooMatrix<T> all = interactions<Space, T>(exec, a);
  if (a.eval_leave_k > 0) {
    const auto [train, test] = als::leave_k_out(all, a.eval_leave_k, a.seed);
    problem.train = to_csr(exec, train);
    problem.given_test = to_csr(exec, test);
  } else {
    problem.train = to_csr(exec, all);
  }
  const std::int64_t nnz = std::int64_t(problem.train.nnz());
  for (int f : a.ranks)
    for (const auto& solver : a.solvers) {
      als::Options o;
      o.implicit = true;
      o.rank = f;
      o.alpha = a.alpha;
      o.lambda = a.lambda;
      o.weighting = als::LambdaWeighting::plain;
      o.solver = als::parse_solve_method(solver);
      o.cg_steps = a.cg_steps;
      o.layout = als::Layout::csr;
      o.stop.max_iterations = a.iters;
      // The ranking metrics are computed once, after the run (evaluate()
      // would rank every user at every iteration): the solver sees no test set.
      als::Problem<T, Space::memory_space> trained = problem;
      trained.given_test = {};
      auto res = als::solve(exec, trained, o, [&](const IterationEvent& e) {
        std::fprintf(stderr, "bench_implicit: f=%3d %-8s iter=%d loss=%.6e\n", f, solver.c_str(), e.iteration,
                     e.metrics->get("loss"));
        return ObserverAction::proceed;
      });
      Report& r = res.report;
      r.command = "bench_implicit";
      r.info["solver"] = solver;
      const double per = r.timings.get("per_iteration");
      std::fprintf(stderr, "bench_implicit: f=%3d %-8s %9.1f ms/iter  preprocess %.2f s  loss %.6e\n", f,
                   solver.c_str(), per * 1e3, r.timings.get("preprocess"), r.metrics.get("loss"));
      nlohmann::json fields = {{"dataset", "movielens20m-like"},
                               {"variant", solver == "cg" ? "cg" + std::to_string(a.cg_steps) : solver},
                               {"f", f},
                               {"nnz", nnz},
                               {"alpha", a.alpha},
                               {"lambda", a.lambda}};
      if (a.eval_leave_k > 0) {
        fields["eval_leave_k"] = a.eval_leave_k;
        evaluate_ranking(exec, problem, res.state.X, res.state.Y, fields);
      }
      bench::emit(r, fields);
    }
}

std::vector<std::string> split_list(const std::string& s) { return bench::split(s); }

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_implicit [--users 138493] [--items 26744] [--nnz 20000000] [--ranks 64,128]
               [--solvers cholesky,cg] [--cg-steps 3] [--iters 3] [--alpha 40] [--lambda 0.1]
               [--precision float|double] [--seed 0] [--eval-leave-k 0]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--users")
      a.users = std::stoll(v);
    else if (k == "--items")
      a.items = std::stoll(v);
    else if (k == "--nnz")
      a.nnz = std::stoll(v);
    else if (k == "--ranks") {
      a.ranks.clear();
      for (const auto& x : split_list(v)) a.ranks.push_back(std::stoi(x));
    } else if (k == "--solvers")
      a.solvers = split_list(v);
    else if (k == "--cg-steps")
      a.cg_steps = std::stoi(v);
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else if (k == "--alpha")
      a.alpha = std::stod(v);
    else if (k == "--lambda")
      a.lambda = std::stod(v);
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--eval-leave-k")
      a.eval_leave_k = std::stoi(v);
    else {
      std::fprintf(stderr, "bench_implicit: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.precision == "double")
    run<double>(a);
  else
    run<float>(a);
  return 0;
}
