#pragma once
/// \file
/// The dense inputs of a generated SDDMM run: A (m x K) and B (n x K) with
/// entries uniform in [-1, 1), drawn in the accumulation type from
/// core/random.hpp's counter generator and then stored as TI. A depends only
/// on (seed, factor_w), B only on (seed, factor_h), so every rank of a
/// distributed run, the single-rank run and the autotuner see the same
/// factors on every backend. (The sparse pattern comes from generate.hpp.)

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/kernels/detail/sddmm_kernels.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace kfactor {

/// {A, B}: m x K and n x K, uniform in [-1, 1) rounded to TI. Throws
/// OutOfMemory naming the sizes when the memory space cannot hold them
/// (with the accumulation-type staging copies).
template <class TI, class ExecutionSpace>
std::pair<DenseMatrix<TI, typename ExecutionSpace::memory_space>,
          DenseMatrix<TI, typename ExecutionSpace::memory_space>>
sddmm_random_factors(const ExecutionSpace& exec, std::int64_t m, std::int64_t n, int K, std::uint64_t seed) {
  using Mem = typename ExecutionSpace::memory_space;
  using Acc = detail::sddmm_acc_t<TI>;
  auto failure = [&](const std::exception& e) {
    const double gib = double(m + n) * K * double(sizeof(Acc) + sizeof(TI)) / double(1ull << 30);
    return OutOfMemory("sddmm: cannot allocate A (" + std::to_string(m) + " x " + std::to_string(K) + ") and B (" +
                       std::to_string(n) + " x " + std::to_string(K) + "), about " + std::to_string(gib) +
                       " GiB with their staging copies; lower K: " + e.what());
  };
  DenseMatrix<Acc, Mem> A0, B0;
  DenseMatrix<TI, Mem> A, B;
  try {
    A0 = DenseMatrix<Acc, Mem>("kfactor::sddmm_A0", m, K);
    B0 = DenseMatrix<Acc, Mem>("kfactor::sddmm_B0", n, K);
    A = DenseMatrix<TI, Mem>("kfactor::sddmm_A", m, K);
    B = DenseMatrix<TI, Mem>("kfactor::sddmm_B", n, K);
  } catch (const std::exception& e) {
    throw failure(e);
  }
  fill_uniform(exec, A0, seed, RngStream::factor_w, Acc(-1), Acc(1));
  fill_uniform(exec, B0, seed, RngStream::factor_h, Acc(-1), Acc(1));
  Kokkos::parallel_for(
      "kfactor::sddmm_cast",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {A.extent(0), A.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k) { A(i, k) = static_cast<TI>(A0(i, k)); });
  Kokkos::parallel_for(
      "kfactor::sddmm_cast",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {B.extent(0), B.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k) { B(i, k) = static_cast<TI>(B0(i, k)); });
  return {A, B};
}

}  // namespace kfactor
