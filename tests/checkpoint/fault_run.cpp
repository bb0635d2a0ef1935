// checkpoint_fault_run PATH collective|gather [FAIL_RANK], under mpiexec: a
// distributed save of a row-partitioned state to PATH. With FAIL_RANK, that
// rank throws in the middle of the save (after the first field was written,
// so a collective save has its temporary file on disk), while the other
// ranks go on into the next field's collectives and wait there: a failure
// that only one rank sees. Errors end the program as in the kfactor driver:
// an agreed one with its exit code on every rank, any other through
// distributed::abort_job.
#include <kfactor/config.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <mpi.h>
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace {

using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

constexpr std::int64_t rows = 4000;  // W: 4000 x 8 doubles, 256 KB over the ranks
constexpr int K = 8, n = 50;

struct FaultyState {
  DenseMatrix<double, Mem> W;  // this rank's rows
  DenseMatrix<double, Mem> H;  // replicated
  int iteration = 3;
  bool fail = false;  // throw after listing W
  template <class F>
  void visit(F&& f) {
    f("W", W);
    if (fail) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      throw RuntimeFailure("failure injected on rank " + std::to_string(rank) + " while saving the checkpoint");
    }
    f("H", H);
    f("iteration", iteration);
  }
};

void run(const std::string& path, DistributedIo io, int fail_rank) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const RowBlock mine = distributed::balanced_row_block(rows, size, rank);
  const std::int64_t next = rank + 1 < size ? distributed::balanced_row_block(rows, size, rank + 1).first_row : rows;
  FaultyState s;
  s.W = DenseMatrix<double, Mem>("W", next - mine.first_row, K);
  s.H = DenseMatrix<double, Mem>("H", n, K);
  fill_uniform(Exec{}, s.W, 11 + static_cast<std::uint64_t>(rank), RngStream::factor_w, 0.0, 1.0);
  fill_uniform(Exec{}, s.H, 11, RngStream::factor_h, 0.0, 1.0);
  Exec{}.fence();
  s.fail = rank == fail_rank;
  CheckpointMeta meta;
  meta.solver = "fault";
  meta.rank = K;
  meta.precision = "double";
  meta.input = InputFingerprint{rows, n, rows * n, 5};
  save_checkpoint(MPI_COMM_WORLD, path, s, meta, RowBlocks{{"W", mine}}, io);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string mode = argc > 2 ? argv[2] : "";
  if (argc < 3 || (mode != "collective" && mode != "gather")) {
    std::fprintf(stderr, "usage: %s PATH collective|gather [FAIL_RANK]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  int rank = 0, code = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Kokkos::initialize(Kokkos::InitializationSettings().set_disable_warnings(true));
  try {
    run(argv[1], mode == "collective" ? DistributedIo::collective : DistributedIo::gather,
        argc > 3 ? std::atoi(argv[3]) : -1);
  } catch (const Error& e) {
    if (!distributed::is_agreed(e)) distributed::abort_job(MPI_COMM_WORLD, e.exit_code(), e.what());
    if (rank == 0) std::fprintf(stderr, "kfactor: error: %s\n", e.what());
    code = e.exit_code();
  } catch (const std::exception& e) {
    distributed::abort_job(MPI_COMM_WORLD, 4, e.what());
  }
  Kokkos::finalize();
  MPI_Finalize();
  return code;
}
