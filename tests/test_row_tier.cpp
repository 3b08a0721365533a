// The row tier's choices (engine/row_tier.hpp): the rows the most load lists
// hold, split lists that keep the list's order and its producer pieces, and
// each batch's own tier rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "engine/row_tier.hpp"

namespace ht {
namespace {

using Lists = std::vector<std::span<const uint32_t>>;

TEST(RowTier, TakesTheRowsMostListsHold) {
  const std::vector<uint32_t> a{5, 1, 7, 3}, b{7, 5, 2}, c{7, 9, 5, 1};
  const Lists lists{a, b, c};
  // Counts: 7 x3, 5 x3, 1 x2, 3, 2, 9 x1.
  TierRows t = hottest_rows(lists, 0, 10, 2);
  EXPECT_EQ(t.vids, (std::vector<uint32_t>{5, 7}));
  EXPECT_EQ(t.hot_loads, 6);
  EXPECT_EQ(t.loads, 11);
  // Ties go to the lower id: of the count-1 rows 2 and 3 come before 9.
  t = hottest_rows(lists, 0, 10, 5);
  EXPECT_EQ(t.vids, (std::vector<uint32_t>{1, 2, 3, 5, 7}));
  // Never a row no list holds, whatever the capacity.
  t = hottest_rows(lists, 0, 10, 100);
  EXPECT_EQ(t.vids, (std::vector<uint32_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(t.hot_loads, t.loads);
  // Only the eligible range (a device's own rows).
  t = hottest_rows(lists, 2, 6, 10);
  EXPECT_EQ(t.vids, (std::vector<uint32_t>{2, 3, 5}));
  EXPECT_EQ(t.hot_loads, 5);
  EXPECT_TRUE(hottest_rows(lists, 0, 10, 0).vids.empty());
}

TEST(RowTier, SplitKeepsOrderAndPieces) {
  const std::vector<uint32_t> vids{4, 8, 1, 6, 3, 9}, rows{10, 11, 12, 13, 14, 15}, tier{3, 4, 6};
  const std::vector<Slice> pieces{{0, 2}, {2, 0}, {2, 4}};
  const TierSplit s = split_loads(vids, rows, tier, pieces);
  EXPECT_EQ(s.hot_slots, (std::vector<uint32_t>{1, 2, 0}));  // 4, 6, 3
  EXPECT_EQ(s.hot_rows, (std::vector<uint32_t>{10, 13, 14}));
  EXPECT_EQ(s.cold_vids, (std::vector<uint32_t>{8, 1, 9}));
  EXPECT_EQ(s.cold_rows, (std::vector<uint32_t>{11, 12, 15}));
  ASSERT_EQ(s.cold_pieces.size(), 3u);
  EXPECT_EQ(s.cold_pieces[0].offset, 0);
  EXPECT_EQ(s.cold_pieces[0].count, 1);  // 8
  EXPECT_EQ(s.cold_pieces[1].count, 0);
  EXPECT_EQ(s.cold_pieces[2].offset, 1);
  EXPECT_EQ(s.cold_pieces[2].count, 2);  // 1, 9
  EXPECT_THROW(split_loads(vids, std::vector<uint32_t>{1}, tier, {}), Error);
  const std::vector<Slice> outside{{4, 3}};
  EXPECT_THROW(split_loads(vids, rows, tier, outside), Error);
}

TEST(RowTier, OwnRowsOfABatch) {
  const std::vector<uint32_t> tier{2, 5, 6, 11, 12};
  TierOwnRows o = own_tier_rows(tier, 5, 12);
  EXPECT_EQ(o.slot0, 1);
  EXPECT_EQ(o.local_rows, (std::vector<uint32_t>{0, 1, 6}));
  o = own_tier_rows(tier, 7, 11);
  EXPECT_EQ(o.slot0, 3);
  EXPECT_TRUE(o.local_rows.empty());
  o = own_tier_rows(tier, 12, 20);
  EXPECT_EQ(o.slot0, 4);
  EXPECT_EQ(o.local_rows, (std::vector<uint32_t>{0}));
}


// A step's flush list split by the tier: first returns [others][tier][handed
// off], later returns [others][tier], each part in its order; the staged
// vertices follow the later returns; the tier slots in the moved order.
TEST(RowTier, SplitReturnsKeepsEachPartInOrder) {
  // Flush list: 5 first returns (the last one handed off), then 4 later ones.
  std::vector<uint32_t> rows{20, 21, 22, 23, 24, 25, 26, 27, 28}, vids{7, 2, 9, 4, 11, 1, 3, 8, 12};
  std::vector<std::byte> bytes(rows.size() * 8);
  std::memcpy(bytes.data(), rows.data(), rows.size() * 4);
  std::memcpy(bytes.data() + rows.size() * 4, vids.data(), vids.size() * 4);
  DeviceStep s;
  s.bytes = bytes;
  s.flush_rows = {0, 9};
  s.flush_vids = {36, 9};
  s.first_count = 5;
  s.handoff_count = 1;
  const std::vector<uint32_t> tier{2, 3, 4, 8};  // slots 0..3
  const std::vector<uint32_t> slots = split_tier_returns(s, TierIndex::of(tier));
  std::memcpy(rows.data(), bytes.data(), rows.size() * 4);
  std::memcpy(vids.data(), bytes.data() + rows.size() * 4, vids.size() * 4);
  EXPECT_EQ(vids, (std::vector<uint32_t>{7, 9, 2, 4, 11, 1, 12, 3, 8}));
  EXPECT_EQ(rows, (std::vector<uint32_t>{20, 22, 21, 23, 24, 25, 28, 26, 27}));
  EXPECT_EQ(s.tier_first, 2);
  EXPECT_EQ(s.tier_staged, 2);
  EXPECT_EQ(slots, (std::vector<uint32_t>{0, 2, 1, 3}));
  EXPECT_EQ(s.staged_vids, (std::vector<uint32_t>{1, 12, 3, 8}));
  // A handed-off row may not be a tier row.
  s.handoff_count = 1;  // (vertex 11, now last of the first returns)
  EXPECT_THROW(split_tier_returns(s, TierIndex::of(std::vector<uint32_t>{11})), Error);
}

// The passes above run over blocks of the lists in parallel (hottest_rows,
// TierIndex, split_loads, split_tier_returns): with blocks of 1, 3 and 7
// entries and the default size they give what one pass in order gives (the
// serial versions they replaced, below), on random lists with ties.
namespace serial {

TierRows hottest(std::span<const std::span<const uint32_t>> lists, int64_t b, int64_t e, int64_t capacity) {
  TierRows out;
  std::vector<uint32_t> count(static_cast<size_t>(e - b), 0);
  for (auto list : lists)
    for (uint32_t v : list) {
      ++out.loads;
      if (v >= b && v < e) ++count[v - b];
    }
  std::vector<uint32_t> loaded;
  for (size_t i = 0; i < count.size(); ++i)
    if (count[i] > 0) loaded.push_back(static_cast<uint32_t>(b + static_cast<int64_t>(i)));
  std::sort(loaded.begin(), loaded.end(), [&](uint32_t x, uint32_t y) {
    return count[x - b] != count[y - b] ? count[x - b] > count[y - b] : x < y;
  });
  loaded.resize(static_cast<size_t>(std::clamp<int64_t>(capacity, 0, static_cast<int64_t>(loaded.size()))));
  std::sort(loaded.begin(), loaded.end());
  for (uint32_t v : loaded) out.hot_loads += count[v - b];
  out.vids = loaded;
  return out;
}

int64_t slot(std::span<const uint32_t> tier, uint32_t v) {
  const auto it = std::lower_bound(tier.begin(), tier.end(), v);
  return it != tier.end() && *it == v ? it - tier.begin() : -1;
}

TierSplit split(std::span<const uint32_t> vids, std::span<const uint32_t> rows, std::span<const uint32_t> tier,
                std::span<const Slice> pieces) {
  TierSplit out;
  std::vector<int64_t> cold_before(vids.size() + 1, 0);
  for (size_t k = 0; k < vids.size(); ++k) {
    const int64_t s = slot(tier, vids[k]);
    if (s >= 0) {
      out.hot_slots.push_back(static_cast<uint32_t>(s));
      out.hot_rows.push_back(rows[k]);
    } else {
      out.cold_vids.push_back(vids[k]);
      out.cold_rows.push_back(rows[k]);
    }
    cold_before[k + 1] = static_cast<int64_t>(out.cold_vids.size());
  }
  for (const Slice& p : pieces)
    out.cold_pieces.push_back({cold_before[p.offset], cold_before[p.offset + p.count] - cold_before[p.offset]});
  return out;
}

}  // namespace serial

bool same(const TierSplit& a, const TierSplit& b) {
  if (a.cold_pieces.size() != b.cold_pieces.size()) return false;
  for (size_t k = 0; k < a.cold_pieces.size(); ++k)
    if (a.cold_pieces[k].offset != b.cold_pieces[k].offset || a.cold_pieces[k].count != b.cold_pieces[k].count)
      return false;
  return a.hot_slots == b.hot_slots && a.hot_rows == b.hot_rows && a.cold_vids == b.cold_vids &&
         a.cold_rows == b.cold_rows;
}

TEST(RowTier, BlocksGiveWhatOnePassGives) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const uint32_t n = 1 + rng() % 200;
    std::vector<std::vector<uint32_t>> owned(1 + rng() % 6);
    for (auto& list : owned) {  // distinct vertices in a random order, a random share of [0, n)
      for (uint32_t v = 0; v < n; ++v)
        if (rng() % 3 == 0) list.push_back(v);
      std::shuffle(list.begin(), list.end(), rng);
    }
    const Lists lists(owned.begin(), owned.end());
    const int64_t b = rng() % (n / 2 + 1), e = b + rng() % (n - b + 1);
    const int64_t capacity = static_cast<int64_t>(rng() % (n + 2)) - 1;
    const TierRows want = serial::hottest(lists, b, e, capacity);
    std::vector<uint32_t> rows(owned[0].size());
    for (size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<uint32_t>(1000 + k);
    std::vector<Slice> pieces;
    for (int64_t at = 0, left = static_cast<int64_t>(rows.size()); left >= 0 && pieces.size() < 5;) {
      const int64_t c = std::min<int64_t>(left, rng() % 40);
      pieces.push_back({at, c});
      at += c;
      left -= c;
      if (c == 0 && left == 0) break;
    }
    const TierSplit want_split = serial::split(owned[0], rows, want.vids, pieces);
    for (size_t grain : {size_t{1}, size_t{3}, size_t{7}, BulkTuning{}.grain}) {
      ScopedBulkTuning scope(BulkTuning{0, grain});
      const TierRows got = hottest_rows(lists, b, e, capacity);
      EXPECT_EQ(got.vids, want.vids) << trial << " grain " << grain;
      EXPECT_EQ(got.hot_loads, want.hot_loads);
      EXPECT_EQ(got.loads, want.loads);
      const TierIndex index = TierIndex::of(want.vids);
      for (uint32_t v = 0; v < n + 2; ++v) EXPECT_EQ(index(v), serial::slot(want.vids, v));
      EXPECT_TRUE(same(split_loads(owned[0], rows, index, pieces), want_split)) << trial << " grain " << grain;
    }
  }
}

TEST(RowTier, SplitReturnsInBlocksAsInOnePass) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    const uint32_t n = 1 + rng() % 300;
    std::vector<uint32_t> vids(n), tier;
    for (uint32_t k = 0; k < n; ++k) vids[k] = k;
    std::shuffle(vids.begin(), vids.end(), rng);
    const int64_t first = rng() % (n + 1), handed = rng() % (first + 1);
    std::vector<bool> handed_off(n, false);
    for (int64_t k = first - handed; k < first; ++k) handed_off[vids[static_cast<size_t>(k)]] = true;
    for (uint32_t v = 0; v < n; ++v)
      if (!handed_off[v] && rng() % 2 == 0) tier.push_back(v);
    auto run = [&](size_t grain) {
      ScopedBulkTuning scope(BulkTuning{0, grain});
      std::vector<std::byte> bytes(static_cast<size_t>(n) * 8);
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t row = 5000 + k;
        std::memcpy(bytes.data() + 4 * k, &row, 4);
        std::memcpy(bytes.data() + 4 * (n + k), &vids[k], 4);
      }
      DeviceStep s;
      s.bytes = bytes;
      s.flush_rows = {0, n};
      s.flush_vids = {4 * static_cast<int64_t>(n), n};
      s.first_count = first;
      s.handoff_count = handed;
      const std::vector<uint32_t> slots = split_tier_returns(s, TierIndex::of(tier));
      return std::tuple{bytes, slots, s.tier_first, s.tier_staged, s.staged_vids};
    };
    const auto want = run(BulkTuning{}.grain);  // one block: as one pass
    // The one-block answer against the parts it must have: [others][tier][handed], [others][tier].
    const auto& [bytes, slots, tier_first, tier_staged, staged] = want;
    std::vector<uint32_t> got_vids(n);
    std::memcpy(got_vids.data(), bytes.data() + 4 * static_cast<size_t>(n), 4 * static_cast<size_t>(n));
    std::vector<uint32_t> expect;
    auto in_tier = [&](uint32_t v) { return std::binary_search(tier.begin(), tier.end(), v); };
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t k = 0; k < first - handed; ++k)
        if (in_tier(vids[static_cast<size_t>(k)]) == (pass == 1)) expect.push_back(vids[static_cast<size_t>(k)]);
    expect.insert(expect.end(), vids.begin() + first - handed, vids.begin() + first);
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t k = first; k < n; ++k)
        if (in_tier(vids[static_cast<size_t>(k)]) == (pass == 1)) expect.push_back(vids[static_cast<size_t>(k)]);
    EXPECT_EQ(got_vids, expect) << trial;
    EXPECT_EQ(staged, std::vector<uint32_t>(expect.begin() + first, expect.end()));
    EXPECT_EQ(static_cast<int64_t>(slots.size()), tier_first + tier_staged);
    for (size_t grain : {size_t{1}, size_t{3}, size_t{7}}) EXPECT_TRUE(run(grain) == want) << trial << " grain " << grain;
  }
}

}  // namespace
}  // namespace ht
