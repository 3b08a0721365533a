#pragma once
// The partitioning pipeline (SPEC §4): assignment (METIS, multilevel, random
// or range; auto picks one), renumbering, chunking.
#include <cstdint>
#include <string>

#include "core/container.hpp"
#include "core/timer.hpp"
#include "graph/graph.hpp"
#include "partition/chunking.hpp"
#include "partition/multilevel_partition.hpp"
#include "partition/partition.hpp"

namespace ht {

// What a run did besides its result: per-phase timings and METIS figures.
struct PartitionRunInfo {
  PhaseTimes phases;
  std::string method_reason;          // why --method auto picked the method (empty otherwise)
  bool multilevel_ran = false;
  MultilevelInfo multilevel;
  bool metis_ran = false;
  double metis_seconds = 0;
  double metis_cpu_seconds = 0;
  int64_t metis_peak_bytes = 0;       // memory METIS itself used (see MetisResult)
  bool metis_peak_exact = true;
  int64_t metis_objective = 0;        // METIS's own cut/volume on the symmetrized graph
  int64_t metis_adjacency = 0;        // adjacency entries passed to METIS
  int64_t process_peak_before_metis = 0;  // METIS resets the high-water mark; keep the earlier one
  int64_t vertices_moved = 0;         // moved so that every partition holds >= n vertices
  ChunkingInfo chunking;              // how the partitions were cut into chunks
  // The multilevel partitioner's input-level clusters: kept by the
  // partitions' run when locality chunks may reuse them (m >= 2, n >= 2),
  // given to each chunks' run by make_chunks (chunking.hpp).
  MultilevelClusters clusters;
};

// The process's peak resident memory over the whole run.
int64_t process_peak_bytes(const PartitionRunInfo& info);

// Throws option_error naming the option for impossible or inconsistent
// requests (m < 1, n < 1, m·n > N, ...).
void validate_partition_params(const PartitionParams& params, const GraphView& g);

// The blocks of a METIS or multilevel partition of g into q.parts >= 2 (q.method
// says which), for old ids; records the partitioner's phases and figures in
// `info` (the assignment of m partitions, and the chunks' partitions).
std::vector<int32_t> partition_blocks(const GraphView& g, const PartitionParams& q, PartitionRunInfo& info);

// params.method == automatic is resolved first (method_choice.hpp, logged
// with its reason); the partition records the method that ran (with m = 1
// and locality chunking, the chunks' partitioner). params.chunking ==
// automatic is resolved too (chunking.hpp): the partition records
// balanced or locality.
Partition make_partition(const GraphView& g, const FileIdentity& graph_identity, const PartitionParams& params,
                         PartitionRunInfo& info);

}  // namespace ht
