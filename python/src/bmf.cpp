// kfactor._core's Boolean MF (kfactor.BooleanMF calls it): the ones of C in,
// the factors A (m x k) and B (k x n) out, through the kfactor::bmf entry
// points of the `kfactor bmf` driver (make_problem, init, resume,
// factor_a/b). A fit returns its whole State as fields (fields_out), which
// continue it exactly (fields_in into a fresh init, as a checkpoint restart
// does) and are what BooleanMF.save writes.
#include "common.hpp"

#include <kfactor/bmf/bmf.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>

#include <nanobind/stl/map.h>

#include <map>
#include <string>
#include <utility>
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
         const nb::dict& options, nb::handle state, nb::object progress, const std::string& device) {
        const auto opt = bmf_options(options);
        if (one_rows.shape(0) != one_cols.shape(0)) throw UsageError("bmf: one_rows and one_cols differ in length");
        // The ones as the driver holds them (a CooMatrix of ones), for the
        // same problem and input fingerprint.
        CooMatrix<double> ones;
        ones.num_rows = rows;
        ones.num_cols = cols;
        ones.rows.assign(one_rows.data(), one_rows.data() + one_rows.shape(0));
        ones.cols.assign(one_cols.data(), one_cols.data() + one_cols.shape(0));
        ones.values.assign(ones.rows.size(), 1.0);
        const bool resume = !state.is_none();
        const auto given = resume ? field_blocks(state["fields"]) : std::map<std::string, detail::FieldBlock>{};
        const auto history = resume ? history_from(state["history"]) : MetricHistory{};
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) {
          InputFingerprint fp;
          auto result = without_gil(bridge, [&] {
            const HostExec host;
            fp = fingerprint(host, to_csr(host, ones));
            const auto problem = bmf::make_problem(exec, ones, opt);
            auto s = bmf::init(exec, problem, opt);
            if (resume) {
              fields_in(s, given);
              s.history = history;
            }
            auto report = bmf::resume(exec, problem, opt, s, bridge.observer());
            return std::make_pair(std::move(s), std::move(report));
          });
          auto& [s, report] = result;
          nb::dict out;
          out["A"] = array_out(bmf::factor_a(s));
          out["B"] = array_out(bmf::factor_b(s));
          out["iteration"] = s.iteration;
          out["history"] = history_dict(s.history);
          out["report"] = report_dict(report);
          out["fields"] = fields_out(s);
          out["fingerprint"] = fingerprint_tuple(fp);
          out["options"] = option_values(opt);
          return out;
        });
      },
      nb::arg("rows"), nb::arg("cols"), nb::arg("one_rows").noconvert(), nb::arg("one_cols").noconvert(),
      nb::arg("options"), nb::arg("state") = nb::none(), nb::arg("progress") = nb::none(), nb::arg("device") = "cpu",
      "Boolean MF of the rows x cols matrix whose ones are at (one_rows, one_cols): A (m x k) and B (k x n) as uint8, "
      "the State's fields (state={'fields', 'history'} continues from them), history, report, the input's fingerprint "
      "and the options "
      "as a checkpoint records them.");
}

}  // namespace kfactor::python
