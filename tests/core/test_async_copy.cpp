// async_copy (core/async_copy.hpp): 4-, 8- and 16-byte pieces copied from
// global memory into team scratch (cp.async on CUDA 8.0+, a plain copy
// elsewhere) arrive intact after async_copy_wait() and a team barrier, at
// every offset of the pieces and with the scratch reused for a second round.
#include <kfactor/core/async_copy.hpp>

#include "common/test_spaces.hpp"

#include <cstdint>
#include <vector>

namespace {
using namespace kfactor;

template <class Space>
class AsyncCopy : public ::testing::Test {};
TYPED_TEST_SUITE(AsyncCopy, kfactor::test::ExecutionSpaces, kfactor::test::SpaceNames);

// Each team copies `n` words of src, in pieces of Bytes, into its scratch,
// twice (the second round from the other half of src), and writes back what
// landed.
template <int Bytes, class Space>
std::vector<std::uint32_t> copy_through_scratch(const std::vector<std::uint32_t>& in, int teams) {
  using Mem = typename Space::memory_space;
  using Policy = Kokkos::TeamPolicy<Space>;
  using Scratch =
      Kokkos::View<std::uint32_t*, typename Space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  constexpr int words = Bytes / 4;
  const int n = int(in.size()) / (2 * teams);  // words per team and round
  Kokkos::View<std::uint32_t*, Mem> src("src", in.size()), dst("dst", in.size());
  Kokkos::deep_copy(src, Kokkos::View<const std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                             in.data(), in.size()));
  Policy policy(teams, Kokkos::AUTO);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(n) + 16));
  Kokkos::parallel_for(
      policy, KOKKOS_LAMBDA(const typename Policy::member_type& tm) {
        auto* buf = static_cast<std::uint32_t*>(tm.team_scratch(0).get_shmem_aligned(n * sizeof(std::uint32_t), 16));
        for (int round = 0; round < 2; ++round) {
          const std::size_t base = (std::size_t(round) * teams + tm.league_rank()) * n;
          for (int p = tm.team_rank(); p < n / words; p += tm.team_size())
            async_copy<Bytes>(buf + p * words, src.data() + base + std::size_t(p) * words);
          async_copy_wait();
          tm.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(tm, n), [&](int i) { dst(base + i) = buf[i]; });
          tm.team_barrier();  // everyone has read buf before the next round overwrites it
        }
      });
  std::vector<std::uint32_t> out(in.size());
  Kokkos::deep_copy(
      Kokkos::View<std::uint32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(out.data(), out.size()),
      dst);
  return out;
}

TYPED_TEST(AsyncCopy, PiecesArriveIntact) {
  using Space = TypeParam;
  const int teams = 5, n = 96;
  std::vector<std::uint32_t> in(std::size_t(2) * teams * n);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = std::uint32_t(0x9E3779B9u * (i + 1));
  EXPECT_EQ((copy_through_scratch<4, Space>(in, teams)), in);
  EXPECT_EQ((copy_through_scratch<8, Space>(in, teams)), in);
  EXPECT_EQ((copy_through_scratch<16, Space>(in, teams)), in);
}

}  // namespace
