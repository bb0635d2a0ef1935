#include <kfactor/io/report_json.hpp>

#include <cmath>

namespace kfactor {

namespace {
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["command"] = r.command;
  j["backend"] = r.backend;
  j["precision"] = r.precision;
  j["rows"] = r.rows;
  j["cols"] = r.cols;
  j["nnz"] = r.nnz;
  j["rank"] = r.rank;
  j["iterations"] = r.iterations;
  j["seconds"] = r.seconds;
  if (!r.stop_reason.empty()) j["stop_reason"] = r.stop_reason;
  // A metric named like a field of the record (bmf's "precision") must not
  // replace the field's value and type: it stays in `history` only.
  for (const auto& [name, value] : r.metrics.items)
    if (!j.contains(name) && name != "stop_reason" && name != "timings" && name != "info" && name != "history")
      j[name] = number(value);
  auto& t = j["timings"] = nlohmann::json::object();
  for (const auto& [name, value] : r.timings.items) t[name] = number(value);
  j["info"] = r.info;
  auto& h = j["history"] = nlohmann::json::object();
  h["iteration"] = r.history.iterations;
  for (std::size_t c = 0; c < r.history.names.size(); ++c) {
    auto& col = h[r.history.names[c]] = nlohmann::json::array();
    for (const auto& row : r.history.rows) col.push_back(number(row[c]));
  }
  return j;
}

}  // namespace kfactor
