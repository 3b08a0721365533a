// The epoch's timeline split: exposed times add up to the wall time, and
// overlapping work counts once, for the kind that ranks first.
#include <gtest/gtest.h>

#include "engine/timeline.hpp"

namespace ht {

TEST(Timeline, ExposedTimesPartitionTheEpoch) {
  const std::vector<BusyInterval> iv = {
      {WorkKind::h2d, 0.0, 4.0},      // alone for [0, 1), under compute for [1, 3), alone again [3, 4)
      {WorkKind::compute, 1.0, 3.0},
      {WorkKind::compute, 2.0, 5.0},  // a second queue: [3, 5) compute again
      {WorkKind::d2h, 4.5, 6.0},      // hidden until 5, exposed [5, 6)
      {WorkKind::host, 5.5, 7.0},     // exposed [6, 7)
      {WorkKind::d2d, 8.0, 9.0},      // P2P counts as compute
  };
  const TimelineSplit s = split_timeline(iv, 10.0);
  EXPECT_DOUBLE_EQ(s.compute, 4.0 + 1.0);  // [1, 5) and [8, 9)
  EXPECT_DOUBLE_EQ(s.h2d, 1.0);            // [0, 1)
  EXPECT_DOUBLE_EQ(s.d2h, 1.0);
  EXPECT_DOUBLE_EQ(s.host, 1.0);
  EXPECT_DOUBLE_EQ(s.idle, 2.0);           // [7, 8) and [9, 10)
  EXPECT_DOUBLE_EQ(s.compute + s.h2d + s.d2h + s.host + s.idle, 10.0);
  EXPECT_DOUBLE_EQ(s.busy[static_cast<int>(WorkKind::compute)], 5.0);
  EXPECT_DOUBLE_EQ(s.busy[static_cast<int>(WorkKind::h2d)], 4.0);
}

TEST(Timeline, IntervalsOutsideTheEpochAreClipped) {
  const TimelineSplit s = split_timeline({{WorkKind::compute, -1.0, 2.0}, {WorkKind::h2d, 3.0, 12.0}}, 4.0);
  EXPECT_DOUBLE_EQ(s.compute, 2.0);
  EXPECT_DOUBLE_EQ(s.h2d, 1.0);
  EXPECT_DOUBLE_EQ(s.idle, 1.0);
}

}  // namespace ht
