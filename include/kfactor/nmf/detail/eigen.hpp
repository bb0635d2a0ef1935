#pragma once
/// \file
/// The small dense eigensolver of NNDSVD's randomized SVD (nmf_impl.hpp,
/// randomized_svd): the cyclic Jacobi method for a symmetric n x n matrix
/// on the host, in double. n is the rank plus the oversampling (a few
/// dozen to about a thousand), so O(n^3) per sweep is small next to the
/// products with A, and kfactor needs no LAPACK.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace kfactor::nmf::detail {

/// Eigenvalues (descending) and eigenvectors of the symmetric n x n matrix
/// `a` (row-major; destroyed). vecs is n x n row-major with eigenvector k
/// in column k. Sweeps until the off-diagonal mass is below 1e-30 of the
/// total (double rounding) or 100 sweeps (Jacobi converges quadratically:
/// 6 to 10 sweeps in practice).
inline void symmetric_eigen(std::vector<double> a, int n, std::vector<double>& vals, std::vector<double>& vecs) {
  std::vector<double> v(std::size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) v[std::size_t(i) * n + i] = 1.0;
  auto A = [&](int i, int j) -> double& { return a[std::size_t(i) * n + j]; };
  double total = 0.0;
  for (double x : a) total += x * x;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) off += A(i, j) * A(i, j);
    if (off <= 1e-30 * total || off == 0.0) break;
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = A(p, q);
        if (apq == 0.0) continue;
        // The rotation that zeroes (p, q) (Golub and Van Loan, Alg. 8.4.1).
        const double theta = (A(q, q) - A(p, p)) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < n; ++k) {
          const double akp = A(k, p), akq = A(k, q);
          A(k, p) = c * akp - s * akq;
          A(k, q) = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {
          const double apk = A(p, k), aqk = A(q, k);
          A(p, k) = c * apk - s * aqk;
          A(q, k) = s * apk + c * aqk;
        }
        for (int k = 0; k < n; ++k) {
          double& vkp = v[std::size_t(k) * n + p];
          double& vkq = v[std::size_t(k) * n + q];
          const double x = vkp, y = vkq;
          vkp = c * x - s * y;
          vkq = s * x + c * y;
        }
      }
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int i, int j) { return A(i, i) > A(j, j); });
  vals.assign(n, 0.0);
  vecs.assign(std::size_t(n) * n, 0.0);
  for (int k = 0; k < n; ++k) {
    vals[k] = A(order[k], order[k]);
    for (int i = 0; i < n; ++i) vecs[std::size_t(i) * n + k] = v[std::size_t(i) * n + order[k]];
  }
}

}  // namespace kfactor::nmf::detail
