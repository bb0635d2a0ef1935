// Reading a large ratings input: wall time and peak host memory per rank
// (getrusage ru_maxrss) of
//   text      io::read_input on one process (the whole text parsed)
//   text-split distributed::read_rows on the ranks of MPI_COMM_WORLD (each
//             parses a line-aligned byte range; entries go to their rows' ranks)
//   h5        io::read_input of the HDF5 CSR copy on one process
//   h5-split  distributed::read_rows of it (each rank reads /indptr and its
//             rows' hyperslab)
// One case per process (the peak is the process's), one JSON record (the
// common schema, perf/common/bench.hpp) per case: metrics seconds (the
// slowest rank's), max_rss_mib (the largest rank's) and rss_before_mib (the
// process before reading), per-rank lists in `ranks`.
//
// --generate N PREFIX writes PREFIX.csv, N ratings with Netflix's shape
// (480,189 users with sparse ids, 17,770 items, ratings 1..5, a timestamp;
// `userId,movieId,rating,timestamp` lines grouped by item, as the Netflix
// files are, item popularity skewed), and PREFIX.h5, the same matrix as HDF5
// CSR with its ids (what `kfactor convert PREFIX.csv PREFIX.h5` writes).
//
//   bench_read --help prints the options.
#include "common/bench.hpp"

#include <kfactor/config.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/read.hpp>

#include <mpi.h>
#endif

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace {

using kfactor::ordinal_t;

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// Netflix's shape scaled to n ratings: item i gets a share proportional to
/// (i + 10)^-0.8 (at least 1, at most every user); its users are a stride
/// walk through all users from a hashed start (distinct, gcd(stride, U) = 1).
void generate(std::int64_t n, const std::string& prefix) {
  constexpr std::int64_t U = 480189, I = 17770;
  std::vector<double> w(I);
  for (std::int64_t i = 0; i < I; ++i) w[i] = std::pow(double(i + 10), -0.8);
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  std::vector<std::int64_t> count(I);
  std::int64_t sum = 0;
  for (std::int64_t i = 0; i < I; ++i)
    sum += count[i] = std::clamp<std::int64_t>(std::llround(double(n) * w[i] / total), 1, U);
  for (std::int64_t i = 0; sum != n && i < I; ++i) {  // hit n exactly
    const std::int64_t d = std::clamp<std::int64_t>(n - sum, 1 - count[i], U - count[i]);
    count[i] += d;
    sum += d;
  }
  auto user_id = [](std::int64_t u) { return 6 + 5 * u + u % 4; };  // sparse and increasing
  auto user = [&](std::int64_t i, std::int64_t j) {
    std::int64_t stride = 1 + static_cast<std::int64_t>(mix(i) % (U - 1));
    while (std::gcd(stride, U) != 1) ++stride;
    return (static_cast<std::int64_t>(mix(i + I) % U) + j * stride) % U;
  };
  auto rating = [](std::int64_t i, std::int64_t j) { return 1 + static_cast<int>(mix(i * 7919 + j) % 5); };
  // The text, grouped by item.
  std::FILE* f = std::fopen((prefix + ".csv").c_str(), "wb");
  if (!f) throw kfactor::RuntimeFailure("cannot write " + prefix + ".csv");
  std::string buf = "userId,movieId,rating,timestamp\n";
  char line[96];
  std::vector<std::int64_t> per_user(U + 1, 0);
  for (std::int64_t i = 0; i < I; ++i)
    for (std::int64_t j = 0; j < count[i]; ++j) {
      const std::int64_t u = user(i, j);
      ++per_user[u + 1];
      const int len = std::snprintf(line, sizeof line, "%lld,%lld,%d,%lld\n", static_cast<long long>(user_id(u)),
                                    static_cast<long long>(i + 1), rating(i, j),
                                    static_cast<long long>(946684800 + mix(i ^ (j << 20)) % 200000000));
      buf.append(line, static_cast<std::size_t>(len));
      if (buf.size() > (1u << 22)) {
        std::fwrite(buf.data(), 1, buf.size(), f);
        buf.clear();
      }
    }
  std::fwrite(buf.data(), 1, buf.size(), f);
  if (std::fclose(f) != 0) throw kfactor::RuntimeFailure("cannot write " + prefix + ".csv");
  // The same matrix as CSR by user: rows are the users that rated (in id
  // order, as the ratings reader maps them), columns items 1..I.
  std::vector<ordinal_t> row_of(U, -1);
  std::vector<std::int64_t> row_ids;
  for (std::int64_t u = 0; u < U; ++u)
    if (per_user[u + 1] > 0) {
      row_of[u] = static_cast<ordinal_t>(row_ids.size());
      row_ids.push_back(user_id(u));
    }
  for (std::int64_t u = 0; u < U; ++u) per_user[u + 1] += per_user[u];
  kfactor::CooMatrix<float> A;
  A.num_rows = static_cast<std::int64_t>(row_ids.size());
  A.num_cols = I;
  A.rows.resize(n);
  A.cols.resize(n);
  A.values.resize(n);
  std::vector<std::int64_t> next(per_user.begin(), per_user.end() - 1);
  for (std::int64_t i = 0; i < I; ++i)  // items ascending: each user's columns come sorted
    for (std::int64_t j = 0; j < count[i]; ++j) {
      const std::int64_t u = user(i, j), e = next[u]++;
      A.rows[e] = row_of[u];
      A.cols[e] = static_cast<ordinal_t>(i);
      A.values[e] = static_cast<float>(rating(i, j));
    }
  std::vector<std::int64_t> col_ids(I);
  std::iota(col_ids.begin(), col_ids.end(), 1);
  kfactor::io::write_hdf5_csr(prefix + ".h5", A, row_ids, col_ids);
  std::printf("wrote %s.csv (%lld ratings, %.1f MB) and %s.h5 (%.1f MB)\n", prefix.c_str(), static_cast<long long>(n),
              double(std::filesystem::file_size(prefix + ".csv")) / 1e6, prefix.c_str(),
              double(std::filesystem::file_size(prefix + ".h5")) / 1e6);
}

}  // namespace

/// The options (--help).
constexpr const char* usage = R"(bench_read --generate N PREFIX
[mpiexec -n P] bench_read --case text|text-split|h5|h5-split --input FILE

bench_read --generate 100000000 /tmp/netflix      (about 2.6 GB of text)
bench_read --case text --input /tmp/netflix.csv
mpiexec -n 4 bench_read --case text-split --input /tmp/netflix.csv
bench_read --case h5 --input /tmp/netflix.h5
mpiexec -n 4 bench_read --case h5-split --input /tmp/netflix.h5
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
#if defined(KFACTOR_HAVE_MPI)
  MPI_Init(&argc, &argv);
#endif
  int code = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    std::string what, input, prefix;
    std::int64_t n = 0;
    for (int a = 1; a + 1 < argc; a += 2) {
      if (!std::strcmp(argv[a], "--case")) what = argv[a + 1];
      if (!std::strcmp(argv[a], "--input")) input = argv[a + 1];
      if (!std::strcmp(argv[a], "--generate") && a + 2 < argc) {
        n = std::atoll(argv[a + 1]);
        prefix = argv[a + 2];
        ++a;
      }
    }
    try {
      if (n > 0) {
        generate(n, prefix);
      } else if (!what.empty() && !input.empty()) {
        const double before = max_rss_mib();
        const auto t0 = std::chrono::steady_clock::now();
        std::int64_t rows = 0, cols = 0, nnz = 0;
        int P = 1;
        if (what == "text" || what == "h5") {
          const auto r = kfactor::io::read_input<float>(input);
          rows = r.matrix.num_rows;
          cols = r.matrix.num_cols;
          nnz = static_cast<std::int64_t>(r.matrix.nnz());
        } else if (what == "text-split" || what == "h5-split") {
#if defined(KFACTOR_HAVE_MPI)
          const auto s = kfactor::distributed::read_rows<float>(MPI_COMM_WORLD, input);
          rows = s.entries.num_rows;
          cols = s.entries.num_cols;
          nnz = s.global_nnz;
          MPI_Comm_size(MPI_COMM_WORLD, &P);
#else
          throw kfactor::UsageError("bench_read: the split cases need MPI");
#endif
        } else {
          throw kfactor::UsageError("bench_read: unknown --case " + what);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::vector<double> mine = {seconds, max_rss_mib(), before}, all = mine;
        int rank = 0;
#if defined(KFACTOR_HAVE_MPI)
        if (what.find("split") != std::string::npos) {
          MPI_Comm_rank(MPI_COMM_WORLD, &rank);
          all.resize(3 * static_cast<std::size_t>(P));
          MPI_Gather(mine.data(), 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        }
#endif
        if (rank == 0) {
          kfactor::Report r;
          r.command = "bench_read";
          r.backend = "host";
          r.precision = "float";
          r.rows = rows;
          r.cols = cols;
          r.nnz = nnz;
          nlohmann::json ranks = nlohmann::json::array();
          double slowest = 0, largest = 0, base = 0;
          for (int p = 0; p < P; ++p) {
            slowest = std::max(slowest, all[3 * p]);
            largest = std::max(largest, all[3 * p + 1]);
            base = std::max(base, all[3 * p + 2]);
            ranks.push_back({{"seconds", all[3 * p]}, {"max_rss_mib", all[3 * p + 1]}});
          }
          r.seconds = slowest;
          r.metrics.items = {{"seconds", slowest}, {"max_rss_mib", largest}, {"rss_before_mib", base}};
          r.timings.items = {{"read", slowest}};
          r.info["case"] = what;
          r.info["input"] = input;
          r.info["ranks"] = std::to_string(P);
          r.info["bytes"] = std::to_string(std::filesystem::file_size(input));
          kfactor::bench::emit(r, {{"ranks", ranks}});
        }
      } else {
        std::fprintf(stderr,
                     "usage: bench_read --generate N PREFIX | --case text|text-split|h5|h5-split --input FILE\n");
        code = 2;
      }
    } catch (const kfactor::Error& e) {
      std::fprintf(stderr, "bench_read: %s\n", e.what());
      code = e.exit_code();
    }
  }
#if defined(KFACTOR_HAVE_MPI)
  MPI_Finalize();
#endif
  return code;
}
