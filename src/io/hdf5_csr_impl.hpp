#pragma once
// The state of an open io::Hdf5CsrReader, shared by hdf5_csr.cpp (serial
// access, the checks, the reads) and hdf5_csr_mpi.cpp (MPI-IO access).
#include <kfactor/io/detail/hdf5.hpp>
#include <kfactor/io/hdf5_csr.hpp>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace kfactor::io {

struct Hdf5CsrReader::Impl {
  /// Opens `path` with file access `fapl`; reads go through transfer
  /// properties `dxpl` (H5P_DEFAULT, or collective MPI-IO). Checks the layout.
  Impl(const std::string& path, const ReadOptions& opt, hid_t fapl, kfactor::detail::h5::PropertyList dxpl);
  /// Opens `path` and runs the constructor's checks in a forked child
  /// first; InputError when HDF5 crashes or hangs on the file (see the
  /// definition).
  static void probe(const std::string& path, const ReadOptions& opt);
  /// `/row_ids` or `/col_ids` (n ids; empty when the file has none), checked.
  std::vector<std::int64_t> read_ids(const char* name, std::int64_t n);
  /// Runs the local work before a read (memory checks, allocations); with
  /// collective transfers every rank learns whether any failed before
  /// entering the read, so that none waits in it for a rank that threw.
  template <class F>
  void prepare(F&& f) {
    std::exception_ptr failed;
    try {
      f();
    } catch (...) {
      failed = std::current_exception();
    }
    if (agree)
      agree(failed);
    else if (failed)
      std::rethrow_exception(failed);
  }

  std::string path;
  ReadOptions opt;
  kfactor::detail::h5::PropertyList dxpl;
  kfactor::detail::h5::File file;
  Hdf5CsrLayout layout;
  std::vector<std::int64_t> row_map;
  bool row_map_read = false;
  /// Collective access only (hdf5_csr_mpi.cpp): rethrows this rank's error,
  /// or throws detail::FailedElsewhere when only another rank failed.
  std::function<void(std::exception_ptr)> agree;
};

/// Whether Impl::probe forks its child (true unless a test turns it off).
/// Not public: the fuzz target, which probes the first read of an input, turns
/// it off for the further reads of the same bytes (a fork costs about 0.1 s
/// under AddressSanitizer).
extern bool hdf5_csr_probe;

/// File access properties of every CSR read: no HDF5 file locks (they fail
/// on some network file systems; readers only read).
kfactor::detail::h5::PropertyList hdf5_csr_file_access();

/// InputError naming `path` unless it is a regular file (before HDF5 opens
/// it: with MPI-IO opening is collective, so every rank checks first).
void check_regular_file(const std::string& path);

}  // namespace kfactor::io
