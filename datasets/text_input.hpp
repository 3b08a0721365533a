#pragma once
// The bytes of a text input (edge lists, Matrix Market, CSV, JSON), inflated
// in memory when the file is gzip-compressed. Compression is detected by the
// gzip magic bytes (1f 8b), never by the name, so "edges.txt" that is gzip
// and "edges.csv.gz" that is plain text both read. Uncompressed files stay a
// memory map (no copy).
#include <cstddef>
#include <string>
#include <string_view>

#include "core/file_io.hpp"

namespace ht::data {

class TextInput {
 public:
  explicit TextInput(const std::string& path);

  std::string_view text() const {
    return gzip_ ? std::string_view(inflated_)
                 : std::string_view(reinterpret_cast<const char*>(file_.data()), file_.size());
  }
  bool was_gzip() const { return gzip_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  MappedFile file_;
  std::string inflated_;
  bool gzip_ = false;
};

// True when the bytes start with the gzip magic (1f 8b).
bool is_gzip(std::string_view bytes);

// Inflates a whole gzip stream (several concatenated members too, as `cat
// a.gz b.gz` makes); errors name `path` and the compressed byte offset.
std::string gunzip(std::string_view bytes, const std::string& path);

// `path` without a trailing ".gz" (for decisions by extension such as the
// .csv header rule of edge lists).
std::string without_gz_suffix(const std::string& path);

}  // namespace ht::data
