#pragma once
/// \file
/// Writers: Matrix Market coordinate (from CooMatrix or CsrMatrix in any
/// memory space), Matrix Market array (a dense row-major factor), and a CSV
/// factor file `id,f0,f1,...` that carries original ids (e.g. the user and
/// item ids a RatingData kept).
///
/// Numbers are written with std::to_chars' shortest round-trip form, so
/// reading a written file gives back bit-identical values of the same T.
/// Every Matrix Market file gets a `%` comment line (`comment`, default
/// "written by kfactor"; a multi-line comment becomes several `%` lines).
///
/// Safe writes. Every output file (these writers and checkpoints) is written
/// to a temporary `target.tmp.<pid>` beside its target, fsynced and renamed
/// over the target, then the directory is fsynced: a reader sees the old
/// file or the complete new one, never a part. On any failure (full disk,
/// file size limit, I/O error) the temporary is removed, the target is left
/// as it was, and RuntimeFailure names the path. Before anything is written
/// check_write_target() refuses, with UsageError naming the path, a target
/// that is not a regular file (directory, device node, FIFO, socket: the
/// rename would replace it) and one that is an input of the run (same device
/// and inode, whatever the names). A symbolic link as target is written
/// through: the link stays and the file it points to is replaced.
///
/// Output sets. The files of one run (e.g. W and H) are written through an
/// OutputSet: each carries a stamp line naming the set id, its member name
/// and all members, so that a reader can check with verify_output_set() that
/// files come from the same run. The members are published together: each
/// is written to its temporary and synced, and only when the last one is
/// written are they all renamed into place, so a failure while writing any
/// of them (a full disk) leaves none of the new files and every old one as
/// it was. check_run_files() checks all targets of a run before it starts.

#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kfactor::io {

// ---- safe writes ---------------------------------------------------------------------

/// The file a write to `path` replaces: `path` itself, or, when `path` is a
/// symbolic link (possibly dangling, possibly a chain), the path it finally
/// points to. UsageError on a link loop.
std::string resolve_write_target(const std::string& path);

/// Refuses a write target before anything is written: UsageError naming
/// `path` when (after resolve_write_target()) it exists and is not a regular
/// file, or is the same file (device and inode, compared with stat, so hard
/// links, symbolic links and other spellings are caught) as one of `inputs`.
/// Inputs that do not exist are ignored. A missing target is fine.
void check_write_target(const std::string& path, const std::vector<std::string>& inputs = {});

/// The files a run reads and writes, for check_run_files().
struct RunFiles {
  /// Files the run reads (data, held-out data, graphs): nothing may replace one.
  std::vector<std::string> inputs;
  /// Files the run writes at its end (its output set).
  std::vector<std::string> outputs;
  /// The checkpoint the run saves to (empty: none). It may be `restart`: a
  /// run continues and replaces its own checkpoint.
  std::string checkpoint;
  /// The checkpoint the run continues from (empty: none): no output may
  /// replace it.
  std::string restart;
  /// Files the run appends to (a cache): none may be an input, no output
  /// may replace one.
  std::vector<std::string> appended;
};

/// Checks every write target of a run before the run starts, so that it is
/// refused at once rather than after its work: check_write_target() for each
/// output (against the inputs, the restart checkpoint and the appended files)
/// and for the checkpoint (against the inputs); an appended file that is an
/// input; and two targets (outputs, checkpoint, appended files) that are one
/// file (the same resolved path, or device and inode). UsageError naming the
/// path (and the other one's spelling, or the input).
void check_run_files(const RunFiles& files);

/// An exclusive advisory lock (flock) on `target.lock` beside the resolved
/// target, so that two runs cannot write the same file (a checkpoint path)
/// at once: the second gets UsageError naming the path and the holder's
/// process id. Locks on the same target taken within one process share one
/// lock (an observer can hold it for the whole run while each save takes it
/// again). The lock file is removed when the last holder releases it.
class OutputLock {
 public:
  explicit OutputLock(const std::string& path);
  ~OutputLock();
  OutputLock(OutputLock&&) noexcept;
  OutputLock& operator=(OutputLock&&) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  /// The lock file's path.
  [[nodiscard]] const std::string& lock_path() const;
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

/// The stamp that ties the files of one run together: the set id (shared by
/// all members), this file's member name, and the names of all members.
struct OutputStamp {
  std::string set;                   ///< empty: the file carries no stamp
  std::string member;                ///< e.g. "W"
  std::vector<std::string> members;  ///< e.g. {"W", "H"}
};

/// A fresh set id: 16 hex digits from the time, the process id and a
/// per-process counter (unique across runs on one machine and, in practice,
/// across machines).
std::string new_output_set_id();

namespace detail {
class PendingSet;
}

/// How an output file is written.
struct OutputOptions {
  /// The run's input files: writing over one of them is refused
  /// (check_write_target()).
  std::vector<std::string> inputs;
  /// When stamp.set is not empty, the file carries the stamp: a
  /// `% kfactor-set <set> <member> <m1,m2,...>` line after a Matrix Market
  /// header's comment, a `# kfactor-set ...` first line in a CSV factor file.
  OutputStamp stamp;
  /// Set by OutputSet: the written file waits, synced, as its temporary
  /// until every member of the set is written, then all are published.
  std::shared_ptr<detail::PendingSet> pending;
};

/// The files of one run, one OutputOptions per member:
/// `OutputSet set(inputs, {"W", "H"}); write_factor(w, W, {}, {}, set["W"]);
/// write_factor(h, H, {}, {}, set["H"]);` stamps both files with one set id
/// and publishes both when H, the last member, is written. Members written
/// while the set is incomplete are removed (never published) when the
/// OutputSet and the OutputOptions it handed out are destroyed.
///
/// A set whose members are written by several processes (the ranks of a
/// distributed run, each writing its own part) is made by
/// across_processes() on every process alike; its members wait for
/// publish() instead, so that the processes can first agree that every one
/// of them wrote its members (kfactor::distributed::write_parts does).
class OutputSet {
 public:
  /// UsageError unless `members` are non-empty names without space or comma,
  /// each listed once.
  OutputSet(std::vector<std::string> inputs, std::vector<std::string> members);
  /// A set written by several processes: each passes the same `id` (one
  /// process's new_output_set_id(), sent to the others) and `members`, and
  /// writes some of the members. A member written here is not published when
  /// it is complete: it waits, synced, as its temporary until publish(), and
  /// one still waiting when the set and its OutputOptions are destroyed is
  /// removed. UsageError as the constructor, and when `id` is empty or holds
  /// a space or comma.
  static OutputSet across_processes(std::string id, std::vector<std::string> inputs, std::vector<std::string> members);
  /// UsageError unless `member` is one of the members.
  [[nodiscard]] OutputOptions operator[](const std::string& member) const;
  [[nodiscard]] const std::string& id() const { return id_; }
  /// An across_processes() set: publishes the members written here, in
  /// member order (RuntimeFailure naming the path when a rename fails).
  /// UsageError on a set that publishes itself when complete.
  void publish();

 private:
  OutputSet(std::string id, std::vector<std::string> inputs, std::vector<std::string> members, bool on_request);
  std::string id_;
  std::vector<std::string> inputs_, members_;
  std::shared_ptr<detail::PendingSet> pending_;
};

/// The stamp of a Matrix Market or CSV file written by these writers (an
/// empty stamp when it has none). InputError when the file cannot be read.
OutputStamp read_output_stamp(const std::string& path);

/// How much of a set verify_output_set() expects.
enum class SetMembers {
  all,   ///< the files are the whole set
  some,  ///< the files are some members of one set
};

/// Checks that `paths` are files of one run: every file carries a stamp, all
/// with the same set id and member list, each a different member; with
/// SetMembers::all their member names are exactly the members the stamps
/// list. Returns the set id; InputError naming the first file that does not
/// belong otherwise.
std::string verify_output_set(const std::vector<std::string>& paths, SetMembers expect = SetMembers::all);

namespace detail {

/// A file written atomically (see the file comment): the constructor checks
/// the target (check_write_target with `inputs`) and creates the temporary
/// beside the resolved target; commit() fsyncs it, renames it over the
/// target and fsyncs the directory. Destroyed uncommitted (an exception), it
/// removes the temporary.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path, const std::vector<std::string>& inputs = {});
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Writes all of `data` (RuntimeFailure naming the path on any error,
  /// ENOSPC and EFBIG included).
  void write(const void* data, std::size_t size);
  /// finish() then publish().
  void commit();
  /// fsyncs and closes the temporary: complete on disk, not yet in place.
  void finish();
  /// Renames the finished temporary over the target and fsyncs the directory.
  void publish();
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& target() const { return target_; }
  [[nodiscard]] const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, target_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// `target.tmp.<pid>`: the temporary a writer with process id `pid` uses.
std::string temp_path_for(const std::string& target, long long pid);
/// Removes `target.tmp.<pid>` files whose process no longer exists (left by
/// killed writers), so repeated preemption does not fill the disk.
void remove_stale_temporaries(const std::string& target);
/// fsyncs `tmp`, renames it over `target` and fsyncs the directory
/// (RuntimeFailure naming `what` on failure; `tmp` is then still there).
void publish_file(const std::string& tmp, const std::string& target, const std::string& what);

/// The members of an OutputSet written so far (finished temporaries); when
/// the last member arrives all are published, in member order, unless the
/// set waits for publish() (`on_request`, OutputSet::across_processes).
/// Destroyed before that, it removes the temporaries.
class PendingSet {
 public:
  explicit PendingSet(std::vector<std::string> members, bool on_request = false);
  PendingSet(const PendingSet&) = delete;
  PendingSet& operator=(const PendingSet&) = delete;
  ~PendingSet();
  /// Before `member`'s temporary is created: UsageError when `target` is
  /// already the target of another member written (two members, one file).
  void claim(const std::string& member, const std::string& target);
  /// Takes `member`'s finished file; publishes all when it is the last
  /// (unless `on_request`).
  void add(const std::string& member, std::unique_ptr<AtomicFile> file);
  /// Publishes the files taken so far, in member order.
  void publish();
  [[nodiscard]] bool on_request() const { return on_request_; }

 private:
  std::vector<std::string> members_;
  bool on_request_ = false;
  std::vector<std::pair<std::string, std::string>> targets_;  // (member, resolved target)
  std::vector<std::pair<std::string, std::unique_ptr<AtomicFile>>> files_;
};

/// Buffered text output to an AtomicFile (RuntimeFailure on any error).
class TextWriter {
 public:
  explicit TextWriter(const std::string& path, const OutputOptions& out = {});
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;
  ~TextWriter();
  void put(std::string_view s);
  void put(char c);
  void put_int(std::int64_t v);
  void put_real(double v);
  void put_real(float v);
  /// `% line` for each line of `comment` (or "% written by kfactor"), then
  /// the stamp line when the file has one.
  void put_comment(const std::string& comment);
  /// `# kfactor-set ...` when the file has a stamp (first line of a CSV).
  void put_csv_stamp();
  /// Flushes and publishes the file (a member of an OutputSet: hands it to
  /// the set, which publishes it with the others); throws RuntimeFailure if
  /// anything failed.
  void close();

 private:
  void flush();
  std::unique_ptr<AtomicFile> file_;
  OutputStamp stamp_;
  std::shared_ptr<PendingSet> pending_;
  std::string buffer_;
};

}  // namespace detail

/// `%%MatrixMarket matrix coordinate real general`, 1-based, in the order of
/// the triplets.
template <class T>
void write_matrix_market(const std::string& path, const CooMatrix<T>& A, const std::string& comment = {},
                         const OutputOptions& out = {}) {
  detail::TextWriter w(path, out);
  w.put("%%MatrixMarket matrix coordinate real general\n");
  w.put_comment(comment);
  w.put_int(A.num_rows);
  w.put(' ');
  w.put_int(A.num_cols);
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(A.nnz()));
  w.put('\n');
  for (std::size_t e = 0; e < A.nnz(); ++e) {
    w.put_int(std::int64_t(A.rows[e]) + 1);
    w.put(' ');
    w.put_int(std::int64_t(A.cols[e]) + 1);
    w.put(' ');
    w.put_real(A.values.empty() ? T(1) : A.values[e]);
    w.put('\n');
  }
  w.close();
}

/// CSR in any memory space (copied to the host first), row by row.
template <class T, class MemorySpace>
void write_matrix_market(const std::string& path, const CsrMatrix<T, MemorySpace>& A, const std::string& comment = {},
                         const OutputOptions& out = {}) {
  const auto row_map = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.row_map);
  const auto entries = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.entries);
  const auto values = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A.values);
  const std::int64_t m = A.num_rows();
  detail::TextWriter w(path, out);
  w.put("%%MatrixMarket matrix coordinate real general\n");
  w.put_comment(comment);
  w.put_int(m);
  w.put(' ');
  w.put_int(A.num_cols);
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(entries.extent(0)));
  w.put('\n');
  for (std::int64_t i = 0; i < m; ++i)
    for (auto e = row_map(i); e < row_map(i + 1); ++e) {
      w.put_int(i + 1);
      w.put(' ');
      w.put_int(std::int64_t(entries(e)) + 1);
      w.put(' ');
      w.put_real(values.extent(0) == entries.extent(0) ? values(e) : T(1));
      w.put('\n');
    }
  w.close();
}

/// `%%MatrixMarket matrix array real general` of a rank-2 View (any layout or
/// memory space; values go out column-major as the format requires).
template <class T, class... P>
void write_matrix_market_array(const std::string& path, const Kokkos::View<T**, P...>& A,
                               const std::string& comment = {}, const OutputOptions& out = {}) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), A);
  detail::TextWriter w(path, out);
  w.put("%%MatrixMarket matrix array real general\n");
  w.put_comment(comment);
  w.put_int(static_cast<std::int64_t>(h.extent(0)));
  w.put(' ');
  w.put_int(static_cast<std::int64_t>(h.extent(1)));
  w.put('\n');
  for (std::size_t j = 0; j < h.extent(1); ++j)
    for (std::size_t i = 0; i < h.extent(0); ++i) {
      w.put_real(h(i, j));
      w.put('\n');
    }
  w.close();
}

/// A dense factor as CSV: header `id,f0,f1,...,f{K-1}`, then one line per
/// row `id,v0,v1,...`; `ids[r]` is row r's original id (empty: r itself).
/// A stamped file starts with a `# kfactor-set ...` line (pandas:
/// `read_csv(path, comment="#")`).
/// Throws UsageError if ids is non-empty and its size is not the row count.
template <class T, class... P>
void write_factor_csv(const std::string& path, const Kokkos::View<T**, P...>& F,
                      const std::vector<std::int64_t>& ids = {}, const OutputOptions& out = {}) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), F);
  if (!ids.empty() && ids.size() != h.extent(0))
    throw UsageError("write_factor_csv: " + std::to_string(ids.size()) + " ids for a factor with " +
                     std::to_string(h.extent(0)) + " rows");
  detail::TextWriter w(path, out);
  w.put_csv_stamp();
  w.put("id");
  for (std::size_t k = 0; k < h.extent(1); ++k) {
    w.put(",f");
    w.put_int(static_cast<std::int64_t>(k));
  }
  w.put('\n');
  for (std::size_t i = 0; i < h.extent(0); ++i) {
    w.put_int(ids.empty() ? static_cast<std::int64_t>(i) : ids[i]);
    for (std::size_t k = 0; k < h.extent(1); ++k) {
      w.put(',');
      w.put_real(h(i, k));
    }
    w.put('\n');
  }
  w.close();
}

/// A factor file chosen by extension: `.csv` -> write_factor_csv (with `ids`),
/// anything else -> write_matrix_market_array (row r is factor row r; the ids,
/// if any, are listed in the comment only when there are at most 64 of them,
/// so pair a large ids vector with a .csv path).
template <class T, class... P>
void write_factor(const std::string& path, const Kokkos::View<T**, P...>& F, const std::vector<std::int64_t>& ids = {},
                  const std::string& comment = {}, const OutputOptions& out = {}) {
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? std::string() : path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (ext == "csv") {
    write_factor_csv(path, F, ids, out);
    return;
  }
  std::string note = comment;
  if (!ids.empty() && ids.size() <= 64) {
    note += note.empty() ? "row ids:" : "\nrow ids:";
    for (const auto id : ids) note += " " + std::to_string(id);
  }
  write_matrix_market_array(path, F, note, out);
}

}  // namespace kfactor::io
