#pragma once
/// \file
/// HDF5 checkpoints and exact restart for any solver whose State lists its
/// fields through `visit`.
///
/// A State (see core/solver.hpp) provides
/// ```
///   template <class F> void visit(F&& f);   // f("name", x) for every field
/// ```
/// where x is a Kokkos View of rank 1 or 2 in any memory space (float,
/// double or integer elements), an arithmetic lvalue (int, double,
/// std::uint64_t, std::int64_t, ...), a kfactor::CounterRng, or the State's
/// kfactor::MetricHistory. A State with a `history` member that `visit` does
/// not list gets it saved and restored anyway; a State with an integer
/// `iteration` member has it recorded in the file's metadata.
///
/// ```
///   auto meta = kfactor::checkpoint_meta<double, Exec>("nmf", kfactor::option_values(options),
///                                                      kfactor::fingerprint(exec, A), K);
///   kfactor::save_checkpoint("run.h5", state, meta);          // atomic
///   auto state2 = init(exec, problem, options);                // same shapes
///   kfactor::load_checkpoint("run.h5", state2, meta);          // verifies, then copies
/// ```
/// save_checkpoint builds the file in memory (one host copy of it), then
/// writes it as every kfactor output is written (kfactor/io/write.hpp):
/// `path.tmp.<pid>`, fsync, rename over `path`, so a crash or a failing write
/// (a full disk included: RuntimeFailure) leaves the previous checkpoint as
/// it was and no temporary behind. It refuses (UsageError naming the path) a
/// target that is not a regular file or is one of CheckpointMeta::input_files,
/// writes through a symbolic link, and holds an advisory lock on
/// `path.lock` while it writes; checkpoint_observer() holds that lock for the
/// whole run, so a second run aiming at the same checkpoint is refused.
/// load_checkpoint throws kfactor::InputError, naming the file and the
/// reason, for a missing, truncated or corrupt file (every dataset carries a
/// checksum), another format version, solver, precision, rank K or input
/// matrix, a missing field, and a field whose element type or shape differs
/// from the State's; and UsageError naming the option when an option that
/// decides the iterates differs. These are all detected before anything is
/// copied; only a checksum failure found while copying leaves the State
/// partly overwritten. A restart in another execution setup (execution
/// space, thread count, number of MPI ranks) is not refused but named in the
/// returned metadata (CheckpointMeta::setup_change) for the caller to report.
///
/// The file layout (readable with h5dump and h5py) is documented in
/// docs/checkpoints.md: root attributes for the metadata, `/input` attributes
/// for the fingerprint, `/state/<name>` datasets, `/history/{iteration,values}`.
///
/// Distributed runs (KFACTOR_HAVE_MPI) name the row-partitioned fields in a
/// RowBlocks map (kfactor/distributed/partition.hpp): one file is written
/// collectively with parallel HDF5 where available (each rank writes its row
/// hyperslab) or gathered to rank 0 and written like a serial save; a restart
/// on any number of ranks reads each rank's rows. The collective form writes
/// its temporary in place through MPI-IO rather than from a memory image, so
/// there a full disk is reported only as far as HDF5's MPI-IO driver reports
/// it; rank 0 still seals, fsyncs and renames, and removes the temporary on
/// failure.
///
/// Integrity: the file starts with a seal (a hash of its HDF5 metadata, see
/// src/checkpoint/format.hpp) checked before HDF5 parses anything; every
/// dataset carries its own checksum; and the reader checks that the byte
/// ranges the seal leaves out are exactly the raw data of the datasets it
/// finds, so a seal cannot exempt metadata or attributes from the hash.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/distributed/partition.hpp>
#include <kfactor/io/detail/checkpoint_fields.hpp>
#include <kfactor/io/write.hpp>

#include <Kokkos_BitManipulation.hpp>
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>
#endif

namespace kfactor {

/// Version of the file layout this build writes and reads.
inline constexpr int checkpoint_format_version = 1;

/// Identity of a solver's input: shape, stored entries and a 64-bit checksum
/// of structure and values (see fingerprint()).
struct InputFingerprint {
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::uint64_t checksum = 0;
  friend bool operator==(const InputFingerprint&, const InputFingerprint&) = default;
  [[nodiscard]] bool empty() const { return rows == 0 && cols == 0 && nnz == 0 && checksum == 0; }
};

/// "100 x 80, nnz 500, checksum 0x0123456789abcdef"
inline std::string to_string(const InputFingerprint& f) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(f.checksum));
  return std::to_string(f.rows) + " x " + std::to_string(f.cols) + ", nnz " + std::to_string(f.nnz) + ", checksum 0x" +
         hex;
}

/// What a checkpoint records besides the State, and what load_checkpoint()
/// checks. In the `expected` argument of load_checkpoint() an empty string,
/// rank 0 or an empty fingerprint means "do not check this item".
struct CheckpointMeta {
  std::string solver;  ///< "nmf", "als", "bmf", "mnmf", ...
  int format_version = checkpoint_format_version;
  /// The options that decide the iterates (kfactor::option_values()). On
  /// restart, every key the expected meta lists must be in the file with the
  /// same text: a difference is a UsageError naming the option.
  std::map<std::string, std::string> options;
  InputFingerprint input;       ///< fingerprint of the input matrix
  std::string precision;        ///< "float" | "double"
  std::int64_t rank = 0;        ///< factorization rank K
  std::string backend;          ///< execution space, e.g. "openmp", "cuda" (recorded, not checked)
  std::int64_t iteration = -1;  ///< filled by save from State::iteration when it has one
  int mpi_ranks = 1;            ///< number of ranks that wrote the file (filled by save)
  /// The execution space as Kokkos names it ("OpenMP", "Cuda", "Serial") and
  /// its concurrency() (threads; in a distributed run rank 0's, per rank).
  /// Together with mpi_ranks they decide how parallel sums are split, and so
  /// the rounding of every solver that reduces in floating point: a restart
  /// in another setup continues correctly but not necessarily bit for bit
  /// (see setup_change). Empty and 0 mean "not recorded" (files written before
  /// kfactor recorded them, or a meta not made by checkpoint_meta()); such a
  /// file is written without the two attributes.
  std::string execution_space;
  int concurrency = 0;
  /// Never stored: filled by load_checkpoint() in the metadata it returns.
  /// Empty when the file was written by the execution space, concurrency and
  /// number of MPI ranks of the loading run (`expected` and the
  /// communicator), or when the file or `expected` does not record them;
  /// otherwise a sentence for a warning, "checkpoint written with OpenMP x 4
  /// threads, resuming with OpenMP x 2: the continuation is not guaranteed
  /// to be bit-identical to an uninterrupted run". The library does not
  /// print it; drivers do.
  std::string setup_change;
  /// The run's input files (neither stored nor compared): a save refuses to
  /// write over one of them (io::check_write_target(), device and inode).
  std::vector<std::string> input_files;
};

/// "float", "double" (else the checkpoint element type's name).
template <class T>
std::string precision_name() {
  if constexpr (std::is_same_v<std::remove_cv_t<T>, float>)
    return "float";
  else if constexpr (std::is_same_v<std::remove_cv_t<T>, double>)
    return "double";
  else
    return detail::to_string(detail::checkpoint_type_of<T>());
}

/// Metadata for a solver running in ExecutionSpace on T factors: fills
/// precision and backend from the types, execution_space and concurrency
/// from ExecutionSpace's default instance (Kokkos must be initialized).
template <class T, class ExecutionSpace>
CheckpointMeta checkpoint_meta(std::string solver, std::map<std::string, std::string> options,
                               const InputFingerprint& input, std::int64_t rank) {
  CheckpointMeta m;
  m.solver = std::move(solver);
  m.options = std::move(options);
  m.input = input;
  m.precision = precision_name<T>();
  m.rank = rank;
  m.backend = backend_name<ExecutionSpace>();
  m.execution_space = ExecutionSpace::name();
  m.concurrency = ExecutionSpace().concurrency();
  return m;
}

namespace detail {
/// CheckpointMeta::setup_change for the file `stored` loaded by a run that
/// `current` describes, on `mpi_ranks` ranks.
inline std::string setup_change(const CheckpointMeta& stored, const CheckpointMeta& current, int mpi_ranks) {
  if (stored.execution_space.empty() || current.execution_space.empty()) return {};
  if (stored.execution_space == current.execution_space && stored.concurrency == current.concurrency &&
      stored.mpi_ranks == mpi_ranks)
    return {};
  // The rank counts are named only when they differ: most runs have one.
  const bool ranks_differ = stored.mpi_ranks != mpi_ranks;
  auto on = [&](int n) {
    return ranks_differ ? " on " + std::to_string(n) + (n == 1 ? " MPI rank" : " MPI ranks") : std::string();
  };
  return "checkpoint written with " + stored.execution_space + " x " + std::to_string(stored.concurrency) + " threads" +
         on(stored.mpi_ranks) + ", resuming with " + current.execution_space + " x " +
         std::to_string(current.concurrency) + on(mpi_ranks) +
         ": the continuation is not guaranteed to be bit-identical to an uninterrupted run";
}
}  // namespace detail

// ---- fingerprints -----------------------------------------------------------

namespace detail {
/// Hash of one stored entry (r, c, v): the value as a double, -0 as +0.
KOKKOS_INLINE_FUNCTION std::uint64_t entry_hash(std::uint64_t linear_index, double v) {
  if (v == 0.0) v = 0.0;
  const auto bits = Kokkos::bit_cast<std::uint64_t>(v);
  return CounterRng::mix(CounterRng::mix(linear_index) ^ (bits * 0xD6E8FEB86659FD93ULL));
}
inline std::uint64_t finish_fingerprint(std::uint64_t sum, std::int64_t rows, std::int64_t cols, std::int64_t nnz) {
  std::uint64_t h = CounterRng::mix(static_cast<std::uint64_t>(rows));
  h = CounterRng::mix(h ^ static_cast<std::uint64_t>(cols));
  h = CounterRng::mix(h ^ static_cast<std::uint64_t>(nnz));
  return CounterRng::mix(h ^ sum);
}
}  // namespace detail

/// Fingerprint of a CSR matrix, computed in `exec`: the checksum sums a mixed
/// hash of (row * cols + col, value as double) over the stored entries, so it
/// is independent of thread count and backend, and equals the fingerprint of
/// the same matrix given densely (when no stored value is zero).
template <class ExecutionSpace, class T, class MemorySpace>
InputFingerprint fingerprint(const ExecutionSpace& exec, const CsrMatrix<T, MemorySpace>& A) {
  auto row_map = A.row_map;
  auto entries = A.entries;
  auto values = A.values;
  const std::uint64_t ncols = static_cast<std::uint64_t>(A.num_cols);
  std::uint64_t sum = 0;
  Kokkos::parallel_reduce(
      "kfactor::fingerprint_csr", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, A.num_rows()),
      KOKKOS_LAMBDA(ordinal_t r, std::uint64_t& s) {
        for (auto e = row_map(r); e < row_map(r + 1); ++e)
          s += detail::entry_hash(static_cast<std::uint64_t>(r) * ncols + static_cast<std::uint64_t>(entries(e)),
                                  static_cast<double>(values(e)));
      },
      sum);
  InputFingerprint f;
  f.rows = A.num_rows();
  f.cols = A.num_cols;
  f.nnz = static_cast<std::int64_t>(A.nnz());
  f.checksum = detail::finish_fingerprint(sum, f.rows, f.cols, f.nnz);
  return f;
}

/// Fingerprint of a dense rank-2 view (nnz counts the nonzero entries).
template <class ExecutionSpace, class View>
  requires Kokkos::is_view_v<View>  // not an unnamed enable_if: nvcc needs named template parameters
InputFingerprint fingerprint(const ExecutionSpace& exec, const View& D) {
  static_assert(View::rank() == 2, "fingerprint takes a CsrMatrix or a rank-2 view");
  const std::uint64_t ncols = D.extent(1);
  std::uint64_t sum = 0;
  std::int64_t count = 0;
  Kokkos::parallel_reduce(
      "kfactor::fingerprint_dense", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, D.extent(0)),
      KOKKOS_LAMBDA(std::size_t r, std::uint64_t& s, std::int64_t& c) {
        // Local sums and selects, not a branch, so that the row's loop is
        // vector code (the reduction's references may alias each other).
        std::uint64_t hashes = 0;
        std::int64_t nonzeros = 0;
        for (std::size_t j = 0; j < ncols; ++j) {
          const double v = static_cast<double>(D(r, j));
          hashes += v != 0.0 ? detail::entry_hash(r * ncols + j, v) : 0;
          nonzeros += v != 0.0 ? 1 : 0;
        }
        s += hashes;
        c += nonzeros;
      },
      sum, count);
  InputFingerprint f;
  f.rows = static_cast<std::int64_t>(D.extent(0));
  f.cols = static_cast<std::int64_t>(D.extent(1));
  f.nnz = count;
  f.checksum = detail::finish_fingerprint(sum, f.rows, f.cols, f.nnz);
  return f;
}

/// The same, in the default execution space of the matrix's memory space.
template <class T, class MemorySpace>
InputFingerprint fingerprint(const CsrMatrix<T, MemorySpace>& A) {
  return fingerprint(typename MemorySpace::execution_space{}, A);
}
template <class View>
  requires Kokkos::is_view_v<View>
InputFingerprint fingerprint(const View& D) {
  return fingerprint(typename View::memory_space::execution_space{}, D);
}

// ---- compiled part (src/checkpoint/, HDF5 stays there) ------------------------

#if defined(KFACTOR_HAVE_MPI)
/// How a distributed save writes its one file.
enum class DistributedIo {
  automatic,   ///< collective when built with parallel HDF5, else gather
  collective,  ///< parallel HDF5: every rank writes its row hyperslab
  gather,      ///< gather the row blocks to rank 0, which writes serially
};
#endif

/// Row-partitioned fields by name (kfactor/distributed/partition.hpp);
/// fields not named are replicated (every rank holds the same value; rank
/// 0's copy is written).
using distributed::RowBlock;
using distributed::RowBlocks;

namespace detail {

/// Writes one checkpoint file atomically: a temporary beside `path`, renamed
/// over it by commit(); destroyed uncommitted, it removes the temporary.
class CheckpointWriter {
 public:
  CheckpointWriter(const std::string& path, const CheckpointMeta& meta);
#if defined(KFACTOR_HAVE_MPI)
  /// Collective over `comm`; every rank must make the same calls.
  CheckpointWriter(const std::string& path, const CheckpointMeta& meta, MPI_Comm comm, DistributedIo io);
#endif
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void write_field(const FieldBlock& block);
  void write_history(const MetricHistory& history);
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Opens a checkpoint read-only and reads its metadata (InputError when it is
/// missing, truncated, not a kfactor checkpoint or of another format version).
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  [[nodiscard]] const std::string& path() const;
  [[nodiscard]] const CheckpointMeta& meta() const;
  /// Throws InputError when `expected` disagrees (see CheckpointMeta).
  void expect(const CheckpointMeta& expected) const;
  /// Names of the stored fields, in the order they were written.
  [[nodiscard]] std::vector<std::string> field_names() const;
  /// A stored field's type and shape; InputError when it is missing.
  [[nodiscard]] FieldInfo field(const std::string& name) const;
  /// InputError unless the stored field has `want`'s type, rank and shape.
  void check_field(const FieldBlock& want) const;
  /// Reads rows [first_row, first_row + local_rows) into want.data; returns
  /// their block_checksum() (the caller compares the sum over all blocks
  /// with field(name).checksum, see verify_checksum()).
  std::uint64_t read_field(const FieldBlock& want) const;
  void verify_checksum(const std::string& name, std::uint64_t sum) const;
  [[nodiscard]] bool has_history() const;
  [[nodiscard]] MetricHistory read_history() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

template <class>
inline constexpr bool dependent_false_v = false;

template <class State>
constexpr bool has_history_member_v = requires(State& s) {
  { s.history } -> std::convertible_to<MetricHistory&>;
};
template <class State>
constexpr bool has_iteration_member_v = requires(State& s) { requires std::is_integral_v<decltype(s.iteration)>; };

template <class X>
FieldBlock scalar_block(const std::string& name, X& x) {
  FieldBlock b;
  b.name = name;
  if constexpr (std::is_same_v<std::remove_cv_t<X>, CounterRng>) {
    b.type = CheckpointType::u64;
    b.data = const_cast<std::uint64_t*>(&x.key);
  } else {
    b.type = checkpoint_type_of<X>();
    b.data = const_cast<std::remove_cv_t<X>*>(&x);
  }
  return b;
}

template <class X>
constexpr bool is_scalar_field_v = std::is_arithmetic_v<X> || std::is_same_v<X, CounterRng>;

/// Calls `state.visit` and hands each field to `on_block(FieldBlock)` (views
/// and scalars) or `on_history(MetricHistory&)`; adds `state.history` when
/// visit did not list a MetricHistory.
template <class State, class OnView, class OnScalar, class OnHistory>
void for_each_field(State& state, OnView&& on_view, OnScalar&& on_scalar, OnHistory&& on_history) {
  bool saw_history = false;
  state.visit([&](const auto& name_arg, auto&& x) {
    const std::string name(name_arg);
    using X = std::remove_reference_t<decltype(x)>;
    using B = std::remove_cv_t<X>;
    if constexpr (Kokkos::is_view_v<B>) {
      on_view(name, x);
    } else if constexpr (std::is_same_v<B, MetricHistory>) {
      if (saw_history) throw UsageError("checkpoint: a State can list only one MetricHistory ('" + name + "')");
      saw_history = true;
      on_history(x);
    } else if constexpr (is_scalar_field_v<B>) {
      static_assert(std::is_lvalue_reference_v<decltype(x)>, "visit must pass scalar fields as lvalues");
      on_scalar(name, x);
    } else {
      static_assert(dependent_false_v<B>,
                    "checkpoint fields are Kokkos Views, arithmetic scalars, CounterRng or "
                    "MetricHistory");
    }
  });
  if constexpr (has_history_member_v<State>)
    if (!saw_history) on_history(state.history);
}

template <class State>
CheckpointMeta meta_for(const State& state, CheckpointMeta meta) {
  if constexpr (has_iteration_member_v<State>) meta.iteration = static_cast<std::int64_t>(state.iteration);
  return meta;
}

template <class V>
constexpr bool is_resizable_view_v = !std::is_const_v<typename V::value_type> &&
                                     (std::is_same_v<typename V::array_layout, Kokkos::LayoutRight> ||
                                      std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft>) &&
                                     V::rank_dynamic() == V::rank() && !V::traits::memory_traits::is_unmanaged;

/// An unallocated managed view takes the stored shape; any other view must
/// have it already.
template <class V>
void fit_view(const CheckpointReader& r, const std::string& name, V& v) {
  if constexpr (is_resizable_view_v<V> && !std::is_const_v<V>) {
    if (!v.is_allocated() && v.size() == 0) {
      const FieldInfo info = r.field(name);
      if (info.rank == static_cast<int>(V::rank())) {
        if constexpr (V::rank() == 1)
          v = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, name), info.rows);
        else
          v = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, name), info.rows, info.cols);
      }
    }
  }
}

}  // namespace detail

// ---- serial API -----------------------------------------------------------------

/// Saves every field `state.visit` lists, its history and `meta` to `path`,
/// atomically (see the file comment). Throws RuntimeFailure when the file
/// cannot be written (the previous checkpoint, if any, is left untouched) and
/// UsageError for an unusable State (bad or repeated field names), a refused
/// target or a path another run holds locked (see the file comment).
template <class State>
void save_checkpoint(const std::string& path, State& state, const CheckpointMeta& meta) {
  detail::CheckpointWriter w(path, detail::meta_for(state, meta));
  detail::for_each_field(
      state, [&](const std::string& name, const auto& v) { w.write_field(detail::view_to_block(name, v)); },
      [&](const std::string& name, auto& x) { w.write_field(detail::scalar_block(name, x)); },
      [&](const MetricHistory& h) { w.write_history(h); });
  w.commit();
}

/// Loads `path` into `state`, whose views must already have the stored shapes
/// (e.g. a State from the solver's init(); unallocated views are allocated).
/// Returns the metadata stored in the file, with setup_change filled (this
/// process is one rank), after calling `state.reset_workspace()` when the
/// State has one. Throws InputError (see the file comment) when the file does
/// not match `expected` or `state`.
template <class State>
CheckpointMeta load_checkpoint(const std::string& path, State& state, const CheckpointMeta& expected) {
  detail::CheckpointReader r(path);
  r.expect(expected);
  // Pass 1: shapes and types, before anything is overwritten.
  detail::for_each_field(
      state,
      [&](const std::string& name, auto& v) {
        detail::fit_view(r, name, v);
        r.check_field(detail::shape_of_view(name, v));
      },
      [&](const std::string& name, auto& x) { r.check_field(detail::scalar_block(name, x)); },
      [&](MetricHistory&) {
        if (!r.has_history()) throw InputError(path + ": checkpoint has no /history group");
      });
  // Pass 2: copy.
  detail::for_each_field(
      state,
      [&](const std::string& name, auto& v) {
        auto b = detail::block_for_view(name, v);
        r.verify_checksum(name, r.read_field(b));
        detail::block_to_view(b, v);
      },
      [&](const std::string& name, auto& x) {
        using X = std::remove_cvref_t<decltype(x)>;
        X tmp = x;
        auto b = detail::scalar_block(name, tmp);
        r.verify_checksum(name, r.read_field(b));
        x = tmp;
      },
      [&](MetricHistory& h) { h = r.read_history(); });
  // Buffers derived from the replaced fields are stale now (the contract of
  // State::reset_workspace in core/solver.hpp).
  if constexpr (requires { state.reset_workspace(); }) state.reset_workspace();
  CheckpointMeta stored = r.meta();
  stored.setup_change = detail::setup_change(stored, expected, 1);
  return stored;
}

/// Metadata and per-field summary of a checkpoint, for tools
/// (`kfactor checkpoint-info`). With verify, every dataset's checksum is
/// recomputed (InputError on mismatch).
struct CheckpointInfo {
  CheckpointMeta meta;
  std::vector<detail::FieldInfo> fields;
  std::vector<std::string> history_names;
  std::size_t history_rows = 0;
};
CheckpointInfo inspect_checkpoint(const std::string& path, bool verify = true);

// ---- observers ----------------------------------------------------------------

/// Observer that saves `state` to `path` every `every` iterations (every
/// event whose iteration is a multiple of `every`). The State must outlive
/// the observer. Chain it with a progress printer through chain().
///
/// The observer checks the target and takes the path's OutputLock when it is
/// made and holds it while it lives: a second run (another process) aiming at
/// the same checkpoint is refused at once with UsageError, not at its first
/// save.
template <class State>
Observer checkpoint_observer(std::string path, int every, State& state, CheckpointMeta meta) {
  if (every <= 0) throw UsageError("checkpoint interval must be positive, got " + std::to_string(every));
  if (path.empty()) throw UsageError("checkpoint path is empty");
  io::check_write_target(path, meta.input_files);
  auto lock = std::make_shared<io::OutputLock>(path);
  return [path = std::move(path), every, &state, meta = std::move(meta), lock](const IterationEvent& e) {
    if (e.iteration % every == 0) save_checkpoint(path, state, meta);
    return ObserverAction::proceed;
  };
}

// ---- distributed API --------------------------------------------------------------

#if defined(KFACTOR_HAVE_MPI)
namespace detail {
/// Marks `b` partitioned when `blocks` names it and sets its rows (local:
/// UsageError when the block runs past the field's global rows).
void apply_row_block(FieldBlock& b, const RowBlocks& blocks);
/// Collective: UsageError on every rank unless the ranks' blocks of `b`
/// tile rows [0, global_rows) (in any order of the ranks).
void check_tiling(MPI_Comm comm, const FieldBlock& b);
/// Collective: when any rank failed, every rank throws the error of the
/// lowest failing rank (distributed::agree).
void agree(MPI_Comm comm, const std::exception_ptr& local_error);
std::uint64_t allreduce_sum(MPI_Comm comm, std::uint64_t local);
}  // namespace detail

/// Collective save: fields named in `blocks` are row-partitioned (this rank
/// holds rows [first_row, first_row + extent(0))), the others replicated
/// (rank 0's copy is written). One file, written atomically as in the
/// serial save.
template <class State>
void save_checkpoint(MPI_Comm comm, const std::string& path, State& state, const CheckpointMeta& meta,
                     const RowBlocks& blocks, DistributedIo io = DistributedIo::automatic) {
  detail::CheckpointWriter w(path, detail::meta_for(state, meta), comm, io);
  detail::for_each_field(
      state,
      [&](const std::string& name, const auto& v) {
        auto b = detail::view_to_block(name, v);
        detail::apply_row_block(b, blocks);
        if (b.partitioned) detail::check_tiling(comm, b);
        w.write_field(b);
      },
      [&](const std::string& name, auto& x) { w.write_field(detail::scalar_block(name, x)); },
      [&](const MetricHistory& h) { w.write_history(h); });
  w.commit();
}

/// Collective load on any number of ranks (not necessarily the number that
/// wrote the file): each rank reads its rows of the partitioned fields and
/// all of the replicated ones. Errors are agreed: every rank throws. The
/// returned metadata's setup_change compares with the size of `comm`.
template <class State>
CheckpointMeta load_checkpoint(MPI_Comm comm, const std::string& path, State& state, const CheckpointMeta& expected,
                               const RowBlocks& blocks) {
  // Pass 0 (collective): the partitions tile their fields.
  detail::for_each_field(
      state,
      [&](const std::string& name, const auto& v) {
        auto b = detail::shape_of_view(name, v);
        detail::apply_row_block(b, blocks);
        if (b.partitioned) detail::check_tiling(comm, b);
      },
      [](const std::string&, auto&) {}, [](MetricHistory&) {});
  // Pass 1 (local): metadata, types and shapes.
  std::unique_ptr<detail::CheckpointReader> r;
  std::exception_ptr error;
  try {
    r = std::make_unique<detail::CheckpointReader>(path);
    r->expect(expected);
    detail::for_each_field(
        state,
        [&](const std::string& name, const auto& v) {
          auto b = detail::shape_of_view(name, v);
          detail::apply_row_block(b, blocks);
          r->check_field(b);
        },
        [&](const std::string& name, auto& x) { r->check_field(detail::scalar_block(name, x)); },
        [&](MetricHistory&) {
          if (!r->has_history()) throw InputError(path + ": checkpoint has no /history group");
        });
  } catch (...) {
    error = std::current_exception();
  }
  detail::agree(comm, error);
  // Pass 2: read; checksums of partitioned fields are summed over ranks.
  detail::for_each_field(
      state,
      [&](const std::string& name, const auto& v) {
        auto b = detail::block_for_view(name, v);
        detail::apply_row_block(b, blocks);
        std::uint64_t sum = 0;
        if (!error) try {
            sum = r->read_field(b);
          } catch (...) {
            error = std::current_exception();
          }
        if (b.partitioned) sum = detail::allreduce_sum(comm, sum);
        if (!error) try {
            r->verify_checksum(name, sum);
            detail::block_to_view(b, v);
          } catch (...) {
            error = std::current_exception();
          }
      },
      [&](const std::string& name, auto& x) {
        if (error) return;
        try {
          using X = std::remove_cvref_t<decltype(x)>;
          X tmp = x;
          auto b = detail::scalar_block(name, tmp);
          r->verify_checksum(name, r->read_field(b));
          x = tmp;
        } catch (...) {
          error = std::current_exception();
        }
      },
      [&](MetricHistory& h) {
        if (error) return;
        try {
          h = r->read_history();
        } catch (...) {
          error = std::current_exception();
        }
      });
  detail::agree(comm, error);
  // As in the serial load: the derived buffers no longer match the fields.
  if constexpr (requires { state.reset_workspace(); }) state.reset_workspace();
  int size = 1;
  MPI_Comm_size(comm, &size);
  CheckpointMeta stored = r->meta();
  stored.setup_change = detail::setup_change(stored, expected, size);
  return stored;
}
#endif

}  // namespace kfactor
