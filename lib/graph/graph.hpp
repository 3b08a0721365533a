#pragma once
// In-memory graph: CSC of in-edges (for each destination v, its sources
// sources[offsets[v] .. offsets[v+1])), plus optional edge weights and vertex
// data. `Graph` owns its arrays; `GraphView` is a non-owning view used by
// readers (over a memory map) and writers alike.
//
// Features are fp32 (`features`) or 16-bit (`features16`: bf16 or fp16 bit
// patterns, `feature_dtype` says which; graph files written with
// `ht-convert --feature-dtype`). Exactly one of the two is set when the graph
// has features. Code that only moves rows uses `feature_bytes`; code that
// needs values reads rows widened to fp32 with `load_feature_row`.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/half.hpp"
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
  StoreDtype feature_dtype = StoreDtype::f32;
  std::span<const float> features;       // N * F, fp32 features only (else empty)
  std::span<const uint16_t> features16;  // N * F, bf16/fp16 features only (else empty)
  int32_t num_classes = 0;
  std::span<const int32_t> labels;   // N or empty; -1 = no label
  std::span<const uint8_t> split;    // N or empty; values of Split
  std::span<const int64_t> orig_ids; // N or empty
  GraphFlags flags;

  bool has_features() const { return !features.empty() || !features16.empty(); }
  // The feature matrix as stored: N * F * dtype_bytes(feature_dtype) bytes.
  std::span<const std::byte> feature_bytes() const {
    return feature_dtype == StoreDtype::f32 ? std::as_bytes(features) : std::as_bytes(features16);
  }
  // Row v, widened to fp32 (exact); out.size() must be feature_dim.
  void load_feature_row(int64_t v, std::span<float> out) const {
    const size_t at = static_cast<size_t>(v) * static_cast<size_t>(feature_dim);
    if (feature_dtype == StoreDtype::f32) {
      std::copy_n(features.begin() + at, out.size(), out.begin());
      return;
    }
    for (size_t c = 0; c < out.size(); ++c) out[c] = widen16(features16[at + c], feature_dtype);
  }

  int64_t in_degree(int64_t v) const { return offsets[v + 1] - offsets[v]; }
  std::span<const vid_t> in_neighbors(int64_t v) const {
    return sources.subspan(offsets[v], offsets[v + 1] - offsets[v]);
  }
  // Row v of fp32 features (empty for 16-bit ones: use load_feature_row).
  std::span<const float> feature_row(int64_t v) const {
    if (features.empty()) return {};
    return features.subspan(static_cast<size_t>(v) * feature_dim, feature_dim);
  }
};

struct Graph {
  int64_t num_vertices = 0;
  std::vector<int64_t> offsets{0};
  std::vector<vid_t> sources;
  std::vector<float> weights;
  int32_t feature_dim = 0;
  StoreDtype feature_dtype = StoreDtype::f32;
  std::vector<float> features;       // fp32 features
  std::vector<uint16_t> features16;  // or bf16/fp16 ones (feature_dtype)
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
