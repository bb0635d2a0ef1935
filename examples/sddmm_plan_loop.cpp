// An SDDMM plan reused inside an application loop: the pattern S is fixed
// (a graph, the observed entries of a model), A and B change every step.
// The plan analyses S once; every apply() then runs without allocation.
//
//   sddmm_plan_loop [S.mtx] [K] [steps]
#include <kfactor/kfactor.hpp>
#include <kfactor/sddmm/generate.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    using Space = Kokkos::DefaultExecutionSpace;
    const Space exec;
    const int K = argc > 2 ? std::stoi(argv[2]) : 32;
    const int steps = argc > 3 ? std::stoi(argv[3]) : 20;

    // S from a file, or a generated power-law pattern (20,000 x 10,000, ~400,000 nonzeros).
    const auto coo = argc > 1 ? kfactor::io::read_matrix<float>(argv[1])
                              : kfactor::power_law_pattern<float>({20000, 10000, 400000, 1.0, 50.0, 1.0, 20.0, 1});
    const auto S = kfactor::to_csr(exec, coo);

    kfactor::DenseMatrix<float, Space::memory_space> A("A", S.num_rows(), K), B("B", S.num_cols, K);
    Kokkos::View<float*, Space::memory_space> out("out", S.nnz());

    const auto t0 = std::chrono::steady_clock::now();
    const kfactor::SddmmPlan<Space, float, float> plan(exec, S, K);  // once
    exec.fence();
    const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    double total = 0.0, checksum = 0.0;
    for (int step = 0; step < steps; ++step) {
      // The application updates its dense operands (here: fresh random values).
      kfactor::fill_uniform(exec, A, 100 + step, kfactor::RngStream::factor_w, -1.0f, 1.0f);
      kfactor::fill_uniform(exec, B, 100 + step, kfactor::RngStream::factor_h, -1.0f, 1.0f);
      const auto t = std::chrono::steady_clock::now();
      plan.apply(exec, A, B, out);  // out_e = s_e <A_i, B_j>
      exec.fence();
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
      float sum = 0;
      Kokkos::parallel_reduce(
          "sum", Kokkos::RangePolicy<Space>(exec, 0, out.extent(0)),
          KOKKOS_LAMBDA(std::size_t e, float& s) { s += out(e); }, sum);
      checksum += sum;
    }
    std::printf("S %lld x %lld, %lld nnz, K=%d: plan %.3f s, %d applies %.3f ms each, %.1f GFLOP/s, checksum %.4g\n",
                (long long)S.num_rows(), (long long)S.num_cols, (long long)S.nnz(), K, build, steps,
                1e3 * total / steps, 2.0 * K * double(S.nnz()) * steps / total * 1e-9, checksum);
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
