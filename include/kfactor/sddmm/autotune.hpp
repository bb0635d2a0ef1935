#pragma once
/// \file
/// Autotuning of an SDDMM plan: times candidates around the model's choice
/// (kernel, column tiles T_j x {none, 1/2, 1, 2}, row-split chunk, SM-L2 K-slice
/// T_k in multiples of 32, the staged matrix, SM-SM where it fits) on random
/// inputs and keeps the fastest. Results are cached per (device, M, N, nnz, K,
/// input element size) in memory, and in a text file when one is named
/// (one line per entry: key, then the chosen options).

#include <kfactor/core/spaces.hpp>
#include <kfactor/core/timing.hpp>
#include <kfactor/sddmm/options.hpp>
#include <kfactor/sddmm/plan.hpp>
#include <kfactor/sddmm/planted.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kfactor {

struct SddmmTuneTrial {
  std::string description;
  SddmmOptions options;
  double seconds = 0.0;  ///< median apply time
};

struct SddmmTuneResult {
  std::string key;
  SddmmOptions best;
  double best_seconds = 0.0;
  bool from_cache = false;
  std::vector<SddmmTuneTrial> trials;
};

/// The cache key: "device|M|N|nnz|K|element bytes".
std::string sddmm_tune_key(const std::string& device, std::int64_t m, std::int64_t n, std::int64_t nnz, int k,
                           std::size_t element_bytes);
/// Looks the key up in memory, then in `file` (if not empty; InputError when
/// it exists and is no regular file).
std::optional<SddmmOptions> sddmm_tune_lookup(const std::string& key, const std::string& file = "");
/// Stores the entry in memory and appends it to `file` (if not empty; the
/// same InputError).
void sddmm_tune_store(const std::string& key, const SddmmOptions& options, const std::string& file = "");
/// Text form of the tuned fields ("kernel=rowsplit tiles=1 tile_cols=0 ...").
std::string sddmm_options_string(const SddmmOptions& o);

/// Searches around the model's configuration for S and K; `base` supplies the
/// fixed options (cache size, scratch, checks). `cache_file` empty: memory only.
template <class ExecutionSpace, class T, class TI = T>
SddmmTuneResult sddmm_autotune(const ExecutionSpace& exec, const CsrMatrix<T, typename ExecutionSpace::memory_space>& S,
                               int K, const SddmmOptions& base = {}, const std::string& cache_file = "", int reps = 5) {
  using Mem = typename ExecutionSpace::memory_space;
  using Plan = SddmmPlan<ExecutionSpace, T, TI>;
  SddmmTuneResult res;
  res.key = sddmm_tune_key(backend_name<ExecutionSpace>() + ":" + std::to_string(exec.concurrency()), S.num_rows(),
                           S.num_cols, static_cast<std::int64_t>(S.nnz()), K, sizeof(TI));
  if (auto hit = sddmm_tune_lookup(res.key, cache_file)) {
    res.best = *hit;
    res.from_cache = true;
    return res;
  }
  // Random inputs (any values time alike; fixed so that trials compare).
  const auto factors = sddmm_random_factors<TI>(exec, S.num_rows(), S.num_cols, K, 7);
  const auto& A = factors.first;
  const auto& B = factors.second;
  Kokkos::View<T*, Mem> out("kfactor::tune_out", S.nnz());
  SddmmOptions fixed = base;
  fixed.check_inputs = false;

  int best_lanes = 0;  // the lanes the best plan runs (its choice when vector_length is 0)
  auto trial = [&](const std::string& what, SddmmOptions o) -> double {
    try {
      Plan plan(exec, S, K, o);
      // Median of `reps` fenced runs after one warm-up.
      const double t = time_runs(exec, reps, 1, [&] { plan(exec, A, B, out); }).median;
      res.trials.push_back({what + " [" + sddmm_options_string(o) + "]", o, t});
      if (res.trials.size() == 1 || t < res.best_seconds) {
        res.best_seconds = t;
        res.best = o;
        best_lanes = plan.info().vector_length;
      }
      return t;
    } catch (const UsageError&) {
      return -1.0;
    }
  };

  // 1. The model's choice, and no tiling.
  SddmmOptions model = fixed;
  model.kernel = SddmmKernel::rowsplit;
  trial("model", model);
  const auto model_info = Plan(exec, S, K, model).info();
  SddmmOptions untiled = model;
  untiled.column_tiles = false;
  trial("no tiles", untiled);
  // 2. T_j around the model's (when the model tiles at all).
  if (model_info.tiles > 1)
    for (double f : {0.5, 2.0}) {
      SddmmOptions o = model;
      o.tile_cols = std::max<ordinal_t>(1, static_cast<ordinal_t>(model_info.tile_cols * f));
      trial("T_j x" + std::to_string(f), o);
    }
  // 3. The other staged matrix.
  {
    SddmmOptions o = res.best;
    o.staged = model_info.transposed ? SddmmStaged::a : SddmmStaged::b;
    trial("other staged", o);
  }
  // 4. Items longest-first or in S's order; chunk sizes around the default.
  for (int sort : {0, 1}) {
    SddmmOptions o = res.best;
    o.sort_items = sort;
    trial(sort ? "sorted items" : "unsorted items", o);
  }
  const int chunk0 = model_info.chunk;
  for (int f : {2, 4}) {
    SddmmOptions o = res.best;
    o.chunk = std::max(4, chunk0 / f);
    trial("chunk/" + std::to_string(f), o);
    o.chunk = chunk0 * f;
    trial("chunk*" + std::to_string(f), o);
  }
  // 5. nzsplit (GPUs; it falls back to rowsplit when K is not whole packs),
  // with its own tiling rule and untiled, then 4, 8 and 32 lanes around the
  // best (on the H100, 4 lanes beat the default 8 on M2's short rows by 5-7%
  // in fp32 at K = 32 and 128, and lost 11% in bf16 at K = 128).
  if constexpr (detail::SddmmTraits<ExecutionSpace>::gpu) {
    SddmmOptions o = fixed;
    o.kernel = SddmmKernel::nzsplit;
    trial("nzsplit", o);
    o.column_tiles = false;
    trial("nzsplit no tiles", o);
    if (res.best.kernel == SddmmKernel::nzsplit) {
      for (int lanes : {4, 8, 32}) {
        if (lanes == best_lanes) continue;  // already timed
        SddmmOptions l = res.best;
        l.vector_length = lanes;
        trial("nzsplit " + std::to_string(lanes) + " lanes", l);
      }
    }
    o = fixed;
    o.kernel = SddmmKernel::panels;
    trial("panels", o);
    o.column_tiles = false;
    trial("panels no tiles", o);
  }
  // 6. The paper's SM-L2 over T_k in multiples of 32.
  for (int tk = 32; tk <= std::max(32, std::min(K, 256)); tk *= 2) {
    SddmmOptions o = res.best;
    o.kernel = SddmmKernel::sm_l2;
    o.tk = tk;
    o.chunk = 0;
    trial("sm_l2 T_k=" + std::to_string(tk), o);
  }
  // 7. SM-SM where it fits and S is not very sparse.
  if (model_info.density > 0.01) {
    SddmmOptions o = fixed;
    o.kernel = SddmmKernel::sm_sm;
    trial("sm_sm", o);
  }
  res.best.check_inputs = base.check_inputs;
  sddmm_tune_store(res.key, res.best, cache_file);
  return res;
}

}  // namespace kfactor
