#pragma once
// In-memory graph: CSC of in-edges (for each destination v, its sources
// sources[offsets[v] .. offsets[v+1])), plus optional edge weights and vertex
// data. `Graph` owns its arrays; `GraphView` is a non-owning view used by
// readers (over a memory map) and writers alike.
#include <cstdint>
#include <span>
#include <vector>

#include "graph/types.hpp"

namespace ht {

struct GraphFlags {
  bool symmetric = false;         // for every edge u->v there is v->u (with equal multiplicity)
  bool has_self_loops = false;    // at least one v->v edge
  bool sorted_neighbors = false;  // each destination's sources ascending
  bool no_duplicates = false;     // no repeated (u, v) pair
  bool features_normalized = false;  // feature rows scaled to sum 1 (Kipf & Welling)
};

struct GraphView {
  int64_t num_vertices = 0;
  int64_t num_edges = 0;
  std::span<const int64_t> offsets;  // N + 1
  std::span<const vid_t> sources;    // E
  std::span<const float> weights;    // E or empty
  int32_t feature_dim = 0;
  std::span<const float> features;   // N * F or empty
  int32_t num_classes = 0;
  std::span<const int32_t> labels;   // N or empty; -1 = no label
  std::span<const uint8_t> split;    // N or empty; values of Split
  std::span<const int64_t> orig_ids; // N or empty
  GraphFlags flags;

  int64_t in_degree(int64_t v) const { return offsets[v + 1] - offsets[v]; }
  std::span<const vid_t> in_neighbors(int64_t v) const {
    return sources.subspan(offsets[v], offsets[v + 1] - offsets[v]);
  }
  std::span<const float> feature_row(int64_t v) const {
    return features.subspan(static_cast<size_t>(v) * feature_dim, feature_dim);
  }
};

struct Graph {
  int64_t num_vertices = 0;
  std::vector<int64_t> offsets{0};
  std::vector<vid_t> sources;
  std::vector<float> weights;
  int32_t feature_dim = 0;
  std::vector<float> features;
  int32_t num_classes = 0;
  std::vector<int32_t> labels;
  std::vector<uint8_t> split;
  std::vector<int64_t> orig_ids;
  GraphFlags flags;

  int64_t num_edges() const { return static_cast<int64_t>(sources.size()); }
  GraphView view() const;
};

// Deep copy of a view (e.g. to transform a graph read from a file).
Graph to_graph(const GraphView& v);

}  // namespace ht
