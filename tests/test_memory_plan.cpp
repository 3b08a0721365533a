// The GPU memory planner: a plan that does not fit is refused with an error
// that names the device and suggests a chunk count, and that suggestion
// does fit.
#include <algorithm>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "engine/memory_plan.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"
#include "partition/plan_builder.hpp"

namespace ht {
namespace {

// A banded graph (neighbors within +-20 ids): chunks have local neighbor
// sets, so buffers shrink with more chunks.
Graph graph() {
  rng::Stream r(2, 2);
  EdgeList el;
  el.num_vertices = 2000;
  for (int e = 0; e < 20000; ++e) {
    const int64_t d = static_cast<int64_t>(r.below(2000));
    const int64_t s = std::clamp<int64_t>(d + static_cast<int64_t>(r.below(41)) - 20, 0, 1999);
    el.src.push_back(static_cast<vid_t>(s));
    el.dst.push_back(static_cast<vid_t>(d));
  }
  return csc_from_edges(std::move(el));
}

Plan plan_for(const Graph& g, int n) {
  Partition p;
  p.params.parts = 1;
  p.params.chunks = n;
  p.num_vertices = g.num_vertices;
  p.num_edges = g.num_edges();
  for (vid_t v = 0; v < g.num_vertices; ++v) p.new_to_old.push_back(v);
  p.old_to_new = p.new_to_old;
  for (int c = 0; c <= n; ++c) p.chunk_offsets.push_back(c * g.num_vertices / n);
  p.part_offsets = {0, g.num_vertices};
  return build_plan(g.view(), p);
}

}  // namespace

TEST(MemoryPlan, ShrinksWithChunksAndSuggestsAFittingCount) {
  Graph g = graph();
  TrainerOptions cfg;
  cfg.model.dims = {256, 128, 16};
  cfg.steps = StepPlacement::streamed;  // only the steps in flight are on the device
  const DeviceMemoryNeed one = device_memory_need(plan_for(g, 1), 0, cfg);
  const DeviceMemoryNeed eight = device_memory_need(plan_for(g, 8), 0, cfg);
  EXPECT_LT(eight.per_chunk_bytes, one.per_chunk_bytes / 3);
  EXPECT_EQ(eight.fixed_bytes, one.fixed_bytes);
  EXPECT_NO_THROW(check_device_memory(one, 0, 0, 1));  // no limit
  const int64_t limit = one.fixed_bytes + one.per_chunk_bytes / 4;
  try {
    check_device_memory(one, limit, 0, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("GPU 0 needs"), std::string::npos) << msg;
    const size_t at = msg.find("about ");
    ASSERT_NE(at, std::string::npos) << msg;
    const int k = std::stoi(msg.substr(at + 6));
    EXPECT_GE(k, 4);
    EXPECT_NO_THROW(check_device_memory(device_memory_need(plan_for(g, k), 0, cfg), limit, 0, k));
  }
}

TEST(MemoryPlan, ReadAheadAddsTheIncomingRows) {
  Graph g = graph();
  TrainerOptions cfg;
  cfg.model.dims = {256, 128, 16};
  const Plan plan = plan_for(g, 4);
  const DeviceMemoryNeed ahead = device_memory_need(plan, 0, cfg);
  cfg.overlap_copies = false;  // copies in line: no read-ahead either
  const DeviceMemoryNeed in_line = device_memory_need(plan, 0, cfg);
  // Two slots of the rows any later batch loads, at the widest gathered row
  // (128: both layers narrow, so both run transform-first).
  int64_t later = 0;
  for (int j = 1; j < plan.n; ++j) {
    const ChunkPlan& s = plan.step(j, 0);
    later = std::max<int64_t>(later, std::count(s.trans_reused.begin(), s.trans_reused.end(), 0));
  }
  EXPECT_GT(later, 0);
  EXPECT_EQ(ahead.per_chunk_bytes - in_line.per_chunk_bytes, 2 * 4 * later * 128);
  EXPECT_EQ(ahead.fixed_bytes, in_line.fixed_bytes);
}

TEST(MemoryPlan, AutomaticStepsStreamOnlyWhenResidentStepsDoNotFit) {
  Graph g = graph();
  TrainerOptions cfg;
  cfg.model.dims = {256, 128, 16};
  const Plan plan = plan_for(g, 8);
  const DeviceMemoryNeed resident = device_memory_need(plan, 0, cfg, false);
  const DeviceMemoryNeed streamed = device_memory_need(plan, 0, cfg, true);
  ASSERT_LT(streamed.total(), resident.total());
  EXPECT_FALSE(streams_steps(plan, 0, cfg, 0));                 // no limit
  EXPECT_FALSE(streams_steps(plan, 0, cfg, resident.total()));  // fits
  EXPECT_TRUE(streams_steps(plan, 0, cfg, resident.total() - 1));
  EXPECT_EQ(device_memory_need(plan, 0, cfg, resident.total() - 1).total(), streamed.total());
  cfg.steps = StepPlacement::resident;
  EXPECT_FALSE(streams_steps(plan, 0, cfg, 1));
}

}  // namespace ht
