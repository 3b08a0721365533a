// Plan builder: the paper's Figure 6 example (19 -> 11 -> 8 host transfers),
// the symbolic checker on random / R-MAT-like / community-like graphs for
// m in {1, 2, 4} and n in {1, 3, 8} (range and shuffled partitions, with and
// without reorganization), the self-loop rule, the slot rule, determinism.
#include <omp.h>

#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/bulk_memory.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_check.hpp"
#include "partition/plan_cost.hpp"
#include "plan/plan_derive.hpp"
#include "plan_test_graphs.hpp"

namespace ht {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// Figure 6 (§5.1): 3 GPUs, 2 batches, vertices 0..7 owned {0-3}, {4,5},
// {6,7}. Chunk (i, c) has destinations `dst` and neighbor set `nbr`; the
// graph gives each destination a self-loop and sends every other neighbor
// to the chunk's first destination.
struct ToyChunk {
  int64_t begin, end;
  std::vector<vid_t> nbr;
};
const std::vector<ToyChunk> kToy = {
    {0, 2, {0, 1, 2, 3, 4}}, {2, 4, {2, 3}},        // partition 0
    {4, 5, {0, 1, 3, 4}},    {5, 6, {4, 5}},        // partition 1
    {6, 7, {5, 6}},          {7, 8, {1, 3, 4, 7}},  // partition 2
};

Graph toy_graph() {
  EdgeList el;
  el.num_vertices = 8;
  for (const ToyChunk& c : kToy)
    for (vid_t v : c.nbr) {
      el.src.push_back(v);
      el.dst.push_back(v >= c.begin && v < c.end ? v : static_cast<vid_t>(c.begin));
    }
  return csc_from_edges(std::move(el));
}

Partition toy_partition() {
  Partition p;
  p.params.parts = 3;
  p.params.chunks = 2;
  p.num_vertices = 8;
  p.part_offsets = {0, 4, 6, 8};
  p.chunk_offsets = {0, 2, 4, 5, 6, 7, 8};
  for (vid_t v = 0; v < 8; ++v) p.new_to_old.push_back(v), p.old_to_new.push_back(v);
  return p;
}

// The figure's batches: batch 0 = chunks (0,0), (1,0), (2,1); batch 1 =
// (0,1), (1,1), (2,0).
BatchOrder figure_order() {
  BatchOrder o;
  o.m = 3;
  o.n = 2;
  o.chunk = {0, 0, 1, 1, 1, 0};
  return o;
}

std::vector<vid_t> reused(const ChunkPlan& cp, bool value) {
  std::vector<vid_t> out;
  for (size_t b = 0; b < cp.trans_vid.size(); ++b)
    if (cp.trans_reused[b] == value) out.push_back(cp.trans_vid[b]);
  return out;
}

TEST(PlanBuilder, Figure6HostTransfers) {
  const Graph g = toy_graph();
  const Partition p = toy_partition();
  std::vector<ChunkPlan> chunks = build_chunks(g.view(), p);
  for (size_t k = 0; k < kToy.size(); ++k) ASSERT_EQ(chunks[k].nbr, kToy[k].nbr) << "chunk " << k;
  const Plan plan = assemble_plan(3, 2, p.part_offsets, 8, std::move(chunks), figure_order(), {});
  EXPECT_EQ(plan.volumes.v_ori, 19);  // every chunk loads its neighbors
  EXPECT_EQ(plan.volumes.v_p2p, 11);  // + inter-GPU dedup
  EXPECT_EQ(plan.volumes.v_ru, 8);    // + intra-GPU reuse
  EXPECT_EQ(plan.step(0, 0).trans_vid, (std::vector<vid_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.step(0, 1).trans_vid, (std::vector<vid_t>{4}));
  EXPECT_EQ(plan.step(0, 2).trans_vid, (std::vector<vid_t>{7}));
  EXPECT_EQ(reused(plan.step(1, 0), true), (std::vector<vid_t>{2, 3}));
  EXPECT_EQ(reused(plan.step(1, 1), true), (std::vector<vid_t>{4}));
  EXPECT_EQ(reused(plan.step(1, 1), false), (std::vector<vid_t>{5}));
  EXPECT_EQ(reused(plan.step(1, 2), false), (std::vector<vid_t>{6}));
  EXPECT_TRUE(reused(plan.step(1, 2), true).empty());
  // In place: 2, 3 keep their slots; 6 takes the slot 7 left.
  EXPECT_EQ(plan.step(1, 0).trans_slot, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(plan.step(1, 2).trans_slot, (std::vector<uint32_t>{0}));
  EXPECT_EQ(plan.trans_capacity, (std::vector<uint32_t>{4, 2, 1}));
  // GPU 0 flushes 0 and 1 after batch 0 (2 and 3 stay), everything at the end.
  EXPECT_EQ(plan.step(0, 0).flush_vid, (std::vector<vid_t>{0, 1}));
  EXPECT_EQ(plan.step(1, 0).flush_vid, (std::vector<vid_t>{2, 3}));
  EXPECT_TRUE(plan.step(0, 1).flush_vid.empty());
  // GPU 2 in batch 0 reads 1, 3 from GPU 0 and 4 from GPU 1.
  EXPECT_EQ(plan.step(0, 2).remote_vid, (std::vector<vid_t>{1, 3, 4}));
  EXPECT_EQ(plan.step(0, 2).remote_gpu, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(check_plan(plan, g.view(), p), std::vector<std::string>{});
  EXPECT_EQ(check_plan_comm(plan), std::vector<std::string>{});
}

TEST(PlanBuilder, Figure6ReorganizationFindsTheFiguresBatches) {
  const Graph g = toy_graph();
  const Partition p = toy_partition();
  const std::vector<ChunkPlan> chunks = build_chunks(g.view(), p);
  ChunkNeighbors nbr;
  for (const auto& c : chunks) nbr.emplace_back(c.nbr);
  const BatchOrder order = reorganize(nbr, 3, 2, 8);
  // Phase 1 groups the chunks as the figure does (batch order may flip).
  std::set<std::vector<int32_t>> batches;
  for (int j = 0; j < 2; ++j) batches.insert({order.at(j, 0), order.at(j, 1), order.at(j, 2)});
  EXPECT_EQ(batches, (std::set<std::vector<int32_t>>{{0, 0, 1}, {1, 1, 0}}));
  const PlanVolumes after = order_volumes(nbr, order), before = order_volumes(nbr, BatchOrder::identity(3, 2));
  EXPECT_EQ(after.v_p2p, 11);
  EXPECT_EQ(before.v_p2p, 13);
  EXPECT_EQ(before.v_ru, 8);
  EXPECT_EQ(after.v_ru, 8);
  // Same host traffic but 2 rows moved from in-place reuse to P2P: Eq. 4
  // prefers the partitioner's order here, and build_plan keeps it.
  const CostProfile prof;
  EXPECT_GT(comm_cost(after, prof, 1), comm_cost(before, prof, 1));
  const Plan plan = build_plan(g.view(), p, {});
  EXPECT_FALSE(plan.reorganized);
  EXPECT_EQ(plan.volumes.v_p2p, 13);
  EXPECT_LE(plan.cost_after, plan.cost_before);
  // With P2P faster than in-place reuse, the figure's grouping wins.
  const Plan fast = build_plan(g.view(), p, {true, CostProfile{55.6e9, 4e12, 3e12}});
  EXPECT_TRUE(fast.reorganized);
  EXPECT_EQ(fast.volumes.v_p2p, 11);
  EXPECT_EQ(check_plan(fast, g.view(), p), std::vector<std::string>{});
}

struct Case {
  test::GraphKind kind;
  int m, n;
  bool shuffled, reorganize;
};

TEST(PlanBuilder, CheckerPassesOnGeneratedGraphs) {
  int cases = 0;
  for (auto kind : {test::GraphKind::random, test::GraphKind::rmat, test::GraphKind::community})
    for (int m : {1, 2, 4})
      for (int n : {1, 3, 8})
        for (bool shuffled : {false, true})
          for (bool reorg : {false, true}) {
            const Graph g = test::make_graph(kind, 300, 1800, 17 + m * 10 + n);
            Graph g_new;
            Partition p;
            if (shuffled) std::tie(g_new, p) = test::shuffled_partition(g, m, n, 5 + n);
            else g_new = to_graph(g.view()), p = test::range_partition(g, m, n);
            const Plan plan = build_plan(g_new.view(), p, {reorg, {}});
            SCOPED_TRACE(fmt::format("{} m={} n={} shuffled={} reorganize={}", test::kind_name(kind), m, n, shuffled,
                                     reorg));
            const auto problems = check_plan(plan, g_new.view(), p);
            EXPECT_TRUE(problems.empty()) << joined(problems);
            if (!reorg) {
              EXPECT_FALSE(plan.reorganized);
              EXPECT_EQ(plan.volumes.v_ru, plan.volumes_before.v_ru);
            }
            EXPECT_LE(plan.cost_after, plan.cost_before * (1 + 1e-12));
            // Volume ordering: dedup never adds host rows.
            EXPECT_LE(plan.volumes.v_ru, plan.volumes.v_p2p);
            EXPECT_LE(plan.volumes.v_p2p, plan.volumes.v_ori);
            int64_t edges = 0;
            for (const auto& cp : plan.steps) edges += cp.num_edges();
            EXPECT_GE(edges, g.num_edges());  // all in-edges plus added self-loops
            ++cases;
          }
  EXPECT_EQ(cases, 108);
}

TEST(PlanBuilder, ExactlyOneSelfLoopPerDestination) {
  EdgeList el;
  el.num_vertices = 6;
  // 0: no self-loop; 1: one; 2: three; duplicates 3->4 twice kept.
  const int pairs[][2] = {{1, 0}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, {0, 2}, {3, 4}, {3, 4}, {5, 4}, {4, 5}};
  for (auto& pr : pairs) el.src.push_back(pr[0]), el.dst.push_back(pr[1]);
  const Graph g = csc_from_edges(std::move(el));
  const Partition p = test::range_partition(g, 2, 1);
  const Plan plan = build_plan(g.view(), p, {false, {}});
  std::vector<std::vector<vid_t>> rows(6);
  for (const auto& cp : plan.steps)
    for (int64_t d = 0; d < cp.num_dst(); ++d)
      rows[cp.dst_begin + d].assign(cp.src_vid.begin() + cp.offsets[d], cp.src_vid.begin() + cp.offsets[d + 1]);
  EXPECT_EQ(rows[0], (std::vector<vid_t>{0, 1}));
  EXPECT_EQ(rows[1], (std::vector<vid_t>{1}));
  EXPECT_EQ(rows[2], (std::vector<vid_t>{0, 2}));
  EXPECT_EQ(rows[3], (std::vector<vid_t>{3}));
  EXPECT_EQ(rows[4], (std::vector<vid_t>{3, 3, 4, 5}));
  EXPECT_EQ(rows[5], (std::vector<vid_t>{4, 5}));
  EXPECT_EQ(check_plan(plan, g.view(), p), std::vector<std::string>{});
}

TEST(PlanBuilder, TransitionBufferNeverExceedsLargestSet) {
  const Graph g = test::make_graph(test::GraphKind::rmat, 500, 2500, 3);
  const Partition p = test::range_partition(g, 2, 8);
  const Plan plan = build_plan(g.view(), p, {});
  for (int i = 0; i < plan.m; ++i) {
    size_t largest = 0;
    for (int j = 0; j < plan.n; ++j) largest = std::max(largest, plan.step(j, i).trans_vid.size());
    EXPECT_EQ(plan.trans_capacity[i], largest);
    for (int j = 1; j < plan.n; ++j) {
      // New vertices fill the lowest free slots: any slot below the highest
      // newly loaded one is taken in this batch.
      const ChunkPlan& cp = plan.step(j, i);
      std::set<uint32_t> used(cp.trans_slot.begin(), cp.trans_slot.end());
      uint32_t top_new = 0;
      bool any_new = false;
      for (size_t b = 0; b < cp.trans_slot.size(); ++b)
        if (!cp.trans_reused[b]) top_new = std::max(top_new, cp.trans_slot[b]), any_new = true;
      if (any_new) {
        for (uint32_t s = 0; s < top_new; ++s) EXPECT_TRUE(used.count(s)) << "batch " << j << " slot " << s;
      }
    }
  }
}

bool same_plan(const Plan& a, const Plan& b) {
  if (a.steps.size() != b.steps.size() || a.volumes.v_ru != b.volumes.v_ru || a.trans_capacity != b.trans_capacity)
    return false;
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const ChunkPlan &x = a.steps[s], &y = b.steps[s];
    if (x.chunk != y.chunk || x.nbr != y.nbr || x.src_merged != y.src_merged || x.trans_slot != y.trans_slot ||
        x.remote_slot != y.remote_slot || x.flush_slot != y.flush_slot || x.offsets != y.offsets ||
        x.src_vid != y.src_vid || x.src_local != y.src_local)
      return false;
  }
  return true;
}

TEST(PlanBuilder, DeterministicAcrossRunsAndThreadCounts) {
  const Graph g = test::make_graph(test::GraphKind::community, 400, 3000, 9);
  const Partition p = test::range_partition(g, 4, 3);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Plan one = build_plan(g.view(), p, {});
  omp_set_num_threads(std::max(2, threads));
  const Plan two = build_plan(g.view(), p, {});
  const Plan again = build_plan(g.view(), p, {});
  omp_set_num_threads(threads);
  EXPECT_TRUE(same_plan(one, two));
  EXPECT_TRUE(same_plan(two, again));
}

// A plan above the parallel thresholds (unions by all threads, slots GPU
// after GPU with each step in parallel blocks, remote rows one task per
// step, the derivation check's edges in blocks over all steps): the same
// plan at 1, 2 and 8 threads; the derivation check passes at each, and
// reports the same first mismatch (a step's edge in a late block before a
// later step's slot).
TEST(PlanBuilder, LargePlanSameAtAnyThreadCount) {
  const Graph g = test::make_graph(test::GraphKind::community, 60000, 1200000, 13);
  const auto [g_new, p] = test::shuffled_partition(g, 2, 3, 7);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Plan one = build_plan(g_new.view(), p, {});
  ASSERT_EQ(find_derivation_mismatch(one), "");
  Plan spoiled = one;
  const size_t late = spoiled.steps[1].src_merged.size() - 1;
  ASSERT_GT(late, size_t{1} << 17);  // several blocks of edges
  spoiled.steps[1].src_merged[late] ^= 1;
  std::swap(spoiled.steps[4].trans_slot[0], spoiled.steps[4].trans_slot[1]);
  const std::string first = find_derivation_mismatch(spoiled);
  EXPECT_NE(first.find(fmt::format("step 1 (batch 0, GPU 1): edge {} ", late)), std::string::npos) << first;
  for (int t : {2, 8}) {
    omp_set_num_threads(t);
    const Plan plan = build_plan(g_new.view(), p, {});
    EXPECT_TRUE(same_plan(one, plan)) << t << " threads";
    EXPECT_EQ(plan.volumes.v_p2p, one.volumes.v_p2p);
    EXPECT_EQ(plan.volumes_before.v_ru, one.volumes_before.v_ru);
    EXPECT_EQ(find_derivation_mismatch(plan), "") << t << " threads";
    EXPECT_EQ(find_derivation_mismatch(spoiled), first) << t << " threads";
  }
  omp_set_num_threads(threads);
}

// Fewer chunks and steps than threads (m = 4 x n = 8 on 64 cores): chunk
// topologies by teams of threads, a batch's rows and a step's merged
// indices by the threads left over (nested), and the write check's steps:
// the same plan and verdicts as one thread.
TEST(PlanBuilder, FewStepsByTeamsSameAsOneThread) {
  const Graph g = test::make_graph(test::GraphKind::community, 60000, 1200000, 13);
  const int threads = omp_get_max_threads();
  for (auto [m, n] : {std::pair{1, 2}, std::pair{2, 2}, std::pair{1, 3}}) {
    const auto [g_new, p] = test::shuffled_partition(g, m, n, 7);
    omp_set_num_threads(1);
    const Plan one = build_plan(g_new.view(), p, {});
    // The write check's steps by teams too: the same verdicts.
    Plan spoiled = one;
    std::swap(spoiled.steps.back().trans_slot[0], spoiled.steps.back().trans_slot[1]);
    const std::string first = find_derivation_mismatch(spoiled);
    EXPECT_NE(first, "");
    omp_set_num_threads(8);
    const Plan teams = build_plan(g_new.view(), p, {});
    EXPECT_EQ(find_derivation_mismatch(teams), "") << "m " << m << " n " << n;
    EXPECT_EQ(find_derivation_mismatch(spoiled), first) << "m " << m << " n " << n;
    omp_set_num_threads(threads);
    EXPECT_TRUE(same_plan(one, teams)) << "m " << m << " n " << n;
  }
}

// The remote rows ((GPU, slot) order) and the flushes (slot order) come
// from bit sets of distinct keys, filled and ranked in parallel blocks, and
// the flush walk runs in blocks, each from its place in the next batch's
// set: with blocks of 7 elements (many per step, walks that start inside
// runs of shared vertices) the same lists, every one of them, as one thread
// with the default blocks, and the lists are in the documented order.
TEST(PlanBuilder, RemoteRowsAndFlushesInSmallBlocksSameAsOneThread) {
  const Graph g = test::make_graph(test::GraphKind::community, 60000, 1200000, 13);
  const int threads = omp_get_max_threads();
  for (auto [m, n] : {std::pair{4, 3}, std::pair{3, 2}}) {
    const auto [g_new, p] = test::shuffled_partition(g, m, n, 7);
    omp_set_num_threads(1);
    const Plan one = build_plan(g_new.view(), p, {});
    for (const ChunkPlan& cp : one.steps) {
      for (size_t r = 1; r < cp.remote_vid.size(); ++r)
        ASSERT_LT(std::pair(cp.remote_gpu[r - 1], cp.remote_slot[r - 1]), std::pair(cp.remote_gpu[r], cp.remote_slot[r]));
      for (size_t r = 1; r < cp.flush_slot.size(); ++r) ASSERT_LT(cp.flush_slot[r - 1], cp.flush_slot[r]);
    }
    size_t remote = 0, flushes = 0;
    for (const ChunkPlan& cp : one.steps) remote += cp.remote_vid.size(), flushes += cp.flush_vid.size();
    ASSERT_GT(remote, size_t{1000});
    ASSERT_GT(flushes, size_t{1000});
    for (int t : {1, 3, 8}) {
      const ScopedBulkTuning tiny(BulkTuning{0, 7});
      omp_set_num_threads(t);
      const Plan plan = build_plan(g_new.view(), p, {});
      omp_set_num_threads(threads);
      ASSERT_EQ(plan.steps.size(), one.steps.size());
      for (size_t s = 0; s < one.steps.size(); ++s) {
        const ChunkPlan &a = one.steps[s], &b = plan.steps[s];
        EXPECT_TRUE(a.remote_vid == b.remote_vid && a.remote_gpu == b.remote_gpu && a.remote_slot == b.remote_slot &&
                    a.flush_vid == b.flush_vid && a.flush_slot == b.flush_slot && a.src_merged == b.src_merged &&
                    a.trans_vid == b.trans_vid && a.trans_slot == b.trans_slot && a.trans_reused == b.trans_reused)
            << "m " << m << " n " << n << ", " << t << " threads, step " << s;
      }
      EXPECT_TRUE(same_plan(one, plan)) << "m " << m << " n " << n << ", " << t << " threads";
      EXPECT_EQ(find_derivation_mismatch(plan), "") << "m " << m << " n " << n << ", " << t << " threads";
    }
  }
}

// One chunk: built by all threads (rows filled and sorted in parallel, the
// neighbor set as shared bits); the same plan as one thread building it, on
// graphs above the parallel threshold (and several chunks, side by side).
TEST(PlanBuilder, OneChunkByAllThreadsSameAsOneThread) {
  const int threads = omp_get_max_threads();
  for (auto kind : {test::GraphKind::community, test::GraphKind::rmat})
    for (auto [m, n] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 3}}) {
      const Graph g = test::make_graph(kind, 3000, 60000, 5);
      const Partition p = test::range_partition(g, m, n);
      omp_set_num_threads(1);
      const Plan one = build_plan(g.view(), p, {});
      omp_set_num_threads(8);
      const Plan all = build_plan(g.view(), p, {});
      omp_set_num_threads(threads);
      EXPECT_TRUE(same_plan(one, all)) << "m " << m << " n " << n;
    }
}

TEST(PlanBuilder, EmptyChunksAndSingleChunk) {
  const Graph g = test::make_graph(test::GraphKind::random, 10, 30, 4);
  for (int m : {1, 2, 4})
    for (int n : {1, 8}) {  // 4 x 8 chunks over 10 vertices: many are empty
      const Partition p = test::range_partition(g, m, n);
      const Plan plan = build_plan(g.view(), p, {});
      EXPECT_EQ(check_plan(plan, g.view(), p), std::vector<std::string>{}) << "m=" << m << " n=" << n;
    }
}

TEST(PlanBuilder, RejectsPartitionOfAnotherShape) {
  const Graph g = test::make_graph(test::GraphKind::random, 50, 100, 4);
  Partition p = test::range_partition(g, 2, 2);
  p.num_vertices = 49;
  EXPECT_THROW(build_plan(g.view(), p, {}), Error);
  p = test::range_partition(g, 2, 2);
  p.chunk_offsets[2] = 20;  // partition 1 starts at 25
  EXPECT_THROW(build_plan(g.view(), p, {}), Error);
}

}  // namespace
}  // namespace ht
