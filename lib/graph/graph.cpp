#include "graph/graph.hpp"

namespace ht {

GraphView Graph::view() const {
  GraphView v;
  v.num_vertices = num_vertices;
  v.num_edges = num_edges();
  v.offsets = offsets;
  v.sources = sources;
  v.weights = weights;
  v.feature_dim = feature_dim;
  v.feature_dtype = feature_dtype;
  v.features = features;
  v.features16 = features16;
  v.num_classes = num_classes;
  v.labels = labels;
  v.split = split;
  v.orig_ids = orig_ids;
  v.flags = flags;
  return v;
}

Graph to_graph(const GraphView& v) {
  Graph g;
  g.num_vertices = v.num_vertices;
  g.offsets.assign(v.offsets.begin(), v.offsets.end());
  g.sources.assign(v.sources.begin(), v.sources.end());
  g.weights.assign(v.weights.begin(), v.weights.end());
  g.feature_dim = v.feature_dim;
  g.feature_dtype = v.feature_dtype;
  g.features.assign(v.features.begin(), v.features.end());
  g.features16.assign(v.features16.begin(), v.features16.end());
  g.num_classes = v.num_classes;
  g.labels.assign(v.labels.begin(), v.labels.end());
  g.split.assign(v.split.begin(), v.split.end());
  g.orig_ids.assign(v.orig_ids.begin(), v.orig_ids.end());
  g.flags = v.flags;
  return g;
}

}  // namespace ht
