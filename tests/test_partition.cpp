// Partitioning (SPEC §4): the renumbering is a bijection that keeps the old
// order inside a partition, chunks tile partitions, renumber() keeps every
// edge and vertex datum, balance holds, α agrees with an independent count,
// runs are reproducible, and impossible requests fail with clear errors.
#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include <omp.h>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "graph/graph_file.hpp"
#include "partition/assignment.hpp"
#include "partition/balanced_split.hpp"
#include "partition/chunking.hpp"
#include "partition/metis_graph.hpp"
#include "partition/partition.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_stats.hpp"
#include "partition/vertex_cost.hpp"
#include "test_partition_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

using test::grid_graph;
using test::random_graph;
using test::rmat_graph;

PartitionParams params(PartitionMethod method, int m, int n, uint64_t seed = 1) {
  PartitionParams p;
  p.method = method;
  p.parts = m;
  p.chunks = n;
  p.seed = seed;
  return p;
}

PartitionParams chunked(PartitionMethod method, int m, int n, ChunkingMode chunking, uint64_t seed = 1) {
  PartitionParams p = params(method, m, n, seed);
  p.chunking = chunking;
  return p;
}

Partition partition_of(const Graph& g, const PartitionParams& q, PartitionRunInfo* info_out = nullptr) {
  PartitionRunInfo info;
  Partition p = make_partition(g.view(), FileIdentity{123, 456}, q, info);
  if (info_out) *info_out = info;
  return p;
}

// Structural invariants every partition must satisfy.
void expect_valid_layout(const Partition& p, int64_t n_vertices) {
  ASSERT_EQ(p.num_vertices, n_vertices);
  ASSERT_EQ(static_cast<int64_t>(p.new_to_old.size()), n_vertices);
  std::vector<int> hits(n_vertices, 0);
  for (vid_t old : p.new_to_old) {
    ASSERT_LT(old, n_vertices);
    ++hits[old];
  }
  EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; })) << "new_to_old is not a bijection";
  for (int64_t v = 0; v < n_vertices; ++v) EXPECT_EQ(p.new_to_old[p.old_to_new[v]], v);
  ASSERT_EQ(static_cast<int>(p.part_offsets.size()), p.m() + 1);
  ASSERT_EQ(static_cast<int64_t>(p.chunk_offsets.size()), int64_t{p.m()} * p.n() + 1);
  EXPECT_EQ(p.part_offsets.front(), 0);
  EXPECT_EQ(p.part_offsets.back(), n_vertices);
  for (int i = 0; i < p.m(); ++i) {
    EXPECT_EQ(p.chunk_begin(i, 0), p.part_offsets[i]) << "chunks of partition " << i << " do not start it";
    EXPECT_EQ(p.chunk_end(i, p.n() - 1), p.part_offsets[i + 1]) << "chunks of partition " << i << " do not end it";
    for (int j = 0; j < p.n(); ++j) {
      EXPECT_LT(p.chunk_begin(i, j), p.chunk_end(i, j)) << "empty chunk (" << i << ", " << j << ")";
      if (j > 0) {
        EXPECT_EQ(p.chunk_begin(i, j), p.chunk_end(i, j - 1));
      }
    }
    // Old relative order kept inside the partition (balanced ranges) or
    // inside each chunk (locality: the chunks are blocks in block order).
    const bool whole_partition = p.params.chunking == ChunkingMode::balanced;
    for (int j = 0; j < p.n(); ++j)
      for (int64_t v = p.chunk_begin(i, j) + (whole_partition && j > 0 ? 0 : 1); v < p.chunk_end(i, j); ++v)
        EXPECT_LT(p.new_to_old[v - 1], p.new_to_old[v]) << "new id " << v;
    for (int64_t v = p.part_offsets[i]; v < p.part_offsets[i + 1]; ++v) EXPECT_EQ(p.owner(static_cast<vid_t>(v)), i);
  }
  EXPECT_FALSE(find_partition_problem(p).has_value());
}

// Multiset of (src, dst, weight) in old ids.
std::vector<std::tuple<vid_t, vid_t, float>> edges_in_old_ids(const GraphView& g, const Partition* p) {
  std::vector<std::tuple<vid_t, vid_t, float>> e;
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      const vid_t s = p ? p->new_to_old[g.sources[i]] : g.sources[i];
      const vid_t d = p ? p->new_to_old[v] : static_cast<vid_t>(v);
      e.emplace_back(s, d, g.weights.empty() ? 0.0f : g.weights[i]);
    }
  }
  std::sort(e.begin(), e.end());
  return e;
}

// α the other way round: for each source vertex, the number of distinct
// chunks that read it, summed and divided by N.
double alpha_by_reader_sets(const GraphView& g, const Partition& p) {
  std::vector<std::pair<vid_t, int64_t>> reads;  // (old source, chunk index)
  for (int64_t k = 0; k + 1 < static_cast<int64_t>(p.chunk_offsets.size()); ++k)
    for (int64_t v = p.chunk_offsets[k]; v < p.chunk_offsets[k + 1]; ++v)
      for (vid_t u : g.in_neighbors(p.new_to_old[v])) reads.emplace_back(u, k);
  std::sort(reads.begin(), reads.end());
  reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  return static_cast<double>(reads.size()) / static_cast<double>(g.num_vertices);
}

}  // namespace

TEST(BalancedSplit, CutsNearTheTargetsAndRespectsMinimumSize) {
  const std::vector<double> w{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(balanced_split(w, 3, 1), (std::vector<int64_t>{0, 4, 8, 12}));
  const std::vector<double> heavy{100, 1, 1, 1, 1, 1};  // one item dominates
  const auto cut = balanced_split(heavy, 3, 1);
  EXPECT_EQ(cut.front(), 0);
  EXPECT_EQ(cut.back(), 6);
  for (int j = 0; j < 3; ++j) EXPECT_GE(cut[j + 1] - cut[j], 1);
  const std::vector<double> zeros(5, 0.0);
  const auto z = balanced_split(zeros, 5, 1);
  EXPECT_EQ(z, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(Assignment, RepairGivesEveryPartitionEnoughVertices) {
  std::vector<int32_t> part_of(20, 0);  // everything in partition 0
  part_of[3] = 1;
  const int64_t moved = ensure_min_part_size(part_of, 4, 3);
  std::vector<int> count(4, 0);
  for (int32_t q : part_of) ++count[q];
  for (int q = 0; q < 4; ++q) EXPECT_GE(count[q], 3) << "partition " << q;
  EXPECT_EQ(moved, 2 + 3 + 3);
}

TEST(Partition, LayoutInvariantsForEveryMethod) {
  const Graph g = random_graph(300, 2400, 7);
  for (PartitionMethod method : {PartitionMethod::metis, PartitionMethod::random, PartitionMethod::range}) {
    for (auto [m, n] : {std::pair{1, 1}, {1, 4}, {3, 1}, {4, 5}, {2, 150}}) {
      SCOPED_TRACE(testing::Message() << "method " << static_cast<int>(method) << " m " << m << " n " << n);
      const Partition p = partition_of(g, params(method, m, n));
      expect_valid_layout(p, g.num_vertices);
    }
  }
}

TEST(Partition, RecursiveBisectionAndVolumeObjective) {
  const Graph g = rmat_graph(9, 4000, 3);
  PartitionParams q = params(PartitionMethod::metis, 4, 2);
  q.algorithm = MetisAlgorithm::recursive;
  expect_valid_layout(partition_of(g, q), g.num_vertices);
  q.algorithm = MetisAlgorithm::kway;
  q.objective = MetisObjective::vol;
  expect_valid_layout(partition_of(g, q), g.num_vertices);
}

TEST(Partition, MetisCutsFewerEdgesThanRandom) {
  // Two dense communities joined by a few edges: METIS must find them.
  EdgeList el;
  el.num_vertices = 200;
  rng::Stream rs(5, 0);
  for (int i = 0; i < 3000; ++i) {
    const vid_t base = (i % 2) ? 100 : 0;
    el.src.push_back(base + static_cast<vid_t>(rs.below(100)));
    el.dst.push_back(base + static_cast<vid_t>(rs.below(100)));
  }
  for (int i = 0; i < 10; ++i) {
    el.src.push_back(static_cast<vid_t>(rs.below(100)));
    el.dst.push_back(100 + static_cast<vid_t>(rs.below(100)));
  }
  const Graph g = csc_from_edges(std::move(el));
  const PartitionStats metis = compute_partition_stats(g.view(), partition_of(g, params(PartitionMethod::metis, 2, 1)));
  const PartitionStats random =
      compute_partition_stats(g.view(), partition_of(g, params(PartitionMethod::random, 2, 1)));
  EXPECT_LE(metis.edge_cut, 10);
  EXPECT_GT(random.edge_cut, 1000);
  EXPECT_LT(metis.alpha, random.alpha);
}

TEST(Renumber, EveryEdgeAndVertexDatumSurvivesOnce) {
  for (bool weighted : {false, true}) {
    Graph g = random_graph(200, 1500, 11, weighted);
    test::add_vertex_data(g);
    const Partition p = partition_of(g, params(PartitionMethod::metis, 3, 4));
    const Graph r = renumber(g.view(), p);
    ASSERT_EQ(r.num_vertices, g.num_vertices);
    ASSERT_EQ(r.num_edges(), g.num_edges());
    EXPECT_EQ(edges_in_old_ids(r.view(), &p), edges_in_old_ids(g.view(), nullptr));
    EXPECT_TRUE(detect_flags(r.view()).sorted_neighbors) << "sorted input must stay sorted";
    EXPECT_TRUE(r.flags.sorted_neighbors);
    for (int64_t v = 0; v < r.num_vertices; ++v) {
      const vid_t old = p.new_to_old[v];
      EXPECT_EQ(r.labels[v], g.labels[old]);
      EXPECT_EQ(r.split[v], g.split[old]);
      EXPECT_EQ(r.orig_ids[v], g.orig_ids[old]) << "orig_ids must compose to the raw input's ids";
      for (int f = 0; f < 3; ++f) EXPECT_EQ(r.features[v * 3 + f], g.features[old * 3 + f]);
    }
  }
}

// The vertices' data alone (a trainer whose plan carries the topology):
// renumber's labels, split and orig_ids, no features and no topology; and
// a per-vertex array in new ids is the old one gathered.
TEST(Renumber, VerticesAloneAreTheWholeRenumberingsVertexData) {
  Graph g = random_graph(200, 1500, 11);
  test::add_vertex_data(g);
  const Partition p = partition_of(g, params(PartitionMethod::metis, 3, 4));
  const Graph whole = renumber(g.view(), p), alone = renumber_vertices(g.view(), p);
  EXPECT_EQ(alone.num_vertices, whole.num_vertices);
  EXPECT_EQ(alone.labels, whole.labels);
  EXPECT_EQ(alone.split, whole.split);
  EXPECT_EQ(alone.orig_ids, whole.orig_ids);
  EXPECT_EQ(alone.num_classes, whole.num_classes);
  EXPECT_TRUE(alone.offsets.empty() && alone.sources.empty() && alone.features.empty());
  std::vector<float> values(static_cast<size_t>(g.num_vertices));
  for (int64_t v = 0; v < g.num_vertices; ++v) values[v] = static_cast<float>(v) * 0.5f + 1.0f;
  const std::vector<float> moved = in_new_ids(values, p);
  for (int64_t v = 0; v < g.num_vertices; ++v) EXPECT_EQ(moved[v], values[p.new_to_old[v]]);
}

TEST(Renumber, OrigIdsAreOldIdsWhenTheGraphHasNone) {
  const Graph g = random_graph(50, 200, 2);
  const Partition p = partition_of(g, params(PartitionMethod::random, 2, 2));
  const Graph r = renumber(g.view(), p);
  for (int64_t v = 0; v < r.num_vertices; ++v) EXPECT_EQ(r.orig_ids[v], p.new_to_old[v]);
}

TEST(Renumber, RejectsAPartitionOfAnotherGraph) {
  const Graph g = random_graph(50, 200, 2), h = random_graph(51, 200, 2);
  const Partition p = partition_of(g, params(PartitionMethod::range, 2, 2));
  EXPECT_THROW(renumber(h.view(), p), Error);
}

TEST(Balance, PartitionsWithinTheRequestedTolerance) {
  // METIS balances its vertex weights (degree: in-edges + 1 = our computation
  // weight) within ufactor; graphs without dominant vertices.
  const Graph graphs[] = {random_graph(4000, 40000, 3), rmat_graph(12, 40000, 4)};
  for (const Graph& g : graphs) {
    for (int ufactor : {30, 100}) {
      PartitionParams q = params(PartitionMethod::metis, 4, 1);
      q.imbalance = ufactor;
      const PartitionStats s = compute_partition_stats(g.view(), partition_of(g, q));
      EXPECT_LE(s.imbalance, 1.0 + ufactor / 1000.0 + 0.005) << "ufactor " << ufactor;
    }
    for (PartitionMethod method : {PartitionMethod::random, PartitionMethod::range}) {
      const Partition p = partition_of(g, params(method, 4, 1));
      const PartitionStats s = compute_partition_stats(g.view(), p);
      double max_w = 0;
      for (int64_t v = 0; v < g.num_vertices; ++v) max_w = std::max(max_w, computation_weight(g.view(), v, 1.0));
      const double mean = (static_cast<double>(g.num_edges()) + g.num_vertices) / 4;
      EXPECT_LE(s.imbalance, 1.0 + max_w / mean) << "method " << static_cast<int>(method);
    }
  }
}

TEST(Balance, ChunksWithinOneVertexOfTheirTarget) {
  const Graph graphs[] = {random_graph(3000, 30000, 8), rmat_graph(11, 30000, 9)};
  for (const Graph& g : graphs) {
    for (double c : {1.0, 0.0, 16.0}) {
      PartitionParams q = params(PartitionMethod::metis, 3, 8);
      q.chunk_vertex_weight = c;
      const Partition p = partition_of(g, q);
      const PartitionStats s = compute_partition_stats(g.view(), p);
      for (int i = 0; i < p.m(); ++i) {
        const double target = s.parts[i].weight / p.n();
        double max_w = 0;
        for (int64_t v = p.part_offsets[i]; v < p.part_offsets[i + 1]; ++v)
          max_w = std::max(max_w, computation_weight(g.view(), p.new_to_old[v], c));
        for (int j = 0; j < p.n(); ++j) {
          const double w = s.chunks[static_cast<size_t>(i) * p.n() + j].weight;
          EXPECT_LE(std::abs(w - target), max_w + 1e-9) << "chunk (" << i << ", " << j << ") c " << c;
        }
      }
    }
  }
}

TEST(Balance, TrainWeightsBalanceTrainingVertices) {
  Graph g = random_graph(4000, 30000, 12);
  test::add_vertex_data(g);
  // Training vertices concentrated in the low ids (a plausible real split).
  for (int64_t v = 0; v < g.num_vertices; ++v) g.split[v] = v < 1000 ? 1 : 3;
  PartitionParams q = params(PartitionMethod::metis, 4, 1);
  q.vertex_weights = VertexWeights::train;
  const Partition p = partition_of(g, q);
  std::vector<int> train(4, 0);
  for (int64_t v = 0; v < g.num_vertices; ++v)
    if (g.split[v] == 1) ++train[p.owner(p.old_to_new[v])];
  EXPECT_LE(*std::max_element(train.begin(), train.end()), 250 * 1.03 + 2);
}

TEST(Stats, AlphaAndSizesAgreeWithIndependentCounts) {
  const Graph graphs[] = {random_graph(500, 5000, 21), rmat_graph(9, 6000, 22)};
  for (const Graph& g : graphs) {
    for (auto [m, n, c] : {std::tuple{1, 1, ChunkingMode::balanced}, {1, 6, ChunkingMode::balanced},
                           {4, 1, ChunkingMode::balanced}, {4, 4, ChunkingMode::balanced},
                           {1, 6, ChunkingMode::locality}, {4, 4, ChunkingMode::locality}}) {
      const Partition p = partition_of(g, chunked(PartitionMethod::metis, m, n, c));
      const PartitionStats s = compute_partition_stats(g.view(), p);
      EXPECT_NEAR(s.alpha, alpha_by_reader_sets(g.view(), p), 1e-12);
      int64_t cut = 0;
      for (int64_t v = 0; v < g.num_vertices; ++v)
        for (vid_t u : g.view().in_neighbors(v)) cut += p.owner(p.old_to_new[u]) != p.owner(p.old_to_new[v]) ? 1 : 0;
      EXPECT_EQ(s.edge_cut, cut);
      auto chunk_of = [&](vid_t new_id) {
        return std::upper_bound(p.chunk_offsets.begin(), p.chunk_offsets.end(), static_cast<int64_t>(new_id)) -
               p.chunk_offsets.begin();
      };
      int64_t chunk_cut = 0;
      for (int64_t v = 0; v < g.num_vertices; ++v)
        for (vid_t u : g.view().in_neighbors(v))
          chunk_cut += chunk_of(p.old_to_new[u]) != chunk_of(p.old_to_new[v]) ? 1 : 0;
      EXPECT_EQ(s.chunk_edge_cut, chunk_cut);
      EXPECT_GE(s.chunk_edge_cut, s.edge_cut);
      int64_t edges = 0;
      for (const ChunkStats& c : s.chunks) {
        std::vector<vid_t> srcs;
        for (int64_t v = p.chunk_begin(c.part, c.chunk); v < p.chunk_end(c.part, c.chunk); ++v)
          for (vid_t u : g.view().in_neighbors(p.new_to_old[v])) srcs.push_back(u);
        EXPECT_EQ(c.in_edges, static_cast<int64_t>(srcs.size()));
        std::sort(srcs.begin(), srcs.end());
        EXPECT_EQ(c.in_neighbors, std::unique(srcs.begin(), srcs.end()) - srcs.begin());
        edges += c.in_edges;
      }
      EXPECT_EQ(edges, g.num_edges());
      if (m == 1 && n == 1) {
        // One chunk reads every vertex that has an out-edge.
        std::set<vid_t> sources(g.sources.begin(), g.sources.end());
        EXPECT_DOUBLE_EQ(s.alpha, static_cast<double>(sources.size()) / g.num_vertices);
        EXPECT_EQ(s.edge_cut, 0);
      }
    }
  }
}

TEST(Reproducibility, SameSeedSameResult) {
  const Graph g = rmat_graph(10, 8000, 31);
  for (PartitionMethod method : {PartitionMethod::metis, PartitionMethod::random}) {
    const Partition a = partition_of(g, params(method, 4, 3, 77));
    const Partition b = partition_of(g, params(method, 4, 3, 77));
    EXPECT_EQ(a.new_to_old, b.new_to_old);
    EXPECT_EQ(a.part_offsets, b.part_offsets);
    EXPECT_EQ(a.chunk_offsets, b.chunk_offsets);
  }
  const Partition a = partition_of(g, params(PartitionMethod::random, 4, 3, 1));
  const Partition b = partition_of(g, params(PartitionMethod::random, 4, 3, 2));
  EXPECT_NE(a.new_to_old, b.new_to_old) << "the seed must matter";
}

TEST(Errors, ImpossibleRequestsNameTheOption) {
  Graph g = random_graph(20, 60, 1);
  auto expect_error = [&](const PartitionParams& q, const std::string& needle) {
    try {
      partition_of(g, q);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(params(PartitionMethod::metis, 0, 1), "--parts");
  expect_error(params(PartitionMethod::metis, 2, 0), "--chunks");
  expect_error(params(PartitionMethod::metis, 4, 6), "more than the graph's 20 vertices");
  PartitionParams q = params(PartitionMethod::metis, 2, 1);
  q.imbalance = 0;
  expect_error(q, "--imbalance");
  q = params(PartitionMethod::metis, 2, 1);
  q.chunk_vertex_weight = -1;
  expect_error(q, "--chunk-vertex-weight");
  q = params(PartitionMethod::metis, 2, 1);
  q.algorithm = MetisAlgorithm::recursive;
  q.objective = MetisObjective::vol;
  expect_error(q, "--objective");
  q = params(PartitionMethod::metis, 2, 1);
  q.vertex_weights = VertexWeights::train;
  expect_error(q, "split section");
  // m·n = N is the largest possible request: one vertex per chunk.
  expect_valid_layout(partition_of(g, params(PartitionMethod::metis, 4, 5)), 20);
}

TEST(Errors, MetisIndexRangeIsCheckedBeforeOverflow) {
  const int64_t limit = metis_index_limit();
  EXPECT_GE(limit, int64_t{2147483647});
  EXPECT_NO_THROW(check_metis_range(limit, "entries"));
  if (limit < INT64_MAX) {
    try {
      check_metis_range(limit + 1, "symmetrized adjacency entries");
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("--method random"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--method range"), std::string::npos) << msg;
    }
  }
}

TEST(MetisGraph, SymmetricWithoutSelfLoopsOrDuplicates) {
  EdgeList el;
  el.num_vertices = 4;
  const int pairs[][2] = {{0, 1}, {1, 0}, {0, 1}, {2, 2}, {3, 1}, {2, 0}};
  for (auto& e : pairs) {
    el.src.push_back(e[0]);
    el.dst.push_back(e[1]);
  }
  const Graph g = csc_from_edges(std::move(el));
  const MetisGraph mg = build_metis_graph(g.view());
  EXPECT_EQ(mg.xadj, (std::vector<idx_t>{0, 2, 4, 5, 6}));
  EXPECT_EQ(mg.adjncy, (std::vector<idx_t>{1, 2, 0, 3, 0, 1}));
}

TEST(MetisGraph, MatchesASetBasedReferenceForUnsortedInput) {
  Graph g = random_graph(300, 3000, 41);
  // Reverse every row and drop the sorted promise: the builder must sort.
  for (int64_t v = 0; v < g.num_vertices; ++v)
    std::reverse(g.sources.begin() + g.offsets[v], g.sources.begin() + g.offsets[v + 1]);
  g.flags.sorted_neighbors = false;
  std::vector<std::set<idx_t>> ref(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    for (vid_t u : g.view().in_neighbors(v)) {
      if (u == v) continue;
      ref[v].insert(static_cast<idx_t>(u));
      ref[u].insert(static_cast<idx_t>(v));
    }
  }
  const MetisGraph mg = build_metis_graph(g.view());
  ASSERT_EQ(mg.num_vertices(), g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    const std::vector<idx_t> row(mg.adjncy.begin() + mg.xadj[v], mg.adjncy.begin() + mg.xadj[v + 1]);
    EXPECT_EQ(row, std::vector<idx_t>(ref[v].begin(), ref[v].end())) << "row " << v;
  }
}

// --- chunking (--chunking balanced|locality|auto) ---------------------------

TEST(Chunking, LayoutInvariantsForEveryMethodAndMode) {
  const Graph g = random_graph(300, 2400, 7);
  for (PartitionMethod method :
       {PartitionMethod::metis, PartitionMethod::multilevel, PartitionMethod::automatic, PartitionMethod::range}) {
    for (ChunkingMode chunking : {ChunkingMode::locality, ChunkingMode::automatic}) {
      for (auto [m, n] : {std::pair{1, 4}, {3, 5}, {4, 1}, {2, 150}}) {
        SCOPED_TRACE(testing::Message() << "method " << static_cast<int>(method) << " chunking "
                                        << static_cast<int>(chunking) << " m " << m << " n " << n);
        const Partition p = partition_of(g, chunked(method, m, n, chunking));
        expect_valid_layout(p, g.num_vertices);
        EXPECT_NE(p.params.method, PartitionMethod::automatic);
        EXPECT_NE(p.params.chunking, ChunkingMode::automatic);
      }
    }
  }
}

TEST(Chunking, LocalityCutsAlphaAndKeepsThePartitionsAndTheBalance) {
  // A grid with shuffled ids: ranges of the input order read nearly all
  // neighbors of a random vertex set; blocks read their square and its rim.
  const Graph g = grid_graph(80, 3);
  for (PartitionMethod method : {PartitionMethod::metis, PartitionMethod::multilevel}) {
    for (auto [m, n] : {std::pair{1, 8}, {2, 4}}) {
      SCOPED_TRACE(testing::Message() << "method " << static_cast<int>(method) << " m " << m << " n " << n);
      const Partition pb = partition_of(g, chunked(method, m, n, ChunkingMode::balanced));
      PartitionRunInfo info;
      const Partition pl = partition_of(g, chunked(method, m, n, ChunkingMode::locality), &info);
      EXPECT_EQ(pb.params.chunking, ChunkingMode::balanced);
      EXPECT_EQ(pl.params.chunking, ChunkingMode::locality);
      const PartitionStats b = compute_partition_stats(g.view(), pb), l = compute_partition_stats(g.view(), pl);
      EXPECT_LT(l.alpha, 0.5 * b.alpha) << "balanced " << b.alpha << ", locality " << l.alpha;
      // Hierarchical: the partitions are the same vertex sets.
      EXPECT_EQ(pl.part_offsets, pb.part_offsets);
      EXPECT_EQ(l.edge_cut, b.edge_cut);
      for (int i = 0; i < m; ++i) {
        std::vector<vid_t> a(pb.new_to_old.begin() + pb.part_offsets[i], pb.new_to_old.begin() + pb.part_offsets[i + 1]);
        std::vector<vid_t> c(pl.new_to_old.begin() + pl.part_offsets[i], pl.new_to_old.begin() + pl.part_offsets[i + 1]);
        std::sort(c.begin(), c.end());
        EXPECT_EQ(a, c) << "partition " << i;
        ASSERT_EQ(info.chunking.parts.size(), static_cast<size_t>(m));
        EXPECT_TRUE(info.chunking.parts[i].locality);
        EXPECT_EQ(info.chunking.parts[i].method, method);
      }
      // Blocks within --imbalance of their partition's mean chunk weight
      // (vertex weight = in-degree + 1 = the computation weight, so for the
      // multilevel partitioner this is its exact limit; METIS is close).
      const double slack = method == PartitionMethod::multilevel ? 1e-9 : 0.02;
      for (const ChunkStats& c : l.chunks)
        EXPECT_LE(c.weight, (1.03 + slack) * l.parts[c.part].weight / n) << "chunk " << c.part << "," << c.chunk;
    }
  }
}

TEST(Chunking, BlocksBalanceTheWholeComputationWeight) {
  // A random graph cut in two: about half of a partition's in-edges come
  // from the other one. They still weigh (as self-loops of the subgraph), so
  // the chunks balance in-edges + C, not only the inner ones.
  const Graph g = random_graph(3000, 60000, 5);
  for (double c : {1.0, 16.0}) {
    PartitionParams q = chunked(PartitionMethod::multilevel, 2, 4, ChunkingMode::locality);
    q.chunk_vertex_weight = c;
    const PartitionStats s = compute_partition_stats(g.view(), partition_of(g, q));
    for (const ChunkStats& k : s.chunks)
      EXPECT_LE(k.weight, 1.03 * s.parts[k.part].weight / 4 + 1.0) << "chunk " << k.part << "," << k.chunk << " c " << c;
  }
}

TEST(Chunking, AutoReadsNoMoreRowsThanEitherAndKeepsRangesOnAPath) {
  const Graph graphs[] = {grid_graph(50, 4), grid_graph(50, 4, false), random_graph(2000, 16000, 8),
                          rmat_graph(11, 16000, 9)};
  for (const Graph& g : graphs) {
    for (auto [m, n] : {std::pair{1, 6}, {3, 4}}) {
      SCOPED_TRACE(testing::Message() << "N " << g.num_vertices << " m " << m << " n " << n);
      auto alpha = [&](ChunkingMode c) {
        return compute_partition_stats(g.view(), partition_of(g, chunked(PartitionMethod::metis, m, n, c))).alpha;
      };
      const double a = alpha(ChunkingMode::automatic);
      EXPECT_LE(a, alpha(ChunkingMode::balanced) + 1e-12);
      EXPECT_LE(a, alpha(ChunkingMode::locality) + 1e-12);
    }
  }
  // A path in id order: its ranges are already the best chunks (two
  // boundary rows each), so no partition into blocks reads fewer rows.
  EdgeList el;
  el.num_vertices = 4000;
  for (vid_t v = 0; v + 1 < 4000; ++v) {
    el.src.push_back(v);
    el.dst.push_back(v + 1);
    el.src.push_back(v + 1);
    el.dst.push_back(v);
  }
  Graph path = csc_from_edges(std::move(el));
  path.flags = detect_flags(path.view());
  PartitionRunInfo info;
  const Partition p = partition_of(path, chunked(PartitionMethod::metis, 1, 8, ChunkingMode::automatic), &info);
  EXPECT_EQ(p.params.chunking, ChunkingMode::balanced);
  ASSERT_EQ(info.chunking.parts.size(), 1u);
  EXPECT_FALSE(info.chunking.parts[0].locality);
  EXPECT_GE(info.chunking.parts[0].rows_locality, info.chunking.parts[0].rows_balanced);
  for (int64_t v = 0; v < path.num_vertices; ++v) EXPECT_EQ(p.new_to_old[v], static_cast<vid_t>(v));
}

TEST(Chunking, RangeAndRandomStayBalancedUnlessAsked) {
  const Graph g = grid_graph(40, 5);
  for (PartitionMethod method : {PartitionMethod::range, PartitionMethod::random}) {
    const Partition a = partition_of(g, chunked(method, 2, 4, ChunkingMode::automatic));
    const Partition b = partition_of(g, chunked(method, 2, 4, ChunkingMode::balanced));
    EXPECT_EQ(a.params.chunking, ChunkingMode::balanced);
    EXPECT_EQ(a.new_to_old, b.new_to_old);
    EXPECT_EQ(a.chunk_offsets, b.chunk_offsets);
    PartitionRunInfo info;
    const Partition l = partition_of(g, chunked(method, 2, 4, ChunkingMode::locality), &info);
    EXPECT_EQ(l.params.chunking, ChunkingMode::locality);
    EXPECT_EQ(l.params.method, method);
    ASSERT_EQ(info.chunking.parts.size(), 2u);
    EXPECT_EQ(info.chunking.parts[0].method, PartitionMethod::metis);  // auto's pick for a small graph
    EXPECT_FALSE(info.chunking.parts[0].method_reason.empty());
  }
}

TEST(Chunking, OnePartitionAutoPicksTheChunksPartitioner) {
  const Graph g = grid_graph(40, 6);
  PartitionRunInfo info;
  const Partition p = partition_of(g, chunked(PartitionMethod::automatic, 1, 4, ChunkingMode::automatic), &info);
  EXPECT_EQ(p.params.method, PartitionMethod::metis);
  EXPECT_EQ(p.params.chunking, ChunkingMode::locality);
  EXPECT_NE(info.method_reason.find("chunks by locality"), std::string::npos) << info.method_reason;
  EXPECT_TRUE(info.metis_ran);
  EXPECT_EQ(p.part_offsets, (std::vector<int64_t>{0, g.num_vertices}));

  PartitionRunInfo plain;
  const Partition r = partition_of(g, chunked(PartitionMethod::automatic, 1, 4, ChunkingMode::balanced), &plain);
  EXPECT_EQ(r.params.chunking, ChunkingMode::balanced);
  EXPECT_NE(plain.method_reason.find("nothing to partition"), std::string::npos) << plain.method_reason;
  EXPECT_FALSE(plain.metis_ran);
  EXPECT_TRUE(plain.chunking.parts.empty());

  // m = 1 with multilevel: the same chunks as its partition into n blocks.
  const Partition ml = partition_of(g, chunked(PartitionMethod::multilevel, 1, 4, ChunkingMode::locality));
  EXPECT_EQ(ml.params.method, PartitionMethod::multilevel);
  expect_valid_layout(ml, g.num_vertices);
}

TEST(Chunking, SameChunksWithOneOrTwoThreads) {
  const Graph g = random_graph(3000, 30000, 10);
  for (PartitionMethod method : {PartitionMethod::metis, PartitionMethod::multilevel}) {
    for (auto [m, n] : {std::pair{1, 4}, {2, 3}}) {
      const PartitionParams q = chunked(method, m, n, ChunkingMode::automatic, 17);
      const int saved = omp_get_max_threads();
      omp_set_num_threads(1);
      const Partition one = partition_of(g, q);
      omp_set_num_threads(2);
      const Partition two = partition_of(g, q);
      omp_set_num_threads(saved);
      EXPECT_EQ(one.new_to_old, two.new_to_old);
      EXPECT_EQ(one.chunk_offsets, two.chunk_offsets);
      EXPECT_EQ(one.params.chunking, two.params.chunking);
    }
  }
}

TEST(Chunking, NeighborRowsAgreeWithTheStatistics) {
  const Graph g = rmat_graph(10, 9000, 23);
  for (ChunkingMode c : {ChunkingMode::balanced, ChunkingMode::locality}) {
    const Partition p = partition_of(g, chunked(PartitionMethod::metis, 3, 4, c));
    const PartitionStats s = compute_partition_stats(g.view(), p);
    int64_t rows = 0;
    for (const ChunkStats& k : s.chunks) rows += k.in_neighbors;
    EXPECT_EQ(neighbor_rows(g.view(), p.new_to_old, p.chunk_offsets), rows);
  }
}

TEST(Chunking, RenumberKeepsEveryEdgeAndVertexDatum) {
  Graph g = grid_graph(30, 7);
  test::add_vertex_data(g);
  const Partition p = partition_of(g, chunked(PartitionMethod::metis, 2, 3, ChunkingMode::locality));
  ASSERT_EQ(p.params.chunking, ChunkingMode::locality);
  const Graph r = renumber(g.view(), p);
  EXPECT_EQ(edges_in_old_ids(r.view(), &p), edges_in_old_ids(g.view(), nullptr));
  EXPECT_TRUE(detect_flags(r.view()).sorted_neighbors);
  for (int64_t v = 0; v < r.num_vertices; ++v) EXPECT_EQ(r.orig_ids[v], g.orig_ids[p.new_to_old[v]]);
}

TEST(Chunking, FileRecordsHowTheChunksWereMade) {
  const Graph g = grid_graph(30, 8);
  test::TempDir dir;
  write_graph(dir.file("g.htg"), g.view());
  const GraphFile f(dir.file("g.htg"));
  for (ChunkingMode c : {ChunkingMode::balanced, ChunkingMode::locality}) {
    PartitionRunInfo info;
    const Partition p = make_partition(f.view(), f.identity(), chunked(PartitionMethod::metis, 2, 3, c), info);
    write_partition(dir.file("p.htp"), p);
    const Partition r = read_partition(dir.file("p.htp"));
    EXPECT_EQ(r.params.chunking, c);
    EXPECT_EQ(r.new_to_old, p.new_to_old);
    EXPECT_EQ(r.chunk_offsets, p.chunk_offsets);
  }
  PartitionRunInfo info;
  Partition p = make_partition(f.view(), f.identity(), chunked(PartitionMethod::metis, 2, 3, ChunkingMode::balanced), info);
  p.params.chunking = ChunkingMode::automatic;
  EXPECT_THROW(write_partition(dir.file("q.htp"), p), Error);
}

TEST(Chunking, MetisOptionsAreCheckedWhenOnlyTheChunksUseMetis) {
  const Graph g = random_graph(200, 1000, 9);
  PartitionParams q = chunked(PartitionMethod::metis, 1, 4, ChunkingMode::locality);
  q.algorithm = MetisAlgorithm::recursive;
  q.objective = MetisObjective::vol;
  EXPECT_THROW(partition_of(g, q), Error);
  q.chunking = ChunkingMode::balanced;  // METIS does not run at all
  EXPECT_NO_THROW(partition_of(g, q));
}

TEST(Partition, OwnerSkipsEmptyPartitions) {
  Partition p;
  p.params.parts = 4;
  p.num_vertices = 5;
  p.part_offsets = {0, 2, 2, 2, 5};
  EXPECT_EQ(p.owner(0), 0);
  EXPECT_EQ(p.owner(1), 0);
  EXPECT_EQ(p.owner(2), 3);
  EXPECT_EQ(p.owner(4), 3);
  EXPECT_THROW(p.owner(5), Error);
}

}  // namespace ht
