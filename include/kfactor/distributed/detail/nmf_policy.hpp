#pragma once
/// \file
/// The MPI communication policy of the distributed NMF epoch (see
/// kfactor/distributed/nmf.hpp, "Layouts"; the policy contract is
/// kfactor::nmf::detail::SingleProcess's). One policy serves both layouts:
/// they differ only in which ranks exchange rows of W and Ht and whether a
/// product is a partial sum to be reduce-scattered.

#include <kfactor/config.hpp>
#include <kfactor/nmf/nmf.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/detail/collectives.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::distributed::nmf::detail {

/// The ranks whose rows of one factor together make up the block of rows a
/// product reads (1D: all ranks and all rows; grid: the ranks of one grid
/// row for W, of one grid column for Ht).
struct FactorGroup {
  std::shared_ptr<distributed::detail::Collectives> coll;  ///< null: no group
  std::vector<ordinal_t> bounds;  ///< coll->size() + 1 boundaries of the members' rows in the block (from 0)
  /// More than one member: the block has to be assembled (or a product over it split).
  [[nodiscard]] bool shared() const { return coll && coll->size() > 1; }
};

/// The MPI policy of kfactor::nmf::detail::epoch (see
/// nmf::detail::SingleProcess for the contract).
template <class T, class Mem>
struct MpiPolicy {
  std::shared_ptr<distributed::detail::Collectives> coll;  ///< all ranks: Grams, column norms, error scalar
  FactorGroup w, h;  ///< the groups that exchange rows of W (for R = A^T W) and of Ht (for P = A Ht)
  /// Grid: a rank's product covers one block of A, so R and P are partial
  /// sums, reduce-scattered over h and w; 1D: whole (no reduction).
  bool partial = false;
  /// Grid: W's row blocks over a grid column and Ht's column blocks over a
  /// grid row (second step of gather_W / gather_Ht); 1D: no group.
  FactorGroup w_across, h_across;
  /// The block of rows of W (Ht) over w (h), allocated when the group is
  /// shared: the gathered factor of one half, the partial product of the
  /// other (grid), never both at once.
  DenseMatrix<T, Mem> W_block, Ht_block;

  [[nodiscard]] bool one_process() const { return coll->size() == 1; }
  template <class F>
  void agree(F&& f) const {
    distributed::agree(coll->comm(), std::forward<F>(f));
  }
  template <class ExecutionSpace, class V>
  void sum(const ExecutionSpace& exec, const V& v) const {
    coll->allreduce_sum(exec, v);
  }

  /// The rows of W over w (this rank's W when it is alone in w).
  template <class ExecutionSpace>
  DenseMatrix<T, Mem> gather_w(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& W) const {
    return gather(exec, W, w, W_block);
  }
  /// The rows of Ht over h (this rank's Ht when it is alone in h).
  template <class ExecutionSpace>
  DenseMatrix<T, Mem> gather_h(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& Ht) const {
    return gather(exec, Ht, h, Ht_block);
  }

  template <class ExecutionSpace, class Matrix>
  void product_AtW(const ExecutionSpace& exec, const Matrix& Acol, const DenseMatrix<T, Mem>& W,
                   const DenseMatrix<T, Mem>& R) const {
    const auto X = gather_w(exec, W);
    if (partial && h.shared()) {
      kfactor::nmf::detail::product_AtX(exec, Acol, X, Ht_block);
      h.coll->reduce_scatter_rows(exec, Ht_block, R, h.bounds);
    } else {
      kfactor::nmf::detail::product_AtX(exec, Acol, X, R);
    }
  }
  template <class ExecutionSpace, class Matrix>
  void product_AHt(const ExecutionSpace& exec, const Matrix& Arow, const DenseMatrix<T, Mem>& Ht,
                   const DenseMatrix<T, Mem>& P) const {
    const auto X = gather_h(exec, Ht);
    if (partial && w.shared()) {
      kfactor::nmf::detail::product_AX(exec, Arow, X, W_block);
      w.coll->reduce_scatter_rows(exec, W_block, P, w.bounds);
    } else {
      kfactor::nmf::detail::product_AX(exec, Arow, X, P);
    }
  }

  /// The full factor from this rank's rows: gathered over `g`, then over
  /// `across` (fresh memory on every rank, fenced).
  template <class ExecutionSpace>
  DenseMatrix<T, Mem> gather_full(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& local, const FactorGroup& g,
                                  const FactorGroup& across, const std::string& label) const {
    auto block = g.coll->allgather_rows(exec, local, g.bounds, label);
    if (!across.coll) return block;
    return across.coll->allgather_rows(exec, block, across.bounds, label);
  }

  /// Every communicator the policy talks over, once each.
  [[nodiscard]] std::vector<distributed::detail::Collectives*> collectives() const {
    std::vector<distributed::detail::Collectives*> out{coll.get()};
    for (const auto* g : {&w, &h})
      if (g->coll && g->coll != coll) out.push_back(g->coll.get());
    return out;
  }
  /// Communication so far on this rank, over all its communicators.
  [[nodiscard]] distributed::detail::CommStats stats() const {
    distributed::detail::CommStats s;
    for (const auto* c : collectives()) s += c->stats;
    return s;
  }

 private:
  template <class ExecutionSpace>
  static DenseMatrix<T, Mem> gather(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& local, const FactorGroup& g,
                                    const DenseMatrix<T, Mem>& block) {
    if (!g.shared()) return local;
    g.coll->allgather_rows(exec, local, block, g.bounds);
    return block;
  }
};

}  // namespace kfactor::distributed::nmf::detail

#endif  // KFACTOR_HAVE_MPI
