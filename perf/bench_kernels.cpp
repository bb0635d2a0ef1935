// The two product kernels the factorizations are built on, on every enabled
// backend, at the shapes the solvers use them:
//   gemm: kfactor::gemm (vendor dispatch) for the NMF products A X (M x N
//         times N x K), the transposed product A^T X and the K x K Gram X^T X;
//   spmm: kfactor::spmm on a power-law CSR matrix (perf/common/power_law.hpp)
//         with row-major operands (the kernel kfactor's solvers take) and
//         column-major ones (Kokkos Kernels' path where it is found), and on
//         the stored transpose (the sparse NMF's A^T W).
// Time (median), GFLOP/s and GB/s (the least traffic: every operand read or
// written once) per (kernel, shape, K, precision, layout).
//
//   bench_kernels --help prints the options.
#include "common/bench.hpp"
#include "common/power_law.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/gemm.hpp>
#include <kfactor/kernels/spmm.hpp>

#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {
using namespace kfactor;

struct Args {
  std::vector<std::string> gemm{"2000x1000"}, spmm{"6000x3000x150000"};
  std::vector<int> ks{16, 64, 256};
  std::string precision = "both";
  int reps = 10;
};

/// The shapes of a --gemm or --spmm list ("none": no case), each `parts`
/// positive integers joined by 'x'.
std::vector<std::string> shapes(const std::string& option, const std::string& v, std::size_t parts) {
  if (v == "none") return {};
  auto out = bench::split(v, ',');
  for (const auto& shape : out) {
    const auto d = bench::split(shape, 'x');
    bool ok = d.size() == parts;
    for (const auto& x : d) ok = ok && !x.empty() && x.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) {
      std::fprintf(stderr, "bench_kernels: %s takes %s shapes (or none), got '%s'\n", option.c_str(),
                   parts == 2 ? "MxN" : "VxDxNNZ", shape.c_str());
      std::exit(2);
    }
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_kernels: %s needs a value\n", k.c_str());
      std::exit(2);
    }
    const std::string v = argv[++i];
    if (k == "--gemm")
      a.gemm = shapes(k, v, 2);
    else if (k == "--spmm")
      a.spmm = shapes(k, v, 3);
    else if (k == "--ks") {
      a.ks.clear();
      for (const auto& x : bench::split(v, ',')) a.ks.push_back(std::stoi(x));
    } else if (k == "--precision")
      a.precision = v;
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else {
      std::fprintf(stderr, "bench_kernels: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

template <class Space, class T>
void emit(const char* kernel, const std::string& shape, const std::string& variant, std::int64_t rows,
          std::int64_t cols, std::int64_t nnz, int K, double seconds, double flops, double bytes) {
  Report r;
  r.command = std::string("kernel_") + kernel;
  r.backend = backend_name<Space>();
  r.precision = sizeof(T) == 4 ? "float" : "double";
  r.rows = rows;
  r.cols = cols;
  r.nnz = nnz;
  r.rank = K;
  r.seconds = seconds;
  r.metrics.set("gflops", flops / seconds / 1e9);
  r.metrics.set("gbps", bytes / seconds / 1e9);
  r.info["variant"] = variant;
  bench::emit(r, {{"kernel", kernel}, {"case", shape}});
  std::fprintf(stderr, "%-7s %-6s %-6s %-22s %-16s K=%-4d %10.3f ms %9.1f GFLOP/s %8.1f GB/s\n",
               backend_name<Space>().c_str(), r.precision.c_str(), kernel, shape.c_str(), variant.c_str(), K,
               1e3 * seconds, flops / seconds / 1e9, bytes / seconds / 1e9);
}

template <class Space, class T>
void gemm_cases(const Space& exec, const Args& a) {
  using Mem = typename Space::memory_space;
  for (const auto& shape : a.gemm) {
    const auto d = bench::split(shape, 'x');
    const int M = std::stoi(d.at(0)), N = std::stoi(d.at(1));
    DenseMatrix<T, Mem> A("A", M, N);
    fill_uniform(exec, A, 1, RngStream::user, T(0), T(1));
    for (int K : a.ks) {
      DenseMatrix<T, Mem> X("X", N, K), Y("Y", M, K), G("G", K, K);
      fill_uniform(exec, X, 2, RngStream::user, T(0), T(1));
      fill_uniform(exec, Y, 3, RngStream::user, T(0), T(1));
      const double e = sizeof(T);
      double t =
          bench::median_seconds(exec, [&] { gemm(exec, Trans::none, Trans::none, T(1), A, X, T(0), Y); }, a.reps, 2);
      emit<Space, T>("gemm", shape, "A*X", M, N, 0, K, t, 2.0 * M * N * K,
                     e * (double(M) * N + double(N) * K + double(M) * K));
      t = bench::median_seconds(
          exec, [&] { gemm(exec, Trans::transpose, Trans::none, T(1), A, Y, T(0), X); }, a.reps, 2);
      emit<Space, T>("gemm", shape, "At*Y", M, N, 0, K, t, 2.0 * M * N * K,
                     e * (double(M) * N + double(N) * K + double(M) * K));
      t = bench::median_seconds(
          exec, [&] { gemm(exec, Trans::transpose, Trans::none, T(1), Y, Y, T(0), G); }, a.reps, 2);
      emit<Space, T>("gemm", shape, "gram Yt*Y", M, K, 0, K, t, 2.0 * M * K * double(K),
                     e * (double(M) * K + double(K) * K));
    }
  }
}

template <class Space, class T>
void spmm_cases(const Space& exec, const Args& a) {
  using Mem = typename Space::memory_space;
  for (const auto& shape : a.spmm) {
    const auto d = bench::split(shape, 'x');
    const auto coo = bench::power_law<T>(std::stoll(d.at(0)), std::stoll(d.at(1)), std::stoll(d.at(2)), 1);
    const auto A = to_csr(exec, coo);
    const auto At = transpose(exec, A);
    const std::int64_t m = A.num_rows(), n = A.num_cols, nnz = std::int64_t(A.nnz());
    for (int K : a.ks) {
      const double flops = 2.0 * double(nnz) * K;
      const double csr = double(nnz) * (sizeof(T) + sizeof(ordinal_t)) + double(m + 1) * sizeof(offset_t);
      const double bytes = csr + double(m + n) * K * sizeof(T);
      DenseMatrix<T, Mem> X("X", n, K), Y("Y", m, K);
      fill_uniform(exec, X, 2, RngStream::user, T(0), T(1));
      fill_uniform(exec, Y, 3, RngStream::user, T(0), T(1));
      double t = bench::median_seconds(exec, [&] { spmm(exec, T(1), A, X, T(0), Y); }, a.reps, 2);
      emit<Space, T>("spmm", shape, "A*X " + spmm_path<decltype(X), decltype(Y)>(), m, n, nnz, K, t, flops, bytes);
      t = bench::median_seconds(exec, [&] { spmm(exec, T(1), At, Y, T(0), X); }, a.reps, 2);
      emit<Space, T>("spmm", shape, "At*Y " + spmm_path<decltype(Y), decltype(X)>(), n, m, nnz, K, t, flops, bytes);
      Kokkos::View<T**, Kokkos::LayoutLeft, Mem> XL("XL", n, K), YL("YL", m, K);
      Kokkos::deep_copy(exec, XL, X);
      t = bench::median_seconds(exec, [&] { spmm(exec, T(1), A, XL, T(0), YL); }, a.reps, 2);
      emit<Space, T>("spmm", shape, "A*X col-major " + spmm_path<decltype(XL), decltype(YL)>(), m, n, nnz, K, t, flops,
                     bytes);
    }
  }
}

template <class Space>
void run_space(const Args& a) {
  const Space exec;
  if (a.precision != "double") {
    gemm_cases<Space, float>(exec, a);
    spmm_cases<Space, float>(exec, a);
  }
  if (a.precision != "float") {
    gemm_cases<Space, double>(exec, a);
    spmm_cases<Space, double>(exec, a);
  }
}

template <class... Spaces>
void run_all(std::tuple<Spaces...>*, const Args& a) {
  (run_space<Spaces>(a), ...);
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_kernels [--gemm MxN[,MxN...]|none] [--spmm VxDxNNZ[,...]|none] [--ks 16,64,256]
              [--precision float|double|both] [--reps 10]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  const Args a = parse(argc, argv);
  run_all(static_cast<kfactor::EnabledExecutionSpaces*>(nullptr), a);
  return 0;
}
