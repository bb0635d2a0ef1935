#pragma once
/// \file
/// NCCL glue for detail::Collectives (builds with KFACTOR_HAVE_NCCL only):
/// a communicator bootstrapped over MPI, the element-type map, and a wait
/// that cannot hang. Collectives enqueue on the execution space's CUDA
/// stream, so device data never visits the host.
///
/// **Faults.** NCCL reports errors of a peer (a lost connection, a rank that
/// died) asynchronously, while the kernel of a collective may wait forever.
/// wait() therefore polls the stream together with ncclCommGetAsyncError and
/// a deadline (KFACTOR_COMM_TIMEOUT seconds, default 300): on an error or
/// when the deadline passes it aborts the communicator (which ends the
/// pending kernels) and throws RuntimeFailure naming this rank, so the driver
/// ends the job with exit 4 instead of hanging.
///
/// **Reuse.** Creating a communicator costs hundreds of milliseconds (NCCL
/// connects every pair of GPUs), and one program runs many solvers over the
/// same ranks, so shared_nccl_comm() keeps one communicator per group of
/// ranks and device until Kokkos is finalized.

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_NCCL)
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <kfactor/core/error.hpp>

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace kfactor::distributed::detail {

template <class T>
ncclDataType_t nccl_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>)
    return ncclFloat32;
  else if constexpr (std::is_same_v<U, double>)
    return ncclFloat64;
  else if constexpr (std::is_same_v<U, int>)
    return ncclInt32;
  else if constexpr (std::is_same_v<U, long long> || (std::is_same_v<U, long> && sizeof(long) == 8))
    return ncclInt64;
  else
    static_assert(sizeof(U) == 0, "no NCCL datatype for this element type");
}

/// Empty when NCCL can join the ranks of `comm`, else why not: NCCL needs
/// one GPU per rank, and ranks that share a GPU (more ranks than GPUs on a
/// host) make its initialisation fail. Compares the host name and the
/// current device's PCI bus id of every rank (identical result on every
/// rank). Collective.
inline std::string nccl_unusable_reason(MPI_Comm comm) {
  constexpr int width = 128;
  char mine[width] = {};
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  int device = 0;
  char bus[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof(bus), device) != cudaSuccess)
    std::strncpy(bus, "unknown", sizeof(bus) - 1);
  std::snprintf(mine, width, "%s|%s", host, bus);
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<char> all(static_cast<std::size_t>(width) * size);
  MPI_Allgather(mine, width, MPI_CHAR, all.data(), width, MPI_CHAR, comm);
  for (int a = 0; a < size; ++a)
    for (int b = a + 1; b < size; ++b)
      if (std::strncmp(&all[std::size_t(a) * width], &all[std::size_t(b) * width], width) == 0)
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share the GPU " +
               std::string(&all[std::size_t(a) * width]) + " (NCCL needs one GPU per rank)";
  return {};
}

/// One NCCL communicator over the ranks of an MPI communicator, on the
/// current CUDA device. Construction is collective over the MPI
/// communicator.
class NcclComm {
 public:
  NcclComm(MPI_Comm comm, int rank, int size) : rank_(rank) {
    ncclUniqueId id{};
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) id = ncclUniqueId{};
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
    check(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
    if (const char* t = std::getenv("KFACTOR_COMM_TIMEOUT")) {
      char* end = nullptr;
      const double s = std::strtod(t, &end);
      if (end != t && *end == '\0' && s > 0.0 && s < 1e7) timeout_s_ = s;
    }
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ~NcclComm() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  [[nodiscard]] ncclComm_t get() const { return comm_; }
  /// True once an error aborted this communicator: it cannot run again.
  [[nodiscard]] bool aborted() const { return aborted_; }

  /// Throws RuntimeFailure (after aborting the communicator) unless rc is
  /// ncclSuccess.
  void check(ncclResult_t rc, const char* what) {
    if (rc == ncclSuccess) return;
    fail(std::string(what) + " failed: " + ncclGetErrorString(rc));
  }

  /// Blocks until the work enqueued on `stream` has finished; see the file
  /// comment for how a failing peer ends the wait.
  void wait(cudaStream_t stream, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    for (int polls = 0;; ++polls) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) fail(std::string(what) + ": CUDA error " + cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        fail(std::string(what) + " failed: " + ncclGetErrorString(async) + " (a peer rank may have failed)");
      if (std::chrono::steady_clock::now() > deadline)
        fail(std::string(what) + " did not complete within " + std::to_string(static_cast<long>(timeout_s_)) +
             " s (KFACTOR_COMM_TIMEOUT); a peer rank may have failed");
      // Spin briefly (collectives of a few MB finish in tens of microseconds),
      // then yield so a long wait does not take a core from the other ranks.
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

 private:
  /// Aborts at once (not when the last owner lets go): that ends the
  /// kernels still waiting for a failed peer.
  [[noreturn]] void fail(const std::string& message) {
    aborted_ = true;
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    throw RuntimeFailure("rank " + std::to_string(rank_) + ": NCCL " + message);
  }
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  bool aborted_ = false;
  double timeout_s_ = 300.0;
};

/// The NCCL communicator of the ranks of `comm` on the current device,
/// created on first use and shared by every later caller with the same
/// group (see Reuse in the file comment). Collective over `comm`: whether a
/// kept communicator is reused is agreed by all ranks, so a rank whose copy
/// was aborted never leaves the others waiting in ncclCommInitRank.
inline std::shared_ptr<NcclComm> shared_nccl_comm(MPI_Comm comm, int rank, int size) {
  // Key: the world ranks of the group, then the device.
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> local(size), key(size + 1);
  for (int r = 0; r < size; ++r) local[r] = r;
  MPI_Group_translate_ranks(group, size, local.data(), world, key.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  cudaGetDevice(&key[size]);

  static std::map<std::vector<int>, std::shared_ptr<NcclComm>> kept;
  static bool hook = false;
  if (!hook) {
    // Before Kokkos releases the device: destroying a communicator later,
    // among static destructors, may find the CUDA runtime gone.
    Kokkos::push_finalize_hook([] { kept.clear(); });
    hook = true;
  }
  auto it = kept.find(key);
  int usable = it != kept.end() && !it->second->aborted() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &usable, 1, MPI_INT, MPI_LAND, comm);
  if (usable) return it->second;
  if (it != kept.end()) kept.erase(it);
  auto made = std::make_shared<NcclComm>(comm, rank, size);
  kept.emplace(key, made);
  return made;
}

}  // namespace kfactor::distributed::detail
#endif
