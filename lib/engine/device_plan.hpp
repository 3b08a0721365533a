#pragma once
// The plan as one device sees it: for each batch, the chunk topology in the
// comm mode's index space, the rows to load from host, the remote rows per
// peer, and the gradient flush lists, uploaded once at setup.
#include <algorithm>
#include <functional>
#include <span>
#include <vector>

#include "engine/device_uploads.hpp"
#include "engine/executor.hpp"
#include "engine/trainer_options.hpp"
#include "plan/plan.hpp"

namespace ht {

// (EdgeKeys, the edge-level data that does not depend on the mode: engine/executor.hpp.)

// Host-side topology of one step before upload.
struct HostTopology {
  int64_t num_dst = 0, num_src_rows = 0;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> src, dst_row, t_edge, edge_dst;
  std::vector<int64_t> t_offsets, src_key, dst_key;
  std::vector<float> weight;
  std::vector<uint32_t> seg_row, t_seg_row;  // long rows' segments (DevTopology::seg_row)
  std::vector<int64_t> seg_edge, t_seg_edge;
  int64_t segments() const { return static_cast<int64_t>(std::max(seg_row.size(), t_seg_row.size())); }
};

// Cuts each row of `offsets` with more than kLongRowEdges edges into
// ceil(edges / kLongRowEdges) nearly equal segments (DevTopology::seg_row).
void split_long_rows(std::span<const int64_t> offsets, std::vector<uint32_t>& seg_row, std::vector<int64_t>& seg_edge);

// Builds the topology of `step` reading rows of the baseline neighbor buffer
// (src_local) or of the merged buffer (src_merged); merged rows from
// `remote_row0` on (the remote area) read `remote_shift` rows further on
// (DevicePlan::remote_shift: odd steps' remote rows in the second area).
HostTopology make_topology(const ChunkPlan& step, CommMode mode, int64_t num_src_rows, const EdgeKeys& keys,
                           int64_t remote_row0 = 0, int64_t remote_shift = 0);
DevTopology upload_topology(Device& dev, const HostTopology& t);

struct PeerRange {
  int peer = 0;
  int64_t begin = 0, count = 0;  // rows [begin, begin + count) of the remote list
  // Early pulls (DeviceStep::pull_src): the first `kept` of the range's rows
  // come from the owner's merged buffer (rows it keeps from its previous
  // step), the rest from its read-ahead rows of this step.
  int64_t kept = 0;
  // Kept remote rows (RemoteAreas::kept_rows): the range's rows this device
  // did not read in its previous step, pulls [fresh_begin, + fresh_count) of
  // the step's pull lists.
  int64_t fresh_begin = 0, fresh_count = 0;
};

// A typed array inside a step's packed bytes.
struct Slice {
  int64_t offset = 0, count = 0;
};

// Device views of one step's arrays, bound to where its bytes are on the device.
struct StepLists {
  DevTopology topo;
  DevIdx load_vids, load_rows;  // host rows -> buffer rows (transition slots or baseline rows) not kept in place
  DevIdx remote_slots;          // peer slot of each remote row (full list)
  DevIdx flush_rows, flush_vids;  // buffer rows whose gradient leaves the device after this batch
  DevIdx pull_src, pull_dst;      // early pulls: the owners' source rows, this buffer's rows (DeviceStep)
};

// What one device does in one batch. Everything the device reads for the
// step (topology, index lists) is packed into one block of host memory:
// pinned, when the step is streamed to the device with the batch's data
// (Trainer's topology ring, so that device memory holds the steps in flight
// only); ordinary memory, when the step is copied to the device once at
// setup and kept there (resident steps: the trainer releases those blocks
// once its setup is done, and `bytes` is then empty).
struct DeviceStep {
  const ChunkPlan* plan = nullptr;
  std::span<std::byte> bytes;  // the packed block (host memory)
  // The block on the device. More than `bytes` where the device derives the
  // topology (derived: DeriveTopology): the host packs and uploads the first
  // bytes.size() (offsets, src, forward segments, index and pull lists); the
  // rest (weight, dst_row, the transpose, edge_dst, keys, the transpose's
  // segments, t_seg_* sized to their capacity until then) the device writes.
  int64_t block_bytes = 0;
  bool derived = false;
  // A derived step's src: the plan's list (src_local or src_merged), copied
  // to the device from there; rows from `shift_from` on read `shift` rows
  // further (the second remote area), the device's shift.
  std::span<const uint32_t> plan_src;
  uint32_t shift_from = UINT32_MAX, shift = 0;
  int64_t num_dst = 0, num_edges = 0, num_src_rows = 0;
  Slice offsets, src, weight, dst_row, t_offsets, t_edge, edge_dst, src_key, dst_key;
  Slice seg_row, seg_edge, t_seg_row, t_seg_edge;
  Slice load_vids, load_rows, remote_slots, flush_rows, flush_vids;
  // Early pulls (DevicePlan::remote_shift > 0, batches after the first):
  // the remote rows, range by range (PeerRange::kept first), as the owner's
  // source row — a row of its merged buffer it keeps from its previous step,
  // or a row of its read-ahead (incoming) rows of this step — and the row's
  // place in its range. The owner packs them in range order and copies the
  // range into place without waiting for its own scatter of the read-ahead
  // rows, while the previous batch computes (Trainer::issue_early_pulls).
  // With RemoteAreas::kept_rows the same lists hold, first, the
  // `kept_remote` rows read in the previous step too (source: their row in the
  // other remote area; destination: their row in this step's), then, range by
  // range (PeerRange::fresh_begin), the rows to pull (source: the owner's
  // slot; destination: their row in this step's area); absolute buffer rows.
  Slice pull_src, pull_dst;
  int64_t kept_remote = 0;
  std::vector<PeerRange> peers;            // per-peer ranges of the remote list
  std::span<const vid_t> flush_vids_host;  // flush_vids, in the plan (host memory)
  // When every row has a first return (mark_first_flushes), the flush lists
  // are reordered: the first `first_count` rows are first returns, which the
  // device writes straight into the store (no clear of the gradient matrix,
  // no staging, no host work); the rest, `staged_vids` on the host, go
  // through staging and are added by the host.
  int64_t first_count = 0;
  std::vector<vid_t> staged_vids;
  // Last batch only (mark_handoff): the last `handoff_count` first returns are
  // rows whose only return in a pass is this one, for a vertex of this device:
  // a pass that hands its gradients to the next one leaves them in the buffer.
  int64_t handoff_count = 0;
  // With the GPU cache's row tier taking returns (split_tier_returns): the
  // last `tier_first` first returns before the handed-off ones, and the last
  // `tier_staged` later returns, are rows the tier holds.
  int64_t tier_first = 0, tier_staged = 0;
  int64_t reused_rows = 0;  // rows kept in place (full mode)
  int64_t segments = 0;     // the topology's long-row segments (the more of the two directions)
  // p2p and full modes: the load list's rows produced by this device's batch
  // k (its own partition's chunk in batch k), as [begin, begin + count) of
  // the list; lets a pass gather rows as soon as their producer stored them.
  std::vector<Slice> load_by_producer;
  int64_t load_count() const { return load_vids.count; }
  int64_t flush_count() const { return flush_rows.count; }
  StepLists bind(DevArray<std::byte> at) const;
};

// Gradient rows a batch of the next backward pass takes from the device's
// gradient buffer instead of the host (mark_handoff): own row rows[k] of the
// batch is buffer row slots[k]; the others, own row host_rows[k] = vertex
// host_vids[k], come from the host store.
struct HandoffRows {
  std::vector<uint32_t> rows, slots;
  std::vector<uint32_t> host_rows, host_vids;
};

struct DevicePlan {
  std::vector<DeviceStep> steps;  // by batch
  std::vector<HandoffRows> handoff;  // by batch (empty without mark_handoff)
  int64_t buffer_rows = 0;        // rows of the data/gradient buffer (merged or baseline)
  int64_t trans_capacity = 0;
  // Two remote areas (early pulls): odd steps' remote rows follow the first
  // area, `remote_shift` rows (the remote capacity) further on, so that batch
  // j + 1's pulls land while batch j reads its own. 0: one area.
  int64_t remote_shift = 0;
  RemoteAreas areas = RemoteAreas::one;
  int64_t remote_base(int j) const { return trans_capacity + ((j & 1) ? remote_shift : 0); }
  // Rows [0, active_rows(j)) hold everything step j's topology reads (even
  // steps end before the second area).
  int64_t active_rows(int j) const { return remote_base(j) + (buffer_rows - trans_capacity - remote_shift); }
  int64_t max_step_bytes = 0;     // largest packed step
  int64_t max_later_loads = 0;    // most rows any batch but the first loads from host
  int64_t max_flush = 0;          // most rows one batch returns to host
  int64_t max_segments = 0;       // most long-row segments of one step's topology (either direction)
};

// Host memory for one packed block: alloc(gpu, bytes) returns `bytes` bytes
// that outlive the plan's use of them, for a step of device `gpu` (pinned
// for a device whose steps are streamed; any host memory for one whose steps
// are copied once). Called one at a time. The packing writes every byte of
// the block (the padding between arrays zeroed), so the block's bytes do not
// depend on what the memory held.
using StepAlloc = std::function<std::byte*(int gpu, int64_t bytes)>;

// Builds the device's steps, their packed blocks from `alloc`.
DevicePlan build_device_plan(const Plan& plan, int gpu, CommMode mode, const EdgeKeys& keys, bool need_edge_keys,
                             const StepAlloc& alloc, RemoteAreas areas = RemoteAreas::one);
// The same for devices [first_gpu, first_gpu + count), their steps built
// side by side: the same bytes as one device at a time.
// `areas`: DevicePlan::remote_shift and the pull lists (p2p and full modes;
// the kept rows' lists know this process's devices as [first_gpu, + count)).
// `derived[i]` (when given) nonzero: device first_gpu + i derives its steps'
// topology (DeviceStep::derived; resident steps only).
std::vector<DevicePlan> build_device_plans(const Plan& plan, int first_gpu, int count, CommMode mode,
                                           const EdgeKeys& keys, bool need_edge_keys, const StepAlloc& alloc,
                                           RemoteAreas areas = RemoteAreas::one,
                                           const std::vector<uint8_t>& derived = {});

// Device::derive_topologies of one step on host memory (`d.topo` host
// pointers): the CPU executor's devices, and a GPU's fallback. Returns the
// transpose's segments.
int64_t derive_topology_on_host(const DeriveTopology& d, const EdgeKeys& v);
// What derive_topologies needs of a derived step whose block is at `at`.
DeriveTopology derivation_of(const DeviceStep& ds, DevArray<std::byte> at);

// What puts a step's packed bytes into its block at `at`: the block whole,
// or a derived step's packed part and src from the plan (DeviceStep::plan_src).
std::vector<ByteUpload> packed_copies(const DeviceStep& ds, DevArray<std::byte> at);
// A derived step's block in host memory as its device holds it before the
// derivation: the packed part and the plan's src at their places, the rest
// `fill` (the CPU executor's derivation and a GPU's fallback write it there).
std::vector<std::byte> host_block_of(const DeviceStep& ds, std::byte fill = {});
// The same with one allocator for every device.
inline DevicePlan build_device_plan(const Plan& plan, int gpu, CommMode mode, const EdgeKeys& keys,
                                    bool need_edge_keys, const std::function<std::byte*(int64_t)>& alloc,
                                    RemoteAreas areas = RemoteAreas::one) {
  return build_device_plan(
      plan, gpu, mode, keys, need_edge_keys, [&](int, int64_t n) { return alloc(n); }, areas);
}
inline std::vector<DevicePlan> build_device_plans(const Plan& plan, int first_gpu, int count, CommMode mode,
                                                  const EdgeKeys& keys, bool need_edge_keys,
                                                  const std::function<std::byte*(int64_t)>& alloc,
                                                  RemoteAreas areas = RemoteAreas::one) {
  return build_device_plans(
      plan, first_gpu, count, mode, keys, need_edge_keys, [&](int, int64_t n) { return alloc(n); }, areas);
}

// Marks each flushed row's first return over every device's steps, in the
// order returns are applied (batch by batch, devices in order), and, when
// every vertex is returned, reorders each step's packed flush lists (first returns first) and
// sets first_count and staged_vids. Returns false when some vertex of
// [held_begin, held_end) is never returned (its gradient row then needs a
// clear, and every return is added). `plans` are every device's, or in a
// multi-process job this process's, whose returns all fall in its held rows
// (checked: the p2p and full modes return only a device's own rows).
bool mark_first_flushes(std::vector<DevicePlan*> plans, int64_t num_vertices, int64_t held_begin, int64_t held_end);
inline bool mark_first_flushes(std::vector<DevicePlan*> plans, int64_t num_vertices) {
  return mark_first_flushes(std::move(plans), num_vertices, 0, num_vertices);
}

// After mark_first_flushes returned true: the gradient handoff between two
// backward passes. A vertex returned once in a pass, by its owner's last
// batch, is complete in the owner's gradient buffer when the pass ends; the
// next pass reads its own rows there. Reorders the last steps' first returns
// (handed-off rows last, `handoff_count`) and fills each plan's `handoff`.
void mark_handoff(std::vector<DevicePlan*> plans, int64_t num_vertices);

// Rows the step returns to host in `mode` (its flush list's length).
int64_t flush_count(const ChunkPlan& s, CommMode mode);

}  // namespace ht
