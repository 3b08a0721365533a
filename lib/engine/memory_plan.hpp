#pragma once
// Per-device memory the trainer will allocate for a plan and model, computed
// before allocating anything, so that a plan that does not fit is refused with
// an error that says how many chunks per GPU would fit.
#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/layer_order.hpp"
#include "engine/trainer_options.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"
#include "plan/plan_shape.hpp"

namespace ht {

// Widest row of each kind over the layers: device buffers are sized once
// for the widest layer and viewed with each layer's width.
struct LayerExtents {
  int64_t max_in = 0;     // widest layer input
  int64_t max_out = 0;    // widest layer output or transform
  int64_t max_tw = 0;     // widest GAT transform (all heads)
  int64_t max_heads = 1;
  int64_t max_gather = 0; // widest row gathered, aggregated and returned (gather_width)
  int64_t max_narrowed = 0;  // widest output of a layer narrower than its input (ModelConfig::narrows), else 0
};
LayerExtents layer_extents(const ModelConfig& m, GcnOrder order);

// Rows of one staging piece for gradient rows returned to the host (64 MiB
// at the widest gathered row): returns stream through a few such pieces
// instead of a staging buffer as large as the merged buffer.
inline int64_t staging_piece_rows(int64_t width) {
  return width > 0 ? std::max<int64_t>(1, (int64_t{64} << 20) / (4 * width)) : 1;
}

struct DeviceMemoryNeed {
  int64_t per_chunk_bytes = 0;  // buffers and topology that shrink with more chunks
  int64_t fixed_bytes = 0;      // per-vertex arrays, parameters (independent of n)
  int64_t total() const { return per_chunk_bytes + fixed_bytes; }
};

// Need with the steps placed as `streamed` says (opt.steps is not read).
// The need depends on the plan's sizes only: a Plan is measured through its
// shape (plan_shape.hpp), so that a shape estimated before any plan exists
// (ht-train --chunks auto) gives the very figure the Trainer checks.
DeviceMemoryNeed device_memory_need(const PlanShape& plan, int gpu, const TrainerOptions& opt, bool streamed);
DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, bool streamed);
// Need with the placement opt.steps asks for, automatic resolved against `limit`.
DeviceMemoryNeed device_memory_need(const PlanShape& plan, int gpu, const TrainerOptions& opt, int64_t limit = 0);
DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit = 0);
// Whether steps stream for this device: opt.steps, with automatic = stream
// only when the resident steps would not fit under `limit` (0 = no limit).
bool streams_steps(const PlanShape& plan, int gpu, const TrainerOptions& opt, int64_t limit);
bool streams_steps(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit);

// Bytes of the second merged buffer on device `gpu` (0 when the options do
// not ask for one): Trainer::setup_devices allocates it last and only when it
// fits, so the need above leaves it out; --chunks auto counts it, because a
// count without room for it runs its gathering passes one after the other.
// Rows of a device's merged (and gradient) buffer: the baseline mode's
// neighbor rows, or the transition slots and the remote area(s).
int64_t merged_buffer_rows(const PlanShape& plan, int gpu, const TrainerOptions& opt);

// Rows of a device's early-pull send buffer (Trainer::issue_early_pulls):
// the most rows its peers pull from it in one batch, bounded by the sum of
// their remote rows; 0 without two remote areas.
int64_t early_send_rows(const PlanShape& plan, int gpu, const TrainerOptions& opt);

int64_t second_merged_buffer_bytes(const PlanShape& plan, int gpu, const TrainerOptions& opt);

// Throws ht::Error when `need` exceeds `limit` (bytes; 0 = no limit), naming
// the device, both sizes and an estimate of the chunks per GPU that would fit.
void check_device_memory(const DeviceMemoryNeed& need, int64_t limit, int gpu, int chunks);

}  // namespace ht
