#pragma once
// The one list of a device's buffers (issue 38): every array
// Trainer::setup_devices allocates on a device, in the order it allocates
// them, and what the memory planners sum — the GPU planner
// (memory_plan.cpp: device_memory_need, second_merged_buffer_bytes) and the
// host planner's emulated devices (host_memory_plan.cpp:
// emulated_device_bytes). One function builds it (device_buffers) from a
// device's sizes (BufferShape: setup takes them from the device plan, the
// planners from the plan's shape), the options and the model: the model's
// parameter list (layer_param_specs) and its own buffers, which its layer
// file declares (ModelTraits::buffers, e.g. GAT's attention buffers).
//
// Not in the list: what setup's later parts allocate, sized by what they
// find (the GPU cache takes what the list leaves; device forwarding's and
// gradient handoff's index lists), and the executor's scratch, whose size is
// the executor's (Device::reserve); a model's scratch of a size the planners
// know is a `reserved` entry.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/memory_plan.hpp"
#include "engine/trainer_options.hpp"

namespace ht {

inline constexpr int kSlots = 2;         // batches in flight per device (loading, computing)
inline constexpr int kStagingSlots = 3;  // gradient pieces in flight (compacted, copied, added)

// What a buffer is for: where setup puts it (trainer_state.hpp's DeviceState).
enum class BufferUse {
  merged,         // the merged data buffer (xs[0], x): buffer rows x max gather width
  gradient,       // the merged gradient buffer (g)
  early_send,     // early pulls' packed rows (send)
  z, dz,          // max_dst x max output width
  step,           // a packed step: each step when resident, a ring slot when streamed (`slot`)
  incoming,       // per slot: read-ahead rows of the next batch
  in_a, in_h, in_dh, out_a, out_h, out_dl, out_t, in_t,  // per slot: inputs and outputs of a batch
  raw_in, raw_out,                                         // per slot: their 16-bit shadows
  staging, raw_staging,  // per staging slot: a returned gradient piece, and its 16-bit shadow
  keys, labels, split,   // per vertex, uploaded: original ids, labels, split codes
  param, param_grad,     // parameter tensor `index` of ModelParams (uploaded) and its gradient
  model,                 // the model's own buffer (ModelTraits::buffers), the model's k-th
  second_merged,         // the second merged buffer: allocated last, only when it fits
};

enum class BufferSite {
  allocated,  // setup allocates it
  // Scratch of the model's that setup reserves through the executor
  // (Device::reserve): the GPU planner counts it; on the CPU backend it is
  // host memory while training (the host planner's item of its name).
  reserved,
};

struct DeviceBuffer {
  std::string name;
  BufferUse use = BufferUse::merged;
  int64_t rows = 0, cols = 0;  // elements: rows x cols
  int64_t elem = 4;            // bytes per element (4: fp32; the 16-bit shadows and packed steps count bytes)
  // device_memory_need's split: shrinks with more chunks (buffers, steps),
  // or fixed (per-vertex arrays, parameters).
  bool per_chunk = true;
  BufferSite site = BufferSite::allocated;
  std::string owner = "engine";  // who declares it: "engine", or the model ("gat")
  int slot = 0;                  // which slot (per-slot buffers), step, staging slot or model buffer
  int index = 0;                 // param, param_grad: the tensor's place in ModelParams::tensors
  int64_t size() const { return rows * cols; }
  int64_t bytes() const { return rows * cols * elem; }
};

// A device's sizes the list depends on. Setup fills it from the device plan
// (rows at least 1), the planners from the plan's shape (memory_plan.cpp's
// as it always estimated the GPU, host_memory_plan.cpp's as setup does).
struct BufferShape {
  int64_t rows = 0;          // merged (and gradient) buffer rows
  int64_t nd = 0;            // most destination rows of a batch
  int64_t ne = 0;            // most edges of a batch
  int64_t later = 0;         // read-ahead rows per slot (0: no read-ahead)
  int64_t send = 0;          // early-pull send rows (0: none)
  int64_t max_flush = 0;     // most rows a batch returns: bounds the staging pieces
  int64_t num_vertices = 0;  // the per-vertex arrays' rows
  // Bytes of each packed step (resident steps), or of one ring slot (streamed:
  // one value, kSlots slots).
  std::vector<int64_t> steps;
  bool streamed = false;
  bool store_on_device = false;  // in-memory mode: no staging ring, no second merged buffer
};

// What a model's own buffers depend on (ModelTraits::buffers).
struct ModelBufferShape {
  int64_t rows = 0;  // merged buffer rows
  int64_t ne = 0;    // most edges of a batch
  LayerExtents x;
};

// The list, in setup's order of allocation.
std::vector<DeviceBuffer> device_buffers(const BufferShape& s, const TrainerOptions& opt);

// Σ of the bytes of the entries that setup allocates (site allocated).
int64_t allocated_bytes(const std::vector<DeviceBuffer>& list);

}  // namespace ht
