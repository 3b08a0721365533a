#pragma once
// The row tier of the GPU cache: when a gathered store matrix does not fit in
// a device's memory whole, the rows the device loads most often do. The plan
// is static, so the count of each row's loads per gathering pass is known
// before training (the number of batches whose load list holds it); the tier
// takes the rows of the highest counts, and each load list splits into the
// rows read from the tier and the rows still read from the host.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/device_plan.hpp"

namespace ht {

struct TierRows {
  std::vector<uint32_t> vids;  // the cached vertices, ascending: tier slot k holds vids[k]
  int64_t hot_loads = 0;       // load-list entries they serve
  int64_t loads = 0;           // load-list entries of every vertex
};

// The `capacity` vertices of [eligible_begin, eligible_end) that appear in
// the most of `lists` (ties: the lower id first; a vertex no list holds is
// never taken).
TierRows hottest_rows(std::span<const std::span<const uint32_t>> lists, int64_t eligible_begin, int64_t eligible_end,
                      int64_t capacity);

// One load list (vertex vids[k] into buffer row rows[k]) split by the tier:
// hot_slots[k] / hot_rows[k] read from the tier, cold_vids / cold_rows from
// the host, both in the list's order. `pieces` are slices of the list
// (DeviceStep::load_by_producer); cold_pieces are the same pieces' slices of
// the cold lists.
struct TierSplit {
  std::vector<uint32_t> hot_slots, hot_rows, cold_vids, cold_rows;
  std::vector<Slice> cold_pieces;
};
TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows,
                      std::span<const uint32_t> tier_vids, std::span<const Slice> pieces);

// Tier slot of each vertex of [base, base + slot.size()) (-1: not in the
// tier): one look-up per load-list entry instead of a binary search (the
// lists of a billion-edge graph hold hundreds of millions of entries).
struct TierIndex {
  int64_t base = 0;
  std::vector<int32_t> slot;
  static TierIndex of(std::span<const uint32_t> tier_vids);  // tier_vids ascending
  int64_t operator()(uint32_t v) const {
    const int64_t i = static_cast<int64_t>(v) - base;
    return i >= 0 && i < static_cast<int64_t>(slot.size()) ? slot[static_cast<size_t>(i)] : -1;
  }
};
TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows, const TierIndex& index,
                      std::span<const Slice> pieces);

// A step's flush list with the tier's rows moved behind the others in each of
// its two parts (Trainer::setup_tier_returns): first returns as [others]
// [tier rows][handed-off rows], later returns as [others][tier rows], each
// part in its order, staged_vids to match; sets the step's tier_first and
// tier_staged. Returns the moved entries' tier slots (first returns', then
// later returns'). A handed-off row may not be a tier row (checked). A
// vertex is returned at most once per step, so no row's sum changes order.
std::vector<uint32_t> split_tier_returns(DeviceStep& s, const TierIndex& index);

// The tier slots of the vertices [v0, v1) (one batch's own rows, whose
// outputs the batch writes): their first slot, and their rows local to v0.
struct TierOwnRows {
  int64_t slot0 = 0;
  std::vector<uint32_t> local_rows;
};
TierOwnRows own_tier_rows(std::span<const uint32_t> tier_vids, int64_t v0, int64_t v1);

}  // namespace ht
