#include "partition/partition_names.hpp"

namespace ht {

const std::map<std::string, PartitionMethod>& partition_method_names() {
  static const std::map<std::string, PartitionMethod> m{
      {"metis", PartitionMethod::metis},           {"random", PartitionMethod::random},
      {"range", PartitionMethod::range},           {"multilevel", PartitionMethod::multilevel},
      {"auto", PartitionMethod::automatic}};
  return m;
}
const std::map<std::string, MetisObjective>& metis_objective_names() {
  static const std::map<std::string, MetisObjective> m{{"cut", MetisObjective::cut}, {"vol", MetisObjective::vol}};
  return m;
}
const std::map<std::string, MetisAlgorithm>& metis_algorithm_names() {
  static const std::map<std::string, MetisAlgorithm> m{{"kway", MetisAlgorithm::kway},
                                                       {"recursive", MetisAlgorithm::recursive}};
  return m;
}
const std::map<std::string, VertexWeights>& vertex_weights_names() {
  static const std::map<std::string, VertexWeights> m{
      {"none", VertexWeights::none}, {"degree", VertexWeights::degree}, {"train", VertexWeights::train}};
  return m;
}

const std::map<std::string, ChunkingMode>& chunking_mode_names() {
  static const std::map<std::string, ChunkingMode> m{
      {"balanced", ChunkingMode::balanced}, {"locality", ChunkingMode::locality}, {"auto", ChunkingMode::automatic}};
  return m;
}

std::string name_of(PartitionMethod v) { return name_in(partition_method_names(), v); }
std::string name_of(MetisObjective v) { return name_in(metis_objective_names(), v); }
std::string name_of(MetisAlgorithm v) { return name_in(metis_algorithm_names(), v); }
std::string name_of(VertexWeights v) { return name_in(vertex_weights_names(), v); }
std::string name_of(ChunkingMode v) { return name_in(chunking_mode_names(), v); }

}  // namespace ht
