#pragma once
// The malformed-input corpus in tests/io/malformed/ (written by
// tests/io/make_corpus.py and, for HDF5 CSR, make_h5_corpus.py). File names:
// FORMAT_OUTCOME[_LLINE]_description.EXT with FORMAT mm|edges|ratings|bmf|dense
// (a matrix, read with that --format) or factor (a factor file,
// io::read_factor_file), OUTCOME err|ok and, for err files, the 1-based line
// the error must name. A description containing "error_policy" is read with
// the duplicate policy `error`. HDF5 CSR files (FORMAT h5csr) have no lines:
// an err file's description starts with what the message must name (shape,
// indptr, indices, data, row_ids, col_ids, or file: only the file).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace kfactor::test {

struct CorpusFile {
  std::string path;       ///< absolute path
  std::string filename;   ///< name only
  std::string format;     ///< --format value, or "factor"
  bool ok = false;        ///< well-formed (must read)
  std::int64_t line = 0;  ///< expected error line (err files)
  bool strict_duplicates = false;
  /// h5csr err files: what the message names after the file ("dataset
  /// /indptr", "attribute 'shape'"; empty: the file alone).
  std::string object;
};

inline std::vector<CorpusFile> corpus_files() {
  const std::filesystem::path dir = std::filesystem::path(KFACTOR_SOURCE_DIR) / "tests" / "io" / "malformed";
  static const std::regex name_re(R"(^(mm|edges|ratings|bmf|dense|factor|h5csr)_(err|ok)(_L([0-9]+))?_(.+)$)");
  static const std::regex object_re(R"(^(shape|indptr|indices|data|row_ids|col_ids|file)_.+$)");
  std::vector<CorpusFile> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    CorpusFile c;
    c.path = entry.path().string();
    c.filename = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(c.filename, m, name_re)) {
      c.format = "";  // reported as a failure by the tests
    } else {
      c.format = m[1];
      c.ok = m[2] == "ok";
      c.line = m[4].matched ? std::stoll(m[4]) : 0;
      c.strict_duplicates = c.filename.find("error_policy") != std::string::npos;
      std::smatch o;
      const std::string description = m[5];
      if (c.format == "h5csr" && !c.ok && std::regex_match(description, o, object_re)) {
        const std::string what = o[1];
        c.object = what == "shape" ? "attribute 'shape'" : what == "file" ? "" : "dataset /" + what;
      }
    }
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.filename < b.filename; });
  return out;
}

}  // namespace kfactor::test
