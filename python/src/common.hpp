#pragma once
// What every part of the extension kfactor._core shares: the execution space
// a call runs in (device="cpu" | "cuda" | "cuda:N"), arrays in and out
// (numpy and DLPack buffers wrapped as unmanaged Kokkos Views, no copy where
// the layout allows), options read from the dict the Python estimators
// pass, the library's Observer as a Python callback, and the Report and
// MetricHistory as dicts. The functions of each solver family (nmf.cpp,
// als.cpp, ...) call the same library entry points as drivers/ and hold no
// algorithm of their own.
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kfactor::python {

namespace nb = nanobind;

/// The host execution space every build has (OpenMP in the dev environment).
using HostExec = Kokkos::DefaultHostExecutionSpace;

/// A read-only C-contiguous array on any device (numpy on the host, or a
/// DLPack array from cupy or torch on a GPU). noconvert() at the binding
/// keeps a wrong dtype or layout from being copied silently: the Python
/// layer converts where scikit-learn's conventions allow it.
template <class T, std::size_t Rank>
using In = nb::ndarray<const T, nb::ndim<Rank>, nb::c_contig>;

/// Where a call runs: parse_device("cpu" | "cuda" | "cuda:N"). ValueError
/// (UsageError) for another name, for "cuda" on a build without a CUDA
/// Kokkos (naming the build's spaces), and for a device id other than the
/// one Kokkos was initialized on.
struct Device {
  bool cuda = false;
};
Device parse_device(const std::string& name);

/// Runs f(exec) with the execution space `device` names.
template <class F>
decltype(auto) on_device(const std::string& device, F&& f) {
#if defined(KOKKOS_ENABLE_CUDA)
  if (parse_device(device).cuda) return f(Kokkos::Cuda{});
#else
  (void)parse_device(device);
#endif
  return f(HostExec{});
}

/// The data address of the last input matrix a solver received (its
/// Problem's own view), for the tests that check inputs are not copied.
std::atomic<std::uintptr_t>& last_input_address();
template <class T>
void record_input(const T* p) {
  last_input_address() = reinterpret_cast<std::uintptr_t>(p);
}

/// True when the array's memory is on a CUDA device.
template <class A>
bool on_cuda(const A& a) {
  return a.device_type() == nb::device::cuda::value;
}

/// An unmanaged view of `a`'s memory when it lives in Mem's space (the
/// array is used in place), else a copy in Mem. UsageError for a device
/// array given to a host run.
template <class Mem, class T>
DenseMatrix<T, Mem> dense_in(const In<T, 2>& a, const char* what) {
  const bool device = on_cuda(a);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    if (device) throw UsageError(std::string(what) + " is a CUDA array; pass device='cuda' (or copy it to the host)");
    return DenseMatrix<T, Mem>(const_cast<T*>(a.data()), a.shape(0), a.shape(1));
  } else {
    if (device) return DenseMatrix<T, Mem>(const_cast<T*>(a.data()), a.shape(0), a.shape(1));
    const Kokkos::View<const T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
        a.data(), a.shape(0), a.shape(1));
    DenseMatrix<T, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(what)), a.shape(0), a.shape(1));
    Kokkos::deep_copy(d, h);
    return d;
  }
}

/// The same for a vector.
template <class Mem, class T>
Kokkos::View<T*, Mem> vector_in(const In<T, 1>& a, const char* what) {
  const bool device = on_cuda(a);
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    if (device) throw UsageError(std::string(what) + " is a CUDA array; pass device='cuda' (or copy it to the host)");
    return Kokkos::View<T*, Mem>(const_cast<T*>(a.data()), a.shape(0));
  } else {
    if (device) return Kokkos::View<T*, Mem>(const_cast<T*>(a.data()), a.shape(0));
    const Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(a.data(), a.shape(0));
    Kokkos::View<T*, Mem> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(what)), a.shape(0));
    Kokkos::deep_copy(d, h);
    return d;
  }
}

/// A CSR matrix from scipy's three arrays (indptr as int64, indices as
/// int32, sorted within rows without duplicates: the Python layer
/// canonicalizes) and the column count; each array used in place where
/// it lives in Mem.
template <class Mem, class T>
CsrMatrix<T, Mem> csr_in(const In<std::int64_t, 1>& indptr, const In<std::int32_t, 1>& indices, const In<T, 1>& data,
                         std::int64_t cols) {
  static_assert(sizeof(offset_t) == sizeof(std::int64_t));
  if (indptr.shape(0) < 1) throw UsageError("a CSR matrix needs at least one row pointer");
  if (indices.shape(0) != data.shape(0))
    throw UsageError("CSR indices and data differ in length: " + std::to_string(indices.shape(0)) + " and " +
                     std::to_string(data.shape(0)));
  // The offsets are non-negative (scipy's invariant, checked by the Python
  // layer), so int64 memory reads as size_t unchanged.
  const In<std::int64_t, 1>& rp = indptr;
  Kokkos::View<offset_t*, Mem> row_map;
  const bool device = on_cuda(rp);
  auto* p = reinterpret_cast<offset_t*>(const_cast<std::int64_t*>(rp.data()));
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    if (device) throw UsageError("indptr is a CUDA array; pass device='cuda'");
    row_map = Kokkos::View<offset_t*, Mem>(p, rp.shape(0));
  } else {
    if (device) {
      row_map = Kokkos::View<offset_t*, Mem>(p, rp.shape(0));
    } else {
      row_map = Kokkos::View<offset_t*, Mem>("kfactor::python::indptr", rp.shape(0));
      Kokkos::deep_copy(
          row_map,
          Kokkos::View<const offset_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(p, rp.shape(0)));
    }
  }
  return CsrMatrix<T, Mem>(row_map, vector_in<Mem>(indices, "indices"), vector_in<Mem>(data, "data"), ordinal_t(cols));
}

/// A copy of `v` as a new numpy array (host) or, with `device` and a device
/// view, as a DLPack array on the device that owns a reference to the view.
template <class V>
nb::object array_out(const V& v, bool device = false) {
  using T = typename V::non_const_value_type;
  using Mem = typename V::memory_space;
  constexpr std::size_t rank = V::rank();
  std::size_t shape[2] = {v.extent(0), rank == 2 ? v.extent(1) : 1};
  if constexpr (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible) {
    if (device) {
      // C order whatever v's layout (a rank-1 device view is LayoutLeft).
      using Managed = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, Mem>;
      const auto alloc = Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kfactor::python::out"));
      Managed* keep = nullptr;
      if constexpr (rank == 2)
        keep = new Managed(alloc, v.extent(0), v.extent(1));
      else
        keep = new Managed(alloc, v.extent(0));
      Kokkos::deep_copy(*keep, v);
      nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Managed*>(p); });
      return nb::cast(nb::ndarray<T, nb::device::cuda>(keep->data(), rank, shape, owner, nullptr, nb::dtype<T>(),
                                                       nb::device::cuda::value, Kokkos::device_id()));
    }
  } else {
    (void)device;
  }
  std::size_t n = 1;
  for (std::size_t r = 0; r < rank; ++r) n *= shape[r];
  T* data = new T[n > 0 ? n : 1];
  nb::capsule owner(data, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  if constexpr (rank == 2)
    Kokkos::deep_copy(
        Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
            data, shape[0], shape[1]),
        v);
  else
    Kokkos::deep_copy(Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(data, shape[0]), v);
  return nb::cast(nb::ndarray<nb::numpy, T>(data, rank, shape, owner));
}

/// A numpy array holding a copy of `values`.
template <class T>
nb::object array_out(const std::vector<T>& values) {
  const Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> v(values.data(),
                                                                                             values.size());
  return array_out(v);
}

/// Option `key` of the dict the Python layer passes (`fallback` when it is
/// absent or None).
template <class V>
V option(const nb::dict& d, const char* key, V fallback) {
  if (!d.contains(key)) return fallback;
  nb::handle h = d[key];
  if (h.is_none()) return fallback;
  return nb::cast<V>(h);
}

/// The library's Observer as a Python callable progress(iteration, seconds,
/// metrics: dict) -> bool (True stops the run). It runs with the GIL held
/// (the solver runs without), checks for KeyboardInterrupt first, and turns
/// an exception of the callable into a stop; rethrow() raises it once the
/// solver returned, so the exception reaches the caller unchanged.
class ProgressBridge {
 public:
  explicit ProgressBridge(nb::object progress) : progress_(std::move(progress)) {}
  Observer observer();
  /// Raises the pending Python exception, if the callable or a signal set one.
  void rethrow() const;

 private:
  nb::object progress_;
  bool failed_ = false;
};

/// Serializes the library's work: Kokkos' execution space instances are
/// not meant for concurrent launches from several host threads, and Python
/// threads may call kfactor at once once the GIL is released.
std::mutex& kokkos_mutex();

/// Runs f() without the GIL (other Python threads run meanwhile; other
/// kfactor calls wait for kokkos_mutex), then raises what the progress
/// bridge caught.
template <class F>
auto without_gil(ProgressBridge& bridge, F&& f) {
  using R = decltype(f());
  if constexpr (std::is_void_v<R>) {
    {
      nb::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(kokkos_mutex());
      f();
    }
    bridge.rethrow();
  } else {
    std::optional<R> r;
    {
      nb::gil_scoped_release release;
      const std::lock_guard<std::mutex> lock(kokkos_mutex());
      r.emplace(f());
    }
    bridge.rethrow();
    return std::move(*r);
  }
}

/// Metrics as {name: value}.
nb::dict metrics_dict(const Metrics& m);
/// A MetricHistory as {"names": [...], "iterations": int array, "values": 2-D array}.
nb::dict history_dict(const MetricHistory& h);
/// The inverse of history_dict (an empty history for None).
MetricHistory history_from(nb::handle h);
/// An input fingerprint as the tuple (rows, cols, nnz, checksum) and back
/// (None: an empty fingerprint, which a checkpoint load does not check).
nb::tuple fingerprint_tuple(const InputFingerprint& f);
InputFingerprint fingerprint_from(nb::handle h);
/// A Report's result fields: iterations, seconds, stop_reason, metrics, timings, info, history.
nb::dict report_dict(const Report& r);

/// A checkpoint field as a numpy array of its element type (scalars 0-d),
/// and a block over such an array's memory (InputError naming the field
/// for another type or dimension count). The block refers to the array:
/// `keep` holds a reference to it.
nb::object block_array(const detail::FieldBlock& b);
detail::FieldBlock array_block(const std::string& name, nb::handle array);

/// A State's checkpoint fields (State::visit, as a checkpoint saves them)
/// as {name: numpy array}, in visit order; the history is not among them
/// (history_dict).
template <class State>
nb::dict fields_out(State& state) {
  nb::dict out;
  detail::for_each_field(
      state,
      [&](const std::string& name, const auto& v) { out[name.c_str()] = block_array(detail::view_to_block(name, v)); },
      [&](const std::string& name, auto& x) { out[name.c_str()] = block_array(detail::scalar_block(name, x)); },
      [](const MetricHistory&) {});
  return out;
}

/// A fitted state's {name: array} as blocks over the arrays' memory (with
/// the GIL; the blocks must be released with it held, too).
std::map<std::string, detail::FieldBlock> field_blocks(nb::handle fields);

/// The inverse of fields_out (through field_blocks) into a State whose views
/// have their shapes (from the solver's init, as a checkpoint restart
/// loads), then reset_workspace(): every field must be given with the
/// State's type and shape, and no other (InputError naming the field);
/// nothing is copied until all of them are checked. Needs no GIL.
template <class State>
void fields_in(State& state, const std::map<std::string, detail::FieldBlock>& given) {
  std::size_t seen = 0;
  auto check = [&](const std::string& name, const detail::FieldBlock& want) {
    const auto it = given.find(name);
    if (it == given.end()) throw InputError("the fitted state has no field '" + name + "'");
    const auto& g = it->second;
    if (g.type != want.type || g.rank != want.rank || g.global_rows != want.global_rows || g.cols != want.cols)
      throw InputError("the fitted state's field '" + name + "' is " + detail::to_string(g.type) + " of " +
                       std::to_string(g.global_rows) + " x " + std::to_string(g.cols) + ", expected " +
                       detail::to_string(want.type) + " of " + std::to_string(want.global_rows) + " x " +
                       std::to_string(want.cols));
    ++seen;
  };
  detail::for_each_field(
      state, [&](const std::string& name, auto& v) { check(name, detail::shape_of_view(name, v)); },
      [&](const std::string& name, auto& x) { check(name, detail::scalar_block(name, x)); }, [](MetricHistory&) {});
  if (seen != given.size()) throw InputError("the fitted state has fields this solver's state does not");
  detail::for_each_field(
      state,
      [&](const std::string& name, auto& v) {
        auto b = detail::block_for_view(name, v);
        const auto& g = given.at(name);
        std::memcpy(b.data, g.data, std::size_t(g.global_rows * g.cols) * detail::size_of(g.type));
        detail::block_to_view(b, v);
      },
      [&](const std::string& name, auto& x) {
        const auto& g = given.at(name);
        std::memcpy(detail::scalar_block(name, x).data, g.data, detail::size_of(g.type));
      },
      [](MetricHistory&) {});
  if constexpr (requires { state.reset_workspace(); }) state.reset_workspace();
}

/// Saves a fitted model as the checkpoint `kfactor SOLVER --checkpoint`
/// writes: `state` holds the factors; iteration, seed and history are set
/// here, the options are the solver's option_values.
template <class T, class State>
void save_model(const std::string& path, const std::string& solver, State& state,
                std::map<std::string, std::string> options, std::int64_t rank, int iteration, std::uint64_t seed,
                nb::handle history, nb::handle fingerprint) {
  state.iteration = iteration;
  state.seed = seed;
  state.history = history_from(history);
  auto meta = checkpoint_meta<T, HostExec>(solver, std::move(options), fingerprint_from(fingerprint), rank);
  ProgressBridge bridge{nb::none()};
  without_gil(bridge, [&] { save_checkpoint(path, state, meta); });
}

/// Reads a checkpoint of `solver` with float or double factors (written by
/// save_model or by the command) as the dict an estimator loads:
/// `factors(out, state)` adds the factors, then iteration, seed, history,
/// options, fingerprint and precision. `estimator` names the Python class in
/// the error for another precision.
template <template <class, class> class State, class Factors>
nb::dict load_model(const std::string& path, const std::string& solver, const std::string& estimator, Factors factors) {
  const auto info = inspect_checkpoint(path, false);
  if (info.meta.solver != solver)
    throw InputError(path + ": a checkpoint of " + info.meta.solver + ", not of " + solver);
  CheckpointMeta expected;
  expected.solver = solver;
  expected.precision = info.meta.precision;
  auto load = [&](auto value) {
    using T = decltype(value);
    State<T, Kokkos::HostSpace> state;
    const auto stored = load_checkpoint(path, state, expected);
    nb::dict out;
    factors(out, state);
    out["iteration"] = state.iteration;
    out["seed"] = state.seed;
    out["history"] = history_dict(state.history);
    nb::dict options;
    for (const auto& [k, v] : stored.options) options[k.c_str()] = v;
    out["options"] = options;
    out["fingerprint"] = fingerprint_tuple(stored.input);
    out["precision"] = stored.precision;
    return out;
  };
  if (info.meta.precision == "float") return load(float{});
  if (info.meta.precision == "double") return load(double{});
  throw InputError(path + ": factors of precision " + info.meta.precision + "; " + estimator +
                   " reads float and double");
}

}  // namespace kfactor::python
