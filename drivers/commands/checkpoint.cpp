// `kfactor checkpoint-info FILE`: prints a checkpoint's metadata, fields and
// history, after verifying every dataset's checksum (exit 3 when the file is
// truncated, corrupt or not a kfactor checkpoint). Also the solver commands'
// restart notes (warn_restart, note_restart in cli.hpp).
#include "cli.hpp"

#include <kfactor/config.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <nlohmann/json.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#endif

#include <cstdio>
#include <iostream>
#include <memory>

namespace kfactor::cli {

std::string warn_restart(const std::string& setup_change) {
  if (setup_change.empty()) return setup_change;
  int rank = 0;
#if defined(KFACTOR_HAVE_MPI)
  // Every rank of a run loads the same file and finds the same change.
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
  if (rank == 0) {
    std::fprintf(stderr, "kfactor: warning: %s\n", setup_change.c_str());
    std::fflush(stderr);
  }
  return setup_change;
}

void note_restart(Report& report, const std::string& path, const std::string& setup_change) {
  report.info["restart"] = path;
  if (!setup_change.empty()) report.info["restart_warning"] = setup_change;
}

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
  // null: a file written before kfactor recorded its execution setup.
  j["execution_space"] = m.execution_space.empty() ? nlohmann::json() : nlohmann::json(m.execution_space);
  j["concurrency"] = m.execution_space.empty() ? nlohmann::json() : nlohmann::json(m.concurrency);
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
                const std::string setup = m.execution_space.empty()
                                              ? m.backend + " (thread count not recorded)"
                                              : m.execution_space + " x " + std::to_string(m.concurrency) + " threads";
                std::printf("  solver     %s (%s, K = %lld) on %s, %d MPI rank(s)\n", m.solver.c_str(),
                            m.precision.c_str(), static_cast<long long>(m.rank), setup.c_str(), m.mpi_ranks);
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
