// `kfactor nmf`: non-negative matrix factorization (FAST-HALS, ALO-NMF, MU)
// of a dense or sparse non-negative matrix; writes W (V x K) and H (K x D).
//
// Input reading and factor writing are local to this file until io/ is
// merged: read_nmf_input() (Matrix Market array/coordinate, edge lists) and
// write_mm_array() are the two calls to replace with io/'s readers/writers.
#include "cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/nmf/nmf.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kfactor::cli {
namespace {

/// What read_nmf_input returns: a dense host matrix (column-major values, as
/// Matrix Market arrays store them) or host triplets.
struct NmfInput {
  bool dense = false;
  std::int64_t rows = 0, cols = 0;
  std::vector<double> values;  ///< dense: column-major rows x cols
  CooMatrix<double> coo;       ///< sparse
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Matrix Market (array or coordinate; real/integer/pattern; general or
/// symmetric) or an edge list (`u v [w]` per line, '#'/'%' comments, lines
/// with fewer than two fields skipped, duplicates merged to 1 like the
/// scikit-learn peer; square with n = max id + 1).
NmfInput read_nmf_input(const CommonOptions& common) {
  std::ifstream in(common.input);
  if (!in) throw InputError(common.input, 0, "cannot open");
  std::string format = common.format;
  std::string first;
  std::getline(in, first);
  if (format == "auto") format = first.rfind("%%MatrixMarket", 0) == 0 ? "mm" : "edges";
  NmfInput out;
  std::int64_t line_no = 1;
  if (format == "mm" || format == "dense") {
    const std::string header = lower(first);
    if (header.rfind("%%matrixmarket", 0) != 0) throw InputError(common.input, 1, "missing %%MatrixMarket header");
    const bool array = header.find(" array") != std::string::npos;
    const bool pattern = header.find(" pattern") != std::string::npos;
    const bool symmetric = header.find(" symmetric") != std::string::npos;
    if (header.find(" complex") != std::string::npos) throw InputError(common.input, 1, "complex matrices are not supported");
    std::string line;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line[0] != '%') break;
    }
    std::istringstream size(line);
    std::int64_t nnz = 0;
    if (!(size >> out.rows >> out.cols) || (!array && !(size >> nnz)))
      throw InputError(common.input, line_no, "bad size line");
    if (array) {
      out.dense = true;
      out.values.reserve(static_cast<std::size_t>(out.rows * out.cols));
      double v;
      while (in >> v) out.values.push_back(v);
      if (static_cast<std::int64_t>(out.values.size()) != out.rows * out.cols)
        throw InputError(common.input, 0, "array has " + std::to_string(out.values.size()) + " values, expected " +
                                              std::to_string(out.rows * out.cols));
      if (symmetric) throw InputError(common.input, 1, "symmetric arrays are not supported");
      return out;
    }
    out.coo.num_rows = out.rows;
    out.coo.num_cols = out.cols;
    std::vector<std::tuple<ordinal_t, ordinal_t, double>> t;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty() || line[0] == '%') continue;
      std::istringstream ls(line);
      std::int64_t i, j;
      double v = 1.0;
      if (!(ls >> i >> j) || (!pattern && !(ls >> v))) throw InputError(common.input, line_no, "bad entry");
      if (i < 1 || j < 1 || i > out.rows || j > out.cols) throw InputError(common.input, line_no, "index out of range");
      t.emplace_back(ordinal_t(i - 1), ordinal_t(j - 1), v);
      if (symmetric && i != j) t.emplace_back(ordinal_t(j - 1), ordinal_t(i - 1), v);
    }
    std::sort(t.begin(), t.end());
    for (std::size_t e = 0; e < t.size(); ++e) {
      const auto& [i, j, v] = t[e];
      if (e > 0 && std::get<0>(t[e - 1]) == i && std::get<1>(t[e - 1]) == j) {
        out.coo.values.back() += v;  // duplicates add (Matrix Market convention)
        continue;
      }
      out.coo.rows.push_back(i);
      out.coo.cols.push_back(j);
      out.coo.values.push_back(v);
    }
    return out;
  }
  if (format != "edges") throw UsageError("nmf: unsupported --format " + format + " (mm, dense or edges)");
  std::vector<std::pair<ordinal_t, ordinal_t>> e;
  std::int64_t n = 0;
  auto parse = [&](const std::string& line) {
    if (line.empty() || line[0] == '#' || line[0] == '%') return;
    std::istringstream ls(line);
    std::int64_t u, v;
    if (!(ls >> u >> v)) return;  // a count line or a blank one
    if (u < 0 || v < 0) throw InputError(common.input, line_no, "negative vertex id");
    e.emplace_back(ordinal_t(u), ordinal_t(v));
    n = std::max({n, u + 1, v + 1});
  };
  parse(first);
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    parse(line);
  }
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  out.rows = out.cols = n;
  out.coo.num_rows = out.coo.num_cols = n;
  for (const auto& [u, v] : e) {
    out.coo.rows.push_back(u);
    out.coo.cols.push_back(v);
    out.coo.values.push_back(1.0);
  }
  return out;
}

/// Writes X (rows x cols, value(i, j)) as a Matrix Market real array.
template <class Get>
void write_mm_array(const std::string& path, std::int64_t rows, std::int64_t cols, Get&& value) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw RuntimeFailure("nmf: cannot write " + path);
  std::fprintf(f, "%%%%MatrixMarket matrix array real general\n%lld %lld\n", static_cast<long long>(rows),
               static_cast<long long>(cols));
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) std::fprintf(f, "%.17g\n", value(i, j));
  if (std::fclose(f) != 0) throw RuntimeFailure("nmf: error while writing " + path);
}

struct NmfCliOptions {
  CommonOptions common;
  std::string algorithm = "alo";
  double tol = 0.0;
  int tile = 0;
  double eps = 0.0;
  int every = 1;
};

template <class T>
Report run_nmf(const NmfCliOptions& o, const NmfInput& input) {
  using Exec = Kokkos::DefaultExecutionSpace;
  using Mem = Exec::memory_space;
  const Exec exec;
  nmf::Options opt;
  opt.algorithm = nmf::parse_algorithm(o.algorithm);
  opt.rank = o.common.rank;
  opt.max_iterations = o.common.iters;
  opt.tolerance = o.tol;
  opt.tile = o.tile;
  opt.epsilon = o.eps;
  opt.seed = o.common.seed;
  opt.validate();
  const auto observer = progress_printer(o.common, o.every);
  auto finish = [&](auto& result) {
    if (!o.common.output.empty()) {
      auto W = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result.state.W);
      auto Ht = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result.state.Ht);
      const std::string wpath = o.common.output + "_W.mtx", hpath = o.common.output + "_H.mtx";
      write_mm_array(wpath, W.extent(0), W.extent(1), [&](std::int64_t i, std::int64_t j) { return double(W(i, j)); });
      write_mm_array(hpath, Ht.extent(1), Ht.extent(0), [&](std::int64_t k, std::int64_t d) { return double(Ht(d, k)); });
      result.report.info["W"] = wpath;
      result.report.info["H"] = hpath;
    }
    result.report.info["input_file"] = o.common.input;
    return result.report;
  };
  if (input.dense) {
    DenseMatrix<T, Mem> A("kfactor::nmf::A", input.rows, input.cols);
    auto h = Kokkos::create_mirror_view(A);
    for (std::int64_t j = 0; j < input.cols; ++j)
      for (std::int64_t i = 0; i < input.rows; ++i) h(i, j) = T(input.values[std::size_t(j * input.rows + i)]);
    Kokkos::deep_copy(A, h);
    auto result = nmf::solve(exec, A, opt, observer);
    return finish(result);
  }
  CooMatrix<T> coo;
  coo.num_rows = input.coo.num_rows;
  coo.num_cols = input.coo.num_cols;
  coo.rows = input.coo.rows;
  coo.cols = input.coo.cols;
  coo.values.assign(input.coo.values.begin(), input.coo.values.end());
  auto A = to_csr(exec, coo);
  auto result = nmf::solve(exec, A, opt, observer);
  return finish(result);
}

const Registrar nmf_command{Command{
    "nmf", "non-negative matrix factorization A ~ W H (FAST-HALS, ALO-NMF, multiplicative updates)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<NmfCliOptions>();
      add_common_options(cmd, o->common);
      cmd.add_option("-a,--algorithm", o->algorithm, "hals|alo|mu")
          ->capture_default_str()
          ->check(CLI::IsMember({"hals", "alo", "mu"}));
      cmd.add_option("--tol", o->tol, "stop when the relative error changes by <= tol * previous (0: never)")
          ->capture_default_str();
      cmd.add_option("--tile", o->tile, "ALO tile size T (0: 8/16/16/32/64 for K=64..1024, else the section-5 model)")
          ->capture_default_str();
      cmd.add_option("--eps", o->eps, "floor of W and H / MU denominator guard (0: machine epsilon)")
          ->capture_default_str();
      cmd.add_option("--every", o->every, "print a progress line every N iterations")->capture_default_str();
      return [o] {
        const NmfInput input = read_nmf_input(o->common);
        Report r = o->common.precision == "float" ? run_nmf<float>(*o, input) : run_nmf<double>(*o, input);
        print_report(o->common, r);
      };
    }}};

/// Demo: a planted exact rank-6 non-negative 200 x 150 matrix (half the planted
/// entries zero), ALO in double, until the relative error is below 1e-4.
const Registrar nmf_demo{Demo{"nmf", [](std::uint64_t seed) {
                                using Exec = Kokkos::DefaultExecutionSpace;
                                const Exec exec;
                                const int V = 200, D = 150, K = 6;
                                const CounterRng rng(seed, RngStream::user);
                                std::vector<double> W(V * K), H(K * D);
                                for (std::size_t e = 0; e < W.size(); ++e)
                                  W[e] = rng.uniform(2 * e) < 0.5 ? 0.0 : rng.uniform(2 * e + 1);
                                for (std::size_t e = 0; e < H.size(); ++e)
                                  H[e] = rng.uniform(1000000 + 2 * e) < 0.5 ? 0.0 : rng.uniform(1000001 + 2 * e);
                                DenseMatrix<double, Exec::memory_space> A("A", V, D);
                                auto h = Kokkos::create_mirror_view(A);
                                for (int i = 0; i < V; ++i)
                                  for (int j = 0; j < D; ++j) {
                                    double s = 0;
                                    for (int k = 0; k < K; ++k) s += W[i * K + k] * H[k * D + j];
                                    h(i, j) = s;
                                  }
                                Kokkos::deep_copy(A, h);
                                nmf::Options o;
                                o.algorithm = nmf::Algorithm::alo;
                                o.rank = K;
                                o.max_iterations = 1000;
                                o.seed = seed;
                                auto r = nmf::solve(exec, A, o, [](const IterationEvent& e) {
                                  return e.metrics->get("relative_error") < 1e-4 ? ObserverAction::stop
                                                                                : ObserverAction::proceed;
                                });
                                return r.report;
                              }}};

}  // namespace
}  // namespace kfactor::cli
