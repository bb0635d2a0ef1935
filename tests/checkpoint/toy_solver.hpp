#pragma once
// A toy iterative solver for the checkpoint tests: damped HALS-like
// multiplicative updates of W (m x K) and Ht (n x K) on a dense nonnegative
// A, plus a counter-RNG-driven random jitter of one row per step, so that the
// next iterate depends on factors, a LayoutLeft momentum, integer views,
// scalars of several types, the RNG counter and the history.
//
// Every kernel computes each output entry serially in one thread (no
// parallel reductions into the state), so the result is bitwise
// deterministic on a backend, whatever the thread count.
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kfactor::test::toy {

/// Options in the contract's form: visit() lists what decides the iterates
/// (not max_iterations, which a restart may extend).
struct Options {
  int rank = 6;
  int max_iterations = 20;
  std::uint64_t seed = 7;
  double jitter = 1e-2;
  template <class F>
  void visit(F&& f) const {
    f("rank", rank);
    f("seed", seed);
    f("jitter", jitter);
  }
};

template <class T, class Mem>
struct State {
  DenseMatrix<T, Mem> W, Ht;
  Kokkos::View<T**, Kokkos::LayoutLeft, Mem> momentum;  // LayoutLeft on purpose: the layout path
  Kokkos::View<std::uint32_t*, Mem> visits;
  Kokkos::View<std::int64_t*, Mem> stamps;
  int iteration = 0;
  std::uint64_t rng_counter = 0;
  double damping = 0.5;
  std::int64_t total_visits = 0;
  CounterRng rng;
  MetricHistory history;

  template <class F>
  void visit(F&& f) {
    f("W", W);
    f("Ht", Ht);
    f("momentum", momentum);
    f("visits", visits);
    f("stamps", stamps);
    f("iteration", iteration);
    f("rng_counter", rng_counter);
    f("damping", damping);
    f("total_visits", total_visits);
    f("rng", rng);
    f("history", history);
  }
};

/// Planted nonnegative m x n matrix of rank `k` plus uniform noise.
template <class T, class Exec>
DenseMatrix<T, typename Exec::memory_space> planted(const Exec& exec, int m, int n, int k, std::uint64_t seed) {
  using Mem = typename Exec::memory_space;
  DenseMatrix<T, Mem> W0("W0", m, k), H0("H0", n, k), A("A", m, n);
  fill_uniform(exec, W0, seed, RngStream::factor_w, T(0), T(1));
  fill_uniform(exec, H0, seed, RngStream::factor_h, T(0), T(1));
  const CounterRng noise(seed, RngStream::user);
  Kokkos::parallel_for(
      "toy::planted", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {0, 0}, {m, n}), KOKKOS_LAMBDA(int i, int j) {
        T s = 0;
        for (int l = 0; l < k; ++l) s += W0(i, l) * H0(j, l);
        A(i, j) = s + T(0.01) * noise.uniform<T>(static_cast<std::uint64_t>(i) * n + j, T(0), T(1));
      });
  exec.fence();
  return A;
}

template <class T, class Exec>
State<T, typename Exec::memory_space> init(const Exec& exec, const DenseMatrix<T, typename Exec::memory_space>& A,
                                           const Options& o) {
  using Mem = typename Exec::memory_space;
  State<T, Mem> s;
  const auto m = A.extent(0), n = A.extent(1);
  s.W = DenseMatrix<T, Mem>("W", m, o.rank);
  s.Ht = DenseMatrix<T, Mem>("Ht", n, o.rank);
  s.momentum = decltype(s.momentum)("momentum", m, o.rank);
  s.visits = decltype(s.visits)("visits", m);
  s.stamps = decltype(s.stamps)("stamps", m);
  fill_uniform(exec, s.W, o.seed, RngStream::factor_w, T(0.1), T(1));
  fill_uniform(exec, s.Ht, o.seed, RngStream::factor_h, T(0.1), T(1));
  s.rng = CounterRng(o.seed, RngStream::proposal);
  exec.fence();
  return s;
}

namespace detail {
/// One damped multiplicative update of X (rows x K) against the fixed Y
/// (cols x K) for M (rows x cols) given row-wise through `entry(i, j)`.
template <class Exec, class XV, class YV, class MomV, class Entry>
void update(const Exec& exec, const XV& X, const YV& Y, const MomV& mom, double damping, Entry entry) {
  using T = typename XV::non_const_value_type;
  const int k = static_cast<int>(X.extent(1));
  const int cols = static_cast<int>(Y.extent(0));
  Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> G("toy::G", k, k);
  Kokkos::parallel_for(
      "toy::gram", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>(exec, {0, 0}, {k, k}), KOKKOS_LAMBDA(int a, int b) {
        T s = 0;
        for (int j = 0; j < cols; ++j) s += Y(j, a) * Y(j, b);
        G(a, b) = s;
      });
  const T d = static_cast<T>(damping);
  Kokkos::parallel_for(
      "toy::update", Kokkos::RangePolicy<Exec>(exec, 0, X.extent(0)), KOKKOS_LAMBDA(int i) {
        for (int c = 0; c < k; ++c) {
          T num = 0;
          for (int j = 0; j < cols; ++j) num += entry(i, j) * Y(j, c);
          T den = T(1e-9);
          for (int l = 0; l < k; ++l) den += X(i, l) * G(l, c);
          const T next = X(i, c) * num / den;
          mom(i, c) = d * mom(i, c) + (next - X(i, c));
          const T v = next + T(0.1) * mom(i, c);
          X(i, c) = v > T(1e-12) ? v : T(1e-12);
        }
      });
}
}  // namespace detail

template <class T, class Exec>
void step(const Exec& exec, const DenseMatrix<T, typename Exec::memory_space>& A, const Options& o,
          State<T, typename Exec::memory_space>& s) {
  auto Ht = s.Ht;
  auto W = s.W;
  auto mom = s.momentum;
  detail::update(exec, W, Ht, mom, s.damping, KOKKOS_LAMBDA(int i, int j) { return A(i, j); });
  // Ht has no momentum of its own: a scratch one that is not state.
  Kokkos::View<T**, Kokkos::LayoutLeft, typename Exec::memory_space> mh("toy::mh", Ht.extent(0), Ht.extent(1));
  detail::update(exec, Ht, W, mh, 0.0, KOKKOS_LAMBDA(int i, int j) { return A(j, i); });
  // Jitter one random row.
  const std::uint64_t bits = s.rng.bits(s.rng_counter);
  const double u = s.rng.uniform(s.rng_counter + 1);
  s.rng_counter += 2;
  const int r = static_cast<int>(bits % W.extent(0));
  const T scale = static_cast<T>(1.0 + o.jitter * (u - 0.5));
  auto visits = s.visits;
  auto stamps = s.stamps;
  const std::int64_t it = s.iteration;
  Kokkos::parallel_for(
      "toy::jitter", Kokkos::RangePolicy<Exec>(exec, 0, 1), KOKKOS_LAMBDA(int) {
        for (std::size_t c = 0; c < W.extent(1); ++c) W(r, c) *= scale;
        visits(r) += 1;
        stamps(r) = it;
      });
  s.damping = 0.9 * s.damping + 0.1 * u;
  s.total_visits += 1;
  exec.fence();
}

/// Relative Frobenius error, summed per row then serially on the host.
template <class T, class Exec>
Metrics evaluate(const Exec& exec, const DenseMatrix<T, typename Exec::memory_space>& A,
                 const State<T, typename Exec::memory_space>& s) {
  auto W = s.W;
  auto Ht = s.Ht;
  Kokkos::View<double**, Kokkos::LayoutRight, typename Exec::memory_space> rows("toy::rows", A.extent(0), 2);
  Kokkos::parallel_for(
      "toy::error", Kokkos::RangePolicy<Exec>(exec, 0, A.extent(0)), KOKKOS_LAMBDA(int i) {
        double e = 0, a = 0;
        for (std::size_t j = 0; j < A.extent(1); ++j) {
          double p = 0;
          for (std::size_t l = 0; l < W.extent(1); ++l) p += double(W(i, l)) * double(Ht(j, l));
          const double r = double(A(i, j)) - p;
          e += r * r;
          a += double(A(i, j)) * double(A(i, j));
        }
        rows(i, 0) = e;
        rows(i, 1) = a;
      });
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rows);
  double e = 0, a = 0;
  for (std::size_t i = 0; i < h.extent(0); ++i) {
    e += h(i, 0);
    a += h(i, 1);
  }
  Metrics m;
  m.set("relative_error", std::sqrt(e / a));
  m.set("damping", s.damping);
  return m;
}

template <class T, class Exec>
StopReason solve(const Exec& exec, const DenseMatrix<T, typename Exec::memory_space>& A, const Options& o,
                 State<T, typename Exec::memory_space>& s, const Observer& observer = nullptr) {
  return run_solver_loop(
      s.iteration, s.history, StopRule{o.max_iterations, 0.0}, "relative_error", observer, [&] { step(exec, A, o, s); },
      [&] { return evaluate(exec, A, s); }, [](const Metrics&) { return false; });
}

/// Bytes of a view's host copy in logical row-major order (for bitwise checks).
template <class V>
std::vector<unsigned char> bytes_of(const V& v) {
  // A strided device view cannot be copied to the host directly: make it
  // contiguous in its own space first.
  using Packed = Kokkos::View<typename V::traits::non_const_data_type, typename V::memory_space>;
  Packed packed;
  if constexpr (V::rank() == 2)
    packed = Packed(Kokkos::view_alloc(Kokkos::WithoutInitializing, "packed"), v.extent(0), v.extent(1));
  else
    packed = Packed(Kokkos::view_alloc(Kokkos::WithoutInitializing, "packed"), v.extent(0));
  Kokkos::deep_copy(packed, v);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, packed);
  using T = typename V::non_const_value_type;
  std::vector<T> flat;
  if constexpr (V::rank() == 1) {
    for (std::size_t i = 0; i < h.extent(0); ++i) flat.push_back(h(i));
  } else {
    for (std::size_t i = 0; i < h.extent(0); ++i)
      for (std::size_t j = 0; j < h.extent(1); ++j) flat.push_back(h(i, j));
  }
  std::vector<unsigned char> out(flat.size() * sizeof(T));
  if (!flat.empty()) std::memcpy(out.data(), flat.data(), out.size());
  return out;
}

/// True when every field of the two states is bitwise equal.
template <class T, class Mem>
bool bitwise_equal(const State<T, Mem>& a, const State<T, Mem>& b) {
  auto same_history = [](const MetricHistory& x, const MetricHistory& y) {
    if (x.names != y.names || x.iterations != y.iterations || x.rows.size() != y.rows.size()) return false;
    for (std::size_t r = 0; r < x.rows.size(); ++r)
      if (x.rows[r].size() != y.rows[r].size() ||
          std::memcmp(x.rows[r].data(), y.rows[r].data(), x.rows[r].size() * sizeof(double)) != 0)
        return false;
    return true;
  };
  return bytes_of(a.W) == bytes_of(b.W) && bytes_of(a.Ht) == bytes_of(b.Ht) &&
         bytes_of(a.momentum) == bytes_of(b.momentum) && bytes_of(a.visits) == bytes_of(b.visits) &&
         bytes_of(a.stamps) == bytes_of(b.stamps) && a.iteration == b.iteration && a.rng_counter == b.rng_counter &&
         std::memcmp(&a.damping, &b.damping, sizeof(double)) == 0 && a.total_visits == b.total_visits &&
         a.rng.key == b.rng.key && same_history(a.history, b.history);
}

}  // namespace kfactor::test::toy
