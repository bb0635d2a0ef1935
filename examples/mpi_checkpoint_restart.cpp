// A distributed NMF run with a checkpoint, then a restart from it, as a
// batch job would do across two allocations: the first run stops after 20
// iterations (saving every 10), the second reads the file and continues to
// 40. The checkpoint holds the full factors in the single-rank layout, so
// the second run may use any number of ranks.
//
//   mpiexec -n 2 mpi_checkpoint_restart A.mtx [K] [CHECKPOINT]
#include <kfactor/core/contract.hpp>
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/nmf.hpp>
#include <kfactor/kfactor.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>

namespace dnmf = kfactor::distributed::nmf;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int rc = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    try {
      if (argc < 2) throw kfactor::UsageError("usage: mpi_checkpoint_restart A.mtx [K] [CHECKPOINT]");
      const Kokkos::DefaultExecutionSpace exec;
      const std::string path = argc > 3 ? argv[3] : "mpi_example.h5";
      // Every rank reads the file; make_problem() checks it on every rank and
      // keeps this rank's row and column blocks, balanced by nonzeros.
      const auto A = kfactor::to_csr(exec, kfactor::io::read_matrix<double>(argv[1]));
      const auto problem = dnmf::make_problem(exec, MPI_COMM_WORLD, A);

      kfactor::nmf::Options options;
      options.rank = argc > 2 ? std::stoi(argv[2]) : 3;
      options.validate();
      // What the file records and a restart compares: solver, options that
      // decide the iterates, the input's fingerprint, precision and rank.
      const auto meta = kfactor::checkpoint_meta<double, Kokkos::DefaultExecutionSpace>(
          "nmf", kfactor::option_values(options), kfactor::fingerprint(exec, A), options.rank);

      // First allocation: 20 iterations, a checkpoint every 10.
      options.stop.max_iterations = 20;
      auto state = dnmf::init(exec, problem, options);
      auto saver = kfactor::distributed::checkpoint_observer(MPI_COMM_WORLD, path, 10, state, meta);
      dnmf::resume(exec, problem, options, state, saver);
      const double first = state.history.last().get("relative_error");

      // Second allocation: a fresh state, restored from the file, continued to 40.
      options.stop.max_iterations = 40;
      auto restored = dnmf::init(exec, problem, options);
      kfactor::load_checkpoint(MPI_COMM_WORLD, path, restored, meta, restored.row_blocks());
      const int from = restored.iteration;
      dnmf::resume(exec, problem, options, restored);
      if (rank == 0)
        std::printf("ranks %d: iteration 20 relative_error=%.6f; restarted at %d, iteration %d relative_error=%.6f\n",
                    problem.size, first, from, restored.iteration, restored.history.last().get("relative_error"));
    } catch (const kfactor::Error& e) {
      std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
      rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
