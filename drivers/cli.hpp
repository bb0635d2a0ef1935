#pragma once
// The command-line contract shared by every `kfactor` subcommand: common
// options, progress output, the final human or JSON report, and self-
// registering commands. Commands parse, read, call the library and report;
// no algorithm lives in drivers/.
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kfactor::cli {

/// Options every factorization command takes.
struct CommonOptions {
  std::string input;
  std::string format = "auto";
  std::string output;  ///< prefix for factor files; empty writes none
  int rank = 10;
  int iters = 100;
  std::uint64_t seed = 42;
  bool json = false;
  bool quiet = false;
  std::string precision = "double";
};

/// Adds --input --format --rank --iters --seed --output --json --quiet
/// --precision to `cmd` with the given defaults.
void add_common_options(CLI::App& cmd, CommonOptions& o, bool input_required = true);

/// Observer printing one progress line per iteration (to stdout, or stderr
/// under --json so stdout carries only the JSON); silent with --quiet.
/// `every` thins the lines for long runs.
Observer progress_printer(const CommonOptions& o, int every = 1);

/// Prints the final report: human summary, or exactly one JSON object.
void print_report(const CommonOptions& o, const Report& r);

/// One registered subcommand.
struct Command {
  std::string name;
  std::string summary;
  /// Adds options to `cmd`; returns the action run after parsing.
  std::function<std::function<void()>(CLI::App& cmd)> setup;
};

std::vector<Command>& registry();

/// A demo entry: runs one solver on a generated planted problem and returns
/// its report (used by `kfactor demo`).
struct Demo {
  std::string name;
  std::function<Report(std::uint64_t seed)> run;
};
std::vector<Demo>& demo_registry();

struct Registrar {
  explicit Registrar(Command c) { registry().push_back(std::move(c)); }
  explicit Registrar(Demo d) { demo_registry().push_back(std::move(d)); }
};

}  // namespace kfactor::cli
