#pragma once
// Uncoarsening steps of the multilevel partitioner: after a k-way partition
// is projected onto a finer level, size-constrained label propagation moves
// boundary vertices to the block their edges weigh most into when that cuts
// less and the block stays within the weight limit; rebalancing moves the
// cheapest vertices out of blocks above the limit. Deterministic for a seed,
// whatever the thread count (ml_moves.hpp).
#include <cstdint>
#include <vector>

#include "core/progress.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

struct RefineOptions {
  int k = 2;
  weight_t max_block_weight = 0;
  int rounds = 4;  // at most; stops early when few vertices move
  int sub_rounds = 8;
  uint64_t seed = 1;
  uint64_t level = 0;
};

// Weight of each of the k blocks.
template <typename G>
std::vector<weight_t> block_weights(const G& g, const std::vector<int32_t>& part, int k);

// Improves the cut of `part`, never taking a block above the limit; keeps
// `weights` (block_weights) current. Returns the number of moves.
template <typename G>
int64_t refine_partition(const G& g, std::vector<int32_t>& part, std::vector<weight_t>& weights,
                         const RefineOptions& opt, Progress& progress);

// Moves vertices out of blocks above the limit, fewest cut edges gained per
// unit of weight first, into blocks with room (the most connected one, else
// the lightest). Does nothing when every block is within the limit; may not
// reach it when vertices are too heavy. Returns the number of moves.
template <typename G>
int64_t rebalance_partition(const G& g, std::vector<int32_t>& part, std::vector<weight_t>& weights,
                            const RefineOptions& opt);

// Cut of `part`: total weight of the adjacency entries whose ends lie in
// different blocks (each undirected edge counted from both ends).
template <typename G>
weight_t cut_weight(const G& g, const std::vector<int32_t>& part);

}  // namespace ht::ml
