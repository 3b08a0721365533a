#pragma once
// Contraction: the clusters of a level become the vertices of the next,
// coarser level; a coarse vertex weighs what its members weigh together, and
// the edge between two coarse vertices weighs what the edges between their
// members weigh (edges inside a cluster disappear).
#include <vector>

#include "core/progress.hpp"
#include "graph/types.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

// `label` (a cluster label per vertex, any vertex ids) becomes the coarse
// vertex of each vertex. Coarse vertices are numbered in the order of their
// labels, so the input order's locality carries over to the coarse ids.
// Parallel; the result is the same for every thread count.
template <typename G>
CoarseLevel contract(const G& g, std::vector<vid_t>& label, Progress& progress);

}  // namespace ht::ml
