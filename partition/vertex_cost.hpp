#pragma once
// The computation weight of a vertex: the work of training grows with its
// in-edges (aggregation; GAT's attention) plus a per-vertex term (the dense
// update of its row). Used to balance chunks, to measure partition balance,
// and (--vertex-weights degree) as METIS's vertex weight.
#include <cstdint>
#include <vector>

#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

// in_degree(v) + vertex_weight (v is an OLD id, i.e. the graph file's).
inline double computation_weight(const GraphView& g, int64_t v, double vertex_weight) {
  return static_cast<double>(g.in_degree(v)) + vertex_weight;
}

// Weights that --method random/range balance, per old id: 1 for
// --vertex-weights none, the computation weight otherwise (train balances
// the computation weight too: these methods have a single constraint).
std::vector<double> balance_weights(const GraphView& g, const PartitionParams& params);

}  // namespace ht
