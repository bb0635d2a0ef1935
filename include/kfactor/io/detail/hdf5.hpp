#pragma once
/// \file
/// A small RAII layer over the HDF5 C API, for src/checkpoint/ only (never
/// include it from a public header: HDF5 is a private dependency of kfactor).
///
/// - Handle<Close>: a move-only hid_t closed by its destructor (File, Group,
///   Dataset, Dataspace, Datatype, Attribute, PropertyList).
/// - Every failing call turns into a kfactor exception: InputError when
///   reading (bad file), RuntimeFailure when writing, with HDF5's innermost
///   error description appended.
/// - Quiet: while alive, HDF5's automatic error printing is off (the
///   library never prints).

#include <kfactor/core/error.hpp>

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::detail::h5 {

// HDF5 1.10 (still common on clusters) lacks the *2 link API of 1.12+.
#if H5_VERSION_GE(1, 12, 0)
using link_info_t = H5L_info2_t;
inline herr_t link_iterate(hid_t group, H5_index_t index, H5_iter_order_t order, hsize_t* idx, H5L_iterate2_t op,
                           void* data) {
  return H5Literate2(group, index, order, idx, op, data);
}
#else
using link_info_t = H5L_info_t;
inline herr_t link_iterate(hid_t group, H5_index_t index, H5_iter_order_t order, hsize_t* idx, H5L_iterate_t op,
                           void* data) {
  return H5Literate(group, index, order, idx, op, data);
}
#endif

/// Which exception a failure becomes.
enum class Mode { read, write };

/// Silences HDF5's error printing for its lifetime (restores it after).
class Quiet {
 public:
  Quiet() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The innermost description on HDF5's current error stack ("" if none).
inline std::string last_error() {
  std::string out;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* client) -> herr_t {
        auto* s = static_cast<std::string*>(client);
        if (n == 0 && e && e->desc) *s = e->desc;
        return 0;
      },
      &out);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

[[noreturn]] inline void fail(Mode mode, const std::string& what) {
  std::string msg = what;
  const std::string detail = last_error();
  if (!detail.empty()) msg += " (HDF5: " + detail + ")";
  if (mode == Mode::read) throw InputError(msg);
  throw RuntimeFailure(msg);
}

/// Throws unless `status` is non-negative.
inline herr_t check(herr_t status, Mode mode, const std::string& what) {
  if (status < 0) fail(mode, what);
  return status;
}

template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  /// Takes ownership of `id`; throws when it is invalid.
  Handle(hid_t id, Mode mode, const std::string& what) : id_(id) {
    if (id_ < 0) fail(mode, what);
  }
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  [[nodiscard]] hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: used where the C API takes a hid_t
  [[nodiscard]] bool valid() const { return id_ >= 0; }
  /// Gives the id up without closing it (HDF5 closes it at H5close).
  void release() { id_ = H5I_INVALID_HID; }
  /// Closes now; returns HDF5's status (negative on failure).
  herr_t reset() {
    herr_t s = 0;
    if (id_ >= 0) s = Close(id_);
    id_ = H5I_INVALID_HID;
    return s;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using PropertyList = Handle<H5Pclose>;

/// Creation properties of class `cls` (H5P_FILE_CREATE for the root group,
/// H5P_GROUP_CREATE, H5P_DATASET_CREATE) without object times: HDF5 stamps each object with the wall clock by
/// default, and kfactor's files are to be the same bytes for the same data.
inline PropertyList untimed_creation(hid_t cls, Mode mode) {
  PropertyList plist(H5Pcreate(cls), mode, "creating object creation properties");
  check(H5Pset_obj_track_times(plist, false), mode, "turning object times off");
  return plist;
}

/// True when `name` exists as a link of `loc` (a path of one component).
inline bool exists(hid_t loc, const std::string& name) { return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0; }

inline bool has_attribute(hid_t loc, const std::string& name) { return H5Aexists(loc, name.c_str()) > 0; }

/// Variable-length UTF-8 string type.
inline Datatype string_type(Mode mode) {
  Datatype t(H5Tcopy(H5T_C_S1), mode, "creating a string type");
  check(H5Tset_size(t, H5T_VARIABLE), mode, "sizing a string type");
  check(H5Tset_cset(t, H5T_CSET_UTF8), mode, "setting a string type's character set");
  return t;
}

/// Dataspace of rank 0 (scalar) or rank 1-2 with the given dimensions.
inline Dataspace dataspace(Mode mode, const std::vector<hsize_t>& dims) {
  if (dims.empty()) return Dataspace(H5Screate(H5S_SCALAR), mode, "creating a scalar dataspace");
  return Dataspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), mode, "creating a dataspace");
}

/// Writes a scalar attribute of native type `type`.
inline void write_attribute(hid_t loc, const std::string& name, hid_t type, const void* value) {
  auto space = dataspace(Mode::write, {});
  Attribute a(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), Mode::write,
              "creating attribute '" + name + "'");
  check(H5Awrite(a, type, value), Mode::write, "writing attribute '" + name + "'");
}
inline void write_attribute(hid_t loc, const std::string& name, std::int64_t v) {
  write_attribute(loc, name, H5T_NATIVE_INT64, &v);
}
inline void write_attribute(hid_t loc, const std::string& name, std::uint64_t v) {
  write_attribute(loc, name, H5T_NATIVE_UINT64, &v);
}
inline void write_attribute(hid_t loc, const std::string& name, const std::string& v) {
  auto type = string_type(Mode::write);
  const char* p = v.c_str();
  write_attribute(loc, name, type, &p);
}
/// One-dimensional array of strings.
inline void write_attribute(hid_t loc, const std::string& name, const std::vector<std::string>& v) {
  auto type = string_type(Mode::write);
  std::vector<const char*> p;
  for (const auto& s : v) p.push_back(s.c_str());
  auto space = dataspace(Mode::write, {static_cast<hsize_t>(v.size())});
  Attribute a(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), Mode::write,
              "creating attribute '" + name + "'");
  if (!v.empty()) check(H5Awrite(a, type, p.data()), Mode::write, "writing attribute '" + name + "'");
}

inline Attribute open_attribute(hid_t loc, const std::string& name, const std::string& where) {
  if (!has_attribute(loc, name)) throw InputError(where + ": attribute '" + name + "' is missing");
  return Attribute(H5Aopen(loc, name.c_str(), H5P_DEFAULT), Mode::read, where + ": opening attribute '" + name + "'");
}

/// Reads an integer attribute (any stored integer type) as int64.
inline std::int64_t read_int_attribute(hid_t loc, const std::string& name, const std::string& where) {
  auto a = open_attribute(loc, name, where);
  Datatype t(H5Aget_type(a), Mode::read, where + ": type of attribute '" + name + "'");
  if (H5Tget_class(t) != H5T_INTEGER) throw InputError(where + ": attribute '" + name + "' is not an integer");
  std::int64_t v = 0;
  check(H5Aread(a, H5T_NATIVE_INT64, &v), Mode::read, where + ": reading attribute '" + name + "'");
  return v;
}
inline std::uint64_t read_uint_attribute(hid_t loc, const std::string& name, const std::string& where) {
  auto a = open_attribute(loc, name, where);
  Datatype t(H5Aget_type(a), Mode::read, where + ": type of attribute '" + name + "'");
  if (H5Tget_class(t) != H5T_INTEGER) throw InputError(where + ": attribute '" + name + "' is not an integer");
  std::uint64_t v = 0;
  check(H5Aread(a, H5T_NATIVE_UINT64, &v), Mode::read, where + ": reading attribute '" + name + "'");
  return v;
}

/// Reads a string attribute, or a 1-D array of them (variable or fixed length).
inline std::vector<std::string> read_strings_attribute(hid_t loc, const std::string& name, const std::string& where) {
  auto a = open_attribute(loc, name, where);
  Datatype t(H5Aget_type(a), Mode::read, where + ": type of attribute '" + name + "'");
  if (H5Tget_class(t) != H5T_STRING) throw InputError(where + ": attribute '" + name + "' is not a string");
  Dataspace s(H5Aget_space(a), Mode::read, where + ": space of attribute '" + name + "'");
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  if (n < 0) fail(Mode::read, where + ": size of attribute '" + name + "'");
  // kfactor writes a few short strings per attribute (metric names at most):
  // a corrupt file may claim any count or length, so check before allocating
  // or letting HDF5 walk them.
  constexpr hssize_t max_strings = 1 << 16;
  if (n > max_strings)
    throw InputError(where + ": attribute '" + name + "' claims " + std::to_string(n) +
                     " strings (corrupt file; kfactor writes at most " + std::to_string(max_strings) + ")");
  std::vector<std::string> out;
  if (n == 0) return out;
  if (H5Tis_variable_str(t) > 0) {
    auto mt = string_type(Mode::read);
    std::vector<char*> p(static_cast<std::size_t>(n), nullptr);
    check(H5Aread(a, mt, p.data()), Mode::read, where + ": reading attribute '" + name + "'");
    for (auto* c : p) out.emplace_back(c ? c : "");
#if H5_VERSION_GE(1, 12, 0)
    H5Treclaim(mt, s, H5P_DEFAULT, p.data());
#else
    H5Dvlen_reclaim(mt, s, H5P_DEFAULT, p.data());
#endif
  } else {
    const std::size_t len = H5Tget_size(t);
    if (len == 0 || len > (std::size_t(1) << 24))
      throw InputError(where + ": attribute '" + name + "' has strings of " + std::to_string(len) +
                       " bytes (corrupt file)");
    std::vector<char> buf(len * static_cast<std::size_t>(n) + 1, '\0');
    check(H5Aread(a, t, buf.data()), Mode::read, where + ": reading attribute '" + name + "'");
    for (hssize_t i = 0; i < n; ++i) {
      const char* b = buf.data() + static_cast<std::size_t>(i) * len;
      std::size_t l = 0;
      while (l < len && b[l] != '\0') ++l;
      out.emplace_back(b, l);
    }
  }
  return out;
}
inline std::string read_string_attribute(hid_t loc, const std::string& name, const std::string& where) {
  auto v = read_strings_attribute(loc, name, where);
  if (v.size() != 1) throw InputError(where + ": attribute '" + name + "' is not a single string");
  return v.front();
}

}  // namespace kfactor::detail::h5
