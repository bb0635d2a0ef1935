// libFuzzer target: the checkpoint loader (src/checkpoint/checkpoint.cpp) on
// arbitrary bytes. Each input is written to a temporary file and loaded the
// way load_checkpoint() and `kfactor checkpoint-info` do: open and read the
// metadata, compare it with expectations of every solver kind, list the
// fields, check and read each one into a host block of the stored type and
// shape, verify its checksum, read the history. The only acceptable failure
// is a kfactor::InputError naming the file; anything else (crash, sanitizer
// report, another exception, a leak, > 2 GB RSS) is a finding.
//
// HDF5 itself (Debian's build) is not instrumented: a memory error inside it
// shows as a crash without ASan's report, still a finding.
#include <kfactor/io/checkpoint.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const std::string& temp_path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/kfactor_fuzz_checkpoint." + std::to_string(::getpid()) + ".h5";
  }();
  return p;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_checkpoint: %s\n", what);
  std::abort();
}

void load(const std::string& path) {
  using namespace kfactor;
  detail::CheckpointReader r(path);
  for (const char* solver : {"nmf", "als", "bmf", "mnmf"}) {
    CheckpointMeta want;
    want.solver = solver;
    want.precision = "double";
    want.rank = 4;
    try {
      r.expect(want);
    } catch (const InputError&) {
    }
  }
  (void)r.meta();
  for (const auto& name : r.field_names()) {
    const auto f = r.field(name);
    if (f.rows < 0 || f.cols < 0) finding("negative shape");
    detail::FieldBlock b;
    b.name = name;
    b.type = f.type;
    b.rank = f.rank;
    b.global_rows = b.local_rows = f.rows;
    b.cols = f.cols;
    r.check_field(b);
    // The reader refuses a dataset whose storage is smaller than its shape
    // claims, so the buffer below is bounded by the file size.
    std::vector<unsigned char> buf(static_cast<std::size_t>(f.rows * f.cols) * detail::size_of(f.type) + 1);
    b.data = buf.data();
    r.verify_checksum(name, r.read_field(b));
    // A row block, as a distributed restart reads it.
    if (f.rank >= 1 && f.rows > 1) {
      b.partitioned = true;
      b.first_row = f.rows / 2;
      b.local_rows = f.rows - b.first_row;
      (void)r.read_field(b);
    }
  }
  if (r.has_history()) (void)r.read_history();
  (void)inspect_checkpoint(path, true);
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
  try {
    load(path);
  } catch (const kfactor::InputError& e) {
    if (std::string(e.what()).rfind(path, 0) != 0) {
      std::fprintf(stderr, "message: %s\n", e.what());
      finding("InputError that does not name the file");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exception: %s\n", e.what());
    finding("an exception other than kfactor::InputError");
  }
  return 0;
}
