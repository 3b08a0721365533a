#include "graph/graph_shape.hpp"

#include "graph/graph_file.hpp"

namespace ht {

GraphShape read_graph_shape(const std::string& path) {
  const ContainerReader r(path, kGraphMagic, kGraphVersion, {false});
  GraphShape s;
  s.vertices = static_cast<int64_t>(r.meta(kMetaN));
  s.edges = static_cast<int64_t>(r.meta(kMetaE));
  s.id_bytes = static_cast<int>(r.meta(kMetaIdBytes));
  s.feature_dim = static_cast<int32_t>(r.meta(kMetaFeatureDim));
  s.num_classes = static_cast<int32_t>(r.meta(kMetaNumClasses));
  if (r.has("features")) {
    const DType t = r.section("features").dtype;
    s.feature_dtype = t == DType::bf16 ? StoreDtype::bf16 : t == DType::f16 ? StoreDtype::f16 : StoreDtype::f32;
  }
  s.weights = r.has("edge_weights");
  s.labels = r.has("labels");
  s.split = r.has("split");
  s.orig_ids = r.has("orig_ids");
  s.features_normalized = (r.flags() & kFlagFeaturesNormalized) != 0;
  s.file_bytes = static_cast<int64_t>(r.identity().bytes);
  return s;
}

GraphShape shape_of(const GraphView& g, int64_t file_bytes, int id_bytes) {
  GraphShape s;
  s.vertices = g.num_vertices;
  s.edges = g.num_edges;
  s.feature_dim = g.feature_dim;
  s.num_classes = g.num_classes;
  s.feature_dtype = g.feature_dtype;
  s.id_bytes = id_bytes;
  s.weights = !g.weights.empty();
  s.labels = !g.labels.empty();
  s.split = !g.split.empty();
  s.orig_ids = !g.orig_ids.empty();
  s.features_normalized = g.flags.features_normalized;
  s.file_bytes = file_bytes;
  return s;
}

}  // namespace ht
