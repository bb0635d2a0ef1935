#pragma once
/// \file
/// The distributed SDDMM's building block: S's columns split into P
/// contiguous blocks balanced by nonzeros (the paper's non-symmetric
/// partition, §IV-C). Rank p owns columns [b_p, b_{p+1}) of S and the same
/// rows of B; A is replicated. Parts may be empty (P > N).

#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/sddmm/options.hpp>

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <vector>

namespace kfactor {

using distributed::column_counts;

/// P + 1 boundaries of contiguous column blocks of S balanced by nonzeros
/// (kfactor::distributed::balanced_column_blocks on S's column counts).
template <class T, class Mem>
std::vector<ordinal_t> balanced_column_blocks(const CsrMatrix<T, Mem>& S, int parts) {
  return distributed::balanced_column_blocks(column_counts(S), parts);
}

/// One rank's share of S for columns [begin, end): the local CSR (M x
/// (end - begin), column indices re-based to 0) and, per local nonzero, its
/// position in S (to scatter or gather the output). Rank p then runs its own
/// plan on (local, A, rows [begin, end) of B).
template <class T, class Mem>
struct ColumnBlock {
  CsrMatrix<T, Mem> local;
  Kokkos::View<offset_t*, Mem> positions;
  ordinal_t begin = 0, end = 0;
};

template <class T, class Mem>
ColumnBlock<T, Mem> extract_column_block(const CsrMatrix<T, Mem>& S, ordinal_t begin, ordinal_t end) {
  if (begin < 0 || end < begin || end > S.num_cols)
    throw UsageError("extract_column_block: [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") is not a column range of a matrix with " + std::to_string(S.num_cols) + " columns");
  auto h = copy_to<Kokkos::HostSpace>(S);
  const ordinal_t m = S.num_rows();
  std::vector<offset_t> rm(static_cast<std::size_t>(m) + 1, 0), pos;
  std::vector<ordinal_t> ent;
  std::vector<T> val;
  for (ordinal_t i = 0; i < m; ++i) {
    for (auto e = h.row_map(i); e < h.row_map(i + 1); ++e)
      if (h.entries(e) >= begin && h.entries(e) < end) {
        ent.push_back(h.entries(e) - begin);
        val.push_back(h.values(e));
        pos.push_back(e);
      }
    rm[i + 1] = ent.size();
  }
  auto up = [](const auto& v, const char* label) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    Kokkos::View<V*, Mem> d(std::string(label), v.size());
    Kokkos::deep_copy(
        d, Kokkos::View<const V*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
    return d;
  };
  ColumnBlock<T, Mem> b;
  b.local = CsrMatrix<T, Mem>(up(rm, "kfactor::block_row_map"), up(ent, "kfactor::block_entries"),
                              up(val, "kfactor::block_values"), end - begin);
  b.positions = up(pos, "kfactor::block_positions");
  b.begin = begin;
  b.end = end;
  return b;
}

}  // namespace kfactor
