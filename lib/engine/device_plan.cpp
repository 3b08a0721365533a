#include "engine/device_plan.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"

namespace ht {

HostTopology make_topology(const ChunkPlan& s, CommMode mode, int64_t num_src_rows, const EdgeKeys& keys) {
  HostTopology t;
  const int64_t nd = s.num_dst(), ne = s.num_edges();
  t.num_dst = nd;
  t.num_src_rows = num_src_rows;
  t.offsets = s.offsets;
  const auto& src = mode == CommMode::baseline ? s.src_local : s.src_merged;
  HT_CHECK(static_cast<int64_t>(src.size()) == ne, "plan step ({}, {}) has inconsistent topology arrays", s.part,
           s.chunk);
  t.src.assign(src.begin(), src.end());
  t.dst_row.assign(nd, UINT32_MAX);
  t.edge_dst.resize(ne);
  for (int64_t d = 0; d < nd; ++d) {
    const vid_t v = static_cast<vid_t>(s.dst_begin + d);
    for (int64_t e = s.offsets[d]; e < s.offsets[d + 1]; ++e) {
      t.edge_dst[e] = static_cast<uint32_t>(d);
      if (s.src_vid[e] == v) t.dst_row[d] = t.src[e];  // the self-loop reads the destination's own row
    }
    HT_CHECK(t.dst_row[d] != UINT32_MAX, "plan step ({}, {}): destination {} has no self-loop", s.part, s.chunk, v);
  }
  if (!keys.inv_sqrt_deg.empty()) {
    t.weight.resize(ne);
    for (int64_t d = 0; d < nd; ++d)
      for (int64_t e = s.offsets[d]; e < s.offsets[d + 1]; ++e)
        t.weight[e] = keys.inv_sqrt_deg[s.src_vid[e]] * keys.inv_sqrt_deg[s.dst_begin + d];
  }
  if (!keys.orig_id.empty()) {
    t.src_key.resize(ne);
    t.dst_key.resize(ne);
    for (int64_t e = 0; e < ne; ++e) {
      t.src_key[e] = keys.orig_id[s.src_vid[e]];
      t.dst_key[e] = keys.orig_id[s.dst_begin + t.edge_dst[e]];
    }
  }
  // Transpose: counting sort of edges by source row (stable: ascending edge id).
  t.t_offsets.assign(num_src_rows + 1, 0);
  for (int64_t e = 0; e < ne; ++e) {
    HT_CHECK(t.src[e] < num_src_rows, "plan step ({}, {}): edge reads row {} beyond the buffer ({} rows)", s.part,
             s.chunk, t.src[e], num_src_rows);
    ++t.t_offsets[t.src[e] + 1];
  }
  std::partial_sum(t.t_offsets.begin(), t.t_offsets.end(), t.t_offsets.begin());
  t.t_edge.resize(ne);
  std::vector<int64_t> pos(t.t_offsets.begin(), t.t_offsets.end() - 1);
  for (int64_t e = 0; e < ne; ++e) t.t_edge[pos[t.src[e]]++] = static_cast<uint32_t>(e);
  return t;
}

DevTopology upload_topology(Device& dev, const HostTopology& t) {
  DevTopology d;
  d.num_dst = t.num_dst;
  d.num_edges = static_cast<int64_t>(t.src.size());
  d.num_src_rows = t.num_src_rows;
  d.offsets = dev.upload(std::span<const int64_t>(t.offsets));
  d.src = dev.upload(std::span<const uint32_t>(t.src));
  if (!t.weight.empty()) d.weight = dev.upload(std::span<const float>(t.weight));
  d.dst_row = dev.upload(std::span<const uint32_t>(t.dst_row));
  d.t_offsets = dev.upload(std::span<const int64_t>(t.t_offsets));
  d.t_edge = dev.upload(std::span<const uint32_t>(t.t_edge));
  d.edge_dst = dev.upload(std::span<const uint32_t>(t.edge_dst));
  if (!t.src_key.empty()) {
    d.edge_src_key = dev.upload(std::span<const int64_t>(t.src_key));
    d.edge_dst_key = dev.upload(std::span<const int64_t>(t.dst_key));
  }
  return d;
}

namespace {

std::vector<PeerRange> peer_ranges(const ChunkPlan& s) {
  std::vector<PeerRange> out;
  for (int64_t r = 0; r < static_cast<int64_t>(s.remote_gpu.size()); ++r) {
    if (out.empty() || out.back().peer != s.remote_gpu[r]) out.push_back({s.remote_gpu[r], r, 0});
    ++out.back().count;
  }
  return out;
}

}  // namespace

DevicePlan upload_device_plan(Device& dev, const Plan& plan, int gpu, CommMode mode, const EdgeKeys& keys,
                              bool need_edge_keys) {
  DevicePlan dp;
  dp.trans_capacity = plan.trans_capacity[gpu];
  dp.buffer_rows = mode == CommMode::baseline ? plan.nbr_capacity[gpu] : plan.merged_capacity(gpu);
  EdgeKeys k = keys;
  if (!need_edge_keys) k.orig_id = {};
  for (int j = 0; j < plan.n; ++j) {
    const ChunkPlan& s = plan.step(j, gpu);
    DeviceStep ds;
    ds.plan = &s;
    ds.topo = upload_topology(dev, make_topology(s, mode, dp.buffer_rows, k));
    std::vector<uint32_t> vids, rows;
    if (mode == CommMode::baseline) {
      vids.assign(s.nbr.begin(), s.nbr.end());
      rows.resize(vids.size());
      std::iota(rows.begin(), rows.end(), 0u);
      ds.flush_rows = dev.upload(std::span<const uint32_t>(rows));
      ds.flush_vids = dev.upload(std::span<const uint32_t>(vids));
      ds.flush_vids_host = s.nbr;
    } else {
      for (size_t t = 0; t < s.trans_vid.size(); ++t) {
        if (mode == CommMode::full && s.trans_reused[t]) {
          ++ds.reused_rows;
          continue;
        }
        vids.push_back(s.trans_vid[t]);
        rows.push_back(s.trans_slot[t]);
      }
      ds.remote_slots = dev.upload(std::span<const uint32_t>(s.remote_slot));
      ds.peers = peer_ranges(s);
      if (mode == CommMode::full) {
        ds.flush_rows = dev.upload(std::span<const uint32_t>(s.flush_slot));
        ds.flush_vids = dev.upload(std::span<const uint32_t>(s.flush_vid));
        ds.flush_vids_host = s.flush_vid;
      } else {
        ds.flush_rows = dev.upload(std::span<const uint32_t>(s.trans_slot));
        ds.flush_vids = dev.upload(std::span<const uint32_t>(s.trans_vid));
        ds.flush_vids_host = s.trans_vid;
      }
    }
    ds.load_vids = dev.upload(std::span<const uint32_t>(vids));
    ds.load_rows = dev.upload(std::span<const uint32_t>(rows));
    dp.steps.push_back(std::move(ds));
  }
  return dp;
}

}  // namespace ht
