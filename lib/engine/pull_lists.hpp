#pragma once
// The pull lists of a device's step (DeviceStep::pull_src / pull_dst) for the
// two-area layouts of the merged buffer (RemoteAreas): what the early pulls
// pack on each owner, or which remote rows the device keeps from its
// previous step and which it pulls. Built with the step (device_plan.cpp).
#include <cstdint>
#include <vector>

#include "engine/device_plan.hpp"
#include "engine/rows_by_vertex.hpp"
#include "engine/step_scratch.hpp"
#include "plan/plan.hpp"

namespace ht {

struct PullLists {
  std::vector<uint32_t> src, dst;
  void clear() {
    src.clear();
    dst.clear();
  }
};

// What the pull lists of one step need beside the plan, kept across the
// steps a team builds (step_scratch.hpp): cleared, never shrunk.
struct PullScratch {
  PullLists lists;                // the step's lists
  ScratchArray<int64_t> where;    // early pulls: owner slot -> its load-list row (-1: kept), -2 elsewhere
  int64_t where_clean = 0;        // where[0, where_clean) hold -2 between steps
  ScratchArray<int64_t> found;    // kept rows: each remote row's row in the previous step, or -1
  RowsByVertex prev_rows;         // kept rows: the previous step's remote rows by vertex
  // where[0, n), all -2 (the early pulls put back what they set).
  int64_t* clean_where(int64_t n);
};

// RemoteAreas::early_pulls, step j > 0 of the device whose step is `s`: each
// peer range's rows, kept-first (PeerRange::kept), as the owner's source row
// and the row's place in the range. Into `ws.lists`.
void early_pull_lists(const Plan& plan, int j, const ChunkPlan& s, CommMode mode, std::vector<PeerRange>& peers,
                      PullScratch& ws);

// RemoteAreas::kept_rows, step j > 0 of device `gpu`: the copies from the
// other area first (`kept` of them), then each range's rows to pull
// (PeerRange::fresh_begin, fresh_count); absolute buffer rows. The ranges of
// another process's devices keep rows as well: their owners send only the
// rest (Trainer::setup_net's fresh slots, the same order). Into `ws.lists`.
void kept_remote_lists(const Plan& plan, int j, int gpu, const DevicePlan& dp, std::vector<PeerRange>& peers,
                       int64_t& kept, PullScratch& ws);

}  // namespace ht
