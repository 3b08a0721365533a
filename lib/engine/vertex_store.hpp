#pragma once
// Where each layer's vertex data lives. Today every array is in host memory
// (pinned and mapped for the CUDA executor): h^l for l = 0..L (h^0 = the
// features, h^L = the logits), the gradients ∇x^l for l = 1..L (∇ of each
// layer's dropped-out input, ∇x^L = ∇logits), GCN's cached aggregates a^l
// (aggregate-first layers) or transforms t^l = x W, reused for ∇t^l in
// backward (transform-first layers; engine/layer_order.hpp), and SAGE's
// means (its layers that aggregate first).
// The location field is where later tiers (device-resident hot vertices,
// in-memory mode) slot in.
#include <vector>

#include "engine/executor.hpp"

namespace ht {

enum class Residence { host, device };

struct VertexStore {
  Residence residence = Residence::host;
  std::vector<HostMat> h;     // L + 1
  std::vector<HostMat> grad;  // L + 1 (index 0 unused)
  std::vector<HostMat> agg;   // L: GCN's a^l, or t^l / ∇t^l when transform-first; SAGE's mean (stores_layer_matrix)
};

// f(m) for each matrix of `s` in host memory (h, then grad, then agg; the
// empty entries and those on a device skipped): what setup pins, reports
// and leaves to the GPU cache.
template <typename F>
void for_each_host_matrix(const VertexStore& s, F f) {
  for (const auto* list : {&s.h, &s.grad, &s.agg})
    for (const HostMat& m : *list)
      if (m.data && !m.on_device()) f(m);
}

}  // namespace ht
