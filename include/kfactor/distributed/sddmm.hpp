#pragma once
/// \file
/// Distributed SDDMM over MPI (the paper's §IV-C, header-only; needs a build
/// with KFACTOR_HAVE_MPI): S's columns are split into P contiguous blocks
/// balanced by nonzeros (kfactor::balanced_column_blocks; or by measured
/// time, ColumnSplit::timed; or of equal widths); rank p holds all of
/// A, the rows [b_p, b_{p+1}) of B and the nonzeros of its columns, and runs
/// its own SddmmPlan on its device. The output stays distributed (each rank's
/// values with their positions in S; write_part() writes them to one file
/// per rank) or is gathered on one rank (gather()).
/// Any rank count works, including ranks that get no columns.

#include <kfactor/config.hpp>
#include <kfactor/core/timing.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/output.hpp>
#include <kfactor/io/write.hpp>

#include <mpi.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace kfactor::distributed {

/// One rank's part of a distributed SDDMM.
template <class ExecutionSpace, class T, class TI = T>
class SddmmRankPlan {
 public:
  using memory_space = typename ExecutionSpace::memory_space;

  /// Collective over `comm`. Every rank passes the same global S (a shallow
  /// copy is fine; only the rank's block is kept on the device afterwards).
  /// `split` chooses the blocks; equal_width is the naive split, kept to
  /// measure what balancing buys (perf/bench_sddmm_mpi.cpp). `timed` costs
  /// up to `timing_rounds` extra plan builds and applies on zero inputs (an
  /// M x K A and a block of B, allocated for the while); it stops once the
  /// slowest rank is within 2% of the fastest.
  SddmmRankPlan(const ExecutionSpace& exec, MPI_Comm comm, const CsrMatrix<T, memory_space>& S, int K,
                const SddmmOptions& options = {}, ColumnSplit split = ColumnSplit::balanced, int timing_rounds = 4)
      : comm_(comm), nnz_(S.nnz()), num_cols_(S.num_cols) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    bounds_ =
        split == ColumnSplit::equal_width ? equal_column_blocks(S.num_cols, size_) : balanced_column_blocks(S, size_);
    if (split == ColumnSplit::timed && size_ > 1) balance_by_time(exec, S, K, options, timing_rounds);
    block_ = extract_column_block(S, bounds_[rank_], bounds_[rank_ + 1]);
    if (block_.local.nnz() > 0) plan_ = SddmmPlan<ExecutionSpace, T, TI>(exec, block_.local, K, options);
  }

  /// Column block boundaries (size P + 1); this rank owns [begin(), end()).
  [[nodiscard]] const std::vector<ordinal_t>& bounds() const { return bounds_; }
  [[nodiscard]] ordinal_t begin() const { return bounds_[rank_]; }
  [[nodiscard]] ordinal_t end() const { return bounds_[rank_ + 1]; }
  [[nodiscard]] offset_t local_nnz() const { return block_.local.nnz(); }
  /// Position in S of each local output value.
  [[nodiscard]] const Kokkos::View<offset_t*, memory_space>& positions() const { return block_.positions; }
  /// The rank's block of S: all M rows, its columns re-based to 0, in S's
  /// order within each row (sddmm_reference(exec, local(), A, B_local, ref)
  /// is the reference for out_local).
  [[nodiscard]] const CsrMatrix<T, memory_space>& local() const { return block_.local; }

  /// out_local (local_nnz()) = the rank's share of the SDDMM. A: M x K (all
  /// rows, replicated); B_local: (end() - begin()) x K (the rank's B rows).
  template <class AV, class BV>
  void apply(const ExecutionSpace& exec, const AV& A, const BV& B_local,
             const Kokkos::View<T*, memory_space>& out_local, bool scaled = true) const {
    if (B_local.extent(0) != static_cast<std::size_t>(end() - begin()))
      throw UsageError("distributed sddmm: rank " + std::to_string(rank_) + " owns " + std::to_string(end() - begin()) +
                       " rows of B, got " + std::to_string(B_local.extent(0)));
    if (out_local.extent(0) != local_nnz())
      throw UsageError("distributed sddmm: out_local needs " + std::to_string(local_nnz()) + " entries");
    if (local_nnz() > 0) plan_(exec, A, B_local, out_local, scaled);
  }

  /// Gathers every rank's values into S's order on `root` (host vector of
  /// nnz(S) values there, empty elsewhere). Collective.
  std::vector<T> gather(const Kokkos::View<T*, memory_space>& out_local, int root = 0) const {
    auto hv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out_local);
    auto hp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, block_.positions);
    std::vector<double> vals(hv.extent(0));
    std::vector<long long> pos(hp.extent(0));
    for (std::size_t e = 0; e < vals.size(); ++e) {
      vals[e] = static_cast<double>(hv(e));
      pos[e] = static_cast<long long>(hp(e));
    }
    int mine = static_cast<int>(vals.size());
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_), 0);
    MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm_);
    if (rank_ == root) std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
    std::vector<double> all_vals(rank_ == root ? nnz_ : 0);
    std::vector<long long> all_pos(rank_ == root ? nnz_ : 0);
    MPI_Gatherv(vals.data(), mine, MPI_DOUBLE, all_vals.data(), counts.data(), displs.data(), MPI_DOUBLE, root, comm_);
    MPI_Gatherv(pos.data(), mine, MPI_LONG_LONG, all_pos.data(), counts.data(), displs.data(), MPI_LONG_LONG, root,
                comm_);
    std::vector<T> out(rank_ == root ? nnz_ : 0);
    for (std::size_t e = 0; e < all_vals.size(); ++e)
      out[static_cast<std::size_t>(all_pos[e])] = static_cast<T>(all_vals[e]);
    return out;
  }

  /// Collective: leaves the output distributed on disk. Every rank writes
  /// its values `out_local` to its own file, part_path(path, rank) (through
  /// write_parts(): published together, errors agreed, member `P.rankR` of
  /// one output set), a Matrix Market coordinate file of S's shape (M x N)
  /// holding the rank's entries at their (row, column) in S, row by row; a
  /// rank without columns writes a file of no entries. The parts' entries
  /// together are exactly those of the gathered output (gather() written by
  /// io::write_sddmm_output), values bit for bit. `comment` heads every part;
  /// `inputs` are the run's input files (no part may replace one). Returns
  /// this rank's part's path.
  std::string write_part(const std::string& path, const Kokkos::View<T*, memory_space>& out_local,
                         const std::string& comment = {}, const std::vector<std::string>& inputs = {}) const {
    if (out_local.extent(0) != local_nnz())
      throw UsageError("distributed sddmm: out_local needs " + std::to_string(local_nnz()) + " entries");
    return write_parts(comm_, path, "P", inputs, [&](const std::string& part, const io::OutputOptions& out) {
      const auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, block_.local.row_map);
      const auto local_cols = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, block_.local.entries);
      Kokkos::View<ordinal_t*, Kokkos::HostSpace> cols(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::part_columns"), local_cols.extent(0));
      for (std::size_t e = 0; e < cols.extent(0); ++e) cols(e) = local_cols(e) + begin();
      const CsrMatrix<T, Kokkos::HostSpace> P(
          row_map, cols, Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out_local), num_cols_);
      io::write_matrix_market(part, P, comment, out);
    });
  }

 private:
  /// ColumnSplit::timed. Equal nonzeros need not take equal time: with S's
  /// columns sorted by degree, the rank of the many light columns gathers
  /// far more distinct rows of B (two H200s, M1 at K = 512: 12.6 ms against
  /// 7.1 ms for the same nonzeros). Each round times every rank's apply
  /// (a warm-up, then the median of 3) and, unless the slowest is within 2% of the fastest,
  /// gives each column the weight nnz_c x (its owner's seconds per nonzero)
  /// and re-splits the columns by weight.
  void balance_by_time(const ExecutionSpace& exec, const CsrMatrix<T, memory_space>& S, int K,
                       const SddmmOptions& options, int rounds) {
    const auto counts = column_counts(S);
    Kokkos::View<TI**, Kokkos::LayoutRight, memory_space> A("kfactor::sddmm_timing_A", S.num_rows(), K);
    for (int round = 0; round < rounds; ++round) {
      double mine[2] = {0.0, 0.0};  // seconds, nonzeros
      {
        const auto blk = extract_column_block(S, bounds_[rank_], bounds_[rank_ + 1]);
        mine[1] = static_cast<double>(blk.local.nnz());
        if (blk.local.nnz() > 0) {
          const SddmmPlan<ExecutionSpace, T, TI> plan(exec, blk.local, K, options);
          Kokkos::View<TI**, Kokkos::LayoutRight, memory_space> B("kfactor::sddmm_timing_B", blk.end - blk.begin, K);
          Kokkos::View<T*, memory_space> out("kfactor::sddmm_timing_out", blk.local.nnz());
          mine[0] = time_runs(exec, 3, 1, [&] { plan(exec, A, B, out); }).median;
        }
      }
      std::vector<double> all(2 * static_cast<std::size_t>(size_));
      MPI_Allgather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, comm_);
      // Ranks without nonzeros (P > N) do not count as the fastest.
      double seconds = 0, nonzeros = 0, slowest = 0, fastest = std::numeric_limits<double>::infinity();
      for (int p = 0; p < size_; ++p) {
        seconds += all[2 * p];
        nonzeros += all[2 * p + 1];
        slowest = std::max(slowest, all[2 * p]);
        if (all[2 * p + 1] > 0) fastest = std::min(fastest, all[2 * p]);
      }
      if (slowest <= 1.02 * fastest) break;
      const double mean_rate = nonzeros > 0 ? seconds / nonzeros : 1.0;
      std::vector<double> weights(counts.size());
      for (int p = 0; p < size_; ++p) {
        const double rate = all[2 * p + 1] > 0 && all[2 * p] > 0 ? all[2 * p] / all[2 * p + 1] : mean_rate;
        for (ordinal_t c = bounds_[p]; c < bounds_[p + 1]; ++c) weights[c] = double(counts[c]) * rate;
      }
      bounds_ = weighted_column_blocks(weights, size_);
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  offset_t nnz_ = 0;
  ordinal_t num_cols_ = 0;
  std::vector<ordinal_t> bounds_;
  ColumnBlock<T, memory_space> block_;
  SddmmPlan<ExecutionSpace, T, TI> plan_;
};

}  // namespace kfactor::distributed

#endif  // KFACTOR_HAVE_MPI
