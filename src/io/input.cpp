// The common input entry (include/kfactor/io/input.hpp) and the HDF5
// signature test of io/hdf5_csr.hpp, which needs no HDF5.
#include <kfactor/io/detail/text_ranges.hpp>
#include <kfactor/io/hdf5_csr.hpp>
#include <kfactor/io/input.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace kfactor::io {

bool is_hdf5_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  static constexpr unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  bool found = false;
  // HDF5 looks for its superblock at 0, 512, 1024, 2048, ... (after a user block).
  for (off_t at = 0; !found && at + 8 <= st.st_size; at = at == 0 ? 512 : 2 * at) {
    unsigned char head[8];
    found = ::pread(fd, head, sizeof head, at) == static_cast<ssize_t>(sizeof head) &&
            std::memcmp(head, signature, sizeof head) == 0;
  }
  ::close(fd);
  return found;
}

InputKind probe_input(const std::string& path, Format format, const ReadOptions& opt) {
  if (format == Format::h5csr || (format == Format::automatic && is_hdf5_file(path))) return {Format::h5csr, false};
  const detail::TextHeader h = detail::read_text_header(path, format, opt);
  return {h.format, h.format == Format::dense || h.array};
}

template <class T>
RatingData<T> read_input(const std::string& path, Format format, const ReadOptions& opt, ReadInfo* info) {
  if (format == Format::h5csr || (format == Format::automatic && is_hdf5_file(path)))
    return read_hdf5_csr<T>(path, opt, info);
  const std::string text = read_file(path, opt.memory_limit);
  if (format == Format::automatic) format = detect_format(text, path);
  if (format == Format::ratings) return parse_ratings<T>(text, path, opt, info);
  RatingData<T> out;
  out.matrix = parse_matrix<T>(text, path, format, opt, info);
  return out;
}

template RatingData<float> read_input<float>(const std::string&, Format, const ReadOptions&, ReadInfo*);
template RatingData<double> read_input<double>(const std::string&, Format, const ReadOptions&, ReadInfo*);

}  // namespace kfactor::io
