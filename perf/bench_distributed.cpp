// bench_distributed: distributed NMF and ALS (kfactor/distributed/) under
// mpiexec. For every rank count p = 1..P of the job (sub-communicators of
// the first p ranks; the others wait without spinning), it times:
//   strong scaling: a fixed problem;
//   weak scaling:   the problem's rows grow with p (V = V0 p, m = m0 p; the
//                   other dimension and the nonzeros per row fixed);
// the time per iteration (step only, fenced; the slowest rank), split into
// communication (the MPI calls, timed after a fence, see
// distributed/detail/collectives.hpp) and compute (the rest), and the
// model of distributed/nmf.hpp / als.hpp: bytes per iteration and rank, and
// the predicted communication time collectives * alpha * ceil(log2 p) +
// bytes * beta, with alpha (one all-reduce of 8 bytes) and beta (a 16 MB
// all-gather) measured on the same ranks just before, through the solvers'
// own collectives on device memory (host staging included). One JSON record per
// (solver, scaling, p) through perf/common/bench.hpp on rank 0; a table on
// stderr.
//
//   mpiexec -n P bench_distributed [--nmf VxDxNNZ] [--k K] [--algs hals,alo,mu]
//       [--als MxNxNNZ] [--f F] [--iters N] [--precision float|double]
//       [--weak 1|0] [--strong 1|0] [--seed S]
//
// The benchmark sets Collectives::measure_wait: a timed barrier before each
// collective separates waiting for slower ranks ("wait": imbalance, or here
// CPU contention) from the transfer ("communication", the collective alone),
// which is what the model predicts (model_over_measured_comm uses the
// least transfer time over ranks). NMF records also carry the time of an
// epoch's two all-gathers run back to back without compute
// (gathers_alone_s): on a machine whose cores are shared with other jobs the
// in-loop transfers are stretched by descheduled partners, which this shows.
#include "common/bench.hpp"

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/nmf.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {
using namespace kfactor;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

struct Args {
  std::string nmf = "40000x20000x800000";
  int k = 32;
  std::vector<std::string> algs = {"hals", "mu"};
  std::string als = "20000x5000x400000";
  int f = 16;
  int iters = 7;
  std::string precision = "double";
  bool weak = true, strong = true;
  std::uint64_t seed = 1;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::int64_t> dims(const std::string& s) {
  std::vector<std::int64_t> d;
  for (const auto& x : split(s, 'x')) d.push_back(std::stoll(x));
  if (d.size() != 3) {
    std::fprintf(stderr, "bench_distributed: expected AxBxNNZ, got %s\n", s.c_str());
    std::exit(2);
  }
  return d;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k.rfind("--kokkos", 0) == 0) { --i; continue; }
    if (k == "--nmf") a.nmf = v;
    else if (k == "--k") a.k = std::stoi(v);
    else if (k == "--algs") a.algs = split(v, ',');
    else if (k == "--als") a.als = v;
    else if (k == "--f") a.f = std::stoi(v);
    else if (k == "--iters") a.iters = std::stoi(v);
    else if (k == "--precision") a.precision = v;
    else if (k == "--weak") a.weak = v != "0";
    else if (k == "--strong") a.strong = v != "0";
    else if (k == "--seed") a.seed = std::stoull(v);
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
    std::uint64_t stride = 1 + 2 * (rng.bits(2 * std::uint64_t(i) + 1) % std::uint64_t(std::max<std::int64_t>(1, D / 2 - 1)));
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

/// alpha: one all-reduce of 8 bytes; beta: seconds per byte received in an
/// all-gather of rows of a 16 MB factor (medians). Both go through the
/// solvers' own path (distributed/detail/collectives.hpp) on Views in the
/// execution space's memory, so on a GPU they include the staging copies
/// through pinned host memory that the solvers pay.
template <class T>
std::pair<double, double> calibrate(MPI_Comm c, const Exec& exec) {
  using Mem = Exec::memory_space;
  const int p = size_of(c);
  if (p == 1) return {0.0, 0.0};
  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  distributed::detail::Collectives coll(c);
  std::vector<double> t;
  Kokkos::View<double*, Mem> x("x", 1);
  for (int i = 0; i < 300; ++i) {
    MPI_Barrier(c);
    const double t0 = MPI_Wtime();
    coll.allreduce_sum(exec, x);
    t.push_back(MPI_Wtime() - t0);
  }
  const double alpha = allreduce(c, median(t), MPI_MAX);
  const int K = 64;
  const ordinal_t rows = ordinal_t((16 << 20) / (sizeof(T) * K));  // 16 MB in total
  std::vector<ordinal_t> bounds(p + 1);
  for (int q = 0; q <= p; ++q) bounds[q] = ordinal_t(std::int64_t(rows) * q / p);
  const int me = rank_of(c);
  DenseMatrix<T, Mem> mine("mine", bounds[me + 1] - bounds[me], K), all("all", rows, K);
  t.clear();
  for (int i = 0; i < 9; ++i) {
    MPI_Barrier(c);
    const double t0 = MPI_Wtime();
    coll.allgather_rows(exec, mine, all, bounds);
    t.push_back(MPI_Wtime() - t0);
  }
  const double tg = allreduce(c, median(t), MPI_MAX);
  const double bytes_in = double(rows - (bounds[me + 1] - bounds[me])) * K * sizeof(T);
  const double beta = std::max(0.0, tg - alpha * std::ceil(std::log2(double(p)))) / bytes_in;
  return {alpha, beta};
}

struct Measure {
  double per_iter = 0;  ///< slowest rank, seconds per step
  double comm_max = 0, comm_min = 0, comm_mean = 0;  ///< transfer: the collectives alone
  double wait_max = 0, wait_mean = 0;                ///< barriers before them (imbalance)
  double compute_max = 0;
  double bytes_in_mean = 0;  ///< measured all-gather bytes per iteration (mean over ranks)
  double reduce_bytes = 0;   ///< all-reduce payload per iteration
};

/// Times `iters` calls of step() after one warm-up, each between a barrier
/// and a fence; per rank the median over the calls of the time, the
/// transfer and the wait (robust to a machine shared with other jobs), then
/// reduced over ranks. Collective over c.
template <class StepFn, class StatsFn>
Measure measure(MPI_Comm c, const Exec& exec, int iters, StepFn&& step, StatsFn&& stats) {
  step();
  exec.fence();
  std::vector<double> ts, cs, ws, bytes, red;
  for (int i = 0; i < iters; ++i) {
    MPI_Barrier(c);
    const auto s0 = stats();
    const double t0 = MPI_Wtime();
    step();
    exec.fence();
    ts.push_back(MPI_Wtime() - t0);
    const auto s1 = stats();
    cs.push_back(s1.seconds - s0.seconds);
    ws.push_back(s1.wait_seconds - s0.wait_seconds);
    bytes.push_back(double(s1.bytes_in - s0.bytes_in));
    red.push_back(double(s1.reduce_bytes - s0.reduce_bytes));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double t = median(ts), comm = median(cs), wait = median(ws);
  const int p = size_of(c);
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
  return m;
}

void emit(MPI_Comm c, const std::string& solver, const std::string& scaling, const std::string& variant,
          const char* prec, std::int64_t rows, std::int64_t cols, std::int64_t nnz, int K, int iters, const Measure& m,
          double model_bytes, double model_collectives, double alpha, double beta, double gathers_alone = 0) {
  if (rank_of(c) != 0) return;
  const int p = size_of(c);
  const double model_s = p <= 1 ? 0.0 : model_collectives * alpha * std::ceil(std::log2(double(p))) + model_bytes * beta;
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
  bench::emit(r, nlohmann::json{{"benchmark", "distributed"},
                                {"solver", solver},
                                {"scaling", scaling},
                                {"ranks", p},
                                {"model_bytes_per_iteration", model_bytes},
                                {"measured_gather_bytes_per_iteration", m.bytes_in_mean},
                                {"measured_reduce_payload_bytes_per_iteration", m.reduce_bytes},
                                {"alpha_s", alpha},
                                {"beta_s_per_byte", beta},
                                {"model_over_measured_comm", m.comm_min > 0 ? model_s / m.comm_min : 0.0},
                                {"gathers_alone_s", gathers_alone}});
  std::fprintf(stderr,
               "%-4s %-5s %-6s p=%d %6lldx%-6lld nnz %8lld K=%-3d %8.2f ms/it  compute %8.2f  wait %6.2f  comm %6.3f "
               "(min %6.3f max %6.3f)  model %6.3f ms  bytes/it %.3g (model %.3g)  gathers alone %.3f ms\n",
               solver.c_str(), variant.c_str(), scaling.c_str(), p, (long long)rows, (long long)cols, (long long)nnz, K,
               1e3 * m.per_iter, 1e3 * m.compute_max, 1e3 * m.wait_mean, 1e3 * m.comm_mean, 1e3 * m.comm_min,
               1e3 * m.comm_max, 1e3 * model_s, m.bytes_in_mean + m.reduce_bytes, model_bytes, 1e3 * gathers_alone);
}

template <class T>
void run_nmf(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t V, std::int64_t D,
             std::int64_t nnz, std::pair<double, double> ab) {
  namespace dn = distributed::nmf;
  const auto A = to_csr(exec, synthetic<T>(V, D, nnz, a.seed));
  const auto blocks = dn::distribute(exec, c, A);
  for (const auto& alg : a.algs) {
    nmf::Options o;
    o.algorithm = nmf::parse_algorithm(alg);
    o.rank = a.k;
    o.seed = a.seed;
    auto s = dn::init(exec, c, blocks, o);
    s.comm->coll->measure_wait = true;
    // The two all-gathers of an epoch alone (no compute in between), for
    // comparison with their share of the in-loop transfer time.
    double gathers_alone = 0;
    if (size_of(c) > 1) {
      std::vector<double> t;
      for (int i = 0; i < 9; ++i) {
        const double c0 = s.comm->coll->stats.seconds;
        s.comm->gather(exec, s.W, nmf::detail::Factor::w);
        s.comm->gather(exec, s.Ht, nmf::detail::Factor::h);
        t.push_back(s.comm->coll->stats.seconds - c0);
      }
      std::sort(t.begin(), t.end());
      gathers_alone = allreduce(c, t[4], MPI_MAX);
    }
    const Measure m = measure(
        c, exec, a.iters,
        [&] {
          dn::step(exec, blocks, o, s);
          ++s.iteration;
        },
        [&] { return s.comm_stats(); });
    const auto v = dn::epoch_volume(V, D, a.k, size_of(c), o.algorithm, sizeof(T));
    emit(c, "nmf", scaling, alg, sizeof(T) == 4 ? "float" : "double", V, D, std::int64_t(A.nnz()), a.k, a.iters, m,
         v.bytes, v.collectives, ab.first, ab.second, gathers_alone);
  }
}

template <class T>
void run_als(MPI_Comm c, const Exec& exec, const Args& a, const std::string& scaling, std::int64_t m_, std::int64_t n,
             std::int64_t nnz, std::pair<double, double> ab) {
  namespace da = distributed::als;
  const auto problem = als::make_problem(exec, synthetic<T>(m_, n, nnz, a.seed + 1), 0.0, 1);
  const auto lp = da::distribute(exec, c, problem);
  als::Options o;
  o.rank = a.f;
  o.lambda = 0.05;
  o.seed = a.seed;
  o.xb = 4;  // fixed tile: the autotuner is not what is measured here
  o.yb = 64;
  auto s = da::init(exec, c, lp, o);
  s.coll->measure_wait = true;
  const Measure m = measure(
      c, exec, a.iters, [&] { da::step(exec, lp, o, s); }, [&] { return s.comm_stats(); });
  const auto v = da::iteration_volume(m_, n, a.f, size_of(c), sizeof(T));
  emit(c, "als", scaling, "bals", sizeof(T) == 4 ? "float" : "double", m_, n, lp.nnz, a.f, a.iters, m, v.bytes,
       v.collectives, ab.first, ab.second);
}

template <class T>
void run_all(MPI_Comm c, const Exec& exec, const Args& a) {
  const int p = size_of(c);
  const auto ab = calibrate<T>(c, exec);
  if (rank_of(c) == 0)
    std::fprintf(stderr, "p=%d: alpha %.2f us per collective step, beta %.3f ns/byte (%.2f GB/s)\n", p, 1e6 * ab.first,
                 1e9 * ab.second, ab.second > 0 ? 1e-9 / ab.second : 0.0);
  const auto nd = dims(a.nmf), ad = dims(a.als);
  if (a.strong) {
    run_nmf<T>(c, exec, a, "strong", nd[0], nd[1], nd[2], ab);
    run_als<T>(c, exec, a, "strong", ad[0], ad[1], ad[2], ab);
  }
  if (a.weak) {  // rows and nonzeros grow with p; the base problem is the strong one over the job's size
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    run_nmf<T>(c, exec, a, "weak", nd[0] * p / world, nd[1], nd[2] * p / world, ab);
    run_als<T>(c, exec, a, "weak", ad[0] * p / world, ad[1], ad[2] * p / world, ab);
  }
}

/// Waits for every rank without spinning (idle ranks would steal a core).
void quiet_barrier() {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  {
    const Args a = parse(argc, argv);
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
      quiet_barrier();
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
