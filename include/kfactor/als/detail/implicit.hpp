#pragma once
/// \file
/// The pieces of implicit-feedback ALS (Hu, Koren, Volinsky, ICDM 2008; see
/// als.hpp) that explicit ALS does not have:
///  - the confidence weights w = c - 1 of the observed entries
///    (ConfidenceWeight; the traversal structures hold w instead of r);
///  - the conjugate-gradient half-step (cg_half_step): a few CG steps per
///    row from the current factor row, batched over all rows, its matrix
///    A_u = G + lambda_u I + Y^T W_u Y applied as a GEMM with the Gram
///    G = Y^T Y, an SDDMM (y_i . p_u at the observed entries, scaled by w)
///    and an SpMM (the weighted sum of the y_i of each row);
///  - the implicit objective's data term without the dense m x n sum
///    (implicit_observed_sum, gram_trace).
/// The exact (Cholesky) half-step is explicit ALS's build and solve
/// (half_step.hpp) with an ImplicitGram.

#include <kfactor/als/detail/half_step.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/detail/light_weight.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/kernels/gemm.hpp>
#include <kfactor/kernels/spmm.hpp>
#include <kfactor/sddmm/detail/plan_cache.hpp>
#include <kfactor/sddmm/plan.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <vector>

namespace kfactor::als::detail {

/// w = c - 1 of a rating r >= 0: alpha r (linear) or alpha log(1 + r /
/// epsilon) (log). Zero for r = 0: such an entry has preference 0 and
/// confidence 1, like an unobserved one.
struct ConfidenceWeight {
  bool log = false;
  double alpha = 1.0, epsilon = 1.0;
  template <class T>
  KOKKOS_INLINE_FUNCTION T operator()(T r) const {
    return T(log ? alpha * Kokkos::log1p(double(r) / epsilon) : alpha * double(r));
  }
};

/// A copy of R's pattern with the values w = c - 1 (row_map and entries shared).
template <class ExecutionSpace, class T, class MemorySpace>
CsrMatrix<T, MemorySpace> confidence_weights(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                                             ConfidenceWeight cw) {
  Kokkos::View<T*, MemorySpace> w(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::als::weights"),
                                  R.nnz());
  auto r = R.values;
  Kokkos::parallel_for(
      "kfactor::als::weights", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(offset_t e) { w(e) = cw(r(e)); });
  return CsrMatrix<T, MemorySpace>(R.row_map, R.entries, w, R.num_cols);
}

/// The first negative rating of R as "row r, column c is v" (empty: none),
/// and how many there are.
template <class ExecutionSpace, class T, class MemorySpace>
std::pair<std::int64_t, std::string> negative_ratings(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                                                      std::int64_t row_offset = 0) {
  auto vals = R.values;
  std::int64_t count = 0;
  Kokkos::parallel_reduce(
      "kfactor::als::negative", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(offset_t e, std::int64_t& c) { c += vals(e) < T(0) ? 1 : 0; }, count);
  if (count == 0) return {0, ""};
  const auto Rh = kfactor::copy_to<Kokkos::HostSpace>(R);
  for (ordinal_t i = 0; i < Rh.num_rows(); ++i)
    for (offset_t e = Rh.row_map(i); e < Rh.row_map(i + 1); ++e)
      if (Rh.values(e) < T(0))
        return {count, "user " + std::to_string(row_offset + i) + ", item " + std::to_string(Rh.entries(e)) + " is " +
                           number_text(double(Rh.values(e)))};
  return {count, ""};
}

/// The InputError of implicit ALS on negative ratings (`first` as
/// negative_ratings gives it; empty on ranks that hold none).
inline InputError negative_rating_error(std::int64_t count, const std::string& first) {
  return InputError("implicit ALS: " + std::to_string(count) + " negative rating" + (count > 1 ? "s" : "") +
                    (first.empty() ? std::string() : " (the first: rating of " + first + ")") +
                    "; implicit feedback needs ratings >= 0, since the confidence 1 + alpha r must be positive");
}

/// G = F^T F (f x f, T) into `G`, allocated on first use.
template <class ExecutionSpace, class T, class MemorySpace>
void factor_gram(const ExecutionSpace& exec, const DenseMatrix<T, MemorySpace>& F,
                 Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& G) {
  const std::size_t f = F.extent(1);
  if (G.extent(0) != f)
    G = Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::als::gram"), f, f);
  if (F.extent(0) == 0) {
    Kokkos::deep_copy(exec, G, T(0));
    return;
  }
  kfactor::gram(exec, F, G);
}

/// G on the host, in double (for a sum over ranks).
template <class T, class MemorySpace>
std::vector<double> gram_to_host(const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& G) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, G);
  std::vector<double> out(h.size());
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) out[i * h.extent(1) + j] = double(h(i, j));
  return out;
}

/// `sum` (f x f, row-major, double) into G.
template <class ExecutionSpace, class T, class MemorySpace>
void gram_from_host(const ExecutionSpace& exec, const std::vector<double>& sum,
                    const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& G) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace{}, G);
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j) h(i, j) = T(sum[i * h.extent(1) + j]);
  Kokkos::deep_copy(exec, G, h);
  exec.fence();
}

/// sum over the observed entries of R of c (1 - d)^2 - d^2 for ratings
/// r > 0 (preference 1), d = x_u . y_i given in `dots` (R's order, an SDDMM
/// on R's pattern); entries with r = 0 (preference 0, confidence 1) add
/// c d^2 - d^2 = 0. With the sum over all entries of d^2 (gram_trace) this
/// is the data term of the implicit objective. Double accumulation.
template <class ExecutionSpace, class T, class MemorySpace>
double implicit_observed_sum(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& R,
                             const Kokkos::View<T*, MemorySpace>& dots, ConfidenceWeight cw) {
  auto values = R.values;
  double out = 0.0;
  Kokkos::parallel_reduce(
      "kfactor::als::implicit_observed", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, R.nnz()),
      KOKKOS_LAMBDA(std::size_t e, double& s) {
        const double r = double(values(e));
        if (!(r > 0.0)) return;
        const double d = double(dots(e));
        const double c = 1.0 + cw(r);
        s += c * (1.0 - d) * (1.0 - d) - d * d;
      },
      out);
  return out;
}

/// trace(Gx Gy) = sum_ij Gx_ij Gy_ij = sum over all (u, i) of (x_u . y_i)^2,
/// from the two Grams (f x f, row-major).
inline double gram_trace(const std::vector<double>& gx, const std::vector<double>& gy) {
  double t = 0.0;
  for (std::size_t k = 0; k < gx.size(); ++k) t += gx[k] * gy[k];
  return t;
}

/// One CG half-step: X_u <- cg_steps conjugate-gradient steps on
/// (G + lambda_u I + Y^T W_u Y) x = sum_{i in u, w_ui > 0} (1 + w_ui) y_i
/// from the current X_u, every row at once. W: this side's confidence
/// weights (rows of X, columns of Y, original ids); count: ratings per row
/// (lambda_u = lambda count_u under nnz weighting; rows without any get the
/// zero vector, as in the exact half-step); G = Y^T Y; spmm_plan: W's SpMM
/// plan at width f. One step costs a GEMM (m x f by f x f), an SDDMM and an
/// SpMM on W's pattern (2 nnz f multiply-adds each) and O(m f) vector work
/// in one kernel; it never forms an f x f matrix per row. On small inputs a
/// step is bound by its launches, so none of them waits for the host.
template <class ExecutionSpace, class T, class MemorySpace>
void cg_half_step(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& W,
                  kfactor::detail::SddmmPlanCache<T, MemorySpace>& plans,
                  const kfactor::SpmmPlan<T, MemorySpace>& spmm_plan, const Kokkos::View<int*, MemorySpace>& count,
                  const DenseMatrix<T, MemorySpace>& Y, const DenseMatrix<T, MemorySpace>& X,
                  const Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace>& G, T lambda, bool weight_nnz, int steps,
                  Workspace<T, MemorySpace>& ws) {
  const std::size_t m = X.extent(0), f = X.extent(1), nnz = W.nnz();
  if (m == 0) return;
  const SddmmPlan<ExecutionSpace, T>* plan = &plans.get(exec, W, int(f));
  auto grow = [&](Kokkos::View<T*, MemorySpace>& v, std::size_t n, const char* label) {
    if (v.extent(0) < n) {
      v = {};
      v = Kokkos::View<T*, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
    }
  };
  try {
    grow(ws.cg_r, m * f, "kfactor::als::cg_r");
    grow(ws.cg_p, m * f, "kfactor::als::cg_p");
    grow(ws.cg_ap, m * f, "kfactor::als::cg_ap");
    grow(ws.cg_rs, m, "kfactor::als::cg_rs");
    grow(ws.cg_values, nnz, "kfactor::als::cg_values");
  } catch (const std::exception& e) {
    throw OutOfMemory("ALS: cannot allocate the conjugate-gradient buffers of " + std::to_string(m) +
                      " rows at f = " + std::to_string(f) + ": " + e.what());
  }
  DenseMatrix<T, MemorySpace> R(ws.cg_r.data(), m, f), P(ws.cg_p.data(), m, f), AP(ws.cg_ap.data(), m, f);
  Kokkos::View<T*, MemorySpace> rs(ws.cg_rs.data(), m), d(ws.cg_values.data(), nnz);
  const CsrMatrix<T, MemorySpace> D(W.row_map, W.entries, d, W.num_cols);
  auto w = W.values;
  using Policy = Kokkos::TeamPolicy<ExecutionSpace>;
  using Team = typename Policy::member_type;
  const int team = is_host_space_v<ExecutionSpace> ? 1 : 32;
  const int fi = int(f);

  // AP = G P + W o (P Y^T) Y; the update kernel adds lambda_u P.
  auto apply = [&](const DenseMatrix<T, MemorySpace>& Pin, const DenseMatrix<T, MemorySpace>& out) {
    (*plan)(exec, Pin, Y, d, true);
    kfactor::gemm(exec, Trans::none, Trans::none, T(1), Pin, G, T(0), out);
    kfactor::spmm(exec, spmm_plan, T(1), D, Y, T(1), out);
  };

  // R = b - A X with b = sum (1 + w)[w > 0] y_i: the SDDMM's w (x.y)
  // subtracted from (1 + w)[w > 0] at each entry, one SpMM, then
  // - (G + lambda_u I) X. Rows without ratings (no entries, so the SDDMM and
  // SpMM never read their X) get the zero vector and no steps.
  (*plan)(exec, X, Y, d, true);
  Kokkos::parallel_for(
      "kfactor::als::cg_rhs", kfactor::detail::light_weight(Kokkos::RangePolicy<ExecutionSpace>(exec, 0, nnz)),
      KOKKOS_LAMBDA(std::size_t e) {
        const T we = w(e);
        d(e) = (we > T(0) ? T(1) + we : T(0)) - d(e);
      });
  kfactor::spmm(exec, spmm_plan, T(1), D, Y, T(0), R);
  kfactor::gemm(exec, Trans::none, Trans::none, T(-1), X, G, T(1), R);
  Kokkos::parallel_for(
      "kfactor::als::cg_start", kfactor::detail::light_weight(Policy(exec, std::int64_t(m), team)),
      KOKKOS_LAMBDA(const Team& tm) {
        const std::size_t u = std::size_t(tm.league_rank());
        const bool rated = count(u) > 0;
        const T lu = weight_nnz ? lambda * T(count(u)) : lambda;
        T s = T(0);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(tm, fi),
            [&](int k, T& acc) {
              if (!rated) X(u, k) = T(0);
              const T rk = rated ? R(u, k) - lu * X(u, k) : T(0);
              R(u, k) = rk;
              P(u, k) = rk;
              acc += rk * rk;
            },
            s);
        Kokkos::single(Kokkos::PerTeam(tm), [&] { rs(u) = s; });
      });
  for (int step = 0; step < steps; ++step) {
    apply(P, AP);
    // Per row, with Ap = AP + lambda_u p: alpha = r.r / p.Ap; x += alpha p;
    // r -= alpha Ap; p = r + beta p. A row that has converged (r.r = 0, or
    // p.Ap <= 0 from rounding) stays.
    Kokkos::parallel_for(
        "kfactor::als::cg_update", kfactor::detail::light_weight(Policy(exec, std::int64_t(m), team)),
        KOKKOS_LAMBDA(const Team& tm) {
          const std::size_t u = std::size_t(tm.league_rank());
          const T lu = weight_nnz ? lambda * T(count(u)) : lambda;
          T pap = T(0);
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(tm, fi), [&](int k, T& acc) { acc += P(u, k) * (AP(u, k) + lu * P(u, k)); }, pap);
          const T rs_old = rs(u);
          if (!(pap > T(0)) || !(rs_old > T(0))) return;
          const T a = rs_old / pap;
          T rs_new = T(0);
          Kokkos::parallel_reduce(
              Kokkos::TeamThreadRange(tm, fi),
              [&](int k, T& acc) {
                X(u, k) += a * P(u, k);
                const T rk = R(u, k) - a * (AP(u, k) + lu * P(u, k));
                R(u, k) = rk;
                acc += rk * rk;
              },
              rs_new);
          const T beta = rs_new / rs_old;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, fi), [&](int k) { P(u, k) = R(u, k) + beta * P(u, k); });
          tm.team_barrier();
          Kokkos::single(Kokkos::PerTeam(tm), [&] { rs(u) = rs_new; });
        });
  }
  exec.fence();
}

}  // namespace kfactor::als::detail
