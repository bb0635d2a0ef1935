// Measures this machine's two ceilings on every enabled backend: stream
// bandwidth (a large device-to-device copy, bytes read + written) and the
// GEMM rate of kfactor::gemm (whatever vendor path it dispatches to), in
// float and double. Every other benchmark's efficiency is a fraction of these.
//
//   bench_peaks --help prints the options.
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/gemm.hpp>

#include "common/bench.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

namespace {
using namespace kfactor;

template <class Space>
void measure(std::size_t mib, int n) {
  if (is_host_space_v<Space>) mib = std::min<std::size_t>(mib, 512);
  const Space exec;
  using Mem = typename Space::memory_space;
  {
    const std::size_t count = mib * (1u << 20) / sizeof(double);
    Kokkos::View<double*, Mem> a("a", count), b("b", count);
    Kokkos::deep_copy(exec, a, 1.0);
    const double t = bench::median_seconds(exec, [&] { Kokkos::deep_copy(exec, b, a); }, 10, 2);
    Report r;
    r.command = "peak_copy";
    r.backend = backend_name<Space>();
    r.rows = static_cast<std::int64_t>(count);
    r.seconds = t;
    r.metrics.set("gbps", 2.0 * count * sizeof(double) / t / 1e9);
    bench::emit(r, {{"kernel", "peak"}, {"case", "copy"}});
  }
  auto gemm_rate = [&](auto zero) {
    using T = decltype(zero);
    DenseMatrix<T, Mem> A("A", n, n), B("B", n, n), C("C", n, n);
    fill_uniform(exec, A, 1, RngStream::user, T(-1), T(1));
    fill_uniform(exec, B, 2, RngStream::user, T(-1), T(1));
    const double t =
        bench::median_seconds(exec, [&] { gemm(exec, Trans::none, Trans::none, T(1), A, B, T(0), C); }, 5, 1);
    Report r;
    r.command = "peak_gemm";
    r.backend = backend_name<Space>();
    r.precision = sizeof(T) == 4 ? "float" : "double";
    r.rows = r.cols = n;
    r.seconds = t;
    r.metrics.set("gflops", 2.0 * n * double(n) * n / t / 1e9);
    bench::emit(
        r, {{"kernel", "peak"}, {"case", "gemm"}, {"path", gemm_path<Space, decltype(A), decltype(B), decltype(C)>()}});
  };
  if (is_host_space_v<Space>) n = std::min(n, 2048);  // host GEMMs are ~1000x slower
  gemm_rate(float{});
  gemm_rate(double{});
}

template <class... Spaces>
void measure_all(std::tuple<Spaces...>*, std::size_t mib, int n) {
  (measure<Spaces>(mib, n), ...);
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_peaks [--mib N] [--gemm N]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  std::size_t mib = 512;
  int n = 2048;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib"))
      mib = std::stoul(argv[++i]);
    else if (!std::strcmp(argv[i], "--gemm"))
      n = std::stoi(argv[++i]);
  }
  measure_all(static_cast<kfactor::EnabledExecutionSpaces*>(nullptr), mib, n);
  return 0;
}
