#pragma once
// The plan as one device sees it: for each batch, the chunk topology in the
// comm mode's index space, the rows to load from host, the remote rows per
// peer, and the gradient flush lists, uploaded once at setup.
#include <vector>

#include "engine/executor.hpp"
#include "plan/plan.hpp"

namespace ht {

// Edge-level data that does not depend on the mode.
struct EdgeKeys {
  std::span<const float> inv_sqrt_deg;  // GCN normalization per new id (empty for GAT)
  std::span<const int64_t> orig_id;     // new id -> graph file id (dropout keys)
};

// Host-side topology of one step before upload.
struct HostTopology {
  int64_t num_dst = 0, num_src_rows = 0;
  std::vector<int64_t> offsets;
  std::vector<uint32_t> src, dst_row, t_edge, edge_dst;
  std::vector<int64_t> t_offsets, src_key, dst_key;
  std::vector<float> weight;
};

// Builds the topology of `step` reading rows of the baseline neighbor buffer
// (src_local) or of the merged buffer (src_merged).
HostTopology make_topology(const ChunkPlan& step, CommMode mode, int64_t num_src_rows, const EdgeKeys& keys);
DevTopology upload_topology(Device& dev, const HostTopology& t);

struct PeerRange {
  int peer = 0;
  int64_t begin = 0, count = 0;  // rows [begin, begin + count) of the remote list
};

struct DeviceStep {
  const ChunkPlan* plan = nullptr;
  DevTopology topo;
  DevIdx load_vids, load_rows;    // host rows -> buffer rows (transition slots or baseline rows)
  DevIdx remote_slots;            // peer slot of each remote row (full list)
  std::vector<PeerRange> peers;   // per-peer ranges of the remote list
  DevIdx flush_rows, flush_vids;  // buffer rows whose gradient goes to host after this batch
  std::span<const vid_t> flush_vids_host;  // the same vertex ids, in the plan (host memory)
  int64_t reused_rows = 0;        // rows kept in place (full mode)
};

struct DevicePlan {
  std::vector<DeviceStep> steps;  // by batch
  int64_t buffer_rows = 0;        // rows of the data/gradient buffer (merged or baseline)
  int64_t trans_capacity = 0;
};

DevicePlan upload_device_plan(Device& dev, const Plan& plan, int gpu, CommMode mode, const EdgeKeys& keys,
                              bool need_edge_keys);

}  // namespace ht
