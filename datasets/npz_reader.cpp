#include "datasets/npz_reader.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/label_split.hpp"
#include "datasets/npy_edges.hpp"
#include "datasets/npz.hpp"
#include "datasets/npz_sparse.hpp"
#include "datasets/stratified_split.hpp"
#include "datasets/vertex_arrays.hpp"
#include "graph/types.hpp"

namespace ht::data {
namespace {

PositionText index_of(const NpyArray& a) {
  return [&a](int64_t i) { return fmt::format("index {} (byte {})", i, a.offset_of(i)); };
}

// Split `split_index` of one heterophilous mask array ([splits, N] bool, or
// [N] for a single split): its vertices get `code`; a vertex in two masks is an error.
void apply_mask(const NpyArray& m, int split_index, Split code, std::vector<uint8_t>& split) {
  const int64_t n = static_cast<int64_t>(split.size());
  const bool one = m.ndim() == 1;
  const int64_t splits = one ? 1 : m.rows(), cols = one ? m.rows() : m.cols();
  if (cols != n)
    throw file_error(m.path(), fmt::format("split masks have {} columns for {} nodes", cols, n));
  if (!m.is_integral())
    throw file_error(m.path(), fmt::format("split masks must be boolean, got {}", npy_type_name(m.type())));
  if (split_index >= splits)
    throw file_error(m.path(), fmt::format("--split-index {} is outside 0..{}", split_index, splits - 1));
  const int64_t base = one ? 0 : split_index * cols;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t x = m.as_int64(base + v);
    if (x == 0) continue;
    if (x != 1)  // as the .npy masks: 0/1 only
      throw offset_error(m.path(), m.offset_of(base + v),
                         fmt::format("split {}: mask value {} of node {} is not 0/1 (boolean)", split_index, x, v));
    if (split[v] != static_cast<uint8_t>(Split::none))
      throw offset_error(m.path(), m.offset_of(base + v),
                         fmt::format("split {}: node {} is in two masks", split_index, v));
    split[v] = static_cast<uint8_t>(code);
  }
}

RawGraph read_heterophilous(const NpzArchive& z, int split_index) {
  for (const char* key : {"node_features", "node_labels", "edges"})
    if (!z.has(key)) z.array(key);  // throws, listing the keys there are
  RawGraph g;
  {
    const NpyArray x = z.array("node_features");
    if (x.ndim() != 2) throw file_error(x.path(), fmt::format("node_features must have shape (N, F), got {}", x.shape_text()));
    load_features(x, g.data);
  }
  load_labels(z.array("node_labels"), 0, g.data);
  g.num_vertices = g.data.rows;
  g.edges = read_npy_edges(z.array("edges"), g.num_vertices);
  g.data.split.assign(static_cast<size_t>(g.num_vertices), static_cast<uint8_t>(Split::none));
  const std::pair<const char*, Split> masks[] = {
      {"train_masks", Split::train}, {"val_masks", Split::val}, {"test_masks", Split::test}};
  for (const auto& [key, code] : masks)
    if (z.has(key)) apply_mask(z.array(key), split_index, code, g.data.split);
  return g;
}

// Labels from y / labels: (N,) or (N, 1), integers or floats (NaN = unlabeled).
void read_label_array(const NpyArray& y, VertexData& data) {
  if (y.ndim() == 2 && y.cols() != 1)
    throw file_error(y.path(), fmt::format("labels must have shape (N,) or (N, 1), got {} (multi-label targets are "
                                           "not supported)",
                                           y.shape_text()));
  if (data.rows >= 0 && y.rows() != data.rows)
    throw file_error(y.path(), fmt::format("labels have {} rows but {} has {}", y.rows(), data.rows_source, data.rows));
  std::vector<double> values(static_cast<size_t>(y.rows()));
  for (int64_t i = 0; i < y.rows(); ++i) values[i] = y.as_double(i);
  set_labels(values, y.path(), index_of(y), data);
  if (data.rows < 0) {
    data.rows = y.rows();
    data.rows_source = y.path();
  }
}

// One PyG mask: (N,) bool, or several splits as (N, S) (PyG's layout) or (S, N).
void read_mask(const NpyArray& m, int split_index, Split code, std::vector<uint8_t>& split) {
  const int64_t n = static_cast<int64_t>(split.size());
  if (!m.is_integral())
    throw file_error(m.path(), fmt::format("a mask must be boolean, got {}", npy_type_name(m.type())));
  int64_t splits = 1, stride_v = 1, stride_s = 0;
  if (m.ndim() == 2 && m.rows() == n && !(m.cols() == 1)) {
    splits = m.cols(), stride_v = m.cols(), stride_s = 1;  // (N, S)
  } else if (m.ndim() == 2 && m.cols() == n && m.rows() != n) {
    splits = m.rows(), stride_v = 1, stride_s = n;  // (S, N)
  } else if (m.count() != n) {
    throw file_error(m.path(), fmt::format("the mask has shape {} for {} vertices (expected (N,), (N, S) or (S, N))",
                                           m.shape_text(), n));
  }
  if (split_index >= splits)
    throw file_error(m.path(), fmt::format("--split-index {} is outside 0..{}", split_index, splits - 1));
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) mask[v] = m.as_int64(v * stride_v + split_index * stride_s) != 0;
  add_split_mask(mask, code, m.path(), [&](int64_t v) { return fmt::format("vertex {}", v); }, split);
}

void read_id_array(const NpyArray& a, Split code, std::vector<uint8_t>& split) {
  if (!a.is_integral() || (a.ndim() == 2 && a.cols() != 1))
    throw file_error(a.path(), fmt::format("an id array must be integers of shape (K,), got {} {}",
                                           npy_type_name(a.type()), a.shape_text()));
  std::vector<int64_t> ids(static_cast<size_t>(a.rows()));
  for (int64_t i = 0; i < a.rows(); ++i) ids[i] = a.as_int64(i);
  add_split_ids(ids, code, a.path(), index_of(a), split);
}

// PyG's masks or id arrays, whichever the archive has; false when neither.
bool read_pyg_split(const NpzArchive& z, int split_index, std::vector<uint8_t>& split) {
  const std::pair<Split, std::vector<const char*>> parts[] = {
      {Split::train, {"train_mask", "train_idx"}}, {Split::val, {"val_mask", "val_idx", "valid_mask", "valid_idx"}},
      {Split::test, {"test_mask", "test_idx"}}};
  bool any = false;
  for (const auto& [code, keys] : parts)
    for (const char* key : keys) {
      if (!z.has(key)) continue;
      const NpyArray a = z.array(key);
      std::string_view k = key;
      if (k.ends_with("_mask"))
        read_mask(a, split_index, code, split);
      else
        read_id_array(a, code, split);
      any = true;
      break;
    }
  return any;
}

RawGraph read_pyg(const NpzArchive& z, int split_index) {
  RawGraph g;
  if (z.has("x")) {
    const NpyArray x = z.array("x");
    load_features(x, g.data);
  }
  if (z.has("y")) read_label_array(z.array("y"), g.data);
  const NpyArray e = z.array("edge_index");
  const EdgeArrayShape shape = e.ndim() == 2 && e.rows() == 2 ? EdgeArrayShape::index : EdgeArrayShape::pairs;
  g.num_vertices = g.data.rows >= 0 ? g.data.rows : npy_edges_vertex_count(e, shape);
  g.edges = read_npy_edges(e, g.num_vertices, shape);
  g.data.split.assign(static_cast<size_t>(g.num_vertices), static_cast<uint8_t>(Split::none));
  if (!read_pyg_split(z, split_index, g.data.split)) g.data.split.clear();
  return g;
}

// cora_ml-style: the adjacency and attributes as CSR parts under a prefix.
RawGraph read_attributed(const NpzArchive& z, const std::string& adj, const std::string& attr) {
  RawGraph g;
  g.edges = sparse_to_edges(read_sparse(z, adj, "csr"), g.num_vertices);
  if (has_sparse(z, attr)) {
    sparse_to_features(read_sparse(z, attr, "csr"), g.data);
  } else if (z.has("attr_matrix")) {
    load_features(z.array("attr_matrix"), g.data);
  }
  if (z.has("labels")) read_label_array(z.array("labels"), g.data);
  if (g.data.rows >= 0 && g.data.rows != g.num_vertices)
    throw file_error(z.path(), fmt::format("the adjacency has {} vertices but {} has {} rows", g.num_vertices,
                                           g.data.rows_source, g.data.rows));
  return g;
}

// The first prefix under which the archive holds CSR parts, or "".
std::string sparse_prefix(const NpzArchive& z, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (has_sparse(z, p)) return p;
  return "";
}

}  // namespace

bool npz_is_directed(const std::string& path) {
  return std::filesystem::path(path).stem().string().find("directed") != std::string::npos;
}

RawGraph read_npz(const std::string& path, const NpzOptions& o) {
  if (o.split_index < 0) throw option_error("--split-index", "must be >= 0");
  const NpzArchive z(path);
  RawGraph g;
  std::string layout;
  const std::string adj = sparse_prefix(z, {"adj_matrix.", "adj_"});
  if (z.has("edge_index")) {
    layout = "PyG arrays";
    g = read_pyg(z, o.split_index);
  } else if (!adj.empty()) {
    layout = fmt::format("attributed graph ({}*)", adj);
    g = read_attributed(z, adj, adj == "adj_" ? "attr_" : "attr_matrix.");
  } else if (z.has("node_features") || z.has("node_labels") || z.has("edges")) {
    layout = "heterophilous benchmark";
    g = read_heterophilous(z, o.split_index);
  } else if (has_sparse(z, "") && z.has("shape")) {
    layout = "SciPy sparse adjacency";
    g.edges = sparse_to_edges(read_sparse(z, ""), g.num_vertices);
  } else {
    std::vector<std::string> keys = z.keys();
    std::sort(keys.begin(), keys.end());
    throw file_error(path, fmt::format("no known .npz layout in keys {}: expected PyG's edge_index (x, y, masks), "
                                       "SciPy save_npz (format, shape, indptr, indices, data), adj_matrix.* / "
                                       "attr_matrix.* / labels, or node_features, node_labels, edges",
                                       fmt::join(keys, ", ")));
  }
  if (g.data.split.empty() && !g.data.labels.empty()) {
    check_split_fractions(o.train_fraction, o.val_fraction);
    g.data.split = stratified_split(g.data.labels, g.data.num_classes, o.train_fraction, o.val_fraction, o.seed);
    log::info("{}: no split in the archive: stratified random split {}/{} (seed {})", path, o.train_fraction,
              o.val_fraction, o.seed);
  }
  log::info("{} ({}): N = {}, {} edge rows{}, F = {}, {} classes, {}", path, layout, g.num_vertices, g.edges.size(),
            g.edges.weight.empty() ? "" : " (weighted)", g.data.feature_dim, g.data.num_classes,
            g.data.split.empty() ? "no split" : split_counts_text(g.data.split));
  return g;
}

}  // namespace ht::data
