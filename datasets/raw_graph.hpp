#pragma once
// What the input readers produce before a graph is built: directed edges with
// the ids of the input (64-bit, not yet relabeled) and optional vertex data.
// ht-convert turns a RawGraph into an ht::Graph (datasets/assemble.hpp).
#include <cstdint>
#include <string>
#include <vector>

namespace ht::data {

// Edges src -> dst in input ids, with an optional weight per edge.
struct RawEdges {
  std::vector<uint64_t> src, dst;
  std::vector<float> weight;  // empty or one per edge
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// Per-vertex arrays. `rows` is the vertex count they define (-1 = none
// given yet); `rows_source` names the file that fixed it, for messages.
struct VertexData {
  int64_t rows = -1;
  std::string rows_source;
  int32_t feature_dim = 0;
  std::vector<float> features;  // rows * feature_dim, row-major
  int32_t num_classes = 0;
  std::vector<int32_t> labels;  // -1 = no label
  std::vector<uint8_t> split;   // ht::Split codes
};

struct RawGraph {
  RawEdges edges;
  // Known vertex count (ids must be < it; no relabeling); -1 = derive from ids.
  int64_t num_vertices = -1;
  VertexData data;
};

}  // namespace ht::data
