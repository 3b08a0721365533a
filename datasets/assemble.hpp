#pragma once
// RawGraph -> ht::Graph: dense ids (datasets/relabel.hpp), CSC, vertex data,
// then the structural transformations of ht-convert and the final flags.
#include <string>

#include "datasets/raw_graph.hpp"
#include "graph/graph.hpp"

namespace ht::data {

enum class SelfLoops { keep, drop, add };

struct TransformOptions {
  bool symmetrize = false;       // add v->u for every u->v (also removes duplicates)
  bool drop_duplicates = false;  // keep one edge per (u, v) (the first weight)
  SelfLoops self_loops = SelfLoops::keep;
  bool normalize_features = false;  // rows to sum 1 (Kipf & Welling)
};

// `input` is named in messages; keep_ids forbids relabeling.
Graph assemble_graph(RawGraph&& raw, bool keep_ids, const std::string& input);

// Applies the transformations, then sets every flag from the data
// (detect_flags) so the written header tells the truth.
Graph apply_transforms(Graph&& g, const TransformOptions& t);

}  // namespace ht::data
