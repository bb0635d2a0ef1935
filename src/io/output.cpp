// Safe writes (include/kfactor/io/write.hpp): target checks, atomic files,
// output locks and the stamps of output sets. POSIX calls throughout: the
// checks compare device and inode, and the lock is flock.
#include <kfactor/core/error.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/io/write.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace kfactor::io {

namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::strerror(err); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string directory_of(const std::string& path) {
  const auto dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

}  // namespace

std::string resolve_write_target(const std::string& path) {
  if (path.empty()) throw UsageError("output path is empty");
  fs::path p(path);
  // Linux follows at most 40 links in a path; a longer chain is a loop.
  for (int hops = 0; hops <= 40; ++hops) {
    struct stat st{};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p.string();
    std::error_code ec;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw RuntimeFailure(path + ": cannot read the symbolic link " + p.string() + ": " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw UsageError(path + ": too many levels of symbolic links (a link loop?)");
}

namespace {

/// UsageError when the file `path` (its stat: `st`) is one of `inputs`.
void refuse_inputs(const std::string& path, const struct stat& st, const std::vector<std::string>& inputs) {
  for (const auto& input : inputs) {
    struct stat in{};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
      throw UsageError(path + " is the input file " + input +
                       " of this run (same device and inode): writing it would destroy the input; choose another "
                       "output path");
  }
}

}  // namespace

void check_write_target(const std::string& path, const std::vector<std::string>& inputs) {
  const std::string target = resolve_write_target(path);
  struct stat st{};
  if (::stat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw RuntimeFailure(path + ": cannot examine the output path: " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode))
    throw UsageError(path + (target != path ? " (-> " + target + ")" : std::string()) + " is " + kind_of(st.st_mode) +
                     ": kfactor writes an output file only where there is none or a regular file");
  refuse_inputs(path, st, inputs);
}

namespace {

/// Whether two write targets are one file: the same device and inode when
/// both exist, else the same path once links and `.`/`..` are resolved.
bool same_target(const std::string& a, const std::string& b) {
  const std::string ra = resolve_write_target(a), rb = resolve_write_target(b);
  struct stat sa{}, sb{};
  if (::stat(ra.c_str(), &sa) == 0 && ::stat(rb.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const fs::path ca = fs::weakly_canonical(fs::absolute(ra), ea), cb = fs::weakly_canonical(fs::absolute(rb), eb);
  return !ea && !eb ? ca == cb : fs::absolute(ra).lexically_normal() == fs::absolute(rb).lexically_normal();
}

}  // namespace

void check_run_files(const RunFiles& files) {
  std::vector<std::string> protected_files = files.inputs;
  if (!files.restart.empty()) protected_files.push_back(files.restart);
  protected_files.insert(protected_files.end(), files.appended.begin(), files.appended.end());
  for (const auto& out : files.outputs) check_write_target(out, protected_files);
  for (const auto& cache : files.appended) {
    struct stat st{};
    if (::stat(resolve_write_target(cache).c_str(), &st) == 0) refuse_inputs(cache, st, files.inputs);
  }
  std::vector<std::string> targets = files.outputs;
  if (!files.checkpoint.empty()) {
    check_write_target(files.checkpoint, files.inputs);
    targets.push_back(files.checkpoint);
  }
  targets.insert(targets.end(), files.appended.begin(), files.appended.end());
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (std::size_t j = i + 1; j < targets.size(); ++j)
      if (same_target(targets[i], targets[j]))
        throw UsageError(targets[j] + " would be written twice by this run" +
                         (targets[i] != targets[j] ? " (also as " + targets[i] + ")" : std::string()) +
                         ": each output needs its own path");
}

// ---- locks ------------------------------------------------------------------------------

struct OutputLock::Shared {
  std::string lock_path;
  int fd = -1;
  ~Shared() {
    // Unlink before unlocking: a waiter that opened this inode then finds the
    // path gone or pointing elsewhere and tries again (see acquire()).
    ::unlink(lock_path.c_str());
    ::close(fd);
  }
};

namespace {

std::mutex& lock_registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<OutputLock::Shared>>& lock_registry() {
  static std::map<std::string, std::weak_ptr<OutputLock::Shared>> r;
  return r;
}

std::shared_ptr<OutputLock::Shared> acquire(const std::string& path, const std::string& lock_path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw RuntimeFailure(path + ": cannot create the lock file " + lock_path + ": " + errno_text(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      char buf[32] = {};
      const ssize_t got = ::pread(fd, buf, sizeof buf - 1, 0);
      ::close(fd);
      if (err != EWOULDBLOCK) throw RuntimeFailure(path + ": cannot lock " + lock_path + ": " + errno_text(err));
      const std::string holder = got > 0 ? std::string(buf, static_cast<std::size_t>(got)) : std::string("?");
      throw UsageError(path + " is being written by another run (process " + holder.substr(0, holder.find('\n')) +
                       " holds " + lock_path + "); give each run its own output path");
    }
    // The holder may have unlinked the file between our open and flock.
    struct stat by_fd{}, by_path{};
    if (::fstat(fd, &by_fd) == 0 && ::stat(lock_path.c_str(), &by_path) == 0 && by_fd.st_dev == by_path.st_dev &&
        by_fd.st_ino == by_path.st_ino) {
      auto s = std::make_shared<OutputLock::Shared>();
      s->lock_path = lock_path;
      s->fd = fd;
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, pid.data(), pid.size(), 0);  // informational only
      return s;
    }
    ::close(fd);
  }
  throw RuntimeFailure(path + ": cannot lock " + lock_path + " (it keeps being replaced)");
}

}  // namespace

OutputLock::OutputLock(const std::string& path) {
  const std::string lock_path = resolve_write_target(path) + ".lock";
  std::lock_guard<std::mutex> guard(lock_registry_mutex());
  auto& slot = lock_registry()[lock_path];
  shared_ = slot.lock();
  if (!shared_) {
    shared_ = acquire(path, lock_path);
    slot = shared_;
  }
}

OutputLock::~OutputLock() {
  if (!shared_) return;
  std::lock_guard<std::mutex> guard(lock_registry_mutex());
  const std::string key = shared_->lock_path;
  shared_.reset();  // the last holder unlinks and unlocks
  const auto it = lock_registry().find(key);
  if (it != lock_registry().end() && it->second.expired()) lock_registry().erase(it);
}

OutputLock::OutputLock(OutputLock&& o) noexcept = default;
OutputLock& OutputLock::operator=(OutputLock&& o) noexcept {
  if (this != &o) {
    OutputLock old(std::move(*this));
    shared_ = std::move(o.shared_);
  }
  return *this;
}

const std::string& OutputLock::lock_path() const { return shared_->lock_path; }

// ---- output sets ------------------------------------------------------------------------

std::string new_output_set_id() {
  static std::atomic<std::uint64_t> counter{0};
  const auto now = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  const std::uint64_t h =
      CounterRng::mix(CounterRng::mix(now) ^ CounterRng::mix(static_cast<std::uint64_t>(::getpid()) << 20 ^ counter++));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

OutputSet::OutputSet(std::vector<std::string> inputs, std::vector<std::string> members)
    : OutputSet(new_output_set_id(), std::move(inputs), std::move(members), false) {}

OutputSet::OutputSet(std::string id, std::vector<std::string> inputs, std::vector<std::string> members, bool on_request)
    : id_(std::move(id)), inputs_(std::move(inputs)), members_(std::move(members)) {
  if (id_.empty() || id_.find_first_of(" ,\n") != std::string::npos)
    throw UsageError("output set id '" + id_ + "' is empty or contains a space or comma");
  if (members_.empty()) throw UsageError("an output set needs at least one member");
  for (const auto& m : members_)
    if (m.empty() || m.find_first_of(" ,\n") != std::string::npos ||
        std::count(members_.begin(), members_.end(), m) != 1)
      throw UsageError("output set member '" + m + "' is empty, repeated or contains a space or comma");
  pending_ = std::make_shared<detail::PendingSet>(members_, on_request);
}

OutputSet OutputSet::across_processes(std::string id, std::vector<std::string> inputs,
                                      std::vector<std::string> members) {
  return {std::move(id), std::move(inputs), std::move(members), true};
}

void OutputSet::publish() {
  if (!pending_->on_request())
    throw UsageError("output set " + id_ + " publishes itself when its last member is written");
  pending_->publish();
}

OutputOptions OutputSet::operator[](const std::string& member) const {
  if (std::find(members_.begin(), members_.end(), member) == members_.end())
    throw UsageError("'" + member + "' is not a member of this output set");
  OutputOptions o;
  o.inputs = inputs_;
  o.stamp = {id_, member, members_};
  o.pending = pending_;
  return o;
}

OutputStamp read_output_stamp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "cannot open: " + errno_text(errno));
  // The stamp is in the leading comment lines: `% ...` (Matrix Market) or `# ...` (CSV).
  std::string line;
  for (int n = 0; n < 64 && std::getline(in, line); ++n) {
    const bool mm = line.rfind("%", 0) == 0, csv = line.rfind("#", 0) == 0;
    if (!mm && !csv) break;
    std::istringstream words(line.substr(1));
    std::string tag, set, member, members;
    if (!(words >> tag) || tag != "kfactor-set") continue;
    if (!(words >> set >> member >> members))
      throw InputError(path, n + 1, "malformed kfactor-set stamp '" + line + "'");
    OutputStamp s{set, member, {}};
    std::istringstream list(members);
    for (std::string m; std::getline(list, m, ',');) s.members.push_back(m);
    return s;
  }
  return {};
}

std::string verify_output_set(const std::vector<std::string>& paths, SetMembers expect) {
  if (paths.empty()) throw UsageError("verify_output_set: no files");
  std::string set;
  std::vector<std::string> expected;
  std::set<std::string> seen;
  for (const auto& p : paths) {
    const auto s = read_output_stamp(p);
    if (s.set.empty())
      throw InputError(p, 0, "carries no kfactor-set stamp: it was not written as part of a run's set");
    if (set.empty()) {
      set = s.set;
      expected = s.members;
    } else if (s.set != set) {
      throw InputError(p, 0,
                       "belongs to output set " + s.set + ", not to set " + set + " of " + paths.front() +
                           " (files of different runs)");
    } else if (s.members != expected) {
      throw InputError(p, 0, "lists other members than " + paths.front() + " (corrupt stamp)");
    }
    if (std::find(expected.begin(), expected.end(), s.member) == expected.end() || !seen.insert(s.member).second)
      throw InputError(p, 0, "is member '" + s.member + "', which the set lists not or twice");
  }
  if (expect == SetMembers::all)
    for (const auto& m : expected)
      if (!seen.count(m)) throw InputError(paths.front(), 0, "output set " + set + " misses its member '" + m + "'");
  return set;
}

// ---- atomic files -----------------------------------------------------------------------

namespace detail {

std::string temp_path_for(const std::string& target, long long pid) { return target + ".tmp." + std::to_string(pid); }

void remove_stale_temporaries(const std::string& target) {
  const fs::path p(target);
  const fs::path dir = directory_of(target);
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const auto pid = static_cast<pid_t>(std::stol(digits));
    if (pid != ::getpid() && ::kill(pid, 0) == -1 && errno == ESRCH) stale.push_back(it->path());
  }
  for (const auto& f : stale) fs::remove(f, ec);
}

namespace {
/// fsync of a path (a directory: best effort, some file systems refuse it).
void sync_path(const std::string& p, bool directory, const std::string& what) {
  const int fd = ::open(p.c_str(), directory ? (O_RDONLY | O_DIRECTORY | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC));
  if (fd < 0) {
    if (directory) return;
    throw RuntimeFailure(what + ": cannot reopen " + p + " to sync it: " + errno_text(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw RuntimeFailure(what + ": fsync of " + p + " failed: " + errno_text(err));
}
}  // namespace

void publish_file(const std::string& tmp, const std::string& target, const std::string& what) {
  sync_path(tmp, false, what);
  if (std::rename(tmp.c_str(), target.c_str()) != 0)
    throw RuntimeFailure(what + ": cannot rename " + tmp + " to " + target + ": " + errno_text(errno));
  sync_path(directory_of(target), true, what);
}

AtomicFile::AtomicFile(const std::string& path, const std::vector<std::string>& inputs) : path_(path) {
  check_write_target(path, inputs);
  target_ = resolve_write_target(path);
  remove_stale_temporaries(target_);
  tmp_ = temp_path_for(target_, ::getpid());
  // O_EXCL: never write through something already at the temporary's name.
  ::unlink(tmp_.c_str());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) throw RuntimeFailure(path + ": cannot create " + tmp_ + ": " + errno_text(errno));
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RuntimeFailure(path_ + ": write failed: " + errno_text(errno) +
                           " (the previous file, if any, is unchanged)");
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::commit() {
  finish();
  publish();
}

void AtomicFile::finish() {
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0) throw RuntimeFailure(path_ + ": fsync failed: " + errno_text(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw RuntimeFailure(path_ + ": write failed on close: " + errno_text(errno));
}

void AtomicFile::publish() {
  if (committed_) return;
  finish();
  if (std::rename(tmp_.c_str(), target_.c_str()) != 0)
    throw RuntimeFailure(path_ + ": cannot rename " + tmp_ + " to " + target_ + ": " + errno_text(errno));
  committed_ = true;
  sync_path(directory_of(target_), true, path_);
}

PendingSet::PendingSet(std::vector<std::string> members, bool on_request)
    : members_(std::move(members)), on_request_(on_request) {}

PendingSet::~PendingSet() = default;  // the AtomicFiles remove their temporaries

void PendingSet::claim(const std::string& member, const std::string& target) {
  for (const auto& [m, t] : targets_) {
    if (m == member) throw UsageError("output set member '" + member + "' is written twice");
    if (same_target(t, target))
      throw UsageError(target + " is both member '" + m + "' and member '" + member +
                       "' of one output set: each member needs its own path");
  }
  targets_.emplace_back(member, target);
}

void PendingSet::add(const std::string& member, std::unique_ptr<AtomicFile> file) {
  files_.emplace_back(member, std::move(file));
  if (!on_request_ && files_.size() == members_.size()) publish();
}

void PendingSet::publish() {
  for (const auto& m : members_)
    for (auto& [name, f] : files_)
      if (name == m) f->publish();
}

}  // namespace detail

}  // namespace kfactor::io
