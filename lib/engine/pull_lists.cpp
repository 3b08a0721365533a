#include "engine/pull_lists.hpp"

#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.hpp"

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
namespace {

// Rows of one remote list by vertex, for the vertices of [lo, hi): a bit per
// vertex, the bits set before each 64-bit word, and per set bit (in vertex
// order) the row. A few bytes per vertex and per row, against a hash map's
// allocation per entry (an unordered_map of a step's remote rows took
// seconds per step at a billion edges).
class RowsByVertex {
 public:
  RowsByVertex(std::span<const vid_t> vids, int64_t lo, int64_t hi)
      : lo_(lo), bits_(static_cast<size_t>((hi - lo + 63) / 64), 0), before_(bits_.size() + 1, 0) {
    for (const vid_t v : vids)
      if (v >= lo && v < hi) bits_[(v - lo) >> 6] |= uint64_t{1} << ((v - lo) & 63);
    for (size_t w = 0; w < bits_.size(); ++w)
      before_[w + 1] = before_[w] + static_cast<uint32_t>(std::popcount(bits_[w]));
    row_.assign(before_.back(), 0);
    // Last row first: a vertex listed twice keeps its first row (as a map's emplace would).
    for (size_t q = vids.size(); q-- > 0;)
      if (vids[q] >= lo && vids[q] < hi) row_[rank(vids[q])] = static_cast<uint32_t>(q);
  }
  // The vertex's row, or -1 when it is not in the list (or outside [lo, hi)).
  int64_t operator()(vid_t v) const {
    const uint64_t x = static_cast<uint64_t>(int64_t{v} - lo_);
    if ((x >> 6) >= bits_.size() || !(bits_[x >> 6] >> (x & 63) & 1)) return -1;
    return row_[rank(v)];
  }

 private:
  size_t rank(vid_t v) const {
    const uint64_t x = static_cast<uint64_t>(int64_t{v} - lo_);
    const uint64_t below = bits_[x >> 6] & ((uint64_t{1} << (x & 63)) - 1);
    return before_[x >> 6] + static_cast<size_t>(std::popcount(below));
  }
  int64_t lo_;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> before_, row_;
};

}  // namespace

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
