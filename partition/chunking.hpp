#pragma once
// Range-based chunking (§4.1): each partition's new-id range is cut into n
// contiguous destination ranges balanced on computation weight; a chunk holds
// all in-edges of its destinations.
#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

// Fills p.chunk_offsets from p.part_offsets and p.new_to_old. Chunk weight =
// Σ over its destinations of in_degree + params.chunk_vertex_weight
// (vertex_cost.hpp). Every chunk gets at least one vertex (each partition
// must hold at least n vertices).
void chunk_partitions(const GraphView& g, Partition& p);

}  // namespace ht
