#pragma once
// Partition assignments (old vertex id -> partition) that do not need METIS,
// and the repair that guarantees every partition can be cut into n chunks.
#include <cstdint>
#include <span>
#include <vector>

namespace ht {

// Contiguous ranges of old ids, balanced on `weights` (fast, keeps the input
// order's locality; as good as the input order is).
std::vector<int32_t> range_assignment(std::span<const double> weights, int parts, int64_t min_size);

// Vertices in a seeded random order, cut into ranges balanced on `weights`:
// a balanced random partition (the "no structure" baseline).
std::vector<int32_t> random_assignment(std::span<const double> weights, int parts, int64_t min_size, uint64_t seed);

// Moves vertices (highest old ids first) from partitions with more than
// `min_size` vertices into those with fewer, so that each partition can hold
// `min_size` non-empty chunks. Returns the number of vertices moved.
int64_t ensure_min_part_size(std::vector<int32_t>& part_of, int parts, int64_t min_size);

}  // namespace ht
