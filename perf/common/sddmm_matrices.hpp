#pragma once
// The SDDMM benchmarks' inputs (bench_sddmm, bench_sddmm_mpi): the peers'
// matrices M1 (NYTimes-like), M2 (web-Google-like) and M3 (facebook_combined)
// with values uniform in [-1, 1) (the peers measured patterns; values do not
// change the work).
//
// M1/M2: the .rows.bin/.cols.bin files of ../shared/peers/sddmm_matrices.py
// when `bin_dir` has them (the exact peer instances), else the C++ port of
// that generator (kfactor/sddmm/generate.hpp: same parameters and
// distribution, a different random instance). `scale` divides M, N and nnz
// (CPU runs; the generated form only).
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/sddmm/generate.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

namespace kfactor::bench {

struct SddmmMatrixSource {
  std::string bin_dir = ".peers";  ///< where the peers' M1/M2 .bin files may be
  std::string facebook;            ///< facebook_combined.txt (else .peers/ or ../shared/data/snap/)
  double scale = 1.0;
};

namespace detail {
inline bool read_bin(const std::string& path, std::vector<ordinal_t>& v) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto bytes = static_cast<std::size_t>(in.tellg());
  v.resize(bytes / sizeof(ordinal_t));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(ordinal_t)));
  return static_cast<bool>(in);
}

inline void fill_values(CooMatrix<float>& c) {
  const CounterRng rng(3, RngStream::user);
  c.values.resize(c.rows.size());
  for (std::size_t e = 0; e < c.values.size(); ++e) c.values[e] = rng.uniform<float>(e, -1.f, 1.f);
}
}  // namespace detail

/// "m1", "m2" or "m3" as a COO matrix; `source` says where it came from.
inline CooMatrix<float> load_sddmm_matrix(const std::string& which, const SddmmMatrixSource& a, std::string& source) {
  CooMatrix<float> c;
  if (which == "m3") {
    std::vector<std::string> candidates = {a.facebook, ".peers/facebook_combined.txt",
                                           "../shared/data/snap/facebook_combined.txt"};
    for (const auto& path : candidates) {
      if (path.empty()) continue;
      if (!std::ifstream(path)) continue;
      c = io::read_edges<float>(path);  // square, duplicate edges merged
      source = path;
      detail::fill_values(c);
      return c;
    }
    throw InputError("facebook_combined.txt not found (use --facebook)");
  }
  if (which != "m1" && which != "m2") throw UsageError("unknown SDDMM matrix '" + which + "' (m1, m2, m3)");
  const std::string name = which == "m1" ? "m1_nytimes_like" : "m2_webgoogle_like";
  PowerLawSpec spec = peer_matrix_spec(name);
  if (a.scale == 1.0 && detail::read_bin(a.bin_dir + "/" + name + ".rows.bin", c.rows) &&
      detail::read_bin(a.bin_dir + "/" + name + ".cols.bin", c.cols) && c.rows.size() == c.cols.size()) {
    c.num_rows = spec.m;
    c.num_cols = spec.n;
    source = a.bin_dir + "/" + name + ".{rows,cols}.bin (numpy instance)";
    detail::fill_values(c);
    return c;
  }
  spec.m = std::max<std::int64_t>(1, std::int64_t(spec.m / a.scale));
  spec.n = std::max<std::int64_t>(1, std::int64_t(spec.n / a.scale));
  spec.target = std::max<std::int64_t>(1, std::int64_t(spec.target / a.scale));
  c = power_law_pattern<float>(spec);
  source = "generated " + name + (a.scale != 1.0 ? " / " + std::to_string(a.scale) : "") + " (C++ port)";
  detail::fill_values(c);
  return c;
}

/// A rows x K factor in TI with entries uniform in [-1, 1), drawn in fp32
/// (so that fp32 and reduced-precision runs use the same values, rounded):
/// RngStream::factor_w for A, factor_h for B.
template <class TI, class ExecutionSpace>
DenseMatrix<TI, typename ExecutionSpace::memory_space> random_sddmm_factor(const ExecutionSpace& exec,
                                                                           std::int64_t rows, int K, RngStream stream) {
  using Mem = typename ExecutionSpace::memory_space;
  DenseMatrix<float, Mem> x("factor_fp32", rows, K);
  fill_uniform(exec, x, 1, stream, -1.f, 1.f);
  if constexpr (std::is_same_v<TI, float>) {
    return x;
  } else {
    DenseMatrix<TI, Mem> y(Kokkos::view_alloc(Kokkos::WithoutInitializing, "factor"), rows, K);
    Kokkos::parallel_for(
        "kfactor::bench::factor_to_input_precision",
        Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {y.extent(0), y.extent(1)}),
        KOKKOS_LAMBDA(std::size_t i, std::size_t k) { y(i, k) = static_cast<TI>(x(i, k)); });
    exec.fence();
    return y;
  }
}

/// Renumbers c's columns by decreasing nonzero count (ties by index): column
/// 0 becomes the densest. The naive equal-width split then puts the heavy
/// columns on the first ranks (the paper's NYTimes case); as generated, the
/// column order is random and both splits look alike.
template <class T>
void sort_columns_by_degree(CooMatrix<T>& c) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(c.num_cols), 0);
  for (auto j : c.cols) ++count[static_cast<std::size_t>(j)];
  std::vector<ordinal_t> order(static_cast<std::size_t>(c.num_cols));
  std::iota(order.begin(), order.end(), ordinal_t(0));
  std::stable_sort(order.begin(), order.end(), [&](ordinal_t a, ordinal_t b) { return count[a] > count[b]; });
  std::vector<ordinal_t> new_id(order.size());
  for (std::size_t r = 0; r < order.size(); ++r) new_id[static_cast<std::size_t>(order[r])] = static_cast<ordinal_t>(r);
  for (auto& j : c.cols) j = new_id[static_cast<std::size_t>(j)];
}

}  // namespace kfactor::bench
