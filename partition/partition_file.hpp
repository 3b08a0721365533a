#pragma once
// Partition file (.htp): the renumbering and the partition/chunk ranges, with
// the parameters and the identity of the graph they were made from.
// Layout: docs/PARTITION.md ("Partition file"); the container: docs/FORMATS.md.
#include <cstdint>
#include <optional>
#include <string>

#include "core/container.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition.hpp"

namespace ht {

inline constexpr char kPartitionMagic[9] = "HTPART\0\0";
inline constexpr uint32_t kPartitionVersion = 1;

// Meta slots of the partition header.
enum PartitionMetaSlot : int {
  kPartMetaParts = 0,
  kPartMetaChunks = 1,
  kPartMetaVertices = 2,
  kPartMetaEdges = 3,
  kPartMetaMethod = 4,
  kPartMetaSeed = 5,
  kPartMetaUfactor = 6,
  kPartMetaObjective = 7,
  kPartMetaAlgorithm = 8,
  kPartMetaVertexWeights = 9,
  kPartMetaChunkVertexWeight = 10,  // IEEE-754 double bits
  kPartMetaGraphBytes = 11,
  kPartMetaGraphChecksum = 12,
  kPartMetaChunking = 13,  // ChunkingMode that ran: 0 balanced, 1 locality (0 in files from before it)
};

void write_partition(const std::string& path, const Partition& p);
// Validates everything (docs/PARTITION.md) and derives old_to_new.
Partition read_partition(const std::string& path, ReadOptions opt = {});

// Throws unless `p` was made from exactly this graph file (same size and
// header checksum, hence the same contents).
void check_partition_matches(const Partition& p, const GraphFile& graph);

// What is wrong with a partition's arrays, if anything: the section it is in
// and a description. Checked before writing and after reading.
struct PartitionProblem {
  std::string section;
  std::string what;
};
std::optional<PartitionProblem> find_partition_problem(const Partition& p);

}  // namespace ht
