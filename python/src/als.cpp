// kfactor._core's ALS functions (kfactor.ALS and kfactor.metrics call them):
// fit (explicit or implicit feedback, fresh or continuing a fitted state),
// top-N recommendations, similar items, fold-in of users (implicit's
// recalculate_user), the ranking metrics, the splits, and HDF5 checkpoints.
// They call the kfactor::als entry points the `kfactor als`, `recommend` and
// `similar` drivers call.
#include "common.hpp"

#include <kfactor/als/als.hpp>
#include <kfactor/als/ranking_metrics.hpp>
#include <kfactor/als/recommend.hpp>
#include <kfactor/als/split.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

namespace kfactor::python {
namespace {

als::Options als_options(const nb::dict& d) {
  als::Options o;
  o.rank = option<int>(d, "rank", o.rank);
  o.stop.max_iterations = option<int>(d, "max_iter", o.stop.max_iterations);
  o.stop.tolerance = option<double>(d, "tol", o.stop.tolerance);
  o.lambda = option<double>(d, "regularization", o.lambda);
  o.weighting = als::parse_weighting(option<std::string>(d, "weighting", "nnz"));
  o.seed = option<std::uint64_t>(d, "seed", o.seed);
  o.implicit = option<bool>(d, "implicit", o.implicit);
  o.alpha = option<double>(d, "alpha", o.alpha);
  o.confidence = als::parse_confidence(option<std::string>(d, "confidence", "linear"));
  o.epsilon = option<double>(d, "epsilon", o.epsilon);
  o.solver = als::parse_solve_method(option<std::string>(d, "solver", "cholesky"));
  o.cg_steps = option<int>(d, "cg_steps", o.cg_steps);
  o.layout = als::parse_layout(option<std::string>(d, "layout", "csr"));
  o.validate();
  return o;
}

/// Host triplets of a CSR given as scipy's arrays (the ALS problem, the
/// splits and fold-in read triplets).
template <class T>
CooMatrix<T> coo_of(const In<std::int64_t, 1>& indptr, const In<std::int32_t, 1>& indices, const In<T, 1>& data,
                    std::int64_t cols) {
  if (on_cuda(indptr) || on_cuda(indices) || on_cuda(data))
    throw UsageError("ALS reads its ratings on the host: pass a scipy.sparse matrix");
  if (indices.shape(0) != data.shape(0)) throw UsageError("CSR indices and data differ in length");
  CooMatrix<T> c;
  c.num_rows = std::int64_t(indptr.shape(0)) - 1;
  c.num_cols = cols;
  const auto nnz = data.shape(0);
  c.rows.resize(nnz);
  c.cols.assign(indices.data(), indices.data() + nnz);
  c.values.assign(data.data(), data.data() + nnz);
  for (std::int64_t r = 0; r < c.num_rows; ++r)
    for (auto e = indptr.data()[r]; e < indptr.data()[r + 1]; ++e) c.rows[std::size_t(e)] = ordinal_t(r);
  return c;
}

/// A COO as scipy's CSR arrays (indptr int64, indices int32, data), rows sorted.
template <class T>
nb::tuple csr_arrays(const CooMatrix<T>& c) {
  const auto csr = to_csr(HostExec{}, c);
  return nb::make_tuple(array_out(Kokkos::View<const std::int64_t*, Kokkos::HostSpace>(
                            reinterpret_cast<const std::int64_t*>(csr.row_map.data()), csr.row_map.extent(0))),
                        array_out(csr.entries), array_out(csr.values));
}

template <class Exec, class T>
nb::dict fit(const Exec& exec, const CooMatrix<T>& ratings, const als::Options& opt, nb::handle state_in,
             ProgressBridge& bridge) {
  using Mem = typename Exec::memory_space;
  std::optional<DenseMatrix<T, Mem>> X0, Y0;
  int iteration = 0;
  std::uint64_t seed = 0;
  MetricHistory history;
  if (!state_in.is_none()) {
    const nb::dict d = nb::cast<nb::dict>(state_in);
    X0 = dense_in<Mem>(nb::cast<In<T, 2>>(d["X"]), "user_factors");
    Y0 = dense_in<Mem>(nb::cast<In<T, 2>>(d["Y"]), "item_factors");
    iteration = nb::cast<int>(d["iteration"]);
    seed = nb::cast<std::uint64_t>(d["seed"]);
    history = history_from(d["history"]);
  }
  als::State<T, Mem> state;
  Report report;
  InputFingerprint fp;
  without_gil(bridge, [&] {
    const auto problem = als::make_problem(exec, ratings, 0.0, 0);
    fp = fingerprint(exec, problem.train);
    state = als::init(exec, problem, opt);
    if (X0) {
      // Continue a fitted state the way a checkpoint restart does.
      if (X0->extent(0) != state.X.extent(0) || Y0->extent(0) != state.Y.extent(0) ||
          X0->extent(1) != state.X.extent(1) || Y0->extent(1) != state.Y.extent(1))
        throw UsageError("ALS: the fitted factors do not fit these ratings (warm_start needs the same shape)");
      Kokkos::deep_copy(exec, state.X, *X0);
      Kokkos::deep_copy(exec, state.Y, *Y0);
      state.iteration = iteration;
      state.seed = seed;
      state.history = history;
      state.reset_workspace();
    }
    report = als::resume(exec, problem, opt, state, bridge.observer());
  });
  nb::dict out;
  out["X"] = array_out(state.X);
  out["Y"] = array_out(state.Y);
  out["iteration"] = state.iteration;
  out["seed"] = state.seed;
  out["history"] = history_dict(state.history);
  out["report"] = report_dict(report);
  out["fingerprint"] = fingerprint_tuple(fp);
  return out;
}

template <class Mem, class T>
nb::tuple top_out(const als::TopN<T, Mem>& top) {
  return nb::make_tuple(array_out(top.items), array_out(top.scores), array_out(top.count));
}

template <class T>
void define_dtype(nb::module_& m) {
  m.def(
      "als_fit",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols,
         const nb::dict& options, nb::handle state, nb::object progress, const std::string& device) {
        const auto opt = als_options(options);
        const auto ratings = coo_of(indptr, indices, data, cols);
        ProgressBridge bridge(std::move(progress));
        return on_device(device, [&](const auto& exec) { return fit(exec, ratings, opt, state, bridge); });
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("options"), nb::arg("state") = nb::none(), nb::arg("progress") = nb::none(), nb::arg("device") = "cpu",
      "ALS of a users x items CSR (explicit ratings or implicit counts): returns X, Y, iteration, seed, history, "
      "report, fingerprint.");
  m.def(
      "als_recommend",
      [](In<T, 2> X, In<T, 2> Y, std::vector<ordinal_t> rows, int N, std::optional<In<std::int64_t, 1>> seen_indptr,
         std::optional<In<std::int32_t, 1>> seen_indices, std::optional<In<T, 1>> seen_data,
         const std::string& device) {
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto Xv = dense_in<Mem>(X, "user factors");
          const auto Yv = dense_in<Mem>(Y, "item factors");
          std::optional<CsrMatrix<T, Mem>> seen;
          if (seen_indptr) seen = csr_in<Mem>(*seen_indptr, *seen_indices, *seen_data, std::int64_t(Y.shape(0)));
          ProgressBridge bridge{nb::none()};
          const auto top =
              without_gil(bridge, [&] { return als::recommend(exec, Xv, Yv, rows, N, seen ? &*seen : nullptr); });
          return top_out(top);
        });
      },
      nb::arg("X").noconvert(), nb::arg("Y").noconvert(), nb::arg("rows"), nb::arg("N"),
      nb::arg("seen_indptr").noconvert() = nb::none(), nb::arg("seen_indices").noconvert() = nb::none(),
      nb::arg("seen_data").noconvert() = nb::none(), nb::arg("device") = "cpu",
      "The N best items for each of `rows` of X (als::recommend), leaving out each row's items in `seen`: "
      "(items, scores, count).");
  m.def(
      "als_similar",
      [](In<T, 2> F, std::vector<ordinal_t> rows, int N, const std::string& device) {
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto Fv = dense_in<Mem>(F, "factors");
          ProgressBridge bridge{nb::none()};
          const auto top = without_gil(bridge, [&] { return als::similar_rows(exec, Fv, rows, N); });
          return top_out(top);
        });
      },
      nb::arg("F").noconvert(), nb::arg("rows"), nb::arg("N"), nb::arg("device") = "cpu",
      "The N rows of F most similar to each of `rows` by cosine (the row itself excluded): (items, scores, count).");
  m.def(
      "als_fold_in",
      [](In<T, 2> Y, const nb::dict& options, In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data,
         const std::string& device) {
        const auto opt = als_options(options);
        const auto interactions = coo_of(indptr, indices, data, std::int64_t(Y.shape(0)));
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto Yv = dense_in<Mem>(Y, "item factors");
          ProgressBridge bridge{nb::none()};
          const auto X = without_gil(bridge, [&] { return als::fold_in(exec, Yv, opt, interactions); });
          return array_out(X);
        });
      },
      nb::arg("Y").noconvert(), nb::arg("options"), nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(),
      nb::arg("data").noconvert(), nb::arg("device") = "cpu",
      "User factor rows from their interactions with Y fixed (als::fold_in: one user half-step).");
  m.def(
      "ranking_metrics",
      [](In<T, 2> X, In<T, 2> Y, In<std::int64_t, 1> train_indptr, In<std::int32_t, 1> train_indices,
         In<T, 1> train_data, In<std::int64_t, 1> test_indptr, In<std::int32_t, 1> test_indices, In<T, 1> test_data,
         int K, const std::string& device) {
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto Xv = dense_in<Mem>(X, "user factors");
          const auto Yv = dense_in<Mem>(Y, "item factors");
          const auto items = std::int64_t(Y.shape(0));
          const auto train = csr_in<Mem>(train_indptr, train_indices, train_data, items);
          const auto test = csr_in<Mem>(test_indptr, test_indices, test_data, items);
          ProgressBridge bridge{nb::none()};
          const auto r = without_gil(bridge, [&] { return als::ranking_metrics(exec, Xv, Yv, train, test, K); });
          nb::dict d;
          d["k"] = r.k;
          d["users"] = r.users;
          d["precision"] = r.precision;
          d["recall"] = r.recall;
          d["map"] = r.map;
          d["ndcg"] = r.ndcg;
          d["auc"] = r.auc;
          return d;
        });
      },
      nb::arg("X").noconvert(), nb::arg("Y").noconvert(), nb::arg("train_indptr").noconvert(),
      nb::arg("train_indices").noconvert(), nb::arg("train_data").noconvert(), nb::arg("test_indptr").noconvert(),
      nb::arg("test_indices").noconvert(), nb::arg("test_data").noconvert(), nb::arg("K"), nb::arg("device") = "cpu",
      "precision, recall, map, ndcg and auc at K of X Y^T on test, training items excluded (als::ranking_metrics).");
  m.def(
      "train_test_split",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols,
         double test_fraction, std::uint64_t seed) {
        const auto all = coo_of(indptr, indices, data, cols);
        const auto [train, test] = split_train_test(all, test_fraction, seed);
        return nb::make_tuple(csr_arrays(train), csr_arrays(test));
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("test_fraction"), nb::arg("seed"),
      "kfactor::split_train_test: each entry to the test set by a draw keyed on (seed, entry).");
  m.def(
      "leave_k_out",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols, int k,
         std::uint64_t seed) {
        const auto all = coo_of(indptr, indices, data, cols);
        const auto [train, test] = als::leave_k_out(all, k, seed);
        return nb::make_tuple(csr_arrays(train), csr_arrays(test));
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("k"), nb::arg("seed"),
      "als::leave_k_out: k random entries of every user with more than k to the test set.");
  m.def(
      "als_save",
      [](const std::string& path, const nb::dict& options, In<T, 2> X, In<T, 2> Y, int iteration, std::uint64_t seed,
         nb::handle history, nb::handle fp) {
        const auto opt = als_options(options);
        als::State<T, Kokkos::HostSpace> state;
        state.X = dense_in<Kokkos::HostSpace>(X, "user_factors");
        state.Y = dense_in<Kokkos::HostSpace>(Y, "item_factors");
        save_model<T>(path, "als", state, option_values(opt), opt.rank, iteration, seed, history, fp);
      },
      nb::arg("path"), nb::arg("options"), nb::arg("X").noconvert(), nb::arg("Y").noconvert(), nb::arg("iteration"),
      nb::arg("seed"), nb::arg("history"), nb::arg("fingerprint"),
      "Saves a fitted ALS as the HDF5 checkpoint `kfactor als --checkpoint` writes.");
}

}  // namespace

void register_als(nb::module_& m) {
  define_dtype<double>(m);
  define_dtype<float>(m);
  m.def(
      "als_load",
      [](const std::string& path) {
        return load_model<als::State>(path, "als", "kfactor.ALS", [](nb::dict& out, const auto& state) {
          out["X"] = array_out(state.X);
          out["Y"] = array_out(state.Y);
        });
      },
      nb::arg("path"), "Reads an ALS checkpoint: factors, iteration, seed, history, options, fingerprint.");
}

}  // namespace kfactor::python
