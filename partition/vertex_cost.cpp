#include "partition/vertex_cost.hpp"

namespace ht {

std::vector<double> balance_weights(const GraphView& g, const PartitionParams& params) {
  std::vector<double> w(g.num_vertices, 1.0);
  if (params.vertex_weights == VertexWeights::none) return w;
#pragma omp parallel for schedule(static, 4096)
  for (int64_t v = 0; v < g.num_vertices; ++v) w[v] = computation_weight(g, v, params.chunk_vertex_weight);
  return w;
}

}  // namespace ht
