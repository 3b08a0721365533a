#pragma once
// ht-partition's work, from the graph file to the partition file, the stats
// table (stdout) and the optional stats JSON.
#include <functional>
#include <string>

#include "partition/partition.hpp"

namespace ht {

struct PartitionRunInfo;

struct PartitionToolOptions {
  std::string graph_path;
  std::string output_path;
  std::string stats_json_path;  // empty: none
  bool verify = true;           // verify the graph's section checksums
  PartitionParams params;
  // --chunks auto (ht-partition sets it; the choice needs the GPU memory
  // model, a layer above this one): called with the partition made with
  // params.chunks = 1, returns it cut into the chosen count and records that
  // chunking in the run info. Empty: params.chunks is the count.
  std::function<Partition(const GraphView&, Partition, PartitionRunInfo&)> choose_chunks;
};

void run_partition_tool(const PartitionToolOptions& opt);

}  // namespace ht
