// The non-template part of include/kfactor/io/write.hpp.
#include <kfactor/io/write.hpp>

#include <charconv>
#include <cerrno>
#include <cstring>

namespace kfactor::io::detail {

namespace {
constexpr std::size_t flush_at = 1 << 20;
}

TextWriter::TextWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) throw RuntimeFailure(path + ": cannot open for writing: " + std::strerror(errno));
  buffer_.reserve(flush_at + 256);
}

TextWriter::~TextWriter() {
  if (file_) std::fclose(file_);
}

void TextWriter::flush() {
  if (buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
    throw RuntimeFailure(path_ + ": write failed: " + std::strerror(errno));
  buffer_.clear();
}

void TextWriter::put(std::string_view s) {
  buffer_.append(s);
  if (buffer_.size() >= flush_at) flush();
}

void TextWriter::put(char c) {
  buffer_.push_back(c);
  if (buffer_.size() >= flush_at) flush();
}

void TextWriter::put_int(std::int64_t v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void TextWriter::put_real(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void TextWriter::put_real(float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  put(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}

void TextWriter::put_comment(const std::string& comment) {
  const std::string text = comment.empty() ? std::string("written by kfactor") : comment;
  std::size_t b = 0;
  while (b <= text.size()) {
    const std::size_t e = text.find('\n', b);
    put("% ");
    put(std::string_view(text).substr(b, e == std::string::npos ? std::string::npos : e - b));
    put('\n');
    if (e == std::string::npos) break;
    b = e + 1;
  }
}

void TextWriter::close() {
  if (!file_) return;
  flush();
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fclose(f) != 0) throw RuntimeFailure(path_ + ": write failed on close: " + std::strerror(errno));
}

}  // namespace kfactor::io::detail
