#pragma once
// What `kfactor recommend` and `kfactor similar` share: their common
// options, the model read back from PREFIX_X.csv / PREFIX_Y.csv, query ids
// mapped to factor rows (unknown ids refused with FILE:LINE, or skipped and
// counted), and the output: ranked lists on stdout (`query rank id score`
// lines), in the --json object ("rankings"), or in a CSV file (-o, written
// atomically as a one-member output set) with the report on stdout.
#include "../cli.hpp"

#include <kfactor/als/detail/top_n.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/ranking_file.hpp>
#include <kfactor/io/report_json.hpp>
#include <kfactor/io/write.hpp>

#include <Kokkos_Core.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace kfactor::cli::serving {

/// N of the ranked lists (clamped to the candidates' count).
inline constexpr Range<int> n_range{.lo = 1, .hi = std::numeric_limits<int>::max()};

struct ServingCli : OutputOptions {
  std::string factors, output, unknown = "reject";
  int n = 10;
};

/// --factors, --n, -o/--output, --unknown and the output options.
inline void add_serving_options(CLI::App& cmd, ServingCli& s, const std::string& what) {
  cmd.add_option("--factors", s.factors, "PREFIX of PREFIX_X.csv and PREFIX_Y.csv (kfactor als --output PREFIX)")
      ->required();
  add_number(cmd, "--n", s.n, "entries per ranked list; default 10 (clamped to the " + what + ")", n_range);
  cmd.add_option("-o,--output", s.output,
                 "write the ranked lists to this CSV file (query,rank,id,score); default: print them on stdout");
  cmd.add_option("--unknown", s.unknown,
                 "an id the factors lack: reject (exit 3 naming FILE:LINE) or skip (counted in the report); default "
                 "reject")
      ->capture_default_str()
      ->check(one_of({"reject", "skip"}));
  add_output_options(cmd, s);
}

/// A factor file's rows as a device matrix (file order).
inline DenseMatrix<double> to_device(const io::FactorFile& F) {
  Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      F.values.data(), F.rows(), std::size_t(F.rank));
  DenseMatrix<double> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::serving::factor"), F.rows(),
                        std::size_t(F.rank));
  Kokkos::deep_copy(d, h);
  return d;
}

/// The queries: rows of `F` for the ids in `path` (FactorFile name
/// `fname` in messages), with their ids; unknown ids rejected or skipped.
struct Queries {
  std::vector<ordinal_t> rows;
  std::vector<std::int64_t> ids;
  std::size_t skipped = 0;
};
inline Queries queries_from(const std::string& path, const io::FactorFile& F, const std::string& fname,
                            const std::string& kind, const std::string& unknown) {
  Queries q;
  for (const auto& [id, line] : io::read_id_list(path)) {
    const auto r = F.find(id);
    if (!r) {
      if (unknown == "skip") {
        ++q.skipped;
        continue;
      }
      throw InputError(path, line, "unknown " + kind + " id " + std::to_string(id) + " (not in " + fname + ")");
    }
    q.rows.push_back(ordinal_t(*r));
    q.ids.push_back(id);
  }
  return q;
}

/// Every row of `F`, in ascending id order.
inline Queries all_rows(const io::FactorFile& F) {
  Queries q;
  for (const std::size_t r : F.by_id) {
    q.rows.push_back(ordinal_t(r));
    q.ids.push_back(F.ids[r]);
  }
  return q;
}

/// Prints or writes the ranked lists (file comment); `top` ranks rows of
/// `target` (whose ids are written), `columns` names the CSV columns, and
/// the output may replace none of `inputs`.
template <class MemorySpace>
void emit(const ServingCli& s, Report& report, const std::string& columns, const Queries& q,
          const als::TopN<double, MemorySpace>& top, const io::FactorFile& target,
          const std::vector<std::string>& inputs) {
  const auto items = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, top.items);
  const auto scores = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, top.scores);
  const auto count = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, top.count);
  std::vector<std::vector<std::int64_t>> ids(q.ids.size());
  std::vector<std::vector<double>> sc(q.ids.size());
  for (std::size_t b = 0; b < q.ids.size(); ++b)
    for (int r = 0; r < count(b); ++r) {
      ids[b].push_back(target.ids[std::size_t(items(b, r))]);
      sc[b].push_back(scores(b, r));
    }
  if (!s.output.empty()) {
    const io::OutputSet set(inputs, {"rankings"});
    io::write_ranked_lists(s.output, columns, q.ids, ids, sc, set["rankings"]);
    report.info["output"] = s.output;
    print_report(s, report);
    return;
  }
  if (s.json) {
    nlohmann::json j = to_json(report), lists = nlohmann::json::array();
    for (std::size_t b = 0; b < q.ids.size(); ++b)
      lists.push_back({{"query", q.ids[b]}, {"ids", ids[b]}, {"scores", sc[b]}});
    j["rankings"] = lists;
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  for (std::size_t b = 0; b < q.ids.size(); ++b)
    for (std::size_t r = 0; r < ids[b].size(); ++r)
      std::printf("%lld\t%zu\t%lld\t%.9g\n", (long long)q.ids[b], r + 1, (long long)ids[b][r], sc[b][r]);
}

/// The report's common fields.
inline Report serving_report(const std::string& command, const Queries& q, std::int64_t candidates, int rank,
                             std::int64_t nnz) {
  Report r;
  r.command = command;
  r.backend = backend_name<Kokkos::DefaultExecutionSpace>();
  r.precision = "double";
  r.rows = std::int64_t(q.ids.size());
  r.cols = candidates;
  r.nnz = nnz;
  r.rank = rank;
  r.metrics.set("queries", double(q.ids.size()));
  r.metrics.set("skipped", double(q.skipped));
  return r;
}

}  // namespace kfactor::cli::serving
