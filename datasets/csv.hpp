#pragma once
// A small RFC 4180 CSV reader: comma-separated fields, double-quoted fields
// may hold commas, newlines and doubled quotes (""), CRLF or LF line ends.
// Used for the MUSAE target files, whose page names contain quoted commas.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ht::data {

class CsvReader {
 public:
  // `text` must outlive the reader; `path` is named in messages.
  CsvReader(std::string_view text, std::string path);

  // Reads the next record into `fields`; false at the end of the text.
  bool next(std::vector<std::string>& fields);
  int64_t record_line() const { return record_line_; }  // line where the last record started
  const std::string& path() const { return path_; }

 private:
  std::string_view text_;
  std::string path_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t record_line_ = 0;
};

// Header row as a name -> column lookup; throws naming the file if absent.
int csv_column(const std::vector<std::string>& header, const std::string& name, const std::string& path);

}  // namespace ht::data
