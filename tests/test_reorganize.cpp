// Algorithm 4: phase 1 groups chunks sharing neighbors into one batch,
// phase 2 chains batches sharing transition vertices; deterministic; and
// how the greedy result compares with the partitioner's order under Eq. 4.
#include <omp.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <span>
#include <tuple>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_cost.hpp"
#include "partition/reorganize.hpp"
#include "partition/sorted_sets.hpp"
#include "plan_test_graphs.hpp"

namespace ht {
namespace {

ChunkNeighbors views(const std::vector<std::vector<vid_t>>& sets) {
  ChunkNeighbors v;
  for (const auto& s : sets) v.emplace_back(s);
  return v;
}

std::vector<int> shuffled(int n, uint64_t seed) {
  std::vector<int> p(n);
  std::iota(p.begin(), p.end(), 0);
  rng::Stream r(seed, 1);
  for (int k = n - 1; k > 0; --k) std::swap(p[k], p[r.below(k + 1)]);
  return p;
}

TEST(Reorganize, IdentityOrderIsValid) {
  const BatchOrder o = BatchOrder::identity(3, 4);
  EXPECT_TRUE(o.valid());
  EXPECT_EQ(o.at(2, 1), 2);
  BatchOrder bad = o;
  bad.chunk[0] = 1;  // partition 0 runs chunk 1 twice
  EXPECT_FALSE(bad.valid());
}

// Partition i's chunk perm_i[c] needs the "topic" set T_c plus private
// vertices; phase 1 must put the three chunks of each topic in one batch.
TEST(Reorganize, PhaseOneGroupsChunksWithSharedNeighbors) {
  const int m = 3, n = 5;
  std::vector<std::vector<int>> perm = {{0, 1, 2, 3, 4}, shuffled(n, 1), shuffled(n, 2)};
  std::vector<std::vector<vid_t>> sets(m * n);
  for (int i = 0; i < m; ++i)
    for (int c = 0; c < n; ++c) {
      auto& s = sets[i * n + perm[i][c]];
      for (vid_t v = 0; v < 8; ++v) s.push_back(static_cast<vid_t>(c * 8 + v));             // topic c
      for (vid_t v = 0; v < 3; ++v) s.push_back(static_cast<vid_t>(100 + i * 20 + c * 3 + v));  // private
      std::sort(s.begin(), s.end());
    }
  const BatchOrder order = reorganize(views(sets), m, n, 200);
  ASSERT_TRUE(order.valid());
  for (int j = 0; j < n; ++j) {
    const int topic = static_cast<int>(std::find(perm[0].begin(), perm[0].end(), order.at(j, 0)) - perm[0].begin());
    for (int i = 1; i < m; ++i) EXPECT_EQ(order.at(j, i), perm[i][topic]) << "batch " << j << " partition " << i;
  }
  const PlanVolumes v = order_volumes(views(sets), order);
  EXPECT_EQ(v.v_p2p, n * (8 + 3 * m));  // topics loaded once per batch
}

// One GPU; chunk c is the window [10 p(c), 10 p(c) + 15) for a shuffled
// position p: only neighbors in the chain overlap (by 5). Phase 2 must
// follow the chain, so V_ru = V_p2p - 5 (n - 1).
TEST(Reorganize, PhaseTwoFollowsTheChain) {
  const int n = 9;
  const auto pos = shuffled(n, 3);
  std::vector<std::vector<vid_t>> sets(n);
  for (int c = 0; c < n; ++c)
    for (vid_t v = 0; v < 15; ++v) sets[c].push_back(static_cast<vid_t>(10 * pos[c] + v));
  const BatchOrder order = reorganize(views(sets), 1, n, 200);
  const PlanVolumes v = order_volumes(views(sets), order), before = order_volumes(views(sets), BatchOrder::identity(1, n));
  EXPECT_EQ(v.v_p2p, 15 * n);
  EXPECT_EQ(v.v_ru, 15 * n - 5 * (n - 1));
  EXPECT_GT(before.v_ru, v.v_ru);  // the shuffled identity order breaks the chain
  for (int j = 1; j < n; ++j) EXPECT_EQ(std::abs(pos[order.at(j, 0)] - pos[order.at(j - 1, 0)]), 1);
}

TEST(Reorganize, DeterministicWhateverTheThreadCount) {
  const Graph g = test::make_graph(test::GraphKind::rmat, 600, 4000, 21);
  const Partition p = test::range_partition(g, 4, 8);
  const auto chunks = build_chunks(g.view(), p);
  ChunkNeighbors nbr;
  for (const auto& c : chunks) nbr.emplace_back(c.nbr);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const BatchOrder a = reorganize(nbr, 4, 8, g.num_vertices);
  omp_set_num_threads(std::max(2, threads));
  const BatchOrder b = reorganize(nbr, 4, 8, g.num_vertices);
  const BatchOrder c = reorganize(nbr, 4, 8, g.num_vertices);
  omp_set_num_threads(threads);
  EXPECT_EQ(a.chunk, b.chunk);
  EXPECT_EQ(b.chunk, c.chunk);
}

// The raw greedy order against the partitioner's order on generated inputs
// (shuffled partitions, whose chunk c of every partition covers similar
// original ids). Algorithm 4 is a heuristic and can raise C: Eq. 4 charges a
// row shared over P2P (1/T_dd) more than a row reused in place (1/T_ru), so
// grouping chunks for inter-GPU sharing can cost more than the in-place
// reuse of the partitioner's order (Figure 6's example is such a case, and
// so are some of these inputs: 6 of 54 at the time of writing, by up to
// 8%). It lowers C on most inputs, and build_plan never raises it: it keeps
// the partitioner's order when the greedy one costs more.
TEST(Reorganize, GreedyUsuallyLowersCostAndThePlanNeverRaisesIt) {
  const CostProfile prof;
  int lowered = 0, raised = 0, total = 0;
  for (auto kind : {test::GraphKind::random, test::GraphKind::rmat, test::GraphKind::community})
    for (int m : {1, 2, 4})
      for (int n : {3, 8})
        for (uint64_t seed = 1; seed <= 3; ++seed) {
          const Graph g = test::make_graph(kind, 400, 2400, seed * 31 + m + n);
          const auto [g_new, p] = test::shuffled_partition(g, m, n, seed);
          const auto chunks = build_chunks(g_new.view(), p);
          ChunkNeighbors nbr;
          for (const auto& c : chunks) nbr.emplace_back(c.nbr);
          const BatchOrder order = reorganize(nbr, m, n, g.num_vertices);
          const double before = comm_cost(order_volumes(nbr, BatchOrder::identity(m, n)), prof, 1);
          const double after = comm_cost(order_volumes(nbr, order), prof, 1);
          lowered += after < before;
          raised += after > before;
          ++total;
          const Plan plan = build_plan(g_new.view(), p, {true, prof});
          EXPECT_LE(plan.cost_after, plan.cost_before);
          EXPECT_EQ(plan.reorganized, after <= before);
          EXPECT_DOUBLE_EQ(plan.cost_after, std::min(before, after));
        }
  EXPECT_GT(lowered, 2 * total / 3);
  EXPECT_LT(raised, total / 4);
}

// The unions and intersections by all threads (cut into pieces at ids of the
// longest list) against the serial set operations, at 1 and 8 threads, on
// lists above the parallel threshold: of different lengths, overlapping,
// empty, and with ids at both ends of the 32-bit range.
TEST(SortedSets, SameAsSerialSetOperationsAtAnyThreadCount) {
  rng::Stream r(17, 3);
  auto random_list = [&](size_t size, uint64_t range) {
    std::vector<vid_t> v(size);
    for (auto& x : v) x = static_cast<vid_t>(r.below(range));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  std::vector<std::vector<vid_t>> lists{random_list(300000, 1000000), random_list(90000, 400000), {},
                                        random_list(200000, uint64_t{UINT32_MAX} + 1), random_list(5, 50)};
  lists[3].push_back(UINT32_MAX);
  lists[1].insert(lists[1].begin(), 0);
  std::vector<vid_t> want;
  for (const auto& l : lists) {
    std::vector<vid_t> tmp;
    std::set_union(want.begin(), want.end(), l.begin(), l.end(), std::back_inserter(tmp));
    want.swap(tmp);
  }
  std::vector<std::span<const vid_t>> spans(lists.begin(), lists.end());
  const int threads = omp_get_max_threads();
  for (int t : {1, 8}) {
    omp_set_num_threads(t);
    EXPECT_EQ(sorted_sets::unite(spans), want) << t << " threads";
    for (size_t a = 0; a < lists.size(); ++a)
      for (size_t b = 0; b < lists.size(); ++b) {
        std::vector<vid_t> both;
        std::set_intersection(lists[a].begin(), lists[a].end(), lists[b].begin(), lists[b].end(),
                              std::back_inserter(both));
        EXPECT_EQ(sorted_sets::intersection_size(lists[a], lists[b]), static_cast<int64_t>(both.size()))
            << a << " " << b << ", " << t << " threads";
      }
  }
  omp_set_num_threads(threads);
  EXPECT_TRUE(sorted_sets::unite(std::span<const std::span<const vid_t>>()).empty());
}

// Inputs above the parallel thresholds (membership and overlap counts in
// blocks, unions by all threads): the same order and unions at 1, 2 and 8
// threads.
TEST(Reorganize, LargeInputsSameOrderAndUnionsAtAnyThreadCount) {
  const Graph g = test::make_graph(test::GraphKind::community, 60000, 600000, 23);
  for (auto [m, n] : {std::pair{4, 8}, std::pair{2, 3}}) {
    const auto [g_new, p] = test::shuffled_partition(g, m, n, 5);
    const auto chunks = build_chunks(g_new.view(), p);
    ChunkNeighbors nbr;
    for (const auto& c : chunks) nbr.emplace_back(c.nbr);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    std::vector<std::vector<vid_t>> unions_one;
    const BatchOrder one = reorganize(nbr, m, n, g.num_vertices, &unions_one);
    const PlanVolumes volumes_one = order_volumes(nbr, one);
    for (int t : {2, 8}) {
      omp_set_num_threads(t);
      std::vector<std::vector<vid_t>> unions;
      const BatchOrder order = reorganize(nbr, m, n, g.num_vertices, &unions);
      EXPECT_EQ(order.chunk, one.chunk) << t << " threads";
      EXPECT_EQ(unions, unions_one) << t << " threads";
      EXPECT_EQ(batch_unions(nbr, order), unions_one) << t << " threads";
      const PlanVolumes v = order_volumes(nbr, order);
      EXPECT_EQ(std::tie(v.v_ori, v.v_p2p, v.v_ru), std::tie(volumes_one.v_ori, volumes_one.v_p2p, volumes_one.v_ru));
    }
    omp_set_num_threads(threads);
  }
}

}  // namespace
}  // namespace ht
