#pragma once
// The divergence guard of ht-train: after every training epoch the loss, every
// gradient and every parameter must be finite; otherwise the run stops at
// once (no model, predictions or checkpoint of NaNs are written).
#include "models/model.hpp"

namespace ht {

// Throws ht::Error "training diverged at epoch E: ..." naming the first
// non-finite value: a tensor's gradient, then its value (with the layer),
// then the loss.
void check_finite_epoch(int epoch, double loss, const ModelParams& params);

}  // namespace ht
