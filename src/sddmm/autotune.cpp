#include <kfactor/sddmm/autotune.hpp>

#include <kfactor/core/error.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace kfactor {
namespace {

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, SddmmOptions>& memory_cache() {
  static std::map<std::string, SddmmOptions> c;
  return c;
}

/// InputError unless `file` is a regular file or does not exist yet: a
/// directory would read as an empty cache and refuse the append, a FIFO
/// would block the read until a writer comes.
void check_cache_file(const std::string& file) {
  std::error_code ec;
  const auto st = std::filesystem::status(file, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw InputError(file + (std::filesystem::is_directory(st) ? ": is a directory" : ": is not a regular file") +
                     ", not an autotune cache file");
}

bool parse_options(std::istringstream& in, SddmmOptions& o) {
  std::string field;
  bool any = false;
  while (in >> field) {
    const auto eq = field.find('=');
    if (eq == std::string::npos) return false;
    const std::string k = field.substr(0, eq), v = field.substr(eq + 1);
    try {
      if (k == "kernel")
        o.kernel = parse_sddmm_kernel(v);
      else if (k == "tiles")
        o.column_tiles = v == "1";
      else if (k == "tile_cols")
        o.tile_cols = std::stoi(v);
      else if (k == "staged")
        o.staged = v == "A" ? SddmmStaged::a : v == "B" ? SddmmStaged::b : SddmmStaged::automatic;
      else if (k == "tk")
        o.tk = std::stoi(v);
      else if (k == "chunk")
        o.chunk = std::stoi(v);
      else if (k == "lanes")
        o.vector_length = std::stoi(v);
      else if (k == "active_rows")
        o.active_rows = v == "1";
      else if (k == "sort")
        o.sort_items = std::stoi(v);
      else
        continue;
    } catch (const std::exception&) {
      return false;
    }
    any = true;
  }
  return any;
}

}  // namespace

std::string sddmm_tune_key(const std::string& device, std::int64_t m, std::int64_t n, std::int64_t nnz, int k,
                           std::size_t element_bytes) {
  std::ostringstream s;
  s << device << "|" << m << "|" << n << "|" << nnz << "|" << k << "|" << element_bytes;
  std::string key = s.str();
  for (auto& c : key)
    if (c == ' ') c = '_';
  return key;
}

std::string sddmm_options_string(const SddmmOptions& o) {
  std::ostringstream s;
  s << "kernel=" << to_string(o.kernel) << " tiles=" << (o.column_tiles ? 1 : 0) << " tile_cols=" << o.tile_cols
    << " staged=" << to_string(o.staged) << " tk=" << o.tk << " chunk=" << o.chunk << " lanes=" << o.vector_length
    << " active_rows=" << (o.active_rows ? 1 : 0) << " sort=" << o.sort_items;
  return s.str();
}

std::optional<SddmmOptions> sddmm_tune_lookup(const std::string& key, const std::string& file) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& mem = memory_cache();
  if (auto it = mem.find(key); it != mem.end()) return it->second;
  if (file.empty()) return std::nullopt;
  check_cache_file(file);
  std::ifstream in(file);
  std::string line;
  std::optional<SddmmOptions> found;
  while (std::getline(in, line)) {  // the last entry of a key wins
    std::istringstream ls(line);
    std::string k;
    if (!(ls >> k) || k != key) continue;
    SddmmOptions o;
    if (parse_options(ls, o)) found = o;
  }
  if (found) mem[key] = *found;
  return found;
}

void sddmm_tune_store(const std::string& key, const SddmmOptions& options, const std::string& file) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  memory_cache()[key] = options;
  if (file.empty()) return;
  check_cache_file(file);
  std::ofstream out(file, std::ios::app);
  if (!out) throw RuntimeFailure("sddmm autotune: cannot append to cache file " + file);
  out << key << " " << sddmm_options_string(options) << "\n";
}

}  // namespace kfactor
