#pragma once
// Subgraph reorganization (paper §5.3, Algorithm 4): choose which chunk of
// each partition runs in which batch so that chunks run together share many
// neighbors (inter-GPU dedup, phase 1) and consecutive batches share many
// transition vertices (intra-GPU reuse, phase 2).
#include <cstdint>
#include <span>
#include <vector>

#include "graph/types.hpp"

namespace ht {

// Which partitioner chunk (index within its partition) GPU i runs in batch j.
struct BatchOrder {
  int m = 1, n = 1;
  std::vector<int32_t> chunk;  // [j * m + i]

  int32_t at(int batch, int gpu) const { return chunk[static_cast<size_t>(batch) * m + gpu]; }
  // Batch j runs chunk j of every partition (the partitioner's order).
  static BatchOrder identity(int m, int n);
  // Every partition's chunks 0..n-1 appear exactly once.
  bool valid() const;
};

// Neighbor sets N of the m * n partitioner chunks, index i * n + c (the
// Partition's chunk index); each ascending, ids < num_vertices.
using ChunkNeighbors = std::vector<std::span<const vid_t>>;

// Algorithm 4. Deterministic: ties go to the lowest chunk / batch index.
// `unions`, when given, receives 𝕅∪_j of every batch j of the returned order
// (= batch_unions(chunk_nbr, order), which Algorithm 4 builds anyway).
BatchOrder reorganize(const ChunkNeighbors& chunk_nbr, int m, int n, int64_t num_vertices,
                      std::vector<std::vector<vid_t>>* unions = nullptr);

}  // namespace ht
