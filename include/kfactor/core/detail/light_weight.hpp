#pragma once
/// \file
/// The light-weight launch hint of kfactor's hot kernels.

#include <Kokkos_Core.hpp>

namespace kfactor::detail {

/// The policy with the light-weight hint. On CUDA, Kokkos stages a kernel
/// whose closure has 512 bytes or more through constant memory, and each such
/// launch first waits on the host for the previous one to finish: a host
/// round trip per launch on top of the kernel (NMF's former per-column W
/// update, a 520-byte closure, took about 36 us per column on the H100). With
/// the hint the closure travels as a kernel argument (up to 4 KiB) and
/// launches queue without a host synchronisation. Kernels launched many times
/// per iteration on small inputs (the NMF sweeps, the SpMM, implicit ALS's
/// CG steps) take it. A no-op on host backends.
template <class Policy>
auto light_weight(const Policy& policy) {
  return Kokkos::Experimental::require(policy, Kokkos::Experimental::WorkItemProperty::HintLightWeight);
}

}  // namespace kfactor::detail
