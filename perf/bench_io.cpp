// Reader throughput on the shared data sets (host-side parsing; the device
// only matters for the to_csr upload, timed separately). One record per file:
// rows, cols, nnz, metrics parse_seconds, mb_per_s, lines_per_s, and
// timings read/parse/to_csr.
//
//   bench_io --help prints the options.
#include "common/bench.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/read.hpp>

#include <cstring>
#include <filesystem>

/// The options (--help).
constexpr const char* usage = R"(bench_io [--data DIR] [--reps N]   (DIR: $KFACTOR_DATA, else ../shared/data
                                    beside the source tree)
)";

int main(int argc, char** argv) {
  kfactor::bench::exit_on_help(argc, argv, usage);
  Kokkos::ScopeGuard guard(argc, argv);
  // $KFACTOR_DATA, else ../shared/data beside this source tree.
  const char* env = std::getenv("KFACTOR_DATA");
  std::string data =
      env && *env
          ? env
          : (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared" / "data").string();
  int reps = 5;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--data")) data = argv[a + 1];
    if (!std::strcmp(argv[a], "--reps")) reps = std::atoi(argv[a + 1]);
  }
  const char* files[] = {"snap/facebook_combined.txt",
                         "snap/p2p-Gnutella08.txt",
                         "movielens-latest-small/ratings.csv",
                         "bmf/APatio.in",
                         "bmf/AOffice.in",
                         "bmf/ATools.in",
                         "bmf/c_salt_MovieRec.in"};
  const Kokkos::DefaultExecutionSpace exec;
  for (const char* rel : files) {
    const std::string path = data + "/" + rel;
    if (!std::filesystem::exists(path)) {
      std::fprintf(stderr, "bench_io: skipping missing %s\n", path.c_str());
      continue;
    }
    std::string text;
    const double read_s = kfactor::bench::median_seconds(exec, [&] { text = kfactor::io::read_file(path); }, reps, 1);
    const auto format = kfactor::io::detect_format(text, path);
    kfactor::io::ReadInfo info;
    kfactor::CooMatrix<float> A;
    const double parse_s = kfactor::bench::median_seconds(
        exec, [&] { A = kfactor::io::parse_matrix<float>(text, path, format, {}, &info); }, reps, 1);
    const double csr_s = kfactor::bench::median_seconds(exec, [&] { (void)kfactor::to_csr(exec, A); }, reps, 1);
    kfactor::Report r;
    r.command = "bench_io";
    r.backend = kfactor::backend_name<Kokkos::DefaultExecutionSpace>();
    r.precision = "float";
    r.rows = A.num_rows;
    r.cols = A.num_cols;
    r.nnz = static_cast<std::int64_t>(A.nnz());
    r.seconds = read_s + parse_s;
    r.metrics.items = {{"parse_seconds", parse_s},
                       {"mb_per_s", double(text.size()) / 1e6 / parse_s},
                       {"lines_per_s", double(info.lines) / parse_s}};
    r.timings.items = {{"read", read_s}, {"parse", parse_s}, {"to_csr", csr_s}};
    r.info["file"] = rel;
    r.info["format"] = std::string(kfactor::io::format_name(info.format));
    r.info["bytes"] = std::to_string(text.size());
    kfactor::bench::emit(r);
  }
  return 0;
}
