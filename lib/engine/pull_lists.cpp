#include "engine/pull_lists.hpp"

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "engine/rows_by_vertex.hpp"

namespace ht {

// Early pulls of device `gpu`'s step j (DeviceStep::pull_src): each peer
// range's rows sorted into those its owner keeps in place from its previous
// step (sources: the owner's merged-buffer slots) and those it reads ahead
// (sources: their rows in its read-ahead buffer, the order of its load list).
PullLists early_pull_lists(const Plan& plan, int j, const ChunkPlan& s, CommMode mode, std::vector<PeerRange>& peers) {
  PullLists out;
  out.src.reserve(s.remote_slot.size());
  out.dst.reserve(s.remote_slot.size());
  std::vector<int64_t> where;  // owner slot -> its load-list row, or -1: kept in place
  for (PeerRange& r : peers) {
    const ChunkPlan& o = plan.step(j, r.peer);
    where.assign(plan.trans_capacity[r.peer], -2);
    int64_t k = 0;
    for (size_t t = 0; t < o.trans_slot.size(); ++t)
      where[o.trans_slot[t]] = mode == CommMode::full && o.trans_reused[t] ? -1 : k++;
    for (int pass = 0; pass < 2; ++pass) {  // kept rows first, then read-ahead rows
      for (int64_t i = r.begin; i < r.begin + r.count; ++i) {
        const int64_t w = where[s.remote_slot[i]];
        HT_CHECK(w != -2, "plan step ({}, {}): remote row {} reads slot {} of GPU {}, not in its step", s.part,
                 s.chunk, i, s.remote_slot[i], r.peer);
        if ((w == -1) != (pass == 0)) continue;
        out.src.push_back(static_cast<uint32_t>(w == -1 ? s.remote_slot[i] : w));
        out.dst.push_back(static_cast<uint32_t>(i - r.begin));
      }
      if (pass == 0) r.kept = static_cast<int64_t>(out.src.size()) - r.begin;
    }
  }
  return out;
}

// Kept remote rows of device `gpu`'s step j > 0 (RemoteAreas::kept_rows): the
// rows its step j - 1 read too, local copies between the two areas, then per
// range the rest, to pull (from another process's device: to receive).
PullLists kept_remote_lists(const Plan& plan, int j, int gpu, const DevicePlan& dp, std::vector<PeerRange>& peers,
                            int64_t& kept) {
  const ChunkPlan& s = plan.step(j, gpu);
  const ChunkPlan& prev = plan.step(j - 1, gpu);
  // Vertex -> its row in the previous step's remote list.
  const RowsByVertex where(prev.remote_vid, plan.part_offsets.front(), plan.part_offsets.back());
  const int64_t base = dp.remote_base(j), prev_base = dp.remote_base(j - 1);
  PullLists out;
  std::vector<bool> copied(s.remote_vid.size(), false);  // found in the previous step
  for (const PeerRange& r : peers) {
    for (int64_t i = r.begin; i < r.begin + r.count; ++i)
      if (const int64_t q = where(s.remote_vid[i]); q >= 0) {
        copied[static_cast<size_t>(i)] = true;
        out.src.push_back(static_cast<uint32_t>(prev_base + q));
        out.dst.push_back(static_cast<uint32_t>(base + i));
      }
  }
  kept = static_cast<int64_t>(out.src.size());
  for (PeerRange& r : peers) {
    r.fresh_begin = static_cast<int64_t>(out.src.size());
    for (int64_t i = r.begin; i < r.begin + r.count; ++i) {
      if (copied[static_cast<size_t>(i)]) continue;
      out.src.push_back(s.remote_slot[i]);
      out.dst.push_back(static_cast<uint32_t>(base + i));
    }
    r.fresh_count = static_cast<int64_t>(out.src.size()) - r.fresh_begin;
  }
  return out;
}

}  // namespace ht
