// Text output for the writers of include/kfactor/io/write.hpp, through an
// AtomicFile (src/io/output.cpp).
#include <kfactor/io/write.hpp>

#include <charconv>
#include <memory>

namespace kfactor::io::detail {

namespace {
constexpr std::size_t flush_at = 1 << 20;

std::string stamp_text(const OutputStamp& s) {
  std::string members;
  for (const auto& m : s.members) members += (members.empty() ? "" : ",") + m;
  return "kfactor-set " + s.set + " " + s.member + " " + members;
}
}  // namespace

TextWriter::TextWriter(const std::string& path, const OutputOptions& out) : stamp_(out.stamp), pending_(out.pending) {
  // Claimed first: a second member at the same target would otherwise
  // replace the first one's waiting temporary.
  if (pending_) pending_->claim(stamp_.member, resolve_write_target(path));
  file_ = std::make_unique<AtomicFile>(path, out.inputs);
  buffer_.reserve(flush_at + 256);
}

TextWriter::~TextWriter() = default;

void TextWriter::flush() {
  if (buffer_.empty()) return;
  file_->write(buffer_.data(), buffer_.size());
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
  if (!stamp_.set.empty()) {
    put("% ");
    put(stamp_text(stamp_));
    put('\n');
  }
}

void TextWriter::put_csv_stamp() {
  if (stamp_.set.empty()) return;
  put("# ");
  put(stamp_text(stamp_));
  put('\n');
}

void TextWriter::close() {
  flush();
  if (!pending_) {
    file_->commit();
    return;
  }
  file_->finish();
  pending_->add(stamp_.member, std::move(file_));
}

}  // namespace kfactor::io::detail
