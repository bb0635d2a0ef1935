#pragma once
/// \file
/// Timed MPI collectives on Kokkos Views, shared by the distributed NMF and
/// ALS (KFACTOR_HAVE_MPI only).
///
/// Every call first fences the execution space (the data must be complete
/// before MPI reads it, and the fence keeps pending kernels out of the
/// communication time), then times the MPI call alone with MPI_Wtime. The
/// measured time therefore includes waiting for the slowest rank (load
/// imbalance shows up as communication). Views in memory the host cannot
/// address (CUDA) are staged through one pinned host buffer per
/// communicator, grown on demand and reused (a fresh pageable mirror per call
/// paid page faults and half the copy bandwidth), so no CUDA-aware MPI is
/// needed; the staging copies are counted as communication. CommStats splits
/// the time by kind of call (all-reduce, all-gather, ring shift).

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/sddmm/options.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#include <sys/resource.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kfactor::distributed::detail {

template <class T>
MPI_Datatype mpi_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>)
    return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, int>)
    return MPI_INT;
  else if constexpr (std::is_same_v<U, char>)
    return MPI_CHAR;
  else if constexpr (std::is_same_v<U, unsigned long long> || (std::is_same_v<U, unsigned long> && sizeof(long) == 8))
    return MPI_UINT64_T;
  else if constexpr (std::is_same_v<U, long long> || (std::is_same_v<U, long> && sizeof(long) == 8))
    return MPI_INT64_T;
  else
    static_assert(sizeof(U) == 0, "no MPI datatype for this element type");
}

/// Seconds, calls and payload bytes of the collectives a run made.
struct CommStats {
  double seconds = 0.0;           ///< MPI calls (and host staging), after a fence
  double wait_seconds = 0.0;      ///< with Collectives::measure_wait: barriers before each collective (imbalance)
  std::int64_t calls = 0;         ///< collectives issued
  std::int64_t bytes_in = 0;      ///< bytes this rank received from others (allgather: other ranks' rows)
  std::int64_t reduce_bytes = 0;  ///< payload bytes of all-reductions (each counts once)
  /// seconds and calls per kind of call (all-reduce, all-gather, ring shift)
  double reduce_seconds = 0.0, gather_seconds = 0.0, shift_seconds = 0.0;
  std::int64_t reduce_calls = 0, gather_calls = 0, shift_calls = 0;
};

/// Thin timed wrappers; one per communicator (not thread safe).
class Collectives {
 public:
  explicit Collectives(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  [[nodiscard]] MPI_Comm comm() const { return comm_; }
  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  CommStats stats;
  /// Benchmarks: a timed MPI_Barrier before each collective, so that
  /// stats.seconds is the transfer alone and stats.wait_seconds the time
  /// spent waiting for slower ranks (costs one extra latency per call).
  bool measure_wait = false;
  /// Benchmarks: one record per timed call, with the involuntary context
  /// switches this process suffered during it (a rank descheduled in the
  /// middle of a collective stretches it on every rank: time the model does
  /// not describe).
  struct CallRecord {
    char kind;       ///< 'r' all-reduce, 'g' all-gather, 's' ring shift
    double seconds;  ///< the MPI call (and staging)
    double bytes;    ///< payload (all-reduce) or bytes received
    long switches;   ///< involuntary context switches during the call
  };
  std::vector<CallRecord>* log = nullptr;

  /// v (contiguous) summed in place over the ranks. No MPI call on one rank.
  template <class ExecutionSpace, class V>
  void allreduce_sum(const ExecutionSpace& exec, const V& v) {
    static_assert(Kokkos::is_view_v<V>);
    using T = typename V::non_const_value_type;
    if (size_ == 1 || v.size() == 0) return;
    if (!v.span_is_contiguous()) throw UsageError("distributed: all-reduce of a non-contiguous view");
    exec.fence();
    wait();
    const double t0 = start();
    const int n = static_cast<int>(v.size());
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible) {
      check(MPI_Allreduce(MPI_IN_PLACE, v.data(), n, mpi_type<T>(), MPI_SUM, comm_), "MPI_Allreduce");
    } else {
      T* h = staging<T>(v.size());
      Kokkos::View<T*, Kokkos::SharedHostPinnedSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h, v.size());
      Kokkos::View<T*, typename V::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(v.data(), v.size());
      Kokkos::deep_copy(exec, hv, dv);
      exec.fence();
      check(MPI_Allreduce(MPI_IN_PLACE, h, n, mpi_type<T>(), MPI_SUM, comm_), "MPI_Allreduce");
      Kokkos::deep_copy(exec, dv, hv);
      exec.fence();
    }
    count(stats.reduce_seconds, stats.reduce_calls, MPI_Wtime() - t0, double(v.size() * sizeof(T)));
    stats.reduce_bytes += static_cast<std::int64_t>(v.size() * sizeof(T));
  }

  /// Host scalars summed over the ranks (in double / int64; timed as above).
  template <class T>
  void allreduce_sum_host(T* values, int n) {
    if (size_ == 1 || n == 0) return;
    wait();
    const double t0 = start();
    check(MPI_Allreduce(MPI_IN_PLACE, values, n, mpi_type<T>(), MPI_SUM, comm_), "MPI_Allreduce");
    count(stats.reduce_seconds, stats.reduce_calls, MPI_Wtime() - t0, double(n * sizeof(T)));
    stats.reduce_bytes += static_cast<std::int64_t>(n * sizeof(T));
  }

  /// full (N x K, all rows) = the ranks' row blocks in rank order; this rank
  /// holds rows [bounds[rank], bounds[rank + 1]) in `local`. Both LayoutRight
  /// and contiguous. On one rank `full` is just a copy of `local`.
  template <class ExecutionSpace, class T, class Mem>
  void allgather_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& local, const DenseMatrix<T, Mem>& full,
                      const std::vector<ordinal_t>& bounds) {
    const std::size_t K = full.extent(1);
    if (local.extent(1) != K || bounds.size() != static_cast<std::size_t>(size_) + 1 ||
        local.extent(0) != static_cast<std::size_t>(bounds[rank_ + 1] - bounds[rank_]) ||
        full.extent(0) != static_cast<std::size_t>(bounds.back()))
      throw UsageError("distributed: all-gather of rows with inconsistent shapes");
    if (size_ == 1) {
      Kokkos::deep_copy(exec, full, local);
      return;
    }
    std::vector<int> counts(size_), displs(size_);
    for (int p = 0; p < size_; ++p) {
      const std::int64_t c = static_cast<std::int64_t>(bounds[p + 1] - bounds[p]) * static_cast<std::int64_t>(K);
      const std::int64_t d = static_cast<std::int64_t>(bounds[p]) * static_cast<std::int64_t>(K);
      if (d + c > std::int64_t(2147483647))
        throw RuntimeFailure("distributed: a factor of " + std::to_string(bounds.back()) + " x " + std::to_string(K) +
                             " exceeds MPI's int counts; use more ranks or a smaller rank");
      counts[p] = static_cast<int>(c);
      displs[p] = static_cast<int>(d);
    }
    exec.fence();
    wait();
    const double t0 = start();
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      check(MPI_Allgatherv(local.data(), counts[rank_], mpi_type<T>(), full.data(), counts.data(), displs.data(),
                           mpi_type<T>(), comm_),
            "MPI_Allgatherv");
    } else {
      // This rank's rows go to their place in the staging buffer; the
      // all-gather then fills the rest in place.
      using Pinned = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::SharedHostPinnedSpace,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      T* h = staging<T>(full.size());
      Kokkos::deep_copy(exec, Pinned(h + displs[rank_], local.extent(0), K), local);
      exec.fence();
      check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h, counts.data(), displs.data(), mpi_type<T>(), comm_),
            "MPI_Allgatherv");
      Kokkos::deep_copy(exec, full, Pinned(h, full.extent(0), K));
      exec.fence();
    }
    count(stats.gather_seconds, stats.gather_calls, MPI_Wtime() - t0,
          double((full.extent(0) - local.extent(0)) * K * sizeof(T)));
    stats.bytes_in += static_cast<std::int64_t>((full.extent(0) - local.extent(0)) * K * sizeof(T));
  }

  /// One step of a ring: sends `send` (LayoutRight, contiguous) to rank
  /// `dest` and receives `recv` (already sized to what arrives) from rank
  /// `source`, in one MPI_Sendrecv. Point to point: one latency, no log P.
  template <class ExecutionSpace, class T, class Mem>
  void shift_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& send, int dest,
                  const DenseMatrix<T, Mem>& recv, int source) {
    if (send.size() > std::size_t(2147483647) || recv.size() > std::size_t(2147483647))
      throw RuntimeFailure("distributed: a ring block of " + std::to_string(std::max(send.size(), recv.size())) +
                           " values exceeds MPI's int counts; use more ranks");
    const int ns = static_cast<int>(send.size()), nr = static_cast<int>(recv.size());
    exec.fence();
    wait();
    const double t0 = start();
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      check(MPI_Sendrecv(send.data(), ns, mpi_type<T>(), dest, 0, recv.data(), nr, mpi_type<T>(), source, 0, comm_,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
    } else {
      using Pinned = Kokkos::View<T*, Kokkos::SharedHostPinnedSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      using Flat = Kokkos::View<T*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      T* h = staging<T>(send.size() + recv.size());
      Kokkos::deep_copy(exec, Pinned(h, send.size()), Flat(send.data(), send.size()));
      exec.fence();
      check(MPI_Sendrecv(h, ns, mpi_type<T>(), dest, 0, h + send.size(), nr, mpi_type<T>(), source, 0, comm_,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
      Kokkos::deep_copy(exec, Flat(recv.data(), recv.size()), Pinned(h + send.size(), recv.size()));
      exec.fence();
    }
    count(stats.shift_seconds, stats.shift_calls, MPI_Wtime() - t0, double(recv.size() * sizeof(T)));
    stats.bytes_in += static_cast<std::int64_t>(recv.size() * sizeof(T));
  }

  /// A new matrix of all bounds.back() rows: the ranks' row blocks of
  /// `local` in rank order (allgather_rows into fresh memory, fenced).
  template <class ExecutionSpace, class T, class Mem>
  DenseMatrix<T, Mem> allgather_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& local,
                                     const std::vector<ordinal_t>& bounds, const std::string& label) {
    DenseMatrix<T, Mem> full(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), bounds.back(), local.extent(1));
    allgather_rows(exec, local, full, bounds);
    exec.fence();
    return full;
  }

  /// The ranks' row blocks of `local` in rank order, as a host matrix of all
  /// bounds.back() rows on `root` (empty elsewhere): MPI_Gatherv, so only
  /// the root ever holds the whole factor.
  template <class ExecutionSpace, class T, class Mem>
  Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> gather_rows_to(const ExecutionSpace& exec,
                                                                           const DenseMatrix<T, Mem>& local,
                                                                           const std::vector<ordinal_t>& bounds,
                                                                           int root) {
    const std::size_t K = local.extent(1);
    std::vector<int> counts(size_), displs(size_);
    for (int p = 0; p < size_; ++p) {
      const std::int64_t d = std::int64_t(bounds[p]) * std::int64_t(K);
      if (std::int64_t(bounds[p + 1]) * std::int64_t(K) > std::int64_t(2147483647))
        throw RuntimeFailure("distributed: a factor of " + std::to_string(bounds.back()) + " x " + std::to_string(K) +
                             " exceeds MPI's int counts");
      counts[p] = static_cast<int>(std::int64_t(bounds[p + 1] - bounds[p]) * std::int64_t(K));
      displs[p] = static_cast<int>(d);
    }
    const auto mine = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, local);
    exec.fence();
    Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace> full(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::gathered_factor"), rank_ == root ? bounds.back() : 0,
        rank_ == root ? K : 0);
    check(MPI_Gatherv(mine.data(), counts[rank_], mpi_type<T>(), full.data(), counts.data(), displs.data(),
                      mpi_type<T>(), root, comm_),
          "MPI_Gatherv");
    return full;
  }

  /// Every rank's `local` values (host) concatenated in rank order.
  template <class T>
  std::vector<T> allgather_host(const std::vector<T>& local) {
    int mine = static_cast<int>(local.size());
    std::vector<int> counts(size_), displs(size_, 0);
    MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_);
    for (int p = 1; p < size_; ++p) displs[p] = displs[p - 1] + counts[p - 1];
    std::vector<T> out(static_cast<std::size_t>(displs.back() + counts.back()));
    check(MPI_Allgatherv(local.data(), mine, mpi_type<T>(), out.data(), counts.data(), displs.data(), mpi_type<T>(),
                         comm_),
          "MPI_Allgatherv");
    return out;
  }

  /// `values` (host) of rank `root` on every rank, resized to its length.
  template <class T>
  void broadcast_host(std::vector<T>& values, int root) {
    long long n = static_cast<long long>(values.size());
    check(MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm_), "MPI_Bcast");
    if (n > 2147483647LL) throw RuntimeFailure("distributed: a broadcast of " + std::to_string(n) + " values");
    values.resize(static_cast<std::size_t>(n));
    if (n > 0) check(MPI_Bcast(values.data(), static_cast<int>(n), mpi_type<T>(), root, comm_), "MPI_Bcast");
  }

  /// Personalized all-to-all of host records (any trivially copyable T):
  /// `send` holds the records for rank 0, then those for rank 1, ...
  /// (send_counts[q] for rank q); returns the records every rank sent to
  /// this one, in rank order (each rank's in the order it sent them). Counts
  /// in records, so each rank may send and receive up to 2^31 - 1 of them.
  template <class T>
  std::vector<T> alltoallv_host(const std::vector<T>& send, const std::vector<std::int64_t>& send_counts) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (send_counts.size() != static_cast<std::size_t>(size_))
      throw UsageError("distributed: all-to-all with " + std::to_string(send_counts.size()) + " counts for " +
                       std::to_string(size_) + " ranks");
    std::vector<std::int64_t> recv_counts(size_);
    check(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts.data(), 1, MPI_INT64_T, comm_), "MPI_Alltoall");
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    std::int64_t s_total = 0, r_total = 0;
    for (int p = 0; p < size_; ++p) {
      sd[p] = static_cast<int>(s_total);
      rd[p] = static_cast<int>(r_total);
      s_total += send_counts[p];
      r_total += recv_counts[p];
      if (s_total > 2147483647LL || r_total > 2147483647LL)
        throw RuntimeFailure("distributed: an all-to-all of more than 2^31 - 1 records per rank; use more ranks");
      sc[p] = static_cast<int>(send_counts[p]);
      rc[p] = static_cast<int>(recv_counts[p]);
    }
    if (static_cast<std::size_t>(s_total) != send.size())
      throw UsageError("distributed: all-to-all counts do not add up to the records sent");
    MPI_Datatype record;
    check(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &record), "MPI_Type_contiguous");
    check(MPI_Type_commit(&record), "MPI_Type_commit");
    std::vector<T> out(static_cast<std::size_t>(r_total));
    const int rc_all =
        MPI_Alltoallv(send.data(), sc.data(), sd.data(), record, out.data(), rc.data(), rd.data(), record, comm_);
    MPI_Type_free(&record);
    check(rc_all, "MPI_Alltoallv");
    return out;
  }

 private:
  /// The pinned staging buffer, at least n values of T.
  template <class T>
  T* staging(std::size_t n) {
    if (staging_.extent(0) < n * sizeof(T))
      staging_ = Kokkos::View<char*, Kokkos::SharedHostPinnedSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "kfactor::mpi_staging"), n * sizeof(T));
    return reinterpret_cast<T*>(staging_.data());
  }
  Kokkos::View<char*, Kokkos::SharedHostPinnedSpace> staging_;
  long switches_ = 0;
  static long involuntary_switches() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nivcsw;
  }
  double start() {
    if (log) switches_ = involuntary_switches();
    return MPI_Wtime();
  }
  void count(double& kind_seconds, std::int64_t& kind_calls, double t, double bytes) {
    stats.seconds += t;
    kind_seconds += t;
    ++stats.calls;
    ++kind_calls;
    if (log) {
      const char kind = &kind_seconds == &stats.reduce_seconds   ? 'r'
                        : &kind_seconds == &stats.gather_seconds ? 'g'
                                                                 : 's';
      log->push_back({kind, t, bytes, involuntary_switches() - switches_});
    }
  }
  void wait() {
    if (!measure_wait) return;
    const double t0 = MPI_Wtime();
    MPI_Barrier(comm_);
    stats.wait_seconds += MPI_Wtime() - t0;
  }
  static void check(int rc, const char* what) {
    if (rc != MPI_SUCCESS)
      throw RuntimeFailure(std::string("distributed: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
  }
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

/// P + 1 boundaries of contiguous blocks balanced by `counts` (nonzeros per
/// row or column; kfactor::distributed::balanced_column_blocks), then moved so that every
/// block is non-empty (needs counts.size() >= parts).
inline std::vector<ordinal_t> nonempty_balanced_blocks(const std::vector<offset_t>& counts, int parts) {
  const auto n = static_cast<ordinal_t>(counts.size());
  if (n < parts)
    throw UsageError("distributed: " + std::to_string(parts) + " ranks but only " + std::to_string(n) +
                     " rows or columns to share; use at most " + std::to_string(n) + " ranks");
  auto b = balanced_column_blocks(counts, parts);
  for (int p = 1; p < parts; ++p) b[p] = std::max(b[p], b[p - 1] + 1);       // at least one each, from the left
  for (int p = parts - 1; p >= 1; --p) b[p] = std::min(b[p], b[p + 1] - 1);  // and room for the rest
  return b;
}

}  // namespace kfactor::distributed::detail

#endif  // KFACTOR_HAVE_MPI
