#pragma once
// Options of one training engine run (lib/engine/trainer.hpp), shared with
// the memory planner.
#include "core/half.hpp"
#include "engine/layer_order.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"

namespace ht {

// Where each batch's packed step (topology, index lists) lives on the device.
enum class StepPlacement {
  automatic,  // resident when every step fits next to the rest, else streamed
  streamed,   // two ring slots: a step is copied in with its batch's data
  resident,   // every step copied once at setup (no per-batch step traffic)
};

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
  StepPlacement steps = StepPlacement::automatic;
  // Passes start before the previous one has ended where the data flow
  // allows (per-batch waits instead of a barrier; the merged buffer doubled
  // when it fits, so that a gathering pass loads while the last one computes).
  bool early_start = true;
  // 1 or 2 (2 falls back to 1 when it does not fit). One by default: on the
  // products-like bench the second buffer's gain was within noise (n = 8
  // faster, n = 4 slower) and it costs a merged buffer of GPU memory.
  int merged_buffers = 1;
  // Element type of the host vertex store (--host-dtype): 16-bit halves
  // every host-link byte and the host memory; compute stays fp32 (rows are
  // widened and rounded inside the copy kernels). Host stores only: the
  // in-memory mode keeps fp32.
  StoreDtype host_dtype = StoreDtype::f32;
};

// Whether batch j + 1's new rows are read ahead while batch j computes: it
// needs the in-place reuse of the full mode (other modes reload the whole
// transition set every batch, which would double the merged buffer).
inline bool reads_ahead(const TrainerOptions& opt, int chunks) {
  return opt.comm == CommMode::full && opt.overlap_copies && chunks > 1;
}

}  // namespace ht
