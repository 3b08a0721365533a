// The row tier's choices (engine/row_tier.hpp): the rows the most load lists
// hold, split lists that keep the list's order and its producer pieces, and
// each batch's own tier rows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

}  // namespace
}  // namespace ht
