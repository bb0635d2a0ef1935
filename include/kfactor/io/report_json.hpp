#pragma once
/// \file
/// The JSON form of a Report: the CLI's `--json` object and the record perf/
/// benchmarks write. Fields: command, backend, precision, rows, cols, nnz,
/// rank, iterations, seconds, stop_reason, every final metric at top level
/// (relative_error, rmse, mae, hamming_error, gflops, ...), `timings`,
/// `info` and `history` ({"iteration": [...], "<metric>": [...]}).
/// docs/report-schema.md lists every command's metrics. A metric named like
/// one of the fields above is left out of the top level (its values stay in
/// `history`), so the fields keep their types.

#include <kfactor/core/report.hpp>

#include <nlohmann/json.hpp>

namespace kfactor {

nlohmann::json to_json(const Report& r);

}  // namespace kfactor
