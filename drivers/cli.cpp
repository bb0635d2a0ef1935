#include "cli.hpp"

#include <kfactor/core/error.hpp>
#include <kfactor/io/report_json.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#endif

#include <kfactor/io/read.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string_view>
#include <system_error>

namespace kfactor::cli {

namespace {

/// A token as messages show it: quoted, at most 40 characters, other bytes
/// than printable ASCII as \xHH.
std::string shown(std::string_view t) {
  std::string out = "'";
  for (std::size_t i = 0; i < std::min<std::size_t>(t.size(), 40); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (t.size() > 40 ? "...'" : "'");
}

/// `t` as a real: false when it is no number; a magnitude beyond double's
/// gives +-inf, one below its smallest the nearest value (0 or subnormal).
bool parse_real(std::string_view t, double& v) {
  if (t.size() > 1 && t[0] == '+' && t[1] != '+' && t[1] != '-') t.remove_prefix(1);
  if (t.empty()) return false;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v, std::chars_format::general);
  if (r.ptr != t.data() + t.size()) return false;
  if (r.ec == std::errc::result_out_of_range) v = std::strtod(std::string(t).c_str(), nullptr);
  return r.ec == std::errc() || r.ec == std::errc::result_out_of_range;
}

/// What a refused real was, as messages print it: the number, short; a
/// spelled-out overflow is not "inf" to the user who typed 1e999.
std::string real_shown(std::string_view t, double v) {
  if (std::isinf(v) && t.find_first_of("iI") == std::string_view::npos)
    return std::string(v < 0 ? "a number below -" : "a number above ") + "1.8e+308";
  return number_text(v);
}

/// The declared range of a numeric option, as --help-options-json lists it.
struct NumberSpec {
  bool integer = false;
  nlohmann::json lo, hi;
  bool lo_open = false, hi_open = false;
  std::string interval, note, requirement;
};

std::map<const CLI::Option*, NumberSpec>& number_specs() {
  static std::map<const CLI::Option*, NumberSpec> specs;
  return specs;
}

template <class T>
NumberSpec spec_of(const Range<T>& r) {
  return {std::is_integral_v<T>, r.lo, r.hi, r.lo_open, r.hi_open, r.interval(), r.note, r.requirement()};
}

/// The value of a text check_number accepted (and made canonical).
template <class T>
T checked_value(std::string text, const Range<T>& range) {
  if (!check_number(text, range).empty()) throw UsageError("unchecked number " + text);
  T v{};
  if constexpr (std::is_integral_v<T>)
    std::from_chars(text.data(), text.data() + text.size(), v);
  else
    std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  return v;
}

/// The range as --help shows it after the type: "[0, 1) (0: off)".
template <class T>
std::string help_range(const Range<T>& r) {
  std::string s = r.interval();
  if (s == "any") s = std::is_integral_v<T> ? "any integer" : "finite";
  if (r.note[0] != '\0') s += std::string(" (") + r.note + ")";
  return s;
}

template <class T>
CLI::Validator range_validator(const Range<T>& range) {
  return CLI::Validator([range](std::string& text) { return check_number(text, range); }, help_range(range), "range");
}

}  // namespace

template <class T>
std::string check_number(std::string& text, const Range<T>& range) {
  const std::string_view t = text;
  auto refuse = [&](const std::string& got) { return range.requirement() + ", got " + got; };
  T v{};
  if constexpr (std::is_integral_v<T>) {
    const std::string_view digits = t.size() > 1 && t[0] == '+' && t[1] != '-' ? t.substr(1) : t;
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
      // Not written as an integer of T: a real that is one (1e6), or the
      // reason it is none.
      double d = 0;
      if (!parse_real(t, d)) return refuse(shown(t));
      if (!std::isfinite(d) || d != std::floor(d)) return refuse(real_shown(t, d));
      const auto wide = static_cast<long double>(d);
      if (wide < static_cast<long double>(range.lo) || wide > static_cast<long double>(range.hi))
        return refuse(real_shown(t, d));
      // Beyond 2^53 a real may not be the integer its digits say.
      if (std::fabs(d) > 9007199254740992.0)
        return refuse(real_shown(t, d) + " (write integers beyond 2^53 in digits)");
      v = static_cast<T>(d);
    }
    if (!range.contains(v)) return refuse(number_text(v));
    text = std::to_string(v);
  } else {
    double d = 0;
    if (!parse_real(t, d)) return refuse(shown(t));
    v = static_cast<T>(d);
    if (!range.contains(v)) return refuse(real_shown(t, d));
    text = number_text(v);
  }
  return {};
}

template <class T>
CLI::Option* add_number(CLI::App& cmd, const std::string& names, T& value, const std::string& help,
                        const Range<T>& range) {
  auto* opt = cmd.add_option(
      names,
      [&value, range](const CLI::results_t& r) {
        value = checked_value(r.back(), range);
        return true;
      },
      help);
  opt->type_name(std::is_integral_v<T> ? "INT" : "FLOAT")->check(range_validator(range));
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isnan(value)) opt->default_str(number_text(value));
  } else {
    opt->default_str(number_text(value));
  }
  number_specs()[opt] = spec_of(range);
  return opt;
}

template <class T>
CLI::Option* add_numbers(CLI::App& cmd, const std::string& names, std::vector<T>& values, const std::string& help,
                         const Range<T>& range) {
  auto* opt = cmd.add_option(
      names,
      [&values, range](const CLI::results_t& r) {
        values.clear();
        for (const auto& text : r) values.push_back(checked_value(text, range));
        return true;
      },
      help);
  opt->type_name(std::is_integral_v<T> ? "INT" : "FLOAT")
      ->expected(1, CLI::detail::expected_max_vector_size)
      ->delimiter(',')
      ->check(range_validator(range));
  number_specs()[opt] = spec_of(range);
  return opt;
}

#define KFACTOR_CLI_NUMBER(T)                                                                                  \
  template std::string check_number<T>(std::string&, const Range<T>&);                                         \
  template CLI::Option* add_number<T>(CLI::App&, const std::string&, T&, const std::string&, const Range<T>&); \
  template CLI::Option* add_numbers<T>(CLI::App&, const std::string&, std::vector<T>&, const std::string&,     \
                                       const Range<T>&);
KFACTOR_CLI_NUMBER(int)
KFACTOR_CLI_NUMBER(std::int64_t)
KFACTOR_CLI_NUMBER(std::uint64_t)
KFACTOR_CLI_NUMBER(double)
#undef KFACTOR_CLI_NUMBER

CLI::Validator one_of(std::vector<std::string> choices, std::function<void(const std::string&)> accepts) {
  std::string set;
  for (const auto& c : choices) set += (set.empty() ? "{" : ",") + c;
  set += "}";
  return CLI::Validator(
      [choices, accepts, set](std::string& text) -> std::string {
        if (std::find(choices.begin(), choices.end(), text) != choices.end()) return {};
        if (accepts) {
          try {
            accepts(text);
            return {};
          } catch (const Error&) {
            // not an alias either: refused below
          }
        }
        return shown(text) + " is none of " + set;
      },
      set, "one_of");
}

CLI::Validator format_choices() {
  std::vector<std::string> names;
  for (auto f : {io::Format::automatic, io::Format::matrix_market, io::Format::edges, io::Format::ratings,
                 io::Format::bmf, io::Format::dense, io::Format::h5csr})
    names.emplace_back(io::format_name(f));
  return one_of(names, [](const std::string& s) { (void)io::parse_format(s); });
}

namespace {

/// Kokkos' integer options that kfactor checks, with the values it accepts:
/// 1024 threads is more than any node's hardware threads today; a device id
/// past 1023 is a typo (Kokkos itself checks the id against the devices
/// present).
struct KokkosIntOption {
  const char* name;
  Range<int> range;
};
constexpr KokkosIntOption kokkos_int_options[] = {{"--kokkos-num-threads", {.lo = 1, .hi = 1024}},
                                                  {"--kokkos-device-id", {.lo = 0, .hi = 1023}}};
const std::vector<std::string> kokkos_device_mappings = {"mpi_rank", "random"};

/// The choices of the validators of `opt` that list them ("{a,b,c}": CLI11's
/// IsMember and one_of), empty if none.
std::vector<std::string> choices_of(CLI::Option* opt) {
  for (int i = 0;; ++i) {
    const CLI::Validator* v = nullptr;
    try {
      v = opt->get_validator(i);
    } catch (const CLI::OptionNotFound&) {
      return {};
    }
    const std::string d = v->get_description();
    if (d.size() < 2 || d.front() != '{' || d.back() != '}') continue;
    std::vector<std::string> out;
    std::size_t b = 1;
    while (b < d.size()) {
      const std::size_t e = std::min(d.find(',', b), d.size() - 1);
      out.push_back(d.substr(b, e - b));
      b = e + 1;
    }
    return out;
  }
}

nlohmann::json range_json(const NumberSpec& s) {
  return {{"lo", s.lo},         {"hi", s.hi},     {"lo_open", s.lo_open},        {"hi_open", s.hi_open},
          {"text", s.interval}, {"note", s.note}, {"requirement", s.requirement}};
}

nlohmann::json option_json(CLI::Option* opt) {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& n : opt->get_snames()) names.push_back("-" + n);
  for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
  nlohmann::json j = {{"name", opt->get_name()},
                      {"names", names},
                      {"positional", !opt->nonpositional()},
                      {"required", opt->get_required()},
                      {"default", opt->get_default_str()},
                      {"many", opt->get_items_expected_max() > 1}};
  if (const auto it = number_specs().find(opt); it != number_specs().end()) {
    j["kind"] = it->second.integer ? "integer" : "real";
    j["range"] = range_json(it->second);
  } else if (opt->get_expected_max() == 0) {
    j["kind"] = "flag";
  } else if (auto choices = choices_of(opt); !choices.empty()) {
    j["kind"] = "choice";
    j["choices"] = choices;
  } else {
    const std::string type = opt->get_type_name();
    // A number without a declared range: listed as such, so that a test
    // over this listing finds it.
    j["kind"] = type.starts_with("INT") || type.starts_with("UINT") || type.starts_with("FLOAT") ? "number" : "text";
  }
  return j;
}

nlohmann::json command_json(CLI::App& cmd) {
  nlohmann::json options = nlohmann::json::array();
  for (CLI::Option* opt : cmd.get_options([](CLI::Option* o) { return !o->get_group().empty(); }))
    if (opt != cmd.get_help_ptr()) options.push_back(option_json(opt));
  return {{"command", cmd.get_name()}, {"options", options}};
}

}  // namespace

void add_options_listing(CLI::App& app) {
  // Triggered when parsed: before required options are missed and before
  // the other options' callbacks.
  const std::string help = "print every option (kind, range or choices, default) as one JSON object";
  std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
  for (CLI::App* sub : subs)
    sub->add_flag_callback(
           "--help-options-json",
           [sub] {
             std::cout << command_json(*sub).dump() << std::endl;
             throw CLI::Success();
           },
           help)
        ->group("")
        ->trigger_on_parse();
  app.add_flag_callback(
         "--help-options-json",
         [&app, subs] {
           nlohmann::json j = command_json(app);
           j["command"] = "kfactor";
           for (const auto& o : kokkos_int_options)
             j["options"].push_back({{"name", o.name},
                                     {"names", nlohmann::json::array({o.name})},
                                     {"kind", "integer"},
                                     {"range", range_json(spec_of(o.range))},
                                     {"form", std::string(o.name) + "=N"}});
           j["options"].push_back({{"name", "--kokkos-map-device-id-by"},
                                   {"names", nlohmann::json::array({"--kokkos-map-device-id-by"})},
                                   {"kind", "choice"},
                                   {"choices", kokkos_device_mappings},
                                   {"form", "--kokkos-map-device-id-by=VALUE"}});
           nlohmann::json names = nlohmann::json::array();
           for (const CLI::App* sub : subs) names.push_back(sub->get_name());
           j["commands"] = names;
           std::cout << j.dump() << std::endl;
           throw CLI::Success();
         },
         help)
      ->group("")
      ->trigger_on_parse();
}

void check_kokkos_argument(std::string_view arg) {
  const auto eq = arg.find('=');
  const std::string_view name = arg.substr(0, eq);
  for (const auto& o : kokkos_int_options) {
    if (name != o.name) continue;
    if (eq == std::string_view::npos)
      throw UsageError(std::string(o.name) + " " + o.range.requirement() + ", given as " + o.name + "=N");
    std::string text(arg.substr(eq + 1));
    if (const std::string why = check_number(text, o.range); !why.empty())
      throw UsageError(std::string(o.name) + " " + why);
  }
  if (name == "--kokkos-map-device-id-by") {
    const std::string_view v = eq == std::string_view::npos ? std::string_view{} : arg.substr(eq + 1);
    if (std::find(kokkos_device_mappings.begin(), kokkos_device_mappings.end(), v) == kokkos_device_mappings.end())
      throw UsageError("--kokkos-map-device-id-by must be mpi_rank or random, got " + shown(v));
  }
}

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

void add_matrix_read_options(CLI::App& cmd, MatrixReadOptions& o) {
  cmd.add_option("--duplicates", o.duplicates,
                 "duplicate (row, col) policy: auto (error with values, merge for patterns)|error|sum|last")
      ->capture_default_str()
      ->check(
          one_of({"auto", "error", "sum", "last"}, [](const std::string& s) { (void)io::parse_duplicate_policy(s); }));
  cmd.add_flag("--symmetrize", o.symmetrize, "edge lists: add (v, u) for every edge (u, v)");
  cmd.add_flag("--one-based", o.one_based, "edge lists: ids start at 1");
}

void add_common_options(CLI::App& cmd, CommonOptions& o, const Range<int>& rank_range, const Range<int>& iters_range) {
  cmd.add_option("-i,--input", o.input, "input matrix file")->required();
  cmd.add_option("--format", o.format, "input format (auto guesses from the file; HDF5 by its signature)")
      ->capture_default_str()
      ->check(format_choices());
  add_number(cmd, "-k,--rank", o.rank, "factorization rank K", rank_range);
  add_number(cmd, "-n,--iters", o.iters, "maximum iterations", iters_range);
  add_number(cmd, "--seed", o.seed, "random seed (same seed, same factors on one backend)", seed_range);
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
namespace {
/// The testing hook KFACTOR_TEST_FAIL_AT=RANK:ITERATION (docs/testing.md):
/// where the distributed observer throws on one rank only, to test that such
/// a failure ends the whole job. {-1, -1}: unset.
std::pair<int, int> injected_failure() {
  const char* text = std::getenv("KFACTOR_TEST_FAIL_AT");
  if (text == nullptr) return {-1, -1};
  const std::string_view v(text);
  const auto colon = v.find(':');
  int at[2] = {-1, -1};
  const std::string_view parts[2] = {v.substr(0, colon), colon == v.npos ? std::string_view{} : v.substr(colon + 1)};
  for (int i = 0; i < 2; ++i) {
    const auto [end, ec] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), at[i]);
    if (parts[i].empty() || ec != std::errc{} || end != parts[i].data() + parts[i].size() || at[i] < 0)
      throw UsageError("KFACTOR_TEST_FAIL_AT must be RANK:ITERATION (two integers >= 0), got '" + std::string(v) + "'");
  }
  return {at[0], at[1]};
}
}  // namespace

Observer progress_printer(const OutputOptions& o, int every, MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  OutputOptions printing = o;
  printing.quiet = o.quiet || rank != 0;
  Observer print = progress_printer(printing, every);
  const auto [fail_rank, fail_iteration] = injected_failure();
  return [print = std::move(print), comm, fail = fail_rank == rank ? fail_iteration : -1](const IterationEvent& e) {
    // The local printer's own interrupt check is folded into the reduction.
    int stop = print(e) == ObserverAction::stop ? 1 : 0, any = 0;
    MPI_Allreduce(&stop, &any, 1, MPI_INT, MPI_MAX, comm);
    // After the reduction, so that the other ranks go on to the iteration's
    // next collectives (a checkpoint, the next epoch) and wait there.
    if (e.iteration == fail)
      throw RuntimeFailure("failure injected by KFACTOR_TEST_FAIL_AT at iteration " + std::to_string(fail));
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
