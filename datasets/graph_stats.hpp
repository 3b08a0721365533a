#pragma once
// Statistics of a graph for `ht-convert --inspect` and the conversion summary.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.hpp"

namespace ht::data {

struct DegreeStats {
  int64_t min = 0, max = 0;
  double mean = 0;
};

struct GraphStats {
  int64_t num_vertices = 0, num_edges = 0;
  DegreeStats in_degree, out_degree;
  int64_t self_loops = 0;
  int64_t duplicate_edges = 0;   // edges repeating an earlier (u, v)
  int64_t isolated_vertices = 0; // no edge other than self-loops
  bool symmetric = false;
  bool sorted_neighbors = false;  // every in-list ascending (checked, not taken from the header)
  bool weighted = false;
  int32_t feature_dim = 0;
  StoreDtype feature_dtype = StoreDtype::f32;  // of the features in the file
  int64_t feature_nonzeros = 0;
  int32_t num_classes = 0;
  std::vector<int64_t> class_counts;  // per class
  int64_t unlabeled = 0;              // label -1 (0 when there are no labels)
  bool has_labels = false, has_split = false, has_orig_ids = false;
  int64_t split_counts[4] = {0, 0, 0, 0};  // none, train, val, test
};

GraphStats compute_stats(const GraphView& g);

// Multi-line human-readable report.
std::string stats_text(const GraphStats& s);

}  // namespace ht::data
