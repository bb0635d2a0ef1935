// libFuzzer target: the HDF5 CSR reader (src/io/hdf5_csr.cpp) on arbitrary
// bytes. Each input is written to a temporary file and read the ways
// kfactor reads one: whole (read_hdf5_csr, double and float, with and
// without ReadOptions::non_negative) and in two row ranges through one
// Hdf5CsrReader, as two ranks would. The only acceptable failure is a
// kfactor::InputError naming the file; a successful read must give a
// canonical matrix (sorted, unique, in range, no NaN), ids that increase,
// and row ranges that together are the whole read. Anything else (crash,
// sanitizer report, another exception, a leak, > 2 GB RSS) is a finding.
//
// HDF5 itself (Debian's build) is not instrumented: a memory error inside it
// shows as a crash without ASan's report, still a finding.
#include <kfactor/io/hdf5_csr.hpp>

#include "fuzz_common.hpp"
#include "hdf5_csr_impl.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const std::string& temp_path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/kfactor_fuzz_h5csr." + std::to_string(::getpid()) + ".h5";
  }();
  return p;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_h5csr: %s\n", what);
  std::abort();
}

template <class T>
void read(const std::string& path, const kfactor::io::ReadOptions& opt) {
  using namespace kfactor;
  const auto whole = io::read_hdf5_csr<T>(path, opt);
  fuzz::check(whole.matrix);
  for (const auto* ids : {&whole.user_ids, &whole.item_ids})
    for (std::size_t k = 1; k < ids->size(); ++k)
      if ((*ids)[k] <= (*ids)[k - 1]) finding("ids that do not increase");
  io::Hdf5CsrReader reader(path, opt);
  const std::int64_t rows = reader.layout().rows, half = rows / 2;
  const auto a = reader.read_rows<T>(0, half), b = reader.read_rows<T>(half, rows);
  if (a.cols.size() + b.cols.size() != whole.matrix.nnz()) finding("row ranges do not add up to the whole");
  for (std::size_t k = 0; k < a.cols.size(); ++k)
    if (a.cols[k] != whole.matrix.cols[k] || !(a.values[k] == whole.matrix.values[k])) finding("range differs");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = temp_path();
  if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size > 0 && std::fwrite(data, 1, size, f) != size) finding("cannot write the temporary file");
    std::fclose(f);
  } else {
    finding("cannot create the temporary file");
  }
  kfactor::io::ReadOptions opt;
  opt.memory_limit = std::uint64_t(1) << 30;
  const auto named = [&](const kfactor::InputError& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) {
      std::fprintf(stderr, "message: %s\n", e.what());
      finding("InputError that does not name the file");
    }
  };
  // Opening forks the reader's probe (the child that meets HDF5's crashes
  // on damaged files), once per input: when it or the layout checks (which
  // no option changes) fail, every read below would fail the same way before
  // HDF5 reads data; when they pass, the reads below skip the probe.
  kfactor::io::hdf5_csr_probe = true;
  try {
    const kfactor::io::Hdf5CsrReader opened(path, opt);
  } catch (const kfactor::InputError& e) {
    named(e);
    return 0;
  }
  kfactor::io::hdf5_csr_probe = false;
  for (const bool nonneg : {false, true}) {
    opt.non_negative = nonneg;
    try {
      read<double>(path, opt);
      read<float>(path, opt);
    } catch (const kfactor::InputError& e) {
      named(e);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exception: %s\n", e.what());
      finding("an exception other than kfactor::InputError");
    }
  }
  return 0;
}
