#pragma once
/// \file
/// Planted problems: inputs generated from known factors, so that a solver's
/// result can be judged against the truth (`kfactor demo`, tests, examples).
/// Host-side and deterministic: every value comes from core/random.hpp's
/// counter generator (stream RngStream::user), so a seed gives the same
/// problem on every machine. Boolean planted problems are bmf::make_planted;
/// SDDMM's random factors are sddmm/planted.hpp.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace kfactor {

/// An exact non-negative rank-`rank` product A = W H.
struct PlantedNonnegative {
  std::int64_t rows = 0, cols = 0;
  int rank = 0;
  std::vector<double> W;  ///< rows x rank, row-major
  std::vector<double> H;  ///< rank x cols, row-major
  std::vector<double> A;  ///< rows x cols, row-major: W H
};

/// Planted ratings: a sample of X Y^T (plus noise) at random positions.
struct PlantedRatings {
  CooMatrix<double> ratings;  ///< rows x cols, in row-major position order
  int rank = 0;
  std::vector<double> X;  ///< rows x rank, row-major
  std::vector<double> Y;  ///< cols x rank, row-major
};

namespace detail {
inline void check_planted_shape(const char* what, std::int64_t rows, std::int64_t cols, int rank) {
  if (rows < 1 || cols < 1 || rank < 1)
    throw UsageError(std::string(what) + ": rows, cols and rank must be >= 1, got " + std::to_string(rows) + " x " +
                     std::to_string(cols) + ", rank " + std::to_string(rank));
}
inline void check_fraction(const char* what, const char* name, double v) {
  if (!(v >= 0.0 && v <= 1.0))
    throw UsageError(std::string(what) + ": " + name + " must be in [0, 1], got " + std::to_string(v));
}
// Counter offsets that keep the draws of W, H, the mask and the noise apart
// for any size below 2^40 entries.
constexpr std::uint64_t planted_block = std::uint64_t(1) << 40;
}  // namespace detail

/// rows x cols A = W H with W, H uniform in [0, 1) except that each entry is
/// zero with probability `zero_fraction` (sparse factors make the minimizer
/// unique up to scaling, so NMF should reach a relative error near 0).
inline PlantedNonnegative planted_nonnegative(std::int64_t rows, std::int64_t cols, int rank, double zero_fraction,
                                              std::uint64_t seed) {
  detail::check_planted_shape("planted_nonnegative", rows, cols, rank);
  detail::check_fraction("planted_nonnegative", "zero_fraction", zero_fraction);
  const CounterRng rng(seed, RngStream::user);
  PlantedNonnegative p;
  p.rows = rows;
  p.cols = cols;
  p.rank = rank;
  p.W.resize(static_cast<std::size_t>(rows * rank));
  p.H.resize(static_cast<std::size_t>(rank * cols));
  auto draw = [&](std::uint64_t base, std::size_t e) {
    return rng.uniform(base + 2 * e) < zero_fraction ? 0.0 : rng.uniform(base + 2 * e + 1);
  };
  for (std::size_t e = 0; e < p.W.size(); ++e) p.W[e] = draw(0, e);
  for (std::size_t e = 0; e < p.H.size(); ++e) p.H[e] = draw(2 * detail::planted_block, e);
  p.A.assign(static_cast<std::size_t>(rows * cols), 0.0);
  for (std::int64_t i = 0; i < rows; ++i)
    for (int k = 0; k < rank; ++k)
      for (std::int64_t j = 0; j < cols; ++j) p.A[i * cols + j] += p.W[i * rank + k] * p.H[k * cols + j];
  return p;
}

/// rows x cols ratings: X and Y uniform in [0, 1), each position observed
/// with probability `density`, value x_u . y_i + noise * (uniform - 1/2).
inline PlantedRatings planted_ratings(std::int64_t rows, std::int64_t cols, int rank, double density, double noise,
                                      std::uint64_t seed) {
  detail::check_planted_shape("planted_ratings", rows, cols, rank);
  detail::check_fraction("planted_ratings", "density", density);
  if (!(noise >= 0.0) || !std::isfinite(noise))
    throw UsageError("planted_ratings: noise must be finite and >= 0, got " + std::to_string(noise));
  const CounterRng rng(seed, RngStream::user);
  constexpr auto block = detail::planted_block;
  PlantedRatings p;
  p.rank = rank;
  p.X.resize(static_cast<std::size_t>(rows * rank));
  p.Y.resize(static_cast<std::size_t>(cols * rank));
  for (std::size_t i = 0; i < p.X.size(); ++i) p.X[i] = rng.uniform(i);
  for (std::size_t i = 0; i < p.Y.size(); ++i) p.Y[i] = rng.uniform(block | i);
  auto& c = p.ratings;
  c.num_rows = rows;
  c.num_cols = cols;
  for (std::int64_t u = 0; u < rows; ++u)
    for (std::int64_t i = 0; i < cols; ++i) {
      const auto key = static_cast<std::uint64_t>(u * cols + i);
      if (rng.uniform(2 * block | key) >= density) continue;
      double v = 0;
      for (int k = 0; k < rank; ++k) v += p.X[u * rank + k] * p.Y[i * rank + k];
      c.rows.push_back(static_cast<ordinal_t>(u));
      c.cols.push_back(static_cast<ordinal_t>(i));
      c.values.push_back(v + noise * (rng.uniform(3 * block | key) - 0.5));
    }
  return p;
}

/// rows x cols ratings of users and items in `rank` taste groups: user u
/// belongs to group u % rank and item i to i % rank; a factor row is 1.5 (X)
/// or 2.0 (Y) in its group's column and 0.2 (X) or 0.3 (Y) elsewhere, plus
/// uniform noise in [0, 0.2). Users of a group are near neighbours, which is
/// what graph-regularized NMF (mnmf) exploits. Positions are observed with
/// probability `density`; the values are exact x_u . y_i.
inline PlantedRatings planted_group_ratings(std::int64_t rows, std::int64_t cols, int rank, double density,
                                            std::uint64_t seed) {
  detail::check_planted_shape("planted_group_ratings", rows, cols, rank);
  detail::check_fraction("planted_group_ratings", "density", density);
  const CounterRng rng(seed, RngStream::user);
  std::uint64_t ctr = 0;
  PlantedRatings p;
  p.rank = rank;
  p.X.resize(static_cast<std::size_t>(rows * rank));
  p.Y.resize(static_cast<std::size_t>(cols * rank));
  for (std::int64_t u = 0; u < rows; ++u)
    for (int k = 0; k < rank; ++k) p.X[u * rank + k] = (k == u % rank ? 1.5 : 0.2) + 0.2 * rng.uniform(ctr++);
  for (std::int64_t i = 0; i < cols; ++i)
    for (int k = 0; k < rank; ++k) p.Y[i * rank + k] = (k == i % rank ? 2.0 : 0.3) + 0.2 * rng.uniform(ctr++);
  auto& c = p.ratings;
  c.num_rows = rows;
  c.num_cols = cols;
  for (std::int64_t u = 0; u < rows; ++u)
    for (std::int64_t i = 0; i < cols; ++i)
      if (rng.uniform(ctr++) < density) {
        double v = 0;
        for (int k = 0; k < rank; ++k) v += p.X[u * rank + k] * p.Y[i * rank + k];
        c.rows.push_back(static_cast<ordinal_t>(u));
        c.cols.push_back(static_cast<ordinal_t>(i));
        c.values.push_back(v);
      }
  return p;
}

}  // namespace kfactor
