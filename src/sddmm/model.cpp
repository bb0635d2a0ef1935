#include <kfactor/sddmm/options.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace kfactor {

const char* to_string(SddmmKernel k) {
  switch (k) {
    case SddmmKernel::automatic: return "auto";
    case SddmmKernel::reference: return "reference";
    case SddmmKernel::rowsplit: return "rowsplit";
    case SddmmKernel::nzsplit: return "nzsplit";
    case SddmmKernel::sm_l2: return "sm_l2";
    case SddmmKernel::sm_sm: return "sm_sm";
    case SddmmKernel::panels: return "panels";
  }
  return "unknown";
}

const char* to_string(SddmmStaged s) {
  switch (s) {
    case SddmmStaged::automatic: return "auto";
    case SddmmStaged::a: return "A";
    case SddmmStaged::b: return "B";
  }
  return "unknown";
}

SddmmKernel parse_sddmm_kernel(const std::string& name) {
  for (auto k : {SddmmKernel::automatic, SddmmKernel::reference, SddmmKernel::rowsplit, SddmmKernel::nzsplit,
                 SddmmKernel::sm_l2, SddmmKernel::sm_sm, SddmmKernel::panels})
    if (name == to_string(k)) return k;
  throw UsageError("sddmm: unknown kernel '" + name + "' (auto|reference|rowsplit|nzsplit|sm_l2|sm_sm|panels)");
}

void SddmmOptions::validate() const {
  check_range("sddmm", "tile_cols", tile_cols, tile_cols_range);
  check_range("sddmm", "model_c", model_c, model_c_range);
  check_range("sddmm", "tile_round", tile_round, tile_round_range);
  check_range("sddmm", "tk", tk, tk_range);
  if (tk % 32 != 0) throw UsageError("sddmm: tk must be a multiple of 32 (0: automatic), got " + std::to_string(tk));
  check_range("sddmm", "smsm_tile", smsm_tile, smsm_tile_range);
  check_range("sddmm", "chunk", chunk, chunk_range);
  check_range("sddmm", "vector_length", vector_length, vector_length_range);
  if ((vector_length & (vector_length - 1)) != 0)
    throw UsageError("sddmm: vector_length must be 0 or a power of two, got " + std::to_string(vector_length));
  check_range("sddmm", "team_size", team_size, team_size_range);
  check_range("sddmm", "panel_rows", panel_rows, panel_rows_range);
  check_range("sddmm", "panel_nnz", panel_nnz, panel_nnz_range);
  check_range("sddmm", "hot_cache_fraction", hot_cache_fraction, hot_cache_fraction_range);
  if (hot_cache_fraction != -1 && hot_cache_fraction < 0)
    throw UsageError("sddmm: hot_cache_fraction must be -1 (automatic) or in [0, 1], got " +
                     number_text(hot_cache_fraction));
}

std::int64_t model_tile_cols_raw(double l2_elements, double density, double c) {
  if (!(density > 0)) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(std::floor(std::sqrt(l2_elements / (c * density))));
}

std::int64_t round_tile_cols(std::int64_t tj, std::int64_t round, std::int64_t n) {
  if (n <= 0) return 1;
  if (tj >= n) return n;
  round = std::max<std::int64_t>(round, 1);
  const std::int64_t r = std::max<std::int64_t>((tj + round - 1) / round, 1) * round;
  return std::min(r, n);
}

std::int64_t tile_count(std::int64_t n, std::int64_t tj) {
  if (n <= 0 || tj <= 0) return 1;
  return std::max<std::int64_t>((n + tj - 1) / tj, 1);
}

SddmmTraffic eq4_traffic(double m, double n, double nnz, double k, double ti, double tj, double tk, double c) {
  SddmmTraffic t;
  t.a_staged = m * n * k / tj + n * k + nnz + c * nnz * k / tk;
  t.b_staged = m * k + m * n * k / ti + nnz + c * nnz * k / tk;
  return t;
}

SddmmStaged eq4_choice(std::int64_t m, std::int64_t n) { return n <= m ? SddmmStaged::a : SddmmStaged::b; }

int sm_l2_rows_per_block(std::size_t scratch_bytes, int tk, std::size_t element_bytes) {
  if (tk <= 0 || element_bytes == 0) return 0;
  return static_cast<int>(scratch_bytes / element_bytes / static_cast<std::size_t>(tk));
}

int sm_sm_tile(std::size_t scratch_bytes, int k, std::size_t element_bytes) {
  if (k <= 0) return 0;
  const std::size_t per = 2 * static_cast<std::size_t>(k) * element_bytes + sizeof(offset_t);
  return static_cast<int>(std::min<std::size_t>(scratch_bytes / per, 1u << 20));
}

SddmmKernel choose_sddmm_kernel(bool gpu, double density, const SddmmOptions& options, int smsm_tile, bool smsm_fits,
                                bool packed) {
  if (options.kernel != SddmmKernel::automatic) return options.kernel;
  if (gpu && options.smsm_density > 0 && density > options.smsm_density && smsm_fits && smsm_tile >= 16)
    return SddmmKernel::sm_sm;
  return gpu && packed ? SddmmKernel::nzsplit : SddmmKernel::rowsplit;
}

double amdahl_speedup(double fraction, double kernel_speedup) {
  return 1.0 / ((1.0 - fraction) + fraction / kernel_speedup);
}

std::vector<ordinal_t> equal_column_blocks(ordinal_t num_cols, int parts) {
  if (parts < 1) throw UsageError("equal_column_blocks: need at least one part, got " + std::to_string(parts));
  std::vector<ordinal_t> b(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p) b[p] = static_cast<ordinal_t>(static_cast<std::int64_t>(num_cols) * p / parts);
  return b;
}

std::vector<ordinal_t> weighted_column_blocks(const std::vector<double>& column_weights, int parts) {
  if (parts < 1) throw UsageError("weighted_column_blocks: need at least one part, got " + std::to_string(parts));
  double total = 0;
  for (double w : column_weights) {
    if (!std::isfinite(w) || w < 0)
      throw UsageError("weighted_column_blocks: column weights must be finite and non-negative, got " +
                       std::to_string(w));
    total += w;
  }
  const auto n = static_cast<ordinal_t>(column_weights.size());
  std::vector<ordinal_t> b(static_cast<std::size_t>(parts) + 1, n);
  b[0] = 0;
  ordinal_t col = 0;
  double prefix = 0;
  for (int p = 1; p < parts; ++p) {  // prefix * P < p * total: exact for integer weights below 2^53 / P
    while (col < n && prefix * parts < total * p) prefix += column_weights[col++];
    b[p] = col;
  }
  return b;
}

const char* to_string(ColumnSplit s) {
  switch (s) {
    case ColumnSplit::balanced: return "balanced";
    case ColumnSplit::equal_width: return "equal";
    case ColumnSplit::timed: return "timed";
  }
  return "?";
}

ColumnSplit parse_column_split(const std::string& name) {
  if (name == "balanced") return ColumnSplit::balanced;
  if (name == "equal") return ColumnSplit::equal_width;
  if (name == "timed") return ColumnSplit::timed;
  throw UsageError("unknown column split '" + name + "' (balanced, equal, timed)");
}

}  // namespace kfactor
