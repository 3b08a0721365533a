#pragma once
// The initial partition of the multilevel partitioner: METIS on the coarsest
// level, with the level's vertex and edge weights.
#include <cstdint>
#include <vector>

#include "partition/metis_partition.hpp"
#include "partition/ml_graph.hpp"
#include "partition/partition.hpp"

namespace ht::ml {

// METIS k-way (or recursive, per params.algorithm) into params.parts blocks
// with params' ufactor, seed and objective, one constraint. Weights are
// scaled down uniformly when their sum would not fit in half of idx_t's
// range (METIS sums them in idx_t). A level that is not symmetric (possible
// only when a graph file claims a symmetry it lacks) is symmetrized first,
// with a warning: METIS needs an undirected graph.
MetisResult partition_coarsest(const CoarseLevel& level, const PartitionParams& params);

}  // namespace ht::ml
