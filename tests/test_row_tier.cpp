// The row tier's choices (engine/row_tier.hpp): the rows the most load lists
// hold, split lists that keep the list's order and its producer pieces, and
// each batch's own tier rows.
#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
}  // namespace ht
