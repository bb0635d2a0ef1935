// `kfactor similar`: the N items most similar to each listed item (--items),
// or the N users most similar to each listed user (--users), by cosine
// similarity of the factor rows written by `kfactor als --output PREFIX`
// (kfactor/als/recommend.hpp), the query itself excluded. Output as in
// serving.hpp.
#include "serving.hpp"

#include <kfactor/als/recommend.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

namespace kfactor::cli {
namespace {

struct SimilarCli : serving::ServingCli {
  std::string items, users;
};

void run_similar(const SimilarCli& a) {
  const Kokkos::DefaultExecutionSpace exec;
  const auto t0 = std::chrono::steady_clock::now();
  const bool by_item = !a.items.empty();
  const std::string list = by_item ? a.items : a.users;
  const std::vector<std::string> inputs{a.factors + "_X.csv", a.factors + "_Y.csv", list};
  if (!a.output.empty()) io::check_write_target(a.output, inputs);
  const auto f = io::read_factor_pair(a.factors);
  const io::FactorFile& F = by_item ? f.Y : f.X;
  const std::string kind = by_item ? "item" : "user";
  const auto q = serving::queries_from(list, F, a.factors + (by_item ? "_Y.csv" : "_X.csv"), kind, a.unknown);
  const auto D = serving::to_device(F);
  const auto t1 = std::chrono::steady_clock::now();
  const auto top = als::similar_rows(exec, D, q.rows, a.n);
  const auto t2 = std::chrono::steady_clock::now();
  Report r = serving::serving_report("similar", q, std::int64_t(F.rows()), int(F.rank), 0);
  r.timings.set("read", std::chrono::duration<double>(t1 - t0).count());
  r.timings.set("similar", std::chrono::duration<double>(t2 - t1).count());
  r.seconds = std::chrono::duration<double>(t2 - t0).count();
  r.info["factors"] = a.factors;
  // The query itself is excluded: a list holds at most the other rows.
  r.info["n"] = std::to_string(std::min<std::int64_t>(std::int64_t(top.width()), std::int64_t(F.rows()) - 1));
  r.info["similar"] = by_item ? "items" : "users";
  serving::emit(a, r, kind + ",rank,similar_" + kind + ",similarity", q, top, F, inputs);
}

const Registrar similar_command{Command{
    "similar",
    "the N most similar items to each listed item (--items) or users to each listed user (--users) by cosine "
    "similarity of the factors written by `kfactor als --output PREFIX`; prints `id rank similar_id similarity` "
    "lines, or writes them as CSV with -o",
    [](CLI::App& cmd) -> std::function<void()> {
      auto a = std::make_shared<SimilarCli>();
      serving::add_serving_options(cmd, *a, "items or users less one");
      auto* items = cmd.add_option("--items", a->items, "file of item ids, one per line (the first field)");
      auto* users = cmd.add_option("--users", a->users, "file of user ids, one per line (the first field)");
      items->excludes(users);
      return [a] {
        if (a->items.empty() && a->users.empty()) throw UsageError("similar: give --items FILE or --users FILE");
        run_similar(*a);
      };
    }}};

}  // namespace
}  // namespace kfactor::cli
