#include "engine/pull_lists.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {

int64_t* PullScratch::clean_where(int64_t n) {
  int64_t* w = where.take_raw(n);
  if (where.grown()) where_clean = 0;
  if (n > where_clean) {
    parallel_blocks(n - where_clean, [&](int64_t b, int64_t e) { std::fill(w + where_clean + b, w + where_clean + e, -2); });
    where_clean = n;
  }
  return w;
}

// Early pulls of device `gpu`'s step j (DeviceStep::pull_src): each peer
// range's rows sorted into those its owner keeps in place from its previous
// step (sources: the owner's merged-buffer slots) and those it reads ahead
// (sources: their rows in its read-ahead buffer, the order of its load list).
void early_pull_lists(const Plan& plan, int j, const ChunkPlan& s, CommMode mode, std::vector<PeerRange>& peers,
                      PullScratch& ws) {
  PullLists& out = ws.lists;
  out.clear();
  out.src.reserve(s.remote_slot.size());
  out.dst.reserve(s.remote_slot.size());
  for (PeerRange& r : peers) {
    const ChunkPlan& o = plan.step(j, r.peer);
    // Owner slot -> its load-list row, or -1: kept in place; -2: not in its
    // step. Every slot the owner's step sets is put back to -2 below (no
    // fill of the owner's whole capacity per range).
    const int64_t capacity = plan.trans_capacity[r.peer];
    int64_t* where = ws.clean_where(capacity);
    int64_t k = 0;
    for (size_t t = 0; t < o.trans_slot.size(); ++t)
      where[o.trans_slot[t]] = mode == CommMode::full && o.trans_reused[t] ? -1 : k++;
    int64_t missing = -1;  // the first remote row whose slot is not in the owner's step
    for (int pass = 0; pass < 2 && missing < 0; ++pass) {  // kept rows first, then read-ahead rows
      for (int64_t i = r.begin; i < r.begin + r.count; ++i) {
        const int64_t w = s.remote_slot[i] < capacity ? where[s.remote_slot[i]] : -2;
        if (w == -2) {
          missing = i;
          break;
        }
        if ((w == -1) != (pass == 0)) continue;
        out.src.push_back(static_cast<uint32_t>(w == -1 ? s.remote_slot[i] : w));
        out.dst.push_back(static_cast<uint32_t>(i - r.begin));
      }
      if (pass == 0) r.kept = static_cast<int64_t>(out.src.size()) - r.begin;
    }
    for (const uint32_t slot : o.trans_slot) where[slot] = -2;
    HT_CHECK(missing < 0, "plan step ({}, {}): remote row {} reads slot {} of GPU {}, not in its step", s.part,
             s.chunk, missing, missing < 0 ? 0 : s.remote_slot[missing], r.peer);
  }
}

// Kept remote rows of device `gpu`'s step j > 0 (RemoteAreas::kept_rows): the
// rows its step j - 1 read too, local copies between the two areas, then per
// range the rest, to pull (from another process's device: to receive).
void kept_remote_lists(const Plan& plan, int j, int gpu, const DevicePlan& dp, std::vector<PeerRange>& peers,
                       int64_t& kept, PullScratch& ws) {
  const ChunkPlan& s = plan.step(j, gpu);
  const ChunkPlan& prev = plan.step(j - 1, gpu);
  // Vertex -> its row in the previous step's remote list.
  ws.prev_rows.assign(prev.remote_vid, plan.part_offsets.front(), plan.part_offsets.back());
  const int64_t base = dp.remote_base(j), prev_base = dp.remote_base(j - 1);
  PullLists& out = ws.lists;
  out.clear();
  out.src.reserve(s.remote_vid.size());
  out.dst.reserve(s.remote_vid.size());
  // Each remote row's row in the previous step (-1: none), looked up by the
  // step's threads (random reads of the map, the step's longest loop).
  const int64_t rows = static_cast<int64_t>(s.remote_vid.size());
  int64_t* found = ws.found.take(rows);
  parallel_blocks(rows, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) found[i] = ws.prev_rows(s.remote_vid[i]);
  });
  auto in_ranges = [&](auto visit) {
    for (const PeerRange& r : peers)
      for (int64_t i = r.begin; i < r.begin + r.count; ++i) visit(i);
  };
  in_ranges([&](int64_t i) {
    if (found[i] < 0) return;
    out.src.push_back(static_cast<uint32_t>(prev_base + found[i]));
    out.dst.push_back(static_cast<uint32_t>(base + i));
  });
  kept = static_cast<int64_t>(out.src.size());
  for (PeerRange& r : peers) {
    r.fresh_begin = static_cast<int64_t>(out.src.size());
    for (int64_t i = r.begin; i < r.begin + r.count; ++i) {
      if (found[i] >= 0) continue;
      out.src.push_back(s.remote_slot[i]);
      out.dst.push_back(static_cast<uint32_t>(base + i));
    }
    r.fresh_count = static_cast<int64_t>(out.src.size()) - r.fresh_begin;
  }
}

}  // namespace ht
