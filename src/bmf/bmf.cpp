// Non-template parts of kfactor::bmf and the explicit instantiations of its
// solver templates for every enabled execution space.
#include <kfactor/bmf/bmf.hpp>

#include <unordered_set>

namespace kfactor::bmf {

const char* to_string(Init v) {
  switch (v) {
    case Init::dost: return "dost";
    case Init::density100: return "density100";
    case Init::density: return "density";
    case Init::sample_rows: return "rows";
    case Init::cover: return "cover";
  }
  return "?";
}
const char* to_string(DenseC v) {
  switch (v) {
    case DenseC::automatic: return "auto";
    case DenseC::on: return "on";
    case DenseC::off: return "off";
  }
  return "?";
}
const char* to_string(Order v) { return v == Order::columns_first ? "columns-first" : "rows-first"; }

Init parse_init(const std::string& s) {
  if (s == "dost" || s == "1") return Init::dost;
  if (s == "density100" || s == "2") return Init::density100;
  if (s == "density" || s == "3") return Init::density;
  if (s == "rows") return Init::sample_rows;
  if (s == "cover") return Init::cover;
  throw UsageError("bmf: unknown init '" + s + "' (dost|density100|density|rows|cover)");
}
DenseC parse_dense_c(const std::string& s) {
  if (s == "auto") return DenseC::automatic;
  if (s == "on") return DenseC::on;
  if (s == "off") return DenseC::off;
  throw UsageError("bmf: unknown dense-c mode '" + s + "' (auto|on|off)");
}
Order parse_order(const std::string& s) {
  if (s == "columns-first" || s == "b-first") return Order::columns_first;
  if (s == "rows-first" || s == "a-first") return Order::rows_first;
  throw UsageError("bmf: unknown order '" + s + "' (columns-first|rows-first)");
}

void Options::validate() const {
  auto bad = [](const std::string& what) { throw UsageError("bmf: " + what); };
  if (rank < 1 || rank > detail::max_rank) bad("rank must be in 1.." + std::to_string(detail::max_rank));
  if (max_iterations < 0) bad("max iterations must be >= 0");
  if (batch < 1) bad("batch (lines per iteration) must be >= 1");
  if (!(flip_prob > 0.0 && flip_prob <= 1.0)) bad("flip probability must be in (0, 1]");
  if (!(temperature >= 0.0) || !std::isfinite(temperature)) bad("temperature must be finite and >= 0");
  if (temp_step < 1) bad("temp-step must be >= 1");
  if (!(temp_factor > 0.0 && temp_factor <= 1.0)) bad("temp-factor must be in (0, 1]");
  if (!(weight_ones > 0.0) || !std::isfinite(weight_ones)) bad("weight of ones must be finite and > 0");
  if (!(target_error >= 0.0)) bad("target error must be >= 0");
  if (every_line_changed < 0) bad("every-line-changed must be >= 0");
  if (cover_candidates < 1) bad("cover candidates must be >= 1");
}

namespace detail {

void greedy_cover(const HostCsr& P, const HostCsr& Q, int k, int candidates, std::uint64_t seed,
                  std::vector<bit_word_t>& X, std::vector<bit_word_t>& Y) {
  const int W = bit_words(k);
  const std::int64_t np = P.lines, nq = Q.lines;
  X.assign(std::size_t(np) * W, 0);
  Y.assign(std::size_t(nq) * W, 0);
  const offset_t nnz = P.map[np];
  if (nnz == 0) return;
  auto covered = [&](std::int64_t i, std::int64_t j) {
    for (int q = 0; q < W; ++q)
      if (X[std::size_t(i) * W + q] & Y[std::size_t(j) * W + q]) return true;
    return false;
  };
  // Scratch counters (ones, uncovered ones) per line, reset through the touched list.
  std::vector<std::int32_t> ones(std::max(np, nq), 0), unc(std::max(np, nq), 0);
  std::vector<std::int64_t> touched;
  // The lines `out` of one side that gain from a rank-1 block with the lines L of the other side:
  // their uncovered ones in L minus their zeros in L (zeros already covered count as a cost too: a
  // conservative gain, no m x n state). M holds L's lines (Q for P-lines, P for Q-lines); l_is_q
  // says which side L is on. Returns the total positive gain; `out` is sorted.
  auto gaining = [&](const HostCsr& M, bool l_is_q, const std::vector<ordinal_t>& L, std::vector<ordinal_t>& out) {
    touched.clear();
    for (const ordinal_t l : L)
      for (offset_t e = M.map[l]; e < M.map[l + 1]; ++e) {
        const std::int64_t o = M.idx[e];
        if (ones[o]++ == 0) touched.push_back(o);
        if (!(l_is_q ? covered(o, l) : covered(l, o))) ++unc[o];
      }
    std::sort(touched.begin(), touched.end());
    out.clear();
    std::int64_t total = 0;
    for (const std::int64_t o : touched) {
      const std::int64_t g = std::int64_t(unc[o]) - (std::int64_t(L.size()) - ones[o]);
      if (g > 0) {
        total += g;
        out.push_back(ordinal_t(o));
      }
      ones[o] = unc[o] = 0;
    }
    return total;
  };
  // Gain of the pattern S (Q-lines) and the P-lines R that gain from it.
  auto evaluate = [&](const std::vector<ordinal_t>& S, std::vector<ordinal_t>& R) { return gaining(Q, true, S, R); };
  // The pattern that the P-lines R vote for: Q-lines where their uncovered ones outnumber their zeros.
  auto vote = [&](const std::vector<ordinal_t>& R, std::vector<ordinal_t>& S) { gaining(P, false, R, S); };
  const CounterRng rng(seed, RngStream::factor_h);
  std::vector<ordinal_t> cand, S, R, best_S, best_R, S2, R2;
  for (int l = 0; l < k; ++l) {
    // Candidates: the P-lines of random uncovered ones (lines weighted by their ones), distinct.
    cand.clear();
    for (std::uint64_t t = 0; int(cand.size()) < candidates && t < 8 * std::uint64_t(candidates); ++t) {
      const offset_t e = rng.bits((std::uint64_t(l) << 32) | t) % nnz;
      const std::int64_t r = std::upper_bound(P.map, P.map + np + 1, e) - P.map - 1;
      if (covered(r, P.idx[e]) || std::find(cand.begin(), cand.end(), ordinal_t(r)) != cand.end()) continue;
      cand.push_back(ordinal_t(r));
    }
    std::int64_t best = 0;
    for (const ordinal_t r : cand) {
      S.assign(P.idx + P.map[r], P.idx + P.map[r + 1]);
      const std::int64_t g = evaluate(S, R);
      if (g > best) {
        best = g;
        best_S.swap(S);
        best_R.swap(R);
      }
    }
    if (best <= 0) break;  // nothing left to cover with a gain
    // Refine: the pattern the assigned lines vote for, then the lines that gain from it, while it helps.
    for (int round = 0; round < 4; ++round) {
      vote(best_R, S2);
      const std::int64_t g = evaluate(S2, R2);
      if (g <= best) break;
      best = g;
      best_S.swap(S2);
      best_R.swap(R2);
    }
    const bit_word_t bit = bit_word_t(1) << (l % bit_word_bits);
    for (const ordinal_t j : best_S) Y[std::size_t(j) * W + l / bit_word_bits] |= bit;
    for (const ordinal_t i : best_R) X[std::size_t(i) * W + l / bit_word_bits] |= bit;
  }
}

}  // namespace detail

Planted make_planted(std::int64_t m, std::int64_t n, int k, double factor_density, double noise, std::uint64_t seed) {
  if (m < 1 || n < 1 || k < 1 || k > detail::max_rank) throw UsageError("make_planted: bad shape or rank");
  if (!(factor_density >= 0 && factor_density <= 1) || !(noise >= 0 && noise <= 1))
    throw UsageError("make_planted: densities must be in [0, 1]");
  Planted p;
  p.rows = m;
  p.cols = n;
  p.rank = k;
  p.A = BitMatrix<Kokkos::HostSpace>("planted::A", m, k);
  p.Bt = BitMatrix<Kokkos::HostSpace>("planted::Bt", n, k);
  const CounterRng ra(seed, RngStream::user), rb(seed, std::uint64_t(RngStream::user) + 1),
      rn(seed, std::uint64_t(RngStream::user) + 2);
  // Members of each of the k rank-one blocks.
  std::vector<std::vector<ordinal_t>> rows_of(k), cols_of(k);
  for (std::int64_t i = 0; i < m; ++i)
    for (int l = 0; l < k; ++l)
      if (ra.uniform(std::uint64_t(i) * k + l) < factor_density) {
        p.A.set(i, l, true);
        rows_of[l].push_back(ordinal_t(i));
      }
  for (std::int64_t j = 0; j < n; ++j)
    for (int l = 0; l < k; ++l)
      if (rb.uniform(std::uint64_t(j) * k + l) < factor_density) {
        p.Bt.set(j, l, true);
        cols_of[l].push_back(ordinal_t(j));
      }
  std::vector<std::uint64_t> keys;
  for (int l = 0; l < k; ++l)
    for (auto i : rows_of[l])
      for (auto j : cols_of[l]) keys.push_back(std::uint64_t(i) * std::uint64_t(n) + std::uint64_t(j));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Noise: drop each one with probability `noise`, add as many random zeros.
  std::vector<std::uint64_t> kept;
  kept.reserve(keys.size());
  std::uint64_t dropped = 0;
  for (std::size_t e = 0; e < keys.size(); ++e) {
    if (rn.uniform(keys[e]) < noise)
      ++dropped;
    else
      kept.push_back(keys[e]);
  }
  const std::uint64_t mn = std::uint64_t(m) * std::uint64_t(n);
  std::uint64_t added = 0;
  for (std::uint64_t t = 0; added < dropped && t < 64 * dropped + 64; ++t) {
    const std::uint64_t key = CounterRng(seed, std::uint64_t(RngStream::user) + 3).bits(t) % mn;
    if (std::binary_search(keys.begin(), keys.end(), key)) continue;  // only zeros turn on
    kept.push_back(key);
    ++added;
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  p.one_rows.resize(kept.size());
  p.one_cols.resize(kept.size());
  for (std::size_t e = 0; e < kept.size(); ++e) {
    p.one_rows[e] = ordinal_t(kept[e] / std::uint64_t(n));
    p.one_cols[e] = ordinal_t(kept[e] % std::uint64_t(n));
  }
  return p;
}

#define KFACTOR_BMF_INSTANTIATE(Space, T)                                                                          \
  template Problem<Space::memory_space> make_problem<Space>(const Space&, std::int64_t, std::int64_t,             \
                                                             const std::vector<ordinal_t>&,                         \
                                                             const std::vector<ordinal_t>&, const Options&);        \
  template State<Space::memory_space> init<Space>(const Space&, const Problem<Space::memory_space>&, const Options&); \
  template void step<Space>(const Space&, const Problem<Space::memory_space>&, const Options&,                    \
                            State<Space::memory_space>&);                                                          \
  template BooleanErrors full_error<Space>(const Space&, const Problem<Space::memory_space>&,                     \
                                           const BitMatrix<Space::memory_space>&, const BitMatrix<Space::memory_space>&);
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_BMF_INSTANTIATE, void)

}  // namespace kfactor::bmf
