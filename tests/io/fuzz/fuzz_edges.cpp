// libFuzzer target: the edges reader on arbitrary bytes (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kfactor::fuzz::run(data, size, [](std::string_view text, const kfactor::io::ReadOptions& opt, auto tag) {
    using T = decltype(tag);
    kfactor::fuzz::check(kfactor::io::parse_edges<T>(text, "fuzz", opt));
  });
}
