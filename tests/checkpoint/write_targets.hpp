#pragma once
// The write-target cases every kfactor output goes through (checkpoints in
// tests/checkpoint, the text writers in tests/io/test_write.cpp): a regular
// file, a device node, a FIFO, a directory, a symbolic link, an input of the
// run (by another name), a read-only folder and a full file system. Each
// case must end with the documented error, every file in the folder byte for
// byte as before, and no temporary or lock file left.
#include <kfactor/core/error.hpp>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace kfactor::test {

namespace fs = std::filesystem;

inline std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Every regular file under `dir` with its bytes (links and special files as
/// their kind), to compare a folder before and after a refused write.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    const auto st = fs::symlink_status(e.path());
    if (fs::is_symlink(st))
      out[name] = "link -> " + fs::read_symlink(e.path()).string();
    else if (fs::is_regular_file(st))
      out[name] = file_bytes(e.path().string());
    else
      out[name] = "kind " + std::to_string(static_cast<int>(st.type()));
  }
  return out;
}

/// Names under `dir` that a writer must not leave behind.
inline std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.find(".tmp.") != std::string::npos || name.ends_with(".lock")) out.push_back(name);
  }
  return out;
}

/// A tmpfs mounted on `dir` for the scope (root in a mount namespace, as in
/// tools/devenv); ok() is false where mounting is not allowed.
class ScopedTmpfs {
 public:
  ScopedTmpfs(const std::string& dir, const std::string& options, unsigned long flags = 0) : dir_(dir) {
    ok_ = ::mount("none", dir.c_str(), "tmpfs", flags, options.c_str()) == 0;
  }
  ~ScopedTmpfs() {
    if (ok_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  [[nodiscard]] bool ok() const { return ok_; }
  /// Remounts read-only (after files were put in).
  bool make_read_only() { return ok_ && ::mount("none", dir_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) == 0; }

 private:
  std::string dir_;
  bool ok_ = false;
};

/// RLIMIT_FSIZE lowered for the scope, SIGXFSZ ignored: writes past `bytes`
/// fail with EFBIG, as a full disk fails with ENOSPC.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_ = nullptr;
};

/// `f` throws E with `needle` in its message.
template <class E, class F>
void expect_error(F&& f, const std::string& needle, const std::string& label) {
  try {
    f();
    ADD_FAILURE() << label << ": no exception (expected one mentioning '" << needle << "')";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << label << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << ": wrong exception type: " << e.what();
  }
}

/// `write(path)` twice with the wall clock's second changing in between
/// gives the same bytes (no time stamp in the file).
inline void expect_same_bytes_a_second_apart(const fs::path& dir,
                                             const std::function<void(const std::string&)>& write) {
  const std::string first = (dir / "first").string(), second = (dir / "second").string();
  const std::time_t t0 = std::time(nullptr);
  write(first);
  while (std::time(nullptr) <= t0) ::usleep(20000);
  write(second);
  EXPECT_FALSE(file_bytes(first).empty());
  EXPECT_EQ(file_bytes(first), file_bytes(second)) << "the same data written a second apart differs";
  fs::remove(first);
  fs::remove(second);
}

/// Writes a small output to `path`; `inputs` are the run's inputs.
using WriteFn = std::function<void(const std::string& path, const std::vector<std::string>& inputs)>;

/// Runs every target case in `dir` (empty, removed afterwards by the
/// caller). `write_small` must fit in 16 KiB, `write_large` must exceed
/// 256 KiB; `read_back(path)` throws unless path holds a valid output.
inline void check_write_targets(const fs::path& dir, const WriteFn& write_small, const WriteFn& write_large,
                                const std::function<void(const std::string&)>& read_back) {
  const auto at = [&](const std::string& name) { return (dir / name).string(); };
  // Regular file: replaced, no leftovers.
  write_small(at("out"), {});
  read_back(at("out"));
  write_small(at("out"), {});
  read_back(at("out"));
  EXPECT_TRUE(leftovers(dir).empty());

  // An input of the run under another name (hard link) or through a link.
  {
    std::ofstream(at("input.mtx")) << "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n";
  }
  fs::create_hard_link(at("input.mtx"), at("hard.mtx"));
  fs::create_symlink("input.mtx", at("soft.mtx"));
  auto before = snapshot(dir);
  expect_error<UsageError>([&] { write_small(at("hard.mtx"), {at("input.mtx")}); }, "is the input file", "hard link");
  expect_error<UsageError>([&] { write_small(at("soft.mtx"), {at("input.mtx")}); }, "is the input file", "symlink");
  expect_error<UsageError>([&] { write_small(at("input.mtx"), {(dir / "." / "hard.mtx").string()}); },
                           "is the input file", "same file, other spelling");
  EXPECT_EQ(snapshot(dir), before);

  // A symbolic link that is not an input: written through, the link stays.
  fs::create_symlink("real", at("link"));  // dangling first: creates the file it names
  write_small(at("link"), {at("input.mtx")});
  EXPECT_TRUE(fs::is_symlink(at("link")));
  read_back(at("real"));
  const std::string real = file_bytes(at("real"));
  write_small(at("link"), {});
  EXPECT_TRUE(fs::is_symlink(at("link")));
  EXPECT_EQ(file_bytes(at("real")), real);
  fs::create_symlink("loop2", at("loop1"));
  fs::create_symlink("loop1", at("loop2"));
  expect_error<UsageError>([&] { write_small(at("loop1"), {}); }, "symbolic links", "link loop");

  // Special files: never replaced.
  fs::create_directory(at("dir"));
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  fs::create_symlink("fifo", at("link_to_fifo"));
  const bool root = ::geteuid() == 0;
  // A device number no driver serves (the experimental range): the node is never a real device.
  const bool have_node = root && ::mknod(at("node").c_str(), S_IFCHR | 0600, makedev(240, 77)) == 0;
  before = snapshot(dir);
  expect_error<UsageError>([&] { write_small(at("dir"), {}); }, "is a directory", "directory");
  expect_error<UsageError>([&] { write_small(at("fifo"), {}); }, "is a FIFO", "fifo");
  expect_error<UsageError>([&] { write_small(at("link_to_fifo"), {}); }, "is a FIFO", "link to a fifo");
  if (have_node) expect_error<UsageError>([&] { write_small(at("node"), {}); }, "is a character device", "device");
  EXPECT_EQ(snapshot(dir), before);
  EXPECT_TRUE(leftovers(dir).empty());
  if (!have_node) std::printf("[ note ] device node case skipped (needs root)\n");

  // A read-only folder (as root permissions do not stop writes: a read-only tmpfs).
  fs::create_directory(at("ro"));
  {
    const std::string ro = at("ro");
    ScopedTmpfs mount(ro, "size=256k");
    if (!root) {
      write_small(ro + "/old", {});
      fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    } else if (mount.ok()) {
      write_small(ro + "/old", {});
      ASSERT_TRUE(mount.make_read_only());
    }
    if (!root || mount.ok()) {
      before = snapshot(ro);
      expect_error<RuntimeFailure>([&] { write_small(ro + "/old", {}); }, "old", "read-only folder");
      expect_error<RuntimeFailure>([&] { write_small(ro + "/new", {}); }, "new", "read-only folder, new file");
      EXPECT_EQ(snapshot(ro), before);
      if (!root) fs::permissions(ro, fs::perms::owner_all);
    } else {
      std::printf("[ note ] read-only folder case skipped (root without mount rights)\n");
    }
  }

  // A full file system: a 64 KiB tmpfs where one can be mounted, else a file size limit.
  fs::create_directory(at("full"));
  {
    const std::string full = at("full");
    ScopedTmpfs mount(full, "size=64k");
    write_small(full + "/out", {});
    before = snapshot(full);
    if (mount.ok()) {
      expect_error<RuntimeFailure>([&] { write_large(full + "/out", {}); }, "out", "full tmpfs");
    } else {
      std::printf("[ note ] no tmpfs: full disk simulated with RLIMIT_FSIZE\n");
      FileSizeLimit limit(64 * 1024);
      expect_error<RuntimeFailure>([&] { write_large(full + "/out", {}); }, "out", "file size limit");
    }
    EXPECT_EQ(snapshot(full), before);
    read_back(full + "/out");
    EXPECT_TRUE(leftovers(full).empty());
  }
  EXPECT_TRUE(leftovers(dir).empty());
}

}  // namespace kfactor::test
