// bench_distributed: distributed NMF, ALS, BMF and MNMF
// (kfactor/distributed/) under mpiexec. For every rank count p = 1..P of the job (sub-communicators of
// the first p ranks; the others wait without spinning), it times:
//   strong scaling: a fixed problem;
//   weak scaling:   the problem's rows grow with p (V = V0 p, m = m0 p; the
//                   other dimension and the nonzeros per row fixed);
// the time per iteration (step only, fenced; the slowest rank), split into
// communication (the MPI calls, timed after a fence, see
// distributed/detail/collectives.hpp) and compute (the rest), per kind of
// call (all-reduce, all-gather, ring shift), and the model: bytes per
// iteration and rank (distributed/nmf.hpp, als.hpp, bmf.hpp, mnmf.hpp) and
// the predicted time
// per kind, calls x latency + bytes x inverse bandwidth, with constants
// calibrated on the same ranks just before by size sweeps through the
// solvers' own collectives (Calibration below). One JSON record per
// (solver, layout, scaling, p) through perf/common/bench.hpp on rank 0; a
// table on stderr.
//
// NMF runs each layout of --grid (a comma list of 1d, auto and PRxPC; a
// PRxPC runs at p = PR * PC only, auto is choose_grid's pick for each p, a
// layout already run at this p is skipped; default 1d,auto); the records
// carry the grid, and the model is epoch_volume's for it (all-gathers and
// the grid's reduce-scatters both as all-gather calls: a ring moves the same
// bytes for either, and the calibration's all-gather over p ranks stands in
// for the grid's exchanges over its rows and columns).
//
// BMF (--bmf ROWSxCOLSxDENSITY) runs bench_bmf's planted case: a Boolean C
// of 20 planted blocks at that density with 2% noise (bmf::make_planted,
// factor density sqrt(DENSITY / 20)), factorized at k = --bmf-k from the
// cover start, L = 4000, C stored as --bmf-dense says (auto: dense bits
// when both orientations fit in 1 GiB per rank, which can differ between 1
// and P ranks; on or off gives every rank count the same storage); its
// model is the two all-reductions of an iteration, 8 (2 min(L, COLS) + 3)
// bytes.
// MNMF (--mnmf USERSxITEMSxDRAWS) runs bench_mnmf's ratings
// (bench::power_law_ratings, perf/common/mnmf_data.hpp) with random
// symmetric graphs of 15 neighbours (a kNN graph's structure, not its build
// cost), euclid, lambda 1, r = --mnmf-r; its model is an epoch's two
// all-gathers of the factors, (P - 1) / P (USERS + ITEMS) r values received.
// Weak scaling grows ROWS (USERS) and, for MNMF, DRAWS with p.
//
//   bench_distributed --help prints the options.
//
// The benchmark sets Collectives::measure_wait: a timed barrier before each
// collective separates waiting for slower ranks ("wait": imbalance, or here
// CPU contention) from the transfer ("communication", the collective alone),
// which is what the model predicts (model_over_measured_comm uses the
// least transfer time over ranks). It also logs every call with the
// involuntary context switches its rank suffered meanwhile: a rank switched
// out by the OS stretches the collective on every rank by a time slice,
// which no latency-bandwidth model describes, so the records also compare
// model and measurement over the undisturbed calls alone
// (measured_over_model_undisturbed, undisturbed_call_fraction). NMF records
// also carry the time of an epoch's two all-gathers run back to back without
// compute (gathers_alone_s).
#include "common/bench.hpp"

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/bmf.hpp>
#include <kfactor/distributed/mnmf.hpp>
#include <kfactor/distributed/nmf.hpp>

#include <mpi.h>

#include "common/mnmf_data.hpp"
#include "common/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {
using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Args {
  std::string nmf = "40000x20000x800000";
  int k = 32;
  std::vector<std::string> algs = {"hals", "mu"};
  std::vector<std::string> grids = {"1d", "auto"};  ///< NMF layouts
  std::string als = "20000x5000x400000";
  int f = 16;
  int iters = 7;
  std::string precision = "double";
  bool weak = true, strong = true;
  bool dense = false;  ///< NMF on a dense V x D (the NNZ of --nmf is ignored)
  /// Time every collective apart (barrier before each, a record per call);
  /// 0 measures the iteration as a user's run makes it, where small NCCL
  /// all-reductions are enqueued without a host round trip.
  bool split = true;
  std::uint64_t seed = 1;
  std::vector<std::string> layouts = {"replicated"};  ///< ALS factor layouts
  std::string als_layout = "csr";                     ///< ALS half-step layout (csr: the solver's usual choice)
  double max_batch_mb = 0;                            ///< ALS normal equations per batch (0: the solver's default)
  /// bench_bmf's largest case, its planted 100000 x 100000 C at density 1e-5.
  std::string bmf = "100000x100000x1e-5";
  int bmf_k = 20;
  bmf::DenseC bmf_dense = bmf::DenseC::automatic;
  /// bench_mnmf's largest case, its Netflix-shaped preset.
  std::string mnmf = "480189x17770x99072112";
  int mnmf_r = 32;
};

std::vector<std::int64_t> dims(const std::string& s) {
  std::vector<std::int64_t> d;
  for (const auto& x : bench::split(s, 'x')) d.push_back(std::stoll(x));
  if (d.size() != 3) {
    std::fprintf(stderr, "bench_distributed: expected AxBxNNZ, got %s\n", s.c_str());
    std::exit(2);
  }
  return d;
}

/// --bmf ROWSxCOLSxDENSITY.
struct BmfShape {
  std::int64_t rows = 0, cols = 0;
  double density = 0;
};
BmfShape bmf_shape(const std::string& s) {
  const auto d = bench::split(s, 'x');
  if (d.size() != 3) {
    std::fprintf(stderr, "bench_distributed: expected ROWSxCOLSxDENSITY, got %s\n", s.c_str());
    std::exit(2);
  }
  return {std::stoll(d[0]), std::stoll(d[1]), std::stod(d[2])};
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k.rfind("--kokkos", 0) == 0) {
      --i;
      continue;
    }
    if (k == "--nmf")
      a.nmf = v;
    else if (k == "--k")
      a.k = std::stoi(v);
    else if (k == "--algs")
      a.algs = bench::split(v, ',');
    else if (k == "--grid")
      a.grids = bench::split(v, ',');
    else if (k == "--als")
      a.als = v;
    else if (k == "--f")
      a.f = std::stoi(v);
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--weak")
      a.weak = v != "0";
    else if (k == "--dense")
      a.dense = v != "0";
    else if (k == "--split")
      a.split = v != "0";
    else if (k == "--als-layout")
      a.als_layout = v;
    else if (k == "--strong")
      a.strong = v != "0";
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--factor-layout")
      a.layouts = v == "both" ? std::vector<std::string>{"replicated", "blocked"} : bench::split(v, ',');
    else if (k == "--max-batch-mb")
      a.max_batch_mb = std::stod(v);
    else if (k == "--bmf")
      a.bmf = v;
    else if (k == "--bmf-k")
      a.bmf_k = std::stoi(v);
    else if (k == "--bmf-dense")
      a.bmf_dense = bmf::parse_dense_c(v);
    else if (k == "--mnmf")
      a.mnmf = v;
    else if (k == "--mnmf-r")
      a.mnmf_r = std::stoi(v);
    else {
      std::fprintf(stderr, "bench_distributed: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

/// Non-negative V x D with ~nnz entries, rows of varying length (a quarter
/// of the rows 3x denser), the same on every rank (counter-based).
template <class T>
CooMatrix<T> synthetic(std::int64_t V, std::int64_t D, std::int64_t nnz, std::uint64_t seed) {
  const CounterRng rng(seed, RngStream::user);
  CooMatrix<T> c;
  c.num_rows = V;
  c.num_cols = D;
  const double avg = double(nnz) / double(V);
  c.rows.reserve(std::size_t(nnz * 1.1));
  c.cols.reserve(std::size_t(nnz * 1.1));
  c.values.reserve(std::size_t(nnz * 1.1));
  for (std::int64_t i = 0; i < V; ++i) {
    const double len = (i % 4 == 0 ? 2.0 : 2.0 / 3.0) * avg;  // mean avg
    const std::int64_t n = std::min<std::int64_t>(D, std::int64_t(len));
    // n distinct columns: a random start and a stride coprime with D.
    const std::uint64_t start = rng.bits(2 * std::uint64_t(i)) % std::uint64_t(D);
    std::uint64_t stride =
        1 + 2 * (rng.bits(2 * std::uint64_t(i) + 1) % std::uint64_t(std::max<std::int64_t>(1, D / 2 - 1)));
    while (std::gcd(stride, std::uint64_t(D)) != 1) stride += 2;
    for (std::int64_t e = 0; e < n; ++e) {
      const std::uint64_t j = (start + std::uint64_t(e) * stride) % std::uint64_t(D);
      c.rows.push_back(ordinal_t(i));
      c.cols.push_back(ordinal_t(j));
      c.values.push_back(T(0.1 + rng.uniform((std::uint64_t(1) << 50) + std::uint64_t(i) * D + j)));
    }
  }
  return c;
}

/// Args::split, for measure().
bool split_calls = true;

int rank_of(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int size_of(MPI_Comm c) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}

double allreduce(MPI_Comm c, double v, MPI_Op op) {
  double out = v;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, op, c);
  return out;
}

/// The model's constants, each measured on the same ranks just before the
/// runs, through the solvers' own path (distributed/detail/collectives.hpp)
/// on Views in the execution space's memory (on a GPU: with the staging
/// copies through pinned host memory the solvers pay), with a barrier before
/// every timed call and the median of the repetitions:
///   alpha     latency per message step: an all-reduce of 8 bytes / ceil(log2 p);
///   gamma     seconds per payload byte of an all-reduce: least-squares slope
///             over payloads of 8 B .. 512 KB (the Grams are 8 KB .. 2 MB);
///   L_g, beta all-gather of rows: least-squares intercept and slope of the
///             time against the bytes received, over factors of 1 .. 32 MB
///             (the solvers' factors are 2.5 .. 40 MB), each size timed as
///             four calls back to back after one barrier, as a solver's
///             gathers follow each other without one (with a barrier before
///             every call the fitted per-call cost was 68-129 us on two
///             H200s and the model twice the solvers' measured transfer on
///             iterations of a few milliseconds);
///   L_s, beta_s the same for one ring shift (MPI_Sendrecv to the
///             neighbours) over blocks of 0.5 .. 16 MB.
/// A sweep over the sizes the solvers use, not one size: a single 16 MB
/// all-gather folded its per-call cost into beta and alpha did not cover
/// the per-call cost of large messages.
///   alpha_enqueued  device time per all-reduce of one value that the NCCL
///             engine enqueues between kernels without a host wait (HALS and
///             ALO sum a column norm per column so): 200 of them back to back,
///             one fence, divided by 200. These calls are not in the measured
///             transfer (the host never waits for them; their time is part of
///             compute), so the model prices them apart (model_enqueued_s)
///             and leaves them out of model_communication. The sweeps' repetitions start with
/// cold caches (a 64 MB write between them), as the solvers' calls do after
/// their compute.
struct Calibration {
  double alpha = 0, gamma = 0, gather_latency = 0, beta = 0, shift_latency = 0, shift_beta = 0;
  double alpha_enqueued = 0;  ///< 0 unless the engine enqueues one-value all-reductions
  /// Modelled seconds of `calls` calls of each kind moving `bytes` (received,
  /// or all-reduce payload).
  [[nodiscard]] double reduce(double calls, double payload, int p) const {
    return calls * alpha * std::ceil(std::log2(double(p))) + payload * gamma;
  }
  [[nodiscard]] double gather(double calls, double bytes_in) const { return calls * gather_latency + bytes_in * beta; }
  [[nodiscard]] double shift(double calls, double bytes_in) const {
    return calls * shift_latency + bytes_in * shift_beta;
  }
};

/// Least-squares line t = a + b x.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& t) {
  const double n = double(x.size());
  double sx = 0, st = 0, sxx = 0, sxt = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    st += t[i];
    sxx += x[i] * x[i];
    sxt += x[i] * t[i];
  }
  const double b = (n * sxt - sx * st) / (n * sxx - sx * sx);
  return {(st - b * sx) / n, b};
}

template <class T>
Calibration calibrate(MPI_Comm c, const Exec& exec) {
  using Mem = Exec::memory_space;
  const int p = size_of(c), me = rank_of(c);
  Calibration cal;
  if (p == 1) return cal;
  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  distributed::detail::Collectives coll(c);
  std::vector<distributed::detail::Collectives::CallRecord> log;
  coll.log = &log;
  // Median over reps of the slowest rank's time of call(), over the reps
  // during which no rank was switched out (all reps if there is none): the
  // same filter as the undisturbed calls in measure().
  std::vector<unsigned char> junk(std::size_t(64) << 20);
  auto time = [&](int reps, auto&& call, bool cold = true) {
    std::vector<double> all, clean;
    for (int i = 0; i < reps; ++i) {
      if (cold) std::fill(junk.begin(), junk.end(), static_cast<unsigned char>(i));  // evict the host caches
      log.clear();
      MPI_Barrier(c);
      const double t0 = MPI_Wtime();
      call();
      double tv[2] = {MPI_Wtime() - t0, double(log.empty() ? 0 : log.back().switches)};
      MPI_Allreduce(MPI_IN_PLACE, tv, 2, MPI_DOUBLE, MPI_MAX, c);
      all.push_back(tv[0]);
      if (tv[1] == 0) clean.push_back(tv[0]);
    }
    return median(clean.empty() ? all : clean);
  };
  std::vector<double> x, t;
  for (const std::size_t n : {std::size_t(1), std::size_t(1024), std::size_t(8192), std::size_t(65536)}) {
    Kokkos::View<double*, Mem> v("v", n);
    const double tn = time(n == 1 ? 300 : 31, [&] { coll.allreduce_sum(exec, v); }, n > 1);
    if (n == 1) cal.alpha = tn / std::ceil(std::log2(double(p)));
    x.push_back(8.0 * n);
    t.push_back(tn);
  }
  cal.gamma = std::max(0.0, fit_line(x, t).second);
  const int K = 64;
  x.clear();
  t.clear();
  for (const int mb : {1, 4, 16, 32}) {
    const ordinal_t rows = ordinal_t((std::size_t(mb) << 20) / (sizeof(T) * K));
    std::vector<ordinal_t> bounds(p + 1);
    for (int q = 0; q <= p; ++q) bounds[q] = ordinal_t(std::int64_t(rows) * q / p);
    DenseMatrix<T, Mem> mine("mine", bounds[me + 1] - bounds[me], K), all("all", rows, K);
    constexpr int calls = 4;
    const double tg = time(9,
                           [&] {
                             for (int i = 0; i < calls; ++i) coll.allgather_rows(exec, mine, all, bounds);
                           }) /
                      calls;
    // mean bytes received per rank
    x.push_back(double(rows) * (p - 1) / p * K * sizeof(T));
    t.push_back(tg);
  }
  std::tie(cal.gather_latency, cal.beta) = fit_line(x, t);
  cal.gather_latency = std::max(cal.gather_latency, cal.alpha * std::ceil(std::log2(double(p))));
  x.clear();
  t.clear();
  for (const double mb : {0.5, 2.0, 8.0, 16.0}) {
    const ordinal_t rows = ordinal_t(mb * 1048576.0 / (sizeof(T) * K));
    DenseMatrix<T, Mem> send("send", rows, K), recv("recv", rows, K);
    const double ts = time(9, [&] { coll.shift_rows(exec, send, (me + p - 1) % p, recv, (me + 1) % p); });
    x.push_back(double(rows) * K * sizeof(T));
    t.push_back(ts);
  }
  std::tie(cal.shift_latency, cal.shift_beta) = fit_line(x, t);
  cal.shift_latency = std::max(cal.shift_latency, cal.alpha);
  if (coll.engine_name<Exec, Mem>() == "nccl") {
    // A communicator without a call log: the path the solvers' sweeps take.
    distributed::detail::Collectives quiet(c);
    Kokkos::View<T*, Mem> one("one", 1);
    constexpr int burst = 200;
    std::vector<double> bursts;
    for (int rep = 0; rep < 9; ++rep) {
      MPI_Barrier(c);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < burst; ++i) quiet.allreduce_sum(exec, one);
      exec.fence();
      bursts.push_back(allreduce(c, MPI_Wtime() - t0, MPI_MAX) / burst);
    }
    cal.alpha_enqueued = median(bursts);
  }
  return cal;
}

struct Measure {
  double per_iter = 0;                               ///< slowest rank, seconds per step
  double comm_max = 0, comm_min = 0, comm_mean = 0;  ///< transfer: the collectives alone
  double wait_max = 0, wait_mean = 0;                ///< barriers before them (imbalance)
  double compute_max = 0;
  double bytes_in_mean = 0;  ///< measured all-gather bytes per iteration (mean over ranks)
  double reduce_bytes = 0;   ///< all-reduce payload per iteration
  /// transfer per kind of call (least over ranks of the per-rank medians) and calls per step
  double reduce_s = 0, gather_s = 0, shift_s = 0;
  double reduce_calls = 0, gather_calls = 0, shift_calls = 0;
  /// Calls during which no rank was descheduled (no involuntary context
  /// switch on any rank), over all timed steps: their transfer (slowest
  /// rank) and the model of exactly those calls.
  double undisturbed_fraction = 0, undisturbed_s = 0, undisturbed_model_s = 0;
};

/// The model's prediction per kind of call (seconds per step).
struct Model {
  double reduce_s = 0, gather_s = 0, shift_s = 0;
  /// One-value all-reductions enqueued on the device (see alpha_enqueued):
  /// part of compute, not of total().
  double enqueued_s = 0;
  [[nodiscard]] double total() const { return reduce_s + gather_s + shift_s; }
};

/// Times `iters` calls of step() after one warm-up, each between a barrier
/// and a fence; per rank the median over the calls of the time, the
/// transfer and the wait (robust to a machine shared with other jobs), then
/// reduced over ranks. Collective over c.
template <class StepFn, class StatsFn>
Measure measure(MPI_Comm c, const Exec& exec, int iters, const std::vector<distributed::detail::Collectives*>& colls,
                const Calibration& cal, StepFn&& step, StatsFn&& stats) {
  step();
  exec.fence();
  std::vector<double> ts, cs, ws, bytes, red, rs, gs, ss, rc, gc, sc;
  std::vector<distributed::detail::Collectives::CallRecord> calls;
  double clean_s = 0, clean_model = 0, n_clean = 0, n_all = 0;
  const int p = size_of(c);
  if (split_calls)
    for (auto* coll : colls) coll->log = &calls;
  for (int i = 0; i < iters; ++i) {
    calls.clear();
    MPI_Barrier(c);
    const auto s0 = stats();
    const double t0 = MPI_Wtime();
    step();
    exec.fence();
    ts.push_back(MPI_Wtime() - t0);
    // Per call: the slowest rank's time, and whether any rank was switched out.
    std::vector<double> t(calls.size()), sw(calls.size());
    for (std::size_t k = 0; k < calls.size(); ++k) {
      t[k] = calls[k].seconds;
      sw[k] = double(calls[k].switches);
    }
    MPI_Allreduce(MPI_IN_PLACE, t.data(), int(t.size()), MPI_DOUBLE, MPI_MAX, c);
    MPI_Allreduce(MPI_IN_PLACE, sw.data(), int(sw.size()), MPI_DOUBLE, MPI_MAX, c);
    for (std::size_t k = 0; k < calls.size(); ++k) {
      ++n_all;
      if (sw[k] > 0) continue;
      ++n_clean;
      clean_s += t[k];
      const auto& r = calls[k];
      clean_model += r.kind == 'r'   ? cal.reduce(1, r.bytes, p)
                     : r.kind == 'g' ? cal.gather(1, r.bytes)
                                     : cal.shift(1, r.bytes);
    }
    const auto s1 = stats();
    cs.push_back(s1.seconds - s0.seconds);
    ws.push_back(s1.wait_seconds - s0.wait_seconds);
    bytes.push_back(double(s1.bytes_in - s0.bytes_in));
    red.push_back(double(s1.reduce_bytes - s0.reduce_bytes));
    rs.push_back(s1.reduce_seconds - s0.reduce_seconds);
    gs.push_back(s1.gather_seconds - s0.gather_seconds);
    ss.push_back(s1.shift_seconds - s0.shift_seconds);
    rc.push_back(double(s1.reduce_calls - s0.reduce_calls));
    gc.push_back(double(s1.gather_calls - s0.gather_calls));
    sc.push_back(double(s1.shift_calls - s0.shift_calls));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double t = median(ts), comm = median(cs), wait = median(ws);
  Measure m;
  m.per_iter = allreduce(c, t, MPI_MAX);
  m.comm_max = allreduce(c, comm, MPI_MAX);
  m.comm_min = allreduce(c, comm, MPI_MIN);
  m.comm_mean = allreduce(c, comm, MPI_SUM) / p;
  m.wait_max = allreduce(c, wait, MPI_MAX);
  m.wait_mean = allreduce(c, wait, MPI_SUM) / p;
  m.compute_max = allreduce(c, t - comm - wait, MPI_MAX);
  m.bytes_in_mean = allreduce(c, median(bytes), MPI_SUM) / p;
  m.reduce_bytes = median(red);
  m.reduce_s = allreduce(c, median(rs), MPI_MIN);
  m.gather_s = allreduce(c, median(gs), MPI_MIN);
  m.shift_s = allreduce(c, median(ss), MPI_MIN);
  m.reduce_calls = median(rc);
  m.gather_calls = median(gc);
  m.shift_calls = median(sc);
  for (auto* coll : colls) coll->log = nullptr;
  m.undisturbed_fraction = n_all > 0 ? n_clean / n_all : 0.0;
  m.undisturbed_s = clean_s;
  m.undisturbed_model_s = clean_model;
  return m;
}

void emit(MPI_Comm c, const std::string& solver, const std::string& scaling, const std::string& variant,
          const std::string& grid, const std::string& engine, const char* prec, std::int64_t rows, std::int64_t cols,
          std::int64_t nnz, int K, int iters, const Measure& m, double model_bytes, const Model& model,
          const Calibration& cal, double gathers_alone = 0) {
  if (rank_of(c) != 0) return;
  const int p = size_of(c);
  const double model_s = model.total();
  Report r;
  r.command = "bench_distributed";
  r.backend = backend_name<Exec>();
  r.precision = prec;
  r.rows = rows;
  r.cols = cols;
  r.nnz = nnz;
  r.rank = K;
  r.iterations = iters;
  r.seconds = m.per_iter;
  r.timings.set("per_iteration", m.per_iter);
  r.timings.set("communication", m.comm_mean);
  r.timings.set("communication_min", m.comm_min);
  r.timings.set("communication_max", m.comm_max);
  r.timings.set("wait", m.wait_mean);
  r.timings.set("wait_max", m.wait_max);
  r.timings.set("compute_max", m.compute_max);
  r.timings.set("model_communication", model_s);
  r.info["solver"] = solver;
  r.info["variant"] = variant;
  r.info["scaling"] = scaling;
  r.info["mpi_ranks"] = std::to_string(p);
  nlohmann::json record{
      {"benchmark", "distributed"},
      {"solver", solver},
      {"scaling", scaling},
      {"ranks", p},
      {"model_bytes_per_iteration", model_bytes},
      {"measured_gather_bytes_per_iteration", m.bytes_in_mean},
      {"measured_reduce_payload_bytes_per_iteration", m.reduce_bytes},
      {"alpha_s", cal.alpha},
      {"beta_s_per_byte", cal.beta},
      {"gamma_s_per_byte", cal.gamma},
      {"gather_latency_s", cal.gather_latency},
      {"shift_latency_s", cal.shift_latency},
      {"shift_beta_s_per_byte", cal.shift_beta},
      {"model_over_measured_comm", m.comm_min > 0 ? model_s / m.comm_min : 0.0},
      {"gathers_alone_s", gathers_alone},
      {"measured_reduce_s", m.reduce_s},
      {"measured_gather_s", m.gather_s},
      {"measured_shift_s", m.shift_s},
      {"model_reduce_s", model.reduce_s},
      {"model_gather_s", model.gather_s},
      {"model_shift_s", model.shift_s},
      {"alpha_enqueued_s", cal.alpha_enqueued},
      {"model_enqueued_s", model.enqueued_s},
      {"calls_reduce_gather_shift", {m.reduce_calls, m.gather_calls, m.shift_calls}},
      {"undisturbed_call_fraction", m.undisturbed_fraction},
      {"undisturbed_calls_s", m.undisturbed_s},
      {"undisturbed_calls_model_s", m.undisturbed_model_s},
      {"measured_over_model_undisturbed", m.undisturbed_model_s > 0 ? m.undisturbed_s / m.undisturbed_model_s : 0.0}};
  r.info["comm_engine"] = engine;
  record["comm_engine"] = engine;
  if (!grid.empty()) {  // NMF: the layout that ran
    r.info["grid"] = grid;
    record["grid"] = grid;
  }
  bench::emit(r, record);
  std::fprintf(
      stderr,
      "%-4s %-5s %-4s %-6s %-11s p=%d %6lldx%-6lld nnz %8lld K=%-3d %8.2f ms/it  compute %8.2f  wait %6.2f  comm "
      "%6.3f (min %6.3f max %6.3f)  model %6.3f ms  bytes/it %.3g (model %.3g)  gathers alone %.3f ms\n",
      solver.c_str(), variant.c_str(), grid.c_str(), scaling.c_str(), engine.c_str(), p, (long long)rows,
      (long long)cols, (long long)nnz, K, 1e3 * m.per_iter, 1e3 * m.compute_max, 1e3 * m.wait_mean, 1e3 * m.comm_mean,
      1e3 * m.comm_min, 1e3 * m.comm_max, 1e3 * model_s, m.bytes_in_mean + m.reduce_bytes, model_bytes,
      1e3 * gathers_alone);
  if (p > 1)
    std::fprintf(stderr,
                 "       by kind, measured (model) ms: reduce %.3f (%.3f) x%.0f  gather %.3f (%.3f) x%.0f  shift %.3f "
                 "(%.3f) x%.0f\n",
                 1e3 * m.reduce_s, 1e3 * model.reduce_s, m.reduce_calls, 1e3 * m.gather_s, 1e3 * model.gather_s,
                 m.gather_calls, 1e3 * m.shift_s, 1e3 * model.shift_s, m.shift_calls);
  if (model.enqueued_s > 0)
    std::fprintf(stderr, "       one-value all-reductions enqueued on the device (in compute): model %.3f ms\n",
                 1e3 * model.enqueued_s);
  if (p > 1)
    std::fprintf(stderr,
                 "       undisturbed calls (no rank switched out): %.0f%%, measured %.3f ms, model %.3f ms, "
                 "measured/model %.2f; all calls: measured/model %.2f\n",
                 100 * m.undisturbed_fraction, 1e3 * m.undisturbed_s, 1e3 * m.undisturbed_model_s,
                 m.undisturbed_model_s > 0 ? m.undisturbed_s / m.undisturbed_model_s : 0.0,
                 model_s > 0 ? m.comm_min / model_s : 0.0);
}

/// The NMF layouts of --grid for p ranks (see the file comment).
std::vector<distributed::nmf::Grid> nmf_grids(const Args& a, std::int64_t V, std::int64_t D, int p) {
  namespace dn = distributed::nmf;
  std::vector<dn::Grid> out;
  for (const auto& spec : a.grids) {
    dn::Grid g = dn::parse_grid(spec);
    if (g.automatic()) g = dn::choose_grid(V, D, p);
    if (!g.one_d && g.rows * g.cols != p) continue;
    if (std::find(out.begin(), out.end(), g) == out.end() && (p > 1 || out.empty())) out.push_back(g);
  }
  return out;
}

template <class T, class Matrix>
void run_nmf_on(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t V, std::int64_t D,
                const Matrix& A, const Calibration& cal) {
  namespace dn = distributed::nmf;
  const int P = size_of(c);
  for (const auto& grid : nmf_grids(a, V, D, P)) {
    const auto blocks = dn::make_problem(exec, c, A, grid);
    for (const auto& alg : a.algs) {
      nmf::Options o;
      o.algorithm = nmf::parse_algorithm(alg);
      o.rank = a.k;
      o.seed = a.seed;
      auto s = dn::init(exec, blocks, o);
      const auto colls = s.comm->collectives();
      for (auto* coll : colls) coll->measure_wait = a.split;
      // The two all-gathers of an epoch alone (no compute in between), for
      // comparison with their share of the in-loop transfer time.
      double gathers_alone = 0;
      if (P > 1) {
        std::vector<double> t;
        for (int i = 0; i < 9; ++i) {
          const double c0 = s.comm_stats().seconds;
          s.comm->gather_w(exec, s.W);
          s.comm->gather_h(exec, s.Ht);
          t.push_back(s.comm_stats().seconds - c0);
        }
        std::sort(t.begin(), t.end());
        gathers_alone = allreduce(c, t[4], MPI_MAX);
      }
      const Measure m = measure(
          c, exec, a.iters, colls, cal,
          [&] {
            dn::step(exec, blocks, o, s);
            ++s.iteration;
          },
          [&] { return s.comm_stats(); });
      const auto v = dn::epoch_volume(V, D, a.k, P, sizeof(T), blocks.grid);
      Model model;
      if (P > 1) {
        // Payload of the all-reductions: two K x K Grams and the doubles.
        const double payload = 2.0 * a.k * a.k * sizeof(T) + 8.0 * v.scalar_reductions;
        model.gather_s = cal.gather(v.exchanges, (v.gather_words + v.scatter_words) * sizeof(T));
        // Without a call log or barriers (--split 0) the NCCL engine enqueues
        // the one-value reductions (see Calibration::alpha_enqueued).
        const bool enqueued = !a.split && cal.alpha_enqueued > 0;
        model.reduce_s = enqueued ? cal.reduce(2, payload - 8.0 * v.scalar_reductions, P)
                                  : cal.reduce(2 + v.scalar_reductions, payload, P);
        if (enqueued) model.enqueued_s = v.scalar_reductions * cal.alpha_enqueued;
      }
      emit(c, "nmf", scaling, alg, dn::to_string(blocks.grid), s.comm->coll->template engine_name<Exec, Mem>(),
           sizeof(T) == 4 ? "float" : "double", V, D, std::int64_t(blocks.global_nnz), a.k, a.iters, m, v.bytes, model,
           cal, gathers_alone);
    }
  }
}

/// NMF on a sparse synthetic() input or, with --dense 1, on a dense V x D of
/// uniform values generated on the device.
template <class T>
void run_nmf(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t V, std::int64_t D,
             std::int64_t nnz, const Calibration& cal) {
  if (a.dense) {
    DenseMatrix<T, Mem> A(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::A"), V, D);
    fill_uniform(exec, A, a.seed, RngStream::user, T(0), T(1));
    run_nmf_on<T>(c, exec, a, scaling, V, D, A, cal);
  } else {
    run_nmf_on<T>(c, exec, a, scaling, V, D, to_csr(exec, synthetic<T>(V, D, nnz, a.seed)), cal);
  }
}

template <class T>
void run_als(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t m_, std::int64_t n,
             std::int64_t nnz, const Calibration& cal) {
  namespace da = distributed::als;
  const auto problem = als::make_problem(exec, synthetic<T>(m_, n, nnz, a.seed + 1), 0.0, 1);
  const auto lp = da::distribute(exec, c, problem);
  for (const auto& layout : a.layouts) {
    da::Options o;
    o.rank = a.f;
    o.lambda = 0.05;
    o.seed = a.seed;
    // A fixed layout (and BALS tile): the autotuner is not what is measured.
    o.layout = a.als_layout == "bals" ? als::Layout::bals : als::Layout::csr;
    if (o.layout == als::Layout::bals) {
      o.xb = 4;
      o.yb = 64;
    }
    o.max_batch_bytes = std::size_t(a.max_batch_mb * 1048576.0);
    o.factor_layout = da::parse_factor_layout(layout);
    auto s = da::init(exec, c, lp, o);
    s.coll->measure_wait = a.split;
    const Measure m = measure(
        c, exec, a.iters, {s.coll.get()}, cal, [&] { da::step(exec, lp, o, s); }, [&] { return s.comm_stats(); });
    const auto v = s.iteration_volume();
    Model model;
    if (s.layout == da::FactorLayout::blocked)
      model.shift_s = cal.shift(v.collectives, v.bytes);
    else
      model.gather_s = cal.gather(v.collectives, v.bytes);
    const std::string variant = s.layout == da::FactorLayout::blocked
                                    ? a.als_layout + "-blocked(b=" + std::to_string(s.comm->ring->user_batches) + "," +
                                          std::to_string(s.comm->ring->item_batches) + ")"
                                    : a.als_layout;
    emit(c, "als", scaling, variant, "", s.coll->template engine_name<Exec, Mem>(), sizeof(T) == 4 ? "float" : "double",
         m_, n, lp.nnz, a.f, a.iters, m, v.bytes, model, cal);
  }
}

/// BMF on bench_bmf's planted case (see the file comment). The factors are
/// bits whatever --precision says.
void run_bmf(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, const BmfShape& shape,
             const Calibration& cal) {
  namespace db = distributed::bmf;
  const int P = size_of(c);
  const auto pl = bmf::make_planted(shape.rows, shape.cols, 20, std::sqrt(shape.density / 20.0), 0.02, 7);
  bmf::Options o;
  o.rank = a.bmf_k;
  o.dense_c = a.bmf_dense;
  o.seed = a.seed;
  o.init = bmf::Init::cover;  // random starts do not find lines this sparse (bench_bmf)
  o.every_line_changed = 0;
  o.flip_prob = std::min(o.flip_prob, 2.5 / o.rank);
  const auto problem = db::make_problem(exec, c, pl.rows, pl.cols, pl.one_rows, pl.one_cols, o);
  auto s = db::init(exec, problem, o);
  problem.coll->measure_wait = a.split;
  const Measure m = measure(
      c, exec, a.iters, {problem.coll.get()}, cal,
      [&] {
        db::step(exec, problem, o, s);
        ++s.iteration;
      },
      [&] { return s.comm_stats(); });
  // B's proposals' (dFP, dFN) and A's accepted (dFP, dFN, count), as int64.
  const double payload = 8.0 * (2.0 * double(std::min<std::int64_t>(o.batch, pl.cols)) + 3.0);
  Model model;
  if (P > 1) model.reduce_s = cal.reduce(2, payload, P);
  emit(c, "bmf", scaling, problem.local.dense ? "dense" : "sparse", "", problem.coll->template engine_name<Exec, Mem>(),
       "bits", pl.rows, pl.cols, std::int64_t(problem.layout.ones), o.rank, a.iters, m, P > 1 ? payload : 0.0, model,
       cal);
}

/// MNMF on bench_mnmf's ratings with random graphs (see the file comment).
template <class T>
void run_mnmf(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t users,
              std::int64_t items, std::int64_t draws, const Calibration& cal) {
  namespace dm = distributed::mnmf;
  const int P = size_of(c);
  const auto R = bench::power_law_ratings<T>(exec, users, items, draws, a.seed + 2);
  const auto user_graph = bench::random_graph<T>(exec, R, 15, a.seed + 3);
  const auto item_graph = bench::random_graph<T>(exec, transpose(exec, R), 15, a.seed + 4);
  const auto problem = dm::make_problem(exec, c, R, user_graph, item_graph);
  mnmf::Options o;
  o.rank = a.mnmf_r;
  o.lambda_w = o.lambda_h = 1.0;
  o.seed = a.seed;
  auto s = dm::init(exec, problem, o);
  problem.coll->measure_wait = a.split;
  const Measure m = measure(
      c, exec, a.iters, {problem.coll.get()}, cal,
      [&] {
        dm::step(exec, problem, o, s);
        ++s.iteration;
      },
      [&] { return s.comm_stats(); });
  // Each rank receives the others' rows of W and of H: on average
  // (P - 1) / P of them.
  const double bytes = double(P - 1) / P * double(users + items) * o.rank * sizeof(T);
  Model model;
  if (P > 1) model.gather_s = cal.gather(2, bytes);
  emit(c, "mnmf", scaling, mnmf::to_string(o.objective), "", problem.coll->template engine_name<Exec, Mem>(),
       sizeof(T) == 4 ? "float" : "double", users, items, problem.ratings, o.rank, a.iters, m, bytes, model, cal);
}

template <class T>
void run_all(MPI_Comm c, const Exec& exec, const Args& a) {
  const int p = size_of(c);
  const auto ab = calibrate<T>(c, exec);
  if (rank_of(c) == 0 && p > 1)
    std::fprintf(stderr,
                 "p=%d: alpha %.2f us per step, all-reduce %.3f ns per payload byte; all-gather %.1f us + %.3f ns/byte "
                 "(%.2f GB/s); shift %.1f us + %.3f ns/byte (%.2f GB/s)\n",
                 p, 1e6 * ab.alpha, 1e9 * ab.gamma, 1e6 * ab.gather_latency, 1e9 * ab.beta,
                 ab.beta > 0 ? 1e-9 / ab.beta : 0.0, 1e6 * ab.shift_latency, 1e9 * ab.shift_beta,
                 ab.shift_beta > 0 ? 1e-9 / ab.shift_beta : 0.0);
  // "none" skips a solver.
  const bool do_nmf = a.nmf != "none", do_als = a.als != "none";
  const bool do_bmf = a.bmf != "none", do_mnmf = a.mnmf != "none";
  const auto nd = do_nmf ? dims(a.nmf) : std::vector<std::int64_t>(3, 0), ad = do_als ? dims(a.als) : nd;
  const auto md = do_mnmf ? dims(a.mnmf) : std::vector<std::int64_t>(3, 0);
  const BmfShape bd = do_bmf ? bmf_shape(a.bmf) : BmfShape{};
  if (a.strong) {
    if (do_nmf) run_nmf<T>(c, exec, a, "strong", nd[0], nd[1], nd[2], ab);
    if (do_als) run_als<T>(c, exec, a, "strong", ad[0], ad[1], ad[2], ab);
    if (do_bmf) run_bmf(c, exec, a, "strong", bd, ab);
    if (do_mnmf) run_mnmf<T>(c, exec, a, "strong", md[0], md[1], md[2], ab);
  }
  if (a.weak) {  // rows and nonzeros grow with p; the base problem is the strong one over the job's size
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (do_nmf) run_nmf<T>(c, exec, a, "weak", nd[0] * p / world, nd[1], nd[2] * p / world, ab);
    if (do_als) run_als<T>(c, exec, a, "weak", ad[0] * p / world, ad[1], ad[2] * p / world, ab);
    if (do_bmf) run_bmf(c, exec, a, "weak", {bd.rows * p / world, bd.cols, bd.density}, ab);
    if (do_mnmf) run_mnmf<T>(c, exec, a, "weak", md[0] * p / world, md[1], md[2] * p / world, ab);
  }
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(mpiexec -n P bench_distributed [--nmf VxDxNNZ|none] [--k K] [--algs hals,alo,mu]
    [--grid 1d,auto,PRxPC] [--als MxNxNNZ|none] [--f F] [--als-layout csr|bals]
    [--factor-layout replicated|blocked|both]
    [--bmf ROWSxCOLSxDENSITY|none] [--bmf-k K] [--bmf-dense auto|on|off]
    [--mnmf USERSxITEMSxDRAWS|none] [--mnmf-r R]
    [--max-batch-mb MB] [--iters N] [--precision float|double]
    [--weak 1|0] [--strong 1|0] [--split 1|0] [--dense 1|0] [--seed S]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  {
    const Args a = parse(argc, argv);
    split_calls = a.split;
    const Exec exec;
    int world = 1, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int p = 1; p <= world; ++p) {
      MPI_Comm c;
      MPI_Comm_split(MPI_COMM_WORLD, me < p ? 0 : MPI_UNDEFINED, me, &c);
      if (c != MPI_COMM_NULL) {
        if (a.precision == "float")
          run_all<float>(c, exec, a);
        else
          run_all<double>(c, exec, a);
        MPI_Comm_free(&c);
      }
      bench::quiet_barrier();
    }
  }
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}

#else
#include <cstdio>
int main() {
  std::fprintf(stderr, "bench_distributed: kfactor was built without MPI\n");
  return 0;
}
#endif
