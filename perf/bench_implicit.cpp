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
//   bench_implicit [--users 138493] [--items 26744] [--nnz 20000000] [--ranks 64,128]
//                  [--solvers cholesky,cg] [--cg-steps 3] [--iters 3] [--alpha 40] [--lambda 0.1]
//                  [--precision float|double] [--seed 0]
//
// One JSON record per (f, solver) through common/bench.hpp (the loss after
// each iteration in the record's history); a line per iteration on stderr.
#include "common/bench.hpp"
#include "common/zipf_pairs.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/core/convert.hpp>

#include <Kokkos_Sort.hpp>

#include <algorithm>
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
};

/// The peer's interaction set (file comment) as a CSR with r = 1.
template <class Space, class T>
CsrMatrix<T, typename Space::memory_space> interactions(const Space& exec, const Args& a) {
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
  return to_csr(exec, coo);
}

template <class T>
void run(const Args& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  als::Problem<T, Space::memory_space> problem;
  problem.train = interactions<Space, T>(exec, a);
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
      Report r = als::solve(exec, problem, o, [&](const IterationEvent& e) {
                   std::fprintf(stderr, "bench_implicit: f=%3d %-8s iter=%d loss=%.6e\n", f, solver.c_str(),
                                e.iteration, e.metrics->get("loss"));
                   return ObserverAction::proceed;
                 }).report;
      r.command = "bench_implicit";
      r.info["solver"] = solver;
      const double per = r.timings.get("per_iteration");
      std::fprintf(stderr, "bench_implicit: f=%3d %-8s %9.1f ms/iter  preprocess %.2f s  loss %.6e\n", f,
                   solver.c_str(), per * 1e3, r.timings.get("preprocess"), r.metrics.get("loss"));
      bench::emit(r, {{"dataset", "movielens20m-like"},
                      {"variant", solver == "cg" ? "cg" + std::to_string(a.cg_steps) : solver},
                      {"f", f},
                      {"nnz", nnz},
                      {"alpha", a.alpha},
                      {"lambda", a.lambda}});
    }
}

std::vector<std::string> split_list(const std::string& s) { return bench::split(s); }

}  // namespace

int main(int argc, char** argv) {
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
