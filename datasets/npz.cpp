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
  const auto it = std::find(keys_.begin(), keys_.end(), key);
  if (it == keys_.end()) {
    std::vector<std::string> sorted = keys_;
    std::sort(sorted.begin(), sorted.end());
    throw file_error(path_, fmt::format("no '{}' array (keys: {})", key, fmt::join(sorted, ", ")));
  }
  const std::string member = key + ".npy";
  const std::string name = path_ + ":" + member;
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
  return NpyArray(name, std::move(bytes));
}

}  // namespace ht::data
