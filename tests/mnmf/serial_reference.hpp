#pragma once
/// \file
/// A plain serial C++ implementation of the same MNMF algorithm (Algorithm 1
/// of the paper, both factors, both objectives), on std::vector, one thread,
/// no Kokkos. It is the baseline of perf/bench_mnmf.cpp's speedup and the
/// reference the tests compare the Kokkos solver with. Its summation order is
/// the Kokkos solver's on host spaces (team size 1), so the two agree to the
/// last bit there, and to rounding on a device.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kfactor::mnmf::detail {

/// Host CSR on std::vector.
template <class T>
struct SerialCsr {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::size_t> row_map;  ///< rows + 1 (empty for "no graph")
  std::vector<int> entries;
  std::vector<T> values;
};

/// Up/Down buffered Jacobi sweep of X (rows of A) with the other factor Y
/// (both row-major, rank r), graph G (may be empty when lambda == 0) and
/// degrees deg.
template <class T>
void serial_sweep(bool kl, const SerialCsr<T>& A, std::vector<T>& X, const std::vector<T>& Y, int r,
                  const SerialCsr<T>& G, const std::vector<T>& deg, T lambda, T kl_floor, std::vector<T>& up,
                  std::vector<T>& dn) {
  const std::size_t m = static_cast<std::size_t>(A.rows);
  up.assign(m * r, T(0));
  dn.assign(m * r, T(0));
  for (std::size_t i = 0; i < m; ++i) {
    T* u = &up[i * r];
    T* d = &dn[i * r];
    const T* x = &X[i * r];
    for (std::size_t e = A.row_map[i]; e < A.row_map[i + 1]; ++e) {
      const T* y = &Y[std::size_t(A.entries[e]) * r];
      const T v = A.values[e];
      T vt = T(0);
      for (int k = 0; k < r; ++k) vt += x[k] * y[k];
      if (kl) {
        const T ratio = v / (vt > kl_floor ? vt : kl_floor);
        for (int k = 0; k < r; ++k) {
          u[k] += y[k] * ratio;
          d[k] += y[k];
        }
      } else {
        for (int k = 0; k < r; ++k) {
          u[k] += y[k] * v;
          d[k] += y[k] * vt;
        }
      }
    }
  }
  if (lambda != T(0)) {
    std::vector<T> g(r);
    for (std::size_t i = 0; i < m; ++i) {
      std::fill(g.begin(), g.end(), T(0));
      for (std::size_t e = G.row_map[i]; e < G.row_map[i + 1]; ++e) {
        const T p = G.values[e];
        const T* xl = &X[std::size_t(G.entries[e]) * r];
        for (int k = 0; k < r; ++k) g[k] += p * xl[k];
      }
      for (int k = 0; k < r; ++k) {
        up[i * r + k] = up[i * r + k] + lambda * g[k];
        dn[i * r + k] = dn[i * r + k] + lambda * deg[i] * X[i * r + k];
      }
    }
  }
  for (std::size_t p = 0; p < m * std::size_t(r); ++p)
    if (dn[p] > T(0)) X[p] = X[p] * up[p] / dn[p];
}

/// One epoch: W sweep over R (CSR), then H sweep over Rt (CSC) with the new W.
template <class T>
void serial_epoch(bool kl, const SerialCsr<T>& R, const SerialCsr<T>& Rt, std::vector<T>& W, std::vector<T>& H, int r,
                  const SerialCsr<T>& P, const std::vector<T>& q, T lambda_w, const SerialCsr<T>& Pb,
                  const std::vector<T>& qb, T lambda_h, T kl_floor, std::vector<T>& up, std::vector<T>& dn) {
  serial_sweep(kl, R, W, H, r, P, q, lambda_w, kl_floor, up, dn);
  serial_sweep(kl, Rt, H, W, r, Pb, qb, lambda_h, kl_floor, up, dn);
}

/// Row sums of G (q_ii), sized n.
template <class T>
std::vector<T> serial_degrees(const SerialCsr<T>& G, std::size_t n) {
  std::vector<T> q(n, T(0));
  if (G.row_map.empty()) return q;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t e = G.row_map[i]; e < G.row_map[i + 1]; ++e) q[i] += G.values[e];
  return q;
}

}  // namespace kfactor::mnmf::detail
