#include "datasets/musae_reader.hpp"

#include <algorithm>
#include <charconv>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "datasets/csv.hpp"
#include "datasets/edge_list_reader.hpp"
#include "datasets/id_lists_json.hpp"
#include "datasets/stratified_split.hpp"
#include "datasets/text_input.hpp"
#include "graph/types.hpp"

namespace ht::data {
namespace {

std::string file_in(const MusaeOptions& o, const char* suffix) { return o.dir + "/" + o.name + suffix; }

// Reads labels (class names sorted -> ids) from the target file; sets N.
void read_targets(const std::string& path, const MusaeOptions& o, VertexData& data) {
  const TextInput file(path);  // gzip inflated
  CsvReader csv(file.text(), path);
  std::vector<std::string> row;
  if (!csv.next(row)) throw file_error(path, "empty file (expected a header line)");
  const size_t id_col = static_cast<size_t>(csv_column(row, o.id_column, path));
  const size_t label_col = static_cast<size_t>(csv_column(row, o.label_column, path));
  std::vector<std::pair<int64_t, std::string>> targets;
  std::vector<int64_t> lines;
  while (csv.next(row)) {
    if (row.size() <= std::max(id_col, label_col))
      throw line_error(path, csv.record_line(), fmt::format("{} fields, the header has more", row.size()));
    const std::string& id_text = row[id_col];
    int64_t id = -1;
    auto [p, ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (ec != std::errc() || p != id_text.data() + id_text.size() || id < 0 || id >= kMaxVertices32)
      throw line_error(path, csv.record_line(), fmt::format("'{}' in column '{}' is not a vertex id", id_text, o.id_column));
    targets.emplace_back(id, row[label_col]);
    lines.push_back(csv.record_line());
  }
  if (targets.empty()) throw file_error(path, "no rows after the header");
  std::map<std::string, int32_t> classes;
  int64_t n = 0;
  for (const auto& [id, name] : targets) {
    classes.emplace(name, 0);
    n = std::max(n, id + 1);
  }
  int32_t next = 0;
  for (auto& [name, id] : classes) id = next++;
  data.rows = n;
  data.rows_source = path;
  data.num_classes = static_cast<int32_t>(classes.size());
  data.labels.assign(n, -1);
  for (size_t i = 0; i < targets.size(); ++i) {
    const auto& [id, name] = targets[i];
    const int32_t c = classes.at(name);
    if (data.labels[id] >= 0 && data.labels[id] != c)
      throw line_error(path, lines[i], fmt::format("vertex {} appears again with a different label '{}'", id, name));
    data.labels[id] = c;
  }
  const int64_t missing = std::count(data.labels.begin(), data.labels.end(), -1);
  if (missing > 0) log::warn("{}: {} of {} vertices have no target row (left unlabeled)", path, missing, n);
  std::string names;
  for (const auto& [name, id] : classes) names += fmt::format("{}{}={}", names.empty() ? "" : ", ", id, name);
  log::info("{}: {} vertices, {} classes ({})", path, n, classes.size(), names);
}

void read_features(const std::string& path, int32_t width, VertexData& data) {
  const IdLists lists = read_id_lists_json(path);
  const int64_t f = width > 0 ? width : lists.max_value + 1;
  if (lists.max_value >= f)
    throw file_error(path, fmt::format("feature id {} does not fit --feature-dim {}", lists.max_value, f));
  if (f <= 0) throw file_error(path, "no feature ids at all");
  data.feature_dim = static_cast<int32_t>(f);
  data.features.assign(static_cast<size_t>(data.rows * f), 0.0f);
  for (size_t i = 0; i < lists.keys.size(); ++i) {
    const int64_t v = lists.keys[i];
    if (v >= data.rows)
      throw file_error(path, fmt::format("vertex {} is out of range (N = {} from {})", v, data.rows, data.rows_source));
    for (int64_t k = lists.offsets[i]; k < lists.offsets[i + 1]; ++k) data.features[v * f + lists.values[k]] = 1.0f;
  }
  log::info("{}: {} feature columns, {} nonzeros", path, f, lists.values.size());
}

}  // namespace

RawGraph read_musae(const MusaeOptions& o) {
  RawGraph g;
  read_targets(file_in(o, "_target.csv"), o, g.data);
  read_features(file_in(o, "_features.json"), o.feature_dim, g.data);
  g.num_vertices = g.data.rows;
  EdgeListOptions e;
  e.id_limit = static_cast<uint64_t>(g.data.rows);
  e.limit_note = fmt::format("N = {} from {}", g.data.rows, g.data.rows_source);
  g.edges = read_edge_list(file_in(o, "_edges.csv"), e);
  g.data.split = stratified_split(g.data.labels, g.data.num_classes, o.train_fraction, o.val_fraction, o.seed);
  return g;
}

}  // namespace ht::data
