// NMF of a Matrix Market file, the way an application embeds it: read the
// file, move it to the default execution space, factor it with ALO-NMF, stop
// on the application's own rule, and write W and H.
//
//   nmf_matrix_market A.mtx [K] [OUTPUT_PREFIX]
#include <kfactor/kfactor.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s A.mtx [K] [OUTPUT_PREFIX]\n", argv[0]);
    return 2;
  }
  try {
    const Kokkos::DefaultExecutionSpace exec;
    // Host triplets, checked line by line (InputError names FILE:LINE),
    // then a CSR in the execution space's memory.
    const auto coo = kfactor::io::read_matrix<double>(argv[1]);
    const auto A = kfactor::to_csr(exec, coo);

    kfactor::nmf::Options options;
    options.rank = argc > 2 ? std::stoi(argv[2]) : 3;
    options.algorithm = kfactor::nmf::Algorithm::alo;
    options.stop.max_iterations = 200;
    options.stop.tolerance = 1e-6;  // relative change of the error
    options.validate();

    // The observer sees every iteration; an application can log or stop here.
    auto progress = [](const kfactor::IterationEvent& e) {
      if (e.iteration % 50 == 0)
        std::printf("iteration %d: relative_error %.6f\n", e.iteration, e.metrics->get("relative_error"));
      return kfactor::ObserverAction::proceed;
    };
    const auto problem = kfactor::nmf::make_problem(exec, A);
    auto [state, report] = kfactor::nmf::solve(exec, problem, options, progress);

    std::printf("%d iterations (%s), relative_error=%.6f\n", state.iteration, report.stop_reason.c_str(),
                state.history.last().get("relative_error"));
    if (argc > 3) {
      kfactor::io::write_matrix_market_array(std::string(argv[3]) + "_W.mtx", state.W);
      kfactor::io::write_matrix_market_array(std::string(argv[3]) + "_Ht.mtx", state.Ht);
    }
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
