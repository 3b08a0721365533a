#pragma once
// Options of one training engine run (lib/engine/trainer.hpp), shared with
// the memory planner.
#include <algorithm>

#include "core/half.hpp"
#include "engine/layer_order.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"

namespace ht {

// Where each batch's packed step (topology, index lists) lives on the device.
// TrainerOptions::keep_remote_rows.
enum class KeepRemoteRows { automatic, on, off };

enum class StepPlacement {
  automatic,  // resident when every step fits next to the rest, else streamed
  streamed,   // two ring slots: a step is copied in with its batch's data
  resident,   // every step copied once at setup (no per-batch step traffic)
};

// TrainerOptions::gpu_cache: cache what fits next to the working set.
inline constexpr int64_t kGpuCacheAuto = -1;

// What the automatic GPU cache leaves free on a device of `limit` bytes:
// cuBLAS and the driver allocate outside the executor's pools. The cache
// (trainer_resident.cpp) and --chunks auto's tier (train/chunk_choice.cpp)
// both keep it.
inline int64_t gpu_cache_margin(int64_t limit) { return std::max<int64_t>(int64_t{512} << 20, limit / 32); }

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
  // 1 or 2 (2 falls back to 1 when it does not fit). Two by default: with
  // forward_on_device the second buffer is where a layer's outputs go for the
  // next layer's first batch (alone, its gain was within noise on the
  // products-like bench); it costs a merged buffer of GPU memory.
  int merged_buffers = 2;
  // Element type of the host vertex store (--host-dtype): 16-bit halves
  // every host-link byte and the host memory; compute stays fp32 (rows are
  // widened and rounded inside the copy kernels). Host stores only: the
  // in-memory mode keeps fp32.
  StoreDtype host_dtype = StoreDtype::f32;
  // A GCN's transform-first layer l > 0 runs inside layer l - 1's passes:
  // t = dropout(h^l) W in the forward batch that computes h^l, and the
  // transform backward (∇W, ∇x^l = ∇t Wᵀ) in the backward batch that needs
  // ∇x^l (same rows, same device). h^l (often) and ∇x^l then never cross the
  // link, and two passes per layer go. Results are identical with fp32 stores
  // (16-bit stores: h^l and ∇x^l are no longer rounded to the store's type).
  bool fuse_transforms = true;
  // The gradients layer 1's backward returns stay on the GPU for layer 0's
  // backward where the plan allows (a vertex returned once, by its owner's
  // last batch: mark_handoff) instead of a round trip through the host store.
  // Results are identical with fp32 stores.
  bool handoff_gradients = true;
  // A forward batch's outputs that the next layer's first batch gathers are
  // also written into the next pass's merged buffer on the device (with the
  // next layer's input dropout), so that batch loads nothing from the host
  // and does not wait for the outputs to reach it. Needs the second merged
  // buffer and the p2p or full mode (where a device loads only rows its own
  // batches produce). Results are identical with fp32 stores.
  bool forward_on_device = true;
  // GPU cache (--gpu-cache): the input features h^0 never change, so a copy
  // in each device's memory, uploaded once, serves every load of them (layer
  // 0's gathers and own-row reads) as a device copy instead of a host-link
  // transfer. kGpuCacheAuto: when they fit in what the device has left after
  // the working set (executors with device memory of their own); 0: off;
  // otherwise a budget in bytes per device. Results are identical.
  int64_t gpu_cache = kGpuCacheAuto;
  // What the cache holds first are whole matrices; what is left of the
  // budget takes a row tier: the hottest rows of the first gathered matrix
  // not held whole (engine/row_tier.hpp). For tests and diagnostics: at most
  // this many matrices whole, and at most this many rows in the tier (-1: as
  // many as fit).
  int cache_whole_max = -1;
  int64_t tier_rows_max = -1;
  // Gradient matrices (∇x^l, and t^l / ∇t^l of transform-first layers) in
  // the GPU cache are fp32 accumulators whatever the store's type: returns
  // add on the owner's compute queue in fp32, and a 16-bit store's gradients
  // are never rounded while they stay there (docs/ARCHITECTURE.md, "Where a
  // 16-bit store rounds"). Off: a 16-bit store's gradient matrices are not
  // cached (every return goes through the host, rounded at each add: the
  // bits of earlier versions). fp32 stores give the same bits either way.
  bool gpu_accumulate = true;
  // Backward of a ReLU layer whose output h^{l+1} the GPU cache holds in
  // fp32: the activation's mask read from it (LayerBatch::out) instead of z
  // recomputed (GCN's and SAGE's aggregate-first layers: their products
  // again). The same bits; false recomputes (tests compare the two).
  bool mask_from_cache = true;
  // The GPU cache's row tier of t^l (a transform-first GCN layer's gathered
  // matrix) also takes the returns of ∇t^l into its rows, on the owner's
  // compute queue, adding in the store's dtype as the host does (the same
  // bits): those rows' gradients stop crossing the link and the host adds
  // them no more. Off: every return goes to the host (bench comparisons).
  bool tier_returns = true;
  // Batch j + 1's P2P pulls run while batch j computes: each owner packs its
  // rows on its peer queue and copies them on the copy engines (needs the
  // read-ahead of the full mode and a second remote area in the merged and
  // gradient buffers: DevicePlan::remote_shift); off, they run on the compute
  // queue between the batch's scatter and its compute. Off by default: on
  // 4 x H200 it took GCN at m = 2 from 132.4 to 123.8 ms (community, GPU
  // cache auto) but slowed m = 4 products-like by 16% and GAT by 7-13%
  // (bench/RESULTS.md, session 10).
  bool overlap_pulls = false;
  // A remote row a device read in its previous batch too is copied on the
  // device from the other remote area instead of being pulled again (two
  // remote areas, --comm full with read-ahead; not with overlap_pulls).
  // Automatic: on for models whose products see only the batch's own rows
  // (GCN, SAGE: 2-11% faster epochs on 2 and 4 H100s), off for GAT, whose
  // transform runs over the buffer's active rows and grows with the second
  // area (5-9% slower): bench/RESULTS.md, session 11.
  KeepRemoteRows keep_remote_rows = KeepRemoteRows::automatic;
  // The host vertex store is allocated (its pages faulted in and pinned) in
  // a thread of its own while the device plans are built and uploaded:
  // neither needs the other, and each takes tens of seconds at a few billion
  // edges (bench/RESULTS.md). The store is then held beside the plan's lists
  // and the renumbered graph for a while: ht-train turns this off for a small
  // store or where the host memory plan does not fit with it
  // (lib/train/train_job.cpp). Results are identical.
  bool store_beside_plans = true;
  // With store_beside_plans: the store's pages are faulted in before the
  // device plans' steps are built (every core, nothing beside), and only its
  // pinning runs beside them. Beside the steps, which fault in and free large
  // lists of their own on every core, faulting a hundred GiB in is slowed by
  // both sides fighting over the kernel (the mm's locks, huge-page
  // compaction) and the cores (issue 33: friendster-like, 4 x H200, pages
  // 41.7 s beside steps 39.5 s, 1647 s of system CPU in setup). The setup
  // phases say which ran ("vertex store" before "device plans", then
  // "vertex store pinning" beside them) and each one's system CPU seconds.
  // Off here (the library's order as before); ht-train turns it on
  // (--store-pages). Results are identical.
  bool store_pages_first = false;
  // Resident steps (copied to their device once): the host packs their
  // offsets, src and lists, and the device derives the rest of the topology
  // (edge destinations, self-loop rows, weights, keys, the transpose) from
  // them (DeviceStep::derived, Device::derive_topologies): a quarter of the
  // host's per-edge work and of the upload. Off: the host writes every list,
  // as for streamed steps. The same bytes either way.
  bool derive_steps = true;
  // Test and diagnostic hook: every GPU's derivation refused, as where it
  // has no room for its working memory; the host derives the steps instead
  // (Trainer::steps_derived_on_host).
  bool refuse_device_derivation = false;
};

// Whether layer l's transform passes are fused into layer l - 1's (above).
inline bool fuses_transform(const TrainerOptions& opt, int l) {
  return opt.fuse_transforms && l > 0 && transform_first(opt.model, opt.gcn_order, l);
}

// Whether the vertex store holds h^k on the host (or in-memory store): some
// pass reads it there. Readers: the logits (k = L); layer k's gathers
// (aggregate-first GCN, GAT) or its transform passes when they are not
// fused; layer k - 1's backward when it is transform-first (ReLU mask, and
// h^k for a fused transform backward).
inline bool stores_h(const TrainerOptions& opt, int k) {
  const ModelConfig& m = opt.model;
  if (k == m.num_layers() || !fuses_transform(opt, k)) return true;
  return transform_first(m, opt.gcn_order, k - 1);
}

// Whether the store holds ∇x^k: ∇logits (k = L), or what layer k's backward
// (or its transform backward pass) returns for layer k - 1's backward; with
// layer k's transform fused, ∇x^k stays on the device.
inline bool stores_grad(const TrainerOptions& opt, int k) {
  return k == opt.model.num_layers() || !fuses_transform(opt, k);
}

// Widest fused transform output (0 when none): the slots' t and ∇t rows.
inline int64_t fused_transform_width(const TrainerOptions& opt) {
  int64_t w = 0;
  for (int l = 1; l < opt.model.num_layers(); ++l)
    if (fuses_transform(opt, l)) w = std::max<int64_t>(w, opt.model.out_width(l));
  return w;
}

// Whether batch j + 1's new rows are read ahead while batch j computes: it
// needs the in-place reuse of the full mode (other modes reload the whole
// transition set every batch, which would double the merged buffer).
inline bool reads_ahead(const TrainerOptions& opt, int chunks) {
  return opt.comm == CommMode::full && opt.overlap_copies && chunks > 1;
}

// The remote area(s) of the merged and gradient buffers.
//   one         the remote rows of every step in one area, pulled every step;
//   early_pulls two areas, odd steps' in the second (DevicePlan::remote_shift),
//               batch j + 1's pulled while batch j computes (Trainer::issue_early_pulls);
//   kept_rows   two areas, and a remote row this device read in its previous
//               step too is copied from the other area on the device instead
//               of crossing NVLink again (peers of this process only).
enum class RemoteAreas { one, early_pulls, kept_rows };

// The layout the options give a plan of m devices and this many chunks: two
// areas (TrainerOptions::overlap_pulls, keep_remote_rows) need several devices
// and the full mode's read-ahead.
RemoteAreas remote_areas(const TrainerOptions& opt, int m, int chunks);  // remote_areas.cpp

}  // namespace ht
