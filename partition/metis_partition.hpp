#pragma once
// METIS k-way (or recursive bisection) into m partitions.
#include <cstdint>
#include <span>
#include <vector>

#include "graph/graph.hpp"
#include "partition/metis_graph.hpp"
#include "partition/partition.hpp"

namespace ht {

struct MetisResult {
  std::vector<int32_t> part_of;  // old id -> partition
  int64_t objective_value = 0;   // METIS's edge cut (or volume) on the symmetrized graph
  double seconds = 0;            // the METIS call alone (wall)
  double cpu_seconds = 0;        // CPU time of the call (METIS runs on the calling thread)
  int64_t peak_bytes = 0;        // resident memory high-water mark during the call, above the RSS before it
  int64_t process_peak_before = 0;  // the process's high-water mark before the reset
  bool peak_is_exact = true;     // false: the kernel did not let us reset the high-water mark, so
                                 // peak_bytes is the process's peak so far minus the RSS before
};

// METIS vertex weights per --vertex-weights: none -> no weights (ncon 1,
// unit weights); degree -> in_degree + chunk_vertex_weight (rounded, >= 1);
// train -> two constraints per vertex, (that weight, 1 if a training vertex
// else 0), so that both the computation and the number of training vertices
// (loss computation) are balanced. Sets `ncon`. Weights are scaled down when
// their sum would not fit in idx_t.
std::vector<idx_t> metis_vertex_weights(const GraphView& g, const PartitionParams& params, idx_t& ncon);

// `adjwgt`: edge weights, one per adjacency entry, or empty (unit weights).
MetisResult run_metis(MetisGraph& mg, std::vector<idx_t>& vwgt, idx_t ncon, const PartitionParams& params,
                      std::span<idx_t> adjwgt = {});

}  // namespace ht
