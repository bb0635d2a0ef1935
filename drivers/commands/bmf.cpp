// `kfactor bmf`: Boolean matrix factorization (CuBin), and its demo entry.
//
// Until include/kfactor/io/ is merged, the input is read by the small local
// reader read_boolean_input() in this file (formats bmf, mm, edges, dense,
// ratings); the lead replaces that one call with the io/ readers.
#include "cli.hpp"

#include <kfactor/bmf/bmf.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cctype>
#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kfactor::cli {
namespace {

/// The ones of a Boolean input matrix.
struct BooleanInput {
  std::int64_t rows = 0, cols = 0;
  std::vector<ordinal_t> one_rows, one_cols;
};

std::vector<std::string> tokens_of(const std::string& line) {
  std::vector<std::string> t;
  std::string cur;
  for (char ch : line) {
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == ',' || ch == ';') {
      if (!cur.empty()) t.push_back(cur), cur.clear();
    } else {
      cur.push_back(ch);
    }
  }
  if (!cur.empty()) t.push_back(cur);
  return t;
}

double number(const std::string& tok, const std::string& file, std::int64_t line) {
  try {
    std::size_t used = 0;
    const double v = std::stod(tok, &used);
    if (used != tok.size() || !std::isfinite(v)) throw std::invalid_argument(tok);
    return v;
  } catch (const std::exception&) {
    throw InputError(file, line, "'" + tok + "' is not a number");
  }
}

std::string guess_format(const std::string& path) {
  auto ends = [&](const std::string& s) { return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0; };
  if (ends(".in") || ends(".data")) return "bmf";
  if (ends(".mtx")) return "mm";
  if (ends(".csv")) return "ratings";
  return "edges";
}

/// Local reader (temporary, see the file comment). A value counts as a one
/// when it is >= threshold (when a threshold is given) or nonzero.
BooleanInput read_boolean_input(const std::string& path, std::string format, double threshold, bool has_threshold) {
  std::ifstream in(path);
  if (!in) throw InputError(path, 0, "cannot open");
  if (format == "auto") format = guess_format(path);
  auto is_one = [&](double v) { return has_threshold ? v >= threshold : v != 0.0; };
  BooleanInput out;
  std::string line;
  std::int64_t ln = 0;
  auto add = [&](double r, double c, std::int64_t at) {
    if (r < 0 || c < 0 || r != std::floor(r) || c != std::floor(c) || r > INT_MAX || c > INT_MAX)
      throw InputError(path, at, "bad index");
    out.one_rows.push_back(ordinal_t(r));
    out.one_cols.push_back(ordinal_t(c));
  };
  if (format == "bmf") {  // first line `rows cols [nnz]` (or CuBin's `rows,cols`), then 0-based `row col`
    bool header = false;
    while (std::getline(in, line)) {
      ++ln;
      const auto t = tokens_of(line);
      if (t.empty() || t[0][0] == '#' || t[0][0] == '%') continue;
      if (!header) {
        if (t.size() < 2) throw InputError(path, ln, "expected `rows cols nnz`");
        out.rows = std::int64_t(number(t[0], path, ln));
        out.cols = std::int64_t(number(t[1], path, ln));
        header = true;
        continue;
      }
      if (t.size() < 2) throw InputError(path, ln, "expected `row col`");
      if (t.size() >= 3 && !is_one(number(t[2], path, ln))) continue;
      add(number(t[0], path, ln), number(t[1], path, ln), ln);
    }
    if (!header) throw InputError(path, 0, "empty file");
  } else if (format == "mm") {
    bool banner = false, size = false, pattern = false, symmetric = false;
    while (std::getline(in, line)) {
      ++ln;
      if (!banner) {
        std::string low = line;
        for (auto& ch : low) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        if (low.rfind("%%matrixmarket", 0) != 0) throw InputError(path, ln, "missing %%MatrixMarket banner");
        if (low.find("coordinate") == std::string::npos) throw InputError(path, ln, "only coordinate Matrix Market (use --format dense for arrays)");
        pattern = low.find("pattern") != std::string::npos;
        symmetric = low.find("symmetric") != std::string::npos;
        banner = true;
        continue;
      }
      const auto t = tokens_of(line);
      if (t.empty() || t[0][0] == '%') continue;
      if (!size) {
        if (t.size() < 3) throw InputError(path, ln, "expected `rows cols nnz`");
        out.rows = std::int64_t(number(t[0], path, ln));
        out.cols = std::int64_t(number(t[1], path, ln));
        size = true;
        continue;
      }
      if (t.size() < (pattern ? 2u : 3u)) throw InputError(path, ln, "short entry");
      if (!pattern && !is_one(number(t[2], path, ln))) continue;
      const double r = number(t[0], path, ln) - 1, c = number(t[1], path, ln) - 1;
      add(r, c, ln);
      if (symmetric && r != c) add(c, r, ln);
    }
  } else if (format == "edges") {  // `u v` per line, 0-based; comment lines and a lone count line skipped
    std::int64_t mr = -1, mc = -1;
    while (std::getline(in, line)) {
      ++ln;
      const auto t = tokens_of(line);
      if (t.empty() || t[0][0] == '#' || t[0][0] == '%' || t.size() == 1) continue;
      if (t.size() >= 3 && !is_one(number(t[2], path, ln))) continue;
      const double r = number(t[0], path, ln), c = number(t[1], path, ln);
      add(r, c, ln);
      mr = std::max(mr, std::int64_t(r));
      mc = std::max(mc, std::int64_t(c));
    }
    out.rows = mr + 1;
    out.cols = mc + 1;
  } else if (format == "dense") {  // one row of 0/1 (or numbers) per line
    std::int64_t r = 0;
    while (std::getline(in, line)) {
      ++ln;
      const auto t = tokens_of(line);
      if (t.empty() || t[0][0] == '#' || t[0][0] == '%') continue;
      if (out.cols == 0) out.cols = std::int64_t(t.size());
      if (std::int64_t(t.size()) != out.cols) throw InputError(path, ln, "rows have different lengths");
      for (std::size_t c = 0; c < t.size(); ++c)
        if (is_one(number(t[c], path, ln))) add(double(r), double(c), ln);
      ++r;
    }
    out.rows = r;
  } else if (format == "ratings") {  // CSV user,item,rating[,...] with an optional header; ids re-indexed
    std::vector<std::int64_t> users, items;
    std::vector<double> vals;
    while (std::getline(in, line)) {
      ++ln;
      const auto t = tokens_of(line);
      if (t.empty() || t[0][0] == '#') continue;
      if (t.size() < 3) throw InputError(path, ln, "expected user,item,rating");
      if (!std::isdigit(static_cast<unsigned char>(t[0][0])) && t[0][0] != '-') continue;  // header
      users.push_back(std::int64_t(number(t[0], path, ln)));
      items.push_back(std::int64_t(number(t[1], path, ln)));
      vals.push_back(number(t[2], path, ln));
    }
    auto reindex = [](const std::vector<std::int64_t>& ids, std::vector<ordinal_t>& out_idx) {
      std::vector<std::int64_t> u(ids);
      std::sort(u.begin(), u.end());
      u.erase(std::unique(u.begin(), u.end()), u.end());
      out_idx.resize(ids.size());
      for (std::size_t e = 0; e < ids.size(); ++e)
        out_idx[e] = ordinal_t(std::lower_bound(u.begin(), u.end(), ids[e]) - u.begin());
      return std::int64_t(u.size());
    };
    std::vector<ordinal_t> ur, ic;
    out.rows = reindex(users, ur);
    out.cols = reindex(items, ic);
    for (std::size_t e = 0; e < vals.size(); ++e)
      if (is_one(vals[e])) {
        out.one_rows.push_back(ur[e]);
        out.one_cols.push_back(ic[e]);
      }
  } else {
    throw UsageError("bmf: unknown format '" + format + "' (auto|bmf|mm|edges|dense|ratings)");
  }
  return out;
}

/// Writes a 0/1 matrix as a Matrix Market pattern file.
void write_pattern(const std::string& path, const DenseMatrix<std::uint8_t, Kokkos::HostSpace>& X) {
  std::ofstream out(path);
  if (!out) throw RuntimeFailure("cannot write " + path);
  std::size_t nnz = 0;
  for (std::size_t i = 0; i < X.extent(0); ++i)
    for (std::size_t j = 0; j < X.extent(1); ++j) nnz += X(i, j) != 0;
  out << "%%MatrixMarket matrix coordinate pattern general\n% kfactor bmf factor\n"
      << X.extent(0) << " " << X.extent(1) << " " << nnz << "\n";
  for (std::size_t i = 0; i < X.extent(0); ++i)
    for (std::size_t j = 0; j < X.extent(1); ++j)
      if (X(i, j)) out << i + 1 << " " << j + 1 << "\n";
  if (!out) throw RuntimeFailure("error writing " + path);
}

struct BmfCliOptions {
  CommonOptions common;
  bmf::Options solver;
  double threshold = 0.0;
  std::string init = "density100", dense_c = "auto", order = "columns-first";
  double dense_limit_mb = 1024;
};

const Registrar bmf_command{Command{
    "bmf", "Boolean matrix factorization C ~ A o B (CuBin: parallel random bit-flip search)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<BmfCliOptions>();
      o->common.rank = 20;
      o->common.iters = 10000;
      add_common_options(cmd, o->common);
      auto& s = o->solver;
      auto* thr = cmd.add_option("--threshold", o->threshold, "a value is a one when >= t (ratings, mm, dense); default: nonzero");
      cmd.add_option("--batch,-L", s.batch, "lines changed in parallel per half-iteration (CuBin's linesAtOnce)")->capture_default_str();
      cmd.add_option("--flip-prob", s.flip_prob, "probability of flipping each bit of a proposed line")->capture_default_str();
      cmd.add_option("--temperature", s.temperature, "Metropolis start temperature T0 (0 = greedy)")->capture_default_str();
      cmd.add_option("--temp-step", s.temp_step, "multiply T by --temp-factor every this many iterations")->capture_default_str();
      cmd.add_option("--temp-factor", s.temp_factor, "cooling factor")->capture_default_str();
      cmd.add_option("--weight-ones", s.weight_ones, "cost of a missed one (a spurious one costs 1)")->capture_default_str();
      cmd.add_option("--init", o->init, "initial factors: dost|density100|density (CuBin's modes 1-3) | rows (B's rows = random rows of C)")->capture_default_str()
          ->check(CLI::IsMember({"dost", "density100", "density", "rows"}));
      cmd.add_option("--dense-c", o->dense_c, "store C as dense bits: auto|on|off")->capture_default_str()
          ->check(CLI::IsMember({"auto", "on", "off"}));
      cmd.add_option("--dense-limit-mb", o->dense_limit_mb, "auto: dense bits up to this many MiB")->capture_default_str();
      cmd.add_option("--order", o->order, "columns-first (B then A, CuBin's code) | rows-first")->capture_default_str()
          ->check(CLI::IsMember({"columns-first", "rows-first"}));
      cmd.add_option("--proposal-group", s.proposal_group, "lines i with equal i / G share one flip mask")->capture_default_str();
      cmd.add_option("--target-error", s.target_error, "stop when the relative error is <= this")->capture_default_str();
      cmd.add_option("--every-line-changed", s.every_line_changed,
                     "no-improvement stop after (max(m,n)/L+1)*this iterations (0: off)")->capture_default_str();
      return [o, thr] {
        auto& s = o->solver;
        s.rank = o->common.rank;
        s.max_iterations = o->common.iters;
        s.seed = o->common.seed;
        s.init = bmf::parse_init(o->init);
        s.dense_c = bmf::parse_dense_c(o->dense_c);
        s.order = bmf::parse_order(o->order);
        s.dense_limit_bytes = std::size_t(o->dense_limit_mb * 1024.0 * 1024.0);
        s.validate();
        const auto t0 = std::chrono::steady_clock::now();
        const auto input = read_boolean_input(o->common.input, o->common.format, o->threshold, thr->count() > 0);
        using Space = Kokkos::DefaultExecutionSpace;
        const Space exec;
        const auto problem = bmf::make_problem(exec, input.rows, input.cols, input.one_rows, input.one_cols, s);
        const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        auto res = bmf::solve(exec, problem, s, progress_printer(o->common, 100));
        res.report.timings.set("read", read_s);
        res.report.info["input"] = o->common.input;
        if (!o->common.output.empty()) {
          write_pattern(o->common.output + "_A.mtx", bmf::factor_a(res.state));
          write_pattern(o->common.output + "_B.mtx", bmf::factor_b(res.state));
          res.report.info["output"] = o->common.output + "_{A,B}.mtx";
        }
        print_report(o->common, res.report);
      };
    }}};

// Demo: a planted 3000 x 2000 Boolean matrix, k = 10, 3% of its ones flipped
// off and as many zeros flipped on; greedy, every line proposed each
// iteration (about 3 s on one core; reaches ~2x the planted factors' error).
const Registrar bmf_demo{Demo{"bmf", [](std::uint64_t seed) {
                                const auto p = bmf::make_planted(3000, 2000, 10, 0.05, 0.03, seed);
                                bmf::Options o;
                                o.rank = 10;
                                o.seed = seed;
                                o.max_iterations = 1500;
                                o.batch = 4000;
                                o.flip_prob = 0.1;
                                o.init = bmf::Init::dost;
                                o.every_line_changed = 100;

                                using Space = Kokkos::DefaultExecutionSpace;
                                const auto prob = bmf::make_problem(Space{}, p.rows, p.cols, p.one_rows, p.one_cols, o);
                                auto r = bmf::solve(Space{}, prob, o);
                                const auto truth = bmf::full_error(Space{}, prob, copy_to<Space::memory_space>(p.A),
                                                                   copy_to<Space::memory_space>(p.Bt));
                                r.report.metrics.set("planted_relative_error", truth.relative());
                                return r.report;
                              }}};

}  // namespace
}  // namespace kfactor::cli
