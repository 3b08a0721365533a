#include "train/divergence.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht {
namespace {

// Index of the first non-finite value, or -1.
int64_t first_non_finite(const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return static_cast<int64_t>(i);
  return -1;
}

std::string shown(double x) { return std::isnan(x) ? "NaN" : (x > 0 ? "+Inf" : "-Inf"); }

}  // namespace

void check_finite_epoch(int epoch, double loss, const ModelParams& params) {
  const std::string hint = "nothing written; try a smaller --lr";
  for (const char* what : {"gradient", "value"}) {
    for (const ParamTensor& t : params.tensors) {
      const std::vector<float>& v = what[0] == 'g' ? t.grad : t.value;
      const int64_t i = first_non_finite(v);
      if (i >= 0)
        throw DivergenceError(fmt::format("training diverged at epoch {}: layer {}'s {} {} is {} at [{}, {}]; {}", epoch, t.layer,
                                t.name, what[0] == 'g' ? "gradient" : "parameter", shown(v[i]), i / std::max(t.cols, 1),
                                i % std::max(t.cols, 1), hint));
    }
  }
  if (!std::isfinite(loss))
    throw DivergenceError(fmt::format("training diverged at epoch {}: the training loss is {}; {}", epoch, shown(loss), hint));
}

void check_finite_features(const GraphView& g, const std::string& graph_path) {
  std::vector<float> row(static_cast<size_t>(g.feature_dim));
  for (int64_t v = 0; v < g.num_vertices && g.has_features(); ++v) {
    g.load_feature_row(v, row);
    const int64_t c = first_non_finite(row);
    if (c >= 0)
      throw file_error(graph_path, fmt::format("feature {} of vertex {} is {}: the graph's features must be finite "
                                               "(training diverged on them, whatever the learning rate); fix the "
                                               "features and convert again",
                                               c, v, shown(row[static_cast<size_t>(c)])));
  }
}

}  // namespace ht
