#include "cli.hpp"

#include <kfactor/core/error.hpp>
#include <kfactor/io/report_json.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#endif

#include <algorithm>
#include <csignal>
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

void add_output_options(CLI::App& cmd, OutputOptions& o) {
  cmd.add_flag("--json", o.json, "print exactly one JSON object on stdout at the end (progress goes to stderr)");
  cmd.add_flag("-q,--quiet", o.quiet, "no progress lines");
}

void add_common_options(CLI::App& cmd, CommonOptions& o, bool input_required) {
  auto* in = cmd.add_option("-i,--input", o.input, "input matrix file");
  if (input_required) in->required();
  cmd.add_option("--format", o.format,
                 "input format: auto|mm|edges|ratings|bmf|dense|h5csr (auto guesses from the file; HDF5 by its "
                 "signature)")
      ->capture_default_str();
  cmd.add_option("-k,--rank", o.rank, "factorization rank K")->capture_default_str()->check(CLI::PositiveNumber);
  cmd.add_option("-n,--iters", o.iters, "maximum iterations")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd.add_option("--seed", o.seed, "random seed (same seed, same factors on one backend)")->capture_default_str();
  cmd.add_option("-o,--output", o.output, "write factors as PREFIX_<name>.mtx");
  cmd.add_option("--precision", o.precision, "float|double")
      ->capture_default_str()
      ->check(CLI::IsMember({"float", "double"}));
  add_output_options(cmd, o);
}

namespace {
// Written by the signal handler: volatile sig_atomic_t is the type a
// handler may portably store to.
volatile std::sig_atomic_t arrived_signal = 0;

// A second signal ends the process at once, for a user who does not want to
// wait for the final checkpoint.
void on_interrupt(int signal) {
  if (arrived_signal != 0) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
  arrived_signal = signal;
}
}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
}

int interrupt_signal() { return arrived_signal; }

Observer interrupt_observer() {
  return [](const IterationEvent&) { return interrupt_signal() != 0 ? ObserverAction::stop : ObserverAction::proceed; };
}

Observer progress_printer(const OutputOptions& o, int every) {
  if (o.quiet) return interrupt_observer();
  FILE* out = o.json ? stderr : stdout;
  return chain(interrupt_observer(), [out, every](const IterationEvent& e) {
    if (every <= 1 || e.iteration % every == 0 || e.iteration == 1) {
      std::fprintf(out, "iter %6d  %8.3fs", e.iteration, e.seconds);
      for (const auto& [name, value] : e.metrics->items) std::fprintf(out, "  %s %.6g", name.c_str(), value);
      std::fprintf(out, "\n");
      std::fflush(out);
    }
    return ObserverAction::proceed;
  });
}

#if defined(KFACTOR_HAVE_MPI)
Observer progress_printer(const OutputOptions& o, int every, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  OutputOptions printing = o;
  printing.quiet = o.quiet || rank != 0;
  Observer print = progress_printer(printing, every);
  return [print = std::move(print), comm](const IterationEvent& e) {
    // The local printer's own interrupt check is folded into the reduction.
    int stop = print(e) == ObserverAction::stop ? 1 : 0, any = 0;
    MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, comm);
    return any != 0 ? ObserverAction::stop : ObserverAction::proceed;
  };
}
#endif

void print_report(const OutputOptions& o, const Report& r) {
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

std::vector<std::pair<std::string, std::string>> canonical_command_line(const CLI::App& command) {
  std::vector<std::pair<std::string, std::string>> line{{"the subcommand", command.get_name()}};
  for (const CLI::Option* opt : command.get_options()) {
    const std::string name = opt->get_name();
    if (opt == command.get_help_ptr() || name == "--input" || name == "--test-input") continue;
    std::string text;
    for (const auto& r : opt->results()) text += (text.empty() ? "" : " ") + r;
    // An option left at its default and one given its default value agree.
    line.emplace_back(name, opt->count() == 0 ? opt->get_default_str() : (text.empty() ? "(given)" : text));
  }
  return line;
}

#if defined(KFACTOR_HAVE_MPI)
namespace {
// Names and values joined by NUL, which no command-line argument contains.
std::string serialize(const std::vector<std::pair<std::string, std::string>>& line) {
  std::string s;
  for (const auto& [name, text] : line) (s += name) += '\0', (s += text) += '\0';
  return s;
}

std::vector<std::pair<std::string, std::string>> deserialize(const std::string& s) {
  std::vector<std::pair<std::string, std::string>> line;
  std::size_t p = 0;
  while (p < s.size()) {
    const auto a = s.find('\0', p), b = s.find('\0', a + 1);
    line.emplace_back(s.substr(p, a - p), s.substr(a + 1, b - a - 1));
    p = b + 1;
  }
  return line;
}

std::string shown(const std::string& text) { return text.empty() ? "none" : "'" + text + "'"; }
}  // namespace

void agree_command_line(MPI_Comm comm, const std::vector<std::pair<std::string, std::string>>& line) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string root = serialize(line);
  long long size = static_cast<long long>(root.size());
  MPI_Bcast(&size, 1, MPI_LONG_LONG, 0, comm);
  root.resize(static_cast<std::size_t>(size));
  MPI_Bcast(root.data(), static_cast<int>(size), MPI_CHAR, 0, comm);
  // agree(): the lowest rank that differs from rank 0 names the first option
  // where it does, and every rank throws that message.
  distributed::agree(comm, [&] {
    const auto theirs = deserialize(root);
    for (std::size_t i = 0; i < std::max(line.size(), theirs.size()); ++i) {
      const std::string name = i < line.size() ? line[i].first : theirs[i].first;
      const std::string mine = i < line.size() && line[i].first == name ? line[i].second : "";
      const std::string zero = i < theirs.size() && theirs[i].first == name ? theirs[i].second : "";
      if (mine != zero)
        throw InputError("ranks disagree on " + name + ": rank 0 has " + shown(zero) + ", rank " +
                         std::to_string(rank) + " has " + shown(mine));
    }
  });
}
#endif

}  // namespace kfactor::cli
