// kfactor._core's Boolean MF (kfactor.BooleanMF calls it): the ones of C in,
// the factors A (m x k) and B (k x n) out, through the kfactor::bmf entry
// points of the `kfactor bmf` driver (make_problem, solve, factor_a/b).
#include "common.hpp"

#include <kfactor/bmf/bmf.hpp>

#include <string>
#include <vector>

namespace kfactor::python {
namespace {

bmf::Options bmf_options(const nb::dict& d) {
  bmf::Options o;
  o.rank = option<int>(d, "rank", o.rank);
  o.stop.max_iterations = option<int>(d, "max_iter", o.stop.max_iterations);
  o.stop.tolerance = option<double>(d, "tol", o.stop.tolerance);
  o.stop.target = option<double>(d, "target", o.stop.target);
  o.batch = option<int>(d, "batch", o.batch);
  o.flip_prob = option<double>(d, "flip_prob", o.flip_prob);
  o.temperature = option<double>(d, "temperature", o.temperature);
  o.temp_step = option<int>(d, "temp_step", o.temp_step);
  o.temp_factor = option<double>(d, "temp_factor", o.temp_factor);
  o.weight_ones = option<double>(d, "weight_ones", o.weight_ones);
  o.init = bmf::parse_init(option<std::string>(d, "init", "cover"));
  o.every_line_changed = option<int>(d, "every_line_changed", o.every_line_changed);
  o.seed = option<std::uint64_t>(d, "seed", o.seed);
  o.validate();
  return o;
}

}  // namespace

void register_bmf(nb::module_& m) {
  m.def(
      "bmf_fit",
      [](std::int64_t rows, std::int64_t cols, In<std::int32_t, 1> one_rows, In<std::int32_t, 1> one_cols,
         const nb::dict& options, nb::object progress, const std::string& device) {
        const auto opt = bmf_options(options);
        if (one_rows.shape(0) != one_cols.shape(0)) throw UsageError("bmf: one_rows and one_cols differ in length");
        const std::vector<ordinal_t> r(one_rows.data(), one_rows.data() + one_rows.shape(0));
        const std::vector<ordinal_t> c(one_cols.data(), one_cols.data() + one_cols.shape(0));
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) {
          auto result = without_gil(bridge, [&] {
            const auto problem = bmf::make_problem(exec, rows, cols, r, c, opt);
            return bmf::solve(exec, problem, opt, bridge.observer());
          });
          nb::dict out;
          out["A"] = array_out(bmf::factor_a(result.state));
          out["B"] = array_out(bmf::factor_b(result.state));
          out["iteration"] = result.state.iteration;
          out["history"] = history_dict(result.state.history);
          out["report"] = report_dict(result.report);
          return out;
        });
      },
      nb::arg("rows"), nb::arg("cols"), nb::arg("one_rows").noconvert(), nb::arg("one_cols").noconvert(),
      nb::arg("options"), nb::arg("progress") = nb::none(), nb::arg("device") = "cpu",
      "Boolean MF of the rows x cols matrix whose ones are at (one_rows, one_cols): A (m x k) and B (k x n) as uint8.");
}

}  // namespace kfactor::python
