#pragma once
/// \file
/// SDDMM plans kept by solvers that compute dot products on observed
/// entries: ALS's conjugate-gradient product and its metrics (RMSE, the
/// implicit objective), MNMF's metrics, NMF's masked and beta-loss model. A plan is built once per pattern
/// (its first use) and reused by every later product on that pattern.

#include <kfactor/core/matrix.hpp>
#include <kfactor/sddmm/plan.hpp>

#include <Kokkos_Core.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <vector>

namespace kfactor::detail {

/// An SddmmPlan built for one execution space, kept where only the memory
/// space is known (a solver's plan): the space is checked on every use.
struct ErasedSddmmPlan {
  std::shared_ptr<const void> plan;
  std::type_index space = typeid(void);
  template <class ExecutionSpace, class T>
  static ErasedSddmmPlan make(const ExecutionSpace& exec, const CsrMatrix<T, typename ExecutionSpace::memory_space>& S,
                              int k) {
    return {std::make_shared<const SddmmPlan<ExecutionSpace, T>>(exec, S, k, options()), typeid(ExecutionSpace)};
  }
  /// No finiteness pass over the factors per product: the solvers' metrics
  /// catch a factor that overflowed.
  static SddmmOptions options() {
    SddmmOptions o;
    o.check_inputs = false;
    return o;
  }
  template <class ExecutionSpace, class T>
  [[nodiscard]] const SddmmPlan<ExecutionSpace, T>* get() const {
    return space == typeid(ExecutionSpace) ? static_cast<const SddmmPlan<ExecutionSpace, T>*>(plan.get()) : nullptr;
  }
};

/// The plans of the patterns a solver predicts on, found by the pattern's
/// row offsets and column indices. An entry holds its pattern's views, so
/// their addresses cannot be reused by another pattern while it exists.
template <class T, class MemorySpace>
class SddmmPlanCache {
 public:
  /// The plan for S's pattern and inner dimension k on this space, built on
  /// first use.
  template <class ExecutionSpace>
  const SddmmPlan<ExecutionSpace, T>& get(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& S, int k) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& e : entries_)
      if (e.k == k && e.pattern.row_map.data() == S.row_map.data() && e.pattern.entries.data() == S.entries.data() &&
          e.pattern.num_rows() == S.num_rows() && e.pattern.num_cols == S.num_cols && e.pattern.nnz() == S.nnz())
        if (const auto* p = e.plan.template get<ExecutionSpace, T>()) return *p;
    entries_.push_back({S, k, ErasedSddmmPlan::make(exec, S, k)});
    return *entries_.back().plan.template get<ExecutionSpace, T>();
  }

 private:
  struct Entry {
    CsrMatrix<T, MemorySpace> pattern;
    int k = 0;
    ErasedSddmmPlan plan;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

/// <A_i, B_j> at every stored (i, j) of S, in S's order (a new view), by
/// the cached plan of S's pattern.
template <class ExecutionSpace, class T, class MemorySpace, class AV, class BV>
Kokkos::View<T*, MemorySpace> observed_dots(const ExecutionSpace& exec, SddmmPlanCache<T, MemorySpace>& cache,
                                            const CsrMatrix<T, MemorySpace>& S, const AV& A, const BV& B) {
  Kokkos::View<T*, MemorySpace> out(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kfactor::observed_dots"),
                                    S.nnz());
  if (S.nnz() > 0) cache.get(exec, S, int(A.extent(1)))(exec, A, B, out, false);
  return out;
}

}  // namespace kfactor::detail
