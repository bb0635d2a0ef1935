// A downstream application: random factors, a relative error, a GEMM.
#include <kfactor/kfactor.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  const Space exec;
  kfactor::DenseMatrix<double> W("W", 20, 3), Ht("Ht", 10, 3), A("A", 20, 10);
  kfactor::fill_uniform(exec, W, 1, kfactor::RngStream::factor_w, 0.0, 1.0);
  kfactor::fill_uniform(exec, Ht, 1, kfactor::RngStream::factor_h, 0.0, 1.0);
  kfactor::gemm(exec, kfactor::Trans::none, kfactor::Trans::transpose, 1.0, W, Ht, 0.0, A);
  kfactor::fill_uniform(exec, W, 2, kfactor::RngStream::factor_w, 0.0, 1.0);
  std::printf("relative_error=%.6f\n", kfactor::relative_error(exec, A, W, Ht));
  return 0;
}
