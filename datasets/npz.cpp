#include "datasets/npz.hpp"

#include <algorithm>
#include <cstddef>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <zip.h>

#include "core/error.hpp"
#include "core/file_io.hpp"

namespace ht::data {
namespace {

std::string zip_message(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string m = zip_error_strerror(&e);
  zip_error_fini(&e);
  return m;
}

}  // namespace

NpzArchive::NpzArchive(const std::string& path) : path_(path) {
  if (!file_exists(path)) throw file_error(path, "file not found");
  int code = 0;
  zip_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!zip_) throw file_error(path, fmt::format("not a readable .npz (zip) archive: {}", zip_message(code)));
  const zip_int64_t n = zip_get_num_entries(zip_, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(zip_, static_cast<zip_uint64_t>(i), 0);
    if (!name) continue;
    std::string key = name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) {
      keys_.push_back(key.substr(0, key.size() - 4));
      index_.push_back(i);
    }
  }
}

NpzArchive::~NpzArchive() {
  if (zip_) zip_discard(zip_);
}

bool NpzArchive::has(const std::string& key) const {
  return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
}

NpyArray NpzArchive::array(const std::string& key) const {
  std::string name;
  std::vector<std::byte> bytes = member_bytes(key, name);
  return NpyArray(name, std::move(bytes));
}

std::string NpzArchive::string_scalar(const std::string& key) const {
  std::string name;
  const std::vector<std::byte> bytes = member_bytes(key, name);
  const std::string_view b(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (b.size() < 10 || b.substr(0, 6) != "\x93NUMPY") throw offset_error(name, 0, "not a NumPy .npy member");
  const size_t len_bytes = b[6] == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes && 8 + i < b.size(); ++i)
    header_len |= static_cast<size_t>(static_cast<unsigned char>(b[8 + i])) << (8 * i);
  const size_t data_at = 8 + len_bytes + header_len;
  if (data_at > b.size()) throw offset_error(name, 8, "truncated .npy header");
  const std::string_view header = b.substr(8 + len_bytes, header_len);
  const bool bytes_type = header.find("'|S") != std::string_view::npos;
  const bool unicode = header.find("'<U") != std::string_view::npos;
  if ((!bytes_type && !unicode) || header.find("'shape': ()") == std::string_view::npos)
    throw offset_error(name, 8 + len_bytes, fmt::format("expected a string scalar (dtype |S or <U, shape ()), header {}",
                                                        header.substr(0, header.find('}') + 1)));
  std::string out;
  for (size_t i = data_at; i < b.size(); i += unicode ? 4 : 1) out += b[i];  // <U: UTF-32, ASCII expected
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

std::vector<std::byte> NpzArchive::member_bytes(const std::string& key, std::string& name) const {
  const auto it = std::find(keys_.begin(), keys_.end(), key);
  if (it == keys_.end()) {
    std::vector<std::string> sorted = keys_;
    std::sort(sorted.begin(), sorted.end());
    throw file_error(path_, fmt::format("no '{}' array (keys: {})", key, fmt::join(sorted, ", ")));
  }
  const std::string member = key + ".npy";
  name = path_ + ":" + member;
  const auto index = static_cast<zip_uint64_t>(index_[it - keys_.begin()]);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(zip_, index, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw file_error(name, fmt::format("cannot read the member's size: {}", zip_strerror(zip_)));
  std::vector<std::byte> bytes(static_cast<size_t>(st.size));
  zip_file_t* f = zip_fopen_index(zip_, index, 0);
  if (!f) throw file_error(name, fmt::format("cannot open the member: {}", zip_strerror(zip_)));
  zip_uint64_t got = 0;
  while (got < st.size) {
    const zip_int64_t r = zip_fread(f, bytes.data() + got, st.size - got);
    if (r <= 0) break;
    got += static_cast<zip_uint64_t>(r);
  }
  // One more read: libzip checks the CRC at the end of the data.
  char probe;
  const zip_int64_t tail = got == st.size ? zip_fread(f, &probe, 1) : -1;
  std::string why = tail < 0 ? zip_error_strerror(zip_file_get_error(f)) : "";
  zip_fclose(f);
  if (got != st.size || tail != 0)
    throw file_error(name, fmt::format("cannot read the member ({} of {} bytes): {}", got, st.size,
                                       why.empty() ? "archive damaged" : why));
  return bytes;
}

}  // namespace ht::data
