// The device plan's long-row segments (engine/device_plan.hpp): rows with
// more than kLongRowEdges edges cut into nearly equal pieces that cover the
// row exactly, listed in both directions of a plan's packed topology; and
// the order of a step's returns after mark_first_flushes.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "engine/device_plan.hpp"
#include "engine/step_scratch.hpp"
#include "partition/plan_builder.hpp"
#include "plan_test_graphs.hpp"

namespace ht {
namespace {

// Checks the segments of `offsets`: every long row's edges exactly once, in
// order, in pieces of at most kLongRowEdges; no short row listed.
void expect_cover(const std::vector<int64_t>& offsets, const std::vector<uint32_t>& seg_row,
                  const std::vector<int64_t>& seg_edge) {
  ASSERT_EQ(seg_row.size(), seg_edge.size());
  std::vector<int64_t> covered(offsets.size() - 1, 0);
  for (size_t k = 0; k < seg_row.size(); ++k) {
    const uint32_t r = seg_row[k];
    const bool last = k + 1 == seg_row.size() || seg_row[k + 1] != r;
    const int64_t end = last ? offsets[r + 1] : seg_edge[k + 1];
    if (k > 0) {
      EXPECT_LE(seg_row[k - 1], r) << "rows in ascending order";
    }
    if (k == 0 || seg_row[k - 1] != r) {
      EXPECT_EQ(seg_edge[k], offsets[r]) << "row " << r << " starts at its first edge";
    }
    EXPECT_GT(end, seg_edge[k]);
    EXPECT_LE(end - seg_edge[k], kLongRowEdges);
    covered[r] += end - seg_edge[k];
  }
  for (size_t r = 0; r + 1 < offsets.size(); ++r) {
    const int64_t edges = offsets[r + 1] - offsets[r];
    EXPECT_EQ(covered[r], edges > kLongRowEdges ? edges : 0) << "row " << r;
  }
}

TEST(DevicePlan, LongRowsSplitIntoNearlyEqualSegments) {
  // Rows of 0, 5, kLongRowEdges, kLongRowEdges + 1, 20,000 and 3 * kLongRowEdges edges.
  const std::vector<int64_t> degrees{0, 5, kLongRowEdges, kLongRowEdges + 1, 20000, 3 * kLongRowEdges};
  std::vector<int64_t> offsets{0};
  for (int64_t d : degrees) offsets.push_back(offsets.back() + d);
  std::vector<uint32_t> seg_row;
  std::vector<int64_t> seg_edge;
  split_long_rows(offsets, seg_row, seg_edge);
  expect_cover(offsets, seg_row, seg_edge);
  // ceil(edges / kLongRowEdges) pieces each: 2, 5 and 3.
  EXPECT_EQ(seg_row, (std::vector<uint32_t>{3, 3, 4, 4, 4, 4, 4, 5, 5, 5}));
  EXPECT_EQ(seg_edge[1] - seg_edge[0], (kLongRowEdges + 1) / 2) << "nearly equal pieces";
  split_long_rows(std::vector<int64_t>{0, 3, 9}, seg_row, seg_edge);
  EXPECT_TRUE(seg_row.empty() && seg_edge.empty()) << "no long row, no segment (and the lists are cleared)";
}

// A graph with a hub of 7,000 in- and out-edges (long rows both ways).
Graph hub_graph(uint64_t seed) {
  rng::Stream r(seed, 0);
  EdgeList el;
  el.num_vertices = 9000;
  for (int e = 0; e < 20000; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(9000)));
    el.dst.push_back(static_cast<vid_t>(r.below(9000)));
  }
  for (vid_t v = 0; v < 7000; ++v) {
    el.src.insert(el.src.end(), {v, 11});
    el.dst.insert(el.dst.end(), {11, v});
  }
  return csc_from_edges(std::move(el));
}

// A hub of 7,000 in- and out-edges: the packed step (what the trainer streams
// to a device) lists the same segments as the topology's offsets give.
TEST(DevicePlan, PackedStepsListTheHubsSegments) {
  Graph hub = hub_graph(5);
  const Plan plan = build_plan(hub.view(), test::range_partition(hub, 1, 2));
  std::vector<float> inv_sqrt_deg(hub.num_vertices, 1.f);
  std::vector<std::vector<std::byte>> blocks;
  const DevicePlan dp = build_device_plan(plan, 0, CommMode::full, {inv_sqrt_deg, {}}, false, [&](int64_t bytes) {
    blocks.emplace_back(static_cast<size_t>(bytes));
    return blocks.back().data();
  });
  int64_t forward = 0, transposed = 0;
  for (const DeviceStep& ds : dp.steps) {
    const DevTopology t = ds.bind({ds.bytes.data(), static_cast<int64_t>(ds.bytes.size())}).topo;
    const std::vector<int64_t> offsets(t.offsets.data, t.offsets.data + t.offsets.size);
    const std::vector<int64_t> t_offsets(t.t_offsets.data, t.t_offsets.data + t.t_offsets.size);
    expect_cover(offsets, {t.seg_row.data, t.seg_row.data + t.seg_row.size},
                 {t.seg_edge.data, t.seg_edge.data + t.seg_edge.size});
    expect_cover(t_offsets, {t.t_seg_row.data, t.t_seg_row.data + t.t_seg_row.size},
                 {t.t_seg_edge.data, t.t_seg_edge.data + t.t_seg_edge.size});
    forward += t.seg_row.size;
    transposed += t.t_seg_row.size;
    EXPECT_EQ(ds.segments, std::max(t.seg_row.size, t.t_seg_row.size));
    EXPECT_LE(ds.segments, dp.max_segments);
  }
  EXPECT_EQ(forward, 2) << "the hub's 7,000+ in-edges, in one chunk";
  EXPECT_GE(transposed, 2) << "the hub's out-edges to the first chunk";
}

// A step's packed bytes are the same at any thread count: one step built in
// parallel (a plan of one step: make_topology's loops, the transpose filled
// by atomic slots and sorted per row) or several steps side by side,
// with edge keys and weights, the hub graph's long rows included.
TEST(DevicePlan, PackedStepsSameBytesAtAnyThreadCount) {
  rng::Stream r(7, 0);
  EdgeList el;
  el.num_vertices = 5000;
  for (int e = 0; e < 40000; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(5000)));
    el.dst.push_back(static_cast<vid_t>(r.below(5000)));
  }
  for (vid_t v = 0; v < 4000; ++v) {
    el.src.insert(el.src.end(), {v, 3});
    el.dst.insert(el.dst.end(), {3, v});
  }
  Graph g = csc_from_edges(std::move(el));
  std::vector<float> inv_sqrt_deg(g.num_vertices);
  std::vector<int64_t> orig(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    inv_sqrt_deg[v] = 1.0f / static_cast<float>(1 + v % 13);
    orig[v] = g.num_vertices - 1 - v;
  }
  for (int n : {1, 3})
    for (CommMode mode : {CommMode::baseline, CommMode::full}) {
      const Plan plan = build_plan(g.view(), test::range_partition(g, 2, n));
      const int threads = omp_get_max_threads();
      auto build = [&](int t, std::vector<std::vector<std::byte>>& blocks) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(t);
        DevicePlan dp = build_device_plan(plan, 1, mode, {inv_sqrt_deg, orig}, true, [&](int64_t bytes) {
          blocks.emplace_back(static_cast<size_t>(bytes));
          return blocks.back().data();
        });
        omp_set_num_threads(before);
        return dp;
      };
      std::vector<std::vector<std::byte>> one_blocks, four_blocks, both_blocks;
      const DevicePlan one = build(1, one_blocks), four = build(4, four_blocks);
      // Both devices' steps side by side (build_device_plans): device 1's the same.
      omp_set_num_threads(4);
      std::vector<DevicePlan> both = build_device_plans(plan, 0, 2, mode, {inv_sqrt_deg, orig}, true, [&](int64_t bytes) {
        both_blocks.emplace_back(static_cast<size_t>(bytes));
        return both_blocks.back().data();
      });
      omp_set_num_threads(threads);
      for (const DevicePlan* other : std::vector<const DevicePlan*>{&four, &both[1]}) {
        ASSERT_EQ(one.steps.size(), other->steps.size());
        EXPECT_EQ(one.max_step_bytes, other->max_step_bytes);
        EXPECT_EQ(one.max_flush, other->max_flush);
        for (size_t j = 0; j < one.steps.size(); ++j) {
          const auto &a = one.steps[j].bytes, &b = other->steps[j].bytes;
          ASSERT_EQ(a.size(), b.size()) << "n " << n << " step " << j;
          EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << "n " << n << " step " << j;
        }
      }
    }
}

// The transpose (make_topology's t_offsets, t_edge) is each source row's
// edges in ascending id, as a serial scan lists them, at any thread count:
// one part of the edge list per thread where the edges outnumber the rows
// enough (1 and 3 chunks of a dense graph with a hub), one part otherwise.
TEST(DevicePlan, TransposeListsEachRowsEdgesAscendingAtAnyThreadCount) {
  rng::Stream r(11, 0);
  EdgeList el;
  el.num_vertices = 3000;
  for (int e = 0; e < 60000; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(3000)));
    el.dst.push_back(static_cast<vid_t>(r.below(3000)));
  }
  for (vid_t v = 0; v < 2500; ++v) {
    el.src.push_back(7);
    el.dst.push_back(v);
  }
  Graph g = csc_from_edges(std::move(el));
  std::vector<float> inv_sqrt_deg(g.num_vertices, 0.5f);
  const int threads = omp_get_max_threads();
  for (int n : {1, 3})
    for (CommMode mode : {CommMode::baseline, CommMode::full}) {
      const Plan plan = build_plan(g.view(), test::range_partition(g, 1, n));
      const int64_t rows = mode == CommMode::baseline ? plan.nbr_capacity[0] : plan.merged_capacity(0);
      for (int j = 0; j < n; ++j) {
        const ChunkPlan& s = plan.step(j, 0);
        const HostTopology ref = make_topology(s, mode, rows, {inv_sqrt_deg, {}});
        // The reference: a serial scan of the edges, row by row.
        std::vector<int64_t> t_offsets(static_cast<size_t>(rows) + 1, 0);
        for (uint32_t v : ref.src) ++t_offsets[v + 1];
        std::partial_sum(t_offsets.begin(), t_offsets.end(), t_offsets.begin());
        std::vector<uint32_t> t_edge(ref.src.size());
        std::vector<int64_t> at(t_offsets.begin(), t_offsets.end() - 1);
        for (size_t e = 0; e < ref.src.size(); ++e) t_edge[at[ref.src[e]]++] = static_cast<uint32_t>(e);
        for (int t : {1, 2, 3, 8}) {
          omp_set_num_threads(t);
          const HostTopology got = make_topology(s, mode, rows, {inv_sqrt_deg, {}});
          omp_set_num_threads(threads);
          EXPECT_EQ(got.t_offsets, t_offsets) << "n " << n << " step " << j << " threads " << t;
          EXPECT_EQ(got.t_edge, t_edge) << "n " << n << " step " << j << " threads " << t;
          EXPECT_EQ(got.t_seg_row, ref.t_seg_row);
          EXPECT_EQ(got.t_seg_edge, ref.t_seg_edge);
        }
      }
    }
}

// A step's packed bytes do not depend on the memory they are packed into
// (the trainer packs resident steps into ordinary memory and streamed ones
// into pinned memory; the padding between arrays is written too) nor on how
// the threads are shared out: fewer steps than threads (each step's loops
// get a share: nested), as many or more (one thread each), one thread.
TEST(DevicePlan, PackedBytesSameInAnyMemoryAndThreadShare) {
  Graph g = test::make_graph(test::GraphKind::rmat, 2000, 30000, 5);
  std::vector<float> inv_sqrt_deg(g.num_vertices);
  std::vector<int64_t> orig(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    inv_sqrt_deg[v] = 1.0f / static_cast<float>(2 + v % 7);
    orig[v] = 3 * v + 1;
  }
  const int threads = omp_get_max_threads();
  for (int n : {1, 2, 3})
    for (CommMode mode : {CommMode::baseline, CommMode::p2p, CommMode::full}) {
      const Plan plan = build_plan(g.view(), test::range_partition(g, 2, n));
      struct Built {
        std::vector<std::vector<std::byte>> blocks;
        std::vector<DevicePlan> plans;
      };
      // Both devices' steps with `t` threads, in blocks that held `fill`.
      auto build = [&](int t, std::byte fill) {
        auto out = std::make_unique<Built>();
        omp_set_num_threads(t);
        out->plans = build_device_plans(plan, 0, 2, mode, {inv_sqrt_deg, orig}, true, [&](int gpu, int64_t bytes) {
          EXPECT_TRUE(gpu == 0 || gpu == 1);
          out->blocks.emplace_back(static_cast<size_t>(bytes), fill);
          return out->blocks.back().data();
        });
        omp_set_num_threads(threads);
        return out;
      };
      const auto ref = build(1, std::byte{0});
      for (auto [t, fill] : {std::pair{1, std::byte{0xab}}, std::pair{2 * n, std::byte{0x5c}},
                             std::pair{8, std::byte{0xff}}, std::pair{5, std::byte{0}}}) {
        const auto got = build(t, fill);
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < n; ++j) {
            const auto &a = ref->plans[i].steps[j].bytes, &b = got->plans[i].steps[j].bytes;
            ASSERT_EQ(a.size(), b.size());
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0)
                << "n " << n << " device " << i << " step " << j << " threads " << t;
          }
      }
    }
}

template <typename T>
std::vector<T> listed(DevArray<T> a) {
  return {a.data, a.data + a.size};
}

// A device step's topology against make_topology's on the host: the lists a
// derived step's device writes and the ones the host packs.
void expect_topology_lists(const DevTopology& t, const HostTopology& ref, const std::string& where) {
  EXPECT_EQ(listed(t.offsets), ref.offsets) << where;
  EXPECT_EQ(listed(t.src), ref.src) << where;
  EXPECT_EQ(listed(t.weight), ref.weight) << where;
  EXPECT_EQ(listed(t.dst_row), ref.dst_row) << where;
  EXPECT_EQ(listed(t.t_offsets), ref.t_offsets) << where;
  EXPECT_EQ(listed(t.t_edge), ref.t_edge) << where;
  EXPECT_EQ(listed(t.edge_dst), ref.edge_dst) << where;
  EXPECT_EQ(listed(t.edge_src_key), ref.src_key) << where;
  EXPECT_EQ(listed(t.edge_dst_key), ref.dst_key) << where;
  EXPECT_EQ(listed(t.seg_row), ref.seg_row) << where;
  EXPECT_EQ(listed(t.t_seg_row), ref.t_seg_row) << where;
  EXPECT_EQ(listed(t.t_seg_edge), ref.t_seg_edge) << where;
}

// A packed step's topology is written straight into its block (counted
// first, then filled): its lists are make_topology's, for every comm mode,
// remote area layout (odd steps' remote rows shifted), GCN's weights with
// edge keys and SAGE's mean, the hub's long rows included.
TEST(DevicePlan, PackedTopologyIsMakeTopologys) {
  Graph g = test::make_graph(test::GraphKind::rmat, 3000, 40000, 9);
  std::vector<float> inv_sqrt_deg(g.num_vertices), inv_deg(g.num_vertices);
  std::vector<int64_t> orig(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    inv_sqrt_deg[v] = 1.0f / static_cast<float>(2 + v % 7);
    inv_deg[v] = 1.0f / static_cast<float>(1 + v % 5);
    orig[v] = 5 * v + 2;
  }
  const EdgeKeys gcn{inv_sqrt_deg, orig}, sage{{}, {}, inv_deg};
  for (int n : {1, 3})
    for (CommMode mode : {CommMode::baseline, CommMode::p2p, CommMode::full})
      for (RemoteAreas areas : {RemoteAreas::one, RemoteAreas::early_pulls, RemoteAreas::kept_rows})
        for (const EdgeKeys* keys : {&gcn, &sage}) {
          if (areas != RemoteAreas::one && mode != CommMode::full) continue;
          const Plan plan = build_plan(g.view(), test::range_partition(g, 2, n));
          std::vector<std::vector<std::byte>> blocks;
          const std::vector<DevicePlan> dps =
              build_device_plans(plan, 0, 2, mode, *keys, keys == &gcn, [&](int64_t bytes) {
                blocks.emplace_back(static_cast<size_t>(bytes), std::byte{0x77});
                return blocks.back().data();
              }, areas);
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < n; ++j) {
              const DevicePlan& dp = dps[static_cast<size_t>(i)];
              const DeviceStep& ds = dp.steps[static_cast<size_t>(j)];
              const HostTopology ref = make_topology(plan.step(j, i), mode, dp.buffer_rows, *keys, dp.trans_capacity,
                                                     (j & 1) ? dp.remote_shift : 0);
              const DevTopology t = ds.bind({ds.bytes.data(), static_cast<int64_t>(ds.bytes.size())}).topo;
              const std::string where = "n " + std::to_string(n) + " mode " + std::to_string(static_cast<int>(mode)) +
                                        " areas " + std::to_string(static_cast<int>(areas)) + " device " +
                                        std::to_string(i) + " step " + std::to_string(j);
              EXPECT_EQ(t.num_dst, ref.num_dst) << where;
              EXPECT_EQ(t.num_src_rows, ref.num_src_rows) << where;
              expect_topology_lists(t, ref, where);
              EXPECT_EQ(listed(t.seg_edge), ref.seg_edge) << where;
              EXPECT_EQ(ds.segments, ref.segments()) << where;
            }
        }
}

// A derived step (DeviceStep::derived: resident steps, whose device writes
// the rest of the topology) packs the same first bytes as a step packed
// whole, and the derivation (derive_topology_on_host: the CPU executor's,
// and the lists a GPU must equal) writes make_topology's lists: every comm
// mode and remote area layout, GCN's weights with edge keys, SAGE's mean,
// GAT's neither, the hub's long rows in both directions.
TEST(DevicePlan, DerivedTopologyIsMakeTopologys) {
  for (int graph = 0; graph < 2; ++graph) {
    Graph g = graph == 0 ? test::make_graph(test::GraphKind::rmat, 3000, 40000, 9) : hub_graph(3);
    std::vector<float> inv_sqrt_deg(g.num_vertices), inv_deg(g.num_vertices);
    std::vector<int64_t> orig(g.num_vertices);
    for (int64_t v = 0; v < g.num_vertices; ++v) {
      inv_sqrt_deg[v] = 1.0f / static_cast<float>(2 + v % 7);
      inv_deg[v] = 1.0f / static_cast<float>(1 + v % 5);
      orig[v] = 5 * v + 2;
    }
    const EdgeKeys gcn{inv_sqrt_deg, orig}, sage{{}, {}, inv_deg}, gat{{}, orig};
    int64_t long_rows = 0;
    for (int n : {1, 3})
      for (CommMode mode : {CommMode::baseline, CommMode::p2p, CommMode::full})
        for (RemoteAreas areas : {RemoteAreas::one, RemoteAreas::early_pulls, RemoteAreas::kept_rows})
          for (const EdgeKeys* keys : {&gcn, &sage, &gat}) {
            if (areas != RemoteAreas::one && mode != CommMode::full) continue;
            const Plan plan = build_plan(g.view(), test::range_partition(g, 2, n));
            std::vector<std::vector<std::byte>> blocks;
            auto build = [&](std::vector<uint8_t> derived) {
              return build_device_plans(plan, 0, 2, mode, *keys, keys != &sage, [&](int, int64_t bytes) {
                blocks.emplace_back(static_cast<size_t>(bytes), std::byte{0x77});
                return blocks.back().data();
              }, areas, derived);
            };
            const std::vector<DevicePlan> whole = build({}), dps = build({1, 0});
            for (int i = 0; i < 2; ++i)
              for (int j = 0; j < n; ++j) {
                const DevicePlan& dp = dps[static_cast<size_t>(i)];
                DeviceStep ds = dp.steps[static_cast<size_t>(j)];
                const DeviceStep& packed = whole[static_cast<size_t>(i)].steps[static_cast<size_t>(j)];
                const std::string where = "graph " + std::to_string(graph) + " n " + std::to_string(n) + " mode " +
                                          std::to_string(static_cast<int>(mode)) + " areas " +
                                          std::to_string(static_cast<int>(areas)) + " device " + std::to_string(i) +
                                          " step " + std::to_string(j);
                if (i == 1) {  // device 1: not derived, the same bytes as whole
                  ASSERT_FALSE(ds.derived) << where;
                  ASSERT_EQ(ds.bytes.size(), packed.bytes.size()) << where;
                  EXPECT_EQ(std::memcmp(ds.bytes.data(), packed.bytes.data(), ds.bytes.size()), 0) << where;
                  continue;
                }
                ASSERT_TRUE(ds.derived) << where;
                ASSERT_LT(static_cast<int64_t>(ds.bytes.size()), ds.block_bytes) << where;
                const size_t src_at = static_cast<size_t>(ds.src.offset), after = static_cast<size_t>(ds.seg_row.offset);
                EXPECT_EQ(std::memcmp(ds.bytes.data(), packed.bytes.data(), src_at), 0)
                    << where << ": the packed part is the whole step's first bytes (but src)";
                EXPECT_EQ(std::memcmp(ds.bytes.data() + after, packed.bytes.data() + after, ds.bytes.size() - after), 0)
                    << where;
                // The device's block: the packed part and the plan's src, the rest garbage until derived.
                std::vector<std::byte> block = host_block_of(ds, std::byte{0xcd});
                ASSERT_EQ(packed_copies(ds, {block.data(), ds.block_bytes}).size(), 3u) << where;
                const int64_t segments =
                    derive_topology_on_host(derivation_of(ds, {block.data(), ds.block_bytes}), *keys);
                ds.t_seg_row.count = ds.t_seg_edge.count = segments;
                const HostTopology ref = make_topology(plan.step(j, i), mode, dp.buffer_rows, *keys,
                                                       dp.trans_capacity, (j & 1) ? dp.remote_shift : 0);
                const DevTopology t = ds.bind({block.data(), ds.block_bytes}).topo;
                expect_topology_lists(t, ref, where);
                long_rows += segments;
              }
          }
    if (graph == 1) {
      EXPECT_GT(long_rows, 0) << "the hub's out-edges give transpose segments";
    }
  }
}

// The error the host's derivation of `plan`'s step 1 (device 0, derived)
// stops with ("" when none).
std::string derivation_error(const Plan& plan) {
  std::vector<std::vector<std::byte>> blocks;
  const std::vector<DevicePlan> dps = build_device_plans(plan, 0, 1, CommMode::full, {}, false, [&](int, int64_t bytes) {
    blocks.emplace_back(static_cast<size_t>(bytes));
    return blocks.back().data();
  }, RemoteAreas::one, {1});
  const DeviceStep& ds = dps[0].steps[1];
  std::vector<std::byte> block = host_block_of(ds);
  try {
    derive_topology_on_host(derivation_of(ds, {block.data(), ds.block_bytes}), {});
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

// A derived step whose destination lacks its self-loop fails the derivation
// with the packed build's message.
TEST(DevicePlan, DerivedStepWithoutSelfLoopSaysWhichDestination) {
  Graph g = test::make_graph(test::GraphKind::rmat, 1000, 8000, 3);
  Plan plan = build_plan(g.view(), test::range_partition(g, 1, 2));
  ChunkPlan& s = plan.steps[1];
  // The first destination's self-loop turned into another source vertex.
  int64_t e = s.offsets[0];
  while (s.src_vid[e] != static_cast<vid_t>(s.dst_begin)) ++e;
  s.src_vid[e] = static_cast<vid_t>(s.dst_begin + 1);
  const std::string error = derivation_error(plan);
  ASSERT_FALSE(error.empty()) << "a destination without a self-loop derived";
  EXPECT_NE(error.find("destination " + std::to_string(s.dst_begin) + " has no self-loop"), std::string::npos) << error;
}

// A derived step whose edge reads a row beyond the buffer: its packing
// leaves src to the device, whose derivation stops with the row's error.
TEST(DevicePlan, DerivedStepBeyondTheBufferSaysWhichRow) {
  Graph g = test::make_graph(test::GraphKind::rmat, 1000, 8000, 3);
  Plan plan = build_plan(g.view(), test::range_partition(g, 1, 2));
  plan.steps[1].src_merged[7] = 1u << 30;
  const std::string error = derivation_error(plan);
  ASSERT_FALSE(error.empty()) << "a row beyond the buffer derived";
  EXPECT_NE(error.find("beyond the buffer"), std::string::npos) << error;
}

// An edge whose row lies beyond the buffer (a plan that does not fit its
// capacities) stops the packed build with make_topology's error, before any
// block is taken.
TEST(DevicePlan, PackedStepBeyondTheBufferSaysWhichRow) {
  Graph g = test::make_graph(test::GraphKind::rmat, 1000, 8000, 3);
  Plan plan = build_plan(g.view(), test::range_partition(g, 1, 2));
  ChunkPlan& s = plan.steps[1];
  ASSERT_GT(s.src_merged.size(), 10u);
  s.src_merged[7] = 1u << 30;
  std::string expected;
  try {
    make_topology(s, CommMode::full, plan.merged_capacity(0), {});
  } catch (const Error& e) {
    expected = e.what();
  }
  ASSERT_NE(expected.find("beyond the buffer"), std::string::npos) << expected;
  int64_t blocks = 0;
  std::vector<std::vector<std::byte>> kept;
  try {
    build_device_plans(plan, 0, 1, CommMode::full, {}, false, [&](int64_t bytes) {
      ++blocks;
      kept.emplace_back(static_cast<size_t>(bytes));
      return kept.back().data();
    });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  EXPECT_LE(blocks, 1) << "step 0 may be packed; step 1 takes no block";
}

// After mark_first_flushes, each step's flush list is its first returns, then
// the staged ones in ascending vertex order (the host adds walk the store
// forwards), staged_vids equal to them, and the (buffer row, vertex) pairs
// the same as the plan's: for every device of m = 2 and m = 3, with and
// without every row returned (the second: a plan whose returns miss rows);
// on a graph whose steps stage enough returns for the counting passes.
TEST(DevicePlan, StagedReturnsAscendAndKeepTheirRows) {
  int64_t most_staged = 0;
  for (const auto& [vertices, edges] : {std::pair<int64_t, int64_t>{600, 4000}, {120000, 900000}})
  for (int m : {1, 2, 3}) {
    Graph g = test::make_graph(test::GraphKind::rmat, vertices, edges, 3);
    const Plan plan = build_plan(g.view(), test::range_partition(g, m, 3));
    std::vector<float> inv_sqrt_deg(g.num_vertices, 1.f);
    std::vector<std::vector<std::byte>> blocks;
    std::vector<DevicePlan> dps;
    for (int i = 0; i < m; ++i)
      dps.push_back(build_device_plan(plan, i, CommMode::full, {inv_sqrt_deg, {}}, false, [&](int64_t bytes) {
        blocks.emplace_back(static_cast<size_t>(bytes));
        return blocks.back().data();
      }));
    auto pairs_of = [](const DeviceStep& s) {
      const auto* rows = reinterpret_cast<const uint32_t*>(s.bytes.data() + s.flush_rows.offset);
      const auto* vids = reinterpret_cast<const uint32_t*>(s.bytes.data() + s.flush_vids.offset);
      std::vector<std::pair<uint32_t, uint32_t>> out;
      for (int64_t k = 0; k < s.flush_rows.count; ++k) out.push_back({rows[k], vids[k]});
      return out;
    };
    std::vector<std::vector<std::vector<std::pair<uint32_t, uint32_t>>>> before;
    for (const DevicePlan& dp : dps) {
      before.emplace_back();
      for (const DeviceStep& s : dp.steps) before.back().push_back(pairs_of(s));
    }
    std::vector<DevicePlan*> ptrs;
    for (DevicePlan& dp : dps) ptrs.push_back(&dp);
    // Every row returned (all m devices), or a process holding rows no step returns.
    for (const int64_t held_end : {g.num_vertices, g.num_vertices + 5}) {
      mark_first_flushes(ptrs, held_end, 0, held_end);
      for (size_t i = 0; i < dps.size(); ++i)
        for (size_t j = 0; j < dps[i].steps.size(); ++j) {
          const DeviceStep& s = dps[i].steps[j];
          auto now = pairs_of(s), was = before[i][j];
          const std::vector<uint32_t> staged(s.staged_vids.begin(), s.staged_vids.end());
          ASSERT_EQ(static_cast<int64_t>(staged.size()), s.flush_rows.count - s.first_count);
          most_staged = std::max<int64_t>(most_staged, static_cast<int64_t>(staged.size()));
          for (int64_t k = 0; k < static_cast<int64_t>(staged.size()); ++k)
            EXPECT_EQ(staged[k], now[s.first_count + k].second) << "m " << m << " step " << j;
          EXPECT_TRUE(std::is_sorted(staged.begin(), staged.end())) << "m " << m << " device " << i << " step " << j;
          std::sort(now.begin(), now.end());
          std::sort(was.begin(), was.end());
          EXPECT_EQ(now, was) << "m " << m << " device " << i << " step " << j;
        }
    }
  }
  EXPECT_GE(most_staged, 4096) << "no step's staged returns took the counting passes";
}

// mark_first_flushes and mark_handoff over blocks of every list by all
// threads (issue 33) give what their serial definition gives: a step's
// first returns are its vertices no earlier step (batch by batch, devices in
// order) returned; the same lists, staged returns and handoff at 1 thread
// in one block as at 4 threads in blocks of 7, for m = 1, 2, 3.
TEST(DevicePlan, FirstReturnsAndHandoffSameInBlocksAsSerial) {
  Graph g = test::make_graph(test::GraphKind::rmat, 3000, 24000, 5);
  for (int m : {1, 2, 3}) {
    const Plan plan = build_plan(g.view(), test::range_partition(g, m, 3));
    std::vector<float> inv_sqrt_deg(g.num_vertices, 1.f);
    std::vector<std::vector<std::byte>> blocks;
    auto build = [&] {
      std::vector<DevicePlan> dps;
      for (int i = 0; i < m; ++i)
        dps.push_back(build_device_plan(plan, i, CommMode::full, {inv_sqrt_deg, {}}, false, [&](int64_t bytes) {
          blocks.emplace_back(static_cast<size_t>(bytes));
          return blocks.back().data();
        }));
      return dps;
    };
    std::vector<DevicePlan> serial = build(), in_blocks = build();
    // The serial definition of each step's number of first returns.
    std::vector<std::vector<int64_t>> expected(static_cast<size_t>(m));
    std::vector<uint8_t> seen(static_cast<size_t>(g.num_vertices), 0);
    for (int j = 0; j < plan.n; ++j)
      for (int i = 0; i < m; ++i) {
        int64_t firsts = 0;
        for (const vid_t v : serial[static_cast<size_t>(i)].steps[static_cast<size_t>(j)].flush_vids_host)
          if (!seen[v]) {
            seen[v] = 1;
            ++firsts;
          }
        expected[static_cast<size_t>(i)].push_back(firsts);
      }
    auto mark = [&](std::vector<DevicePlan>& dps) {
      std::vector<DevicePlan*> ptrs;
      for (DevicePlan& dp : dps) ptrs.push_back(&dp);
      ASSERT_TRUE(mark_first_flushes(ptrs, g.num_vertices, 0, g.num_vertices));
      mark_handoff(ptrs, g.num_vertices);
    };
    {
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      mark(serial);
      omp_set_num_threads(4);
      const ScopedBulkTuning tiny(BulkTuning{0, 7});
      mark(in_blocks);
      omp_set_num_threads(threads);
    }
    auto lists = [](const DeviceStep& s) {
      const auto* rows = reinterpret_cast<const uint32_t*>(s.bytes.data() + s.flush_rows.offset);
      const auto* vids = reinterpret_cast<const uint32_t*>(s.bytes.data() + s.flush_vids.offset);
      return std::make_pair(std::vector<uint32_t>(rows, rows + s.flush_rows.count),
                            std::vector<uint32_t>(vids, vids + s.flush_vids.count));
    };
    for (size_t i = 0; i < static_cast<size_t>(m); ++i) {
      const DevicePlan &a = serial[i], &b = in_blocks[i];
      for (size_t j = 0; j < a.steps.size(); ++j) {
        const DeviceStep &sa = a.steps[j], &sb = b.steps[j];
        EXPECT_EQ(sa.first_count, expected[i][j]) << "m " << m << " device " << i << " step " << j;
        EXPECT_EQ(sb.first_count, sa.first_count) << "m " << m << " device " << i << " step " << j;
        EXPECT_EQ(sb.handoff_count, sa.handoff_count) << "m " << m << " device " << i << " step " << j;
        EXPECT_EQ(lists(sb), lists(sa)) << "m " << m << " device " << i << " step " << j;
        EXPECT_EQ(std::vector<vid_t>(sb.staged_vids.begin(), sb.staged_vids.end()),
                  std::vector<vid_t>(sa.staged_vids.begin(), sa.staged_vids.end()));
      }
      ASSERT_EQ(a.handoff.size(), b.handoff.size());
      for (size_t j = 0; j < a.handoff.size(); ++j) {
        EXPECT_EQ(b.handoff[j].rows, a.handoff[j].rows) << "m " << m << " device " << i << " batch " << j;
        EXPECT_EQ(b.handoff[j].slots, a.handoff[j].slots);
        EXPECT_EQ(b.handoff[j].host_rows, a.handoff[j].host_rows);
        EXPECT_EQ(b.handoff[j].host_vids, a.handoff[j].host_vids);
      }
    }
    EXPECT_GT(serial.back().steps.back().handoff_count + (m == 1 ? 1 : 0), 0) << "m " << m << ": no handoff to compare";
  }
}

// Kept remote rows (RemoteAreas::kept_rows): each step's copies from the
// other area are its remote rows of this process's devices that the step
// before read too, at their row there, then each range's rows to pull: what
// a map from the previous step's remote vertices to their rows gives, for
// every device of one process and for two of four (a process of a job).
TEST(DevicePlan, KeptRemoteRowsAsAMapFindsThem) {
  const Graph g = test::make_graph(test::GraphKind::community, 3000, 30000, 5);
  const Plan plan = build_plan(g.view(), test::range_partition(g, 4, 3));
  for (auto [first, count] : {std::pair{0, 4}, std::pair{1, 2}}) {
    std::vector<std::vector<std::byte>> blocks;
    const std::vector<DevicePlan> dps = build_device_plans(
        plan, first, count, CommMode::full, {}, false,
        [&](int64_t bytes) {
          blocks.emplace_back(static_cast<size_t>(bytes));
          return blocks.back().data();
        },
        RemoteAreas::kept_rows);
    int64_t kept_rows = 0;
    for (int i = 0; i < count; ++i)
      for (int j = 1; j < plan.n; ++j) {
        const DevicePlan& dp = dps[static_cast<size_t>(i)];
        const DeviceStep& ds = dp.steps[static_cast<size_t>(j)];
        const ChunkPlan &s = plan.step(j, first + i), &prev = plan.step(j - 1, first + i);
        std::unordered_map<vid_t, uint32_t> where;
        for (size_t q = 0; q < prev.remote_vid.size(); ++q) where.emplace(prev.remote_vid[q], static_cast<uint32_t>(q));
        std::vector<uint32_t> src, dst;
        std::vector<bool> copied(s.remote_vid.size(), false);
        const int64_t base = dp.remote_base(j), prev_base = dp.remote_base(j - 1);
        for (const PeerRange& r : ds.peers)
          for (int64_t k = r.begin; k < r.begin + r.count; ++k)  // other processes' ranges too
            if (const auto it = where.find(s.remote_vid[static_cast<size_t>(k)]); it != where.end()) {
              copied[static_cast<size_t>(k)] = true;
              src.push_back(static_cast<uint32_t>(prev_base + it->second));
              dst.push_back(static_cast<uint32_t>(base + k));
            }
        EXPECT_EQ(ds.kept_remote, static_cast<int64_t>(src.size()));
        kept_rows += ds.kept_remote;
        for (const PeerRange& r : ds.peers) {
          EXPECT_EQ(r.fresh_begin, static_cast<int64_t>(src.size()));
          for (int64_t k = r.begin; k < r.begin + r.count; ++k)
            if (!copied[static_cast<size_t>(k)]) {
              src.push_back(s.remote_slot[static_cast<size_t>(k)]);
              dst.push_back(static_cast<uint32_t>(base + k));
            }
          EXPECT_EQ(r.fresh_begin + r.fresh_count, static_cast<int64_t>(src.size()));
        }
        const StepLists l = ds.bind({ds.bytes.data(), static_cast<int64_t>(ds.bytes.size())});
        ASSERT_EQ(l.pull_src.size, static_cast<int64_t>(src.size()));
        ASSERT_EQ(l.pull_dst.size, static_cast<int64_t>(dst.size()));
        EXPECT_TRUE(std::equal(src.begin(), src.end(), l.pull_src.data)) << "GPU " << first + i << " batch " << j;
        EXPECT_TRUE(std::equal(dst.begin(), dst.end(), l.pull_dst.data)) << "GPU " << first + i << " batch " << j;
      }
    EXPECT_GT(kept_rows, 0);
  }
}

// The steps' scratch (counters, offsets, pull lists: step_scratch.hpp) is
// kept across the steps a team builds: steps built on reused workspaces, in
// either order, at any thread share, with the scratch poisoned whenever it is
// taken, are the bytes of steps built each on a fresh workspace, for every
// comm mode and remote area layout (the pull lists' slot marks put back
// between steps included).
TEST(DevicePlan, StepsOnReusedScratchAreFreshlyBuiltOnes) {
  const Graph g = test::make_graph(test::GraphKind::rmat, 3000, 45000, 13);
  std::vector<float> inv_sqrt_deg(g.num_vertices);
  std::vector<int64_t> orig(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    inv_sqrt_deg[v] = 1.0f / static_cast<float>(3 + v % 11);
    orig[v] = 7 * v + 3;
  }
  // Large scratch takes the huge-page path (faulted in by the team) at test sizes.
  const ScopedBulkTuning small({size_t{1} << 12, 64});
  const int threads = omp_get_max_threads();
  const Plan plan = build_plan(g.view(), test::range_partition(g, 4, 3));
  for (CommMode mode : {CommMode::baseline, CommMode::p2p, CommMode::full})
    for (RemoteAreas areas : {RemoteAreas::one, RemoteAreas::early_pulls, RemoteAreas::kept_rows}) {
      if (areas != RemoteAreas::one && mode == CommMode::baseline) continue;
      struct Built {
        std::vector<std::vector<std::byte>> blocks;
        std::vector<DevicePlan> plans;
      };
      auto build = [&](int t, StepScratchTuning tuning) {
        const ScopedStepScratchTuning scoped(tuning);
        auto out = std::make_unique<Built>();
        omp_set_num_threads(t);
        out->plans = build_device_plans(
            plan, 0, 4, mode, {inv_sqrt_deg, orig}, true,
            [&](int64_t bytes) {
              out->blocks.emplace_back(static_cast<size_t>(bytes), std::byte{0x3c});
              return out->blocks.back().data();
            },
            areas);
        omp_set_num_threads(threads);
        return out;
      };
      const auto ref = build(1, {.fresh = true});
      for (auto [t, tuning] : {std::pair{1, StepScratchTuning{}}, std::pair{1, StepScratchTuning{.poison = true}},
                               std::pair{1, StepScratchTuning{.poison = true, .reverse = true}},
                               std::pair{3, StepScratchTuning{.poison = true, .reverse = true}},
                               std::pair{8, StepScratchTuning{.poison = true}},
                               std::pair{24, StepScratchTuning{.poison = true, .reverse = true}}}) {
        const auto got = build(t, tuning);
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < plan.n; ++j) {
            const DeviceStep &a = ref->plans[i].steps[j], &b = got->plans[i].steps[j];
            const std::string where = "mode " + std::to_string(static_cast<int>(mode)) + " areas " +
                                      std::to_string(static_cast<int>(areas)) + " threads " + std::to_string(t) +
                                      " poison " + std::to_string(tuning.poison) + " reverse " +
                                      std::to_string(tuning.reverse) + " device " + std::to_string(i) + " step " +
                                      std::to_string(j);
            ASSERT_EQ(a.bytes.size(), b.bytes.size()) << where;
            EXPECT_EQ(std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()), 0) << where;
            EXPECT_EQ(a.kept_remote, b.kept_remote) << where;
            EXPECT_EQ(a.reused_rows, b.reused_rows) << where;
            EXPECT_EQ(a.segments, b.segments) << where;
            ASSERT_EQ(a.peers.size(), b.peers.size()) << where;
            for (size_t r = 0; r < a.peers.size(); ++r) {
              EXPECT_EQ(a.peers[r].kept, b.peers[r].kept) << where;
              EXPECT_EQ(a.peers[r].fresh_begin, b.peers[r].fresh_begin) << where;
              EXPECT_EQ(a.peers[r].fresh_count, b.peers[r].fresh_count) << where;
            }
            ASSERT_EQ(a.load_by_producer.size(), b.load_by_producer.size()) << where;
            for (size_t r = 0; r < a.load_by_producer.size(); ++r) {
              EXPECT_EQ(a.load_by_producer[r].offset, b.load_by_producer[r].offset) << where;
              EXPECT_EQ(a.load_by_producer[r].count, b.load_by_producer[r].count) << where;
            }
          }
      }
    }
}

}  // namespace
}  // namespace ht
