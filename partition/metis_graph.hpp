#pragma once
// The graph METIS needs: undirected (symmetric), without self-loops or
// duplicate edges, in METIS's own index type idx_t.
#include <metis.h>

#include <cstdint>
#include <vector>

#include "graph/graph.hpp"

namespace ht {

struct MetisGraph {
  std::vector<idx_t> xadj;    // N + 1
  std::vector<idx_t> adjncy;  // xadj[N]: neighbors of v at xadj[v] .. xadj[v+1]-1
  int64_t num_vertices() const { return static_cast<int64_t>(xadj.size()) - 1; }
  int64_t adjacency_length() const { return xadj.empty() ? 0 : static_cast<int64_t>(xadj.back()); }
};

// Largest count METIS can address with this build's idx_t.
int64_t metis_index_limit();

// Throws a clear error naming the alternatives (--method random|range) when
// `what` (a vertex count or an adjacency length) exceeds idx_t's range.
void check_metis_range(int64_t count, const char* what);

// Union of in- and out-neighbors of every vertex (sorted), self-loops dropped,
// duplicates merged (each neighbor once; the graph's multiplicities and
// edge weights are not passed to METIS). Reports progress.
MetisGraph build_metis_graph(const GraphView& g);

}  // namespace ht
