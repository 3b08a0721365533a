#pragma once
// ht-partition's work, from the graph file to the partition file, the stats
// table (stdout) and the optional stats JSON.
#include <string>

#include "partition/partition.hpp"

namespace ht {

struct PartitionToolOptions {
  std::string graph_path;
  std::string output_path;
  std::string stats_json_path;  // empty: none
  bool verify = true;           // verify the graph's section checksums
  PartitionParams params;
};

void run_partition_tool(const PartitionToolOptions& opt);

}  // namespace ht
