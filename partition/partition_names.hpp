#pragma once
// Names of the partition parameters' enum values, as the CLI accepts them and
// as reports print them.
#include <map>
#include <string>

#include "core/names.hpp"
#include "partition/partition.hpp"

namespace ht {

const std::map<std::string, PartitionMethod>& partition_method_names();
const std::map<std::string, MetisObjective>& metis_objective_names();
const std::map<std::string, MetisAlgorithm>& metis_algorithm_names();
const std::map<std::string, VertexWeights>& vertex_weights_names();
const std::map<std::string, ChunkingMode>& chunking_mode_names();

std::string name_of(PartitionMethod v);
std::string name_of(MetisObjective v);
std::string name_of(MetisAlgorithm v);
std::string name_of(VertexWeights v);
std::string name_of(ChunkingMode v);

}  // namespace ht
