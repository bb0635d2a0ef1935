// Distributed nmf and als from a partitioned read (distributed::read_rows:
// text cut into byte ranges, or an HDF5 CSR file read by hyperslab) under
// mpiexec (1..4 ranks), against today's path where every rank reads the
// whole file and keeps its blocks: the problems are equal bit for bit
// (blocks, row and column CSRs, norms, held-out splits, a given test set),
// so are the fingerprints, and the iterates after a few epochs; the
// checks of the whole-matrix path still refuse bad input on every rank.
#include <kfactor/als/als.hpp>
#include <kfactor/config.hpp>
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/nmf.hpp>
#include <kfactor/distributed/read.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/nmf/nmf.hpp>

#include "common/test_spaces.hpp"
#include "mpi_test_util.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace kfactor;
using kfactor::test::shared_dir;
using kfactor::test::world_rank;
using kfactor::test::world_size;
namespace dn = kfactor::distributed::nmf;
namespace da = kfactor::distributed::als;
using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

template <class V>
bool same_view(const V& a, const V& b) {
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b);
  if (ha.size() != hb.size()) return false;
  return ha.size() == 0 || std::memcmp(ha.data(), hb.data(), ha.size() * sizeof(typename V::non_const_value_type)) == 0;
}

template <class T>
bool same_csr(const CsrMatrix<T, Mem>& a, const CsrMatrix<T, Mem>& b) {
  return a.num_rows() == b.num_rows() && a.num_cols == b.num_cols && same_view(a.row_map, b.row_map) &&
         same_view(a.entries, b.entries) && same_view(a.values, b.values);
}

/// `count` ratings of `users` x `items` (distinct pairs) with sparse ids,
/// in a random line order, as CSV with a header.
void write_ratings(const std::string& path, int users, int items, int count, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::ofstream f(path);
  f << "userId,movieId,rating,timestamp\n";
  std::vector<std::pair<int, int>> pairs;
  for (int u = 0; u < users; ++u)
    for (int i = 0; i < items; ++i) pairs.emplace_back(u, i);
  std::shuffle(pairs.begin(), pairs.end(), g);
  pairs.resize(static_cast<std::size_t>(count));
  for (const auto& [u, i] : pairs)
    f << 7 * u + 3 << "," << 100 + 13 * i << "," << 0.5 * double(1 + g() % 10) << "," << 1000000 + g() % 1000 << "\n";
}

/// The test inputs on every rank: a ratings text, its HDF5 CSR copy, and a
/// held-out file with a subset of the same ids.
struct Inputs {
  std::filesystem::path dir;
  std::string text, h5, heldout;
};

Inputs make_inputs(const std::string& tag) {
  Inputs in;
  in.dir = shared_dir(tag);
  in.text = (in.dir / "ratings.csv").string();
  in.h5 = (in.dir / "ratings.h5").string();
  in.heldout = (in.dir / "heldout.csv").string();
  if (world_rank() == 0) {
    write_ratings(in.text, 83, 61, 1400, 3);
    write_ratings(in.heldout, 40, 30, 120, 4);
#if defined(KFACTOR_HAVE_HDF5)
    const auto r = io::read_input<double>(in.text);
    io::write_hdf5_csr(in.h5, r.matrix, r.user_ids, r.item_ids);
#endif
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return in;
}

void remove_inputs(const Inputs& in) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(in.dir);
}

std::vector<std::string> sources(const Inputs& in) {
#if defined(KFACTOR_HAVE_HDF5)
  return {in.text, in.h5};
#else
  return {in.text};
#endif
}

/// Every layout of the run's ranks: 1D, each pr x pc grid of them, and the
/// automatic choice.
std::vector<dn::Grid> all_grids() {
  std::vector<dn::Grid> out{dn::Grid{.one_d = true}, dn::Grid{}};
  for (int pr = 1; pr <= world_size(); ++pr)
    if (world_size() % pr == 0) out.push_back(dn::Grid{pr, world_size() / pr});
  return out;
}

template <class T>
void nmf_equals_today(const std::string& path, const dn::Grid& grid) {
  SCOPED_TRACE(path + " on " + std::to_string(world_size()) + " ranks, grid " + dn::to_string(grid) + ", " +
               (sizeof(T) == 4 ? "float" : "double"));
  const Exec exec;
  // Today's path: the whole file on every rank, values to T, CSR, blocks.
  const auto whole = io::read_input<double>(path).matrix;
  CooMatrix<T> coo;
  coo.num_rows = whole.num_rows;
  coo.num_cols = whole.num_cols;
  coo.rows = whole.rows;
  coo.cols = whole.cols;
  coo.values.assign(whole.values.begin(), whole.values.end());
  const auto A = to_csr(exec, coo);
  const auto ref = dn::make_problem(exec, MPI_COMM_WORLD, A, grid);
  // No rank holds the whole file: neither what it read nor its block.
  const auto rows = distributed::read_rows<double>(MPI_COMM_WORLD, path);
  const auto p = dn::make_problem(exec, MPI_COMM_WORLD, distributed::convert_values<T>(rows), grid);
  if (world_size() > 1) {
    EXPECT_LT(rows.entries.nnz(), whole.nnz());
    EXPECT_LT(static_cast<std::size_t>(p.rows.nnz()), whole.nnz());
  }
  EXPECT_EQ(p.grid, ref.grid);
  EXPECT_FALSE(p.grid.automatic());
  EXPECT_EQ(p.grid_row, ref.grid_row);
  EXPECT_EQ(p.grid_col, ref.grid_col);
  EXPECT_EQ(p.row_bounds, ref.row_bounds);
  EXPECT_EQ(p.col_bounds, ref.col_bounds);
  EXPECT_EQ(p.w_pieces, ref.w_pieces);
  EXPECT_EQ(p.h_pieces, ref.h_pieces);
  EXPECT_EQ(p.row_begin(), ref.row_begin());
  EXPECT_EQ(p.local_rows(), ref.local_rows());
  EXPECT_EQ(p.col_begin(), ref.col_begin());
  EXPECT_EQ(p.local_cols(), ref.local_cols());
  EXPECT_EQ(p.global_rows, ref.global_rows);
  EXPECT_EQ(p.global_cols, ref.global_cols);
  EXPECT_EQ(p.global_nnz, ref.global_nnz);
  EXPECT_EQ(p.norm2, ref.norm2);
  EXPECT_TRUE(same_csr(p.rows, ref.rows));
  EXPECT_TRUE(same_csr(p.cols, ref.cols));
  const auto fp = dn::fingerprint(exec, p);
  const auto want = fingerprint(exec, A);
  EXPECT_EQ(fp.checksum, want.checksum);
  EXPECT_EQ(fp.rows, want.rows);
  EXPECT_EQ(fp.cols, want.cols);
  EXPECT_EQ(fp.nnz, want.nnz);
  nmf::Options o;
  o.rank = 5;
  o.seed = 17;
  auto s = dn::init(exec, p, o), t = dn::init(exec, ref, o);
  for (int k = 0; k < 4; ++k) {
    dn::step(exec, p, o, s);
    dn::step(exec, ref, o, t);
  }
  EXPECT_TRUE(same_view(s.W, t.W));
  EXPECT_TRUE(same_view(s.Ht, t.Ht));
  // The iteration moved (so equal factors are not trivially equal).
  EXPECT_FALSE(same_view(s.W, dn::init(exec, ref, o).W));
}

TEST(ReadSolvers, NmfFromPartitionedReadsEqualsTheWholeFilePath) {
  const auto in = make_inputs("read_nmf");
  for (const auto& grid : all_grids())
    for (const auto& path : sources(in)) {
      nmf_equals_today<double>(path, grid);
      nmf_equals_today<float>(path, grid);
    }
  const auto movielens = kfactor::test::data_path("movielens-latest-small/ratings.csv");
  if (std::ifstream(movielens).good()) nmf_equals_today<double>(movielens, dn::Grid{});
  remove_inputs(in);
}

template <class T>
void als_equals_today(const std::string& path, const std::string& heldout, double fraction) {
  SCOPED_TRACE(path + " on " + std::to_string(world_size()) + " ranks, fraction " + std::to_string(fraction) +
               (heldout.empty() ? "" : ", given test set"));
  const Exec exec;
  // Today's path: the whole ratings (and test set) on every rank.
  const auto R = io::read_input<T>(path);
  std::optional<CooMatrix<T>> given;
  if (!heldout.empty())
    given = io::reindex_ratings(io::read_input<T>(heldout), R, io::UnknownIds::drop, heldout).matrix;
  const auto full = als::make_problem(exec, R.matrix, fraction, 29, given ? &*given : nullptr);
  const auto ref = da::distribute(exec, MPI_COMM_WORLD, full);
  // Partitioned: no rank holds the whole ratings.
  const auto rows = distributed::read_rows<T>(MPI_COMM_WORLD, path);
  std::optional<distributed::RowSlice<T>> g;
  if (!heldout.empty())
    g = distributed::reindex_rows(MPI_COMM_WORLD, distributed::read_rows<T>(MPI_COMM_WORLD, heldout), rows,
                                  io::UnknownIds::drop, heldout);
  const auto lp = da::distribute(exec, MPI_COMM_WORLD, rows, fraction, 29, g ? &*g : nullptr);
  EXPECT_EQ(lp.user_bounds, ref.user_bounds);
  EXPECT_EQ(lp.item_bounds, ref.item_bounds);
  EXPECT_EQ(lp.users, ref.users);
  EXPECT_EQ(lp.items, ref.items);
  EXPECT_EQ(lp.nnz, ref.nnz);
  EXPECT_EQ(lp.test_nnz, ref.test_nnz);
  EXPECT_EQ(lp.given_test_nnz, ref.given_test_nnz);
  if (fraction > 0) EXPECT_GT(lp.test_nnz, 0);
  if (!heldout.empty()) EXPECT_GT(lp.given_test_nnz, 0);
  EXPECT_TRUE(same_csr(lp.train, ref.train));
  EXPECT_TRUE(same_csr(lp.train_t, ref.train_t));
  EXPECT_TRUE(same_csr(lp.test, ref.test));
  EXPECT_TRUE(same_csr(lp.given_test, ref.given_test));
  const auto fp = distributed::fingerprint(exec, MPI_COMM_WORLD, lp.train, lp.user_begin(), lp.users);
  EXPECT_EQ(fp.checksum, fingerprint(exec, full.train).checksum);
  da::Options o;
  o.rank = 4;
  o.stop.max_iterations = 3;
  o.lambda = 0.1;
  o.layout = als::Layout::csr;
  o.seed = 5;
  o.factor_layout = da::FactorLayout::replicated;
  auto a = da::solve(exec, MPI_COMM_WORLD, lp, o);
  auto b = da::solve(exec, MPI_COMM_WORLD, ref, o);
  EXPECT_TRUE(same_view(da::gather_X(exec, a.state), da::gather_X(exec, b.state)));
  EXPECT_TRUE(same_view(da::gather_Y(exec, a.state), da::gather_Y(exec, b.state)));
  EXPECT_EQ(a.report.metrics.items, b.report.metrics.items);
}

TEST(ReadSolvers, AlsFromPartitionedReadsEqualsTheWholeFilePath) {
  const auto in = make_inputs("read_als");
  for (const auto& path : sources(in)) {
    als_equals_today<float>(path, "", 0.1);
    als_equals_today<double>(path, in.heldout, 0.0);
  }
  remove_inputs(in);
}

TEST(ReadSolvers, BadInputIsRefusedOnEveryRank) {
  const Exec exec;
  const auto dir = shared_dir("read_bad");
  const std::string zeros = (dir / "zeros.mtx").string(), unknown = (dir / "unknown.csv").string(),
                    train = (dir / "train.csv").string();
  if (world_rank() == 0) {
    std::ofstream(zeros) << "%%MatrixMarket matrix coordinate real general\n5 4 3\n1 1 0\n2 2 0\n5 4 0\n";
    std::ofstream(train) << "1,10,3\n2,20,4\n3,30,5\n4,40,1\n";
    std::ofstream(unknown) << "1,10,3\n4,99,2\n";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  // All-zero input: nmf's and als's own messages, on every rank.
  const auto z = distributed::read_rows<double>(MPI_COMM_WORLD, zeros);
  if (world_size() <= 4) {
    for (const auto& grid : all_grids())
      EXPECT_THROW((void)dn::make_problem(exec, MPI_COMM_WORLD, z, grid), InputError) << dn::to_string(grid);
    // A grid of other than the run's ranks.
    EXPECT_THROW((void)dn::make_problem(exec, MPI_COMM_WORLD, z, dn::Grid{world_size() + 1, 1}), UsageError);
    std::vector<ordinal_t> too_many(static_cast<std::size_t>(world_size()) + 1);
    for (std::size_t b = 0; b < too_many.size(); ++b) too_many[b] = static_cast<ordinal_t>(b);
    too_many.push_back(5);
    EXPECT_THROW((void)distributed::move_blocks(MPI_COMM_WORLD, z, too_many, {0, 4}), UsageError);
    try {
      (void)da::distribute(exec, MPI_COMM_WORLD, z, 0.0, 1);
      ADD_FAILURE() << "all-zero ratings accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("every rating is zero"), std::string::npos) << e.what();
      EXPECT_TRUE(distributed::is_agreed(e) || world_size() == 1);
    }
  }
  // An id of the test set the ratings lack: reindex_ratings' message, with
  // the entry numbered in the whole held-out matrix.
  const auto r = distributed::read_rows<double>(MPI_COMM_WORLD, train);
  const auto h = distributed::read_rows<double>(MPI_COMM_WORLD, unknown);
  std::string whole_message;
  try {
    (void)io::reindex_ratings(io::read_input<double>(unknown), io::read_input<double>(train), io::UnknownIds::reject,
                              unknown);
  } catch (const InputError& e) {
    whole_message = e.what();
  }
  ASSERT_FALSE(whole_message.empty());
  try {
    (void)distributed::reindex_rows(MPI_COMM_WORLD, h, r, io::UnknownIds::reject, unknown);
    ADD_FAILURE() << "unknown id accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), whole_message);
  }
  // More ranks than users: distribute's usage error.
  if (world_size() > 1) {
    const std::string one = (dir / "one.csv").string();
    if (world_rank() == 0) std::ofstream(one) << "1,10,3\n1,11,2\n";
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_THROW(
        (void)da::distribute(exec, MPI_COMM_WORLD, distributed::read_rows<double>(MPI_COMM_WORLD, one), 0.0, 1),
        UsageError);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
