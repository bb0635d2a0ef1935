// TRANSITIONAL (see include/kfactor/io/checkpoint.hpp): options given as a
// flat JSON object text, for callers that do not pass option_values() yet.
#include <kfactor/io/checkpoint.hpp>

#include <nlohmann/json.hpp>

namespace kfactor {

std::map<std::string, std::string> options_from_json_text(const std::string& json_text) {
  std::map<std::string, std::string> out;
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_object())
    for (const auto& [key, value] : j.items()) out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  return out;
}

}  // namespace kfactor
