// ALS benchmark: time per iteration and GFLOP/s (S1 = nnz f (f+1), S2 =
// 2 nnz f per half-step, two half-steps per iteration) of the half-step
// structures (Options::layout): auto (what the solver picks by default),
// csr, bals (tiled), reorder (bals + reordering), for several ranks, on
// MovieLens latest-small and on Netflix-shaped synthetic ratings (power-law
// users and items, generated on the device, duplicates removed) in one run.
// One JSON record per (data set, variant, f) through common/bench.hpp; a
// line per record on stderr with ms/iteration and, for auto, the structure
// it chose per half-step.
//
//   bench_als --help prints the options.
//
// --movielens defaults to ../shared/data/movielens-latest-small/ratings.csv
// (run from the project root; a missing file skips that data set).
// User and item ids follow Zipf-Mandelbrot laws, p_i ~ (i + 1 + shift)^-alpha.
// --preset sets the shape and the laws (options after it override them):
//   netflix  480,189 x 17,770, 99M distinct ratings, users alpha 0.6, items 0.9
//            (the defaults; on a small host scale users, items and ratings
//            down together, e.g. --users 48019 --items 1777 --distinct 990000);
//   yahoo    YahooMusic-like: 1,948,882 x 98,212, 115M ratings, users alpha 1.5
//            with shift 2500, items 0.9. The shift caps the heaviest user
//            (about 35K draws) while the light tail keeps ~200K users with a
//            single rating (YahooMusic has 197K). On OpenMP (seed 1): 174.6M
//            draws, 114,688,775 distinct ratings, 192,438 single-rating and
//            84,084 empty users. The run prints the counts it got.
//
// With --input FILE the ratings of FILE (through kfactor::io, all of them
// train) replace both data sets.
//
// --export DIR writes the synthetic ratings as raw little-endian arrays
// (int32 ids and offsets, float32 ratings) in the files cuMF_als reads, so a
// peer runs on exactly these data, then exits: R_train_csr.{indptr,indices,data}.bin,
// R_train_csc.{indptr,indices,data}.bin (R^T as CSR), R_train_coo.row.bin,
// and R_test_coo.{row,col,data}.bin (every 100th rating: the reader needs a
// test set; these ratings are also in the training set).
#include "common/bench.hpp"
#include "common/zipf_pairs.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/io/read.hpp>

#include <Kokkos_Sort.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {
using namespace kfactor;

struct Args {
  std::int64_t users = 480189, items = 17770, distinct = 99000000;
  std::vector<int> ranks{32, 64, 100, 128};
  int iters = 3;
  std::vector<std::string> variants{"auto", "csr", "bals"};
  std::vector<std::string> datasets{"movielens", "synthetic"};
  std::string movielens = "../shared/data/movielens-latest-small/ratings.csv";
  std::string precision = "float";
  double alpha_users = 0.6, alpha_items = 0.9, shift_users = 0.0;
  std::uint64_t seed = 1;
  std::string input, format = "auto";
  std::string preset = "netflix";
  std::string export_dir;
};

void apply_preset(Args& a, const std::string& name) {
  if (name == "netflix") {
    a.users = 480189, a.items = 17770, a.distinct = 99000000;
    a.alpha_users = 0.6, a.shift_users = 0.0, a.alpha_items = 0.9;
  } else if (name == "yahoo") {
    a.users = 1948882, a.items = 98212, a.distinct = 115000000;
    a.alpha_users = 1.5, a.shift_users = 2500.0, a.alpha_items = 0.9;
  } else {
    std::fprintf(stderr, "bench_als: unknown preset %s (netflix|yahoo)\n", name.c_str());
    std::exit(2);
  }
  a.preset = name;
}

template <class T>
std::vector<T> split_list(const std::string& s) {
  std::vector<T> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    if constexpr (std::is_same_v<T, int>)
      out.push_back(std::stoi(x));
    else
      out.push_back(x);
  return out;
}

/// `samples` (user, item) draws from the two Zipf laws, ids scattered by a
/// random permutation, duplicates removed; ratings 1..5 from a hash of the
/// pair. Returns the sorted unique keys u * n + i.
template <class Space>
Kokkos::View<std::uint64_t*, typename Space::memory_space> generate_keys(const Space& exec, const Args& a,
                                                                         std::int64_t samples) {
  using Mem = typename Space::memory_space;
  const auto cu = bench::zipf_cdf(a.users, a.alpha_users, a.shift_users), ci = bench::zipf_cdf(a.items, a.alpha_items);
  std::vector<ordinal_t> pu(a.users), pi(a.items);
  std::iota(pu.begin(), pu.end(), 0);
  std::iota(pi.begin(), pi.end(), 0);
  std::mt19937_64 g(a.seed);
  std::shuffle(pu.begin(), pu.end(), g);
  std::shuffle(pi.begin(), pi.end(), g);
  auto keys = bench::zipf_pair_keys(exec, bench::to_device(exec, cu, "cdf_u"), bench::to_device(exec, ci, "cdf_i"),
                                    bench::to_device(exec, pu, "perm_u"), bench::to_device(exec, pi, "perm_i"), samples,
                                    a.seed);
  Kokkos::sort(exec, keys);
  Kokkos::View<std::int64_t*, Mem> pos("pos", samples + 1);
  Kokkos::parallel_scan(
      "bench_als::unique", Kokkos::RangePolicy<Space>(exec, 0, samples),
      KOKKOS_LAMBDA(std::int64_t e, std::int64_t& acc, bool final) {
        const bool first = e == 0 || keys(e) != keys(e - 1);
        if (final && first) pos(acc) = e;
        acc += first ? 1 : 0;
      });
  std::int64_t distinct = 0;
  Kokkos::parallel_reduce(
      "bench_als::count", Kokkos::RangePolicy<Space>(exec, 0, samples),
      KOKKOS_LAMBDA(std::int64_t e, std::int64_t& c) { c += (e == 0 || keys(e) != keys(e - 1)) ? 1 : 0; }, distinct);
  Kokkos::View<std::uint64_t*, Mem> uniq("uniq", distinct);
  Kokkos::parallel_for(
      "bench_als::compact", Kokkos::RangePolicy<Space>(exec, 0, distinct),
      KOKKOS_LAMBDA(std::int64_t d) { uniq(d) = keys(pos(d)); });
  exec.fence();
  return uniq;
}

template <class Space, class T>
CsrMatrix<T, typename Space::memory_space> netflix_like(const Space& exec, const Args& a) {
  using Mem = typename Space::memory_space;
  // Draw, deduplicate, and rescale the number of draws until the distinct
  // count is within 1% of the target.
  std::int64_t samples = std::int64_t(a.distinct * 1.3);
  Kokkos::View<std::uint64_t*, Mem> keys;
  for (int round = 0; round < 6; ++round) {
    keys = generate_keys(exec, a, samples);
    const double got = double(keys.extent(0));
    std::fprintf(stderr, "bench_als: %lld draws -> %lld distinct ratings\n", (long long)samples, (long long)got);
    if (std::abs(got - double(a.distinct)) <= 0.01 * double(a.distinct)) break;
    samples = std::int64_t(double(samples) * std::pow(double(a.distinct) / got, 1.3));
  }
  const std::int64_t nnz = keys.extent(0);
  Kokkos::View<ordinal_t*, Mem> rows("rows", nnz), cols("cols", nnz);
  Kokkos::View<T*, Mem> vals("vals", nnz);
  const std::uint64_t ni = a.items;
  const CounterRng rng(a.seed, RngStream(1001));
  Kokkos::parallel_for(
      "bench_als::triplets", Kokkos::RangePolicy<Space>(exec, 0, nnz), KOKKOS_LAMBDA(std::int64_t e) {
        rows(e) = ordinal_t(keys(e) / ni);
        cols(e) = ordinal_t(keys(e) % ni);
        vals(e) = T(1 + Kokkos::floor(5.0 * rng.uniform(keys(e))));
      });
  keys = {};
  auto R =
      kfactor::detail::csr_from_triplets<Space, T, Mem>(exec, rows, cols, vals, ordinal_t(a.users), ordinal_t(a.items));
  exec.fence();
  return R;
}

/// Writes one raw array to DIR/NAME (see --export).
template <class V>
void write_array(const std::string& dir, const std::string& name, const std::vector<V>& v) {
  const std::string path = dir + "/" + name;
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out || std::fwrite(v.data(), sizeof(V), v.size(), out) != v.size() || std::fclose(out) != 0) {
    std::fprintf(stderr, "bench_als: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

/// --export: R as CSR, R^T as CSR, COO rows and a test subset (int32, float32).
template <class Space, class T>
void export_ratings(const Space& exec, const CsrMatrix<T, typename Space::memory_space>& R, const std::string& dir) {
  const auto Rh = copy_to<Kokkos::HostSpace>(R);
  const auto Th = copy_to<Kokkos::HostSpace>(kfactor::transpose(exec, R));
  if (Rh.nnz() > std::size_t(std::numeric_limits<std::int32_t>::max())) {
    std::fprintf(stderr, "bench_als: --export needs int32 offsets (%zu ratings)\n", std::size_t(Rh.nnz()));
    std::exit(1);
  }
  auto csr = [&](const auto& M, const std::string& prefix) {
    std::vector<std::int32_t> ptr(M.row_map.extent(0)), idx(M.entries.extent(0));
    std::vector<float> val(M.values.extent(0));
    for (std::size_t i = 0; i < ptr.size(); ++i) ptr[i] = std::int32_t(M.row_map(i));
    for (std::size_t e = 0; e < idx.size(); ++e) idx[e] = std::int32_t(M.entries(e)), val[e] = float(M.values(e));
    write_array(dir, prefix + ".indptr.bin", ptr);
    write_array(dir, prefix + ".indices.bin", idx);
    write_array(dir, prefix + ".data.bin", val);
  };
  csr(Rh, "R_train_csr");
  csr(Th, "R_train_csc");
  std::vector<std::int32_t> rows(Rh.nnz()), trow, tcol;
  std::vector<float> tval;
  for (std::size_t u = 0; u + 1 < Rh.row_map.extent(0); ++u)
    for (auto e = Rh.row_map(u); e < Rh.row_map(u + 1); ++e) {
      rows[e] = std::int32_t(u);
      if (e % 100 == 0)
        trow.push_back(std::int32_t(u)), tcol.push_back(std::int32_t(Rh.entries(e))),
            tval.push_back(float(Rh.values(e)));
    }
  write_array(dir, "R_train_coo.row.bin", rows);
  write_array(dir, "R_test_coo.row.bin", trow);
  write_array(dir, "R_test_coo.col.bin", tcol);
  write_array(dir, "R_test_coo.data.bin", tval);
  std::fprintf(stderr, "bench_als: exported %lld x %lld, %zu ratings (%zu test) to %s\n",
               (long long)(Rh.row_map.extent(0) - 1), (long long)Rh.num_cols, std::size_t(Rh.nnz()), tval.size(),
               dir.c_str());
}

/// The layout options of a variant (auto, csr, bals, reorder).
als::Options variant_options(const std::string& variant) {
  als::Options o;
  if (variant == "auto") {
    o.layout = als::Layout::automatic;
  } else if (variant == "csr") {
    o.layout = als::Layout::csr;
  } else if (variant == "bals" || variant == "reorder") {
    o.layout = als::Layout::bals;
    o.reorder = variant == "reorder";
  } else {
    std::fprintf(stderr, "bench_als: unknown variant %s (auto|csr|bals|reorder)\n", variant.c_str());
    std::exit(2);
  }
  return o;
}

/// Times every (f, variant) on one problem.
template <class T>
void bench_problem(const Args& a, const std::string& dataset,
                   const als::Problem<T, Kokkos::DefaultExecutionSpace::memory_space>& problem) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  const Space exec;
  const std::int64_t users = problem.train.num_rows(), items = problem.train.num_cols;
  const std::int64_t nnz = std::int64_t(problem.train.nnz());
  std::int64_t single = 0, empty = 0;
  {
    const auto row_map = problem.train.row_map;
    Kokkos::parallel_reduce(
        "bench_als::degrees", Kokkos::RangePolicy<Space>(exec, 0, users),
        KOKKOS_LAMBDA(std::int64_t u, std::int64_t& s1, std::int64_t& s0) {
          const auto d = row_map(u + 1) - row_map(u);
          s1 += d == 1 ? 1 : 0;
          s0 += d == 0 ? 1 : 0;
        },
        single, empty);
  }
  std::fprintf(stderr, "bench_als: %s: %lld x %lld, %lld ratings, %lld single-rating and %lld empty users\n",
               dataset.c_str(), (long long)users, (long long)items, (long long)nnz, (long long)single,
               (long long)empty);
  for (int f : a.ranks)
    for (const auto& variant : a.variants) {
      als::Options o = variant_options(variant);
      o.rank = f;
      o.lambda = 0.05;
      als::State<T, Mem> s;
      try {
        s = als::init(exec, problem, o);
        als::step(exec, problem, o, s);  // warm-up
        exec.fence();
      } catch (const std::exception& e) {  // e.g. a device out of memory: report it, run the other variants
        std::fprintf(stderr, "bench_als: %s f=%3d %-8s failed: %s\n", dataset.c_str(), f, variant.c_str(), e.what());
        continue;
      }
      std::vector<double> t, tu;
      for (int it = 0; it < a.iters; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        als::user_half_step(exec, s);
        exec.fence();
        const auto t1 = std::chrono::steady_clock::now();
        als::item_half_step(exec, s);
        exec.fence();
        const auto t2 = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double>(t2 - t0).count());
        tu.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
      std::sort(t.begin(), t.end());
      std::sort(tu.begin(), tu.end());
      const double per = t[t.size() / 2], user = tu[tu.size() / 2];
      const double gflops = als::flops_per_iteration(nnz, f) / per / 1e9;
      const auto m = als::evaluate(exec, problem, o, s);
      Report r;
      r.command = "bench_als";
      r.backend = backend_name<Space>();
      r.precision = sizeof(T) == 4 ? "float" : "double";
      r.rows = users;
      r.cols = items;
      r.nnz = nnz;
      r.rank = f;
      r.iterations = a.iters;
      r.seconds = per;
      r.metrics.set("gflops", gflops);
      r.metrics.set("train_rmse", m.get("train_rmse"));
      r.timings.set("per_iteration", per);
      r.timings.set("user_half_step", user);
      r.timings.set("item_half_step", per - user);
      r.timings.set("preprocess", s.plan->preprocess_seconds);
      r.timings.set("autotune", s.plan->autotune_seconds);
      r.info = s.plan->info;
      r.info["variant"] = variant;
      r.info["dataset"] = dataset;
      r.info["single_rating_users"] = std::to_string(single);
      r.info["empty_users"] = std::to_string(empty);
      bench::emit(r, {{"dataset", dataset}, {"variant", variant}, {"f", f}});
      std::fprintf(stderr,
                   "bench_als: %-9s f=%3d %-7s %9.2f ms/iter (users %.2f, items %.2f) %8.1f GFLOP/s  preprocess %.2f s"
                   "  structure %s / %s  tiles %s / %s  train_rmse %.4f\n",
                   dataset.c_str(), f, variant.c_str(), per * 1e3, user * 1e3, (per - user) * 1e3, gflops,
                   s.plan->preprocess_seconds, r.info["layout_user"].c_str(), r.info["layout_item"].c_str(),
                   r.info.count("users_tile") ? r.info["users_tile"].c_str() : "-",
                   r.info.count("items_tile") ? r.info["items_tile"].c_str() : "-", m.get("train_rmse"));
    }
}

template <class T>
void run(const Args& a) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Mem = Space::memory_space;
  const Space exec;
  if (!a.input.empty()) {
    bench_problem<T>(a, a.input,
                     als::make_problem(exec, io::read_matrix<T>(a.input, io::parse_format(a.format)), 0.0, 0));
    return;
  }
  for (const auto& d : a.datasets) {
    if (d == "movielens") {
      if (!a.export_dir.empty()) continue;  // --export writes the synthetic ratings only
      if (!std::filesystem::exists(a.movielens)) {
        std::fprintf(stderr, "bench_als: %s not found: MovieLens skipped\n", a.movielens.c_str());
        continue;
      }
      bench_problem<T>(a, "movielens", als::make_problem(exec, io::read_ratings<T>(a.movielens).matrix, 0.0, 0));
    } else if (d == "synthetic") {
      const auto tg = std::chrono::steady_clock::now();
      als::Problem<T, Mem> problem;
      problem.train = netflix_like<Space, T>(exec, a);
      std::fprintf(stderr, "bench_als: %s-like ratings generated in %.2f s\n", a.preset.c_str(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - tg).count());
      if (!a.export_dir.empty()) {
        export_ratings(exec, problem.train, a.export_dir);
        return;
      }
      bench_problem<T>(a, a.preset, problem);
    } else {
      std::fprintf(stderr, "bench_als: unknown data set %s (movielens|synthetic)\n", d.c_str());
      std::exit(2);
    }
  }
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_als [--datasets movielens,synthetic] [--movielens FILE]
          [--preset netflix|yahoo] [--users 480189] [--items 17770] [--distinct 99000000]
          [--ranks 32,64,100,128] [--iters 3] [--variants auto,csr,bals]
          [--precision float|double] [--alpha-users 0.6] [--shift-users 0] [--alpha-items 0.9]
          [--input FILE [--format auto|ratings|mm]] [--export DIR]
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--preset")
      apply_preset(a, v);
    else if (k == "--users")
      a.users = std::stoll(v);
    else if (k == "--items")
      a.items = std::stoll(v);
    else if (k == "--distinct")
      a.distinct = std::stoll(v);
    else if (k == "--ranks")
      a.ranks = split_list<int>(v);
    else if (k == "--iters")
      a.iters = std::stoi(v);
    else if (k == "--variants")
      a.variants = split_list<std::string>(v);
    else if (k == "--datasets")
      a.datasets = split_list<std::string>(v);
    else if (k == "--movielens")
      a.movielens = v;
    else if (k == "--precision")
      a.precision = v;
    else if (k == "--alpha-users")
      a.alpha_users = std::stod(v);
    else if (k == "--alpha-items")
      a.alpha_items = std::stod(v);
    else if (k == "--shift-users")
      a.shift_users = std::stod(v);
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--input")
      a.input = v;
    else if (k == "--format")
      a.format = v;
    else if (k == "--export")
      a.export_dir = v;
    else {
      std::fprintf(stderr, "bench_als: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.precision == "double")
    run<double>(a);
  else
    run<float>(a);
  return 0;
}
