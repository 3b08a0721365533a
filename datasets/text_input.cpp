#include "datasets/text_input.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <zlib.h>

#include "core/error.hpp"
#include "core/log.hpp"

namespace ht::data {
namespace {

// zlib's stream, released on every path out.
struct Inflater {
  z_stream s{};
  explicit Inflater(const std::string& path) {
    // 16 + MAX_WBITS: gzip wrapper only (a raw zlib stream is not a .gz file).
    if (inflateInit2(&s, 16 + MAX_WBITS) != Z_OK) throw file_error(path, "cannot start zlib's inflate");
  }
  ~Inflater() { inflateEnd(&s); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(std::string_view bytes, const std::string& path) {
  std::string out;
  // The last member's trailer holds its size mod 2^32: a first guess for the buffer, trusted only
  // up to deflate's largest ratio (about 1032:1), so a damaged trailer cannot ask for gigabytes.
  if (bytes.size() >= 18) {
    uint32_t isize = 0;
    for (int i = 0; i < 4; ++i)
      isize |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[bytes.size() - 4 + i])) << (8 * i);
    out.reserve(std::min<size_t>(std::max<size_t>(isize, bytes.size()), bytes.size() * 1032 + (1u << 16)));
  }
  Inflater z(path);
  size_t in_at = 0;
  while (true) {
    const size_t member_at = in_at;
    while (true) {
      if (out.size() == out.capacity() || out.capacity() - out.size() < (1u << 16))
        out.reserve(std::max<size_t>(out.capacity() * 2, 1u << 20));
      const size_t have = out.size();
      out.resize(out.capacity());
      const size_t in_left = bytes.size() - in_at;
      const size_t out_left = out.size() - have;
      z.s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_at));
      z.s.avail_in = static_cast<uInt>(std::min<size_t>(in_left, std::numeric_limits<uInt>::max()));
      z.s.next_out = reinterpret_cast<Bytef*>(out.data() + have);
      z.s.avail_out = static_cast<uInt>(std::min<size_t>(out_left, std::numeric_limits<uInt>::max()));
      const uInt in0 = z.s.avail_in, out0 = z.s.avail_out;
      const int rc = inflate(&z.s, Z_NO_FLUSH);
      in_at += in0 - z.s.avail_in;
      out.resize(have + (out0 - z.s.avail_out));
      if (rc == Z_STREAM_END) break;
      if (rc == Z_OK) continue;
      // No progress: with room for output, only missing input stops it.
      if (rc == Z_BUF_ERROR && in_at < bytes.size()) continue;
      if (rc == Z_BUF_ERROR)
        throw offset_error(path, in_at, "truncated gzip data (the compressed stream ends early)");
      throw offset_error(path, in_at,
                         fmt::format("corrupt gzip data in the member starting at byte {}: {}", member_at,
                                     z.s.msg ? z.s.msg : "inflate failed"));
    }
    // Another member may follow (concatenated .gz files); trailing zero padding is tolerated.
    std::string_view rest = bytes.substr(in_at);
    if (rest.find_first_not_of('\0') == std::string_view::npos) break;
    if (!is_gzip(rest))
      throw offset_error(path, in_at, "data after the end of the gzip stream is not another gzip member");
    if (inflateReset(&z.s) != Z_OK) throw file_error(path, "cannot restart zlib's inflate");
  }
  out.shrink_to_fit();
  return out;
}

std::string without_gz_suffix(const std::string& path) {
  if (path.size() < 3) return path;
  std::string ext = path.substr(path.size() - 3);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".gz" ? path.substr(0, path.size() - 3) : path;
}

TextInput::TextInput(const std::string& path) : path_(path), file_(path) {
  const std::string_view raw(reinterpret_cast<const char*>(file_.data()), file_.size());
  if (!is_gzip(raw)) return;
  gzip_ = true;
  inflated_ = gunzip(raw, path);
  log::debug("{}: gzip, {} bytes inflated to {}", path, raw.size(), inflated_.size());
  file_ = MappedFile();  // the compressed bytes are no longer needed
}

}  // namespace ht::data
