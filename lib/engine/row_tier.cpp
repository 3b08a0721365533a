#include "engine/row_tier.hpp"

#include <algorithm>
#include <atomic>

#include "core/error.hpp"

namespace ht {

TierRows hottest_rows(std::span<const std::span<const uint32_t>> lists, int64_t eligible_begin, int64_t eligible_end,
                      int64_t capacity) {
  HT_CHECK(eligible_begin >= 0 && eligible_begin <= eligible_end, "bad tier range [{}, {})", eligible_begin,
           eligible_end);
  TierRows out;
  std::vector<uint32_t> count(static_cast<size_t>(eligible_end - eligible_begin), 0);
  int64_t loads = 0;
  const int64_t num_lists = static_cast<int64_t>(lists.size());
  // A list's entries are distinct, lists share vertices: counts by atomic adds (sums: any order).
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : loads)
  for (int64_t l = 0; l < num_lists; ++l)
    for (uint32_t v : lists[static_cast<size_t>(l)]) {
      ++loads;
      if (v >= eligible_begin && v < eligible_end)
        std::atomic_ref<uint32_t>(count[v - eligible_begin]).fetch_add(1, std::memory_order_relaxed);
    }
  out.loads = loads;
  std::vector<uint32_t> loaded;
  for (size_t i = 0; i < count.size(); ++i)
    if (count[i] > 0) loaded.push_back(static_cast<uint32_t>(eligible_begin + static_cast<int64_t>(i)));
  const auto hotter = [&](uint32_t a, uint32_t b) {
    const uint32_t ca = count[a - eligible_begin], cb = count[b - eligible_begin];
    return ca != cb ? ca > cb : a < b;
  };
  const size_t keep = static_cast<size_t>(std::clamp<int64_t>(capacity, 0, static_cast<int64_t>(loaded.size())));
  std::nth_element(loaded.begin(), loaded.begin() + static_cast<std::ptrdiff_t>(keep), loaded.end(), hotter);
  loaded.resize(keep);
  std::sort(loaded.begin(), loaded.end());
  for (uint32_t v : loaded) out.hot_loads += count[v - eligible_begin];
  out.vids = std::move(loaded);
  return out;
}

TierIndex TierIndex::of(std::span<const uint32_t> tier_vids) {
  TierIndex x;
  if (tier_vids.empty()) return x;
  HT_CHECK(std::is_sorted(tier_vids.begin(), tier_vids.end()), "tier vertices not ascending");
  x.base = tier_vids.front();
  x.slot.assign(static_cast<size_t>(tier_vids.back() - tier_vids.front() + 1), -1);
  for (size_t k = 0; k < tier_vids.size(); ++k) x.slot[tier_vids[k] - x.base] = static_cast<int32_t>(k);
  return x;
}

TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows,
                      std::span<const uint32_t> tier_vids, std::span<const Slice> pieces) {
  return split_loads(vids, rows, TierIndex::of(tier_vids), pieces);
}

TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows, const TierIndex& index,
                      std::span<const Slice> pieces) {
  HT_CHECK(vids.size() == rows.size(), "{} load vertices for {} buffer rows", vids.size(), rows.size());
  TierSplit out;
  std::vector<int64_t> cold_before(vids.size() + 1, 0);  // cold entries before list position k
  for (size_t k = 0; k < vids.size(); ++k) {
    const int64_t slot = index(vids[k]);
    if (slot >= 0) {
      out.hot_slots.push_back(static_cast<uint32_t>(slot));
      out.hot_rows.push_back(rows[k]);
    } else {
      out.cold_vids.push_back(vids[k]);
      out.cold_rows.push_back(rows[k]);
    }
    cold_before[k + 1] = static_cast<int64_t>(out.cold_vids.size());
  }
  for (const Slice& p : pieces) {
    HT_CHECK(p.offset >= 0 && p.count >= 0 && p.offset + p.count <= static_cast<int64_t>(vids.size()),
             "load piece [{}, +{}) outside a list of {}", p.offset, p.count, vids.size());
    const int64_t b = cold_before[p.offset];
    out.cold_pieces.push_back({b, cold_before[p.offset + p.count] - b});
  }
  return out;
}

std::vector<uint32_t> split_tier_returns(DeviceStep& s, const TierIndex& index) {
  auto* rows = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_rows.offset);
  auto* vids = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_vids.offset);
  const int64_t n = s.flush_rows.count, first = s.first_count, handed = s.handoff_count;
  HT_CHECK(handed <= first && first <= n && s.flush_vids.count == n, "bad flush list layout");
  std::vector<uint32_t> r, v, slots;
  r.reserve(static_cast<size_t>(n));
  v.reserve(static_cast<size_t>(n));
  // Entries [b, e) whose tier slot is (hot) or is not (cold) there, in order.
  auto take = [&](int64_t b, int64_t e, bool hot) {
    int64_t taken = 0;
    for (int64_t k = b; k < e; ++k) {
      const int64_t slot = index(vids[k]);
      if ((slot >= 0) != hot) continue;
      r.push_back(rows[k]);
      v.push_back(vids[k]);
      if (hot) slots.push_back(static_cast<uint32_t>(slot));
      ++taken;
    }
    return taken;
  };
  take(0, first - handed, false);
  s.tier_first = take(0, first - handed, true);
  HT_CHECK(take(first - handed, first, true) == 0, "a handed-off row is in the GPU cache's row tier");
  take(first - handed, first, false);
  take(first, n, false);
  s.tier_staged = take(first, n, true);
  std::copy(r.begin(), r.end(), rows);
  std::copy(v.begin(), v.end(), vids);
  s.staged_vids.assign(v.begin() + first, v.end());
  return slots;
}

TierOwnRows own_tier_rows(std::span<const uint32_t> tier_vids, int64_t v0, int64_t v1) {
  TierOwnRows out;
  const auto b = std::lower_bound(tier_vids.begin(), tier_vids.end(), static_cast<uint64_t>(v0),
                                  [](uint32_t a, uint64_t x) { return a < x; });
  out.slot0 = b - tier_vids.begin();
  for (auto it = b; it != tier_vids.end() && *it < v1; ++it) out.local_rows.push_back(static_cast<uint32_t>(*it - v0));
  return out;
}

}  // namespace ht
