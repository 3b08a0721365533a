#include "partition/chunking.hpp"

#include "core/error.hpp"
#include "partition/balanced_split.hpp"
#include "partition/vertex_cost.hpp"

namespace ht {

void chunk_partitions(const GraphView& g, Partition& p) {
  const int m = p.m(), n = p.n();
  p.chunk_offsets.assign(static_cast<size_t>(m) * n + 1, 0);
  std::vector<double> w;
  for (int i = 0; i < m; ++i) {
    const int64_t b = p.part_offsets[i], e = p.part_offsets[i + 1];
    HT_CHECK(e - b >= n, "partition {} has {} vertices, fewer than the {} chunks asked for", i, e - b, n);
    w.resize(e - b);
    for (int64_t v = b; v < e; ++v) w[v - b] = computation_weight(g, p.new_to_old[v], p.params.chunk_vertex_weight);
    const std::vector<int64_t> cut = balanced_split(w, n, 1);
    for (int j = 0; j < n; ++j) p.chunk_offsets[static_cast<size_t>(i) * n + j] = b + cut[j];
  }
  p.chunk_offsets.back() = p.num_vertices;
}

}  // namespace ht
