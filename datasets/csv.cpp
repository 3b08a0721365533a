#include "datasets/csv.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht::data {

CsvReader::CsvReader(std::string_view text, std::string path) : text_(text), path_(std::move(path)) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte-order mark
}

bool CsvReader::next(std::vector<std::string>& fields) {
  fields.clear();
  // Blank lines between records are skipped.
  while (pos_ < text_.size() && (text_[pos_] == '\n' || text_[pos_] == '\r')) {
    if (text_[pos_] == '\n') ++line_;
    ++pos_;
  }
  if (pos_ >= text_.size()) return false;
  record_line_ = line_;
  std::string field;
  while (true) {
    if (pos_ < text_.size() && text_[pos_] == '"') {  // quoted field
      const int64_t opened = line_;
      ++pos_;
      while (true) {
        if (pos_ >= text_.size())
          throw line_error(path_, opened, "unterminated quoted field (a '\"' is never closed)");
        const char c = text_[pos_++];
        if (c == '"') {
          if (pos_ < text_.size() && text_[pos_] == '"') {
            field += '"';
            ++pos_;
            continue;
          }
          break;
        }
        if (c == '\n') ++line_;
        field += c;
      }
      if (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r')
        throw line_error(path_, line_, fmt::format("unexpected character '{}' after a closing quote", text_[pos_]));
    } else {
      while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != '\n' && text_[pos_] != '\r') {
        if (text_[pos_] == '"')
          throw line_error(path_, line_, "a '\"' inside an unquoted field (quote the whole field)");
        field += text_[pos_++];
      }
    }
    fields.push_back(std::move(field));
    field.clear();
    if (pos_ >= text_.size()) return true;
    const char c = text_[pos_++];
    if (c == ',') continue;
    if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
    return true;
  }
}

int csv_column(const std::vector<std::string>& header, const std::string& name, const std::string& path) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  std::string have;
  for (const auto& h : header) have += (have.empty() ? "" : ", ") + h;
  throw line_error(path, 1, fmt::format("no column '{}' in the header (columns: {})", name, have));
}

}  // namespace ht::data
