// kfactor: the command-line driver. Parses, then hands over to the selected
// subcommand; maps kfactor's error kinds to exit codes 2 (usage), 3 (input)
// and 4 (runtime).
#include "cli.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/error.hpp>

#include <Kokkos_Core.hpp>

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
  kfactor::cli::add_options_listing(app);
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
    for (std::size_t i = 1; i < kokkos_args.size() - 1; ++i) kfactor::cli::check_kokkos_argument(kokkos_args[i]);
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
