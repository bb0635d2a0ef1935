#pragma once
/// \file
/// The plain record every command and benchmark returns. io/report_json.hpp
/// writes it as the CLI's `--json` object; perf/ adds machine metadata.

#include <kfactor/core/solver.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace kfactor {

struct Report {
  std::string command;  ///< "nmf", "als", "bmf", "mnmf", "sddmm", "demo", ...
  std::string backend;  ///< execution space name, e.g. "openmp", "cuda"
  std::string precision = "double";
  std::int64_t rows = 0, cols = 0, nnz = 0;
  int rank = 0;
  int iterations = 0;
  double seconds = 0.0;  ///< total wall time of the solve
  std::string stop_reason;
  Metrics metrics;                          ///< final metrics (relative_error, rmse, ...)
  Metrics timings;                          ///< named phases in seconds (preprocess, graph, ...)
  std::map<std::string, std::string> info;  ///< free-form facts (algorithm, tile, paths)
  MetricHistory history;                    ///< per-iteration metrics
};

}  // namespace kfactor
