#include "datasets/npz_reader.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/npy_edges.hpp"
#include "datasets/npz.hpp"
#include "datasets/vertex_arrays.hpp"
#include "graph/types.hpp"

namespace ht::data {
namespace {

// Split `split_index` of one mask array ([splits, N] bool, or [N] for a
// single split): its vertices get `code`; a vertex in two masks is an error.
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

}  // namespace

bool npz_is_directed(const std::string& path) {
  return std::filesystem::path(path).stem().string().find("directed") != std::string::npos;
}

RawGraph read_npz(const std::string& path, int split_index) {
  if (split_index < 0) throw option_error("--split-index", "must be >= 0");
  const NpzArchive z(path);
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
  int64_t counts[4] = {0, 0, 0, 0};
  for (uint8_t s : g.data.split) ++counts[s];
  log::info("{}: N = {}, {} edge rows, F = {}, {} classes, split {}: {} / {} / {}", path, g.num_vertices,
            g.edges.size(), g.data.feature_dim, g.data.num_classes, split_index, counts[1], counts[2], counts[3]);
  return g;
}

}  // namespace ht::data
