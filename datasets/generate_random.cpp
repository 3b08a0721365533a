// Uniform random directed multigraph G(n, m), like the torch.randint edges of
// SPEC §9's PyG baseline: duplicates and self-loops are kept as drawn.
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "datasets/generate_detail.hpp"

namespace ht::gen {

GeneratedGraph generate(const RandomParams& p) {
  HT_CHECK(p.num_vertices >= 0 && p.num_vertices <= kMaxVertices32,
           "random graph: number of vertices must be in [0, {}], got {}", kMaxVertices32, p.num_vertices);
  HT_CHECK(p.num_edges >= 0, "random graph: number of edges must be >= 0, got {}", p.num_edges);
  HT_CHECK(p.num_edges == 0 || p.num_vertices > 0, "random graph: {} edges need at least one vertex",
           p.num_edges);
  detail::validate_vertex_data(p.data);
  Timer timer;
  const uint64_t n = static_cast<uint64_t>(p.num_vertices);
  const int64_t m = p.num_edges;
  // Block b holds edges [b * kEdgeBlock, ...): source then destination of
  // each edge drawn in order from the block's own stream.
  auto gen_block = [&](int64_t b, auto&& emit) {
    rng::Stream s = detail::block_stream(p.seed, b);
    const int64_t count = std::min(detail::kEdgeBlock, m - b * detail::kEdgeBlock);
    for (int64_t i = 0; i < count; ++i) {
      const auto src = static_cast<vid_t>(s.below(n));
      const auto dst = static_cast<vid_t>(s.below(n));
      emit(src, dst);
    }
  };
  Graph g = detail::csc_from_edge_blocks(p.num_vertices, detail::ceil_div(m, detail::kEdgeBlock), gen_block, m,
                                         "random graph");
  const detail::TopologyScan scan = detail::sort_and_scan(g);
  g.flags.has_self_loops = scan.has_self_loops;
  g.flags.no_duplicates = !scan.has_duplicates;
  g.flags.symmetric = m == 0;  // not checked otherwise: a random digraph is practically never symmetric
  detail::attach_random_labels(g, p.data, p.seed);
  log::debug("random graph: {} vertices, {} edges in {:.2f} s", p.num_vertices, m, timer.seconds());
  return {std::move(g), detail::normal_feature_rows(p.seed, p.data.feature_dim)};
}

Graph random_graph(const RandomParams& p) { return with_features(generate(p)); }

Graph with_features(GeneratedGraph&& g) {
  Graph out = std::move(g.graph);
  if (g.features.empty()) return out;
  out.feature_dim = g.features.dim;
  out.feature_dtype = StoreDtype::f32;
  out.features = materialize_features(g.features, out.num_vertices);
  return out;
}

}  // namespace ht::gen
