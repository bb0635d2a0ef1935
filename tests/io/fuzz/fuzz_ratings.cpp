// libFuzzer target: the ratings reader on arbitrary bytes (see fuzz_common.hpp).
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return kfactor::fuzz::run(data, size, [](std::string_view text, const kfactor::io::ReadOptions& opt, auto tag) {
    using T = decltype(tag);
    const auto r = kfactor::io::parse_ratings<T>(text, "fuzz", opt);
    kfactor::fuzz::check(r.matrix);
    if (r.user_ids.size() != std::size_t(r.matrix.num_rows) || r.item_ids.size() != std::size_t(r.matrix.num_cols))
      std::abort();
  });
}
