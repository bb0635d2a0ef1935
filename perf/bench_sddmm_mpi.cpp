// bench_sddmm_mpi: the distributed SDDMM (kfactor/distributed/sddmm.hpp)
// under mpiexec, one rank per GPU. For every rank count p = 1..P of the job
// (sub-communicators of the first p ranks; the others wait without spinning),
// every column order of S (as generated: random; "degree": columns renumbered
// by decreasing nonzeros, so that the heavy ones sit together, as NYTimes's
// did in the paper), every column split (balanced by nonzeros; timed: by
// measured time, ColumnSplit::timed; equal widths, the naive split) and every
// K, it times:
//   apply   the median over --reps of the slowest rank's apply (barrier,
//           apply, fence, max over ranks): what a caller waits for;
//   ranks   each rank's own median apply, nonzeros and columns: a rank that
//           waits for the slowest shows the split's imbalance;
//   scaling the strong-scaling efficiency t(1) / (p t(p)) against p = 1 of
//           the same order and K; with --weak 1 also the weak-scaling
//           efficiency t(1) / t(p), where p ranks multiply the first
//           columns of S that hold p / P of its nonzeros (P = the job's
//           ranks; the balanced split only).
// One JSON record per (order, split, K, p) on rank 0 through
// perf/common/bench.hpp, a table on stderr.
//
//   bench_sddmm_mpi --help prints the options.
//
// With CUDA, map one GPU per rank: --kokkos-map-device-id-by=mpi_rank.
#include "common/bench.hpp"
#include "common/sddmm_matrices.hpp"

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/distributed/sddmm.hpp>

#include <mpi.h>

#include "common/mpi.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

// A named namespace (not an anonymous one): CUDA's extended lambdas need an
// enclosing function with external linkage.
namespace bench_sddmm_mpi_detail {
using namespace kfactor;
using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

struct Args {
  std::string matrix = "m1";
  std::vector<int> ks = {32, 128, 512};
  std::vector<std::string> orders = {"generated", "degree"};
  std::vector<std::string> splits = {"balanced", "timed", "equal"};
  int reps = 20;
  std::string precision = "float";
  bool weak = false;
  bench::SddmmMatrixSource source;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.rfind("--kokkos", 0) == 0) continue;
    if (i + 1 >= argc) throw UsageError("bench_sddmm_mpi: missing value after " + k);
    const std::string v = argv[++i];
    if (k == "--matrix")
      a.matrix = v;
    else if (k == "--k") {
      a.ks.clear();
      for (const auto& x : bench::split(v)) a.ks.push_back(std::stoi(x));
    } else if (k == "--orders")
      a.orders = bench::split(v);
    else if (k == "--splits")
      a.splits = bench::split(v);
    else if (k == "--reps")
      a.reps = std::max(1, std::stoi(v));
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--bin-dir")
      a.source.bin_dir = v;
    else if (k == "--facebook")
      a.source.facebook = v;
    else if (k == "--scale")
      a.source.scale = std::stod(v);
    else if (k == "--weak")
      a.weak = v != "0";
    else
      throw UsageError("bench_sddmm_mpi: unknown option " + k);
  }
  for (const auto& o : a.orders)
    if (o != "generated" && o != "degree") throw UsageError("--orders: unknown order '" + o + "' (generated, degree)");
  for (const auto& s : a.splits) (void)parse_column_split(s);
  if (a.precision != "float" && a.precision != "bf16")
    throw UsageError("--precision: float or bf16, got '" + a.precision + "'");
  return a;
}

struct Timing {
  double slowest = 0;  ///< median over reps of the slowest rank's apply
  double own = 0;      ///< this rank's median apply
};

/// Times `apply` on every rank of `comm`: 3 warm-ups, then per repetition a
/// barrier, the call, a fence and the maximum over ranks.
template <class Fn>
Timing time_apply(MPI_Comm comm, const Space& exec, Fn&& apply, int reps) {
  for (int w = 0; w < 3; ++w) apply();
  exec.fence();
  std::vector<double> slowest, own;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(comm);
    const auto t0 = std::chrono::steady_clock::now();
    apply();
    exec.fence();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), worst = 0;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    own.push_back(t);
    slowest.push_back(worst);
  }
  std::sort(slowest.begin(), slowest.end());
  std::sort(own.begin(), own.end());
  return {slowest[slowest.size() / 2], own[own.size() / 2]};
}

/// The first columns of c that hold `share` of its nonzeros (all of them
/// for share >= 1), as a matrix of that many columns.
CooMatrix<float> first_columns(const CooMatrix<float>& c, double share) {
  if (share >= 1.0) return c;
  std::vector<std::int64_t> count(static_cast<std::size_t>(c.num_cols), 0);
  for (auto j : c.cols) ++count[static_cast<std::size_t>(j)];
  const double want = share * double(c.nnz());
  std::int64_t end = 0, held = 0;
  while (end < c.num_cols && double(held) < want) held += count[static_cast<std::size_t>(end++)];
  CooMatrix<float> out;
  out.num_rows = c.num_rows;
  out.num_cols = std::max<std::int64_t>(end, 1);
  for (std::size_t e = 0; e < c.nnz(); ++e)
    if (c.cols[e] < out.num_cols) {
      out.rows.push_back(c.rows[e]);
      out.cols.push_back(c.cols[e]);
      out.values.push_back(c.values[e]);
    }
  return out;
}

/// S_of[p - 1] is the matrix that p ranks multiply: S itself for strong
/// scaling, first_columns(S, p / P) for weak scaling.
template <class TI>
void run_order(const Args& a, const std::vector<CsrMatrix<float, Mem>>& S_of, const std::string& order,
               const std::string& scaling, const std::string& source,
               std::map<std::tuple<std::string, std::string, int>, double>& t_one) {
  const Space exec;
  int world = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const bool weak = scaling == "weak";
  for (int K : a.ks) {
    const auto A = bench::random_sddmm_factor<TI>(exec, S_of.back().num_rows(), K, RngStream::factor_w);
    const auto B = bench::random_sddmm_factor<TI>(exec, S_of.back().num_cols, K, RngStream::factor_h);
    for (int p = 1; p <= world; ++p) {
      const auto& S = S_of[static_cast<std::size_t>(p - 1)];
      MPI_Comm comm;
      MPI_Comm_split(MPI_COMM_WORLD, me < p ? 0 : MPI_UNDEFINED, me, &comm);
      if (comm != MPI_COMM_NULL) {
        for (const auto& split_name : a.splits) {
          if (p == 1 && split_name != a.splits.front()) continue;  // one rank: every split is the whole matrix
          if (weak && split_name != "balanced") continue;
          const auto split = parse_column_split(split_name);
          SddmmOptions opt;
          opt.check_inputs = false;
          const auto tb = std::chrono::steady_clock::now();
          distributed::SddmmRankPlan<Space, float, TI> plan(exec, comm, S, K, opt, split);
          exec.fence();
          const double build = std::chrono::duration<double>(std::chrono::steady_clock::now() - tb).count();
          auto B_local = Kokkos::subview(B, Kokkos::make_pair(plan.begin(), plan.end()), Kokkos::ALL);
          Kokkos::View<float*, Mem> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "out"), plan.local_nnz());
          const auto t = time_apply(comm, exec, [&] { plan.apply(exec, A, B_local, out); }, a.reps);
          double mine[3] = {t.own, double(plan.local_nnz()), double(plan.end() - plan.begin())};
          std::vector<double> all(3 * static_cast<std::size_t>(p));
          MPI_Gather(mine, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, comm);
          double build_max = 0;
          MPI_Reduce(&build, &build_max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
          if (me == 0) {
            if (p == 1) t_one[{scaling, order, K}] = t.slowest;
            const double t1 = t_one.count({scaling, order, K}) ? t_one[{scaling, order, K}] : 0.0;
            const double efficiency = t1 > 0 ? t1 / ((weak ? 1 : p) * t.slowest) : 0.0;
            double most = 0;
            nlohmann::json ranks = nlohmann::json::array();
            std::string shares;
            for (int q = 0; q < p; ++q) {
              most = std::max(most, all[3 * q + 1]);
              ranks.push_back({{"apply_seconds", all[3 * q]}, {"nnz", all[3 * q + 1]}, {"columns", all[3 * q + 2]}});
              char buf[96];
              std::snprintf(buf, sizeof buf, "%s%.0f%% nnz %.3f ms", q ? ", " : "",
                            100.0 * all[3 * q + 1] / double(S.nnz()), 1e3 * all[3 * q]);
              shares += buf;
            }
            const double gflops = 2.0 * double(S.nnz()) * K / t.slowest * 1e-9;
            Report r;
            r.command = "bench_sddmm_mpi";
            r.backend = backend_name<Space>();
            r.precision = a.precision;
            r.rows = S.num_rows();
            r.cols = S.num_cols;
            r.nnz = static_cast<std::int64_t>(S.nnz());
            r.rank = K;
            r.iterations = a.reps;
            r.seconds = t.slowest;
            r.metrics.set("gflops", gflops);
            r.metrics.set("apply_seconds", t.slowest);
            r.metrics.set(scaling + "_scaling_efficiency", efficiency);
            r.metrics.set("nnz_imbalance", most / (double(S.nnz()) / p));
            r.timings.set("plan_build_max", build_max);
            r.info["matrix"] = a.matrix;
            r.info["source"] = source;
            r.info["column_order"] = order;
            r.info["column_split"] = split_name;
            r.info["ranks"] = std::to_string(p);
            r.info["scaling"] = scaling;
            bench::emit(r, {{"ranks", ranks},
                            {"column_order", order},
                            {"column_split", split_name},
                            {"p", p},
                            {"scaling", scaling}});
            std::fprintf(stderr,
                         "%s %-9s %-6s K=%-4d p=%d %-8s %9.1f GFLOP/s %8.3f ms  efficiency %.2f  (%s)  build %.2f s\n",
                         a.matrix.c_str(), order.c_str(), scaling.c_str(), K, p, split_name.c_str(), gflops,
                         1e3 * t.slowest, efficiency, shares.c_str(), build_max);
          }
        }
        MPI_Comm_free(&comm);
      }
      bench::quiet_barrier();
    }
  }
}

int run(int argc, char** argv) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  try {
    const Args a = parse(argc, argv);
    const Space exec;
    std::map<std::tuple<std::string, std::string, int>, double> t_one;
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    for (const auto& order : a.orders) {
      // Every rank builds the same S (the generator is counter-based).
      const auto t0 = std::chrono::steady_clock::now();
      std::string source;
      auto coo = bench::load_sddmm_matrix(a.matrix, a.source, source);
      if (order == "degree") bench::sort_columns_by_degree(coo);
      const auto S = to_csr(exec, coo);
      if (me == 0)
        std::fprintf(stderr, "%s (%s columns): %lld x %d, %zu nnz from %s (%.1f s)\n", a.matrix.c_str(), order.c_str(),
                     static_cast<long long>(S.num_rows()), S.num_cols, S.nnz(), source.c_str(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      std::vector<std::pair<std::string, std::vector<CsrMatrix<float, Mem>>>> cases = {
          {"strong", std::vector<CsrMatrix<float, Mem>>(static_cast<std::size_t>(world), S)}};
      if (a.weak) {
        std::vector<CsrMatrix<float, Mem>> grown;
        for (int p = 1; p <= world; ++p) grown.push_back(to_csr(exec, first_columns(coo, double(p) / world)));
        cases.emplace_back("weak", std::move(grown));
      }
      for (const auto& [scaling, S_of] : cases) {
        if (a.precision == "bf16")
          run_order<Kokkos::Experimental::bhalf_t>(a, S_of, order, scaling, source, t_one);
        else
          run_order<float>(a, S_of, order, scaling, source, t_one);
      }
    }
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "bench_sddmm_mpi (rank %d): %s\n", me, e.what());
    return e.exit_code();
  }
  return 0;
}

}  // namespace bench_sddmm_mpi_detail

/// The options (--help).
constexpr const char* usage = R"(mpiexec -n P bench_sddmm_mpi [--matrix m1|m2|m3] [--k 32,128,512]
    [--orders generated,degree] [--splits balanced,timed,equal] [--reps 20]
    [--precision float|bf16] [--bin-dir DIR] [--facebook FILE] [--scale F]
    [--weak 0|1]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  MPI_Init(&argc, &argv);
  Kokkos::initialize(argc, argv);
  const int rc = bench_sddmm_mpi_detail::run(argc, argv);
  Kokkos::finalize();
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return rc;
}

#else
#include <cstdio>
int main() {
  std::fprintf(stderr, "bench_sddmm_mpi: kfactor was built without MPI\n");
  return 0;
}
#endif
