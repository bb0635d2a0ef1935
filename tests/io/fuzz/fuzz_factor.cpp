// libFuzzer target: the factor-file reader (CSV and Matrix Market array) on
// arbitrary bytes. InputError naming "fuzz" and a line >= 1 is the only
// acceptable failure; a successful read must be consistent: rank >= 1, one
// row of finite values per id, ids unique, by_id ordering them, find() exact.
#include <kfactor/io/factor_file.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void check(const kfactor::io::FactorFile& f) {
  auto die = [](const char* what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  };
  if (f.rank < 1 || f.rows() < 1) die("empty factor accepted");
  if (f.values.size() != f.rows() * static_cast<std::size_t>(f.rank)) die("values size");
  if (f.by_id.size() != f.rows()) die("index size");
  for (const double v : f.values)
    if (!std::isfinite(v)) die("non-finite value");
  for (std::size_t k = 0; k < f.by_id.size(); ++k) {
    if (f.by_id[k] >= f.rows()) die("index range");
    if (k > 0 && !(f.ids[f.by_id[k - 1]] < f.ids[f.by_id[k]])) die("ids not unique or index not sorted");
  }
  for (std::size_t r = 0; r < f.rows(); ++r)
    if (f.find(f.ids[r]) != r) die("find");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The last byte picks the name, so that both the CSV and the Matrix
  // Market paths see every input.
  const char* name = size && (data[size - 1] & 1) ? "fuzz.mtx" : "fuzz";
  try {
    check(kfactor::io::parse_factor_file(text, name, std::uint64_t(1) << 30));
  } catch (const kfactor::InputError& e) {
    if (e.line() < 1 || e.file() != name) std::abort();
  }
  return 0;
}
