// checkpoint_toy_run CKPT FINAL ITERS [M N K]: runs the toy solver to ITERS
// iterations, saving CKPT after every iteration; starts from CKPT when it
// exists (a restart); writes the final state to FINAL. The kill test runs it
// as a child and kills it with SIGKILL at random points.
#include "checkpoint/toy_solver.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s CKPT FINAL ITERS [M N K]\n", argv[0]);
    return 2;
  }
  const std::string ckpt = argv[1], final_path = argv[2];
  namespace toy = kfactor::test::toy;
  toy::Options o;
  o.max_iterations = std::atoi(argv[3]);
  const int m = argc > 4 ? std::atoi(argv[4]) : 300;
  const int n = argc > 5 ? std::atoi(argv[5]) : 200;
  o.rank = argc > 6 ? std::atoi(argv[6]) : 8;
  int code = 0;
  Kokkos::initialize(Kokkos::InitializationSettings().set_disable_warnings(true));
  try {
    using Exec = Kokkos::DefaultExecutionSpace;
    Exec exec;
    const auto A = toy::planted<double>(exec, m, n, 4, 5);
    kfactor::CheckpointMeta meta;
    meta.solver = "toy";
    meta.options = kfactor::option_values(o);
    meta.input = kfactor::fingerprint(exec, A);
    meta.precision = "double";
    meta.rank = o.rank;
    meta.backend = kfactor::backend_name<Exec>();
    auto state = toy::init<double>(exec, A, o);
    if (std::filesystem::exists(ckpt)) kfactor::load_checkpoint(ckpt, state, meta);
    toy::solve<double>(exec, A, o, state, kfactor::checkpoint_observer(ckpt, 1, state, meta));
    kfactor::save_checkpoint(final_path, state, meta);
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "checkpoint_toy_run: %s\n", e.what());
    code = e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_toy_run: %s\n", e.what());
    code = 1;
  }
  Kokkos::finalize();
  return code;
}
