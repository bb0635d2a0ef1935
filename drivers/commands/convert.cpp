// `kfactor convert IN OUT.h5`: read any supported input (Matrix Market, edge
// list, ratings, Boolean, dense text, HDF5 CSR) through io::read_input,
// keeping a ratings file's original ids, and write it as an HDF5 CSR file
// (io::write_hdf5_csr: atomically; OUT may not be IN). Large runs then read
// the binary file, each rank only its rows.
#include "cli.hpp"

#include <kfactor/core/error.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/report_json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

namespace kfactor::cli {
namespace {

struct ConvertOptions : OutputOptions, MatrixReadOptions {
  std::string input, output;
  std::string format = "auto";
  std::string values = "float64";
};

Report convert(const ConvertOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  io::ReadOptions ropt;
  ropt.duplicates = io::parse_duplicate_policy(o.duplicates);
  ropt.symmetrize = o.symmetrize;
  ropt.one_based = o.one_based;
  io::ReadInfo info;
  const auto data = io::read_input<double>(o.input, io::parse_format(o.format), ropt, &info);
  const double read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  io::Hdf5CsrWriteOptions wopt;
  wopt.single_precision = o.values == "float32";
  wopt.inputs = {o.input};
  io::write_hdf5_csr(o.output, data.matrix, data.user_ids, data.item_ids, wopt);
  Report r;
  r.command = "convert";
  r.backend = "host";
  r.rows = data.matrix.num_rows;
  r.cols = data.matrix.num_cols;
  r.nnz = static_cast<std::int64_t>(data.matrix.nnz());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.timings.items = {{"read", read_seconds}, {"write", r.seconds - read_seconds}};
  r.metrics.items = {{"bytes_written", double(std::filesystem::file_size(o.output))},
                     {"duplicates_merged", double(info.duplicates)}};
  r.info["input"] = o.input;
  r.info["output"] = o.output;
  r.info["format"] = std::string(io::format_name(info.format));
  r.info["format_detail"] = info.detail;
  r.info["values"] = o.values;
  r.info["ids"] = data.user_ids.empty() ? "none" : "row_ids, col_ids";
  return r;
}

const Registrar convert_command{Command{
    "convert", "write any input as an HDF5 CSR file (scipy/h5py layout) that large and distributed runs read fast",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<ConvertOptions>();
      cmd.add_option("input", o->input, "input matrix file (any --format)")->required();
      cmd.add_option("output", o->output, "the HDF5 CSR file to write (atomically; never the input)")->required();
      cmd.add_option("--format", o->format, "input format (auto guesses from the file; HDF5 by its signature)")
          ->capture_default_str()
          ->check(format_choices());
      cmd.add_option("--values", o->values,
                     "stored value type: float64 or float32; default float64, exact for every input (float32 "
                     "halves /data and suffices for --precision float runs)")
          ->capture_default_str()
          ->check(CLI::IsMember({"float64", "float32"}));
      add_matrix_read_options(cmd, *o);
      add_output_options(cmd, *o);
      return [o] {
        const Report r = convert(*o);
        if (o->json) {
          std::printf("%s\n", to_json(r).dump().c_str());
          return;
        }
        if (o->quiet) return;
        std::printf("%s -> %s: %lld x %lld, nnz %lld (%s, ids: %s), %.0f bytes in %.3f s\n", o->input.c_str(),
                    o->output.c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.cols),
                    static_cast<long long>(r.nnz), r.info.at("format_detail").c_str(), r.info.at("ids").c_str(),
                    r.metrics.items.front().second, r.seconds);
      };
    }}};

}  // namespace
}  // namespace kfactor::cli
