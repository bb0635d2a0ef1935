// kfactor._core's NMF functions (kfactor.NMF calls them): fit from a start
// (random, NNDSVD, custom factors or a fitted state to continue), transform
// with a fixed factor, inverse_transform, and HDF5 checkpoints of a fitted
// model. Every one calls the kfactor::nmf entry points the `kfactor nmf`
// driver calls (make_problem, init / init_with, resume, transform,
// inverse_transform; save_checkpoint / load_checkpoint), and, in a build
// with MPI, the distributed fit of `kfactor nmf --distributed` over an
// mpi4py communicator.
#include "common.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/nmf/nmf.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/distributed/nmf.hpp>

#include <mpi.h>
#endif

#include <nanobind/stl/optional.h>
#include <nanobind/stl/tuple.h>

#include <optional>
#include <string>
#include <tuple>

namespace kfactor::python {
namespace {

/// nmf::Options from the estimator's parameters (UsageError from validate()).
nmf::Options nmf_options(const nb::dict& d) {
  nmf::Options o;
  o.algorithm = nmf::parse_algorithm(option<std::string>(d, "algorithm", "alo"));
  o.rank = option<int>(d, "rank", o.rank);
  o.tile = option<int>(d, "tile", o.tile);
  o.epsilon = option<double>(d, "epsilon", o.epsilon);
  o.seed = option<std::uint64_t>(d, "seed", o.seed);
  o.stop.max_iterations = option<int>(d, "max_iter", o.stop.max_iterations);
  o.stop.tolerance = option<double>(d, "tol", o.stop.tolerance);
  o.stop.target = option<double>(d, "target", o.stop.target);
  o.init = nmf::parse_init(option<std::string>(d, "init", "random"));
  o.alpha_w = option<double>(d, "alpha_w", o.alpha_w);
  o.alpha_h = option<double>(d, "alpha_h", o.alpha_h);
  o.l1_ratio = option<double>(d, "l1_ratio", o.l1_ratio);
  o.beta_loss = nmf::parse_beta_loss(option<std::string>(d, "beta_loss", "frobenius"));
  o.missing = nmf::parse_missing(option<std::string>(d, "missing", "zero"));
  o.validate();
  return o;
}

/// Where a fit starts: a fitted state to continue (warm start), given
/// factors (init custom) or the options' init.
template <class T>
struct Start {
  std::optional<In<T, 2>> W, Ht;
  bool resume = false;
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;
};

template <class T>
Start<T> start_from(std::optional<In<T, 2>> W, std::optional<In<T, 2>> Ht, nb::handle state) {
  Start<T> s;
  s.W = std::move(W);
  s.Ht = std::move(Ht);
  if (!state.is_none()) {
    const nb::dict d = nb::cast<nb::dict>(state);
    s.resume = true;
    s.iteration = nb::cast<int>(d["iteration"]);
    s.seed = nb::cast<std::uint64_t>(d["seed"]);
    s.history = history_from(d["history"]);
  }
  return s;
}

template <class Exec, class Matrix, class T>
nb::dict fit(const Exec& exec, const Matrix& A, const nmf::Options& opt, const Start<T>& start, ProgressBridge& bridge,
             bool device_out) {
  using Mem = typename Exec::memory_space;
  std::optional<DenseMatrix<T, Mem>> W0, Ht0;
  if (start.W) W0 = dense_in<Mem>(*start.W, "W");
  if (start.Ht) Ht0 = dense_in<Mem>(*start.Ht, "H");
  if ((start.resume || opt.init == nmf::Init::custom) && !(W0 && Ht0))
    throw UsageError(start.resume ? "NMF: continuing a fit needs the fitted W and H"
                                  : "NMF: init='custom' needs W and H (fit(X, W=..., H=...))");
  if (!start.resume && opt.init != nmf::Init::custom && (W0 || Ht0))
    throw UsageError("NMF: W and H are starting factors for init='custom'");
  InputFingerprint fp;
  nmf::StateFor<Matrix> state;
  Report report;
  double norm2 = 0.0;
  without_gil(bridge, [&] {
    const auto problem = nmf::make_problem(exec, A);
    norm2 = problem.norm2;
    if constexpr (nmf::Problem<Matrix>::sparse)
      record_input(problem.A.values.data());
    else
      record_input(problem.A.data());
    fp = fingerprint(exec, A);
    if (start.resume) {
      // A fitted state continues exactly as a checkpoint restart does: its
      // fields copied as they are, the derived workspace rebuilt.
      nmf::Options as_given = opt;
      as_given.init = nmf::Init::random;
      state = nmf::init_with(exec, problem, as_given, *W0, *Ht0);
      state.iteration = start.iteration;
      state.seed = start.seed;
      state.history = start.history;
      state.reset_workspace();
    } else if (opt.init == nmf::Init::custom) {
      state = nmf::init_with(exec, problem, opt, *W0, *Ht0);
    } else {
      state = nmf::init(exec, problem, opt);
    }
    report = nmf::resume(exec, problem, opt, state, bridge.observer());
  });
  nb::dict out;
  out["W"] = array_out(state.W, device_out);
  out["Ht"] = array_out(state.Ht, device_out);
  out["iteration"] = state.iteration;
  out["seed"] = state.seed;
  out["history"] = history_dict(state.history);
  out["report"] = report_dict(report);
  out["fingerprint"] = fingerprint_tuple(fp);
  out["norm2"] = norm2;
  return out;
}

/// H for the columns of A with W fixed (the Python layer passes a new X
/// transposed, and the fitted H^T as W).
template <class Exec, class Matrix, class T>
nb::dict transform(const Exec& exec, const Matrix& A, const nmf::Options& opt, const In<T, 2>& W, bool device_out) {
  using Mem = typename Exec::memory_space;
  const auto Wv = dense_in<Mem>(W, "components");
  ProgressBridge bridge{nb::none()};
  auto result = without_gil(bridge, [&] {
    const auto problem = nmf::make_problem(exec, A);
    return nmf::transform(exec, problem, opt, Wv);
  });
  nb::dict out;
  out["Ht"] = array_out(result.state.Ht, device_out);
  out["report"] = report_dict(result.report);
  return out;
}

#if defined(KFACTOR_HAVE_MPI)
/// The fit of `kfactor nmf --distributed` on a dense X that every rank
/// holds whole: each rank keeps its blocks (distributed::nmf::make_problem),
/// and every rank gets the full factors back (gather_W, gather_Ht).
/// Collective over `comm`. The progress callable runs on every rank; the
/// run stops when it asks for a stop on any rank (the ranks agree on it
/// each iteration, as the command's progress printer does).
template <class T>
nb::dict fit_distributed(const In<T, 2>& X, const nmf::Options& opt, MPI_Comm comm, ProgressBridge& bridge) {
  namespace dn = distributed::nmf;
  using Exec = HostExec;
  using Mem = Exec::memory_space;
  const Exec exec;
  const auto A = dense_in<Mem>(X, "X");
  InputFingerprint fp;
  DenseMatrix<T, Mem> W, Ht;
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;
  Report report;
  double norm2 = 0.0;
  const Observer local = bridge.observer();
  const Observer agreed = [&](const IterationEvent& e) {
    int stop = local(e) == ObserverAction::stop ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_LOR, comm);
    return stop ? ObserverAction::stop : ObserverAction::proceed;
  };
  without_gil(bridge, [&] {
    fp = fingerprint(exec, A);
    distributed::require_same(comm, fp.checksum, "the checksum of X");
    const auto problem = distributed::agree(comm, [&] { return dn::make_problem(exec, comm, A); });
    norm2 = problem.norm2;
    auto state = distributed::agree(comm, [&] { return dn::init(exec, problem, opt); });
    report = dn::resume(exec, problem, opt, state, agreed);
    W = dn::gather_W(exec, state);
    Ht = dn::gather_Ht(exec, state);
    iteration = state.iteration;
    seed = state.seed;
    history = state.history;
  });
  nb::dict out;
  out["W"] = array_out(W);
  out["Ht"] = array_out(Ht);
  out["iteration"] = iteration;
  out["seed"] = seed;
  out["history"] = history_dict(history);
  out["report"] = report_dict(report);
  out["fingerprint"] = fingerprint_tuple(fp);
  out["norm2"] = norm2;
  return out;
}
#endif

template <class T>
void define_dtype(nb::module_& m) {
  m.def(
      "nmf_fit_dense",
      [](In<T, 2> X, const nb::dict& options, std::optional<In<T, 2>> W, std::optional<In<T, 2>> Ht, nb::handle state,
         nb::object progress, const std::string& device) {
        const auto opt = nmf_options(options);
        const auto start = start_from<T>(std::move(W), std::move(Ht), state);
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          return fit(exec, dense_in<Mem>(X, "X"), opt, start, bridge, on_cuda(X));
        });
      },
      nb::arg("X").noconvert(), nb::arg("options"), nb::arg("W").noconvert() = nb::none(),
      nb::arg("Ht").noconvert() = nb::none(), nb::arg("state") = nb::none(), nb::arg("progress") = nb::none(),
      nb::arg("device") = "cpu",
      "NMF of a dense C-contiguous X (used in place): returns W, Ht, iteration, seed, history, report, fingerprint.");
  m.def(
      "nmf_fit_csr",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols,
         const nb::dict& options, std::optional<In<T, 2>> W, std::optional<In<T, 2>> Ht, nb::handle state,
         nb::object progress, const std::string& device) {
        const auto opt = nmf_options(options);
        const auto start = start_from<T>(std::move(W), std::move(Ht), state);
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          return fit(exec, csr_in<Mem>(indptr, indices, data, cols), opt, start, bridge, on_cuda(data));
        });
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("options"), nb::arg("W").noconvert() = nb::none(), nb::arg("Ht").noconvert() = nb::none(),
      nb::arg("state") = nb::none(), nb::arg("progress") = nb::none(), nb::arg("device") = "cpu",
      "NMF of a CSR matrix (indptr int64, indices int32, canonical): as nmf_fit_dense.");
  m.def(
      "nmf_fit_distributed",
      [](In<T, 2> X, const nb::dict& options, std::int64_t comm_handle, nb::object progress,
         const std::string& device) -> nb::dict {
        const auto opt = nmf_options(options);
        if (parse_device(device).cuda) throw UsageError("NMF: comm= runs on the host; use device='cpu'");
        if (on_cuda(X)) throw UsageError("NMF: comm= takes X in host memory");
        if (opt.init == nmf::Init::custom) throw UsageError("NMF: comm= starts from init='random' or an NNDSVD");
#if defined(KFACTOR_HAVE_MPI)
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) throw UsageError("NMF: comm= needs MPI initialized (import mpi4py.MPI)");
        ProgressBridge bridge(std::move(progress));
        return fit_distributed(X, opt, MPI_Comm_f2c(static_cast<MPI_Fint>(comm_handle)), bridge);
#else
        (void)X;
        (void)comm_handle;
        (void)progress;
        throw UsageError("NMF: comm= needs a kfactor built with MPI (this build has none)");
#endif
      },
      nb::arg("X").noconvert(), nb::arg("options"), nb::arg("comm"), nb::arg("progress") = nb::none(),
      nb::arg("device") = "cpu",
      "The distributed NMF of `kfactor nmf --distributed` of a dense X every rank of the communicator (an MPI "
      "Fortran handle, mpi4py's comm.py2f()) holds whole; collective; every rank gets the results of nmf_fit_dense.");
  m.def(
      "nmf_transform_dense",
      [](In<T, 2> X, const nb::dict& options, In<T, 2> W, const std::string& device) {
        const auto opt = nmf_options(options);
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          return transform(exec, dense_in<Mem>(X, "X"), opt, W, on_cuda(X));
        });
      },
      nb::arg("X").noconvert(), nb::arg("options"), nb::arg("W").noconvert(), nb::arg("device") = "cpu",
      "H for the columns of X with W fixed (nmf::transform).");
  m.def(
      "nmf_transform_csr",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols,
         const nb::dict& options, In<T, 2> W, const std::string& device) {
        const auto opt = nmf_options(options);
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          return transform(exec, csr_in<Mem>(indptr, indices, data, cols), opt, W, on_cuda(data));
        });
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("options"), nb::arg("W").noconvert(), nb::arg("device") = "cpu", "nmf_transform_dense for CSR input.");
  m.def(
      "nmf_inverse_transform",
      [](In<T, 2> W, In<T, 2> Ht, const std::string& device) {
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto Wv = dense_in<Mem>(W, "W");
          const auto Hv = dense_in<Mem>(Ht, "H");
          ProgressBridge bridge{nb::none()};
          const auto A = without_gil(bridge, [&] { return nmf::inverse_transform(exec, Wv, Hv); });
          return array_out(A, on_cuda(W));
        });
      },
      nb::arg("W").noconvert(), nb::arg("Ht").noconvert(), nb::arg("device") = "cpu", "W H (nmf::inverse_transform).");
  m.def(
      "nmf_save",
      [](const std::string& path, const nb::dict& options, In<T, 2> W, In<T, 2> Ht, int iteration, std::uint64_t seed,
         nb::handle history, nb::handle fingerprint) {
        const auto opt = nmf_options(options);
        nmf::State<T, Kokkos::HostSpace> state;
        state.W = dense_in<Kokkos::HostSpace>(W, "W");
        state.Ht = dense_in<Kokkos::HostSpace>(Ht, "H");
        save_model<T>(path, "nmf", state, option_values(opt), opt.rank, iteration, seed, history, fingerprint);
      },
      nb::arg("path"), nb::arg("options"), nb::arg("W").noconvert(), nb::arg("Ht").noconvert(), nb::arg("iteration"),
      nb::arg("seed"), nb::arg("history"), nb::arg("fingerprint"),
      "Saves a fitted NMF as the HDF5 checkpoint `kfactor nmf --checkpoint` writes.");
}

}  // namespace

void register_nmf(nb::module_& m) {
  define_dtype<double>(m);
  define_dtype<float>(m);
  m.def(
      "nmf_load",
      [](const std::string& path) {
        return load_model<nmf::State>(path, "nmf", "kfactor.NMF", [](nb::dict& out, const auto& state) {
          out["W"] = array_out(state.W);
          out["Ht"] = array_out(state.Ht);
        });
      },
      nb::arg("path"),
      "Reads an NMF checkpoint (written by save or by `kfactor nmf --checkpoint`): factors, iteration, seed, history, "
      "the options it was fitted with and the input's fingerprint.");
}

}  // namespace kfactor::python
