// `kfactor nmf`: non-negative matrix factorization (HALS, ALO-NMF, MU)
// of a dense or sparse non-negative matrix; writes W (V x K) and H (K x D).
//
// Input through kfactor::io (any --format; Matrix Market arrays and `dense`
// files run the dense solver, everything else CSR). Output: PREFIX_W.mtx and
// PREFIX_H.mtx (Matrix Market arrays); for a ratings input PREFIX_W.csv
// (users x K, original user ids) and PREFIX_Ht.csv (items x K = H^T,
// original item ids), written as one output set (a `kfactor-set` stamp line
// in each, io::OutputSet). No output and no checkpoint may replace the input
// (or an output the restart checkpoint): every target is checked before the
// run (io::check_run_files). --checkpoint/--restart save and continue the solver
// state through kfactor/io/checkpoint.hpp; a restarted run to --iters gives
// the same factors, bit for bit, as an uninterrupted one. The checkpoint
// records kfactor::option_values(options) and load_checkpoint refuses a
// restart whose options differ, naming the option: this driver only parses,
// calls the library (nmf::make_problem, init, resume) and prints.
//
// --distributed (under `mpiexec -n P kfactor nmf --distributed ...`): each
// rank reads only its part of a sparse input (distributed::read_rows: a
// line-aligned byte range of a text file, or its rows of an HDF5 CSR file;
// errors agreed on every rank; a dense input is read whole by every rank),
// keeps its blocks (kfactor/distributed/nmf.hpp: --grid picks the 1D layout
// or a PRxPC processor grid, by default the one of least modelled
// communication; make_problem moves the entries there) and runs the same
// epochs;
// rank 0 prints progress, the report and writes the outputs. Checkpoints hold
// the full factors in the single-rank layout (one file, written collectively
// or gathered to rank 0), so a run restarts on any number of ranks, or
// without --distributed, and vice versa.
#include "cli.hpp"

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/write.hpp>
#include <kfactor/nmf/nmf.hpp>

#include <Kokkos_Core.hpp>

#include <kfactor/config.hpp>
#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/checkpoint.hpp>
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/nmf.hpp>
#include <kfactor/distributed/read.hpp>

#include <mpi.h>
#endif

#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kfactor::cli {
namespace {

/// What read_nmf_input returns: host triplets, whether the file was dense
/// (Matrix Market array or a `dense` file), and original ids for ratings.
struct NmfInput {
  CooMatrix<double> coo;
  bool dense = false;
  bool ratings = false;
  std::vector<std::int64_t> user_ids, item_ids;
};

/// How nmf reads its input: a negative value is refused by the reader, where
/// it is (its line, or its entry of an HDF5 file).
io::ReadOptions read_options() {
  io::ReadOptions ro;
  ro.non_negative = true;
  return ro;
}

NmfInput read_nmf_input(const CommonOptions& common) {
  NmfInput out;
  io::ReadInfo info;
  auto r = io::read_input<double>(common.input, io::parse_format(common.format), read_options(), &info);
  out.coo = std::move(r.matrix);
  out.user_ids = std::move(r.user_ids);
  out.item_ids = std::move(r.item_ids);
  out.ratings = !out.user_ids.empty();
  out.dense = info.format == io::Format::dense ||
              (info.format == io::Format::matrix_market && info.detail.find("array") != std::string::npos);
  return out;
}

struct NmfCliOptions {
  CommonOptions common;
  std::string algorithm = "alo";
  double tol = 0.0;
  double target = std::nan("");
  int tile = 0;
  double eps = 0.0;
  int every = 1;
  std::string checkpoint;
  int checkpoint_every = 10;
  std::string restart;
  bool distributed = false;
  std::string grid = "auto";
  std::string init = "random";
  std::string w0, h0, fix_w;
  double alpha_w = 0.0, alpha_h = 0.0, l1_ratio = 0.0;
  std::string beta_loss = "frobenius";
  std::string missing = "zero";
};

/// nmf::Options from the command line; UsageError (exit 2) naming the
/// option and its range for a value outside it (nmf::Options::validate: the
/// parse already checked each option's own range, this the tile against the
/// rank).
nmf::Options make_options(const NmfCliOptions& o) {
  nmf::Options opt;
  opt.algorithm = nmf::parse_algorithm(o.algorithm);
  opt.rank = o.common.rank;
  opt.stop.max_iterations = o.common.iters;
  opt.stop.tolerance = o.tol;
  opt.stop.target = o.target;
  opt.tile = o.tile;
  opt.epsilon = o.eps;
  opt.seed = o.common.seed;
  opt.init = nmf::parse_init(o.init);
  opt.alpha_w = o.alpha_w;
  opt.alpha_h = o.alpha_h;
  opt.l1_ratio = o.l1_ratio;
  opt.beta_loss = nmf::parse_beta_loss(o.beta_loss);
  opt.missing = nmf::parse_missing(o.missing);
  opt.fix_w = !o.fix_w.empty();
  if (opt.init == nmf::Init::custom && (o.w0.empty() || o.h0.empty()))
    throw UsageError("nmf: --init custom needs --w0 FILE and --h0 FILE (the starting W and H)");
  if (opt.init != nmf::Init::custom && (!o.w0.empty() || !o.h0.empty()))
    throw UsageError("nmf: --w0 and --h0 need --init custom");
  if (opt.fix_w && opt.init != nmf::Init::random)
    throw UsageError("nmf: --fix-w starts H at sqrt(mean(A) / K); --init " + o.init + " does not apply");
  opt.validate();
  return opt;
}

/// A factor file as a dense rows x cols device matrix: a Matrix Market array
/// (what --output writes) or any other matrix file kfactor reads, checked
/// against the shape the run needs (InputError naming the file). `transposed`
/// reads a K x D H file as D x K Ht.
template <class T, class Exec>
DenseMatrix<T, typename Exec::memory_space> read_factor(const Exec& exec, const std::string& path, std::int64_t rows,
                                                        std::int64_t cols, bool transposed, const char* what) {
  const std::string text = io::read_file(path);
  const auto coo = io::parse_matrix<double>(text, path, io::detect_format(text, path));
  const std::int64_t fr = transposed ? cols : rows, fc = transposed ? rows : cols;
  if (coo.num_rows != fr || coo.num_cols != fc)
    throw InputError(path + ": " + what + " is " + std::to_string(coo.num_rows) + " x " + std::to_string(coo.num_cols) +
                     "; this run needs " + std::to_string(fr) + " x " + std::to_string(fc));
  DenseMatrix<T, typename Exec::memory_space> X("kfactor::nmf::factor", rows, cols);
  auto h = Kokkos::create_mirror_view(X);
  for (std::size_t e = 0; e < coo.values.size(); ++e) {
    const auto i = coo.rows[e], j = coo.cols[e];
    if (transposed)
      h(j, i) = T(coo.values[e]);
    else
      h(i, j) = T(coo.values[e]);
  }
  Kokkos::deep_copy(X, h);
  return X;
}

template <class T, class Exec>
CsrMatrix<T, typename Exec::memory_space> input_csr(const Exec& exec, const NmfInput& input) {
  CooMatrix<T> coo;
  coo.num_rows = input.coo.num_rows;
  coo.num_cols = input.coo.num_cols;
  coo.rows = input.coo.rows;
  coo.cols = input.coo.cols;
  coo.values.assign(input.coo.values.begin(), input.coo.values.end());
  return to_csr(exec, coo);
}

/// The factor files --output writes (none without it): PREFIX_W.csv and
/// PREFIX_Ht.csv for ratings, else PREFIX_W.mtx and PREFIX_H.mtx.
struct OutputNames {
  std::string w, h, h_member;
};
OutputNames output_names(const NmfCliOptions& o, const NmfInput& input) {
  if (input.ratings) return {o.common.output + "_W.csv", o.common.output + "_Ht.csv", "Ht"};
  return {o.common.output + "_W.mtx", o.common.output + "_H.mtx", "H"};
}

/// Refuses, before the run, an output or checkpoint that would replace the
/// input, an output over the restart checkpoint, and two targets that are
/// one file (UsageError naming both paths).
void check_files(const NmfCliOptions& o, const NmfInput& input) {
  io::RunFiles files;
  files.inputs = {o.common.input};
  for (const auto* f : {&o.w0, &o.h0, &o.fix_w})
    if (!f->empty()) files.inputs.push_back(*f);
  if (!o.common.output.empty()) {
    const auto names = output_names(o, input);
    files.outputs = {names.w, names.h};
  }
  files.checkpoint = o.checkpoint;
  files.restart = o.restart;
  io::check_run_files(files);
}

/// PREFIX_W / PREFIX_H(t) files from the full factors, as one output set.
template <class T, class Mem>
void write_outputs(const NmfCliOptions& o, const NmfInput& input, const DenseMatrix<T, Mem>& W,
                   const DenseMatrix<T, Mem>& Ht, Report& report) {
  if (o.common.output.empty()) return;
  const auto names = output_names(o, input);
  std::vector<std::string> protected_files{o.common.input};
  if (!o.restart.empty()) protected_files.push_back(o.restart);
  for (const auto* f : {&o.w0, &o.h0, &o.fix_w})
    if (!f->empty()) protected_files.push_back(*f);
  const io::OutputSet set(protected_files, {"W", names.h_member});
  report.info["W"] = names.w;
  report.info[names.h_member] = names.h;
  if (input.ratings) {
    io::write_factor(names.w, W, input.user_ids, {}, set["W"]);
    io::write_factor(names.h, Ht, input.item_ids, {}, set[names.h_member]);
  } else {
    // H (K x D) is Ht (D x K, row-major) read as LayoutLeft: same memory.
    const Kokkos::View<const T**, Kokkos::LayoutLeft, Mem, Kokkos::MemoryTraits<Kokkos::Unmanaged>> H(
        Ht.data(), Ht.extent(1), Ht.extent(0));
    io::write_matrix_market_array(names.w, W, "kfactor nmf W (V x K)", set["W"]);
    io::write_matrix_market_array(names.h, H, "kfactor nmf H (K x D)", set[names.h_member]);
  }
}

template <class T>
Report run_nmf(const NmfCliOptions& o, const NmfInput& input) {
  using Exec = Kokkos::DefaultExecutionSpace;
  const Exec exec;
  const nmf::Options opt = make_options(o);
  const auto csr = input_csr<T>(exec, input);

  auto run = [&](const auto& A) {
    auto meta = checkpoint_meta<T, Exec>("nmf", option_values(opt), fingerprint(exec, A), opt.rank);
    meta.input_files = {o.common.input};  // a checkpoint may not replace the input
    const auto problem = nmf::make_problem(exec, A);
    auto state = [&] {
      if (opt.fix_w)
        return nmf::init_fixed_w(exec, problem, opt,
                                 read_factor<T>(exec, o.fix_w, problem.rows, opt.rank, false, "W (--fix-w)"));
      if (opt.init == nmf::Init::custom)
        return nmf::init_with(exec, problem, opt, read_factor<T>(exec, o.w0, problem.rows, opt.rank, false, "W0"),
                              read_factor<T>(exec, o.h0, problem.cols, opt.rank, true, "H0"));
      return nmf::init(exec, problem, opt);
    }();
    std::string setup_change;
    if (!o.restart.empty()) setup_change = warn_restart(load_checkpoint(o.restart, state, meta).setup_change);
    Observer observer = progress_printer(o.common, o.every);
    if (!o.checkpoint.empty())
      observer = chain(std::move(observer), checkpoint_observer(o.checkpoint, o.checkpoint_every, state, meta));
    Report report = nmf::resume(exec, problem, opt, state, observer);
    if (!o.checkpoint.empty()) {
      save_checkpoint(o.checkpoint, state, meta);
      report.info["checkpoint"] = o.checkpoint;
    }
    if (!o.restart.empty()) note_restart(report, o.restart, setup_change);
    write_outputs(o, input, state.W, state.Ht, report);
    report.info["input_file"] = o.common.input;
    return report;
  };
  if (input.dense) return run(to_dense(exec, csr));
  return run(csr);
}

#if defined(KFACTOR_HAVE_MPI)
/// --distributed from a problem every rank holds its blocks of; `input`
/// carries the ids for the outputs. The report matters on rank 0.
template <class T, class Problem>
Report solve_distributed(const NmfCliOptions& o, const NmfInput& input, const Problem& problem,
                         const InputFingerprint& fp, MPI_Comm comm) {
  using Exec = Kokkos::DefaultExecutionSpace;
  namespace dn = distributed::nmf;
  const Exec exec;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const nmf::Options opt = make_options(o);
  auto meta = checkpoint_meta<T, Exec>("nmf", option_values(opt), fp, opt.rank);
  meta.input_files = {o.common.input};  // a checkpoint may not replace the input
  auto state = distributed::agree(comm, [&] { return dn::init(exec, problem, opt); });
  std::string setup_change;
  if (!o.restart.empty())
    setup_change = warn_restart(load_checkpoint(comm, o.restart, state, meta, state.row_blocks()).setup_change);
  // Collective: every rank calls it each iteration so that all ranks stop
  // together on SIGINT/SIGTERM; rank 0 prints.
  Observer observer = progress_printer(o.common, o.every, comm);
  if (!o.checkpoint.empty())
    observer = chain(std::move(observer),
                     distributed::checkpoint_observer(comm, o.checkpoint, o.checkpoint_every, state, meta));
  Report report = dn::resume(exec, problem, opt, state, observer);
  if (!o.checkpoint.empty()) {
    save_checkpoint(comm, o.checkpoint, state, meta, state.row_blocks());
    report.info["checkpoint"] = o.checkpoint;
  }
  if (!o.restart.empty()) note_restart(report, o.restart, setup_change);
  const auto W = dn::gather_W(exec, state);
  const auto Ht = dn::gather_Ht(exec, state);
  distributed::agree(comm, [&] {
    if (rank == 0) write_outputs(o, input, W, Ht, report);
  });
  report.info["input_file"] = o.common.input;
  return report;
}

/// --distributed, dense input: every rank reads it whole and keeps its blocks.
template <class T>
Report run_nmf_distributed(const NmfCliOptions& o, const NmfInput& input, MPI_Comm comm) {
  using Exec = Kokkos::DefaultExecutionSpace;
  namespace dn = distributed::nmf;
  const Exec exec;
  const auto A = to_dense(exec, input_csr<T>(exec, input));
  const auto fp = fingerprint(exec, A);
  distributed::require_same(comm, fp.checksum, "the checksum of " + o.common.input);
  const auto problem =
      distributed::agree(comm, [&] { return dn::make_problem(exec, comm, A, dn::parse_grid(o.grid)); });
  return solve_distributed<T>(o, input, problem, fp, comm);
}

/// --distributed, sparse input: each rank parses only its part of the file
/// (distributed::read_rows: a byte range of text, or an HDF5 CSR hyperslab);
/// make_problem moves the entries to their blocks. The same problem, bit for
/// bit, as from the whole file. `ids` carries the id maps for the outputs.
template <class T>
Report run_nmf_distributed(const NmfCliOptions& o, const NmfInput& ids, const distributed::RowSlice<double>& rows,
                           MPI_Comm comm) {
  using Exec = Kokkos::DefaultExecutionSpace;
  namespace dn = distributed::nmf;
  const Exec exec;
  const auto problem = distributed::agree(
      comm, [&] { return dn::make_problem(exec, comm, distributed::convert_values<T>(rows), dn::parse_grid(o.grid)); });
  return solve_distributed<T>(o, ids, problem, dn::fingerprint(exec, problem), comm);
}
#endif

void run_command(const NmfCliOptions& o) {
  if (!o.distributed) {
    if (o.grid != "auto") throw UsageError("nmf: --grid needs --distributed");
    const NmfInput input = read_nmf_input(o.common);
    check_files(o, input);
    const Report r = o.common.precision == "float" ? run_nmf<float>(o, input) : run_nmf<double>(o, input);
    print_report(o.common, r);
    return;
  }
#if defined(KFACTOR_HAVE_MPI)
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const io::Format format = io::parse_format(o.common.format);
  const bool single = o.common.precision == "float";
  Report r;
  if (distributed::probe_input(comm, o.common.input, format, read_options()).dense) {
    const NmfInput input = distributed::agree(comm, [&] {
      auto in = read_nmf_input(o.common);
      check_files(o, in);
      return in;
    });
    r = single ? run_nmf_distributed<float>(o, input, comm) : run_nmf_distributed<double>(o, input, comm);
  } else {
    const auto rows = distributed::read_rows<double>(comm, o.common.input, format, read_options());
    NmfInput ids;
    ids.user_ids = rows.row_ids;
    ids.item_ids = rows.col_ids;
    ids.ratings = !ids.user_ids.empty();
    distributed::agree(comm, [&] { check_files(o, ids); });
    r = single ? run_nmf_distributed<float>(o, ids, rows, comm) : run_nmf_distributed<double>(o, ids, rows, comm);
  }
  if (rank == 0) print_report(o.common, r);
#else
  throw UsageError("nmf: --distributed needs kfactor built with MPI");
#endif
}

const Registrar nmf_command{Command{
    "nmf", "non-negative matrix factorization A ~ W H (HALS, ALO-NMF, multiplicative updates)",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<NmfCliOptions>();
      add_common_options(cmd, o->common, nmf::Options::rank_range);
      cmd.add_option("-a,--algorithm", o->algorithm,
                     "hals|alo|mu. Default alo: the same iterates as hals (to rounding) at GEMM speed; hals is the "
                     "column-by-column reference, mu (Lee-Seung) is slower to converge")
          ->capture_default_str()
          ->check(CLI::IsMember({"hals", "alo", "mu"}));
      add_number(cmd, "--tol", o->tol,
                 "stop when the relative error changes by <= tol * previous. Default 0 (never): --iters alone "
                 "decides, so runs are comparable epoch for epoch",
                 nmf::Options::tolerance_range);
      add_number(cmd, "--target", o->target,
                 "stop once the relative error is <= target. Default none: --iters alone decides",
                 nmf::Options::target_range);
      add_number(cmd, "--tile", o->tile,
                 "ALO tile size T, at most --rank. Default 0: on a CPU up to --rank 64 the rank (one tile: "
                 "the sweep of hals, one launch per half); otherwise the paper's 8/16/16/32/64 for "
                 "K = 64..1024, else the power of two nearest its section-5 model (GEMM depth vs. cache reuse)",
                 nmf::Options::tile_range);
      add_number(cmd, "--eps", o->eps,
                 "floor of W and H (hals, alo) and MU denominator guard. Default 0: machine epsilon of "
                 "--precision, the smallest floor that keeps every entry positive",
                 nmf::Options::epsilon_range);
      add_number(cmd, "--every", o->every,
                 "print a progress line every N iterations. Default 1: every epoch (use more for long runs)",
                 every_range);
      cmd.add_option("--init", o->init,
                     "random|nndsvd|nndsvda|nndsvdar|custom (scikit-learn's init). Default random: uniform W, H "
                     "scaled to A; nndsvd* start from a randomized rank-K SVD (nndsvda: no zeros, best for mu), "
                     "custom from --w0 and --h0")
          ->capture_default_str()
          ->check(CLI::IsMember({"random", "nndsvd", "nndsvda", "nndsvdar", "custom"}));
      cmd.add_option("--w0", o->w0, "with --init custom: the starting W (V x K Matrix Market file). Default none");
      cmd.add_option("--h0", o->h0, "with --init custom: the starting H (K x D Matrix Market file). Default none");
      add_number(cmd, "--alpha-w", o->alpha_w,
                 "penalty of W (scikit-learn's alpha_W, times D = cols): l1_ratio of it on |W|_1, the rest on "
                 "0.5 ||W||_F^2. Default 0: no penalty",
                 nmf::Options::alpha_range);
      add_number(cmd, "--alpha-h", o->alpha_h,
                 "penalty of H (scikit-learn's alpha_H, times V = rows). Default 0: no penalty (scikit-learn's "
                 "default is alpha_H = alpha_W: pass both)",
                 nmf::Options::alpha_range);
      add_number(cmd, "--l1-ratio", o->l1_ratio,
                 "the l1 share of the penalties (scikit-learn's l1_ratio). Default 0: l2 only",
                 nmf::Options::l1_ratio_range);
      cmd.add_option("--beta-loss", o->beta_loss,
                     "frobenius|kl|is (scikit-learn's beta_loss; kl and is need --algorithm mu, is needs every "
                     "entry positive). Default frobenius")
          ->capture_default_str()
          ->check(CLI::IsMember({"frobenius", "kl", "is"}));
      cmd.add_option("--missing", o->missing,
                     "zero|absent: what unstored entries of a sparse input are. Default zero (the matrix's zeros); "
                     "absent fits the stored entries only")
          ->capture_default_str()
          ->check(CLI::IsMember({"zero", "absent"}));
      cmd.add_option("--fix-w", o->fix_w,
                     "keep W from FILE (a V x K factor file, e.g. an earlier --output's PREFIX_W.mtx) and fit H "
                     "only (scikit-learn's transform). Default none");
      cmd.add_option("--checkpoint", o->checkpoint,
                     "save the solver state to FILE (HDF5) every --checkpoint-every iterations and at the end. "
                     "Default none");
      add_number(cmd, "--checkpoint-every", o->checkpoint_every,
                 "iterations between checkpoints. Default 10: a lost run repeats at most 10 epochs, while writing "
                 "the factors stays a small share of the time",
                 checkpoint_every_range);
      cmd.add_option("--restart", o->restart,
                     "continue from checkpoint FILE up to --iters (same input, --rank, --precision; a different "
                     "--algorithm, --tile, --eps or --seed is refused, naming it; --iters, --tol and --target may "
                     "change). Default none");
      cmd.add_flag(
          "--distributed", o->distributed,
          "run over the ranks of MPI_COMM_WORLD (mpiexec -n P kfactor nmf --distributed ...): "
          "nnz-balanced blocks (see --grid), same iterates as one rank (bit for bit on one rank, to reduction-order "
          "rounding on several). Default off");
      cmd.add_option("--grid", o->grid,
                     "with --distributed: PRxPC (a processor grid of PR * PC = ranks: each rank holds one block of "
                     "A and exchanges factor rows within its grid row and column), 1d (each rank holds rows and "
                     "columns of A and all-gathers whole factors) or auto. Default auto: the layout of least "
                     "modelled communication per epoch (the report's info grid says which)")
          ->capture_default_str();
      return [o] { run_command(*o); };
    }}};

/// Demo: a planted exact rank-6 non-negative 200 x 150 matrix (half the planted
/// entries zero), ALO in double, until the relative error is below 1e-4.
const Registrar nmf_demo{Demo{"nmf", [](std::uint64_t seed) {
                                using Exec = Kokkos::DefaultExecutionSpace;
                                const Exec exec;
                                const int V = 200, D = 150, K = 6;
                                const auto planted = planted_nonnegative(V, D, K, 0.5, seed);
                                DenseMatrix<double, Exec::memory_space> A("A", V, D);
                                auto h = Kokkos::create_mirror_view(A);
                                for (int i = 0; i < V; ++i)
                                  for (int j = 0; j < D; ++j) h(i, j) = planted.A[i * D + j];
                                Kokkos::deep_copy(A, h);
                                nmf::Options o;
                                o.algorithm = nmf::Algorithm::alo;
                                o.rank = K;
                                o.stop.max_iterations = 1000;
                                o.stop.target = 1e-4;
                                o.seed = seed;
                                return nmf::solve(exec, nmf::make_problem(exec, A), o).report;
                              }}};

}  // namespace
}  // namespace kfactor::cli
