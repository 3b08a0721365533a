#pragma once
// The divergence guard of ht-train: after every training epoch the loss, every
// gradient and every parameter must be finite; otherwise the run stops at
// once (no model, predictions or checkpoint of NaNs are written).
#include "core/error.hpp"
#include "graph/graph.hpp"
#include "models/model.hpp"

namespace ht {

// What check_finite_epoch throws, so that the run can look for a cause in
// its inputs before it blames the learning rate.
class DivergenceError : public Error {
 public:
  using Error::Error;
};

// Throws ht::Error "training diverged at epoch E: ..." naming the first
// non-finite value: a tensor's gradient, then its value (with the layer),
// then the loss.
void check_finite_epoch(int epoch, double loss, const ModelParams& params);

// Throws a file error naming the graph file, the vertex and the column when
// a feature is NaN or infinite (what makes the first epoch diverge whatever
// the learning rate); returns otherwise. Read only when training diverged.
void check_finite_features(const GraphView& g, const std::string& graph_path);

}  // namespace ht
