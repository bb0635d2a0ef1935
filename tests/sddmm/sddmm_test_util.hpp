#pragma once
// Shared helpers of the SDDMM tests: random patterns with power-law rows,
// negative values and explicit zeros; host float64 references.
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#include "common/test_spaces.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace kfactor::test {

/// Random m x n pattern: row i gets about `avg` nonzeros scaled by a power
/// law (a few rows long enough to be split), every 5th row empty, columns
/// >= n - n/10 never used (empty columns); values in [-1, 1) with about one
/// in eight an explicit zero.
inline CooMatrix<double> random_sddmm_pattern(int m, int n, double avg, std::uint64_t seed, bool empties = true) {
  CooMatrix<double> coo;
  coo.num_rows = m;
  coo.num_cols = n;
  const CounterRng rng(seed, RngStream::user);
  const int ncols_used = empties && n >= 10 ? n - n / 10 : n;
  std::uint64_t ctr = 0;
  for (int i = 0; i < m; ++i) {
    if (empties && i % 5 == 4) continue;
    const double u = rng.uniform(ctr++);
    int len = static_cast<int>(avg * 0.3 / std::max(u, 0.02));
    len = std::min(len, ncols_used);
    std::set<int> cols;
    while (static_cast<int>(cols.size()) < len) {
      const double v = rng.uniform(ctr++);
      cols.insert(static_cast<int>(v * v * ncols_used) % ncols_used);  // skewed columns
    }
    for (int j : cols) {
      coo.rows.push_back(i);
      coo.cols.push_back(j);
      const double x = rng.uniform(ctr++);
      coo.values.push_back(x < 0.125 ? 0.0 : 2 * rng.uniform(ctr++) - 1);
    }
  }
  return coo;
}

/// Host float64 reference and the error bound sum_k |s a_ik b_jk|.
struct HostReference {
  std::vector<double> value, bound;
};

/// random_sddmm_pattern's matrix as a CSR of T in exec's memory space.
template <class T, class ExecutionSpace>
CsrMatrix<T, typename ExecutionSpace::memory_space> random_sddmm_csr(const ExecutionSpace& exec, int m, int n,
                                                                     double avg, std::uint64_t seed,
                                                                     bool empties = true) {
  const auto c = random_sddmm_pattern(m, n, avg, seed, empties);
  CooMatrix<T> ct{c.num_rows, c.num_cols, c.rows, c.cols, {}};
  for (double v : c.values) ct.values.push_back(T(v));
  return to_csr(exec, ct);
}

template <class T, class Mem, class AV, class BV>
HostReference host_reference(const CsrMatrix<T, Mem>& S, const AV& A, const BV& B, bool scaled) {
  auto h = copy_to<Kokkos::HostSpace>(S);
  auto hA = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, A);
  auto hB = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, B);
  using TI = typename AV::non_const_value_type;
  using Acc = detail::sddmm_acc_t<TI>;
  HostReference r;
  r.value.resize(S.nnz());
  r.bound.resize(S.nnz());
  const int K = static_cast<int>(hA.extent(1));
  for (int i = 0; i < S.num_rows(); ++i)
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e) {
      const int j = h.entries(e);
      double s = 0, b = 0;
      for (int k = 0; k < K; ++k) {
        const double p = double(static_cast<Acc>(hA(i, k))) * double(static_cast<Acc>(hB(j, k)));
        s += p;
        b += std::abs(p);
      }
      const double sc = scaled ? double(h.values(e)) : 1.0;
      r.value[e] = sc * s;
      r.bound[e] = std::abs(sc) * b;
    }
  return r;
}

/// Max over nonzeros of |out - ref| / (K eps bound + tiny); <= 1 passes.
template <class OV>
double scaled_error(const OV& out, const HostReference& ref, int K, double eps) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  double worst = 0;
  for (std::size_t e = 0; e < ref.value.size(); ++e) {
    const double tol = 2.0 * K * eps * ref.bound[e] + 1e-30;
    const double err = std::abs(double(h(e)) - ref.value[e]) / tol;
    if (!(err <= worst)) worst = err;  // NaN propagates
  }
  return worst;
}

/// Dense K-column inputs in [-1, 1) of element type TI (drawn as double,
/// then converted).
template <class TI, class ExecutionSpace>
DenseMatrix<TI, typename ExecutionSpace::memory_space> random_dense(const ExecutionSpace& exec, int rows, int k,
                                                                    std::uint64_t seed) {
  using Mem = typename ExecutionSpace::memory_space;
  DenseMatrix<double, Mem> X0("X0", rows, k);
  fill_uniform(exec, X0, seed, RngStream::user, -1.0, 1.0);
  DenseMatrix<TI, Mem> X("X", rows, k);
  Kokkos::parallel_for(
      "cast", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {rows, k}),
      KOKKOS_LAMBDA(int i, int q) { X(i, q) = static_cast<TI>(static_cast<float>(X0(i, q))); });
  exec.fence();
  if constexpr (std::is_same_v<TI, double>) Kokkos::deep_copy(X, X0);
  return X;
}

/// A ../shared/data/snap edge list read by kfactor::io::read_edges (square,
/// 0-based, duplicate edges merged, a leading count line skipped), with
/// values 1 + (u + v) % 3 - 1.5 (negatives, all nonzero) in place of the
/// pattern's ones. An empty matrix when the file is missing.
inline CooMatrix<double> read_snap_edges(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  auto coo = io::read_edges<double>(path);
  for (std::size_t e = 0; e < coo.nnz(); ++e) coo.values[e] = double((coo.rows[e] + coo.cols[e]) % 3) - 1.5;
  return coo;
}

}  // namespace kfactor::test
