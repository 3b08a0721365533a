#pragma once
// Builds the deduplicated communication plan (paper §5.2 and §6; the field
// semantics are those of plan/plan.hpp) from a graph in NEW ids and its
// partition: chunk topologies with one self-loop per destination, the batch
// order (Algorithm 4, or the partitioner's), transition sets with in-place
// slots, remote rows of the merged buffer, gradient flush lists, capacities,
// volumes and the cost of Eq. 4.
#include <vector>

#include "partition/partition.hpp"
#include "partition/reorganize.hpp"
#include "plan/plan.hpp"
#include "plan/plan_stats.hpp"

namespace ht {

struct PlanBuildOptions {
  bool reorganize = true;  // false: keep the partitioner's order
  // Decides whether the reorganized order is kept: if Algorithm 4 (a greedy
  // heuristic) gives a higher Eq. 4 cost than the partitioner's order, the
  // partitioner's order is used and Plan::reorganized is false.
  CostProfile profile;
};

// The m * n partitioner chunks (index i * n + c): part, chunk, destination
// range, N = sorted unique sources ∪ destinations, and the CSC topology
// (offsets, src_vid ascending per destination, src_local). Every destination
// has exactly one self-loop: one is added where the graph has none, extra
// copies of v->v are dropped; other duplicate edges are kept. The
// communication fields are left empty.
std::vector<ChunkPlan> build_chunks(const GraphView& g_new, const Partition& p);

// Places chunks (index i * n + c, each with part, chunk, dst range, nbr and
// offsets of |V|+1 entries; topology optional) into steps by `order` and
// computes everything else: transition sets and slots, remote rows,
// src_merged, flush lists, capacities, both volumes, both costs (per byte of
// row width). Used by build_plan and, with hand-made neighbor sets, by tests.
Plan assemble_plan(int m, int n, std::vector<int64_t> part_offsets, int64_t num_vertices,
                   std::vector<ChunkPlan> chunks, const BatchOrder& order, const CostProfile& profile);

// Wall times of build_plan's phases, seconds.
struct PlanBuildTimes {
  double topology = 0;    // chunk topologies and neighbor sets
  double reorganize = 0;  // Algorithm 4 and the comparison with the partitioner's order
  double assemble = 0;    // transition sets, slots, merged buffer, flushes
};

// The whole pipeline; sets Plan::seconds to its wall time. Identities are
// left empty for the caller (the graph and partition files').
Plan build_plan(const GraphView& g_new, const Partition& p, const PlanBuildOptions& opt = {},
                PlanBuildTimes* times = nullptr);

// Throws ht::Error when `p` does not describe `g` (vertex count, offsets).
void check_partition_shape(const GraphView& g, const Partition& p);

}  // namespace ht
