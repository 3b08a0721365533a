#pragma once
// Internal to the trainer (trainer*.cpp): what each device holds and the
// events that order its queues. The buffers are allocated from the one list
// (device_buffers.hpp; kSlots, kStagingSlots are there too).
//
// Buffers rotate between two slots by the device's batch count (`seq`), so
// that batch j + 1's loads and batch j - 1's write-behind copies run while
// batch j computes. Event rules, per slot s:
//   load queue   waits computed[s] (batch k - 2 is done with the slot), then
//                loads; records loaded[s];
//   compute      waits loaded[s]; waits stored[s] before writing the slot's
//                outputs; records computed[s];
//   store queue  waits computed[s]; copies outputs to host; records stored[s].
// The merged buffer x is shared by the batches: batch j + 1's new rows are
// gathered ahead into incoming[s] and scattered into x after batch j (waiting
// for the peers' pulls of batch j: `pulled`); peers pull batch j + 1's rows
// after the owner's scatter (`x_ready`) or, early (two remote areas), while
// the batch before computes: the owner packs them on its peer queue from the
// rows it keeps in x (after its scatter of that batch, `x_ready`) and its
// read-ahead rows (`loaded`), `early_packed`, and copies them into the
// pullers' other remote area, `early_sent`; its next scatter and read-ahead
// into the same incoming slot wait for `early_packed`. Gradient pushes wait for the owner's
// compute of the batch (`g_ready`, after its previous flush), flushes wait
// for the peers' pushes (`pushed`).
#include <memory>
#include <vector>

#include "engine/cache_value.hpp"
#include "engine/device_buffers.hpp"
#include "engine/device_plan.hpp"
#include "engine/executor.hpp"
#include "engine/layer_math.hpp"
#include "engine/trainer.hpp"

namespace ht {

struct Trainer::DeviceState {
  Device* dev = nullptr;
  DevicePlan plan;
  std::vector<Layer> layers;
  DevArray<float> x;                // the merged data buffer of the pass being issued (one of xs)
  DevArray<float> xs[2];            // merged data buffers, alternating between gathering passes (or one twice)
  DevArray<float> g;                // merged gradient buffer: buffer_rows x max gather width
  DevArray<float> incoming[kSlots]; // read-ahead rows of the next batch: max later loads x max gather width
  // Packed steps (topology, index lists): one per batch when resident; when
  // streamed, two ring slots that follow the data slots.
  bool streamed = false;
  std::vector<DevArray<std::byte>> ring;
  std::vector<int> ring_step;       // which step each ring slot holds (-1: none yet)
  int ring_slot(int batch, int slot) const { return streamed ? slot : batch; }
  // Inputs read ahead by the load queue (max_dst rows each).
  DevArray<float> in_a[kSlots];     // aggregate / own input rows: max input width
  DevArray<float> in_h[kSlots];     // h^{l+1} (ReLU mask): max output width
  DevArray<float> in_dh[kSlots];    // ∇x^{l+1} or ∇t: max output width
  // Outputs written behind by the store queue (max_dst rows each).
  DevArray<float> out_a[kSlots];    // cached aggregate or ∇x: max input width
  DevArray<float> out_h[kSlots];    // h^{l+1} or t: max output width
  DevArray<float> out_dl[kSlots];   // ∇logits: output width
  // Fused transforms (TrainerOptions::fuse_transforms): the next layer's t
  // out (forward) and ∇t in (backward), the widest fused output width.
  DevArray<float> out_t[kSlots], in_t[kSlots];
  DevArray<float> z, dz;            // max_dst x max output width
  std::vector<DevArray<float>> model_buffers;  // the model's own (ModelTraits::buffers), in its order
  DevArray<float> staging_dev[kStagingSlots];     // compacted gradient pieces
  // 16-bit stores: rows cross the link as 16-bit bytes (copy engines) and are
  // converted on the compute queue: a slot's inputs (widened when its batch
  // starts), its outputs and the staging pieces (rounded before they leave).
  DevArray<std::byte> raw_in[kSlots], raw_out[kSlots], raw_staging[kStagingSlots];
  int64_t raw_in_used[kSlots] = {};
  struct Widen {
    DevArray<std::byte> raw;
    DevMat dst;
  };
  std::vector<Widen> widen_pending[kSlots];  // loaded, to widen at the batch's start
  HostMat staging_host[kStagingSlots];            // their pinned host copies
  int64_t staging_rows = 0;
  // Gradient handoff (DevicePlan::handoff), per batch: own rows and their gradient buffer rows.
  std::vector<DevIdx> handoff_rows, handoff_slots;
  std::vector<DevIdx> handoff_host_rows, handoff_host_vids;  // the rest, gathered from the host store
  DevArray<float> handoff_buf;      // where the handed-off rows wait: g, or the merged buffer the next pass leaves alone
  // The GPU cache on this device: store matrix -> the rows of it this device
  // reads and writes, in its memory (Trainer::setup_gpu_cache).
  struct Cached {
    const HostMat* stored = nullptr;
    HostMat rows;
  };
  std::vector<Cached> cache;
  // The row tier (Trainer::setup_row_tier): the rows of one gathered store
  // matrix (not cached whole) this device loads most often, slot k holding
  // vertex k of the tier's list (ascending). Per batch, its load list split
  // into tier reads (gathered on the compute queue when the batch's
  // exchange starts) and host reads (the load queue, as without the tier);
  // a written matrix's batches write their own tier rows as they publish
  // (the host copy is written too).
  struct RowTier {
    const HostMat* stored = nullptr;  // null: no tier
    HostMat rows;                     // slots x cols, this device's memory, the store's dtype
    DevArray<int64_t> keys;           // dropout key (original id) of each slot's vertex
    std::vector<DevIdx> hot_slots, hot_rows, cold_vids, cold_rows;  // by batch
    std::vector<Slice> cold_by_producer;  // batch 0's cold lists by producing batch
    std::vector<DevIdx> own_rows;     // by batch: its rows (local) in the tier, written matrices only
    std::vector<int64_t> own_slot0;   // by batch: the first of their slots
    DevArray<float> scratch;          // 16-bit written matrices: a batch's tier rows before rounding
    // Returns (Trainer::setup_tier_returns): when the tier's matrix is also
    // where a backward pass returns gradients (t^l / ∇t^l), its rows take
    // them on the compute queue (the steps' flush lists split: DeviceStep::
    // tier_first, tier_staged) in the store's dtype, adding as the host would,
    // and the passes that read them back patch them over the rows loaded from
    // the host (tier_patch).
    bool returns = false;
    std::vector<DevIdx> ret_slots;    // by batch: the tier slots of its first, then later, tier returns
  };
  RowTier tier;
  // The tier when it holds rows of store matrix `m`, else null.
  const RowTier* tier_of(const HostMat& m) const { return tier.stored == &m ? &tier : nullptr; }
  // The tier when it takes the gradient returns into `m`, else null.
  const RowTier* tier_returns(const HostMat& m) const { return tier.returns ? tier_of(m) : nullptr; }
  // Own rows a slot's batch read from the host whose returns are in the
  // tier: patched over them when the batch starts (after widening).
  struct TierPatch {
    int batch = 0;
    DevMat dst;
  };
  std::vector<TierPatch> tier_patch[kSlots];
  // Device forwarding (TrainerOptions::forward_on_device), per producing batch
  // k: rows of its outputs (local to the batch) and where they go in the first
  // batch's merged buffer (its load list's piece produced by batch k).
  std::vector<DevIdx> forward_src, forward_dst;
  // Multi-process jobs (Executor::exchange). Per batch, the devices of other
  // processes that read this device's rows (forward: it sends them) and push
  // gradients into them (backward: it adds them), ascending, each with the
  // rows' slots in this device's merged buffer (their plan's remote list);
  // `net` stages the rows that cross (gathered out, or received to add).
  struct Served {
    int peer = 0;      // job device
    DevIdx slots;
    // The slots it sends forward: `slots` less the rows the peer keeps from
    // its previous step (RemoteAreas::kept_rows), in the same order.
    DevIdx fresh;
    int64_t row0 = 0;  // its rows' place in `net`
  };
  std::vector<std::vector<Served>> served;  // by batch
  DevArray<float> net;
  int job = 0;                      // this device's index in the job
  DevArray<int64_t> keys;           // new id -> graph file id
  DevArray<int32_t> labels;
  DevArray<uint8_t> split;

  // Scheduling state.
  int64_t seq = 0;                  // batches started (slot = seq % kSlots)
  std::vector<int> slot_of;         // slot of each batch of the pass being issued
  StepLists lists[kSlots];          // the step in each slot, bound to its ring slot
  int64_t stage_seq = 0;            // staging pieces started
  Event loaded[kSlots], computed[kSlots], stored[kSlots];
  Event x_ready, pulled, pushed, flushed;
  // Early pulls (Trainer::issue_early_pulls), on this device's peer queue as
  // an owner: its rows for the pullers packed (its merged buffer and incoming
  // slot may change), then copied into the pullers' merged buffers.
  Event early_packed, early_sent;
  DevArray<float> send;             // the packed rows (early_send_rows x max gather width)
  Event g_ready;                    // compute queue: this batch's gradient rows are in g (before pushes)
  std::vector<Event> push_round;    // compute queue, per round of Trainer::apply_pushes: its adds are issued
  Event compacted[kStagingSlots], copied[kStagingSlots];
  Event added[kStagingSlots];       // on the adding host queue (Trainer::own_host_queues): this device's piece is added
  Event phase_stored;               // store queue: the phase's copies are done
  std::vector<Event> batch_stored[2];  // by pass parity, per batch: its outputs are on host
  Event x_free[2];                  // compute queue: the last pass that used xs[p] is done with it
  Event phase_host;                 // host queue, the phase's adds are done (device 0's: every device's)
};

// A store matrix the GPU cache may hold whole (Trainer::cache_candidates).
struct Trainer::Candidate {
  const HostMat* stored = nullptr;
  bool accumulator = false;  // a gradient matrix: fp32 on the device (TrainerOptions::gpu_accumulate)
  CacheCandidate value;
};

// A batch's output rows and where they go in the vertex store.
struct Trainer::Output {
  DevMat rows;
  const HostMat* dst = nullptr;
  int64_t v0 = 0;
};

namespace engine_detail {

inline int64_t bytes_of(int64_t rows, int64_t cols, StoreDtype t = StoreDtype::f32) {
  return rows * cols * dtype_bytes(t);
}

}  // namespace engine_detail
}  // namespace ht
