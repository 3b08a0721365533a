#pragma once
// ht-convert refuses NaN and ±Inf in features and edge weights (training on
// them gives NaN weights behind a finite-looking loss). f8 inputs beyond the
// float32 range become ±Inf when narrowed and are refused the same way.
// --allow-nonfinite keeps them (for inputs where they mean something to a
// later tool; ht-train then stops at the first non-finite loss or weight).
#include <string>

#include "graph/graph.hpp"

namespace ht::data {

// Throws ht::Error naming the source file, the vertex (or edge) and the value.
void check_finite_values(const Graph& g, const std::string& features_source, const std::string& weights_source);

}  // namespace ht::data
