#include "engine/timeline.hpp"

#include <algorithm>

namespace ht {
namespace {

// Rank of a kind when several run at once (lower wins the instant).
int exposure_rank(WorkKind k) {
  switch (k) {
    case WorkKind::compute:
    case WorkKind::d2d: return 0;
    case WorkKind::h2d: return 1;
    case WorkKind::d2h: return 2;
    case WorkKind::host: return 3;
  }
  return 3;
}

}  // namespace

TimelineSplit split_timeline(const std::vector<BusyInterval>& intervals, double wall) {
  TimelineSplit out;
  // Sweep over interval ends: between two consecutive boundaries the set of
  // running kinds is constant.
  struct Edge {
    double t;
    int rank, delta;
  };
  std::vector<Edge> edges;
  edges.reserve(intervals.size() * 2);
  for (const BusyInterval& b : intervals) {
    const double t0 = std::clamp(b.begin, 0.0, wall), t1 = std::clamp(b.end, 0.0, wall);
    out.busy[static_cast<int>(b.kind)] += std::max(0.0, b.end - b.begin);
    if (t1 <= t0) continue;
    edges.push_back({t0, exposure_rank(b.kind), +1});
    edges.push_back({t1, exposure_rank(b.kind), -1});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
  std::array<int, 4> running{};
  double* slot[5] = {&out.compute, &out.h2d, &out.d2h, &out.host, &out.idle};
  double t = 0;
  auto account = [&](double until) {
    if (until <= t) return;
    int r = 4;
    for (int k = 0; k < 4; ++k)
      if (running[k] > 0) {
        r = k;
        break;
      }
    *slot[r] += until - t;
    t = until;
  };
  for (const Edge& e : edges) {
    account(e.t);
    running[e.rank] += e.delta;
  }
  account(wall);
  return out;
}

}  // namespace ht
