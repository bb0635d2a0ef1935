// kfactor: the command-line driver. Parses, then hands over to the selected
// subcommand; maps kfactor's error kinds to exit codes 2 (usage), 3 (input)
// and 4 (runtime).
#include "cli.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <charconv>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>

#include <mpi.h>
#endif

namespace {

std::string version_text() {
  const auto b = kfactor::build_info();
  auto yn = [](bool v) { return v ? "yes" : "no"; };
  return "kfactor " + b.version + " (Kokkos " + b.kokkos_version + "; spaces " + b.execution_spaces + "; default " +
         b.default_space + "; Kokkos Kernels " + yn(b.kokkos_kernels) + ", CBLAS " + yn(b.cblas) + ", MPI " +
         yn(b.mpi) + ", NCCL " + yn(b.nccl) + ", HDF5 " + yn(b.hdf5) + ")";
}

/// Kokkos' integer options, with the values kfactor accepts: Kokkos aborts
/// (or OpenMP exhausts memory on thread stacks) on 0, negative or absurd
/// values, so they are refused before Kokkos::initialize with exit 2.
struct KokkosIntOption {
  std::string_view name;
  long long lo, hi;
};
// 1024 threads is more than any node's hardware threads today; a device id
// past 1023 is a typo (Kokkos itself checks the id against the devices present).
constexpr KokkosIntOption kokkos_int_options[] = {{"--kokkos-num-threads", 1, 1024}, {"--kokkos-device-id", 0, 1023}};

/// Throws UsageError naming the option and its allowed range when a
/// --kokkos-* argument is out of range or malformed.
void check_kokkos_argument(std::string_view arg) {
  const auto eq = arg.find('=');
  const std::string_view name = arg.substr(0, eq);
  for (const auto& o : kokkos_int_options) {
    if (name != o.name) continue;
    const std::string range =
        std::string(o.name) + " must be an integer in [" + std::to_string(o.lo) + ", " + std::to_string(o.hi) + "]";
    if (eq == std::string_view::npos) throw kfactor::UsageError(range + ", given as " + std::string(o.name) + "=N");
    const std::string_view text = arg.substr(eq + 1);
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v < o.lo || v > o.hi)
      throw kfactor::UsageError(range + ", got '" + std::string(text) + "'");
  }
  if (name == "--kokkos-map-device-id-by") {
    const std::string_view v = eq == std::string_view::npos ? std::string_view{} : arg.substr(eq + 1);
    if (v != "mpi_rank" && v != "random")
      throw kfactor::UsageError("--kokkos-map-device-id-by must be mpi_rank or random, got '" + std::string(v) + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kfactor: matrix factorization on Kokkos (NMF/ALO-NMF, ALS/BALS, Boolean MF/CuBin, manifold NMF/CUMNMF, "
      "tiled SDDMM).\nRun `kfactor COMMAND --help` for a command's options. Options that start with --kokkos- go to "
      "Kokkos (--kokkos-help lists them), e.g. --kokkos-map-device-id-by=mpi_rank under mpiexec."};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  std::function<void()> action;
  std::vector<std::pair<CLI::App*, std::function<void()>>> actions;
  for (auto& command : kfactor::cli::registry()) {
    auto* sub = app.add_subcommand(command.name, command.summary);
    actions.emplace_back(sub, command.setup(*sub));
  }
  // --kokkos-* options (e.g. --kokkos-map-device-id-by=mpi_rank,
  // --kokkos-num-threads=N) go to Kokkos, everything else to the commands.
  std::vector<char*> kokkos_args{argv[0]}, command_args{argv[0]};
  for (int i = 1; i < argc; ++i)
    (std::string_view(argv[i]).rfind("--kokkos-", 0) == 0 ? kokkos_args : command_args).push_back(argv[i]);
  static char disable_warnings[] = "--kokkos-disable-warnings";
  kokkos_args.push_back(disable_warnings);
  kokkos_args.push_back(nullptr);  // argv[argc]: Kokkos moves the terminator along with the arguments it removes
  try {
    app.parse(static_cast<int>(command_args.size()), command_args.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  [[maybe_unused]] CLI::App* command = nullptr;
  for (auto& [sub, act] : actions)
    if (sub->parsed()) {
      action = act;
      command = sub;
    }
  try {
    for (std::size_t i = 1; i < kokkos_args.size() - 1; ++i) check_kokkos_argument(kokkos_args[i]);
  } catch (const kfactor::UsageError& e) {
    std::fprintf(stderr, "kfactor: error: %s\n", e.what());
    return e.exit_code();
  }

  int code = 0;
  [[maybe_unused]] int world = 1;
  int world_rank = 0;
#if defined(KFACTOR_HAVE_MPI)
  int mpi_initialized = 0;
  MPI_Initialized(&mpi_initialized);
  if (!mpi_initialized) MPI_Init(nullptr, nullptr);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  // Ranks that run different command lines (--distributed or --checkpoint on
  // one rank only, another subcommand) would enter different collectives and
  // hang: settle the whole command line first, by option name.
  if (world > 1) {
    try {
      kfactor::cli::agree_command_line(MPI_COMM_WORLD, kfactor::cli::canonical_command_line(*command));
    } catch (const kfactor::Error& e) {
      if (world_rank == 0) std::fprintf(stderr, "kfactor: error: %s\n", e.what());
      MPI_Finalize();
      return e.exit_code();
    }
  }
#endif
  // Kokkos throws when the device cannot be initialized (no GPU, out of
  // device memory, an address-space limit): a clear error, not an abort.
  try {
    int kokkos_argc = static_cast<int>(kokkos_args.size()) - 1;
    Kokkos::initialize(kokkos_argc, kokkos_args.data());
  } catch (const std::exception& e) {
    const std::string what = std::string("cannot initialize Kokkos: ") + e.what();
#if defined(KFACTOR_HAVE_MPI)
    if (world > 1) kfactor::distributed::abort_job(MPI_COMM_WORLD, 4, what);
    MPI_Finalize();
#endif
    std::fprintf(stderr, "kfactor: error: %s\n", what.c_str());
    return 4;
  }
  kfactor::cli::install_interrupt_handlers();
  std::string error;
  bool agreed = false;
  try {
    action();
  } catch (const kfactor::Error& e) {
#if defined(KFACTOR_HAVE_MPI)
    agreed = kfactor::distributed::is_agreed(e);
#endif
    error = e.what();
    code = e.exit_code();
  } catch (const std::bad_alloc&) {
    error = "out of memory";
    code = 4;
  } catch (const std::exception& e) {
    error = e.what();
    code = 4;
  }
#if defined(KFACTOR_HAVE_MPI)
  // An error that only this rank may hold leaves the others waiting in a
  // collective that this rank will never enter: end the whole job, with
  // this error's code, instead of hanging it.
  if (code != 0 && world > 1 && !agreed) kfactor::distributed::abort_job(MPI_COMM_WORLD, code, error);
#endif
  // An error every rank throws alike (distributed::agree, require_same) is
  // printed by rank 0 only, and every rank ends normally with its code.
  if (code != 0 && (!agreed || world_rank == 0)) std::fprintf(stderr, "kfactor: error: %s\n", error.c_str());
  // Interrupted: the command stopped at its next iteration and wrote its
  // final checkpoint and report; the exit code tells the caller which signal.
  if (code == 0 && kfactor::cli::interrupt_signal() != 0) code = 128 + kfactor::cli::interrupt_signal();
  Kokkos::finalize();
#if defined(KFACTOR_HAVE_MPI)
  MPI_Finalize();
#endif
  return code;
}
