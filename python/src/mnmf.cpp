// kfactor._core's manifold NMF (kfactor.ManifoldNMF calls it): ratings in
// CSR, user and item graphs given or built by kNN (mnmf::knn_graph, as the
// `kfactor mnmf` driver builds them), then mnmf::make_problem, init and
// resume. A fit returns its State as fields (fields_out), which continue it
// exactly (fields_in into a fresh init, as a checkpoint restart does) and
// are what ManifoldNMF.save writes.
#include "common.hpp"

#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

namespace kfactor::python {
namespace {

mnmf::Options mnmf_options(const nb::dict& d) {
  mnmf::Options o;
  o.objective = mnmf::parse_objective(option<std::string>(d, "objective", "euclid"));
  o.rank = option<int>(d, "rank", o.rank);
  o.lambda_w = option<double>(d, "lambda_w", o.lambda_w);
  o.lambda_h = option<double>(d, "lambda_h", o.lambda_h);
  o.stop.max_iterations = option<int>(d, "max_iter", o.stop.max_iterations);
  o.stop.tolerance = option<double>(d, "tol", o.stop.tolerance);
  o.seed = option<std::uint64_t>(d, "seed", o.seed);
  o.validate();
  return o;
}

mnmf::GraphOptions graph_options(const nb::dict& d) {
  mnmf::GraphOptions g;
  g.neighbors = option<int>(d, "n_neighbors", g.neighbors);
  g.weighting = mnmf::parse_weighting(option<std::string>(d, "graph_weighting", "binary"));
  g.validate();
  return g;
}

/// A graph given as CSR arrays, or none.
template <class Mem, class T>
CsrMatrix<T, Mem> graph_in(const std::optional<nb::tuple>& g, std::int64_t n) {
  if (!g) return {};
  return csr_in<Mem>(nb::cast<In<std::int64_t, 1>>((*g)[0]), nb::cast<In<std::int32_t, 1>>((*g)[1]),
                     nb::cast<In<T, 1>>((*g)[2]), n);
}

template <class T>
void define_dtype(nb::module_& m) {
  m.def(
      "mnmf_fit",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols,
         const nb::dict& options, std::optional<nb::tuple> user_graph, std::optional<nb::tuple> item_graph,
         nb::handle state, nb::object progress, const std::string& device) {
        const auto opt = mnmf_options(options);
        const auto gopt = graph_options(options);
        const bool resume = !state.is_none();
        const auto given = resume ? field_blocks(state["fields"]) : std::map<std::string, detail::FieldBlock>{};
        const auto history = resume ? history_from(state["history"]) : MetricHistory{};
        // What decides the iterates, as a checkpoint records it: the
        // solver's options and those of the kNN graphs.
        auto recorded = option_values(opt);
        recorded["neighbors"] = std::to_string(gopt.neighbors);
        recorded["weighting"] = option<std::string>(options, "graph_weighting", "binary");
        recorded["graph_w"] = user_graph ? "given" : "";
        recorded["graph_h"] = item_graph ? "given" : "";
        const bool build_users = !user_graph && opt.lambda_w > 0, build_items = !item_graph && opt.lambda_h > 0;
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto R = csr_in<Mem>(indptr, indices, data, cols);
          auto P = graph_in<Mem, T>(user_graph, R.num_rows());
          auto Pb = graph_in<Mem, T>(item_graph, cols);
          InputFingerprint fp;
          auto result = without_gil(bridge, [&] {
            fp = fingerprint(exec, R);
            if (build_users) P = mnmf::knn_graph(exec, R, gopt);
            if (build_items) Pb = mnmf::knn_graph(exec, transpose(exec, R), gopt);
            const auto problem = mnmf::make_problem(exec, R, P, Pb);
            auto s = mnmf::init(exec, problem, opt);
            if (resume) {
              fields_in(s, given);
              s.history = history;
            }
            auto report = mnmf::resume(exec, problem, opt, s, bridge.observer());
            return std::make_pair(std::move(s), std::move(report));
          });
          auto& [s, report] = result;
          nb::dict out;
          out["W"] = array_out(s.W);
          out["H"] = array_out(s.H);
          out["iteration"] = s.iteration;
          out["history"] = history_dict(s.history);
          out["report"] = report_dict(report);
          out["fields"] = fields_out(s);
          out["fingerprint"] = fingerprint_tuple(fp);
          out["options"] = recorded;
          return out;
        });
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("options"), nb::arg("user_graph") = nb::none(), nb::arg("item_graph") = nb::none(),
      nb::arg("state") = nb::none(), nb::arg("progress") = nb::none(), nb::arg("device") = "cpu",
      "Manifold-regularized NMF of observed ratings: W (users x r), H (items x r); graphs (indptr, indices, data) "
      "or built by kNN when the matching lambda is positive. Also the State's fields (state={'fields', "
      "'history'} continues from them), history, report, the input's fingerprint and the options a checkpoint "
      "records.");
}

}  // namespace

void register_mnmf(nb::module_& m) {
  define_dtype<double>(m);
  define_dtype<float>(m);
}

}  // namespace kfactor::python
