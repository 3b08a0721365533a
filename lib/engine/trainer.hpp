#pragma once
// The training loop of Algorithm 1 over a plan: per layer and batch, dedup
// load of h^l (Algorithm 2), chunk compute on every device, h^{l+1} written to
// host; backward per layer (last to first) and batch with recomputation (GAT)
// or cached aggregates (GCN), dedup gradient return (Algorithm 3); weight
// gradients all-reduced, then one optimizer step applied to every replica.
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/timer.hpp"
#include "engine/device_plan.hpp"
#include "engine/executor.hpp"
#include "engine/layer_math.hpp"
#include "engine/layer_order.hpp"
#include "engine/row_tier.hpp"
#include "engine/store_features.hpp"
#include "engine/store_layout.hpp"
#include "engine/trainer_options.hpp"
#include "engine/vertex_store.hpp"
#include "graph/graph.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"

namespace ht {


// Bytes of the vertex store (h^0..h^L, ∇x^1..∇x^L, and per GCN layer the
// cached aggregate or the transform t / ∇t), less what stays on the device
// (stores_h, stores_grad).
int64_t vertex_store_bytes(const TrainerOptions& opt, int64_t num_vertices, StoreDtype dtype = StoreDtype::f32);

struct EpochResult {
  double loss = 0;        // training loss of the (dropout) training forward
  double train_acc = 0, val_acc = 0, test_acc = 0;
  double eval_loss = 0;   // loss of the evaluation forward
  double seconds = 0;
  // Time breakdown (seconds): host->device loads, device<->device, compute, CPU accumulation.
  // Busy time of each kind of work, summed over the devices' queues (work of
  // different kinds overlaps, so these add up to more than `seconds`).
  double t_h2d = 0, t_d2d = 0, t_compute = 0, t_cpu = 0;
  // Exposed time: the epoch's wall time split by what was running, read from a
  // per-queue timeline (CUDA events on GPUs, host clocks on the CPU executor).
  // At every instant the time goes to the first busy kind in the order
  // compute, h2d, d2h, host (CPU accumulation), else to idle (host issue,
  // optimizer, waits); the five add up to `seconds`.
  double x_compute = 0, x_h2d = 0, x_d2h = 0, x_host = 0, x_idle = 0;
  // Host-link bytes the forward passes issued (the rest of the epoch's are
  // the backward passes'): forward writes outputs, backward reads them back.
  int64_t forward_h2d_bytes = 0, forward_d2h_bytes = 0;
  // Busy time of each of this process's devices' compute queues (compute and
  // P2P work), seconds: how evenly the partitions divide the work.
  std::vector<double> gpu_busy;
};

struct Evaluation {
  double loss = 0, train_acc = 0, val_acc = 0, test_acc = 0;
};

// What the trainer reads while it is constructed, besides the plan. It keeps
// none of it: once `inputs_read` has been called, the caller may free the
// graph and the plan's per-step lists (the plan's sizes and ranges stay read).
struct TrainerInputs {
  // The graph in the plan's NEW ids: topology (GCN degrees), labels, split;
  // its features too unless `features` is given.
  GraphView graph;
  std::span<const int64_t> orig_id;       // graph file id of new id v (dropout keys)
  std::optional<FeatureSource> features;  // where h^0 comes from, when not graph's features
  // Called once the device plans are packed and `graph` is read, before the
  // vertex store is allocated: what the caller frees there is not held at
  // the same time as the store.
  std::function<void()> inputs_read;
  // GCN's 1/sqrt(degree) or SAGE's 1/degree per new id (models that weigh
  // edges), when the caller has them: then `graph` needs no topology (a
  // plan from files carries it; the degrees come from the file's graph).
  std::vector<float> degree_weights;
};

class Trainer {
 public:
  Trainer(Executor& exec, const Plan& plan, TrainerOptions opt, TrainerInputs in);
  // `g` is the graph in the plan's NEW ids; `orig_id[v]` is the graph file id
  // of new id v (dropout keys, exported predictions).
  Trainer(Executor& exec, const GraphView& g, std::span<const int64_t> orig_id, const Plan& plan,
          TrainerOptions opt)
      : Trainer(exec, plan, std::move(opt), TrainerInputs{g, orig_id, std::nullopt, {}, {}}) {}
  ~Trainer();

  // One training epoch: forward (with dropout), loss, backward, optimizer step.
  EpochResult train_epoch(int epoch);
  // Forward without dropout over every vertex; accuracies by split.
  Evaluation evaluate();
  // Loss and weight gradients of one epoch without the optimizer step (tests).
  double compute_gradients(int epoch);

  // Read-only: parameters change through train_epoch and set_params, which
  // also copy them to every device.
  const ModelParams& params() const { return params_; }
  void set_params(const ModelParams& p);  // e.g. loaded from a checkpoint
  Optimizer& optimizer() { return optimizer_; }
  // Logits of the last forward, rows in new ids (row-major, N x C).
  std::vector<float> logits() const;
  // Rows of h^l (1 <= l <= L; L: the logits) from the last forward, in new
  // ids, as logits() reads them; empty when the store holds no h^l (a fused
  // transform keeps it on the device: stores_h). Rows the GPU cache holds
  // (whose host copy is not written) are read from the GPUs.
  std::vector<float> layer_output(int l) const;
  bool store_on_device() const { return store_.residence == Residence::device; }
  // The rows of the store this process holds: every row, or in a
  // multi-process job its own partitions' rows (logits() fills only those).
  std::pair<int64_t, int64_t> held_rows() const { return {held_begin_, held_end_}; }
  // Element type of the vertex store's matrices (fp32 on a device).
  StoreDtype store_dtype() const { return store_on_device() ? StoreDtype::f32 : opt_.host_dtype; }
  const LinkCounters& counters() const { return exec_.counters(); }
  // Seconds of each part of construction: "device plans", "vertex store"
  // (allocated, pinned, zeroed; with store_pages_first its pages before the
  // device plans and "vertex store pinning" beside them), "h^0" (filled),
  // "GPU cache"; and the process's system CPU seconds of each phase that did
  // not run beside another.
  const PhaseTimes& setup_phases() const { return setup_phases_; }
  // Resident steps a GPU left to the host for want of working memory
  // (derive_resident_steps' fallback; logged).
  int64_t steps_derived_on_host() const { return steps_derived_on_host_.load(); }
  // What the GPU cache holds: bytes on the fullest device, the row tier's
  // rows on the device with the most, and the matrices ("h^0, a^0; tier:
  // 1234 rows of h^1"; empty when nothing).
  struct GpuCacheHeld {
    int64_t bytes = 0, tier_rows = 0;
    int64_t saved_bytes = 0;  // host-link and host-add bytes per epoch it saves (estimate, GPU 0)
    std::string what;
  };
  const GpuCacheHeld& gpu_cache_held() const { return cache_held_; }
  // Bytes of the host store pinned, and not pinned because the GPU cache
  // holds those matrices whole (no device reads or writes their host rows).
  struct StorePinned {
    int64_t pinned_bytes = 0, unpinned_bytes = 0;
  };
  const StorePinned& store_pinned() const { return store_pinned_; }
  // Backward batches that took their activation's mask from the GPU cache
  // (TrainerOptions::mask_from_cache) instead of recomputing z, so far.
  int64_t cached_masks() const { return cached_masks_; }
  // Busy intervals of every device queue in the last training epoch, seconds
  // since its start (what --timeline-out writes).
  const std::vector<BusyInterval>& last_timeline() const { return last_timeline_; }

 private:
  using Layer = LayerParams;  // per-device parameters and gradients of one layer
  struct DeviceState;  // per-device buffers, ring slots and events (trainer_state.cpp)
  // `checked` runs once the devices' memory is checked, before the plans are built.
  void setup_devices(const TrainerInputs& in, const std::function<void()>& checked);
  void reserve_scratch(DeviceState& st);
  void derive_resident_steps(const EdgeKeys& vertices);
  int64_t derive_on_host(Device& d, const DeviceStep& step, DevArray<std::byte> at, const EdgeKeys& vertices);
  VertexStore alloc_vertex_store(int64_t n, int64_t feature_cols, bool pin);
  // ---- data kept on the device between passes (trainer_resident.cpp)
  void setup_forwarding();
  void setup_handoff(std::vector<DevicePlan*>& plans);
  void report_store_pages() const;  // the host store's share of huge pages (log)
  void release_resident_blocks();  // the end of setup: resident steps' host blocks go
  void upload_params();
  // The GPU cache (TrainerOptions::gpu_cache): store matrices (or the rows of
  // them a device touches) in device memory; `source` is where device `st`
  // reads and writes store matrix `m`.
  void setup_gpu_cache(std::span<const int64_t> orig_id);
  struct Candidate;
  std::vector<TierSplit> split_step_loads(const DeviceState& st, std::span<const std::span<const uint32_t>> lists,
                                          const TierIndex& index) const;
  // The candidates among the matrices of `s`, valued with g loads and r
  // returns per own row and epoch.
  std::vector<Candidate> cache_candidates(const VertexStore& s, bool written_too, double g, double r) const;
  // The store's pinning: what the GPU cache may hold whole is allocated
  // unpinned (may_cache_whole), the store's thread pins all but the
  // matrices it expects the cache to take (deferred_pins, in the room of
  // cache_room_guess), and
  // pin_store_rest pins what the cache left once it has chosen.
  bool may_cache_whole() const;
  std::vector<int64_t> cache_room_guess() const;
  std::vector<const HostMat*> deferred_pins(const VertexStore& s, std::span<const int64_t> room) const;
  void pin_store_rest();
  const HostMat& source(const DeviceState& st, const HostMat& m) const;
  // LayerBatch::out of a backward batch: rows [v0, v0 + nd) of h^{l+1} where
  // the GPU cache holds it whole in fp32 on this device, else empty.
  DevMat cached_output_rows(const DeviceState& st, int l, int64_t v0, int64_t nd) const;
  // The row tier (engine/row_tier.hpp): the hottest rows of the first
  // gathered matrix not cached whole, in what the cache left (`room`, bytes
  // per device); tier_row_reads / write_tier serve and update it.
  int tier_layer() const;
  struct TierChoice {
    TierRows hot;
    std::vector<TierOwnRows> own;  // by batch: its own tier rows (written matrices)
    int64_t scratch_floats = 0;
  };
  TierChoice choose_tier_rows(const DeviceState& st, std::span<const std::span<const uint32_t>> loads, int64_t b,
                              int64_t e, int64_t room, int64_t cols, int64_t row_bytes, bool written,
                              bool narrow, bool returns) const;
  void setup_row_tier(std::span<const int64_t> room, std::span<const int64_t> orig_id);
  double setup_tier_returns(DeviceState& st, const TierIndex& index);
  // Own rows of batch j whose returns the tier holds, over `dst` (start_batch).
  void patch_tier_rows(DeviceState& st, int j, DevMat dst);
  void fill_tier(DeviceState& st, std::span<const uint32_t> vids);
  // Batch j's loads from the tier into the merged buffer (compute queue).
  void read_tier(DeviceState& st, int layer, int j, int epoch, bool training);
  struct Output;  // a batch's output rows and their place in the store
  void write_tier(DeviceState& st, int j, const Output& out);
  // The matrix layer l gathers: t^l when transform-first, else h^l.
  const HostMat& gathered(int layer) const;
  // ---- schedule (trainer.cpp): one pass over the batches of a layer.
  enum class Pass { forward, transform, backward, transform_backward };
  void run_pass(Pass pass, int layer, int epoch, bool training);
  // Passes that gather neighbor rows into the merged buffer: every forward,
  // and the backward of a layer that needs them again (backward_gathers).
  bool gathers(Pass pass, int layer) const {
    if (pass == Pass::forward) return true;
    return pass == Pass::backward && backward_gathers(opt_, layer);
  }
  // A backward that would gather by the model (SAGE) but does not at layer
  // l: it loads x_v, the batch's own rows of h^l, into the slot's in_h.
  bool loads_own_rows(int layer) const { return traits_.backward_gathers && !gathers(Pass::backward, layer); }
  double forward(int epoch, bool training, LossStats* stats);
  void backward(int epoch);
  void reduce_and_collect_grads();
  // ---- data movement (trainer_io.cpp)
  // Starts batch j's use of a slot on every device: topology and the
  // contiguous inputs the pass reads, on the load queue.
  void issue_loads(Pass pass, int layer, int j, int epoch, bool training, bool first);
  // Algorithm 2: rows of the gathered matrix into the merged buffer (host
  // gather, in place or read ahead into the incoming buffer), then P2P pulls.
  void issue_gather(int layer, int j, int epoch, bool training, bool first);
  void issue_exchange(int layer, int j, bool read_ahead, bool pulled_early, int epoch, bool training);
  // Batch j's P2P pulls on the peer queue, while batch j - 1 computes (two remote areas).
  void issue_early_pulls(int layer, int j);
  bool pulls_early(int layer) const;
  // Algorithm 3: pushes to peers, then flushes to host in pieces through the
  // staging ring (compact on the device, copy, add by a host task).
  void issue_return(const HostMat& stored, int64_t width, int j);
  void write_first_returns(DeviceState& st, int j, DevMat G, const HostMat& dst, int64_t kept, bool into_tier);
  void read_cached_rows(DeviceState& st, const HostMat& m, std::span<float> out) const;
  // Multi-process jobs: the rows of batch j that cross to and from other
  // processes' devices (trainer_net.cpp): pulled rows in the forward
  // exchange, pushed gradients (received, then added in job order) in the return.
  void setup_net(int64_t max_gather);
  // Device `job` of the job when this process drives it, else null.
  DeviceState* local_state(int job) const;
  void exchange_pulls(int64_t width, int j);
  void exchange_pushes(int64_t width, int j);
  void apply_pushes(int64_t width, int j);
  void add_pushes_from(int pusher, DeviceState& owner, int64_t width, int j);
  void add_remote_ranges(DeviceState& st, DevMat buffer, int j, bool send, std::vector<RowTransfer>& group);
  void run_exchange(std::span<const RowTransfer> group);
  // The loss statistics of every device of the job, summed in job order.
  LossStats gather_loss_stats();
  void publish(DeviceState& st, int slot, int batch, const std::vector<Output>& outputs);
  void write_out(DeviceState& st, DevMat src, DevArray<std::byte> raw, const HostMat& dst, int64_t v0);
  void read_in(DeviceState& st, int slot, const HostMat& src, int64_t v0, DevMat dst);
  void phase_barrier();
  // Batch j's loads wait for the previous pass's batch j (trainer_io.cpp).
  void wait_producer(DeviceState& st, int j);
  void end_phase();
  // ---- math of one batch on one device (trainer_layers.cpp)
  struct BatchView;  // the device, slot and rows of a batch whose compute is being issued
  BatchView start_batch(DeviceState& st, int j, bool writes_outputs);
  // The views of device `st`'s buffers that layer l's math reads and writes
  // for the batch in `slot` (nd destination rows): forward or backward.
  LayerBatch layer_batch(DeviceState& st, int layer, int batch, int slot, int64_t nd, bool forward, bool training,
                         int epoch);
  void forward_batch(DeviceState& st, int layer, int j, bool training, int epoch);
  void backward_batch(DeviceState& st, int layer, int j, int epoch);
  void transform_batch(DeviceState& st, int layer, int j, int epoch, bool training);
  void transform_backward_batch(DeviceState& st, int layer, int j, int epoch);
  bool transform_first(int layer) const { return ht::transform_first(opt_.model, opt_.gcn_order, layer); }
  // Layer l's transform passes run inside layer l - 1's (TrainerOptions::fuse_transforms).
  bool fused_transform(int layer) const { return fuses_transform(opt_, layer); }
  // Whether h^k goes to the host store: some later pass reads it there.
  bool h_on_host(int k) const { return stores_h(opt_, k); }
  // The fused transform of layer k on a batch's own rows h^k: t^k (an output
  // for the store) in the forward; ∇W^k and ∇x^k = ∇t^k Wᵀ (into dX) in the backward.
  Output transform_rows(DeviceState& st, int k, int slot, DevMat H, int64_t v0, bool training, int epoch);
  void transform_backward_rows(DeviceState& st, int k, int slot, DevMat H, DevMat dX, int64_t v0, int epoch);
  static DevMat dropped_input(Device& d, DevMat H, DevArray<float> scratch, int64_t v0, const DropoutSpec& drop);
  bool read_ahead() const;
  bool own_host_queues() const;
  // Whether layer l's backward hands the gradients it returns to layer l - 1's
  // on the device (TrainerOptions::handoff_gradients): they are what layer
  // l - 1's backward reads (no transform pass between), and they can wait in
  // the gradient buffer (layer l - 1 returns nothing) or in the merged data
  // buffer layer l - 1 does not use (it gathers nothing).
  bool hands_off(int layer) const;
  bool two_merged_buffers() const;
  bool handoff_stays_in_g(int layer) const;  // hands_off(layer) keeps the rows in the gradient buffer
  // End of a handing pass: the rows move out of the gradient buffer where
  // the next pass needs it (handoff_stays_in_g false).
  void park_handoff(int layer);
  // Whether forward pass l writes the rows layer l + 1 gathers into the next
  // merged buffer on the device (TrainerOptions::forward_on_device).
  bool forwards(int layer) const;
  void forward_rows(DeviceState& st, int l, int j, DevMat rows, bool training, int epoch);
  // Layer 0's backward batch j takes its handed-off rows of ∇ from the buffer.
  void take_handoff(DeviceState& st, int j, DevMat dst);
  // Dropout of a layer's input / attention; `keys` = the device's copy of the
  // original vertex ids.
  DropoutSpec input_dropout(int layer, int epoch, bool training, const int64_t* keys) const;
  DropoutSpec attn_dropout(int layer, int epoch, bool training, const int64_t* keys) const;
  HostMat alloc_store(int64_t rows, int64_t cols, bool pin_now);
  void count_host_rows(int64_t rows, int64_t width, bool to_device);
  // Rows a device loads from or stores to store matrix `m` (on the host, or in the GPU cache).
  void count_rows(const HostMat& m, int64_t rows, int64_t width, bool to_device);
  void start_timeline();
  void finish_timeline(EpochResult& r, double wall);

  Executor& exec_;
  const Plan& plan_;
  int64_t num_vertices_ = 0;
  // The job's devices this process drives are first_ ... (all of them in a
  // one-process job); the store holds rows [held_begin_, held_end_), their
  // partitions' rows (all rows in a one-process job).
  int first_ = 0;
  int64_t held_begin_ = 0, held_end_ = 0;
  PhaseTimes setup_phases_;
  TrainerOptions opt_;
  ModelParams params_;
  Optimizer optimizer_;
  // The layer seam (layer_math.hpp): the model's traits and each layer's math.
  ModelTraits traits_;
  std::atomic<int64_t> steps_derived_on_host_{0};
  std::vector<std::unique_ptr<LayerMath>> layer_math_;
  VertexStore store_;
  std::vector<float> inv_sqrt_deg_;
  int64_t num_train_ = 0;
  bool write_first_ = true;  // every gradient row's first return is a write (no clear)
  std::vector<std::unique_ptr<DeviceState>> dev_;
  // The packed blocks of resident steps (ordinary memory), until setup ends.
  std::deque<HostBlock> resident_blocks_;
  double timeline_start_ = 0;
  std::vector<BusyInterval> last_timeline_;
  // Cross-pass scheduling: what the previous pass was.
  int pass_seq_ = 0;            // passes issued (parity picks batch_stored)
  int gather_seq_ = 0;          // gathering passes issued (parity picks the merged buffer)
  bool prev_returned_ = true;   // the previous pass returned gradients through host adds (or none yet)
  bool prev_produced_ = false;  // the previous pass wrote per-batch outputs the next one reads
  bool early_ = false;          // the pass being issued started without a barrier
  bool handoff_ = false;        // gradient handoff between backward passes is set up
  bool handing_off_ = false;    // the pass being issued leaves handed-off rows in the buffer
  bool receiving_ = false;      // the pass being issued reads them there
  bool forwarding_ = false;     // device forwarding is set up (second merged buffer, lists)
  bool forwarded_ = false;      // the previous pass forwarded the rows this one's first batch gathers
  EpochResult timing_;
  GpuCacheHeld cache_held_;
  StorePinned store_pinned_;
  int64_t cached_masks_ = 0;
};

}  // namespace ht
