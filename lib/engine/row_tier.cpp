#include "engine/row_tier.hpp"

#include <algorithm>
#include <atomic>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {

namespace {

// The parallel passes below cut their ranges into blocks of this many
// entries (tests shrink it: ScopedBulkTuning) and keep every list's order:
// a count per block, the counts' prefix, then each block writes from its
// start. The same positions as one pass in order, whatever the threads.
int64_t grain() { return static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1)); }
int64_t blocks_of(int64_t n) { return (n + grain() - 1) / grain(); }

// Hot entries (slot_of(k) >= 0) of [b, e) before each block: blocks + 1 sums.
template <typename SlotOf>
std::vector<int64_t> hot_before_blocks(int64_t b, int64_t e, SlotOf slot_of) {
  const int64_t g = grain(), blocks = blocks_of(e - b);
  std::vector<int64_t> before(static_cast<size_t>(blocks) + 1, 0);
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (int64_t q = 0; q < blocks; ++q) {
    int64_t c = 0;
    for (int64_t k = b + q * g, k1 = std::min(e, k + g); k < k1; ++k) c += slot_of(k) >= 0 ? 1 : 0;
    before[static_cast<size_t>(q) + 1] = c;
  }
  for (int64_t q = 0; q < blocks; ++q) before[static_cast<size_t>(q) + 1] += before[static_cast<size_t>(q)];
  return before;
}

// Every k of [b, e), in order, as emit(k, i, slot): the i-th hot entry of
// the range (slot >= 0) or the i-th cold one (slot < 0); `before` from
// hot_before_blocks over the same range.
template <typename SlotOf, typename Emit>
void split_in_order(int64_t b, int64_t e, const std::vector<int64_t>& before, SlotOf slot_of, Emit emit) {
  const int64_t g = grain(), blocks = blocks_of(e - b);
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (int64_t q = 0; q < blocks; ++q) {
    int64_t hot = before[static_cast<size_t>(q)], cold = q * g - hot;
    for (int64_t k = b + q * g, k1 = std::min(e, k + g); k < k1; ++k) {
      const int64_t slot = slot_of(k);
      emit(k, slot >= 0 ? hot++ : cold++, slot);
    }
  }
}

}  // namespace

TierRows hottest_rows(std::span<const std::span<const uint32_t>> lists, int64_t eligible_begin, int64_t eligible_end,
                      int64_t capacity) {
  HT_CHECK(eligible_begin >= 0 && eligible_begin <= eligible_end, "bad tier range [{}, {})", eligible_begin,
           eligible_end);
  TierRows out;
  const int64_t range = eligible_end - eligible_begin, g = grain();
  std::vector<uint32_t> count;
  resize_for_overwrite(count, static_cast<size_t>(range));  // (zeros)
  // A list's entries are distinct, lists share vertices: counts by atomic
  // adds (sums: any order), over blocks of every list (one list per task
  // left most cores idle: a device has a few lists of tens of millions).
  std::vector<std::pair<size_t, int64_t>> pieces;  // (list, first entry)
  for (size_t l = 0; l < lists.size(); ++l) {
    out.loads += static_cast<int64_t>(lists[l].size());
    for (int64_t k = 0; k < static_cast<int64_t>(lists[l].size()); k += g) pieces.push_back({l, k});
  }
  const int64_t num_pieces = static_cast<int64_t>(pieces.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t p = 0; p < num_pieces; ++p) {
    const auto [l, k0] = pieces[static_cast<size_t>(p)];
    const std::span<const uint32_t> list = lists[l];
    for (size_t k = static_cast<size_t>(k0), k1 = std::min(list.size(), static_cast<size_t>(k0 + g)); k < k1; ++k) {
      const uint32_t v = list[k];
      if (v >= eligible_begin && v < eligible_end)
        std::atomic_ref<uint32_t>(count[v - eligible_begin]).fetch_add(1, std::memory_order_relaxed);
    }
  }
  // The `keep` hottest rows, ascending (count descending, ties to the lower
  // id; counts are small): every row of a count above
  // `last`, the last taken row's count, and the first `ties` rows of count
  // `last` in id order. (Was nth_element and a sort on one thread.)
  uint32_t highest = 0;
#pragma omp parallel for schedule(static) reduction(max : highest)
  for (int64_t i = 0; i < range; ++i) highest = std::max(highest, count[static_cast<size_t>(i)]);
  const size_t most = highest;
  std::vector<int64_t> rows_of(most + 1, 0);  // rows per count
#pragma omp parallel
  {
    std::vector<int64_t> mine(most + 1, 0);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < range; ++i) ++mine[count[static_cast<size_t>(i)]];
#pragma omp critical(ht_hottest_rows)
    for (size_t c = 0; c <= most; ++c) rows_of[c] += mine[c];
  }
  int64_t loaded = 0;
  for (size_t c = 1; c <= most; ++c) loaded += rows_of[c];
  const int64_t keep = std::clamp<int64_t>(capacity, 0, loaded);
  if (keep == 0) return out;
  size_t last = most;
  int64_t above = 0;  // rows of counts above `last`
  while (above + rows_of[last] < keep) above += rows_of[last--];
  const int64_t ties = keep - above;
  // Ties first (their ranks decide which are taken), then the taken rows in order.
  auto tie = [&](int64_t i) -> int64_t { return count[static_cast<size_t>(i)] == last ? 0 : -1; };
  const std::vector<int64_t> ties_before = hot_before_blocks(0, range, tie);
  std::vector<uint8_t> taken;
  resize_for_overwrite(taken, static_cast<size_t>(range));
  split_in_order(0, range, ties_before, tie, [&](int64_t i, int64_t rank, int64_t slot) {
    taken[static_cast<size_t>(i)] = count[static_cast<size_t>(i)] > last || (slot >= 0 && rank < ties) ? 1 : 0;
  });
  auto take = [&](int64_t i) -> int64_t { return taken[static_cast<size_t>(i)] ? 0 : -1; };
  const std::vector<int64_t> taken_before = hot_before_blocks(0, range, take);
  HT_ASSERT(taken_before.back() == keep);
  resize_for_overwrite(out.vids, static_cast<size_t>(keep));
  split_in_order(0, range, taken_before, take, [&](int64_t i, int64_t rank, int64_t slot) {
    if (slot >= 0) out.vids[static_cast<size_t>(rank)] = static_cast<uint32_t>(eligible_begin + i);
  });
  int64_t hot = 0;
#pragma omp parallel for schedule(static) reduction(+ : hot)
  for (int64_t k = 0; k < keep; ++k) hot += count[out.vids[static_cast<size_t>(k)] - eligible_begin];
  out.hot_loads = hot;
  return out;
}

TierIndex TierIndex::of(std::span<const uint32_t> tier_vids) {
  TierIndex x;
  if (tier_vids.empty()) return x;
  const int64_t n = static_cast<int64_t>(tier_vids.size());
  HT_CHECK(first_bad(n - 1, [&](int64_t k) { return tier_vids[k] > tier_vids[k + 1]; }) < 0,
           "tier vertices not ascending");
  x.base = tier_vids.front();
  const int64_t span = tier_vids.back() - tier_vids.front() + 1;
  resize_for_overwrite(x.slot, static_cast<size_t>(span));
  parallel_blocks(span, [&](int64_t b, int64_t e) { std::fill(x.slot.begin() + b, x.slot.begin() + e, -1); });
  parallel_blocks(n, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) x.slot[tier_vids[k] - x.base] = static_cast<int32_t>(k);
  });
  return x;
}

TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows,
                      std::span<const uint32_t> tier_vids, std::span<const Slice> pieces) {
  return split_loads(vids, rows, TierIndex::of(tier_vids), pieces);
}

TierSplit split_loads(std::span<const uint32_t> vids, std::span<const uint32_t> rows, const TierIndex& index,
                      std::span<const Slice> pieces) {
  HT_CHECK(vids.size() == rows.size(), "{} load vertices for {} buffer rows", vids.size(), rows.size());
  const int64_t n = static_cast<int64_t>(vids.size());
  for (const Slice& p : pieces)
    HT_CHECK(p.offset >= 0 && p.count >= 0 && p.offset + p.count <= n, "load piece [{}, +{}) outside a list of {}",
             p.offset, p.count, n);
  // Blocks in parallel: at a billion edges a device's lists hold hundreds of
  // millions of entries.
  auto slot_of = [&](int64_t k) { return index(vids[k]); };
  const std::vector<int64_t> before = hot_before_blocks(0, n, slot_of);
  const int64_t hot = before.back();
  TierSplit out;
  resize_for_overwrite(out.hot_slots, static_cast<size_t>(hot));
  resize_for_overwrite(out.hot_rows, static_cast<size_t>(hot));
  resize_for_overwrite(out.cold_vids, static_cast<size_t>(n - hot));
  resize_for_overwrite(out.cold_rows, static_cast<size_t>(n - hot));
  split_in_order(0, n, before, slot_of, [&](int64_t k, int64_t i, int64_t slot) {
    if (slot >= 0) {
      out.hot_slots[static_cast<size_t>(i)] = static_cast<uint32_t>(slot);
      out.hot_rows[static_cast<size_t>(i)] = rows[k];
    } else {
      out.cold_vids[static_cast<size_t>(i)] = vids[k];
      out.cold_rows[static_cast<size_t>(i)] = rows[k];
    }
  });
  auto cold_before = [&](int64_t p) {  // cold entries before list position p
    const int64_t q = p / grain();
    int64_t hot_before = before[static_cast<size_t>(q)];
    for (int64_t k = q * grain(); k < p; ++k) hot_before += slot_of(k) >= 0 ? 1 : 0;
    return p - hot_before;
  };
  for (const Slice& p : pieces) {
    const int64_t b = cold_before(p.offset);
    out.cold_pieces.push_back({b, cold_before(p.offset + p.count) - b});
  }
  return out;
}

std::vector<uint32_t> split_tier_returns(DeviceStep& s, const TierIndex& index) {
  auto* rows = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_rows.offset);
  auto* vids = reinterpret_cast<uint32_t*>(s.bytes.data() + s.flush_vids.offset);
  const int64_t n = s.flush_rows.count, first = s.first_count, handed = s.handoff_count;
  HT_CHECK(handed <= first && first <= n && s.flush_vids.count == n, "bad flush list layout");
  auto slot_of = [&](int64_t k) { return index(vids[k]); };
  HT_CHECK(first_bad(handed, [&](int64_t k) { return slot_of(first - handed + k) >= 0; }) < 0,
           "a handed-off row is in the GPU cache's row tier");
  std::vector<uint32_t> r, v;
  resize_for_overwrite(r, static_cast<size_t>(n));
  resize_for_overwrite(v, static_cast<size_t>(n));
  // Entries [b, e) from `at` on: the others in order, then the tier's rows
  // in order (their slots from `slot0` on), blocks in parallel.
  std::vector<uint32_t> slots;
  auto part = [&](int64_t b, int64_t e, int64_t at) {
    const std::vector<int64_t> before = hot_before_blocks(b, e, slot_of);
    const int64_t hot = before.back(), cold = e - b - hot, slot0 = static_cast<int64_t>(slots.size());
    slots.resize(static_cast<size_t>(slot0 + hot));
    split_in_order(b, e, before, slot_of, [&](int64_t k, int64_t i, int64_t slot) {
      const size_t to = static_cast<size_t>(at + (slot >= 0 ? cold + i : i));
      r[to] = rows[k];
      v[to] = vids[k];
      if (slot >= 0) slots[static_cast<size_t>(slot0 + i)] = static_cast<uint32_t>(slot);
    });
    return hot;
  };
  // First returns [others][tier rows][handed-off rows], later returns [others][tier rows].
  s.tier_first = part(0, first - handed, 0);
  std::copy(rows + first - handed, rows + first, r.begin() + first - handed);
  std::copy(vids + first - handed, vids + first, v.begin() + first - handed);
  s.tier_staged = part(first, n, first);
  parallel_copy(rows, r.data(), static_cast<size_t>(n) * sizeof(uint32_t));
  parallel_copy(vids, v.data(), static_cast<size_t>(n) * sizeof(uint32_t));
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
