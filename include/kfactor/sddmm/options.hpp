#pragma once
/// \file
/// Options of the planned SDDMM (kfactor::SddmmPlan, kfactor::sddmm) and the
/// paper's models (cuSDDMM, Nisa et al., HiPC 2018): the column-tile width of
/// eq. 6, the DRAM costs of eq. 4 that choose which dense matrix is staged,
/// the SM-L2 row-block height and the SM-SM tile size.
///
/// Note on names: kfactor::sddmm is the function the design names
/// (`kfactor::sddmm(exec, S, A, B, out)`), so this module's types live in
/// namespace kfactor with an Sddmm prefix instead of in a kfactor::sddmm
/// namespace (a namespace and a function cannot share one name).

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/distributed/partition.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kfactor {

/// Which kernel a plan runs.
enum class SddmmKernel {
  automatic,  ///< sm_sm above the density threshold when it fits, else on GPUs with K in 16-byte
              ///< packs panels (long rows, 32 to 64 packs of K) or nzsplit, else rowsplit
  reference,  ///< one thread per nonzero (tests, baselines)
  rowsplit,   ///< load-balanced row segments, lanes across K, registers reused (beyond the paper)
  nzsplit,    ///< batches of consecutive nonzeros, one butterfly reduction per batch (beyond the paper)
  sm_l2,      ///< the paper's SM-L2: active rows of the staged matrix in team scratch, K-slices of T_k
  sm_sm,      ///< the paper's SM-SM: both dense tiles in team scratch (dense-ish S)
  panels,     ///< SM-L2 staging done in batches: panels of active rows (heaviest first) in team
              ///< scratch, each panel's nonzeros ordered by streamed index, so that a streamed row
              ///< is read once per panel (beyond the paper; GPU, K in 16-byte packs)
};

/// Which dense matrix is staged on chip (the other streams through L2).
enum class SddmmStaged {
  automatic,  ///< eq. 4: stage A (keep B, the matrix with fewer rows, resident in L2) iff N <= M
  a,
  b,
};

const char* to_string(SddmmKernel k);
const char* to_string(SddmmStaged s);
/// Parses "auto", "reference", "rowsplit", "nzsplit", "sm_l2", "sm_sm", "panels" (UsageError otherwise).
SddmmKernel parse_sddmm_kernel(const std::string& name);

/// The inner dimension K a plan takes (SddmmPlan: UsageError outside it).
inline constexpr Range<int> sddmm_rank_range{.lo = 1};

/// Every mechanism of the paper can be switched, so that its effect can be
/// measured (perf/bench_sddmm.cpp). Zero means "choose" for sizes. The
/// fields with a Range beside them are checked against it by validate().
struct SddmmOptions {
  static constexpr Range<ordinal_t> tile_cols_range{.lo = 0, .note = "0: the model's"};
  static constexpr Range<double> model_c_range{.lo = 0.0, .lo_open = true};
  static constexpr Range<ordinal_t> tile_round_range{.lo = 1};
  static constexpr Range<int> tk_range{.lo = 0, .note = "a multiple of 32; 0: automatic"};
  static constexpr Range<int> smsm_tile_range{.lo = 0, .note = "0: the largest that fits"};
  static constexpr Range<int> chunk_range{.lo = 0, .note = "0: automatic"};
  /// Lanes beyond the space's vector_length_max() are clamped to it; more
  /// than 1024 is a typo on any space.
  static constexpr Range<int> vector_length_range{.lo = 0, .hi = 1024, .note = "a power of two; 0: automatic"};
  static constexpr Range<int> team_size_range{.lo = 0, .note = "0: automatic"};
  static constexpr Range<int> panel_rows_range{.lo = 0, .hi = 256, .note = "0: automatic"};
  static constexpr Range<std::int64_t> panel_nnz_range{.lo = 0, .note = "0: automatic"};
  static constexpr Range<double> hot_cache_fraction_range{
      .lo = -1.0, .hi = 1.0, .note = "-1: automatic, 0: plain loads; none in (-1, 0)"};

  SddmmKernel kernel = SddmmKernel::automatic;

  // --- column tiles (§III, eq. 6) -------------------------------------------
  bool column_tiles = true;       ///< tile the streamed matrix's rows (S's columns) into panels of T_j
  ordinal_t tile_cols = 0;        ///< T_j; 0 = model sqrt(L2 / (c rho)), rounded (see model_tile_cols)
  double model_c = 3.0;           ///< words moved per nonzero in the model (COO: 3)
  ordinal_t tile_round = 5000;    ///< round the model's T_j up to a multiple of this (the paper: 5,000)
  std::size_t cache_bytes = 0;    ///< "L2" of the model in bytes; 0 = the device's (kernels/detail/sddmm_traits.hpp)
  bool cap_tile_to_cache = true;  ///< also keep one T_j x K tile of the streamed matrix within the cache

  // --- which matrix is staged (eq. 4) ---------------------------------------
  SddmmStaged staged = SddmmStaged::automatic;

  // --- SM-L2: active rows in team scratch, K-slices ---------------------------
  bool active_rows = true;        ///< stage only the rows that have nonzeros in the tile (off: all rows)
  int tk = 0;                     ///< K-slice width T_k (a multiple of 32, or >= K); 0 = min(K, 128)
  std::size_t scratch_bytes = 0;  ///< team scratch per team; 0 = the space's default (48 KB GPU, 32 KB CPU)

  // --- SM-SM ------------------------------------------------------------------
  double smsm_density = 0.05;  ///< on GPUs automatic picks sm_sm above this density (<= 0 never);
                               ///< on CPUs automatic never does (measured 2x slower than rowsplit)
  int smsm_tile = 0;           ///< T_i = T_j of SM-SM; 0 = the largest with (T_i + T_j) K sizeof <= scratch

  // --- row-split kernel (beyond the paper) ----------------------------------
  int chunk = 0;                   ///< max nonzeros per work item; 0 = 32 on GPUs, 128 on CPUs
  int vector_length = 0;           ///< lanes per work item; 0 = packs of K rounded to 2^p, <= 32 (GPU) / 1 (CPU);
                                   ///< nzsplit: 4, 8 or 32 (GPU), 0 = 4 up to 4 16-byte packs of K, 8 up
                                   ///< to 64, else 32 (and 32 from 32 packs with L2 hints, below)
  int team_size = 0;               ///< work items in flight per team; 0 = 256 / lanes (GPU) / 1 (CPU)
  int sort_items = -1;             ///< order each tile's items longest first: 1 yes, 0 no, -1 GPUs only
                                   ///< (balance of lane groups in a warp; CPUs keep S's order for locality)
  double hot_cache_fraction = -1;  ///< nzsplit's 32-lane form on CUDA: the streamed rows of the most used
                                   ///< streamed indices, up to this fraction of the cache, are loaded to
                                   ///< stay in L2, the others and the staged rows to leave it first;
                                   ///< 0 = plain loads; -1 = 0.5 when one tile of the streamed matrix
                                   ///< exceeds twice the cache (automatic plans then run 32 lanes from 32
                                   ///< packs of K for 4- and 8-byte inputs), else 0

  // --- panels ------------------------------------------------------------------
  int panel_rows = 0;           ///< staged rows per panel; 0 = as many as panel_bytes holds, <= 256
  std::size_t panel_bytes = 0;  ///< team scratch for a panel's staged rows; 0 = 32 KB (at most the device's)
  std::int64_t panel_nnz = 0;   ///< max nonzeros per work item (longer panels are cut); 0 = 32768
  bool compact_index = true;    ///< devices: 4 bytes of indices per nonzero instead of 16 where the
                                ///< streamed indices fit 24 bits and nnz 32 (false: tests of the wide form)

  // --- checks ----------------------------------------------------------------
  bool check_inputs = true;  ///< apply() rejects NaN/Inf in A and B (one pass over each)

  /// Throws UsageError for out-of-range values.
  void validate() const;
};

/// The model's raw T_j = floor(sqrt(L2 / (c rho))) with L2 in elements (eq. 6).
/// Checklist: L2 = 1,048,576 floats, c = 3, rho = 0.2262% gives 12,429.
std::int64_t model_tile_cols_raw(double l2_elements, double density, double c = 3.0);

/// T_j rounded up to a multiple of `round` (the paper rounds to 5,000:
/// 12,429 -> 15,000); a T_j of `n` or more means one tile (returns n).
std::int64_t round_tile_cols(std::int64_t tj, std::int64_t round, std::int64_t n);

/// Number of tiles of width tj over n columns (at least 1).
std::int64_t tile_count(std::int64_t n, std::int64_t tj);

/// Eq. 4's DRAM traffic in words of both staging choices.
struct SddmmTraffic {
  double a_staged = 0;  ///< Trans_AinSh = M N K / T_j + N K + nnz + c nnz K / T_k
  double b_staged = 0;  ///< Trans_BinSh = M K + M N K / T_i + nnz + c nnz K / T_k
};
SddmmTraffic eq4_traffic(double m, double n, double nnz, double k, double ti, double tj, double tk, double c = 3.0);

/// Eq. 4's choice: stage A (B resident in L2) iff its traffic is not larger,
/// i.e. iff N <= M when T_i = T_j.
SddmmStaged eq4_choice(std::int64_t m, std::int64_t n);

/// SM-L2 block height T_i = floor(scratch elements / T_k) (Alg. 4).
int sm_l2_rows_per_block(std::size_t scratch_bytes, int tk, std::size_t element_bytes);

/// SM-SM tile T (T_i = T_j = T): the largest T with
/// T (2 K element_bytes + 8) <= scratch (8 bytes of row cursor per row);
/// 0 when not even T = 1 fits.
int sm_sm_tile(std::size_t scratch_bytes, int k, std::size_t element_bytes);

/// The automatic kernel choice: sm_sm when `gpu`, density > smsm_density > 0,
/// and the SM-SM tile (which must fit the scratch) is at least 16; else
/// nzsplit on a GPU when K is a whole number of 16-byte packs (`packed`), else
/// rowsplit.
SddmmKernel choose_sddmm_kernel(bool gpu, double density, const SddmmOptions& options, int smsm_tile, bool smsm_fits,
                                bool packed);

/// Amdahl's law 1 / ((1 - f) + f / s) (Table IV's application estimates).
double amdahl_speedup(double fraction, double kernel_speedup);

/// Contiguous column blocks balanced by nonzeros (the paper's non-symmetric
/// partition), shared with the distributed solvers.
using distributed::balanced_column_blocks;

/// Equal-width split (the naive partition the paper compares against).
std::vector<ordinal_t> equal_column_blocks(ordinal_t num_cols, int parts);

/// Contiguous column blocks balanced by a real weight per column (the same
/// rule as balanced_column_blocks: part p starts at the first column whose
/// prefix weight reaches p / P of the total). Weights must be finite and
/// non-negative (UsageError otherwise).
std::vector<ordinal_t> weighted_column_blocks(const std::vector<double>& column_weights, int parts);

/// How a distributed SDDMM splits S's columns over the ranks.
enum class ColumnSplit {
  balanced,     ///< balanced_column_blocks: equal nonzeros (the paper's non-symmetric partition)
  equal_width,  ///< equal_column_blocks: equal column counts (the naive split, for comparison)
  timed,        ///< equal measured time: starts balanced, then weighs each rank's nonzeros by its
                ///< measured time per nonzero (distributed::SddmmRankPlan)
};
const char* to_string(ColumnSplit s);
/// Parses "balanced", "equal" or "timed" (UsageError otherwise).
ColumnSplit parse_column_split(const std::string& name);

}  // namespace kfactor
