#include "datasets/finite_values.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht::data {
namespace {

int64_t first_non_finite(const std::vector<float>& v) {
  int64_t first = static_cast<int64_t>(v.size());
#pragma omp parallel for reduction(min : first) schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i)
    if (!std::isfinite(v[i]) && i < first) first = i;
  return first < static_cast<int64_t>(v.size()) ? first : -1;
}

const char* why(float x) {
  return std::isnan(x) ? "NaN" : "infinite (an Inf, or an f8 value beyond the float32 range)";
}

}  // namespace

void check_finite_values(const Graph& g, const std::string& features_source, const std::string& weights_source) {
  const std::string hint = "fix the input, or pass --allow-nonfinite to keep such values";
  if (const int64_t i = first_non_finite(g.features); i >= 0) {
    const int64_t row = i / g.feature_dim, col = i % g.feature_dim;
    const std::string id = g.orig_ids.empty() ? std::to_string(row) : fmt::format("{} (input id {})", row, g.orig_ids[row]);
    throw file_error(features_source, fmt::format("feature of vertex {}, column {} is {}; {}", id, col,
                                                  why(g.features[i]), hint));
  }
  if (const int64_t e = first_non_finite(g.weights); e >= 0)
    throw file_error(weights_source,
                     fmt::format("the weight of edge {} (CSC order) is {}; {}", e, why(g.weights[e]), hint));
}

}  // namespace ht::data
