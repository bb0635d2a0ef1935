// Non-template parts of kfactor::bmf and the explicit instantiations of its
// solver templates for every enabled execution space.
#include <kfactor/bmf/bmf.hpp>

#include <climits>
#include <cmath>
#include <span>

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
  check_range("bmf", "rank", rank, rank_range);
  stop.validate();
  check_range("bmf", "stop.max_iterations", stop.max_iterations, max_iterations_range);
  if (!std::isnan(stop.target)) check_range("bmf", "stop.target (the relative error)", stop.target, target_range);
  check_range("bmf", "batch", batch, batch_range);
  check_range("bmf", "flip_prob", flip_prob, flip_prob_range);
  check_range("bmf", "temperature", temperature, temperature_range);
  check_range("bmf", "temp_step", temp_step, temp_step_range);
  check_range("bmf", "temp_factor", temp_factor, temp_factor_range);
  check_range("bmf", "weight_ones", weight_ones, weight_ones_range);
  check_range("bmf", "every_line_changed", every_line_changed, every_line_changed_range);
  check_range("bmf", "cover_candidates", cover_candidates, cover_candidates_range);
  check_range("bmf", "proposal_group", proposal_group, proposal_group_range);
  check_range("bmf", "dense_limit_bytes", dense_limit_bytes, dense_limit_bytes_range);
  check_range("bmf", "index_min_lines", index_min_lines, index_min_lines_range);
}

namespace detail {

namespace {

/// One orientation of the cover: candidates are lines of P, X (P.lines x W
/// words) gets the assignments, Y (Q.lines x W) the patterns.
struct CoverSide {
  HostCsr P, Q;
  bit_word_t* X = nullptr;
  bit_word_t* Y = nullptr;
  int W = 0;
  bool done = false;                      ///< no candidate gained: its factor lines stay empty
  std::vector<ordinal_t> cand;            ///< this factor line's candidates (P-lines)
  std::vector<ordinal_t> best_S, best_R;  ///< the winner: pattern (Q-lines) and assigned P-lines
  std::int64_t best = 0;

  /// Words of P-line i (in X) or Q-line j (in Y).
  const bit_word_t* x(std::int64_t i) const { return X + std::size_t(i) * W; }
  const bit_word_t* y(std::int64_t j) const { return Y + std::size_t(j) * W; }
  /// Whether two lines share a factor line.
  bool meet(const bit_word_t* a, const bit_word_t* b) const {
    for (int q = 0; q < W; ++q)
      if (a[q] & b[q]) return true;
    return false;
  }
  /// Whether the one (P-line i, Q-line j) is covered.
  bool covered(std::int64_t i, std::int64_t j) const { return meet(x(i), y(j)); }
};

/// One thread's scratch: counters per line (ones, uncovered ones), reset
/// through the touched list, line lists, and this thread's best candidate of
/// the current factor line for each side (gain, index, its P-lines).
struct CoverScratch {
  struct Count {
    std::int32_t ones = 0, unc = 0;
  };
  std::vector<Count> count;
  std::vector<ordinal_t> touched, R, S2, R2;
  std::int64_t best[2] = {0, 0};
  int best_c[2] = {0, 0};
  std::vector<ordinal_t> best_R[2];
};

/// The lines `out` of one side that gain from a rank-1 block with the lines L
/// of the other side: their uncovered ones in L minus their zeros in L (zeros
/// already covered count as a cost too: a conservative gain, no m x n state).
/// M holds L's lines (Q for P-lines, P for Q-lines); l_is_q says which side L
/// is on. Returns the total positive gain. `out` is in first-touch order:
/// deterministic for a given L, and every caller only uses it as a set.
std::int64_t gaining(const CoverSide& side, CoverScratch& s, const HostCsr& M, bool l_is_q,
                     std::span<const ordinal_t> L, std::vector<ordinal_t>& out) {
  s.touched.clear();
  const bit_word_t* others = l_is_q ? side.X : side.Y;  // the words of the lines o
  for (const ordinal_t l : L) {
    const bit_word_t* wl = l_is_q ? side.y(l) : side.x(l);
    // A line in no factor line yet covers none of its ones (most lines, early on).
    const bool blank = std::all_of(wl, wl + side.W, [](bit_word_t w) { return w == 0; });
    for (offset_t e = M.map[l]; e < M.map[l + 1]; ++e) {
      const ordinal_t o = M.idx[e];
      auto& c = s.count[o];
      if (c.ones++ == 0) s.touched.push_back(o);
      if (blank || !side.meet(wl, others + std::size_t(o) * side.W)) ++c.unc;
    }
  }
  out.clear();
  std::int64_t total = 0;
  const std::int64_t n = std::int64_t(L.size());
  for (const ordinal_t o : s.touched) {
    auto& c = s.count[o];
    const std::int64_t g = std::int64_t(c.unc) - (n - c.ones);
    if (g > 0) {
      total += g;
      out.push_back(o);
    }
    c = {};
  }
  return total;
}

/// Candidates of factor line l: the P-lines of random uncovered ones (lines
/// weighted by their ones), distinct.
void sample_candidates(CoverSide& side, const CounterRng& rng, int l, int candidates) {
  const HostCsr& P = side.P;
  const offset_t nnz = P.map[P.lines];
  side.cand.clear();
  for (std::uint64_t t = 0; int(side.cand.size()) < candidates && t < 8 * std::uint64_t(candidates); ++t) {
    const offset_t e = rng.bits((std::uint64_t(l) << 32) | t) % nnz;
    const std::int64_t r = std::upper_bound(P.map, P.map + P.lines + 1, e) - P.map - 1;
    if (side.covered(r, P.idx[e]) || std::find(side.cand.begin(), side.cand.end(), ordinal_t(r)) != side.cand.end())
      continue;
    side.cand.push_back(ordinal_t(r));
  }
}

/// P-line r's ones: the pattern (Q-lines) candidate r proposes.
std::span<const ordinal_t> line_of(const HostCsr& P, ordinal_t r) { return {P.idx + P.map[r], P.idx + P.map[r + 1]}; }

}  // namespace

// Per factor line l, both orientations at once:
//  1. each live orientation draws its candidates (serial: a few hundred draws);
//  2. every (orientation, candidate) gain in one dynamically scheduled loop;
//     each thread keeps, per orientation, its best candidate and its lines;
//  3. per orientation, the threads' bests merged into the winner; then both
//     winners refined concurrently and written into the factors.
// Lines whose gains visit few ones (sparse C) run 2 and 3 on the calling
// thread: there a parallel region would cost more than the work.
// Determinism: a gain depends only on its candidate and the factor lines
// before l (which step 2 only reads); the winner is the largest gain, the
// lowest candidate index on equal gains, a total order that does not care
// which thread saw which candidate, and the serial loop's rule ("a strictly
// larger gain wins"); the two orientations share no data. So the factors do
// not depend on the thread count or the schedule.
void greedy_cover(const HostCsr& rows, const HostCsr& cols, int k, int candidates, std::uint64_t seed,
                  std::vector<bit_word_t> (&A)[2], std::vector<bit_word_t> (&Bt)[2]) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  const int W = bit_words(k);
  const std::int64_t m = rows.lines, n = cols.lines;
  for (int i = 0; i < 2; ++i) {
    A[i].assign(std::size_t(m) * W, 0);
    Bt[i].assign(std::size_t(n) * W, 0);
  }
  if (rows.map[m] == 0) return;
  // Side 0: candidates from C's rows (X = A, Y = Bt); side 1: from C's columns (X = Bt, Y = A).
  CoverSide sides[2];
  sides[0].P = rows, sides[0].Q = cols, sides[0].X = A[0].data(), sides[0].Y = Bt[0].data();
  sides[1].P = cols, sides[1].Q = rows, sides[1].X = Bt[1].data(), sides[1].Y = A[1].data();
  for (auto& side : sides) side.W = W;
  const Host host;
  const Kokkos::Experimental::UniqueToken<Host> token(host);  // one scratch per thread of the instance
  std::vector<CoverScratch> scratch(token.size());
  try {
    for (auto& s : scratch) s.count.resize(std::max(m, n));
  } catch (const std::bad_alloc& e) {
    const std::size_t bytes = scratch.size() * std::size_t(std::max(m, n)) * sizeof(CoverScratch::Count);
    throw allocation_failure("the cover start's counters", bytes, e);
  }
  // A thread's best so far: the largest gain, on equal gains the lowest index; a
  // gain must be positive. The same rule merges the threads' bests, so the
  // winner is the serial loop's (first candidate with the largest gain).
  auto better = [](std::int64_t g, int c, std::int64_t g0, int c0) { return g > g0 || (g == g0 && g > 0 && c < c0); };
  // Runs body(t, scratch) for t in [0, tasks): in parallel, one scratch per
  // thread, or on the calling thread with scratch[0] when there is too little
  // work to pay for a parallel region. Either way gives the same factors.
  auto run = [&](bool parallel, const char* name, int tasks, auto&& body) {
    if (!parallel) {
      for (int t = 0; t < tasks; ++t) body(t, scratch[0]);
      return;
    }
    using Dynamic = Kokkos::RangePolicy<Host, Kokkos::Schedule<Kokkos::Dynamic>>;
    Kokkos::parallel_for(name, Dynamic(host, 0, tasks).set_chunk_size(1), [&](int t) {
      const int id = token.acquire();
      body(t, scratch[id]);
      token.release(id);
    });
    host.fence();
  };
  const CounterRng rng(seed, RngStream::factor_h);
  for (int l = 0; l < k; ++l) {
    int live[2], nlive = 0;
    for (int i = 0; i < 2; ++i)
      if (!sides[i].done) live[nlive++] = i;
    if (nlive == 0) break;
    // 1. Each live side's candidates (a few hundred draws: serial), and the ones their gains will visit.
    std::int64_t work = 0;
    for (int j = 0; j < nlive; ++j) {
      CoverSide& side = sides[live[j]];
      sample_candidates(side, rng, l, candidates);
      for (const ordinal_t r : side.cand)
        for (const ordinal_t q : line_of(side.P, r)) work += std::int64_t(side.Q.map[q + 1] - side.Q.map[q]);
    }
    const bool parallel = work >= (std::int64_t(1) << 16);  // about 100 us of work
    // 2. Every (side, candidate) gain, dynamically scheduled (their costs differ widely).
    for (auto& s : scratch)
      for (int i = 0; i < 2; ++i) s.best[i] = 0, s.best_c[i] = INT_MAX;
    const int n0 = sides[0].done ? 0 : int(sides[0].cand.size());
    const int tasks = n0 + (sides[1].done ? 0 : int(sides[1].cand.size()));
    run(parallel, "kfactor::bmf::cover_gains", tasks, [&](int t, CoverScratch& s) {
      const int i = t < n0 ? 0 : 1, c = t < n0 ? t : t - n0;
      const CoverSide& side = sides[i];
      const std::int64_t g = gaining(side, s, side.Q, true, line_of(side.P, side.cand[c]), s.R);
      if (better(g, c, s.best[i], s.best_c[i])) {
        s.best[i] = g;
        s.best_c[i] = c;
        s.best_R[i].swap(s.R);
      }
    });
    // 3. Per side: the threads' bests merged into the winner, refined (the pattern
    // the assigned lines vote for, then the lines that gain from it, while it
    // helps), then written into the factors.
    for (int j = 0; j < nlive; ++j) {
      const int i = live[j];
      CoverSide& side = sides[i];
      CoverScratch* w = nullptr;
      for (auto& s : scratch)
        if (better(s.best[i], s.best_c[i], w ? w->best[i] : 0, w ? w->best_c[i] : INT_MAX)) w = &s;
      side.done = !w;  // nothing left to cover with a gain
      if (!w) continue;
      side.best = w->best[i];
      const auto S = line_of(side.P, side.cand[w->best_c[i]]);
      side.best_S.assign(S.begin(), S.end());
      side.best_R.swap(w->best_R[i]);
    }
    int refine[2], nrefine = 0;
    for (int j = 0; j < nlive; ++j)
      if (!sides[live[j]].done) refine[nrefine++] = live[j];
    run(parallel && nrefine > 1, "kfactor::bmf::cover_refine", nrefine, [&](int j, CoverScratch& s) {
      CoverSide& side = sides[refine[j]];
      for (int round = 0; round < 4; ++round) {
        gaining(side, s, side.P, false, side.best_R, s.S2);  // the vote
        const std::int64_t g = gaining(side, s, side.Q, true, s.S2, s.R2);
        if (g <= side.best) break;
        side.best = g;
        side.best_S.swap(s.S2);
        side.best_R.swap(s.R2);
      }
      const bit_word_t bit = bit_word_t(1) << (l % bit_word_bits);
      for (const ordinal_t q : side.best_S) side.Y[std::size_t(q) * W + l / bit_word_bits] |= bit;
      for (const ordinal_t p : side.best_R) side.X[std::size_t(p) * W + l / bit_word_bits] |= bit;
    });
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

#define KFACTOR_BMF_INSTANTIATE(Space, T)                                                                             \
  template Problem<Space::memory_space> make_problem<Space>(const Space&, std::int64_t, std::int64_t,                 \
                                                            const std::vector<ordinal_t>&,                            \
                                                            const std::vector<ordinal_t>&, const Options&);           \
  template State<Space::memory_space> init<Space>(const Space&, const Problem<Space::memory_space>&, const Options&); \
  template void step<Space>(const Space&, const Problem<Space::memory_space>&, const Options&,                        \
                            State<Space::memory_space>&);                                                             \
  template BooleanErrors full_error<Space>(const Space&, const Problem<Space::memory_space>&,                         \
                                           const BitMatrix<Space::memory_space>&,                                     \
                                           const BitMatrix<Space::memory_space>&);
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_BMF_INSTANTIATE, void)

}  // namespace kfactor::bmf
