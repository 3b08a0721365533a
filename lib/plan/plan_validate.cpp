#include "plan/plan_validate.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include <fmt/format.h>

namespace ht {
namespace {

// Slot -> vertex of one step, without clearing between steps: an entry is
// valid when its stamp is the step's.
struct SlotMap {
  std::vector<vid_t> vid;
  std::vector<int64_t> stamp;
  explicit SlotMap(size_t capacity) : vid(capacity), stamp(capacity, std::numeric_limits<int64_t>::min()) {}
  bool has(uint32_t slot, int64_t step) const { return slot < stamp.size() && stamp[slot] == step; }
};

std::string where(const Plan& plan, size_t s) {
  return fmt::format("step {} (batch {}, GPU {})", s, s / static_cast<size_t>(plan.m), s % static_cast<size_t>(plan.m));
}

std::string check_maxima(const Plan& plan) {
  const size_t m = static_cast<size_t>(plan.m);
  std::vector<uint32_t> trans(m, 0), remote(m, 0), nbr(m, 0);
  std::vector<int64_t> dst(m, 0), edges(m, 0);
  // The largest slot of each step (the only per-row scan), steps in parallel.
  const auto steps = static_cast<int64_t>(plan.steps.size());
  std::vector<uint32_t> top(plan.steps.size(), 0);
#pragma omp parallel for schedule(dynamic, 1) if (steps > 1)
  for (int64_t s = 0; s < steps; ++s)
    for (uint32_t slot : plan.steps[s].trans_slot) top[s] = std::max(top[s], slot + 1);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ChunkPlan& cp = plan.steps[s];
    const size_t i = static_cast<size_t>(cp.part);
    trans[i] = std::max(trans[i], top[s]);
    remote[i] = std::max(remote[i], static_cast<uint32_t>(cp.remote_vid.size()));
    nbr[i] = std::max(nbr[i], static_cast<uint32_t>(cp.nbr.size()));
    dst[i] = std::max(dst[i], cp.num_dst());
    edges[i] = std::max(edges[i], cp.num_edges());
  }
  for (size_t i = 0; i < m; ++i) {
    auto differs = [&](const char* what, auto recorded, auto real) {
      return fmt::format("GPU {}: recorded {} {} but its steps need {}", i, what, recorded, real);
    };
    if (plan.trans_capacity[i] != trans[i]) return differs("transition capacity", plan.trans_capacity[i], trans[i]);
    if (plan.remote_capacity[i] != remote[i]) return differs("remote capacity", plan.remote_capacity[i], remote[i]);
    if (plan.nbr_capacity[i] != nbr[i]) return differs("neighbor capacity", plan.nbr_capacity[i], nbr[i]);
    if (plan.max_dst[i] != dst[i]) return differs("max_dst", plan.max_dst[i], dst[i]);
    if (plan.max_edges[i] != edges[i]) return differs("max_edges", plan.max_edges[i], edges[i]);
  }
  return "";
}

// Fills `cur` with step s's slots; checks single occupancy and reuse.
std::string fill_slots(const Plan& plan, size_t s, const SlotMap& prev, SlotMap& cur) {
  const ChunkPlan& cp = plan.steps[s];
  const int64_t prev_step = static_cast<int64_t>(s) - plan.m;
  for (size_t b = 0; b < cp.trans_vid.size(); ++b) {
    const uint32_t slot = cp.trans_slot[b];
    if (cur.has(slot, static_cast<int64_t>(s)))
      return fmt::format("{}: transition slot {} holds two vertices", where(plan, s), slot);
    if (cp.trans_reused[b] && !(prev.has(slot, prev_step) && prev.vid[slot] == cp.trans_vid[b]))
      return fmt::format("{}: vertex {} is marked reused but was not in slot {} in the previous batch", where(plan, s),
                         cp.trans_vid[b], slot);
    cur.vid[slot] = cp.trans_vid[b];
    cur.stamp[slot] = static_cast<int64_t>(s);
  }
  return "";
}

std::string check_edges(const Plan& plan, size_t s, const SlotMap& slots) {
  const ChunkPlan& cp = plan.steps[s];
  const uint32_t base = plan.trans_capacity[cp.part];
  for (size_t e = 0; e < cp.src_vid.size(); ++e) {
    const vid_t v = cp.src_vid[e];
    if (cp.nbr[cp.src_local[e]] != v)
      return fmt::format("{}: edge {} reads neighbor {} (vertex {}) but its source is {}", where(plan, s), e,
                         cp.src_local[e], cp.nbr[cp.src_local[e]], v);
    const uint32_t k = cp.src_merged[e];
    const bool ok = k < base ? slots.has(k, static_cast<int64_t>(s)) && slots.vid[k] == v
                             : k - base < cp.remote_vid.size() && cp.remote_vid[k - base] == v;
    if (!ok)
      return fmt::format("{}: edge {} reads merged row {}, which does not hold its source {}", where(plan, s), e, k, v);
  }
  return "";
}

std::string check_flushes(const Plan& plan, size_t s, const SlotMap& slots) {
  const ChunkPlan& cp = plan.steps[s];
  for (size_t k = 0; k < cp.flush_slot.size(); ++k)
    if (!slots.has(cp.flush_slot[k], static_cast<int64_t>(s)) || slots.vid[cp.flush_slot[k]] != cp.flush_vid[k])
      return fmt::format("{}: flush {} names vertex {} but slot {} does not hold it", where(plan, s), k,
                         cp.flush_vid[k], cp.flush_slot[k]);
  return "";
}

// Remote rows of batch j: vertex v on GPU g must sit in the slot named, by
// binary search in g's ascending transition list of the same batch.
std::string check_remotes(const Plan& plan, size_t s) {
  const ChunkPlan& cp = plan.steps[s];
  const int j = static_cast<int>(s / static_cast<size_t>(plan.m));
  for (size_t r = 0; r < cp.remote_vid.size(); ++r) {
    const ChunkPlan& owner = plan.step(j, cp.remote_gpu[r]);
    const auto it = std::lower_bound(owner.trans_vid.begin(), owner.trans_vid.end(), cp.remote_vid[r]);
    if (it == owner.trans_vid.end() || *it != cp.remote_vid[r] ||
        owner.trans_slot[static_cast<size_t>(it - owner.trans_vid.begin())] != cp.remote_slot[r])
      return fmt::format("{}: remote row {} reads GPU {}'s slot {}, which does not hold vertex {}", where(plan, s), r,
                         cp.remote_gpu[r], cp.remote_slot[r], cp.remote_vid[r]);
  }
  return "";
}

}  // namespace

std::string find_capacity_mismatch(const Plan& plan) { return check_maxima(plan); }

std::string find_plan_inconsistency(const Plan& plan) {
  if (std::string e = check_maxima(plan); !e.empty()) return e;
  for (int i = 0; i < plan.m; ++i) {
    SlotMap a(plan.trans_capacity[i]), b(plan.trans_capacity[i]);
    SlotMap* prev = &a;
    SlotMap* cur = &b;
    for (int j = 0; j < plan.n; ++j) {
      const size_t s = static_cast<size_t>(j) * plan.m + i;
      for (auto check : {+[](const Plan& p, size_t st, const SlotMap& pr, SlotMap& cu) { return fill_slots(p, st, pr, cu); },
                         +[](const Plan& p, size_t st, const SlotMap&, SlotMap& cu) { return check_edges(p, st, cu); },
                         +[](const Plan& p, size_t st, const SlotMap&, SlotMap& cu) { return check_flushes(p, st, cu); },
                         +[](const Plan& p, size_t st, const SlotMap&, SlotMap&) { return check_remotes(p, st); }})
        if (std::string e = check(plan, s, *prev, *cur); !e.empty()) return e;
      std::swap(prev, cur);
    }
  }
  return "";
}

}  // namespace ht
