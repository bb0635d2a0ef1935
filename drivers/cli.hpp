#pragma once
// The command-line contract shared by every `kfactor` subcommand: common
// options, progress output, the final human or JSON report, and self-
// registering commands. Commands parse, read, call the library and report;
// no algorithm lives in drivers/.
#include <kfactor/core/range.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>

#include <kfactor/config.hpp>

#include <CLI/CLI.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#endif

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kfactor::cli {

/// Reads `text` as a T in `range` (an integer type takes integers, also
/// written as reals such as 1e6; a real type finite numbers). Returns "" and
/// rewrites `text` to the value's exact canonical form, or says why the
/// value is refused: the range and the value, "must be an integer in [1,
/// 1024], got 1e+20", numbers printed short. Instantiated for int,
/// std::int64_t, std::uint64_t and double.
template <class T>
std::string check_number(std::string& text, const Range<T>& range);

/// Adds an option of one number in `range` to `cmd`: a value that is not a
/// number of T's kind or lies outside the range ends the parse with exit 2,
/// naming the option and the range. The range shows in --help and in
/// --help-options-json; the default is `value`'s (none shown when NaN).
template <class T>
CLI::Option* add_number(CLI::App& cmd, const std::string& names, T& value, const std::string& help,
                        const Range<T>& range);

/// add_number for a list of numbers (one or more values, or a
/// comma-separated list), each in `range`.
template <class T>
CLI::Option* add_numbers(CLI::App& cmd, const std::string& names, std::vector<T>& values, const std::string& help,
                         const Range<T>& range);

/// A validator that takes the names in `choices` (and whatever `accepts`
/// takes without throwing, for a parser's aliases) and refuses any other
/// value with exit 2, listing the choices. --help-options-json lists them.
CLI::Validator one_of(std::vector<std::string> choices, std::function<void(const std::string&)> accepts = {});

/// Adds the hidden flag --help-options-json to `app` and to each of its
/// subcommands: it prints one JSON object describing every option (name,
/// kind, declared range or choices, default) and exits 0, so that tests and
/// tools can discover every option without parsing --help. Call it once all
/// subcommands are set up.
void add_options_listing(CLI::App& app);

/// Throws UsageError naming the option and its allowed values when a
/// --kokkos-* argument that kfactor checks (thread count, device id, device
/// mapping) is malformed or out of range: Kokkos aborts (or OpenMP exhausts
/// memory on thread stacks) on such values, so they are refused before
/// Kokkos::initialize.
void check_kokkos_argument(std::string_view arg);

/// How a command prints its result; every subcommand takes these.
struct OutputOptions {
  bool json = false;   ///< exactly one JSON object on stdout, at the end
  bool quiet = false;  ///< no progress lines
};

/// Adds --json and -q,--quiet to `cmd`: the one place that defines the
/// output flags, so that every subcommand spells and means them alike.
void add_output_options(CLI::App& cmd, OutputOptions& o);

/// How the commands that read any matrix format parse it beyond the format:
/// the duplicate policy and the edge-list switches.
struct MatrixReadOptions {
  std::string duplicates = "auto";
  bool symmetrize = false;
  bool one_based = false;
};

/// Adds --duplicates, --symmetrize and --one-based to `cmd`.
void add_matrix_read_options(CLI::App& cmd, MatrixReadOptions& o);

/// Options every factorization command takes.
struct CommonOptions : OutputOptions {
  std::string input;
  std::string format = "auto";
  std::string output;  ///< prefix for factor files; empty writes none
  int rank = 10;
  int iters = 100;
  std::uint64_t seed = 42;
  std::string precision = "double";
};

/// Adds --input --format --rank --iters --seed --output --precision and the
/// output options (add_output_options) to `cmd` with the given defaults;
/// --rank takes the solver's `rank_range`, --iters its `iters_range`.
void add_common_options(CLI::App& cmd, CommonOptions& o, const Range<int>& rank_range,
                        const Range<int>& iters_range = StopRule::max_iterations_range);

/// The values of --format, as io::parse_format takes them (with its aliases).
CLI::Validator format_choices();

/// Every seed: any 64-bit unsigned integer.
inline constexpr Range<std::uint64_t> seed_range{.lo = 0};
/// Iterations between progress lines (--every) and between checkpoints
/// (--checkpoint-every): any positive count.
inline constexpr Range<int> every_range{.lo = 1};
inline constexpr Range<int> checkpoint_every_range{.lo = 1};

/// The command's observer: prints one progress line per iteration (to
/// stdout, or stderr under --json so stdout carries only the JSON; none with
/// --quiet; `every` thins the lines for long runs), and asks the solver to
/// stop once SIGINT or SIGTERM arrived (see interrupt_observer), so that the
/// command still writes its final checkpoint and report.
Observer progress_printer(const OutputOptions& o, int every = 1);

#if defined(KFACTOR_HAVE_MPI)
/// progress_printer for a run over the ranks of `comm`; every rank calls it
/// and every rank's solver calls it at every iteration (it is collective):
/// rank 0 prints, and all ranks stop together once any rank got SIGINT or
/// SIGTERM (a stop seen by one rank alone would leave the others waiting in
/// the next iteration's collectives).
Observer progress_printer(const OutputOptions& o, int every, MPI_Comm comm);
#endif

/// Prints the final report: human summary, or exactly one JSON object.
void print_report(const OutputOptions& o, const Report& r);

/// Call with the setup_change of the metadata load_checkpoint() returned for
/// --restart: when not empty (the checkpoint was written by another execution
/// space, thread count or number of MPI ranks) prints "kfactor: warning:
/// <setup_change>" on stderr (rank 0 of MPI_COMM_WORLD), whatever --quiet
/// and --json say. Returns setup_change, for note_restart().
std::string warn_restart(const std::string& setup_change);

/// Records a restart in the report: info "restart" (the checkpoint's path)
/// and, when setup_change is not empty, "restart_warning".
void note_restart(Report& report, const std::string& path, const std::string& setup_change);

/// Makes SIGINT and SIGTERM set a flag instead of ending the process (main()
/// calls it once, before the command runs).
void install_interrupt_handlers();

/// The signal that arrived since install_interrupt_handlers(), 0 if none.
int interrupt_signal();

/// Observer that returns stop once interrupt_signal() is set; independent of
/// any solver, chained into every command's observer by progress_printer.
Observer interrupt_observer();

/// The parsed command line of `command` as (name, text) pairs: the
/// subcommand first, then every option by its long name with the text it
/// was given (its default's text when absent, "" when it has none). Files that each rank reads itself (--input,
/// --test-input) are left out: ranks may read node-local copies, and the
/// commands compare what they read by checksum.
std::vector<std::pair<std::string, std::string>> canonical_command_line(const CLI::App& command);

#if defined(KFACTOR_HAVE_MPI)
/// Collective over `comm`: throws InputError (exit 3) on every rank unless
/// every rank holds the same canonical command line; the message names the
/// first option that differs and the two values.
void agree_command_line(MPI_Comm comm, const std::vector<std::pair<std::string, std::string>>& line);
#endif

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
