// `kfactor info`: read an input file (any text format, or HDF5 CSR) and
// describe it (shape, nnz, density, value range, duplicates merged, empty
// rows/columns, detected format, a ratings file's timestamp range).
// Exit 3 with `file:line: message` on stderr for bad input.
#include "cli.hpp"

#include <kfactor/io/input.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/report_json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

namespace kfactor::cli {
namespace {

struct InfoOptions : OutputOptions, MatrixReadOptions {
  std::string input;
  std::string format = "auto";
};

Report info_report(const InfoOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  io::ReadOptions ropt;
  ropt.duplicates = io::parse_duplicate_policy(o.duplicates);
  ropt.symmetrize = o.symmetrize;
  ropt.one_based = o.one_based;
  io::ReadInfo info;
  Report r;
  r.command = "info";
  r.backend = "host";
  auto data = io::read_input<double>(o.input, io::parse_format(o.format), ropt, &info);
  const CooMatrix<double> A = std::move(data.matrix);
  if (!data.user_ids.empty() && !data.item_ids.empty()) {
    r.info["user_id_range"] = std::to_string(data.user_ids.front()) + ".." + std::to_string(data.user_ids.back());
    r.info["item_id_range"] = std::to_string(data.item_ids.front()) + ".." + std::to_string(data.item_ids.back());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Strings, not metrics: a 64-bit timestamp need not fit a double exactly.
  const auto times = io::timestamp_range(data.timestamps);
  r.info["has_timestamps"] = times ? "true" : "false";
  if (times) {
    r.info["first_timestamp"] = std::to_string(times->first);
    r.info["last_timestamp"] = std::to_string(times->last);
  }
  const auto s = io::coo_stats(A);
  r.rows = A.num_rows;
  r.cols = A.num_cols;
  r.nnz = static_cast<std::int64_t>(A.nnz());
  r.seconds = seconds;
  r.metrics.items = {{"density", s.density},
                     {"min_value", s.min_value},
                     {"max_value", s.max_value},
                     {"entries_read", double(info.entries_read)},
                     {"duplicates_merged", double(info.duplicates)},
                     {"empty_rows", double(s.empty_rows)},
                     {"empty_cols", double(s.empty_cols)},
                     {"negative_values", double(s.negatives)},
                     {"explicit_zeros", double(s.zeros)},
                     {"lines", double(info.lines)}};
  r.timings.items = {{"read", seconds}};
  r.info["input"] = o.input;
  r.info["format"] = std::string(io::format_name(info.format));
  r.info["format_detail"] = info.detail;
  r.info["format_requested"] = o.format;
  r.info["pattern"] = info.pattern ? "true" : "false";
  r.info["duplicate_policy"] = o.duplicates;
  if (info.header_count) r.info["header_count"] = std::to_string(*info.header_count);
  return r;
}

const Registrar info_command{Command{
    "info",
    "read an input file and describe it: shape, nnz, density, value range, duplicates, empty rows/columns, "
    "timestamp range",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<InfoOptions>();
      cmd.add_option("-i,--input", o->input, "input matrix file")->required();
      cmd.add_option("--format", o->format, "input format")->capture_default_str()->check(format_choices());
      add_matrix_read_options(cmd, *o);
      add_output_options(cmd, *o);
      return [o] {
        const Report r = info_report(*o);
        if (o->json) {
          std::printf("%s\n", to_json(r).dump().c_str());
          return;
        }
        std::printf("%s: %s (%s)\n", o->input.c_str(), r.info.at("format").c_str(), r.info.at("format_detail").c_str());
        std::printf("  %-20s %lld x %lld\n", "shape", static_cast<long long>(r.rows), static_cast<long long>(r.cols));
        std::printf("  %-20s %lld\n", "nnz", static_cast<long long>(r.nnz));
        for (const auto& [name, value] : r.metrics.items) std::printf("  %-20s %.6g\n", name.c_str(), value);
        for (const auto& key :
             {"header_count", "user_id_range", "item_id_range", "has_timestamps", "first_timestamp", "last_timestamp"})
          if (auto it = r.info.find(key); it != r.info.end()) std::printf("  %-20s %s\n", key, it->second.c_str());
        std::printf("  %-20s %.4f s\n", "read time", r.seconds);
      };
    }}};

}  // namespace
}  // namespace kfactor::cli
