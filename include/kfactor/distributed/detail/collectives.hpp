#pragma once
/// \file
/// Timed MPI collectives on Kokkos Views, shared by the distributed NMF and
/// ALS (KFACTOR_HAVE_MPI only).
///
/// Every call first fences the execution space (the data must be complete
/// before the collective reads it, and the fence keeps pending kernels out of
/// the communication time), then times the collective alone with MPI_Wtime.
/// The measured time therefore includes waiting for the slowest rank (load
/// imbalance shows up as communication). CommStats splits the time by kind
/// of call (all-reduce, all-gather, ring shift).
///
/// **Engines.** Views in host memory go to MPI directly. Views in memory the
/// host cannot address (CUDA) take the first available of
///   1. NCCL (builds with KFACTOR_HAVE_NCCL, CUDA execution spaces, one GPU
///      per rank): the collective is enqueued on the execution space's
///      stream and the data stays on the device (detail/nccl.hpp);
///   2. a CUDA-aware MPI, when the MPI library says at run time that it is
///      one (Open MPI's MPIX_Query_cuda_support): device pointers go to MPI;
///   3. host staging: through one pinned host buffer per communicator, grown
///      on demand and reused (a fresh pageable mirror per call paid page
///      faults and half the copy bandwidth); the copies count as
///      communication.
/// The environment variable KFACTOR_COMM_ENGINE (auto, nccl, mpi, host)
/// overrides the choice (an engine this build or MPI lacks is an error), and
/// engine_name() tells which one ran, for the report.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/sddmm/options.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#include <kfactor/distributed/detail/nccl.hpp>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#include <sys/resource.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
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

/// How collectives on device memory travel (see the file comment).
enum class DeviceEngine { nccl, cuda_aware_mpi, host_staged };

/// True when `Exec` is a CUDA execution space (NCCL enqueues on its stream).
template <class Exec>
inline constexpr bool is_cuda_space =
#if defined(KOKKOS_ENABLE_CUDA)
    std::is_same_v<Exec, Kokkos::Cuda>;
#else
    false;
#endif

/// True when the MPI library reports at run time that it accepts CUDA
/// device pointers.
inline bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

/// The device engine for this build and MPI, or the one KFACTOR_COMM_ENGINE
/// names (UsageError when it is not available).
inline DeviceEngine choose_device_engine() {
  constexpr bool have_nccl =
#if defined(KFACTOR_HAVE_NCCL)
      true;
#else
      false;
#endif
  const char* env = std::getenv("KFACTOR_COMM_ENGINE");
  const std::string want = env != nullptr ? env : "auto";
  if (want == "auto" || want.empty())
    return have_nccl             ? DeviceEngine::nccl
           : mpi_is_cuda_aware() ? DeviceEngine::cuda_aware_mpi
                                 : DeviceEngine::host_staged;
  if (want == "nccl") {
    if (!have_nccl) throw UsageError("KFACTOR_COMM_ENGINE=nccl: this build of kfactor has no NCCL");
    return DeviceEngine::nccl;
  }
  if (want == "mpi") {
    if (!mpi_is_cuda_aware()) throw UsageError("KFACTOR_COMM_ENGINE=mpi: this MPI library is not CUDA-aware");
    return DeviceEngine::cuda_aware_mpi;
  }
  if (want == "host") return DeviceEngine::host_staged;
  throw UsageError("KFACTOR_COMM_ENGINE='" + want + "': expected auto, nccl, mpi or host");
}

/// Adds the statistics of another communicator (a layout that talks over
/// several, see Collectives::split).
inline CommStats& operator+=(CommStats& a, const CommStats& b) {
  a.seconds += b.seconds;
  a.wait_seconds += b.wait_seconds;
  a.calls += b.calls;
  a.bytes_in += b.bytes_in;
  a.reduce_bytes += b.reduce_bytes;
  a.reduce_seconds += b.reduce_seconds;
  a.gather_seconds += b.gather_seconds;
  a.shift_seconds += b.shift_seconds;
  a.reduce_calls += b.reduce_calls;
  a.gather_calls += b.gather_calls;
  a.shift_calls += b.shift_calls;
  return a;
}

/// Thin timed wrappers; one per communicator (not thread safe).
class Collectives {
 public:
  explicit Collectives(MPI_Comm comm) : comm_(comm), device_engine_(choose_device_engine()) {
    const char* env = std::getenv("KFACTOR_COMM_ENGINE");
    explicit_engine_ = env != nullptr && std::string(env) == "nccl";
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  /// The engine collectives on `Mem` (with execution space `Exec`) take:
  /// "mpi" (host memory), "nccl", "cuda-aware-mpi" or "host-staged".
  /// Collective: the first call on device memory settles the engine (and
  /// creates the NCCL communicator) on every rank.
  template <class Exec, class Mem>
  [[nodiscard]] std::string engine_name() {
    if (size_ == 1) return "none";
    switch (prepare<Exec, Mem>()) {
      case Route::host: return "mpi";
      case Route::nccl: return "nccl";
      case Route::device_mpi: return "cuda-aware-mpi";
      default: return "host-staged";
    }
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
  /// All-reductions up to this size go to NCCL without a fence or a wait
  /// (see allreduce_sum).
  static constexpr std::size_t small_payload_bytes = 256;

  /// v (contiguous) summed in place over the ranks. No call on one rank.
  template <class ExecutionSpace, class V>
  void allreduce_sum(const ExecutionSpace& exec, const V& v) {
    static_assert(Kokkos::is_view_v<V>);
    using T = typename V::non_const_value_type;
    using Mem = typename V::memory_space;
    if (size_ == 1 || v.size() == 0) return;
    if (!v.span_is_contiguous()) throw UsageError("distributed: all-reduce of a non-contiguous view");
    const Route r = prepare<ExecutionSpace, Mem>();
#if defined(KFACTOR_HAVE_NCCL)
    // A few values (HALS sums one column norm per column): enqueued between
    // the kernels that produce and read them, with no host round trip; a
    // fence and a wait would cost more than the transfer. Counted, untimed
    // (their time shows in compute); a peer's failure surfaces at the next
    // waited collective.
    if constexpr (is_cuda_space<ExecutionSpace>) {
      if (r == Route::nccl && v.size() * sizeof(T) <= small_payload_bytes && !measure_wait && log == nullptr) {
        nccl_->check(
            ncclAllReduce(v.data(), v.data(), v.size(), nccl_type<T>(), ncclSum, nccl_->get(), exec.cuda_stream()),
            "all-reduce");
        count(stats.reduce_seconds, stats.reduce_calls, 0.0, double(v.size() * sizeof(T)));
        stats.reduce_bytes += static_cast<std::int64_t>(v.size() * sizeof(T));
        return;
      }
    }
#endif
    exec.fence();
    wait();
    const double t0 = start();
    const int n = static_cast<int>(v.size());
    if (r == Route::host || r == Route::device_mpi) {
      check(MPI_Allreduce(MPI_IN_PLACE, v.data(), n, mpi_type<T>(), MPI_SUM, comm_), "MPI_Allreduce");
    } else if (r == Route::nccl) {
#if defined(KFACTOR_HAVE_NCCL)
      if constexpr (is_cuda_space<ExecutionSpace>) {
        nccl_->check(
            ncclAllReduce(v.data(), v.data(), v.size(), nccl_type<T>(), ncclSum, nccl_->get(), exec.cuda_stream()),
            "all-reduce");
        nccl_->wait(exec.cuda_stream(), "all-reduce");
      }
#endif
    } else {
      T* h = staging<T>(v.size());
      Kokkos::View<T*, Kokkos::SharedHostPinnedSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h, v.size());
      Kokkos::View<T*, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(v.data(), v.size());
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
    const Route r = prepare<ExecutionSpace, Mem>();
    exec.fence();
    wait();
    const double t0 = start();
    if (r == Route::host || r == Route::device_mpi) {
      check(MPI_Allgatherv(local.data(), counts[rank_], mpi_type<T>(), full.data(), counts.data(), displs.data(),
                           mpi_type<T>(), comm_),
            "MPI_Allgatherv");
    } else if (r == Route::nccl) {
#if defined(KFACTOR_HAVE_NCCL)
      if constexpr (is_cuda_space<ExecutionSpace>) nccl_allgatherv(exec, local.data(), full.data(), counts, displs);
#endif
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
  /// `source`, in one exchange. Point to point: one latency, no log P.
  template <class ExecutionSpace, class T, class Mem>
  void shift_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& send, int dest,
                  const DenseMatrix<T, Mem>& recv, int source) {
    if (send.size() > std::size_t(2147483647) || recv.size() > std::size_t(2147483647))
      throw RuntimeFailure("distributed: a ring block of " + std::to_string(std::max(send.size(), recv.size())) +
                           " values exceeds MPI's int counts; use more ranks");
    const int ns = static_cast<int>(send.size()), nr = static_cast<int>(recv.size());
    const Route r = prepare<ExecutionSpace, Mem>();
    exec.fence();
    wait();
    const double t0 = start();
    if (r == Route::host || r == Route::device_mpi) {
      check(MPI_Sendrecv(send.data(), ns, mpi_type<T>(), dest, 0, recv.data(), nr, mpi_type<T>(), source, 0, comm_,
                         MPI_STATUS_IGNORE),
            "MPI_Sendrecv");
    } else if (r == Route::nccl) {
#if defined(KFACTOR_HAVE_NCCL)
      if constexpr (is_cuda_space<ExecutionSpace>) {
        const cudaStream_t stream = exec.cuda_stream();
        nccl_->check(ncclGroupStart(), "group start");
        if (ns > 0)
          nccl_->check(ncclSend(send.data(), send.size(), nccl_type<T>(), dest, nccl_->get(), stream), "send");
        if (nr > 0)
          nccl_->check(ncclRecv(recv.data(), recv.size(), nccl_type<T>(), source, nccl_->get(), stream), "recv");
        nccl_->check(ncclGroupEnd(), "ring shift");
        nccl_->wait(stream, "ring shift");
      }
#endif
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

  /// This rank's rows [bounds[rank], bounds[rank + 1]) of the sum over the
  /// ranks of `full` (N = bounds.back() rows of K: every rank's partial sums
  /// of all rows), into `local` (MPI_Reduce_scatter). Both LayoutRight and
  /// contiguous; `full` is left as it was. Counted with the all-gathers
  /// (bytes_in: the other ranks' rows, the volume a ring moves, as for
  /// allgather_rows of the same rows). On one rank `local` is just a copy.
  template <class ExecutionSpace, class T, class Mem>
  void reduce_scatter_rows(const ExecutionSpace& exec, const DenseMatrix<T, Mem>& full,
                           const DenseMatrix<T, Mem>& local, const std::vector<ordinal_t>& bounds) {
    const std::size_t K = full.extent(1);
    if (local.extent(1) != K || bounds.size() != static_cast<std::size_t>(size_) + 1 ||
        local.extent(0) != static_cast<std::size_t>(bounds[rank_ + 1] - bounds[rank_]) ||
        full.extent(0) != static_cast<std::size_t>(bounds.back()))
      throw UsageError("distributed: reduce-scatter of rows with inconsistent shapes");
    if (size_ == 1) {
      Kokkos::deep_copy(exec, local, full);
      return;
    }
    if (static_cast<std::int64_t>(bounds.back()) * static_cast<std::int64_t>(K) > std::int64_t(2147483647))
      throw RuntimeFailure("distributed: a partial product of " + std::to_string(bounds.back()) + " x " +
                           std::to_string(K) + " exceeds MPI's int counts; use more ranks or a smaller rank");
    std::vector<int> counts(size_);
    for (int p = 0; p < size_; ++p)
      counts[p] = static_cast<int>(std::int64_t(bounds[p + 1] - bounds[p]) * std::int64_t(K));
    const Route r = prepare<ExecutionSpace, Mem>();
    exec.fence();
    wait();
    const double t0 = start();
    if (r == Route::host || r == Route::device_mpi) {
      check(MPI_Reduce_scatter(full.data(), local.data(), counts.data(), mpi_type<T>(), MPI_SUM, comm_),
            "MPI_Reduce_scatter");
    } else if (r == Route::nccl) {
#if defined(KFACTOR_HAVE_NCCL)
      if constexpr (is_cuda_space<ExecutionSpace>) nccl_reduce_scatterv(exec, full.data(), local.data(), counts);
#endif
    } else {
      using Pinned = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::SharedHostPinnedSpace,
                                  Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      T* h = staging<T>(full.size() + local.size());
      Kokkos::deep_copy(exec, Pinned(h, full.extent(0), K), full);
      exec.fence();
      check(MPI_Reduce_scatter(h, h + full.size(), counts.data(), mpi_type<T>(), MPI_SUM, comm_), "MPI_Reduce_scatter");
      Kokkos::deep_copy(exec, local, Pinned(h + full.size(), local.extent(0), K));
      exec.fence();
    }
    const std::size_t in = (full.extent(0) - local.extent(0)) * K * sizeof(T);
    count(stats.gather_seconds, stats.gather_calls, MPI_Wtime() - t0, double(in));
    stats.bytes_in += static_cast<std::int64_t>(in);
  }

  /// The ranks of this communicator that pass the same `color`, ordered by
  /// `key`, with Collectives of their own (MPI_Comm_split; collective over
  /// this communicator). The new communicator is freed with the last copy of
  /// the returned object (unless MPI was finalized first).
  [[nodiscard]] std::shared_ptr<Collectives> split(int color, int key) const {
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
    auto out = std::make_shared<Collectives>(sub);
    out->owned_ = std::shared_ptr<MPI_Comm>(new MPI_Comm(sub), [](MPI_Comm* c) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(c);
      delete c;
    });
    return out;
  }

 private:
  enum class Route { host, nccl, device_mpi, host_staged };
  /// Where a collective on `Mem` goes (see the file comment).
  template <class Exec, class Mem>
  [[nodiscard]] Route route() const {
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
      return Route::host;
    } else {
      if (device_engine_ == DeviceEngine::nccl && is_cuda_space<Exec>) return Route::nccl;
      if (device_engine_ == DeviceEngine::cuda_aware_mpi) return Route::device_mpi;
      return Route::host_staged;
    }
  }
  /// route(), creating the NCCL communicator on first use. Every rank makes
  /// the same sequence of collectives, so the first one is reached by all
  /// ranks together and the (collective) creation is safe there; it stays
  /// out of the timed region.
  template <class Exec, class Mem>
  Route prepare() {
    const Route r = route<Exec, Mem>();
#if defined(KFACTOR_HAVE_NCCL)
    if (r == Route::nccl && !nccl_) {
      const std::string why = nccl_unusable_reason(comm_);
      if (why.empty()) {
        nccl_ = shared_nccl_comm(comm_, rank_, size_);
      } else {
        if (explicit_engine_) throw UsageError("KFACTOR_COMM_ENGINE=nccl: " + why);
        device_engine_ = mpi_is_cuda_aware() ? DeviceEngine::cuda_aware_mpi : DeviceEngine::host_staged;
        return route<Exec, Mem>();
      }
    }
#endif
    return r;
  }
#if defined(KFACTOR_HAVE_NCCL)
  /// MPI_Allgatherv's counts and displacements in values, on the device.
  /// NCCL's all-gather takes equal blocks; unequal ones go as one broadcast
  /// per rank, grouped, each straight into its place (the blocks travel
  /// concurrently as in the all-gather, with no padded copy to pack).
  template <class Exec, class T>
  void nccl_allgatherv(const Exec& exec, const T* local, T* full, const std::vector<int>& counts,
                       const std::vector<int>& displs) {
    const cudaStream_t stream = exec.cuda_stream();
    const int block = *std::max_element(counts.begin(), counts.end());
    const bool equal = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == block; });
    if (equal) {
      T* mine = full + displs[rank_];
      if (mine != local)
        nccl_cuda(cudaMemcpyAsync(mine, local, counts[rank_] * sizeof(T), cudaMemcpyDeviceToDevice, stream));
      nccl_->check(ncclAllGather(mine, full, std::size_t(block), nccl_type<T>(), nccl_->get(), stream), "all-gather");
    } else {
      nccl_->check(ncclGroupStart(), "group start");
      for (int p = 0; p < size_; ++p)
        nccl_->check(ncclBroadcast(p == rank_ ? local : full + displs[p], full + displs[p], std::size_t(counts[p]),
                                   nccl_type<T>(), p, nccl_->get(), stream),
                     "all-gather (broadcast)");
      nccl_->check(ncclGroupEnd(), "all-gather");
    }
    nccl_->wait(stream, "all-gather");
  }
  /// MPI_Reduce_scatter on the device: rank p gets the sum of the ranks'
  /// `counts[p]` values at the p-th place of `full`. NCCL's reduce-scatter
  /// takes equal blocks; unequal ones go as one reduction to each rank,
  /// grouped, each from its place in `full`.
  template <class Exec, class T>
  void nccl_reduce_scatterv(const Exec& exec, const T* full, T* local, const std::vector<int>& counts) {
    const cudaStream_t stream = exec.cuda_stream();
    const int block = *std::max_element(counts.begin(), counts.end());
    const bool equal = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == block; });
    if (equal) {
      nccl_->check(ncclReduceScatter(full, local, std::size_t(block), nccl_type<T>(), ncclSum, nccl_->get(), stream),
                   "reduce-scatter");
    } else {
      nccl_->check(ncclGroupStart(), "group start");
      std::size_t offset = 0;
      for (int p = 0; p < size_; ++p) {
        nccl_->check(ncclReduce(full + offset, p == rank_ ? local : nullptr, std::size_t(counts[p]), nccl_type<T>(),
                                ncclSum, p, nccl_->get(), stream),
                     "reduce-scatter (reduce)");
        offset += std::size_t(counts[p]);
      }
      nccl_->check(ncclGroupEnd(), "reduce-scatter");
    }
    nccl_->wait(stream, "reduce-scatter");
  }
  void nccl_cuda(cudaError_t rc) {
    if (rc != cudaSuccess)
      throw RuntimeFailure("rank " + std::to_string(rank_) +
                           ": device copy for a collective failed: " + cudaGetErrorString(rc));
  }
  std::shared_ptr<NcclComm> nccl_;
#endif
  std::shared_ptr<MPI_Comm> owned_;  ///< a communicator made by split(), freed with the last copy
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
  DeviceEngine device_engine_;
  bool explicit_engine_ = false;  ///< KFACTOR_COMM_ENGINE=nccl: no silent fallback
  int rank_ = 0, size_ = 1;
};

/// P + 1 boundaries of contiguous blocks balanced by `counts` (nonzeros per
/// row or column; kfactor::distributed::balanced_column_blocks), then moved so that every
/// block has at least min_size rows (needs counts.size() >= parts * min_size).
inline std::vector<ordinal_t> nonempty_balanced_blocks(const std::vector<offset_t>& counts, int parts,
                                                       ordinal_t min_size = 1) {
  const auto n = static_cast<ordinal_t>(counts.size());
  if (n < parts * min_size)
    throw UsageError("distributed: " + std::to_string(parts * min_size) + " ranks but only " + std::to_string(n) +
                     " rows or columns to share; use at most " + std::to_string(n) + " ranks");
  auto b = balanced_column_blocks(counts, parts);
  for (int p = 1; p < parts; ++p) b[p] = std::max(b[p], b[p - 1] + min_size);       // min_size each, from the left
  for (int p = parts - 1; p >= 1; --p) b[p] = std::min(b[p], b[p + 1] - min_size);  // and room for the rest
  return b;
}

}  // namespace kfactor::distributed::detail

#endif  // KFACTOR_HAVE_MPI
