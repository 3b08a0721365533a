#pragma once
// The epoch's timeline: busy intervals of every device queue, split into the
// time each kind of work was exposed (not hidden behind other work).
#include <array>
#include <vector>

#include "engine/executor.hpp"

namespace ht {

struct TimelineSplit {
  // Busy time of each WorkKind, summed over queues (overlapping work counts
  // once per queue).
  std::array<double, kNumWorkKinds> busy{};
  // Exposed time: at every instant of [0, wall) the first busy kind in the
  // order compute (with P2P, which runs on the compute queue), h2d, d2h,
  // host; idle when nothing runs. compute + h2d + d2h + host + idle = wall.
  double compute = 0, h2d = 0, d2h = 0, host = 0, idle = 0;
};

// `intervals` in seconds since the epoch's start; `wall` the epoch's length.
TimelineSplit split_timeline(const std::vector<BusyInterval>& intervals, double wall);

}  // namespace ht
