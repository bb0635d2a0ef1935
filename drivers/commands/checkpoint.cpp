// `kfactor checkpoint-info FILE`: prints a checkpoint's metadata, fields and
// history, after verifying every dataset's checksum (exit 3 when the file is
// truncated, corrupt or not a kfactor checkpoint).
#include "cli.hpp"

#include <kfactor/io/checkpoint.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace kfactor::cli {
namespace {

struct InfoOptions : OutputOptions {
  std::string file;
  bool no_verify = false;
};

nlohmann::json info_json(const CheckpointInfo& info, bool verified) {
  const auto& m = info.meta;
  nlohmann::json j;
  j["format_version"] = m.format_version;
  j["solver"] = m.solver;
  j["precision"] = m.precision;
  j["rank"] = m.rank;
  j["backend"] = m.backend;
  j["iteration"] = m.iteration;
  j["mpi_ranks"] = m.mpi_ranks;
  j["options"] = m.options;
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(m.input.checksum));
  j["input"] = {{"rows", m.input.rows}, {"cols", m.input.cols}, {"nnz", m.input.nnz}, {"checksum", hex}};
  auto& fields = j["fields"] = nlohmann::json::array();
  for (const auto& f : info.fields) {
    nlohmann::json shape = nlohmann::json::array();
    if (f.rank >= 1) shape.push_back(f.rows);
    if (f.rank == 2) shape.push_back(f.cols);
    fields.push_back({{"name", f.name}, {"type", detail::to_string(f.type)}, {"shape", shape}});
  }
  j["history"] = {{"names", info.history_names}, {"rows", info.history_rows}};
  j["verified"] = verified;
  return j;
}

const Registrar checkpoint_info_command{
    Command{"checkpoint-info", "print a checkpoint's metadata and fields, after verifying its checksums",
            [](CLI::App& cmd) -> std::function<void()> {
              auto o = std::make_shared<InfoOptions>();
              cmd.add_option("file", o->file, "checkpoint file (HDF5)")->required();
              add_output_options(cmd, *o);
              cmd.add_flag("--no-verify", o->no_verify, "skip reading the datasets to verify their checksums");
              return [o] {
                const auto info = inspect_checkpoint(o->file, !o->no_verify);
                if (o->json) {
                  std::cout << info_json(info, !o->no_verify).dump() << std::endl;
                  return;
                }
                const auto& m = info.meta;
                std::printf("%s: kfactor checkpoint, format version %d%s\n", o->file.c_str(), m.format_version,
                            o->no_verify ? "" : ", checksums verified");
                std::printf("  solver     %s (%s, K = %lld) on %s, %d MPI rank(s)\n", m.solver.c_str(),
                            m.precision.c_str(), static_cast<long long>(m.rank), m.backend.c_str(), m.mpi_ranks);
                std::printf("  iteration  %lld\n", static_cast<long long>(m.iteration));
                std::printf("  input      %s\n", to_string(m.input).c_str());
                std::printf("  options    %s\n", nlohmann::json(m.options).dump().c_str());
                std::printf("  fields\n");
                for (const auto& f : info.fields) {
                  std::string shape = f.rank == 0 ? "scalar" : std::to_string(f.rows);
                  if (f.rank == 2) shape += " x " + std::to_string(f.cols);
                  std::printf("    %-20s %-8s %s\n", f.name.c_str(), detail::to_string(f.type), shape.c_str());
                }
                std::string names;
                for (const auto& n : info.history_names) names += (names.empty() ? "" : ", ") + n;
                std::printf("  history    %zu rows (%s)\n", info.history_rows, names.c_str());
              };
            }}};

}  // namespace
}  // namespace kfactor::cli
