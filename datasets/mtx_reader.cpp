#include "datasets/mtx_reader.hpp"

#include <cmath>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "datasets/edge_text.hpp"
#include "datasets/text_input.hpp"

namespace ht::data {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

struct Banner {
  bool pattern = false;
  bool symmetric = false;
  bool integer = false;
};

Banner parse_banner(std::string_view line, const std::string& path) {
  std::istringstream in{std::string(line)};
  std::string tag, object, format, field, symmetry;
  in >> tag >> object >> format >> field >> symmetry;
  if (tag != "%%MatrixMarket")
    throw line_error(path, 1, "not a Matrix Market file (the first line must start with %%MatrixMarket)");
  object = lower(object);
  format = lower(format);
  field = lower(field);
  symmetry = lower(symmetry);
  if (object != "matrix" || format != "coordinate")
    throw line_error(path, 1, fmt::format("unsupported Matrix Market type '{} {}' (only 'matrix coordinate')",
                                          object, format));
  if (field != "real" && field != "integer" && field != "pattern")
    throw line_error(path, 1, fmt::format("unsupported field '{}' (real, integer or pattern)", field));
  if (symmetry != "general" && symmetry != "symmetric")
    throw line_error(path, 1, fmt::format("unsupported symmetry '{}' (general or symmetric)", symmetry));
  return {field == "pattern", symmetry == "symmetric", field == "integer"};
}

int64_t parse_count(std::string_view tok, const std::string& path, int64_t line, const char* what) {
  int64_t v = -1;
  auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
  if (ec != std::errc() || p != tok.data() + tok.size() || v < 0)
    throw line_error(path, line, fmt::format("bad {} '{}' on the size line", what, tok));
  return v;
}

// Adds j -> i for every off-diagonal i -> j.
void mirror(RawEdges& e) {
  const int64_t m = e.size();
  int64_t off = 0;
  for (int64_t i = 0; i < m; ++i) off += e.src[i] != e.dst[i];
  e.src.reserve(m + off);
  e.dst.reserve(m + off);
  if (!e.weight.empty()) e.weight.reserve(m + off);
  for (int64_t i = 0; i < m; ++i) {
    if (e.src[i] == e.dst[i]) continue;
    e.src.push_back(e.dst[i]);
    e.dst.push_back(e.src[i]);
    if (!e.weight.empty()) e.weight.push_back(e.weight[i]);
  }
}

}  // namespace

MtxData read_matrix_market(const std::string& path, bool keep_weights) {
  const TextInput file(path);  // gzip inflated
  std::string_view text = text_of_file(file.text(), path);
  const Banner banner = parse_banner(take_line(text), path);
  int64_t line_no = 2;
  std::string_view size_line;
  while (!text.empty()) {
    size_line = take_line(text);
    if (!is_blank_or_comment(size_line, "%")) break;
    size_line = {};
    ++line_no;
  }
  if (size_line.empty()) throw file_error(path, "no size line ('rows columns entries') after the banner");
  std::string_view tok[3];
  if (split_tokens(size_line, tok, 3) != 3)
    throw line_error(path, line_no, "the size line must have 3 numbers: rows columns entries");
  const int64_t rows = parse_count(tok[0], path, line_no, "row count");
  const int64_t cols = parse_count(tok[1], path, line_no, "column count");
  const int64_t entries = parse_count(tok[2], path, line_no, "entry count");
  if (rows != cols)
    throw line_error(path, line_no, fmt::format("the matrix is {} x {}; an adjacency matrix must be square", rows, cols));

  EdgeTextOptions t;
  t.path = path;
  t.comment_chars = "%";
  t.columns = banner.pattern ? 2 : 3;
  t.column_names = banner.pattern ? "row, column" : "row, column, value";
  t.keep_weights = keep_weights;
  t.id_base = 1;
  t.id_limit = static_cast<uint64_t>(rows);
  t.limit_note = fmt::format("the size line says {} rows and columns", rows);
  t.first_line = line_no + 1;
  MtxData out;
  out.num_vertices = rows;
  out.edges = parse_edge_text(text, t);
  if (out.edges.size() != entries)
    throw file_error(path, fmt::format("the size line (line {}) announces {} entries but the file has {}{}", line_no,
                                       entries, out.edges.size(),
                                       out.edges.size() < entries ? " (truncated file?)" : ""));
  // What the banner promises: integer values, and one triangle of a
  // symmetric matrix (both would give every edge twice once mirrored).
  if (banner.integer)
    for (int64_t k = 0; k < static_cast<int64_t>(out.edges.weight.size()); ++k)
      if (const float w = out.edges.weight[k]; w != std::floor(w))
        throw file_error(path, fmt::format("the banner says integer but entry {} ({} {}) has the value {}; use "
                                           "'real' in the banner",
                                           k + 1, out.edges.src[k] + 1, out.edges.dst[k] + 1, w));
  if (banner.symmetric) {
    int64_t lower = -1, upper = -1;  // an entry of each triangle
    for (int64_t k = 0; k < out.edges.size() && (lower < 0 || upper < 0); ++k) {
      if (out.edges.src[k] > out.edges.dst[k] && lower < 0) lower = k;
      if (out.edges.src[k] < out.edges.dst[k] && upper < 0) upper = k;
    }
    if (lower >= 0 && upper >= 0)
      throw file_error(path, fmt::format("the banner says symmetric (one triangle stored) but entries lie in both "
                                         "triangles (entry {}: {} {}; entry {}: {} {}): every edge would be there "
                                         "twice; use 'general' in the banner",
                                         lower + 1, out.edges.src[lower] + 1, out.edges.dst[lower] + 1, upper + 1,
                                         out.edges.src[upper] + 1, out.edges.dst[upper] + 1));
    mirror(out.edges);
  }
  return out;
}

}  // namespace ht::data
