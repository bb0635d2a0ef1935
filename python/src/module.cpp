// kfactor._core: the module's life cycle (Kokkos initialized once on import,
// finalized once at interpreter exit), the translation of kfactor's errors to
// Python exceptions, the build facts, and the helpers of common.hpp.
#include "common.hpp"

#include <kfactor/core/build_info.hpp>

#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cctype>
#include <new>
#include <string>
#include <tuple>

namespace kfactor::python {

void register_nmf(nb::module_& m);
void register_als(nb::module_& m);
void register_bmf(nb::module_& m);
void register_mnmf(nb::module_& m);
void register_sddmm(nb::module_& m);
void register_checkpoint(nb::module_& m);

std::atomic<std::uintptr_t>& last_input_address() {
  static std::atomic<std::uintptr_t> address{0};
  return address;
}

std::mutex& kokkos_mutex() {
  static std::mutex m;
  return m;
}

Device parse_device(const std::string& name) {
  std::string lower = name;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "cpu") return {false};
  if (lower == "cuda" || lower.rfind("cuda:", 0) == 0) {
#if defined(KOKKOS_ENABLE_CUDA)
    if (lower.size() > 5) {
      const std::string id = lower.substr(5);
      if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError("device '" + name + "': the device id must be a number, as in 'cuda:1'");
      if (std::stoi(id) != Kokkos::device_id())
        throw UsageError("device '" + name + "': kfactor runs on CUDA device " + std::to_string(Kokkos::device_id()) +
                         " in this process (set CUDA_VISIBLE_DEVICES or KOKKOS_DEVICE_ID before importing kfactor)");
    }
    return {true};
#else
    const auto b = build_info();
    throw UsageError("device '" + name + "': this kfactor build has no CUDA (Kokkos " + b.kokkos_version +
                     " with execution spaces " + b.execution_spaces + "); use device='cpu'");
#endif
  }
  throw UsageError("device must be 'cpu', 'cuda' or 'cuda:N', got '" + name + "'");
}

Observer ProgressBridge::observer() {
  return [this](const IterationEvent& e) {
    nb::gil_scoped_acquire acquire;
    if (failed_) return ObserverAction::stop;
    // Ctrl-C reaches a long fit here, between iterations.
    if (PyErr_CheckSignals() != 0) {
      failed_ = true;
      return ObserverAction::stop;
    }
    if (!progress_.is_valid() || progress_.is_none()) return ObserverAction::proceed;
    try {
      const nb::object stop = progress_(e.iteration, e.seconds, e.metrics ? metrics_dict(*e.metrics) : nb::dict());
      return nb::cast<bool>(stop) ? ObserverAction::stop : ObserverAction::proceed;
    } catch (nb::python_error& err) {
      err.restore();
      failed_ = true;
      return ObserverAction::stop;
    }
  };
}

void ProgressBridge::rethrow() const {
  if (failed_ && PyErr_Occurred()) throw nb::python_error();
}

nb::dict metrics_dict(const Metrics& m) {
  nb::dict d;
  for (const auto& [name, value] : m.items) d[name.c_str()] = value;
  return d;
}

nb::dict history_dict(const MetricHistory& h) {
  nb::dict d;
  nb::list names;
  for (const auto& n : h.names) names.append(n);
  d["names"] = names;
  d["iterations"] = array_out(h.iterations);
  std::vector<double> flat;
  flat.reserve(h.rows.size() * h.names.size());
  for (const auto& row : h.rows) flat.insert(flat.end(), row.begin(), row.end());
  const Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(
      flat.data(), h.rows.size(), h.names.size());
  d["values"] = array_out(v);
  return d;
}

MetricHistory history_from(nb::handle h) {
  MetricHistory out;
  if (h.is_none()) return out;
  const nb::dict d = nb::cast<nb::dict>(h);
  out.names = nb::cast<std::vector<std::string>>(d["names"]);
  const auto its = nb::cast<In<std::int64_t, 1>>(d["iterations"]);
  const auto vals = nb::cast<In<double, 2>>(d["values"]);
  if (vals.shape(0) != its.shape(0) || (its.shape(0) > 0 && vals.shape(1) != out.names.size()))
    throw InputError("the metric history's iterations, names and values differ in size");
  for (std::size_t r = 0; r < its.shape(0); ++r) {
    out.iterations.push_back(int(its.data()[r]));
    out.rows.emplace_back(vals.data() + r * vals.shape(1), vals.data() + (r + 1) * vals.shape(1));
  }
  return out;
}

nb::tuple fingerprint_tuple(const InputFingerprint& f) { return nb::make_tuple(f.rows, f.cols, f.nnz, f.checksum); }

InputFingerprint fingerprint_from(nb::handle h) {
  InputFingerprint f;
  if (h.is_none()) return f;
  std::tie(f.rows, f.cols, f.nnz, f.checksum) =
      nb::cast<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::uint64_t>>(h);
  return f;
}

nb::dict report_dict(const Report& r) {
  nb::dict d;
  d["iterations"] = r.iterations;
  d["seconds"] = r.seconds;
  d["stop_reason"] = r.stop_reason;
  d["backend"] = r.backend;
  d["metrics"] = metrics_dict(r.metrics);
  d["timings"] = metrics_dict(r.timings);
  nb::dict info;
  for (const auto& [k, v] : r.info) info[k.c_str()] = v;
  d["info"] = info;
  return d;
}

namespace {

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const UsageError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const InputError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const OutOfMemory& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const RuntimeFailure& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

/// Kokkos::initialize once per process (a host application may have done it
/// already; then it also finalizes). Threads: Kokkos' own rules, i.e.
/// OMP_NUM_THREADS or KOKKOS_NUM_THREADS from the environment.
bool initialize_kokkos() {
  if (Kokkos::is_initialized() || Kokkos::is_finalized()) return false;
  Kokkos::InitializationSettings settings;
  settings.set_disable_warnings(true);
  Kokkos::initialize(settings);
  return true;
}

}  // namespace

}  // namespace kfactor::python

NB_MODULE(_core, m) {
  using namespace kfactor::python;
  m.doc() = "kfactor's compiled core: the solver entry points the estimators in kfactor call";
  nb::register_exception_translator(translate);
  try {
    const bool owner = initialize_kokkos();
    // Finalize at interpreter exit, after the arrays the user still holds
    // were released: results are numpy copies, not Kokkos allocations, so
    // nothing of Kokkos outlives the module but device results (DLPack),
    // which Python frees before atexit on a normal exit.
    if (owner)
      nb::module_::import_("atexit").attr("register")(nb::cpp_function([] {
        if (Kokkos::is_initialized() && !Kokkos::is_finalized()) Kokkos::finalize();
      }));
  } catch (const std::exception& e) {
    throw nb::import_error((std::string("kfactor: cannot initialize Kokkos: ") + e.what()).c_str());
  }

  m.def(
      "build_info",
      [] {
        const auto b = kfactor::build_info();
        nb::dict d;
        d["version"] = b.version;
        d["kokkos_version"] = b.kokkos_version;
        d["execution_spaces"] = b.execution_spaces;
        d["default_space"] = b.default_space;
        d["kokkos_kernels"] = b.kokkos_kernels;
        d["cblas"] = b.cblas;
        d["mpi"] = b.mpi;
        d["hdf5"] = b.hdf5;
#if defined(KOKKOS_ENABLE_CUDA)
        d["cuda"] = true;
#else
        d["cuda"] = false;
#endif
        d["threads"] = HostExec().concurrency();
        return d;
      },
      "What this build has: version, Kokkos version and spaces, BLAS, MPI, HDF5, CUDA, host threads.");
  m.def(
      "check_device", [](const std::string& device) { (void)parse_device(device); }, nb::arg("device"),
      "Raises ValueError unless `device` names a device this build can run on.");
  m.def(
      "_last_input_address", [] { return last_input_address().load(); },
      "Address of the last input matrix a solver received (tests check it equals the caller's buffer).");
  m.def(
      "_raise",
      [](const std::string& kind, const std::string& what) {
        if (kind == "usage") throw kfactor::UsageError(what);
        if (kind == "input") throw kfactor::InputError("input.mtx", 7, what);
        if (kind == "runtime") throw kfactor::RuntimeFailure(what);
        if (kind == "oom") throw kfactor::OutOfMemory(what);
        if (kind == "alloc") throw std::bad_alloc();
        throw kfactor::UsageError("unknown error kind '" + kind + "'");
      },
      nb::arg("kind"), nb::arg("what"), "Throws a kfactor error of `kind` (tests of the exception mapping).");

  register_nmf(m);
  register_als(m);
  register_bmf(m);
  register_mnmf(m);
  register_sddmm(m);
  register_checkpoint(m);
}
