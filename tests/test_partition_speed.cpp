// Issue 33's speed work on partitioning and reorganization changes no result:
// the statistics' parallel masks path gives exactly the markers path's
// figures (one and several mask words, empty chunks, any thread count), and
// partition files are the same bytes with 1, 2 and 4 threads, plan files with 1 and 2.
#include <algorithm>
#include <string>
#include <vector>

#include <omp.h>

#include <gtest/gtest.h>

#include "partition/partition.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_names.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_stats.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_file.hpp"
#include "plan_test_graphs.hpp"
#include "test_partition_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

// Restores the thread count when a test ends (also on a failed ASSERT).
class Threads {
 public:
  Threads() : saved_(omp_get_max_threads()) {}
  ~Threads() { omp_set_num_threads(saved_); }
  void set(int t) { omp_set_num_threads(t); }

 private:
  int saved_;
};

PartitionParams params(PartitionMethod method, int m, int n, ChunkingMode chunking = ChunkingMode::balanced) {
  PartitionParams q;
  q.method = method;
  q.parts = m;
  q.chunks = n;
  q.chunking = chunking;
  q.seed = 7;
  return q;
}

Partition partition_of(const Graph& g, const PartitionParams& q) {
  PartitionRunInfo info;
  return make_partition(g.view(), FileIdentity{1, 2}, q, info);
}

void expect_same_stats(const PartitionStats& a, const PartitionStats& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.chunks.size(), b.chunks.size());
  ASSERT_EQ(a.parts.size(), b.parts.size());
  for (size_t k = 0; k < a.chunks.size(); ++k) {
    EXPECT_EQ(a.chunks[k].part, b.chunks[k].part) << k;
    EXPECT_EQ(a.chunks[k].chunk, b.chunks[k].chunk) << k;
    EXPECT_EQ(a.chunks[k].vertices, b.chunks[k].vertices) << k;
    EXPECT_EQ(a.chunks[k].in_edges, b.chunks[k].in_edges) << k;
    EXPECT_EQ(a.chunks[k].in_neighbors, b.chunks[k].in_neighbors) << k;
    EXPECT_EQ(a.chunks[k].cut_in_edges, b.chunks[k].cut_in_edges) << k;
    EXPECT_EQ(a.chunks[k].weight, b.chunks[k].weight) << k;
  }
  for (size_t i = 0; i < a.parts.size(); ++i) {
    EXPECT_EQ(a.parts[i].vertices, b.parts[i].vertices) << i;
    EXPECT_EQ(a.parts[i].in_edges, b.parts[i].in_edges) << i;
    EXPECT_EQ(a.parts[i].in_neighbors, b.parts[i].in_neighbors) << i;
    EXPECT_EQ(a.parts[i].cut_in_edges, b.parts[i].cut_in_edges) << i;
    EXPECT_EQ(a.parts[i].weight, b.parts[i].weight) << i;
  }
  EXPECT_EQ(a.edge_cut, b.edge_cut);
  EXPECT_EQ(a.chunk_edge_cut, b.chunk_edge_cut);
  EXPECT_EQ(a.alpha, b.alpha);
  EXPECT_EQ(a.alpha_parts, b.alpha_parts);
  EXPECT_EQ(a.imbalance, b.imbalance);
  EXPECT_EQ(a.chunk_imbalance, b.chunk_imbalance);
}

TEST(PartitionStatsMasks, SameFiguresAsTheMarkers) {
  Threads threads;
  const Graph directed = test::random_graph(3000, 24000, 5);
  const Graph rmat = test::rmat_graph(12, 30000, 3);
  struct Case {
    const Graph* g;
    PartitionParams q;
    const char* what;
  };
  // 1 × 1, one word, exactly 64 chunks, several words (m·n = 100 and 130),
  // random and METIS partitions, locality chunking.
  const std::vector<Case> cases = {
      {&directed, params(PartitionMethod::range, 1, 1), "directed 1x1"},
      {&directed, params(PartitionMethod::random, 4, 3), "directed random 4x3"},
      {&directed, params(PartitionMethod::metis, 4, 16), "directed metis 4x16 (64 chunks)"},
      {&rmat, params(PartitionMethod::metis, 5, 20), "rmat metis 5x20 (2 words)"},
      {&rmat, params(PartitionMethod::random, 13, 10), "rmat random 13x10 (3 words)"},
      {&rmat, params(PartitionMethod::metis, 3, 4, ChunkingMode::locality), "rmat metis 3x4 locality"},
  };
  for (const Case& c : cases) {
    const Partition p = partition_of(*c.g, c.q);
    threads.set(1);
    const PartitionStats markers = compute_partition_stats(c.g->view(), p, StatsMethod::markers);
    const PartitionStats masks1 = compute_partition_stats(c.g->view(), p, StatsMethod::masks);
    threads.set(2);
    const PartitionStats masks2 = compute_partition_stats(c.g->view(), p, StatsMethod::masks);
    const PartitionStats automatic = compute_partition_stats(c.g->view(), p);
    expect_same_stats(markers, masks1, std::string(c.what) + ", 1 thread");
    expect_same_stats(markers, masks2, std::string(c.what) + ", 2 threads");
    expect_same_stats(markers, automatic, std::string(c.what) + ", automatic");
    // The figures are not trivially equal: a partition has a cut and α > 1.
    if (p.m() > 1) {
      EXPECT_GT(markers.edge_cut, 0) << c.what;
      EXPECT_GT(markers.alpha, 1.0) << c.what;
    }
  }
}

TEST(PartitionStatsMasks, EmptyChunksAreCounted) {
  // 4 × 8 chunks of a 40-vertex graph, chunks (0, 0) and (2, 3) made empty:
  // a block of destinations starts inside a run of equal chunk offsets.
  const Graph g = test::random_graph(40, 200, 11);
  Partition p = test::range_partition(g, 4, 8);
  p.chunk_offsets[1] = p.chunk_offsets[0];
  p.chunk_offsets[2 * 8 + 4] = p.chunk_offsets[2 * 8 + 3];
  expect_same_stats(compute_partition_stats(g.view(), p, StatsMethod::markers),
                    compute_partition_stats(g.view(), p, StatsMethod::masks), "empty chunk");
}

// The same partition file bytes with 1, 2 and 4 threads (more threads than
// this machine's cores: OpenMP runs them all), for the partitioners and the
// locality chunking that runs them again on each partition (the multilevel
// one from the partitions' clusters, and from scratch).
TEST(PartitionThreads, SameFileBytesWithOneTwoAndFourThreads) {
  Threads threads;
  test::TempDir dir;
  const Graph g = test::rmat_graph(13, 80000, 21);
  for (PartitionMethod method : {PartitionMethod::multilevel, PartitionMethod::metis}) {
    for (ChunkClusters clusters : {ChunkClusters::reuse, ChunkClusters::fresh}) {
      PartitionParams q = params(method, 4, 4, ChunkingMode::automatic);
      q.chunk_clusters = clusters;
      std::vector<char> bytes[3];
      for (int k = 0; k < 3; ++k) {
        threads.set(1 << k);
        const std::string path = dir.file(fmt::format("t{}.htp", 1 << k));
        write_partition(path, partition_of(g, q));
        bytes[k] = test::read_bytes(path);
      }
      EXPECT_FALSE(bytes[0].empty());
      EXPECT_TRUE(bytes[0] == bytes[1]) << name_of(method) << ", 2 threads";
      EXPECT_TRUE(bytes[0] == bytes[2]) << name_of(method) << ", 4 threads";
    }
  }
}

// The same plan file bytes with 1 and 2 threads (the build time the file
// records is set equal), with and without reorganization.
TEST(PlanThreads, SameFileBytesWithOneAndTwoThreads) {
  Threads threads;
  test::TempDir dir;
  const Graph g0 = test::make_graph(test::GraphKind::community, 3000, 30000, 4);
  const auto [g, p] = test::shuffled_partition(g0, 3, 4, 8);
  for (bool reorganize : {true, false}) {
    std::vector<char> bytes[2];
    for (int t : {1, 2}) {
      threads.set(t);
      Plan plan = build_plan(g.view(), p, {reorganize, CostProfile{}});
      plan.seconds = 0;
      const std::string path = dir.file(fmt::format("p{}.htplan", t));
      write_plan(path, plan);
      bytes[t - 1] = test::read_bytes(path);
    }
    EXPECT_FALSE(bytes[0].empty());
    EXPECT_TRUE(bytes[0] == bytes[1]) << "reorganize " << reorganize;
  }
}

}  // namespace
}  // namespace ht
