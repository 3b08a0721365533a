#pragma once
// Coarsening step of the multilevel partitioner: size-constrained label
// propagation. Every vertex starts as its own cluster; in each round a vertex
// joins the neighboring cluster its edges weigh most into, if that is more
// than into its own and the cluster stays within the weight cap (so that the
// coarse graph can still be split into balanced blocks). Vertices without
// neighbors are grouped with their id-neighbors up to the cap. Deterministic
// for a seed, whatever the thread count (ml_moves.hpp).
#include <cstdint>
#include <vector>

#include "core/progress.hpp"
#include "graph/types.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

struct ClusterOptions {
  weight_t max_cluster_weight = 0;
  int rounds = 5;      // at most; stops early when few vertices move
  int sub_rounds = 8;
  uint64_t seed = 1;
  uint64_t level = 0;  // keys the hashes, so that levels differ
};

// Cluster of each vertex, as a vertex id of the level (the label a cluster
// got from the vertex it started as).
template <typename G>
std::vector<vid_t> cluster_vertices(const G& g, const ClusterOptions& opt, Progress& progress);

}  // namespace ht::ml
