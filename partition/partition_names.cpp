#include "partition/partition_names.hpp"

namespace ht {
namespace {

template <typename E>
std::string lookup(const std::map<std::string, E>& names, E v) {
  for (const auto& [name, value] : names)
    if (value == v) return name;
  return "unknown(" + std::to_string(static_cast<int>(v)) + ")";
}

}  // namespace

const std::map<std::string, PartitionMethod>& partition_method_names() {
  static const std::map<std::string, PartitionMethod> m{
      {"metis", PartitionMethod::metis}, {"random", PartitionMethod::random}, {"range", PartitionMethod::range}};
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

std::string name_of(PartitionMethod v) { return lookup(partition_method_names(), v); }
std::string name_of(MetisObjective v) { return lookup(metis_objective_names(), v); }
std::string name_of(MetisAlgorithm v) { return lookup(metis_algorithm_names(), v); }
std::string name_of(VertexWeights v) { return lookup(vertex_weights_names(), v); }

}  // namespace ht
