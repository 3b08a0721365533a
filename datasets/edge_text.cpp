#include "datasets/edge_text.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/progress.hpp"

namespace ht::data {
namespace {

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

bool is_space(char c) { return c == ' ' || c == '\t'; }

// A token quoted in a message, shortened so one bad line cannot flood the terminal.
std::string quoted(std::string_view tok) {
  if (tok.size() > 40) return fmt::format("'{}...'", tok.substr(0, 40));
  return fmt::format("'{}'", tok);
}

struct Position {  // first bad line of a block
  int64_t line = -1;  // index of the line within the block
  std::string message;
};

// Parses the data lines of one block of text. Lines are numbered from 0
// within the block; edges are written from `out` on.
class BlockParser {
 public:
  BlockParser(const EdgeTextOptions& opt, int columns) : opt_(opt), columns_(columns) {}

  // Returns the number of edges written; stops at the first bad line.
  int64_t parse(std::string_view text, uint64_t* src, uint64_t* dst, float* weight, Position& error) const {
    int64_t line = 0, count = 0;
    while (!text.empty()) {
      std::string_view l = take_line(text);
      if (!is_blank_or_comment(l, opt_.comment_chars)) {
        std::string message = parse_line(l, src[count], dst[count], weight ? &weight[count] : nullptr);
        if (!message.empty()) {
          error = {line, std::move(message)};
          return count;
        }
        ++count;
      }
      ++line;
    }
    return count;
  }

 private:
  // Empty string = success.
  std::string parse_line(std::string_view line, uint64_t& s, uint64_t& d, float* w) const {
    std::string_view tok[3];
    const int n = split_tokens(line, tok, 3);
    if (n != columns_)
      return fmt::format("expected {} columns ({}), found {}", columns_, opt_.column_names, n);
    std::string m = parse_id(tok[0], 1, s);
    if (m.empty()) m = parse_id(tok[1], 2, d);
    if (m.empty() && columns_ == 3) m = parse_weight(tok[2], w);
    return m;
  }

  std::string parse_id(std::string_view tok, int column, uint64_t& id) const {
    if (tok.empty()) return fmt::format("empty field in column {}", column);
    if (tok[0] == '-') {
      uint64_t magnitude = 0;
      auto [p, ec] = std::from_chars(tok.data() + 1, tok.data() + tok.size(), magnitude);
      if (ec == std::errc() && p == tok.data() + tok.size())
        return fmt::format("negative vertex id {} in column {}", tok, column);
      return fmt::format("non-numeric token {} in column {} (expected a vertex id)", quoted(tok), column);
    }
    auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), id);
    if (ec == std::errc::result_out_of_range)
      return fmt::format("vertex id {} in column {} does not fit in 64 bits", quoted(tok), column);
    if (ec != std::errc() || p != tok.data() + tok.size())
      return fmt::format("non-numeric token {} in column {} (expected a vertex id)", quoted(tok), column);
    if (id < opt_.id_base)
      return fmt::format("vertex id {} in column {} is below {} (ids are {}-based)", tok, column, opt_.id_base,
                         opt_.id_base);
    id -= opt_.id_base;
    if (opt_.id_limit != kNoLimit && id >= opt_.id_limit)
      return fmt::format("vertex id {} in column {} is out of range ({})", tok, column, opt_.limit_note);
    return {};
  }

  std::string parse_weight(std::string_view tok, float* w) const {
    if (tok.empty()) return "empty field in column 3";
    float value = 0;
    const char* b = tok.data();
    if (*b == '+') ++b;  // from_chars rejects a leading '+', which some writers emit
    auto [p, ec] = std::from_chars(b, tok.data() + tok.size(), value);
    if (ec == std::errc::result_out_of_range)
      return fmt::format("weight {} in column 3 is out of the float range", quoted(tok));
    if (ec != std::errc() || p != tok.data() + tok.size())
      return fmt::format("non-numeric token {} in column 3 (expected a weight)", quoted(tok));
    if (w) *w = value;
    return {};
  }

  const EdgeTextOptions& opt_;
  int columns_;
};

// Column count of the first data line (2 or 3), or 0 when there is none.
int detect_columns(std::string_view text, const EdgeTextOptions& opt) {
  int64_t line_no = opt.first_line;
  while (!text.empty()) {
    std::string_view l = take_line(text);
    if (!is_blank_or_comment(l, opt.comment_chars)) {
      std::string_view tok[3];
      const int n = split_tokens(l, tok, 3);
      if (n != 2 && n != 3)
        throw line_error(opt.path, line_no,
                         fmt::format("expected 2 or 3 columns ({}), found {}", opt.column_names, n));
      return n;
    }
    ++line_no;
  }
  return 0;
}

// Block boundaries: each block but the last ends just after a newline.
std::vector<size_t> block_bounds(std::string_view text) {
  const size_t target = std::max<size_t>(size_t{1} << 22, text.size() / (static_cast<size_t>(omp_get_max_threads()) * 8 + 1));
  std::vector<size_t> bounds{0};
  while (bounds.back() < text.size()) {
    size_t next = bounds.back() + target;
    if (next >= text.size()) {
      next = text.size();
    } else {
      const void* nl = std::memchr(text.data() + next, '\n', text.size() - next);
      next = nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1 : text.size();
    }
    bounds.push_back(next);
  }
  return bounds;
}

int64_t count_lines(std::string_view block) {
  if (block.empty()) return 0;
  int64_t n = std::count(block.begin(), block.end(), '\n');
  if (block.back() != '\n') ++n;
  return n;
}

}  // namespace

std::string_view text_of_file(std::string_view text, const std::string& path) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte-order mark
  // No LF anywhere but a CR before the end: CR-only line ends. (A stray CR
  // in a file with LF line ends is left to the line parser.)
  if (text.find('\n') == std::string_view::npos) {
    std::string_view body = text;
    while (!body.empty() && (body.back() == '\r' || is_space(body.back()))) body.remove_suffix(1);
    if (body.find('\r') != std::string_view::npos)
      throw line_error(path, 1,
                       "the file uses CR line ends (classic Mac: CR without LF); convert them to LF first, "
                       "e.g. tr '\\r' '\\n' < in > out");
  }
  return text;
}

std::string_view take_line(std::string_view& text) {
  const size_t nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  return line;
}

bool is_blank_or_comment(std::string_view line, std::string_view comment_chars) {
  size_t i = 0;
  while (i < line.size() && (is_space(line[i]) || line[i] == '\r')) ++i;
  return i == line.size() || comment_chars.find(line[i]) != std::string_view::npos;
}

int split_tokens(std::string_view line, std::string_view* out, int max) {
  size_t len = line.size();
  while (len > 0 && (is_space(line[len - 1]) || line[len - 1] == '\r')) --len;
  size_t i = 0;
  while (i < len && is_space(line[i])) ++i;
  int n = 0;
  auto emit = [&](std::string_view t) {
    if (n < max) out[n] = t;
    ++n;
  };
  while (i < len) {
    const size_t start = i;
    while (i < len && !is_space(line[i]) && line[i] != ',') ++i;
    emit(line.substr(start, i - start));
    while (i < len && is_space(line[i])) ++i;
    if (i < len && line[i] == ',') {
      ++i;
      while (i < len && is_space(line[i])) ++i;
      if (i == len) emit({});  // a trailing comma leaves an empty last field
    }
  }
  return n;
}

RawEdges parse_edge_text(std::string_view text, const EdgeTextOptions& opt) {
  const int columns = opt.columns ? opt.columns : detect_columns(text, opt);
  RawEdges out;
  if (columns == 0) return out;  // no data line
  const std::vector<size_t> bounds = block_bounds(text);
  const int64_t nblocks = static_cast<int64_t>(bounds.size()) - 1;
  auto block = [&](int64_t b) { return text.substr(bounds[b], bounds[b + 1] - bounds[b]); };

  // Lines per block give each block its first line number and an upper
  // bound of its edge count, so blocks can write their edges in place.
  std::vector<int64_t> line_start(nblocks + 1, 0);
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1)
  for (int64_t b = 0; b < nblocks; ++b) line_start[b + 1] = count_lines(block(b));
  for (int64_t b = 0; b < nblocks; ++b) line_start[b + 1] += line_start[b];
  const int64_t max_edges = line_start[nblocks];
  const bool weighted = columns == 3 && opt.keep_weights;
  out.src.resize(max_edges);
  out.dst.resize(max_edges);
  if (weighted) out.weight.resize(max_edges);

  std::vector<int64_t> found(nblocks, 0);
  std::vector<Position> errors(nblocks);
  std::atomic<int64_t> first_bad_block{nblocks};
  Progress progress("parsing " + opt.path, static_cast<int64_t>(text.size()), "bytes");
  const BlockParser parser(opt, columns);
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1)
  for (int64_t b = 0; b < nblocks; ++b) {
    if (b > first_bad_block.load(std::memory_order_relaxed)) continue;  // an earlier error wins anyway
    const int64_t at = line_start[b];
    found[b] = parser.parse(block(b), out.src.data() + at, out.dst.data() + at,
                            weighted ? out.weight.data() + at : nullptr, errors[b]);
    if (errors[b].line >= 0) {
      int64_t cur = first_bad_block.load();
      while (b < cur && !first_bad_block.compare_exchange_weak(cur, b)) {
      }
    }
    progress.add(static_cast<int64_t>(bounds[b + 1] - bounds[b]));
  }
  const int64_t bad = first_bad_block.load();
  if (bad < nblocks)
    throw line_error(opt.path, opt.first_line + line_start[bad] + errors[bad].line, errors[bad].message);
  progress.finish();

  // Close the gaps left by comment and blank lines (moves only forward).
  int64_t total = 0;
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t at = line_start[b];
    if (at != total) {
      std::copy(out.src.begin() + at, out.src.begin() + at + found[b], out.src.begin() + total);
      std::copy(out.dst.begin() + at, out.dst.begin() + at + found[b], out.dst.begin() + total);
      if (weighted)
        std::copy(out.weight.begin() + at, out.weight.begin() + at + found[b], out.weight.begin() + total);
    }
    total += found[b];
  }
  out.src.resize(total);
  out.dst.resize(total);
  if (weighted) out.weight.resize(total);
  if (total < max_edges - max_edges / 8) {  // many comment lines: give the slack back
    out.src.shrink_to_fit();
    out.dst.shrink_to_fit();
    out.weight.shrink_to_fit();
  }
  return out;
}

}  // namespace ht::data
