// `kfactor recommend`: the top-N items per user of a model written by
// `kfactor als --output PREFIX` (kfactor/als/recommend.hpp), for the users
// listed in a file (--users, original ids) or for every user (--all-users),
// optionally without the items each user already has (--filter-seen, a
// ratings file in the same ids, e.g. the training input). Output as in
// serving.hpp.
#include "serving.hpp"

#include <kfactor/als/recommend.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/io/read.hpp>

#include <chrono>
#include <memory>
#include <optional>

namespace kfactor::cli {
namespace {

struct RecommendCli : serving::ServingCli {
  std::string users, filter_seen;
  bool all_users = false;
};

/// The (user, item) pairs of a ratings file as rows of X and Y; pairs with
/// an id the factors lack are left out (they cannot be recommended).
CsrMatrix<double> seen_matrix(const std::string& path, const io::FactorPair& f) {
  io::ReadOptions ro;
  ro.duplicates = io::DuplicatePolicy::last;
  const auto R = io::read_ratings<double>(path, ro);
  CooMatrix<double> c;
  c.num_rows = std::int64_t(f.X.rows());
  c.num_cols = std::int64_t(f.Y.rows());
  for (std::size_t e = 0; e < R.matrix.nnz(); ++e) {
    const auto u = f.X.find(R.user_ids[R.matrix.rows[e]]);
    const auto i = f.Y.find(R.item_ids[R.matrix.cols[e]]);
    if (!u || !i) continue;
    c.rows.push_back(ordinal_t(*u));
    c.cols.push_back(ordinal_t(*i));
    c.values.push_back(1.0);
  }
  return to_csr(Kokkos::DefaultExecutionSpace{}, c);
}

void run_recommend(const RecommendCli& a) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> inputs{a.factors + "_X.csv", a.factors + "_Y.csv"};
  if (!a.users.empty()) inputs.push_back(a.users);
  if (!a.filter_seen.empty()) inputs.push_back(a.filter_seen);
  if (!a.output.empty()) io::check_write_target(a.output, inputs);
  const auto f = io::read_factor_pair(a.factors);
  const auto q = a.all_users ? serving::all_rows(f.X)
                             : serving::queries_from(a.users, f.X, a.factors + "_X.csv", "user", a.unknown);
  std::optional<CsrMatrix<double>> seen;
  if (!a.filter_seen.empty()) seen = seen_matrix(a.filter_seen, f);
  const auto X = serving::to_device(f.X), Y = serving::to_device(f.Y);
  const auto t1 = std::chrono::steady_clock::now();
  const auto top = als::recommend(exec, X, Y, q.rows, a.n, seen ? &*seen : nullptr);
  const auto t2 = std::chrono::steady_clock::now();
  Report r = serving::serving_report("recommend", q, std::int64_t(f.Y.rows()), int(f.X.rank),
                                     seen ? std::int64_t(seen->nnz()) : 0);
  r.timings.set("read", std::chrono::duration<double>(t1 - t0).count());
  r.timings.set("recommend", std::chrono::duration<double>(t2 - t1).count());
  r.seconds = std::chrono::duration<double>(t2 - t0).count();
  r.info["factors"] = a.factors;
  r.info["n"] = std::to_string(top.width());
  r.info["filter_seen"] = a.filter_seen.empty() ? "none" : a.filter_seen;
  serving::emit(a, r, "user,rank,item,score", q, top, f.Y, inputs);
}

const Registrar recommend_command{Command{
    "recommend",
    "top-N items per user from factors written by `kfactor als --output PREFIX` (scores x_u . y_i, ties by item "
    "order); prints `user rank item score` lines, or writes them as CSV with -o",
    [](CLI::App& cmd) -> std::function<void()> {
      auto a = std::make_shared<RecommendCli>();
      serving::add_serving_options(cmd, *a, "item count");
      auto* users = cmd.add_option("--users", a->users,
                                   "file of user ids, one per line (the first field: a ratings file serves)");
      auto* all = cmd.add_flag("--all-users", a->all_users, "recommend for every user of PREFIX_X.csv");
      users->excludes(all);
      cmd.add_option("--filter-seen", a->filter_seen,
                     "ratings file (user item ...) whose pairs are never recommended, e.g. the training input; "
                     "default none");
      return [a] {
        if (a->users.empty() && !a->all_users) throw UsageError("recommend: give --users FILE or --all-users");
        run_recommend(*a);
      };
    }}};

}  // namespace
}  // namespace kfactor::cli
