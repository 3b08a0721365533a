#pragma once
// The pull lists of a device's step (DeviceStep::pull_src / pull_dst) for the
// two-area layouts of the merged buffer (RemoteAreas): what the early pulls
// pack on each owner, or which remote rows the device keeps from its
// previous step and which it pulls. Built with the step (device_plan.cpp).
#include <cstdint>
#include <vector>

#include "engine/device_plan.hpp"
#include "plan/plan.hpp"

namespace ht {

struct PullLists {
  std::vector<uint32_t> src, dst;
};

// RemoteAreas::early_pulls, step j > 0 of the device whose step is `s`: each
// peer range's rows, kept-first (PeerRange::kept), as the owner's source row
// and the row's place in the range.
PullLists early_pull_lists(const Plan& plan, int j, const ChunkPlan& s, CommMode mode, std::vector<PeerRange>& peers);

// RemoteAreas::kept_rows, step j > 0 of device `gpu`: the copies from the
// other area first (`kept` of them), then each range's rows to pull
// (PeerRange::fresh_begin, fresh_count); absolute buffer rows. The ranges of
// another process's devices keep rows as well: their owners send only the
// rest (Trainer::setup_net's fresh slots, the same order).
PullLists kept_remote_lists(const Plan& plan, int j, int gpu, const DevicePlan& dp, std::vector<PeerRange>& peers,
                            int64_t& kept);

}  // namespace ht
