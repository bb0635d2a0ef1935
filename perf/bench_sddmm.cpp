// SDDMM benchmark: apply time (median of --reps after 3 warm-ups) and GFLOP/s
// = 2 nnz K / t (on CUDA also the device time between events around each
// call, the peers' "kernel time only") on M1 (NYTimes-like), M2 (web-Google-like) and M3
// (facebook_combined), K = 32/128/512, fp32 and bf16; the reference kernel;
// each of the paper's mechanisms on and off; the T_j sweep of Table III;
// cusparseSDDMM (CSR, ALG_DEFAULT) on the same data when built with CUDA
// (perf/bench_sddmm.cmake links CUDA::cusparse); the compulsory-bytes floor
// of each run at the measured copy bandwidth and the fraction reached.
//
// M1/M2: the .rows.bin/.cols.bin files of ../shared/peers/sddmm_matrices.py
// when --bin-dir has them (the exact peer instances), else the C++ port of
// that generator (kfactor/sddmm/generate.hpp: same parameters and
// distribution, a different random instance). --scale F divides M, N and nnz
// by F (CPU runs).
//
// --dump-matrices DIR writes each matrix as benchmarked (the CSR after
// conversion) so that a peer can time the very same instance:
// DIR/<m>.row_map.bin (uint64, M + 1), DIR/<m>.entries.bin (int32),
// DIR/<m>.values.bin (float32) and DIR/<m>.json (M, N, nnz, source, the
// measured copy bandwidth). perf/torch_sddmm_cpu.py reads them.
#include "common/bench.hpp"
#include "common/sddmm_matrices.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/sddmm/generate.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#if defined(KOKKOS_ENABLE_CUDA) && defined(KFACTOR_BENCH_CUSPARSE)
#include <cusparse.h>
#endif

#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

// A named namespace (not an anonymous one): CUDA's extended lambdas need an
// enclosing function with external linkage.
namespace bench_sddmm_detail {
using namespace kfactor;
using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

struct Args {
  std::vector<std::string> matrices = {"m1", "m2", "m3"};
  std::vector<int> ks = {32, 128, 512};
  std::vector<std::string> precisions = {"float", "bf16"};
  int reps = 20;
  double scale = 1.0;
  std::string bin_dir = ".peers";
  std::string facebook = "";
  std::string dump_dir = "";  ///< --dump-matrices: write each CSR here
  bool mechanisms = true, sweep = true, reference = true, cusparse = true;
  int mech_k = 128;             ///< K of the mechanism on/off runs and the T_j sweep
  std::vector<int> panels;      ///< --panels: staged rows per panel of the panels kernels to run (0 = its default)
  std::size_t panel_bytes = 0;  ///< --panel-bytes: SddmmOptions::panel_bytes of those runs
  std::int64_t panel_nnz = 0;   ///< --panel-nnz: SddmmOptions::panel_nnz of those runs
  int panel_lanes = 0;          ///< --panel-lanes: SddmmOptions::vector_length of those runs
  bool panel_wide = false;      ///< --panel-wide: SddmmOptions::compact_index = false in those runs
  std::vector<double> hints;    ///< --hints: nzsplit L2-hint fractions to run (SddmmOptions::hot_cache_fraction)
  std::vector<std::string> variants;  ///< --variants: run only these (NAME exactly, PREFIX* by prefix)
  bool wanted(const std::string& variant) const {
    if (variants.empty()) return true;
    for (const auto& v : variants)
      if (v == variant || (!v.empty() && v.back() == '*' && variant.rfind(v.substr(0, v.size() - 1), 0) == 0))
        return true;
    return false;
  }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError("missing value after " + k);
      return argv[++i];
    };
    if (k == "--matrices") {
      a.matrices = bench::split(val());
      for (auto& m : a.matrices) {  // m1, m2, m3 in any case; anything else is an error, not M2
        for (auto& ch : m) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        if (m != "m1" && m != "m2" && m != "m3")
          throw UsageError("--matrices: unknown matrix '" + m + "' (m1, m2, m3)");
      }
    } else if (k == "--k") {
      a.ks.clear();
      for (auto& x : bench::split(val())) a.ks.push_back(std::stoi(x));
    } else if (k == "--precisions")
      a.precisions = bench::split(val());
    else if (k == "--reps")
      a.reps = std::stoi(val());
    else if (k == "--scale")
      a.scale = std::stod(val());
    else if (k == "--bin-dir")
      a.bin_dir = val();
    else if (k == "--facebook")
      a.facebook = val();
    else if (k == "--dump-matrices")
      a.dump_dir = val();
    else if (k == "--mech-k")
      a.mech_k = std::stoi(val());
    else if (k == "--variants")
      a.variants = bench::split(val());
    else if (k == "--panels")
      for (auto& x : bench::split(val())) a.panels.push_back(std::stoi(x));
    else if (k == "--panel-bytes")
      a.panel_bytes = std::stoull(val());
    else if (k == "--panel-nnz")
      a.panel_nnz = std::stoll(val());
    else if (k == "--panel-lanes")
      a.panel_lanes = std::stoi(val());
    else if (k == "--panel-wide")
      a.panel_wide = true;
    else if (k == "--hints")
      for (auto& x : bench::split(val())) a.hints.push_back(std::stod(x));
    else if (k == "--no-mechanisms")
      a.mechanisms = false;
    else if (k == "--no-sweep")
      a.sweep = false;
    else if (k == "--no-reference")
      a.reference = false;
    else if (k == "--no-cusparse")
      a.cusparse = false;
    else
      throw UsageError("unknown argument " + k);
  }
  return a;
}

/// Copy bandwidth of the execution space (bytes read + written per second).
double copy_bandwidth() {
  const std::size_t n = std::size_t(64) << 20;  // 256 MB of floats per side
  Kokkos::View<float*, Mem> x("x", n), y("y", n);
  Kokkos::deep_copy(x, 1.f);
  const Space exec;
  const double t = bench::median_seconds(exec, [&] { Kokkos::deep_copy(exec, y, x); }, 5, 2);
  return 2.0 * n * sizeof(float) / t;
}

struct Context {
  Args args;
  std::string matrix, source;
  double bandwidth = 0;
};

template <class V>
void write_view(const std::string& path, const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size() * sizeof(*h.data())));
  if (!out) throw RuntimeFailure("bench_sddmm: cannot write " + path);
}

/// The CSR exactly as benchmarked, for peers (see --dump-matrices above).
void dump_matrix(const Context& ctx, const CsrMatrix<float, Mem>& S) {
  static_assert(sizeof(offset_t) == 8 && sizeof(ordinal_t) == 4);
  std::filesystem::create_directories(ctx.args.dump_dir);
  const std::string base = ctx.args.dump_dir + "/" + ctx.matrix;
  write_view(base + ".row_map.bin", S.row_map);
  write_view(base + ".entries.bin", S.entries);
  write_view(base + ".values.bin", S.values);
  const nlohmann::json j = {{"matrix", ctx.matrix},
                            {"M", S.num_rows()},
                            {"N", S.num_cols},
                            {"nnz", static_cast<std::int64_t>(S.nnz())},
                            {"source", ctx.source},
                            {"scale", ctx.args.scale},
                            {"copy_bandwidth_GBs", ctx.bandwidth * 1e-9},
                            {"row_map", "uint64"},
                            {"entries", "int32"},
                            {"values", "float32"}};
  std::ofstream(base + ".json") << j.dump() << "\n";
}

template <class T, class TI>
void emit(const Context& ctx, const CsrMatrix<T, Mem>& S, int K, const std::string& variant, const std::string& prec,
          double seconds, double build_seconds, const nlohmann::json& extra_info, double device_seconds = -1.0) {
  Report r;
  r.command = "bench_sddmm";
  r.backend = backend_name<Space>();
  r.precision = prec;
  r.rows = S.num_rows();
  r.cols = S.num_cols;
  r.nnz = static_cast<std::int64_t>(S.nnz());
  r.rank = K;
  r.iterations = ctx.args.reps;
  r.seconds = seconds;
  const double gflops = 2.0 * double(S.nnz()) * K / seconds * 1e-9;
  // Compulsory traffic: index + value + output per nonzero, row offsets, A and B once.
  const double bytes = double(S.nnz()) * (sizeof(ordinal_t) + 2 * sizeof(T)) + double(S.num_rows() + 1) * 8 +
                       double(S.num_rows() + S.num_cols) * K * sizeof(TI);
  const double floor_s = bytes / ctx.bandwidth;
  r.metrics.set("gflops", gflops);
  r.metrics.set("apply_seconds", seconds);
  r.metrics.set("bytes_floor_seconds", floor_s);
  r.metrics.set("fraction_of_bytes_floor", floor_s / seconds);
  if (device_seconds > 0) {
    r.metrics.set("device_seconds", device_seconds);
    r.metrics.set("device_gflops", 2.0 * double(S.nnz()) * K / device_seconds * 1e-9);
  }
  r.timings.set("plan_build", build_seconds);
  r.info["matrix"] = ctx.matrix;
  r.info["variant"] = variant;
  r.info["source"] = ctx.source;
  nlohmann::json extra = {{"variant", variant}, {"matrix", ctx.matrix}, {"copy_bandwidth_GBs", ctx.bandwidth * 1e-9}};
  if (!extra_info.is_null()) extra["plan"] = extra_info;
  bench::emit(r, extra);
  std::fprintf(stderr, "%-3s K=%-4d %-6s %-28s %9.1f GFLOP/s  %8.3f ms  (floor %.0f%%, build %.3f s)",
               ctx.matrix.c_str(), K, prec.c_str(), variant.c_str(), gflops, seconds * 1e3, 100 * floor_s / seconds,
               build_seconds);
  if (device_seconds > 0)
    std::fprintf(stderr, "  events %.3f ms = %.1f GFLOP/s", device_seconds * 1e3,
                 2.0 * double(S.nnz()) * K / device_seconds * 1e-9);
  std::fputc('\n', stderr);
}

template <class T, class TI>
void run_plan(const Context& ctx, const CsrMatrix<T, Mem>& S, const DenseMatrix<TI, Mem>& A,
              const DenseMatrix<TI, Mem>& B, int K, const std::string& variant, const std::string& prec,
              SddmmOptions o) {
  if (!ctx.args.wanted(variant)) return;
  const Space exec;
  o.check_inputs = false;
  try {
    SddmmPlan<Space, T, TI> plan(exec, S, K, o);
    Kokkos::View<T*, Mem> out("out", S.nnz());
    const auto call = [&] { plan(exec, A, B, out); };
    const double t = bench::median_seconds(exec, call, ctx.args.reps, 3);
    const double td = bench::median_device_seconds(exec, call, ctx.args.reps, 3);
    const auto& in = plan.info();
    nlohmann::json info = {{"kernel", to_string(in.kernel)},
                           {"staged", in.transposed ? "B" : "A"},
                           {"tile_cols", in.tile_cols},
                           {"tiles", in.tiles},
                           {"model_tile_cols", in.model_tile_cols},
                           {"tk", in.tk},
                           {"ti", in.ti},
                           {"chunk", in.chunk},
                           {"lanes", in.vector_length},
                           {"items", in.items},
                           {"staged_rows", in.staged_rows},
                           {"hot_rows", in.hot_rows},
                           {"panel_rows", in.panel_rows},
                           {"blocks", in.blocks}};
    emit<T, TI>(ctx, S, K, variant, prec, t, in.build_seconds, info, td);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s K=%d %s: skipped (%s)\n", ctx.matrix.c_str(), K, variant.c_str(), e.what());
  }
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(KFACTOR_BENCH_CUSPARSE)
#define KF_CUSPARSE(call)                                                                        \
  do {                                                                                           \
    cusparseStatus_t st_ = (call);                                                               \
    if (st_ != CUSPARSE_STATUS_SUCCESS) throw RuntimeFailure(std::string("cuSPARSE: ") + #call); \
  } while (0)

void run_cusparse(const Context& ctx, const CsrMatrix<float, Mem>& S, const DenseMatrix<float, Mem>& A,
                  const DenseMatrix<float, Mem>& B, int K) {
  const Space exec;
  const std::int64_t m = S.num_rows(), n = S.num_cols, nnz = static_cast<std::int64_t>(S.nnz());
  Kokkos::View<int*, Mem> rm32("rm32", m + 1);
  auto rm = S.row_map;
  Kokkos::parallel_for(
      Kokkos::RangePolicy<Space>(exec, 0, m + 1), KOKKOS_LAMBDA(std::int64_t i) { rm32(i) = static_cast<int>(rm(i)); });
  Kokkos::View<float*, Mem> out("out", nnz);
  exec.fence();
  cusparseHandle_t h;
  KF_CUSPARSE(cusparseCreate(&h));
  KF_CUSPARSE(cusparseSetStream(h, exec.cuda_stream()));
  cusparseDnMatDescr_t dA, dB;
  cusparseSpMatDescr_t sC;
  // A: M x K row-major. B (N x K row-major) is op(B) = K x N column-major, ld K.
  KF_CUSPARSE(cusparseCreateDnMat(&dA, m, K, K, A.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  KF_CUSPARSE(cusparseCreateDnMat(&dB, K, n, K, B.data(), CUDA_R_32F, CUSPARSE_ORDER_COL));
  KF_CUSPARSE(cusparseCreateCsr(&sC, m, n, nnz, rm32.data(), S.entries.data(), out.data(), CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  const float alpha = 1.f, beta = 0.f;
  std::size_t bytes = 0;
  KF_CUSPARSE(cusparseSDDMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                       dA, dB, &beta, sC, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes));
  Kokkos::View<char*, Mem> buf("cusparse_buffer", bytes + 16);
  const auto t0 = std::chrono::steady_clock::now();
  KF_CUSPARSE(cusparseSDDMM_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                       dA, dB, &beta, sC, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buf.data()));
  exec.fence();
  const double pre = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto call = [&] {
    KF_CUSPARSE(cusparseSDDMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, dA, dB,
                              &beta, sC, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, buf.data()));
  };
  const double t = bench::median_seconds(exec, call, ctx.args.reps, 3);
  const double td = bench::median_device_seconds(exec, call, ctx.args.reps, 3);
  // Agreement with kfactor's unscaled result.
  Kokkos::View<float*, Mem> mine("mine", nnz);
  sddmm_unscaled(exec, S, A, B, mine);
  double worst = 0;
  Kokkos::parallel_reduce(
      Kokkos::RangePolicy<Space>(exec, 0, nnz),
      KOKKOS_LAMBDA(std::int64_t e, double& w) {
        const double d = Kokkos::abs(double(out(e)) - double(mine(e))) / (1.0 + Kokkos::abs(double(mine(e))));
        if (d > w) w = d;
      },
      Kokkos::Max<double>(worst));
  cusparseDestroyDnMat(dA);
  cusparseDestroyDnMat(dB);
  cusparseDestroySpMat(sC);
  cusparseDestroy(h);
  emit<float, float>(ctx, S, K, "cusparseSDDMM", "float", t, pre, {{"max_rel_diff_vs_kfactor", worst}}, td);
}
#endif

template <class TI>
void run_precision(const Context& ctx, const CsrMatrix<float, Mem>& S, int K, const std::string& prec) {
  const Space exec;
  const auto A = bench::random_sddmm_factor<TI>(exec, S.num_rows(), K, RngStream::factor_w);
  const auto B = bench::random_sddmm_factor<TI>(exec, S.num_cols, K, RngStream::factor_h);
  const auto& a = ctx.args;
  run_plan<float, TI>(ctx, S, A, B, K, "kfactor", prec, SddmmOptions{});
  SddmmOptions untiled;
  untiled.column_tiles = false;
  run_plan<float, TI>(ctx, S, A, B, K, "kfactor-untiled", prec, untiled);
  if (detail::SddmmTraits<Space>::gpu && K % detail::SddmmPack<TI>::width == 0) {
    // The default before nzsplit (and the CPUs' default), tiled and untiled.
    SddmmOptions rs;
    rs.kernel = SddmmKernel::rowsplit;
    run_plan<float, TI>(ctx, S, A, B, K, "kfactor-rowsplit", prec, rs);
    rs.column_tiles = false;
    run_plan<float, TI>(ctx, S, A, B, K, "kfactor-rowsplit-untiled", prec, rs);
    // nzsplit's lane count: the default takes 4 lanes up to 4 packs, 8 up to
    // 64 packs, 32 above.
    for (int lanes : {4, 8, 32}) {
      SddmmOptions nz;
      nz.kernel = SddmmKernel::nzsplit;
      nz.vector_length = lanes;
      run_plan<float, TI>(ctx, S, A, B, K, "nzsplit-lanes" + std::to_string(lanes), prec, nz);
    }
    for (int rows : a.panels) {
      SddmmOptions o;
      o.kernel = SddmmKernel::panels;
      o.panel_rows = rows;
      o.panel_bytes = a.panel_bytes;
      o.panel_nnz = a.panel_nnz;
      o.vector_length = a.panel_lanes;
      o.compact_index = !a.panel_wide;
      run_plan<float, TI>(ctx, S, A, B, K, "panels" + (rows ? std::to_string(rows) : std::string()), prec, o);
    }
    for (double f : a.hints)
      for (int lanes : {0, 4}) {
        SddmmOptions nz;
        nz.kernel = SddmmKernel::nzsplit;
        nz.vector_length = lanes;
        nz.hot_cache_fraction = f;
        char name[64];
        std::snprintf(name, sizeof name, "nzsplit%s-hints%.2f", lanes ? "-lanes4" : "", f);
        run_plan<float, TI>(ctx, S, A, B, K, name, prec, nz);
      }
  }
  if (a.reference && prec == "float") {
    SddmmOptions o;
    o.kernel = SddmmKernel::reference;
    run_plan<float, TI>(ctx, S, A, B, K, "reference", prec, o);
  }
#if defined(KOKKOS_ENABLE_CUDA) && defined(KFACTOR_BENCH_CUSPARSE)
  if constexpr (std::is_same_v<TI, float>)
    if (a.cusparse && a.wanted("cusparseSDDMM")) run_cusparse(ctx, S, A, B, K);
#endif
  if (a.mechanisms && K == a.mech_k && prec == "float") {
    SddmmOptions o;
    o.kernel = SddmmKernel::rowsplit;
    SddmmPlan<Space, float, TI> probe(exec, S, K, o);
    o.staged = probe.info().transposed ? SddmmStaged::a : SddmmStaged::b;
    run_plan<float, TI>(ctx, S, A, B, K, "rowsplit-other-staged(eq4-off)", prec, o);
    o = {};
    o.kernel = SddmmKernel::rowsplit;
    o.sort_items = 0;
    run_plan<float, TI>(ctx, S, A, B, K, "rowsplit-unsorted-items", prec, o);
    o.sort_items = 1;
    run_plan<float, TI>(ctx, S, A, B, K, "rowsplit-sorted-items", prec, o);
    o.sort_items = -1;
    o.chunk = 1 << 30;
    run_plan<float, TI>(ctx, S, A, B, K, "rowsplit-no-row-split", prec, o);
    for (int tk : {32, 128}) {
      if (tk > K && tk != 32) continue;
      o = {};
      o.kernel = SddmmKernel::sm_l2;
      o.tk = tk;
      run_plan<float, TI>(ctx, S, A, B, K, "paper-sm_l2-tk" + std::to_string(tk), prec, o);
    }
    o = {};
    o.kernel = SddmmKernel::sm_l2;
    o.tk = 32;
    o.column_tiles = false;
    run_plan<float, TI>(ctx, S, A, B, K, "paper-sm_l2-tk32-untiled", prec, o);
    o.column_tiles = true;
    o.active_rows = false;
    run_plan<float, TI>(ctx, S, A, B, K, "paper-sm_l2-tk32-no-active-rows", prec, o);
    // SM-SM loads every B tile for every row panel (M N K / T words): only
    // for the denser inputs (M3), never for M1/M2 (M2 would take hours).
    if (probe.info().density >= 0.005) {
      o = {};
      o.kernel = SddmmKernel::sm_sm;
      run_plan<float, TI>(ctx, S, A, B, K, "paper-sm_sm", prec, o);
    }
  }
  if (a.sweep && K == a.mech_k && prec == "float" && ctx.matrix == "m1") {
    // Table III: tiles 1, 2, 3, 5, 7, 11, 21 over N (nzsplit and SM-L2).
    for (int tiles : {1, 2, 3, 5, 7, 11, 21}) {
      for (auto kernel : {SddmmKernel::nzsplit, SddmmKernel::sm_l2}) {
        SddmmOptions o;
        o.kernel = kernel;
        o.staged = SddmmStaged::a;
        o.tile_cols = static_cast<ordinal_t>((S.num_cols + tiles - 1) / tiles);
        if (kernel == SddmmKernel::sm_l2) o.tk = 32;
        run_plan<float, TI>(ctx, S, A, B, K,
                            std::string("sweep-") + to_string(kernel) + "-tiles" + std::to_string(tiles), prec, o);
      }
    }
  }
}

}  // namespace bench_sddmm_detail

using namespace bench_sddmm_detail;

/// The options (--help).
constexpr const char* usage =
    R"(bench_sddmm [--matrices m1,m2,m3] [--k 32,128,512] [--precisions float,bf16] [--reps 20]
            [--scale F] [--bin-dir DIR] [--facebook FILE] [--mech-k 128] [--dump-matrices DIR]
            [--variants kfactor,nzsplit-lanes*,...] (only these; * = prefix)
            [--hints 0.25,0.5] (nzsplit with L2 hints, fractions of the cache kept)
            [--panels 0,64,128] [--panel-bytes B] [--panel-nnz N] [--panel-lanes V]
            [--panel-wide] (panels kernel: rows per panel, scratch, nonzeros per item, lanes,
            wide indices)
            [--no-mechanisms] [--no-sweep] [--no-reference] [--no-cusparse]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  try {
    Context ctx;
    ctx.args = parse(argc, argv);
    ctx.bandwidth = copy_bandwidth();
    std::fprintf(stderr, "copy bandwidth %.1f GB/s on %s\n", ctx.bandwidth * 1e-9, backend_name<Space>().c_str());
    for (const auto& which : ctx.args.matrices) {
      const auto t0 = std::chrono::steady_clock::now();
      auto coo = bench::load_sddmm_matrix(which, {ctx.args.bin_dir, ctx.args.facebook, ctx.args.scale}, ctx.source);
      auto S = to_csr(Space{}, coo);
      ctx.matrix = which;
      std::fprintf(stderr, "%s: %lld x %d, %zu nnz from %s (%.1f s)\n", which.c_str(),
                   static_cast<long long>(S.num_rows()), S.num_cols, S.nnz(), ctx.source.c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!ctx.args.dump_dir.empty()) dump_matrix(ctx, S);
      for (int K : ctx.args.ks)
        for (const auto& prec : ctx.args.precisions) {
          if (prec == "float")
            run_precision<float>(ctx, S, K, prec);
          else if (prec == "bf16")
            run_precision<Kokkos::Experimental::bhalf_t>(ctx, S, K, prec);
          else if (prec == "fp16")
            run_precision<Kokkos::Experimental::half_t>(ctx, S, K, prec);
        }
    }
  } catch (const kfactor::Error& e) {
    std::fprintf(stderr, "bench_sddmm: %s\n", e.what());
    return e.exit_code();
  }
  return 0;
}
