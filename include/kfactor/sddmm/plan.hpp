#pragma once
/// \file
/// kfactor::SddmmPlan: an SDDMM prepared once for one sparsity pattern and one
/// K, then applied many times to new dense inputs (as ALS, LDA and attention
/// codes do).
///
/// Building a plan (host work, timed in info().build_seconds) validates S's
/// pattern and values, picks the kernel and its parameters from the options
/// and the paper's models, and lays the nonzeros out for that kernel:
///   - nzsplit (the default for sparse S on GPUs when K is a whole number
///     of 16-byte packs): the layout in batches of consecutive nonzeros,
///     one per group of lanes, with one butterfly reduction per batch
///     (kernels/detail/sddmm_nzsplit.hpp); the layout keeps the staged row
///     of every nonzero (4 bytes each). With L2 hints (options.
///     hot_cache_fraction, 32-lane form on CUDA) it also keeps a copy of the
///     streamed indices with the cold ones marked (4 bytes each).
///   - rowsplit (the default elsewhere): work items of at most `chunk`
///     nonzeros of one staged row within one column tile, ordered tile by
///     tile; one group of vector lanes per item, lanes across K with 16-byte
///     loads, the staged row read once per 4 nonzeros. In the normal
///     orientation the items index S's CSR itself (no copy, no indirection);
///     the transposed one (stage B) uses a permuted copy of the pattern.
///   - sm_l2: the paper's Alg. 4/5 (active rows in team scratch, K-slices).
///   - panels: the panel layout (plan_build.hpp) run by sddmm_panels_kernel
///     (kernels/detail/sddmm_panels.hpp): panels of active rows in team
///     scratch, their nonzeros in nzsplit's batches by streamed index. The
///     layout keeps 8 bytes per nonzero on devices (streamed index and row
///     within the panel packed in 4, S's position in 4) where they fit, 16
///     otherwise. With K not in 16-byte packs or unaligned A or B it runs
///     the reference kernel.
///   - sm_sm: the paper's §IV-B for dense-ish S.
///   - reference: one thread per nonzero.
///
/// The plan keeps shallow copies of S's views: the pattern must not change
/// after building; the values may (apply() reads them every time).
///
/// Element types: T is S's and out's value type (float or double); TI is the
/// element type of A and B (T, or Kokkos::Experimental::half_t / bhalf_t with
/// T = float; the dot products then accumulate in float). On Kokkos builds
/// without a device half type (host-only builds) half_t and bhalf_t are float.

#include <kfactor/config.hpp>
#include <kfactor/core/detail/eti.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/kernels/detail/sddmm_nzsplit.hpp>
#include <kfactor/kernels/detail/sddmm_panels.hpp>
#include <kfactor/kernels/sddmm.hpp>
#include <kfactor/sddmm/detail/plan_build.hpp>
#include <kfactor/sddmm/options.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace kfactor {

/// What a plan chose, for reports and tests.
struct SddmmPlanInfo {
  SddmmKernel kernel = SddmmKernel::rowsplit;
  bool transposed = false;           ///< staged matrix is B (eq. 4 or options)
  double density = 0.0;              ///< nnz / (M N)
  std::int64_t model_tile_cols = 0;  ///< the model's raw T_j (before rounding and capping)
  ordinal_t tile_cols = 0;           ///< T_j used (== streamed rows: no tiling)
  std::int64_t tiles = 1;
  int tk = 0, ti = 0;          ///< SM-L2 K-slice and rows per block
  int panel_rows = 0;          ///< panels: staged rows per panel
  bool compact_index = false;  ///< panels: 32-bit packed indices (SddmmPanelIndex)
  int smsm_tile = 0;           ///< SM-SM T_i = T_j
  int chunk = 0, vector_length = 1, team_size = 1, items_per_team = 1;
  std::int64_t hot_rows = -1;  ///< nzsplit with L2 hints: streamed indices kept in L2 (-1: no hints)
  std::int64_t items = 0, blocks = 0;
  std::int64_t staged_rows = 0;  ///< SM-L2: sum over tiles of the active rows staged
  bool identity_layout = true;
  std::size_t cache_bytes = 0, scratch_bytes = 0;
  double build_seconds = 0.0;
};

template <class ExecutionSpace, class T, class TI = T>
class SddmmPlan {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using value_type = T;
  using input_type = TI;
  using csr_type = CsrMatrix<T, memory_space>;
  using input_view = Kokkos::View<const TI**, Kokkos::LayoutRight, memory_space>;
  using output_view = Kokkos::View<T*, memory_space>;

  SddmmPlan() = default;

  /// Builds the plan for S and inner dimension K (see the file comment).
  SddmmPlan(const ExecutionSpace& exec, const csr_type& S, int K, const SddmmOptions& options = {});

  /// out_e = s_e <A_i, B_j> (scaled) or <A_i, B_j> (unscaled) at every stored
  /// nonzero e = (i, j) of S, in S's CSR order. A: M x K, B: N x K.
  void apply(const ExecutionSpace& exec, const input_view& A, const input_view& B, const output_view& out,
             bool scaled = true) const;

  /// Views of any compatible type (DenseMatrix<TI>, non-const, ...).
  template <class AV, class BV>
  void operator()(const ExecutionSpace& exec, const AV& A, const BV& B, const output_view& out,
                  bool scaled = true) const {
    apply(exec, input_view(A), input_view(B), out, scaled);
  }

  [[nodiscard]] const SddmmPlanInfo& info() const { return info_; }
  [[nodiscard]] const SddmmOptions& options() const { return options_; }
  [[nodiscard]] int rank() const { return k_; }
  [[nodiscard]] const csr_type& matrix() const { return S_; }

  /// SM-L2 only: the active staged rows, tile after tile, and the tiles'
  /// offsets into that list (host copies, for tests and reports).
  [[nodiscard]] std::vector<ordinal_t> active_rows_host() const;
  [[nodiscard]] const std::vector<offset_t>& tile_active_offsets() const { return tile_active_offsets_; }

 private:
  void apply_nzsplit(const ExecutionSpace& exec, const input_view& X, const input_view& Y, const output_view& out,
                     bool scaled) const;
  void apply_panels(const ExecutionSpace& exec, const input_view& X, const input_view& Y, const output_view& out,
                    bool scaled) const;
  /// K in 16-byte packs and X, Y with 16-byte aligned rows (the vector kernels' requirement).
  bool packed_and_aligned(const input_view& X, const input_view& Y) const {
    auto aligned = [](const input_view& V) {
      return reinterpret_cast<std::uintptr_t>(V.data()) % 16 == 0 && (V.stride(0) * sizeof(TI)) % 16 == 0;
    };
    return k_ % detail::SddmmPack<TI>::width == 0 && aligned(X) && aligned(Y);
  }

  csr_type S_;
  int k_ = 0;
  SddmmOptions options_;
  SddmmPlanInfo info_;
  detail::SddmmLaunch launch_;
  detail::SddmmNzLaunch nz_launch_;
  int nz_lanes_ = 8;
  Kokkos::View<detail::SddmmItem*, memory_space> items_;
  Kokkos::View<ordinal_t*, memory_space> rows_;  ///< nzsplit: staged row per layout position
  Kokkos::View<ordinal_t*, memory_space> cols_;
  Kokkos::View<ordinal_t*, memory_space> hinted_cols_;  ///< nzsplit with L2 hints: cols with the cold bit
  Kokkos::View<offset_t*, memory_space> dst_;
  Kokkos::View<detail::SddmmBlock*, memory_space> blocks_;
  Kokkos::View<ordinal_t*, memory_space> active_rows_;
  Kokkos::View<ordinal_t*, memory_space> lrow_;
  std::vector<offset_t> tile_active_offsets_;
  Kokkos::View<std::uint32_t*, memory_space> panel_packed_;  ///< panels, compact: streamed index << 8 | panel row
  Kokkos::View<std::uint32_t*, memory_space> panel_dst32_;   ///< panels, compact: S position
};

namespace detail {

template <class Mem, class V>
Kokkos::View<V*, Mem> upload(const std::vector<V>& h, const char* label) {
  Kokkos::View<V*, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), h.size());
  Kokkos::deep_copy(
      d, Kokkos::View<const V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()));
  return d;
}

/// Number of entries of X that are NaN or +-Inf.
template <class ExecutionSpace, class TI, class Mem>
std::size_t count_nonfinite(const ExecutionSpace& exec, const Kokkos::View<const TI**, Kokkos::LayoutRight, Mem>& X) {
  std::size_t bad = 0;
  if (X.size() == 0) return 0;
  Kokkos::parallel_reduce(
      "kfactor::sddmm_check_finite",
      Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(exec, {0, 0}, {X.extent(0), X.extent(1)}),
      KOKKOS_LAMBDA(std::size_t i, std::size_t k, std::size_t& b) {
        const auto v = static_cast<double>(static_cast<sddmm_acc_t<TI>>(X(i, k)));
        if (!Kokkos::isfinite(v)) ++b;
      },
      bad);
  return bad;
}

template <class ExecutionSpace, class T, class Mem>
std::size_t count_nonfinite(const ExecutionSpace& exec, const Kokkos::View<T*, Mem>& x) {
  std::size_t bad = 0;
  Kokkos::parallel_reduce(
      "kfactor::sddmm_check_values", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, x.extent(0)),
      KOKKOS_LAMBDA(std::size_t e, std::size_t& b) {
        if (!Kokkos::isfinite(static_cast<double>(x(e)))) ++b;
      },
      bad);
  return bad;
}

inline int next_pow2(int x) {
  int p = 1;
  while (p < x) p *= 2;
  return p;
}

}  // namespace detail

template <class ExecutionSpace, class T, class TI>
SddmmPlan<ExecutionSpace, T, TI>::SddmmPlan(const ExecutionSpace& exec, const csr_type& S, int K,
                                            const SddmmOptions& options)
    : S_(S), k_(K), options_(options) {
  using Traits = detail::SddmmTraits<ExecutionSpace>;
  const auto t0 = std::chrono::steady_clock::now();
  options.validate();
  check_range("sddmm", "K", K, sddmm_rank_range);
  const ordinal_t m = S.num_rows(), n = S.num_cols;
  const offset_t nnz = S.nnz();
  if (S.row_map.extent(0) == 0) throw InputError("sddmm: S has no row_map");
  if (S.values.extent(0) != nnz)
    throw InputError("sddmm: S has " + std::to_string(nnz) + " column indices but " +
                     std::to_string(S.values.extent(0)) + " values");

  auto h_rm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.row_map);
  auto h_ent = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, S.entries);
  detail::validate_sddmm_pattern(h_rm.data(), h_ent.data(), m, n, nnz);
  if (const auto bad = detail::count_nonfinite(exec, S.values); bad > 0)
    throw InputError("sddmm: S has " + std::to_string(bad) + " NaN or Inf values");

  const std::size_t esize = sizeof(TI);
  info_.cache_bytes = options.cache_bytes ? options.cache_bytes : Traits::cache_bytes(exec);
  info_.scratch_bytes = options.scratch_bytes ? options.scratch_bytes : Traits::scratch_bytes();
  const auto max0 = static_cast<std::size_t>(Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0));
  if (info_.scratch_bytes + 256 > max0) info_.scratch_bytes = max0 > 512 ? max0 - 256 : max0;
  info_.density = (m > 0 && n > 0) ? double(nnz) / (double(m) * double(n)) : 0.0;

  // Kernel.
  SddmmKernel kernel = options.kernel;
  const int smsm_t = options.smsm_tile > 0 ? options.smsm_tile : sm_sm_tile(info_.scratch_bytes, K, esize);
  const bool smsm_fits =
      smsm_t >= 1 && std::size_t(smsm_t) * (2 * std::size_t(K) * esize + sizeof(offset_t)) <= info_.scratch_bytes;
  constexpr int W = detail::SddmmPack<TI>::width;
  kernel = choose_sddmm_kernel(Traits::gpu, info_.density, options, smsm_t, smsm_fits, K % W == 0);
  if (kernel == SddmmKernel::sm_sm && !smsm_fits)
    throw UsageError("sddmm: SM-SM needs (T_i + T_j) K sizeof <= scratch: K = " + std::to_string(K) + ", scratch " +
                     std::to_string(info_.scratch_bytes) + " bytes");

  // Staged matrix (eq. 4) and column tiles (eq. 6).
  const bool tiled_kernel = kernel == SddmmKernel::rowsplit || kernel == SddmmKernel::nzsplit ||
                            kernel == SddmmKernel::panels || kernel == SddmmKernel::sm_l2;
  // Eq. 4 saves K (N - M) words by staging B when N > M; the transposed
  // layout costs about 2 words per nonzero (its output/value positions), so
  // automatic staging takes B only when the saving exceeds that.
  const bool eq4_b = eq4_choice(m, n) == SddmmStaged::b && double(K) * (double(n) - double(m)) > 2.0 * double(nnz);
  info_.transposed =
      tiled_kernel && (options.staged == SddmmStaged::automatic ? eq4_b : options.staged == SddmmStaged::b);
  const ordinal_t C = info_.transposed ? m : n;
  const double per_staged_row = double(nnz) / double(std::max<ordinal_t>(info_.transposed ? n : m, 1));
  // Automatic plans take panels over nzsplit on long rows (64 or more per
  // staged row) when each of nzsplit's 8 lanes holds 4 to 8 packs of K (fp32
  // K = 128 to 256, bf16 256 to 512). On the H100 (kernel time)
  // M1 (230 per row) ran at fp32 K = 128 at 5046 GFLOP/s against 4348, and
  // bf16 K = 512 at 8258 against 6855. With fewer packs per lane the panel
  // order's per-nonzero work outweighs the L2 traffic it saves (fp32 K = 32:
  // 1951 against 4202; bf16 K = 128: 6492 against 7963); 32 lanes (fp32
  // K = 512) lost too (3423 against 4023), and M2's short rows (5.6 per
  // row) leave panels little to share (1494 against 2234 at fp32 K = 128).
  if (options.kernel == SddmmKernel::automatic && kernel == SddmmKernel::nzsplit && per_staged_row >= 64.0 &&
      K / W >= 32 && K / W <= 64 && options.vector_length == 0)
    kernel = SddmmKernel::panels;
  info_.kernel = kernel;
  const bool nzsplit = kernel == SddmmKernel::nzsplit;
  const bool panels = kernel == SddmmKernel::panels;
  const double l2_elems = double(info_.cache_bytes) / double(esize);
  info_.model_tile_cols = model_tile_cols_raw(l2_elems, info_.density, options.model_c);
  std::int64_t tj = std::max<ordinal_t>(C, 1);
  if (tiled_kernel && options.column_tiles) {
    if (options.tile_cols > 0) {
      tj = options.tile_cols;
    } else {
      tj = round_tile_cols(std::min<std::int64_t>(info_.model_tile_cols, std::int64_t(1) << 40), options.tile_round, C);
      if (options.cap_tile_to_cache) {
        const auto cap = static_cast<std::int64_t>(info_.cache_bytes / (std::size_t(K) * esize));
        if (tj > cap) {
          const std::int64_t down = cap / options.tile_round * options.tile_round;
          tj = std::max<std::int64_t>(down > 0 ? down : cap, 1);
        }
      }
      if (nzsplit || panels) {
        // nzsplit tiles only to keep the streamed matrix within the cache,
        // and only when a staged row keeps at least a batch (32) of nonzeros
        // per tile: on the H100 the density model's tiles cost 22% at M1,
        // K = 32 (B fits the L2) and short rows (M2, 5.6 per row) lost 22-26%
        // at every K to the staged rows re-read per tile, while M1 at K = 512
        // (B 4x the L2, 230 per row) gained 38%.
        const auto streamed = double(C) * double(K) * double(esize);
        const double per_row_tile = per_staged_row / double(tile_count(C, tj));
        if (streamed <= double(info_.cache_bytes) || per_row_tile < 32.0) tj = C;
        // A panel reads a streamed row once for all its staged rows, so
        // panels keep less of the streamed matrix in L2 and lose more to the
        // panels re-staged per tile: untiled, M1 (B 1.0x and 2.0x the L2) ran
        // fp32 K = 128 at 4882 GFLOP/s against 4678 with 3 tiles, bf16 K = 512
        // at 8129 against 7908 with 3 (H100). They tile from 4x the cache on.
        if (panels && streamed <= 4.0 * double(info_.cache_bytes)) tj = C;
      }
    }
    tj = std::clamp<std::int64_t>(tj, 1, std::max<ordinal_t>(C, 1));
  }
  info_.tile_cols = static_cast<ordinal_t>(tj);
  info_.tiles = tile_count(C, tj);

  // L2 hints (nzsplit's 32-lane form on CUDA). On the H100 they
  // took M2 (1.9 GB of streamed rows at fp32 K = 512, 36x the L2, one tile)
  // from 1682 to 1964 GFLOP/s at K = 512, and at K = 128 from 1855 to 2130
  // (against 1841 for 8 lanes without hints), so automatic plans with hints
  // take 32 lanes from 32 packs on for 4- and 8-byte inputs (bf16 at K = 512,
  // 64 packs, keeps 8 lanes: 3743 and 3560 in two calls, against 3583 and
  // 3575 with 32 and hints). Hints cost M1 at K = 512 (tiles that fit the
  // L2) 5%, and untiled M1 at K = 128 (B 52.6 MB, just above the L2's 52.4)
  // 7% (3766 against 4054 with 8 lanes), so automatic hints need a tile of
  // more than twice the cache; in the 4- and 8-lane forms they cost 1-38%.
  const std::size_t row_bytes = std::size_t(K) * esize;
  const double tile_bytes = double(info_.tile_cols) * double(row_bytes);
  const double hot = !Traits::gpu                                                       ? 0.0
                     : options.hot_cache_fraction >= 0                                  ? options.hot_cache_fraction
                     : info_.tiles == 1 && tile_bytes > 2.0 * double(info_.cache_bytes) ? 0.5
                                                                                        : 0.0;
  const auto hot_budget = static_cast<std::size_t>(hot * double(info_.cache_bytes)) / row_bytes;  // rows kept

  // Launch shape: lanes across K in 16-byte packs.
  const int packs = (K % W == 0) ? K / W : K;
  int V = options.vector_length;
  if (V == 0) V = Traits::gpu ? std::min(detail::next_pow2(packs), 32) : 1;
  if (kernel == SddmmKernel::sm_l2 || kernel == SddmmKernel::sm_sm)
    V = options.vector_length ? options.vector_length : (Traits::gpu ? std::min(detail::next_pow2(K), 32) : 1);
  const int vmax = Kokkos::TeamPolicy<ExecutionSpace>::vector_length_max();
  V = std::min(V, vmax);
  launch_.vector_length = V;
  launch_.team_size = options.team_size ? options.team_size : Traits::team_size(V);
  if constexpr (Traits::gpu)
    launch_.team_size = std::max(1, std::min(launch_.team_size, 1024 / V));
  else
    launch_.team_size = std::max(1, std::min(launch_.team_size, exec.concurrency()));
  launch_.items_per_team =
      kernel == SddmmKernel::rowsplit ? Traits::items_per_team(launch_.team_size) : launch_.team_size;
  if (Traits::gpu && launch_.items_per_team < launch_.team_size) launch_.items_per_team = launch_.team_size;
  info_.vector_length = V;
  info_.team_size = launch_.team_size;
  info_.items_per_team = launch_.items_per_team;
  bool hinted_form = false;  // nzsplit's 32-lane form with L2 hints (hot_budget is 0 on hosts)
  if (nzsplit || panels) {
    // Lane groups of 4, 8 or 32 in teams of 256 threads (panels: teams of
    // 128, four per multiprocessor, ran M1 fp32 at K = 128 at 4635 GFLOP/s
    // against 4879 on the H100). Only nzsplit has the hinted 32-lane form.
    if (options.vector_length != 0 && options.vector_length != 4 && options.vector_length != 8 &&
        options.vector_length != 32)
      throw UsageError(std::string("sddmm: ") + to_string(kernel) +
                       " runs 4, 8 or 32 lanes per group, got vector_length " + std::to_string(options.vector_length));
    const bool hinted_lanes = nzsplit && hot_budget > 0 && packs >= 32 && K % W == 0 && esize >= 4;
    nz_lanes_ = !Traits::gpu            ? 1
                : options.vector_length ? options.vector_length
                : hinted_lanes          ? 32
                                        : detail::sddmm_nz_lanes(packs);
    nz_launch_.team_size = Traits::gpu ? 256 / nz_lanes_ : 1;
    hinted_form = nzsplit && nz_lanes_ == 32 && hot_budget > 0 && K % W == 0;
    info_.vector_length = nz_lanes_;
    info_.team_size = nz_launch_.team_size;
  }
  if (panels) {
    const auto max0 = static_cast<std::size_t>(Kokkos::TeamPolicy<ExecutionSpace>::scratch_size_max(0));
    const std::size_t budget =
        std::min(options.panel_bytes ? options.panel_bytes : std::size_t(32) << 10, max0 > 512 ? max0 - 256 : max0);
    const auto fit = static_cast<int>(std::min<std::size_t>(256, budget / std::max<std::size_t>(row_bytes, 1)));
    info_.panel_rows = options.panel_rows ? options.panel_rows : std::max(fit, 1);
    if (Traits::gpu && std::size_t(info_.panel_rows) * row_bytes + 256 > max0)
      throw UsageError("sddmm: a panel of " + std::to_string(info_.panel_rows) + " staged rows of K = " +
                       std::to_string(K) + " needs " + std::to_string(std::size_t(info_.panel_rows) * row_bytes) +
                       " bytes of team scratch; the device has " + std::to_string(max0));
  }
  if (nzsplit) {
    // nzsplit falls back to rowsplit (launch_, items_) when K is not whole
    // packs or apply() gets unaligned rows.
    // Up to 32 batches per group (16 with 32 lanes), fewer when that leaves
    // under 4 teams per resident team slot (small S, e.g. facebook: 86 teams
    // for 132 multiprocessors at 4). On the H100, M1 (the only one of the
    // peers' matrices large enough to reach the cap) ran at fp32 K = 32 at
    // 3863 / 4049 / 4191 GFLOP/s with a cap of 8 / 16 / 32, and at bf16
    // K = 128 at 7392 / 7773 / 7968; its 32-lane form (fp32 K = 512) at
    // 4054 / 4038 / 3990.
    const std::int64_t batches = (std::int64_t(nnz) + nz_lanes_ - 1) / nz_lanes_;
    const std::int64_t slots = std::max<std::int64_t>(exec.concurrency() / 256, 1) * 4;
    const std::int64_t multiprocessors = std::max<std::int64_t>(exec.concurrency() / 2048, 1);
    const std::int64_t groups = nz_launch_.team_size;  // lane groups per team
    nz_launch_.batches_per_group =
        static_cast<int>(std::clamp<std::int64_t>(batches / (groups * slots), 1, nz_lanes_ == 32 ? 16 : 32));
    // 8 (or 4) lanes on long rows (whole batches in one row): three teams per
    // multiprocessor, at 80 registers. On the H100 that took M1 at K = 32
    // from 3331 to 3666 GFLOP/s, but cost M2 (5.6 nonzeros per row, whose
    // mixed-row batches need more registers) 9-21%. Also when the grid fits
    // the device in one wave of three teams per multiprocessor but not of
    // two (facebook: 345 teams of one batch per group on 132
    // multiprocessors), where a second wave would double the time.
    const std::int64_t teams =
        (batches + groups * nz_launch_.batches_per_group - 1) / (groups * nz_launch_.batches_per_group);
    const bool one_wave_at_three = teams > 2 * multiprocessors && teams <= 3 * multiprocessors;
    nz_launch_.min_teams = hinted_form ? 1 : nz_lanes_ <= 8 && (per_staged_row >= 64.0 || one_wave_at_three) ? 3 : 2;
    // Short rows on a device, where S fills more than 4 waves of resident
    // teams, and the hinted form (one team per multiprocessor): one wave, as
    // many batches per group as spread S over the resident teams, so that no
    // group waits at its team's end for the rest of the team before the next
    // team can start. On the H100 (kernel time, GFLOP/s) M2 fp32 went from
    // 2278 to 2377 at K = 128 (hinted; two waves: 2370) and from 1726 to
    // 1926 at K = 32, bf16 from 3656 to 3901 at K = 128 and from 3602 to
    // 3645 at K = 512; M1 (long rows) lost 6% at K = 32 (4378 -> 4128).
    const std::int64_t resident = multiprocessors * nz_launch_.min_teams;
    if (Traits::gpu && (hinted_form || (per_staged_row < 64.0 && teams > 4 * resident)))
      nz_launch_.batches_per_group = static_cast<int>(std::min<std::int64_t>(
          (batches + resident * groups - 1) / (resident * groups), std::numeric_limits<int>::max()));
    info_.items_per_team = nz_launch_.team_size * nz_launch_.batches_per_group;
  }

  detail::SddmmLayoutRequest req;
  req.transposed = info_.transposed;
  req.tile_cols = info_.tile_cols;
  req.rowsplit = kernel == SddmmKernel::rowsplit || nzsplit;
  req.nzsplit = nzsplit;
  req.chunk = options.chunk ? options.chunk : (Traits::gpu ? 32 : 128);
  req.sort_items = options.sort_items < 0 ? Traits::gpu : options.sort_items > 0;
  req.sm_l2 = kernel == SddmmKernel::sm_l2;
  req.active_rows = options.active_rows;
  req.panel_rows = info_.panel_rows;
  req.panel_nnz = options.panel_nnz > 0 ? static_cast<offset_t>(options.panel_nnz) : 32768;
  info_.chunk = req.rowsplit ? req.chunk : 0;
  if (kernel == SddmmKernel::sm_l2) {
    info_.tk = options.tk ? std::min(options.tk, K) : std::min(K, 128);
    info_.ti = sm_l2_rows_per_block(info_.scratch_bytes, info_.tk, esize);
    if (info_.ti < 1)
      throw UsageError("sddmm: SM-L2 with T_k = " + std::to_string(info_.tk) + " does not fit " +
                       std::to_string(info_.scratch_bytes) + " bytes of scratch");
    req.ti = info_.ti;
  }
  if (kernel == SddmmKernel::sm_sm) info_.smsm_tile = smsm_t;

  if (tiled_kernel) {
    auto L = detail::build_sddmm_layout(h_rm.data(), h_ent.data(), m, n, nnz, req);
    info_.identity_layout = L.identity;
    // Panels on a device keep half the index bytes where they fit 32 bits.
    const bool compact = panels && Traits::gpu && options.compact_index && C <= (ordinal_t(1) << 24) &&
                         std::uint64_t(nnz) <= 0xffffffffu;
    info_.compact_index = compact;
    if (!L.identity && !compact) {
      cols_ = detail::upload<memory_space>(L.cols, "kfactor::sddmm_cols");
      dst_ = detail::upload<memory_space>(L.dst, "kfactor::sddmm_dst");
    }
    if (compact) {
      std::vector<std::uint32_t> packed(L.cols.size()), dst32(L.dst.size());
      for (const auto& blk : L.blocks)
        for (offset_t e = blk.begin; e < blk.end; ++e) {
          packed[e] = std::uint32_t(L.cols[e]) << 8 | std::uint32_t(L.lrow[e] - blk.active_begin);
          dst32[e] = static_cast<std::uint32_t>(L.dst[e]);
        }
      panel_packed_ = detail::upload<memory_space>(packed, "kfactor::sddmm_panel_packed");
      panel_dst32_ = detail::upload<memory_space>(dst32, "kfactor::sddmm_panel_dst32");
    }
    if (req.rowsplit) items_ = detail::upload<memory_space>(L.items, "kfactor::sddmm_items");
    if (req.nzsplit) {
      detail::mark_one_row_batches(L.rows, nz_lanes_);
      rows_ = detail::upload<memory_space>(L.rows, "kfactor::sddmm_rows");
    }
    if (req.nzsplit && hinted_form) {
      auto marked = detail::mark_cold_indices(
          L.identity ? std::vector<ordinal_t>(h_ent.data(), h_ent.data() + nnz) : L.cols, C, hot_budget);
      info_.hot_rows = static_cast<std::int64_t>(marked.hot);
      hinted_cols_ = detail::upload<memory_space>(marked.cols, "kfactor::sddmm_hinted_cols");
    }
    if (req.sm_l2 || panels) {
      blocks_ = detail::upload<memory_space>(L.blocks, "kfactor::sddmm_blocks");
      active_rows_ = detail::upload<memory_space>(L.active_rows, "kfactor::sddmm_active_rows");
      if (!compact) lrow_ = detail::upload<memory_space>(L.lrow, "kfactor::sddmm_lrow");
      tile_active_offsets_ = L.tile_active_offsets;
      info_.staged_rows = static_cast<std::int64_t>(L.active_rows.size());
    }
    info_.items = static_cast<std::int64_t>(L.items.size());
    info_.blocks = static_cast<std::int64_t>(L.blocks.size());
  }
  exec.fence();
  info_.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class ExecutionSpace, class T, class TI>
std::vector<ordinal_t> SddmmPlan<ExecutionSpace, T, TI>::active_rows_host() const {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, active_rows_);
  return std::vector<ordinal_t>(h.data(), h.data() + h.extent(0));
}

template <class ExecutionSpace, class T, class TI>
void SddmmPlan<ExecutionSpace, T, TI>::apply(const ExecutionSpace& exec, const input_view& A, const input_view& B,
                                             const output_view& out, bool scaled) const {
  detail::check_sddmm_shapes(S_, A, B, out);
  if (static_cast<int>(A.extent(1)) != k_)
    throw UsageError("sddmm: the plan was built for K = " + std::to_string(k_) +
                     ", A and B have K = " + std::to_string(A.extent(1)));
  if (options_.check_inputs) {
    if (const auto bad = detail::count_nonfinite(exec, A); bad > 0)
      throw InputError("sddmm: A has " + std::to_string(bad) + " NaN or Inf entries");
    if (const auto bad = detail::count_nonfinite(exec, B); bad > 0)
      throw InputError("sddmm: B has " + std::to_string(bad) + " NaN or Inf entries");
  }
  if (S_.nnz() == 0) return;
  Kokkos::View<const offset_t*, memory_space> row_map = S_.row_map;
  Kokkos::View<const ordinal_t*, memory_space> entries = S_.entries;
  Kokkos::View<const T*, memory_space> values = S_.values;
  switch (info_.kernel) {
    case SddmmKernel::reference:
    case SddmmKernel::automatic:
      detail::sddmm_reference_kernel<ExecutionSpace, T, TI, memory_space>(exec, row_map, entries, values, A, B, out,
                                                                          scaled);
      return;
    case SddmmKernel::sm_sm:
      detail::sddmm_sm_sm_kernel<ExecutionSpace, T, TI, memory_space>(exec, row_map, entries, values, A, B, out, scaled,
                                                                      info_.smsm_tile, launch_);
      return;
    case SddmmKernel::sm_l2: {
      const auto& X = info_.transposed ? B : A;
      const auto& Y = info_.transposed ? A : B;
      detail::sddmm_sm_l2_kernel<ExecutionSpace, T, TI, memory_space>(
          exec, blocks_, active_rows_, lrow_, cols_, dst_, values, X, Y, out, scaled, info_.tk, info_.ti, launch_);
      return;
    }
    case SddmmKernel::panels: {
      const auto& X = info_.transposed ? B : A;
      const auto& Y = info_.transposed ? A : B;
      if (!packed_and_aligned(X, Y)) {
        detail::sddmm_reference_kernel<ExecutionSpace, T, TI, memory_space>(exec, row_map, entries, values, A, B, out,
                                                                            scaled);
        return;
      }
      apply_panels(exec, X, Y, out, scaled);
      return;
    }
    case SddmmKernel::rowsplit:
    case SddmmKernel::nzsplit: {
      const auto& X = info_.transposed ? B : A;
      const auto& Y = info_.transposed ? A : B;
      const bool vec = packed_and_aligned(X, Y);
      if (info_.kernel == SddmmKernel::nzsplit && vec) {
        apply_nzsplit(exec, X, Y, out, scaled);
        return;
      }
      Kokkos::View<const detail::SddmmItem*, memory_space> items = items_;
      if (info_.identity_layout) {
        if (vec)
          detail::sddmm_rowsplit_kernel<true, false, 4>(
              exec, items, entries, Kokkos::View<const offset_t*, memory_space>(), values, X, Y, out, scaled, launch_);
        else
          detail::sddmm_rowsplit_kernel<false, false, 4>(
              exec, items, entries, Kokkos::View<const offset_t*, memory_space>(), values, X, Y, out, scaled, launch_);
      } else {
        Kokkos::View<const ordinal_t*, memory_space> cols = cols_;
        Kokkos::View<const offset_t*, memory_space> dst = dst_;
        if (vec)
          detail::sddmm_rowsplit_kernel<true, true, 4>(exec, items, cols, dst, values, X, Y, out, scaled, launch_);
        else
          detail::sddmm_rowsplit_kernel<false, true, 4>(exec, items, cols, dst, values, X, Y, out, scaled, launch_);
      }
      return;
    }
  }
}

template <class ExecutionSpace, class T, class TI>
void SddmmPlan<ExecutionSpace, T, TI>::apply_nzsplit(const ExecutionSpace& exec, const input_view& X,
                                                     const input_view& Y, const output_view& out, bool scaled) const {
  Kokkos::View<const ordinal_t*, memory_space> rows = rows_;
  Kokkos::View<const T*, memory_space> values = S_.values;
  const bool permuted = !info_.identity_layout;
  const bool hinted = hinted_cols_.extent(0) > 0;
  Kokkos::View<const ordinal_t*, memory_space> cols = hinted ? hinted_cols_ : permuted ? cols_ : S_.entries;
  Kokkos::View<const offset_t*, memory_space> dst = dst_;
  const bool guarded = (k_ / detail::SddmmPack<TI>::width) % nz_lanes_ != 0;
  auto launch = [&](auto lanes, auto min_teams, auto is_permuted, auto is_guarded, auto is_hinted) {
    detail::sddmm_nzsplit_kernel<decltype(lanes)::value, decltype(is_permuted)::value, decltype(min_teams)::value,
                                 decltype(is_guarded)::value, decltype(is_hinted)::value>(
        exec, rows, cols, dst, values, X, Y, out, scaled, nz_launch_);
  };
  using yes = std::true_type;
  using no = std::false_type;
  auto by_layout = [&](auto lanes, auto min_teams, auto is_hinted) {
    if (permuted && guarded)
      launch(lanes, min_teams, yes{}, yes{}, is_hinted);
    else if (permuted)
      launch(lanes, min_teams, yes{}, no{}, is_hinted);
    else if (guarded)
      launch(lanes, min_teams, no{}, yes{}, is_hinted);
    else
      launch(lanes, min_teams, no{}, no{}, is_hinted);
  };
  auto run = [&](auto lanes, auto min_teams) {
    // Hints only in the 32-lane form on devices (the plan marks no indices
    // elsewhere), so only that form is compiled with them. It runs one team
    // per multiprocessor at up to 255 registers: on the H100 that took M2
    // fp32 from 2160 to 2233 GFLOP/s at K = 128 and from 1950 to 2063 at
    // K = 512 (at 128 registers it spills 92 bytes), while the plain form
    // lost 2% on M1 at K = 512, so that one keeps min_teams.
    if constexpr (detail::SddmmTraits<ExecutionSpace>::gpu && decltype(lanes)::value == 32)
      if (hinted) return by_layout(lanes, std::integral_constant<int, 1>{}, yes{});
    by_layout(lanes, min_teams, no{});
  };
  using two = std::integral_constant<int, 2>;
  if constexpr (detail::SddmmTraits<ExecutionSpace>::gpu) {
    using three = std::integral_constant<int, 3>;
    if (nz_lanes_ == 32)
      run(std::integral_constant<int, 32>{}, two{});
    else if (nz_lanes_ == 4 && nz_launch_.min_teams == 3)
      run(std::integral_constant<int, 4>{}, three{});
    else if (nz_lanes_ == 4)
      run(std::integral_constant<int, 4>{}, two{});
    else if (nz_launch_.min_teams == 3)
      run(std::integral_constant<int, 8>{}, three{});
    else
      run(std::integral_constant<int, 8>{}, two{});
  } else {
    run(std::integral_constant<int, 1>{}, two{});
  }
}

template <class ExecutionSpace, class T, class TI>
void SddmmPlan<ExecutionSpace, T, TI>::apply_panels(const ExecutionSpace& exec, const input_view& X,
                                                    const input_view& Y, const output_view& out, bool scaled) const {
  Kokkos::View<const detail::SddmmBlock*, memory_space> blocks = blocks_;
  Kokkos::View<const ordinal_t*, memory_space> active = active_rows_;
  const detail::SddmmPanelIndex<memory_space> index{lrow_, cols_, dst_, panel_packed_, panel_dst32_};
  const bool compact = info_.compact_index;
  Kokkos::View<const T*, memory_space> values = S_.values;
  const bool guarded = (k_ / detail::SddmmPack<TI>::width) % nz_lanes_ != 0;
  auto launch = [&](auto lanes, auto is_guarded) {
    // Two teams per multiprocessor, up to 128 registers: three (80) spilled
    // 56 bytes and ran M1 fp32 at K = 128 at 4259 GFLOP/s against 4681
    // (H100). The 32-lane form runs one, up to 255 (it spilled 236 bytes at
    // 128).
    constexpr int lanes_v = decltype(lanes)::value;
    constexpr int min_teams = lanes_v == 32 ? 1 : 2;
    constexpr bool guarded_v = decltype(is_guarded)::value;
    if constexpr (detail::SddmmTraits<ExecutionSpace>::gpu)
      if (compact)
        return detail::sddmm_panels_kernel<lanes_v, min_teams, guarded_v, true>(
            exec, blocks, active, index, values, X, Y, out, scaled, info_.panel_rows, nz_launch_.team_size);
    detail::sddmm_panels_kernel<lanes_v, min_teams, guarded_v, false>(exec, blocks, active, index, values, X, Y, out,
                                                                      scaled, info_.panel_rows, nz_launch_.team_size);
  };
  auto by_guard = [&](auto lanes) {
    if (guarded)
      launch(lanes, std::true_type{});
    else
      launch(lanes, std::false_type{});
  };
  if constexpr (detail::SddmmTraits<ExecutionSpace>::gpu) {
    if (nz_lanes_ == 32)
      by_guard(std::integral_constant<int, 32>{});
    else if (nz_lanes_ == 4)
      by_guard(std::integral_constant<int, 4>{});
    else
      by_guard(std::integral_constant<int, 8>{});
  } else {
    launch(std::integral_constant<int, 1>{}, std::false_type{});
  }
}

// Explicit instantiations live in src/sddmm/eti_*.cpp.
#define KFACTOR_SDDMM_PLAN_EXTERN(Space, T) extern template class SddmmPlan<Space, T, T>;
KFACTOR_ETI_FOR_EACH(KFACTOR_SDDMM_PLAN_EXTERN)
#undef KFACTOR_SDDMM_PLAN_EXTERN
#if !KOKKOS_BHALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_EXTERN_BF16(Space, T) \
  extern template class SddmmPlan<Space, float, Kokkos::Experimental::bhalf_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_EXTERN_BF16, float)
#undef KFACTOR_SDDMM_PLAN_EXTERN_BF16
#endif
#if !KOKKOS_HALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_EXTERN_FP16(Space, T) \
  extern template class SddmmPlan<Space, float, Kokkos::Experimental::half_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_EXTERN_FP16, float)
#undef KFACTOR_SDDMM_PLAN_EXTERN_FP16
#endif

}  // namespace kfactor
