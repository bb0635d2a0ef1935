#pragma once
/// \file
/// Writers of 0/1 factors (Boolean MF's A and B, one byte per bit) in the
/// formats of io/write.hpp: the coordinate Matrix Market file of their ones,
/// or a CSV factor file `id,f0,...` with one line per id. `out` is as for
/// the writers of io/write.hpp (the run's inputs, an OutputSet member).

#include <kfactor/core/matrix.hpp>
#include <kfactor/io/write.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kfactor::io {

/// X's ones as `%%MatrixMarket matrix coordinate real general` (value 1).
template <class... P>
void write_bit_factor_matrix_market(const std::string& path, const Kokkos::View<std::uint8_t**, P...>& X,
                                    const std::string& comment = {}, const OutputOptions& out = {}) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  CooMatrix<double> c;
  c.num_rows = std::int64_t(h.extent(0));
  c.num_cols = std::int64_t(h.extent(1));
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t j = 0; j < h.extent(1); ++j)
      if (h(i, j)) {
        c.rows.push_back(ordinal_t(i));
        c.cols.push_back(ordinal_t(j));
        c.values.push_back(1.0);
      }
  write_matrix_market(path, c, comment, out);
}

/// X as a CSV factor file with one line per id: X's rows, or with
/// `transpose` its columns (a k x n factor written as n lines of k bits).
template <class... P>
void write_bit_factor_csv(const std::string& path, const Kokkos::View<std::uint8_t**, P...>& X, bool transpose,
                          const std::vector<std::int64_t>& ids, const OutputOptions& out = {}) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, X);
  const std::size_t n = transpose ? h.extent(1) : h.extent(0), k = transpose ? h.extent(0) : h.extent(1);
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> F("kfactor::io::bit_factor", n, k);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t l = 0; l < k; ++l) F(i, l) = transpose ? h(l, i) : h(i, l);
  write_factor(path, F, ids, {}, out);
}

}  // namespace kfactor::io
