#pragma once
// Running the `kfactor` driver from tests as a user would: a private
// temporary folder, shell quoting, and a run that captures exit code, stdout
// and stderr. The child keeps Open MPI off UCX (its warnings would land on
// stdout) whatever the test's environment says.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace kfactor::test {

/// A folder under the system temp dir, unique to this process and object,
/// removed with everything in it on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag = "test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("kfactor_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// `s` as one single-quoted shell word.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The text of an output file without its output-set stamp line (`% kfactor-set
/// ...` among a Matrix Market file's comments, `# kfactor-set ...` first in a
/// CSV), which carries a fresh set id per run: what two runs' outputs can be
/// compared by. Throws (failing the test) when the file has no stamp.
inline std::string without_stamp(const std::string& text) {
  for (std::size_t b = 0; b < text.size();) {
    const std::size_t e = text.find('\n', b);
    const std::size_t next = e == std::string::npos ? text.size() : e + 1;
    if (text[b] != '%' && text[b] != '#') break;  // past the leading comments
    if (text.compare(b + 1, 13, " kfactor-set ") == 0) return text.substr(0, b) + text.substr(next);
    b = next;
  }
  throw std::runtime_error("no kfactor-set stamp line in the output: " + text.substr(0, 80));
}

struct CliRun {
  int code = -1;  ///< exit code, or 128 + signal
  std::string out, err;
};

/// Runs `[launcher] kfactor ARGS` (ARGS already shell-quoted where needed)
/// with stdout and stderr captured in `dir`; `slot` keeps the captures of
/// several runs apart.
inline CliRun run_kfactor(const std::string& args, const TempDir& dir, const std::string& launcher = "", int slot = 0) {
  const std::string out = dir.file("stdout" + std::to_string(slot)), err = dir.file("stderr" + std::to_string(slot));
  const std::string cmd = "OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=^ucx " + launcher + " " +
                          quote(std::string(KFACTOR_BINARY_DIR) + "/kfactor") + " " + args + " >" + quote(out) + " 2>" +
                          quote(err);
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace kfactor::test
