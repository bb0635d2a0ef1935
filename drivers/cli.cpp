#include "cli.hpp"

#include <kfactor/io/report_json.hpp>

#include <cstdio>
#include <iostream>

namespace kfactor::cli {

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

std::vector<Demo>& demo_registry() {
  static std::vector<Demo> demos;
  return demos;
}

void add_common_options(CLI::App& cmd, CommonOptions& o, bool input_required) {
  auto* in = cmd.add_option("-i,--input", o.input, "input matrix file");
  if (input_required) in->required();
  cmd.add_option("--format", o.format, "input format: auto|mm|edges|ratings|bmf|dense (auto guesses from the file)")
      ->capture_default_str();
  cmd.add_option("-k,--rank", o.rank, "factorization rank K")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("-n,--iters", o.iters, "maximum iterations")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd.add_option("--seed", o.seed, "random seed (same seed, same factors on one backend)")->capture_default_str();
  cmd.add_option("-o,--output", o.output, "write factors as PREFIX_<name>.mtx");
  cmd.add_option("--precision", o.precision, "float|double")
      ->capture_default_str()
      ->check(CLI::IsMember({"float", "double"}));
  cmd.add_flag("--json", o.json, "print exactly one JSON report on stdout at the end");
  cmd.add_flag("-q,--quiet", o.quiet, "no progress lines");
}

Observer progress_printer(const CommonOptions& o, int every) {
  if (o.quiet) return nullptr;
  FILE* out = o.json ? stderr : stdout;
  return [out, every](const IterationEvent& e) {
    if (every <= 1 || e.iteration % every == 0 || e.iteration == 1) {
      std::fprintf(out, "iter %6d  %8.3fs", e.iteration, e.seconds);
      for (const auto& [name, value] : e.metrics->items) std::fprintf(out, "  %s %.6g", name.c_str(), value);
      std::fprintf(out, "\n");
      std::fflush(out);
    }
    return ObserverAction::proceed;
  };
}

void print_report(const CommonOptions& o, const Report& r) {
  if (o.json) {
    std::cout << to_json(r).dump() << std::endl;
    return;
  }
  std::printf("%s: %lld x %lld, nnz %lld, rank %d, %d iterations in %.3f s on %s (%s)\n", r.command.c_str(),
              static_cast<long long>(r.rows), static_cast<long long>(r.cols), static_cast<long long>(r.nnz), r.rank,
              r.iterations, r.seconds, r.backend.c_str(), r.precision.c_str());
  for (const auto& [name, value] : r.metrics.items) std::printf("  %-22s %.6g\n", name.c_str(), value);
  for (const auto& [name, value] : r.timings.items) std::printf("  %-22s %.4f s\n", (name + " time").c_str(), value);
  if (!r.stop_reason.empty()) std::printf("  stop: %s\n", r.stop_reason.c_str());
}

}  // namespace kfactor::cli
