#include "engine/row_tier.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ht {

TierRows hottest_rows(std::span<const std::span<const uint32_t>> lists, int64_t eligible_begin, int64_t eligible_end,
                      int64_t capacity) {
  HT_CHECK(eligible_begin >= 0 && eligible_begin <= eligible_end, "bad tier range [{}, {})", eligible_begin,
           eligible_end);
  TierRows out;
  std::vector<uint32_t> count(static_cast<size_t>(eligible_end - eligible_begin), 0);
  for (std::span<const uint32_t> list : lists)
    for (uint32_t v : list) {
      ++out.loads;
      if (v >= eligible_begin && v < eligible_end) ++count[v - eligible_begin];
    }
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

namespace {

// Tier slot of vertex v, or -1.
int64_t slot_of(std::span<const uint32_t> tier_vids, uint32_t v) {
  const auto it = std::lower_bound(tier_vids.begin(), tier_vids.end(), v);
  return it != tier_vids.end() && *it == v ? it - tier_vids.begin() : -1;
}

}  // namespace

TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows,
                      std::span<const uint32_t> tier_vids, std::span<const Slice> pieces) {
  HT_CHECK(vids.size() == rows.size(), "{} load vertices for {} buffer rows", vids.size(), rows.size());
  TierSplit out;
  std::vector<int64_t> cold_before(vids.size() + 1, 0);  // cold entries before list position k
  for (size_t k = 0; k < vids.size(); ++k) {
    const int64_t slot = slot_of(tier_vids, vids[k]);
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

TierOwnRows own_tier_rows(std::span<const uint32_t> tier_vids, int64_t v0, int64_t v1) {
  TierOwnRows out;
  const auto b = std::lower_bound(tier_vids.begin(), tier_vids.end(), static_cast<uint64_t>(v0),
                                  [](uint32_t a, uint64_t x) { return a < x; });
  out.slot0 = b - tier_vids.begin();
  for (auto it = b; it != tier_vids.end() && *it < v1; ++it) out.local_rows.push_back(static_cast<uint32_t>(*it - v0));
  return out;
}

}  // namespace ht
