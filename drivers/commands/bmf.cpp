// `kfactor bmf`: Boolean matrix factorization (CuBin), and its demo entry.
//
// Input through kfactor::io (any --format; ratings keep their user/item ids);
// an entry is a one when its value is >= --threshold (when given) or nonzero.
// Factors: PREFIX_A.mtx / PREFIX_B.mtx (coordinate, value 1 per set bit), or
// for ratings input PREFIX_A.csv / PREFIX_B.csv (one line per user / item with
// its original id, then the k bits). --checkpoint/--restart save and continue
// the exact State (io/checkpoint.hpp).
#include "cli.hpp"

#include <kfactor/bmf/bmf.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/io/bit_factor.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::cli {
namespace {

/// The ones of the input (value >= threshold, or nonzero), with the ratings'
/// original ids when the input was a ratings file.
struct BooleanInput {
  CooMatrix<double> ones;                      ///< values all 1
  std::vector<std::int64_t> row_ids, col_ids;  ///< empty unless ratings
};

BooleanInput read_boolean_input(const std::string& path, const std::string& format_name, double threshold,
                                bool has_threshold) {
  auto r = io::read_input<double>(path, io::parse_format(format_name));
  BooleanInput in;
  const CooMatrix<double> m = std::move(r.matrix);
  in.row_ids = std::move(r.user_ids);
  in.col_ids = std::move(r.item_ids);
  in.ones.num_rows = m.num_rows;
  in.ones.num_cols = m.num_cols;
  for (std::size_t e = 0; e < m.nnz(); ++e) {
    const double v = m.values.empty() ? 1.0 : m.values[e];
    if (has_threshold ? v >= threshold : v != 0.0) {
      in.ones.rows.push_back(m.rows[e]);
      in.ones.cols.push_back(m.cols[e]);
      in.ones.values.push_back(1.0);
    }
  }
  return in;
}

struct BmfCliOptions {
  CommonOptions common;
  bmf::Options solver;
  double threshold = 0.0;
  std::string init = bmf::to_string(bmf::Options{}.init), dense_c = "auto", order = "columns-first";
  double dense_limit_mb = 1024;
  double target_error = 0.0;
  std::string checkpoint, restart;
  int checkpoint_every = 100;
};

const Registrar bmf_command{Command{
    "bmf", "Boolean matrix factorization C ~ A o B (CuBin: parallel random bit-flip search)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<BmfCliOptions>();
      o->common.rank = 20;
      o->common.iters = 10000;
      add_common_options(cmd, o->common);
      auto& s = o->solver;
      auto* thr = cmd.add_option("--threshold", o->threshold,
                                 "a value is a one when >= t (ratings, mm, dense); default: nonzero, so a pattern "
                                 "or 0/1 file reads as is");
      cmd.add_option("--batch,-L", s.batch,
                     "lines changed in parallel per half-iteration, 1..2^31-1 (CuBin's linesAtOnce; the default "
                     "proposes every line of the thesis files each iteration)")
          ->capture_default_str();
      cmd.add_option("--flip-prob", s.flip_prob,
                     "probability of flipping each bit of a proposed line, (0, 1] (default 1/8: CuBin's code)")
          ->capture_default_str();
      cmd.add_option("--temperature", s.temperature,
                     "Metropolis start temperature T0, [0, 1e12] (default 0: greedy, CuBin's default)")
          ->capture_default_str();
      cmd.add_option("--temp-step", s.temp_step,
                     "multiply T by --temp-factor every this many iterations, >= 1 (default: never)")
          ->capture_default_str();
      cmd.add_option("--temp-factor", s.temp_factor, "cooling factor, (0, 1] (default 0.99: slow cooling)")
          ->capture_default_str();
      cmd.add_option("--weight-ones", s.weight_ones,
                     "cost of a missed one (a spurious one costs 1), (0, 1e6] (default 1: the plain Hamming error)")
          ->capture_default_str();
      cmd.add_option("--init", o->init,
                     "initial factors: cover (greedy Asso-like cover of C's ones; the default: after 300 "
                     "iterations at k = 20 the search ends at E_rec 6.45e-3 on APatio and 3.95e-3 on AOffice from "
                     "it, against 7.31e-3 and 4.21e-3 from CuBin's density100, the best of the others) | dost|"
                     "density100|density (CuBin's modes 1-3) | rows (B's rows = random rows of C)")
          ->capture_default_str()
          ->check(CLI::IsMember({"dost", "density100", "density", "rows", "cover"}));
      cmd.add_option("--cover-candidates", s.cover_candidates,
                     "--init cover: candidate lines per factor line, 1..10^6 (default 64: more costs time, gains "
                     "little)")
          ->capture_default_str();
      cmd.add_option("--dense-c", o->dense_c,
                     "store C as dense bits: auto|on|off (default auto: dense up to --dense-limit-mb; same factors "
                     "either way)")
          ->capture_default_str()
          ->check(CLI::IsMember({"auto", "on", "off"}));
      cmd.add_option("--dense-limit-mb", o->dense_limit_mb,
                     "auto: dense bits up to this many MiB, [0, 2^30] (default 1024: fits any GPU)")
          ->capture_default_str();
      cmd.add_option("--order", o->order, "columns-first (B then A: CuBin's code, the default) | rows-first")
          ->capture_default_str()
          ->check(CLI::IsMember({"columns-first", "rows-first"}));
      cmd.add_option("--proposal-group", s.proposal_group,
                     "lines i with equal i / G share one flip mask, 1..2^31-1 (default 1: independent proposals)")
          ->capture_default_str();
      cmd.add_option("--target-error", o->target_error,
                     "stop when the relative error is <= this, [0, 1] (default 0: only an exact factorization)")
          ->capture_default_str();
      cmd.add_option("--every-line-changed", s.every_line_changed,
                     "no-improvement stop after (max(m,n)/L+1)*this iterations, 0..10^9 (0: off; default 1000: "
                     "CuBin's)")
          ->capture_default_str();
      cmd.add_option("--checkpoint", o->checkpoint, "save the solver state to this HDF5 file (and at the end)");
      auto* every = cmd.add_option("--checkpoint-every", o->checkpoint_every,
                                   "iterations between checkpoints (default 100: a small share of the run time)")
                        ->capture_default_str()
                        ->check(CLI::PositiveNumber);
      cmd.add_option("--restart", o->restart,
                     "continue from this checkpoint (same input, rank and options) to --iters");
      return [o, thr, every] {
        if (every->count() > 0 && o->checkpoint.empty()) throw UsageError("bmf: --checkpoint-every needs --checkpoint");
        if (!(o->dense_limit_mb >= 0.0 && o->dense_limit_mb <= double(1 << 30)))
          throw UsageError("bmf: --dense-limit-mb must be in [0, 2^30]");
        auto& s = o->solver;
        s.rank = o->common.rank;
        s.stop.max_iterations = o->common.iters;
        s.stop.target = o->target_error;
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
        const auto problem = bmf::make_problem(exec, input.ones, s);
        const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

        CheckpointMeta meta;
        if (!o->checkpoint.empty() || !o->restart.empty()) {
          meta = checkpoint_meta<std::uint64_t, Space>(
              "bmf", option_values(s),
              fingerprint(Kokkos::DefaultHostExecutionSpace{}, to_csr(Kokkos::DefaultHostExecutionSpace{}, input.ones)),
              s.rank);
          meta.precision = "bits";
        }
        const auto t1 = std::chrono::steady_clock::now();
        auto state = bmf::init(exec, problem, s);
        if (!o->restart.empty()) load_checkpoint(o->restart, state, meta);
        const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
        Observer observer = progress_printer(o->common, 100);
        if (!o->checkpoint.empty())
          observer = chain(std::move(observer), checkpoint_observer(o->checkpoint, o->checkpoint_every, state, meta));
        Report report = bmf::resume(exec, problem, s, state, observer);
        if (!o->checkpoint.empty()) {
          save_checkpoint(o->checkpoint, state, meta);
          report.info["checkpoint"] = o->checkpoint;
        }
        if (!o->restart.empty()) report.info["restart"] = o->restart;
        report.timings.set("read", read_s);
        report.timings.set("init", init_s);
        report.info["input"] = o->common.input;
        if (!o->common.output.empty()) {
          const auto A = bmf::factor_a(state), B = bmf::factor_b(state);
          if (!input.row_ids.empty()) {
            io::write_bit_factor_csv(o->common.output + "_A.csv", A, false, input.row_ids);
            io::write_bit_factor_csv(o->common.output + "_B.csv", B, true, input.col_ids);
            report.info["output"] = o->common.output + "_{A,B}.csv";
          } else {
            io::write_bit_factor_matrix_market(o->common.output + "_A.mtx", A, "kfactor bmf factor A (m x k)");
            io::write_bit_factor_matrix_market(o->common.output + "_B.mtx", B, "kfactor bmf factor B (k x n)");
            report.info["output"] = o->common.output + "_{A,B}.mtx";
          }
        }
        print_report(o->common, report);
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
                                o.stop.max_iterations = 1500;
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
