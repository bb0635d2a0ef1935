// kfactor._core's checkpoint files for any solver family: a fitted state as
// {field name: numpy array} (common.hpp's fields_out / fields_in, from the
// State's visit) written and read as the HDF5 checkpoint the library's
// save_checkpoint / load_checkpoint write and read, through the same
// CheckpointWriter and CheckpointReader (atomic replace, seal, checksums,
// the solver and option checks).
#include "common.hpp"

#include <nanobind/stl/string.h>

#include <string>

namespace kfactor::python {

namespace {

/// The CheckpointType numpy calls `name` ("int32", "uint64", "float64", ...).
std::optional<detail::CheckpointType> type_named(const std::string& name) {
  using detail::CheckpointType;
  for (auto t :
       {CheckpointType::i8, CheckpointType::u8, CheckpointType::i16, CheckpointType::u16, CheckpointType::i32,
        CheckpointType::u32, CheckpointType::i64, CheckpointType::u64, CheckpointType::f32, CheckpointType::f64})
    if (name == detail::to_string(t)) return t;
  return std::nullopt;
}

nb::object numpy() { return nb::module_::import_("numpy"); }

/// An uninitialized numpy array of b's type and shape.
nb::object empty_array(const detail::FieldBlock& b) {
  nb::list shape;
  if (b.rank >= 1) shape.append(b.local_rows);
  if (b.rank == 2) shape.append(b.cols);
  return numpy().attr("empty")(nb::tuple(shape), detail::to_string(b.type));
}

void* data_of(const nb::object& a) {
  return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(a.attr("ctypes").attr("data")));
}

}  // namespace

nb::object block_array(const detail::FieldBlock& b) {
  nb::object a = empty_array(b);
  const auto bytes = std::size_t(b.local_rows * b.cols) * detail::size_of(b.type);
  if (bytes > 0) std::memcpy(data_of(a), b.data, bytes);
  return a;
}

detail::FieldBlock array_block(const std::string& name, nb::handle array) {
  // asarray, not ascontiguousarray, which turns a 0-d array (a scalar field) into 1-d.
  nb::object a = numpy().attr("asarray")(array, nb::arg("order") = "C");
  const auto type = type_named(nb::cast<std::string>(a.attr("dtype").attr("name")));
  const int ndim = nb::cast<int>(a.attr("ndim"));
  if (!type || ndim > 2)
    throw InputError("field '" + name + "': a checkpoint field is a scalar, vector or matrix of integers or floats");
  const nb::tuple shape = nb::cast<nb::tuple>(a.attr("shape"));
  detail::FieldBlock b;
  b.name = name;
  b.type = *type;
  b.rank = ndim;
  b.global_rows = b.local_rows = ndim >= 1 ? nb::cast<std::int64_t>(shape[0]) : 1;
  b.cols = ndim == 2 ? nb::cast<std::int64_t>(shape[1]) : 1;
  b.data = data_of(a);
  // The block refers to the array's memory: hold a reference to it.
  auto* ref = new nb::object(a);
  b.keep = std::shared_ptr<void>(ref, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::object*>(p);
  });
  return b;
}

std::map<std::string, detail::FieldBlock> field_blocks(nb::handle fields) {
  std::map<std::string, detail::FieldBlock> out;
  for (auto [k, v] : nb::cast<nb::dict>(fields)) {
    auto name = nb::cast<std::string>(k);
    out.emplace(name, array_block(name, v));
  }
  return out;
}

void register_checkpoint(nb::module_& m) {
  m.def(
      "checkpoint_save",
      [](const std::string& path, const std::string& solver, const std::string& precision, std::int64_t rank,
         const nb::dict& options, nb::handle fingerprint, const nb::dict& fields, nb::handle history) {
        std::map<std::string, std::string> opts;
        for (auto [k, v] : options) opts[nb::cast<std::string>(k)] = nb::cast<std::string>(nb::str(v));
        auto meta = checkpoint_meta<double, HostExec>(solver, std::move(opts), fingerprint_from(fingerprint), rank);
        meta.precision = precision;
        std::vector<detail::FieldBlock> blocks;
        for (auto [k, v] : fields) {
          blocks.push_back(array_block(nb::cast<std::string>(k), v));
          if (blocks.back().name == "iteration" && blocks.back().rank == 0)
            meta.iteration = nb::cast<std::int64_t>(nb::handle(v).attr("item")());
        }
        const MetricHistory h = history_from(history);
        ProgressBridge bridge{nb::none()};
        without_gil(bridge, [&] {
          detail::CheckpointWriter w(path, meta);
          for (const auto& b : blocks) w.write_field(b);
          w.write_history(h);
          w.commit();
        });
        // The blocks release their arrays with the GIL held.
        blocks.clear();
      },
      nb::arg("path"), nb::arg("solver"), nb::arg("precision"), nb::arg("rank"), nb::arg("options"),
      nb::arg("fingerprint"), nb::arg("fields"), nb::arg("history"),
      "Writes a fitted state ({name: array}, as fields_out gives it) as a checkpoint of `solver`.");
  m.def(
      "checkpoint_load",
      [](const std::string& path, const std::string& solver) {
        detail::CheckpointReader r(path);
        CheckpointMeta expected;
        expected.solver = solver;
        r.expect(expected);
        nb::dict fields;
        for (const auto& name : r.field_names()) {
          const auto info = r.field(name);
          detail::FieldBlock b;
          b.name = name;
          b.type = info.type;
          b.rank = info.rank;
          b.global_rows = b.local_rows = info.rows;
          b.cols = info.cols;
          nb::object a = empty_array(b);
          b.data = data_of(a);
          r.verify_checksum(name, r.read_field(b));
          fields[name.c_str()] = a;
        }
        const auto& meta = r.meta();
        nb::dict out;
        out["fields"] = fields;
        out["history"] = history_dict(r.has_history() ? r.read_history() : MetricHistory{});
        nb::dict options;
        for (const auto& [k, v] : meta.options) options[k.c_str()] = v;
        out["options"] = options;
        out["fingerprint"] = fingerprint_tuple(meta.input);
        out["precision"] = meta.precision;
        out["rank"] = meta.rank;
        return out;
      },
      nb::arg("path"), nb::arg("solver"),
      "Reads a checkpoint of `solver` (written by checkpoint_save or by the kfactor command): fields, history, "
      "options, "
      "fingerprint, precision, rank.");
}

}  // namespace kfactor::python
