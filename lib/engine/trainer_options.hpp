#pragma once
// Options of one training engine run (lib/engine/trainer.hpp), shared with
// the memory planner.
#include "engine/layer_order.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"

namespace ht {

struct TrainerOptions {
  ModelConfig model;
  OptimizerConfig optimizer;
  CommMode comm = CommMode::full;
  GcnOrder gcn_order = GcnOrder::automatic;
  // In-memory mode: the vertex store in device memory (needs m = 1, n = 1;
  // ignored by executors without device memory, where host is the device).
  bool store_on_device = false;
  // Write-behind: device-to-host copies of layer outputs run on a copy queue
  // while the next batch computes (output buffers doubled); false = copies in
  // line with compute, as the paper does.
  bool overlap_copies = true;
};

}  // namespace ht
