#include "datasets/assemble.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "datasets/relabel.hpp"
#include "datasets/vertex_arrays.hpp"
#include "graph/build.hpp"

namespace ht::data {

Graph assemble_graph(RawGraph&& raw, bool keep_ids, const std::string& input) {
  IdPolicy policy;
  policy.input = input;
  policy.keep_ids = keep_ids;
  policy.known_vertices = raw.num_vertices >= 0 ? raw.num_vertices : raw.data.rows;
  if (raw.num_vertices >= 0 && raw.data.rows >= 0 && raw.num_vertices != raw.data.rows)
    throw file_error(raw.data.rows_source, fmt::format("has {} rows but {} gives N = {}", raw.data.rows, input,
                                                       raw.num_vertices));
  Timer t;
  std::vector<int64_t> orig_ids;
  EdgeList el = to_dense_ids(std::move(raw.edges), policy, orig_ids);
  log::debug("phase ids: {:.3f} s", t.seconds());
  t.reset();
  log::info("building CSC: {} vertices, {} edges", el.num_vertices, el.size());
  Graph g = csc_from_edges(std::move(el));
  log::debug("phase csc: {:.3f} s", t.seconds());
  g.orig_ids = std::move(orig_ids);
  VertexData& d = raw.data;
  g.feature_dim = d.feature_dim;
  g.features = std::move(d.features);
  g.num_classes = d.num_classes;
  g.labels = std::move(d.labels);
  g.split = std::move(d.split);
  return g;
}

Graph apply_transforms(Graph&& g, const TransformOptions& t) {
  Timer timer;
  const int64_t before = g.num_edges();
  if (t.symmetrize) g = symmetrize(std::move(g));
  if (t.drop_duplicates) g = drop_duplicate_edges(std::move(g));
  if (t.self_loops == SelfLoops::drop) g = drop_self_loops(std::move(g));
  if (t.self_loops == SelfLoops::add) g = add_self_loops(std::move(g));
  if (t.normalize_features) {
    normalize_feature_rows(g.features, g.feature_dim);
    g.flags.features_normalized = g.feature_dim > 0;
  }
  g.flags = detect_flags(g.view());
  if (g.num_edges() != before) log::info("transformations: {} -> {} edges", before, g.num_edges());
  log::debug("phase transform: {:.3f} s", timer.seconds());
  return std::move(g);
}

}  // namespace ht::data
