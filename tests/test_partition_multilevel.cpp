// The multilevel partitioner (--method multilevel) and --method auto: every
// vertex assigned, balance within --imbalance, cuts far below random and
// within 1.5x METIS's on structured and random graphs, the same assignment
// for a seed whatever the thread count, 64-bit offsets and weights, and the
// pieces (sub-rounds, move acceptance, contraction) on their own.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "graph/build.hpp"
#include "partition/method_choice.hpp"
#include "partition/ml_contract.hpp"
#include "partition/ml_graph.hpp"
#include "partition/ml_moves.hpp"
#include "partition/multilevel_partition.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_stats.hpp"
#include "test_partition_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

using test::random_graph;
using test::rmat_graph;

Graph from_edges(EdgeList&& el) {
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  return g;
}

using test::grid_graph;  // shuffled ids: the input order gives the partitioner no help

// `groups` communities of `size` vertices (members scattered over the ids),
// each edge inside its community with probability 0.9. Directed edges.
Graph community_graph(int groups, int size, int64_t edges, uint64_t seed) {
  const int64_t n = int64_t{groups} * size;
  EdgeList el;
  el.num_vertices = n;
  rng::Stream rs(seed, 4);
  for (int64_t i = 0; i < edges; ++i) {
    const int64_t a = static_cast<int64_t>(rs.below(static_cast<uint64_t>(n)));
    const int64_t group = rs.uniform() < 0.9 ? a % groups : static_cast<int64_t>(rs.below(groups));
    const int64_t b = group + groups * static_cast<int64_t>(rs.below(size));
    el.src.push_back(static_cast<vid_t>(a));
    el.dst.push_back(static_cast<vid_t>(b));
  }
  return from_edges(std::move(el));
}

PartitionParams params(PartitionMethod method, int m, int n = 1, uint64_t seed = 1) {
  PartitionParams p;
  p.method = method;
  p.parts = m;
  p.chunks = n;
  p.seed = seed;
  return p;
}

PartitionParams params_with(PartitionParams q, ChunkClusters c) {
  q.chunk_clusters = c;
  return q;
}

Partition partition_of(const Graph& g, const PartitionParams& q, PartitionRunInfo* info_out = nullptr) {
  PartitionRunInfo info;
  Partition p = make_partition(g.view(), FileIdentity{1, 2}, q, info);
  if (info_out) *info_out = info;
  return p;
}

PartitionStats stats_of(const Graph& g, const PartitionParams& q) {
  return compute_partition_stats(g.view(), partition_of(g, q));
}

// Runs `body` with OpenMP limited to `threads` threads.
template <typename F>
void with_threads(int threads, F&& body) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  body();
  omp_set_num_threads(saved);
}

TEST(Multilevel, EveryVertexAssignedAndBalanced) {
  const Graph graphs[] = {grid_graph(60, 1), community_graph(8, 400, 30000, 2), random_graph(3000, 24000, 3),
                          rmat_graph(12, 30000, 4)};
  for (const Graph& g : graphs) {
    for (int m : {2, 3, 4, 7}) {
      for (int ufactor : {5, 30, 100}) {
        SCOPED_TRACE(testing::Message() << "N " << g.num_vertices << " m " << m << " ufactor " << ufactor);
        PartitionParams q = params(PartitionMethod::multilevel, m, 3);
        q.imbalance = ufactor;
        PartitionRunInfo info;
        const Partition p = partition_of(g, q, &info);
        EXPECT_TRUE(info.multilevel_ran);
        EXPECT_EQ(p.params.method, PartitionMethod::multilevel);
        ASSERT_FALSE(find_partition_problem(p).has_value());
        std::vector<int> seen(static_cast<size_t>(g.num_vertices), 0);
        for (vid_t old : p.new_to_old) ++seen[old];
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
        for (int i = 0; i < m; ++i) EXPECT_GE(p.part_offsets[i + 1] - p.part_offsets[i], 3);
        // Vertex weight = in-degree + 1 = the stats' computation weight, so
        // the block limit (1 + U/1000)·W/m is exactly this bound.
        const PartitionStats s = compute_partition_stats(g.view(), p);
        EXPECT_LE(s.imbalance, 1.0 + ufactor / 1000.0 + 1e-9);
        EXPECT_EQ(info.vertices_moved, 0);
      }
    }
  }
}

TEST(Multilevel, CutFarBelowRandomAndWithinOneAndAHalfOfMetis) {
  struct Case {
    const char* name;
    Graph g;
    bool structured;  // a cut far below random exists
  };
  Case cases[] = {{"grid", grid_graph(70, 5), true},
                  {"community", community_graph(8, 500, 40000, 6), true},
                  {"random", random_graph(4000, 40000, 7), false},
                  {"rmat", rmat_graph(12, 40000, 8), false}};
  for (const Case& c : cases) {
    for (int m : {2, 4, 8}) {
      SCOPED_TRACE(testing::Message() << c.name << " m " << m);
      const PartitionStats ml = stats_of(c.g, params(PartitionMethod::multilevel, m));
      const PartitionStats metis = stats_of(c.g, params(PartitionMethod::metis, m));
      const PartitionStats random = stats_of(c.g, params(PartitionMethod::random, m));
      EXPECT_LE(static_cast<double>(ml.edge_cut), 1.5 * static_cast<double>(metis.edge_cut));
      EXPECT_LT(ml.edge_cut, random.edge_cut);
      if (c.structured) {
        EXPECT_LT(static_cast<double>(ml.edge_cut), 0.3 * static_cast<double>(random.edge_cut));
      }
    }
  }
}

TEST(Multilevel, TightImbalanceKeepsTheCut) {
  // Below METIS's 3 % default the coarse levels still work within 3 % and
  // only the input level is brought within the limit.
  const Graph g = community_graph(8, 500, 40000, 17);
  for (int ufactor : {1, 5}) {
    SCOPED_TRACE(testing::Message() << "ufactor " << ufactor);
    PartitionParams q = params(PartitionMethod::multilevel, 4);
    q.imbalance = ufactor;
    const PartitionStats ml = stats_of(g, q);
    q.method = PartitionMethod::metis;
    const PartitionStats metis = stats_of(g, q);
    EXPECT_LE(ml.imbalance, 1.0 + ufactor / 1000.0 + 1e-9);
    EXPECT_LE(static_cast<double>(ml.edge_cut), 1.5 * static_cast<double>(metis.edge_cut));
  }
}

TEST(Multilevel, SameSeedSameAssignmentWithOneOrTwoThreads) {
  const Graph graphs[] = {community_graph(6, 500, 30000, 9), random_graph(3000, 30000, 10)};
  for (const Graph& g : graphs) {
    const PartitionParams q = params(PartitionMethod::multilevel, 4, 2, 17);
    Partition one, two, again;
    with_threads(1, [&] { one = partition_of(g, q); });
    with_threads(2, [&] { two = partition_of(g, q); });
    with_threads(2, [&] { again = partition_of(g, q); });
    EXPECT_EQ(one.new_to_old, two.new_to_old);
    EXPECT_EQ(one.part_offsets, two.part_offsets);
    EXPECT_EQ(one.chunk_offsets, two.chunk_offsets);
    EXPECT_EQ(two.new_to_old, again.new_to_old);
  }
}

// Locality chunks of a multilevel partition start from the partitions' own
// input-level clusters (ChunkClusters::reuse, the default) instead of
// clustering each partition again (fresh, the path before issue 33): the
// partitions are the same, the chunks valid and balanced, their neighbor
// rows (α) within 5 % of the fresh path's, the same at 1, 2 and 4 threads.
TEST(MultilevelChunks, ReusedClustersKeepThePartitionsAndTheChunkQuality) {
  const Graph graphs[] = {community_graph(8, 400, 30000, 2), grid_graph(60, 1), rmat_graph(12, 30000, 4)};
  for (const Graph& g : graphs) {
    for (int m : {2, 4}) {
      SCOPED_TRACE(testing::Message() << "N " << g.num_vertices << " m " << m);
      PartitionParams q = params(PartitionMethod::multilevel, m, 4, 5);
      q.chunking = ChunkingMode::locality;
      PartitionRunInfo reuse_info, fresh_info;
      const Partition reuse = partition_of(g, q, &reuse_info);
      q.chunk_clusters = ChunkClusters::fresh;
      const Partition fresh = partition_of(g, q, &fresh_info);
      ASSERT_FALSE(find_partition_problem(reuse).has_value());
      EXPECT_EQ(reuse.part_offsets, fresh.part_offsets);
      for (int64_t v = 0; v < g.num_vertices; ++v)
        ASSERT_EQ(reuse.owner(reuse.old_to_new[v]), fresh.owner(fresh.old_to_new[v])) << v;
      for (int i = 0; i < m; ++i) {
        EXPECT_TRUE(reuse_info.chunking.parts[i].reused_clusters) << i;
        EXPECT_FALSE(fresh_info.chunking.parts[i].reused_clusters) << i;
        for (int j = 0; j < 4; ++j) EXPECT_LT(reuse.chunk_begin(i, j), reuse.chunk_end(i, j));
      }
      EXPECT_TRUE(reuse_info.clusters.kept.empty());  // freed once the chunks are cut
      const PartitionStats a = compute_partition_stats(g.view(), reuse), b = compute_partition_stats(g.view(), fresh);
      EXPECT_EQ(a.edge_cut, b.edge_cut);
      EXPECT_LE(a.alpha, 1.05 * b.alpha);
      // Each chunk within (1 + U/1000) of its partition's mean, partitions within (1 + U/1000).
      EXPECT_LE(a.chunk_imbalance, 1.03 * 1.03 + 1e-9);
      Partition two, four;
      with_threads(2, [&] { two = partition_of(g, params_with(q, ChunkClusters::reuse)); });
      with_threads(4, [&] { four = partition_of(g, params_with(q, ChunkClusters::reuse)); });
      Partition one;
      with_threads(1, [&] { one = partition_of(g, params_with(q, ChunkClusters::reuse)); });
      EXPECT_EQ(one.new_to_old, reuse.new_to_old);
      EXPECT_EQ(one.new_to_old, two.new_to_old);
      EXPECT_EQ(one.new_to_old, four.new_to_old);
      EXPECT_EQ(one.chunk_offsets, four.chunk_offsets);
    }
  }
}

// METIS partitions keep no clusters: their chunks are cut as before.
TEST(MultilevelChunks, MetisPartitionsReuseNothing) {
  const Graph g = community_graph(8, 400, 30000, 2);
  PartitionParams q = params(PartitionMethod::metis, 2, 4, 5);
  q.chunking = ChunkingMode::locality;
  PartitionRunInfo reuse_info, fresh_info;
  const Partition reuse = partition_of(g, q, &reuse_info);
  q.chunk_clusters = ChunkClusters::fresh;
  const Partition fresh = partition_of(g, q, &fresh_info);
  EXPECT_EQ(reuse.new_to_old, fresh.new_to_old);
  EXPECT_EQ(reuse.chunk_offsets, fresh.chunk_offsets);
  for (const PartChunking& pc : reuse_info.chunking.parts) EXPECT_FALSE(pc.reused_clusters);
}

// Given input-level clusters above the cluster cap are cut into pieces within
// it (here one cluster of every vertex), and the partition is still balanced.
TEST(MultilevelChunks, GivenClustersAboveTheCapAreCut) {
  const Graph g = community_graph(6, 500, 30000, 3);
  const PartitionParams q = params(PartitionMethod::multilevel, 4, 1, 3);
  for (int threads : {1, 2, 4}) {
    MultilevelInfo info;
    MultilevelClusters clusters;
    clusters.given.assign(static_cast<size_t>(g.num_vertices), 0);
    std::vector<int32_t> part;
    with_threads(threads, [&] { part = multilevel_partition(g.view(), q, info, &clusters); });
    EXPECT_TRUE(info.input_clusters_given);
    EXPECT_GT(info.input_clusters_split, 4);
    std::vector<int64_t> w(4, 0);
    for (int64_t v = 0; v < g.num_vertices; ++v) {
      ASSERT_GE(part[v], 0);
      ASSERT_LT(part[v], 4);
      w[part[v]] += g.view().in_degree(v) + 1;
    }
    EXPECT_LE(*std::max_element(w.begin(), w.end()), info.max_block_weight);
  }
}

TEST(Multilevel, OnePartIsLikeMetisAndTheFileRecordsTheMethod) {
  const Graph g = random_graph(500, 4000, 11);
  const Partition ml = partition_of(g, params(PartitionMethod::multilevel, 1, 4));
  const Partition metis = partition_of(g, params(PartitionMethod::metis, 1, 4));
  EXPECT_EQ(ml.new_to_old, metis.new_to_old);
  EXPECT_EQ(ml.chunk_offsets, metis.chunk_offsets);

  test::TempDir dir;
  write_partition(dir.file("p.htp"), partition_of(g, params(PartitionMethod::multilevel, 3, 2)));
  EXPECT_EQ(read_partition(dir.file("p.htp")).params.method, PartitionMethod::multilevel);
  Partition unresolved = metis;
  unresolved.params.method = PartitionMethod::automatic;
  EXPECT_THROW(write_partition(dir.file("q.htp"), unresolved), Error);
}

TEST(Multilevel, GraphFalselyMarkedSymmetricStillPartitions) {
  Graph g = random_graph(2000, 16000, 12);
  ASSERT_FALSE(g.flags.symmetric);
  g.flags.symmetric = true;  // a lying header: only the in-lists are read
  const Partition p = partition_of(g, params(PartitionMethod::multilevel, 4));
  EXPECT_FALSE(find_partition_problem(p).has_value());
  EXPECT_LE(compute_partition_stats(g.view(), p).imbalance, 1.03 + 1e-9);
}

TEST(Multilevel, WeightsBeyondThirtyTwoBits) {
  // 12000 vertices of weight ~10^6 each: 1.2·10^10 in total, beyond 2^32,
  // and blocks beyond 2^31: cluster and block weights (and the limit) only
  // work in 64 bits.
  const Graph g = community_graph(6, 2000, 60000, 13);
  PartitionParams q = params(PartitionMethod::multilevel, 4);
  q.chunk_vertex_weight = 1e6;
  PartitionRunInfo info;
  const Partition p = partition_of(g, q, &info);
  EXPECT_GT(info.multilevel.max_block_weight, int64_t{1} << 31);
  EXPECT_GT(info.multilevel.max_block_weight * 4, int64_t{1} << 33);
  const PartitionStats s = compute_partition_stats(g.view(), p);
  EXPECT_LE(s.imbalance, 1.03 + 1e-9);
  const PartitionStats random = stats_of(g, params(PartitionMethod::random, 4));
  EXPECT_LT(s.edge_cut, random.edge_cut / 2);
}

TEST(Multilevel, OffsetsAreSixtyFourBit) {
  // Row lengths whose sum passes 2^32 (no array of that size is made).
  const std::vector<int64_t> lengths{int64_t{1} << 31, (int64_t{1} << 31) + 5, 7, int64_t{1} << 32};
  const std::vector<int64_t> off = ml::offsets_from_lengths(lengths);
  const std::vector<int64_t> expect{0, int64_t{1} << 31, (int64_t{1} << 32) + 5, (int64_t{1} << 32) + 12,
                                    (int64_t{1} << 33) + 12};
  EXPECT_EQ(off, expect);
}

TEST(MultilevelPieces, SubRoundsArePermutationsIndependentOfThreads) {
  ml::SubRounds a, b;
  with_threads(1, [&] { a = ml::make_sub_rounds(200000, 8, 5, 9); });
  with_threads(2, [&] { b = ml::make_sub_rounds(200000, 8, 5, 9); });
  EXPECT_EQ(a.order, b.order);
  EXPECT_EQ(a.begin, b.begin);
  ASSERT_EQ(a.begin.size(), 9u);
  EXPECT_EQ(a.begin.back(), 200000);
  std::vector<vid_t> sorted = a.order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t v = 0; v < 200000; ++v) ASSERT_EQ(sorted[v], static_cast<vid_t>(v));
  for (int s = 0; s < 8; ++s) {
    EXPECT_GT(a.begin[s + 1] - a.begin[s], 200000 / 8 / 2);  // roughly even
    EXPECT_TRUE(std::is_sorted(a.order.begin() + a.begin[s], a.order.begin() + a.begin[s + 1]));
  }
}

// Sub-round steps take one thread per kWorkPerThread of work, all of them at
// most, and count no further than that needs.
TEST(MultilevelPieces, ThreadsForFollowsTheWorkAndStopsCounting) {
  with_threads(4, [&] {
    int64_t looked = 0;
    auto unit = [&](int64_t) {
      ++looked;
      return int64_t{1};
    };
    EXPECT_EQ(ml::threads_for(100, unit), 1);
    EXPECT_EQ(ml::threads_for(ml::kWorkPerThread * 5 / 2, unit), 2);
    looked = 0;
    EXPECT_EQ(ml::threads_for(int64_t{1} << 40, unit), 4);
    EXPECT_EQ(looked, 4 * ml::kWorkPerThread);
    EXPECT_EQ(ml::threads_for(3, [](int64_t) { return ml::kWorkPerThread * 100; }), 4);
    EXPECT_EQ(ml::threads_for(0, unit), 1);
  });
}

// Each thread of a team gets its own object, the same one in every region.
TEST(MultilevelPieces, PerThreadGivesEachThreadItsOwnObject) {
  with_threads(3, [&] {
    ml::PerThread<std::vector<int>> slots(2, 7);
    std::vector<std::vector<int>*> first(3, nullptr), second(3, nullptr);
#pragma omp parallel num_threads(3)
    first[omp_get_thread_num()] = &slots.local();
#pragma omp parallel num_threads(3)
    second[omp_get_thread_num()] = &slots.local();
    EXPECT_EQ(first, second);
    EXPECT_EQ(std::set<std::vector<int>*>(first.begin(), first.end()).size(), 3u);
    EXPECT_EQ(*first[0], (std::vector<int>{7, 7}));
  });
}

// Graphs large enough that sub-rounds of the input level run on several
// threads while the coarse ones run on one: the same assignment at 1, 2 and
// 4 threads (the small graphs above run every sub-round on one thread).
TEST(Multilevel, SameAssignmentWhereSubRoundsUseOneOrManyThreads) {
  const Graph graphs[] = {community_graph(8, 10000, 1200000, 3), random_graph(80000, 1200000, 5)};
  for (const Graph& g : graphs) {
    const PartitionParams q = params(PartitionMethod::multilevel, 4, 2, 3);
    Partition one, two, four;
    with_threads(1, [&] { one = partition_of(g, q); });
    with_threads(2, [&] { two = partition_of(g, q); });
    with_threads(4, [&] { four = partition_of(g, q); });
    EXPECT_EQ(one.new_to_old, two.new_to_old);
    EXPECT_EQ(one.part_offsets, two.part_offsets);
    EXPECT_EQ(one.chunk_offsets, two.chunk_offsets);
    EXPECT_EQ(one.new_to_old, four.new_to_old);
    EXPECT_EQ(one.chunk_offsets, four.chunk_offsets);
  }
}

TEST(MultilevelPieces, MovesRespectTheLimitBestFirst) {
  // Target 0 has room for 10 of the 13 offered; target 1 for everything.
  const std::vector<ml::weight_t> load{90, 0};
  std::vector<ml::weight_t> incoming(2, 0);
  std::vector<ml::Move> moves;
  auto add = [&](vid_t v, vid_t t, ml::weight_t w, ml::weight_t gain) {
    ml::Move m;
    m.v = v;
    m.target = t;
    m.w = w;
    m.gain = gain;
    m.tie = v;
    moves.push_back(m);
  };
  add(0, 0, 4, 1);
  add(1, 0, 6, 5);
  add(2, 0, 3, 2);
  add(3, 1, 50, 1);
  add(4, 1, 50, 1);
  ml::accept_moves(moves, load, 100, incoming);
  std::set<vid_t> kept;
  for (const ml::Move& m : moves) kept.insert(m.v);
  // Best gain first into target 0: v1 (6), then v2 (3) fits (9), v0 (4) not.
  EXPECT_EQ(kept, (std::set<vid_t>{1, 2, 3, 4}));
  EXPECT_EQ(incoming, (std::vector<ml::weight_t>{0, 0}));
}

TEST(MultilevelPieces, ManyMovesKeepTheirOrderForAnyThreadCount) {
  // More moves than one block of the parallel split (64 k), some targets
  // contested: the moves that fit in their order, then the contested ones
  // accepted best first per target, as a serial reading of the rule gives.
  constexpr int kTargets = 40;
  constexpr ml::weight_t kLimit = 30000;
  rng::Stream rs(23, 1);
  std::vector<ml::weight_t> load(kTargets);
  for (int t = 0; t < kTargets; ++t) load[t] = t % 2 == 0 ? 0 : kLimit - 5000 - 100 * t;
  std::vector<ml::Move> offered;
  for (int64_t i = 0; i < 200000; ++i) {
    ml::Move m;
    m.v = static_cast<vid_t>(i);
    m.target = static_cast<vid_t>(rs.below(kTargets));
    m.w = 1 + static_cast<ml::weight_t>(rs.below(3));
    m.gain = static_cast<ml::weight_t>(rs.below(100));
    m.tie = rs.below(1000);
    offered.push_back(m);
  }
  std::vector<ml::weight_t> incoming_sum(kTargets, 0);
  for (const ml::Move& m : offered) incoming_sum[m.target] += m.w;
  std::vector<ml::Move> expect, contested;
  for (const ml::Move& m : offered)
    (load[m.target] + incoming_sum[m.target] <= kLimit ? expect : contested).push_back(m);
  ASSERT_FALSE(contested.empty());
  ASSERT_GT(expect.size(), size_t{1} << 16);
  std::sort(contested.begin(), contested.end(), [](const ml::Move& a, const ml::Move& b) {
    if (a.target != b.target) return a.target < b.target;
    if (a.gain != b.gain) return a.gain > b.gain;
    if (a.tie != b.tie) return a.tie < b.tie;
    return a.v < b.v;
  });
  std::vector<ml::weight_t> room(kTargets);
  for (int t = 0; t < kTargets; ++t) room[t] = kLimit - load[t];
  for (const ml::Move& m : contested)
    if (m.w <= room[m.target]) {
      room[m.target] -= m.w;
      expect.push_back(m);
    }
  for (int threads : {1, 3}) {
    with_threads(threads, [&] {
      std::vector<ml::Move> moves = offered;
      std::vector<ml::weight_t> incoming(kTargets, 0);
      ml::accept_moves(moves, load, kLimit, incoming);
      ASSERT_EQ(moves.size(), expect.size()) << threads << " threads";
      for (size_t i = 0; i < moves.size(); ++i) ASSERT_EQ(moves[i].v, expect[i].v) << "move " << i;
      EXPECT_EQ(incoming, std::vector<ml::weight_t>(kTargets, 0));
    });
  }
}

TEST(MultilevelPieces, ContractionKeepsWeightsAndSymmetry) {
  const Graph g = random_graph(1000, 8000, 14);  // directed: the transpose is used
  PartitionParams q;
  const ml::FineLevel fine(g.view(), q);
  ASSERT_TRUE(fine.uses_transpose());
  std::vector<vid_t> label(1000);
  for (int64_t v = 0; v < 1000; ++v) label[v] = static_cast<vid_t>((v % 37) * 11);  // 37 clusters
  std::vector<vid_t> coarse_of = label;
  Progress progress("test", 0);
  const ml::CoarseLevel c = ml::contract(fine, coarse_of, progress);
  ASSERT_EQ(c.num_vertices(), 37);
  ml::weight_t fine_w = 0, coarse_w = 0, cut = 0, coarse_edges = 0;
  for (int64_t v = 0; v < 1000; ++v) {
    fine_w += fine.vertex_weight(v);
    EXPECT_EQ(coarse_of[v], static_cast<vid_t>(v % 37));  // numbered in label order
    fine.for_each_neighbor(v, [&](vid_t u, ml::weight_t w) { cut += coarse_of[u] != coarse_of[v] ? w : 0; });
  }
  for (int64_t a = 0; a < 37; ++a) {
    coarse_w += c.vertex_weight(a);
    const auto nb = c.neighbors(a);
    EXPECT_TRUE(std::is_sorted(nb.begin(), nb.end()));
    for (size_t i = 0; i < nb.size(); ++i) {
      EXPECT_NE(nb[i], static_cast<vid_t>(a));
      coarse_edges += c.weights(a)[i];
      const auto back = c.neighbors(nb[i]);
      const auto it = std::lower_bound(back.begin(), back.end(), static_cast<vid_t>(a));
      ASSERT_TRUE(it != back.end() && *it == static_cast<vid_t>(a));
      EXPECT_EQ(c.weights(nb[i])[it - back.begin()], c.weights(a)[i]);
    }
  }
  EXPECT_EQ(coarse_w, fine_w);
  EXPECT_EQ(coarse_edges, cut);  // edges between clusters, each counted from both ends
}

TEST(MultilevelPieces, TransposeGivesSortedOutListsForAnyThreadCount) {
  // Several buckets of destination rows (16 k each), hubs, duplicate edges
  // and self-loops: every out-list is the sorted list of its edges' heads.
  constexpr int64_t n = 70000;
  EdgeList el;
  el.num_vertices = n;
  rng::Stream rs(21, 1);
  for (int64_t i = 0; i < 400000; ++i) {
    const vid_t a = static_cast<vid_t>(rs.uniform() < 0.2 ? rs.below(8) : rs.below(n));  // hubs 0..7
    const vid_t b = static_cast<vid_t>(rs.below(n));
    el.src.push_back(a);
    el.dst.push_back(b);
    if (i % 50 == 0) {  // duplicates and self-loops
      el.src.push_back(a);
      el.dst.push_back(b);
      el.src.push_back(b);
      el.dst.push_back(b);
    }
  }
  const Graph g = from_edges(std::move(el));
  ASSERT_FALSE(g.flags.symmetric);
  std::vector<std::vector<vid_t>> out(n);
  for (int64_t v = 0; v < n; ++v)
    for (vid_t u : g.view().in_neighbors(v)) out[u].push_back(static_cast<vid_t>(v));  // ascending v
  PartitionParams q;
  for (int threads : {1, 3}) {
    with_threads(threads, [&] {
      const ml::FineLevel fine(g.view(), q);
      ASSERT_TRUE(fine.uses_transpose());
      EXPECT_EQ(fine.adjacency_entries(), 2 * g.num_edges());
      for (int64_t v = 0; v < n; ++v) {
        std::vector<vid_t> expect;
        for (vid_t u : g.view().in_neighbors(v))
          if (u != v) expect.push_back(u);
        for (vid_t u : out[v])
          if (u != v) expect.push_back(u);
        std::vector<vid_t> got;
        fine.for_each_neighbor(v, [&](vid_t u, ml::weight_t) { got.push_back(u); });
        ASSERT_EQ(got, expect) << "vertex " << v << ", " << threads << " threads";
        ASSERT_EQ(fine.degree(v), g.view().in_degree(v) + static_cast<int64_t>(out[v].size()));
      }
    });
  }
}

TEST(MultilevelPieces, ContractionRowsAreTheSameForAnyThreadCount) {
  // 3000 clusters of 20 vertices: blocks of 1024 coarse rows heavy enough to
  // be cut into pieces (joined again per block); checked against sums made
  // one edge at a time.
  const Graph g = random_graph(60000, 600000, 22);
  PartitionParams q;
  std::vector<vid_t> label(60000);
  for (int64_t v = 0; v < 60000; ++v) label[v] = static_cast<vid_t>((v * 7919) % 3000);
  std::vector<std::map<vid_t, ml::weight_t>> expect(3000);
  std::vector<ml::weight_t> expect_w(3000, 0);
  with_threads(1, [&] {
    const ml::FineLevel fine(g.view(), q);
    for (int64_t v = 0; v < 60000; ++v) {
      expect_w[label[v]] += fine.vertex_weight(v);
      fine.for_each_neighbor(v, [&](vid_t u, ml::weight_t w) {
        if (label[u] != label[v]) expect[label[v]][label[u]] += w;
      });
    }
  });
  for (int threads : {1, 2, 4}) {
    with_threads(threads, [&] {
      const ml::FineLevel fine(g.view(), q);
      std::vector<vid_t> coarse_of = label;  // labels 0..2999 all used: numbered as they are
      Progress progress("test", 0);
      const ml::CoarseLevel c = ml::contract(fine, coarse_of, progress);
      ASSERT_EQ(c.num_vertices(), 3000);
      EXPECT_EQ(coarse_of, label);
      for (int64_t a = 0; a < 3000; ++a) {
        EXPECT_EQ(c.vertex_weight(a), expect_w[a]);
        const auto nb = c.neighbors(a);
        const auto wt = c.weights(a);
        ASSERT_EQ(nb.size(), expect[a].size()) << "row " << a << ", " << threads << " threads";
        size_t i = 0;
        for (const auto& [b, w] : expect[a]) {
          ASSERT_EQ(nb[i], b);
          ASSERT_EQ(wt[i], w);
          ++i;
        }
      }
    });
  }
}

TEST(AutoMethod, MetisForSmallGraphsMultilevelBeyondItsReach) {
  const Graph small = random_graph(500, 4000, 15);
  PartitionParams q = params(PartitionMethod::automatic, 4);
  MethodChoice c = choose_partition_method(small.view(), q, int64_t{64} << 30);
  EXPECT_EQ(c.method, PartitionMethod::metis) << c.reason;
  EXPECT_NE(c.reason.find("fit METIS"), std::string::npos) << c.reason;

  // Only the header is read: sizes without arrays.
  GraphView huge;
  huge.num_vertices = 100'000'000;
  huge.num_edges = int64_t{1} << 30;
  huge.flags.symmetric = false;  // up to 2^31 entries: beyond idx_t
  c = choose_partition_method(huge, q, 0);
  EXPECT_EQ(c.method, PartitionMethod::multilevel);
  EXPECT_NE(c.reason.find("idx_t"), std::string::npos) << c.reason;

  huge.flags.symmetric = true;  // 2^30 entries: fits idx_t, but slow
  c = choose_partition_method(huge, q, 0);
  EXPECT_EQ(c.method, PartitionMethod::multilevel);
  EXPECT_NE(c.reason.find("too long"), std::string::npos) << c.reason;

  c = choose_partition_method(small.view(), q, 1 << 10);  // 1 KiB available
  EXPECT_EQ(c.method, PartitionMethod::multilevel);
  EXPECT_NE(c.reason.find("memory"), std::string::npos) << c.reason;

  q.parts = 1;
  EXPECT_EQ(choose_partition_method(huge, q, 0).method, PartitionMethod::metis);
}

TEST(AutoMethod, SmallGraphsGetExactlyMetisResults) {
  const Graph g = rmat_graph(10, 8000, 16);
  PartitionRunInfo info;
  const Partition a = partition_of(g, params(PartitionMethod::automatic, 3, 2), &info);
  const Partition m = partition_of(g, params(PartitionMethod::metis, 3, 2));
  EXPECT_EQ(a.params.method, PartitionMethod::metis);
  EXPECT_FALSE(info.method_reason.empty());
  EXPECT_EQ(a.new_to_old, m.new_to_old);
  EXPECT_EQ(a.chunk_offsets, m.chunk_offsets);
}

}  // namespace
}  // namespace ht
