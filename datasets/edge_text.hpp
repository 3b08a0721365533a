#pragma once
// Parallel parser of the data lines of a text edge list ("src dst [weight]"
// per line; whitespace- or comma-separated). Shared by the SNAP/CSV reader
// and the Matrix Market reader. Error positions are exact line numbers even
// though blocks of lines are parsed concurrently.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct EdgeTextOptions {
  std::string path;                     // named in error messages
  std::string_view comment_chars = "#%";  // a line whose first non-blank char is one of these is skipped
  int columns = 0;                      // 2 or 3; 0 = as on the first data line
  std::string column_names = "source, destination[, weight]";  // for column-count messages
  bool keep_weights = true;             // false: a third column is checked to be numeric, then dropped
  uint64_t id_base = 0;                 // subtracted from every id (1 for Matrix Market)
  uint64_t id_limit = std::numeric_limits<uint64_t>::max();  // ids (after the base) must be below it; max = no limit
  std::string limit_note;               // what fixed id_limit, e.g. "N = 100 from f.npy"
  int64_t first_line = 1;               // line number of the text's first line
};

// Parses every line of `text`; blank and comment lines are skipped.
// Throws ht::Error "path:line: message" for the first bad line.
RawEdges parse_edge_text(std::string_view text, const EdgeTextOptions& opt);

// The text of a whole file made ready for line parsing: a UTF-8 byte-order
// mark at its start is skipped (line numbers are unchanged); a file of
// several lines ended by bare CRs (classic Mac line ends, no LF anywhere) is
// refused with a message saying so, since it would otherwise read as one
// long line.
std::string_view text_of_file(std::string_view text, const std::string& path);

// Splits off the first line of `text` (without its newline); advances `text`.
std::string_view take_line(std::string_view& text);

// True for a blank line or a comment line.
bool is_blank_or_comment(std::string_view line, std::string_view comment_chars);

// The tokens of a data line (whitespace or comma separated), at most `max`.
// Returns the total count found (which may exceed `max`).
int split_tokens(std::string_view line, std::string_view* out, int max);

}  // namespace ht::data
