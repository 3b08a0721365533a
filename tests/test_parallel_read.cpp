// Parallel reading of the inputs (issue 14): the bulk-memory helpers, the
// container's checksums over all blocks of all sections at once, and the
// graph, partition and plan readers and renumber() with the parallel paths
// forced onto small inputs (ScopedBulkTuning). Each must give what the
// sequential code gives, and report the same first error.
#include <omp.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/bulk_memory.hpp"
#include "core/container.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/rng.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/plan_builder.hpp"
#include "partition/renumbering.hpp"
#include "plan/plan_file.hpp"
#include "plan_test_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

// Every size takes the parallel paths, in blocks of an odd size.
constexpr BulkTuning kTiny{0, 7};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Flips one byte of a file in place (and flips it back on the second call).
void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
}

// Several vectors sized at once: each its size, all zero, whether it was
// larger, smaller or empty before, at any thread count.
TEST(BulkMemory, ResizeEachGivesZeroedVectorsOfTheirSizes) {
  const int threads_before = omp_get_max_threads();
  for (int threads : {1, 2, 3, 8})
    for (BulkTuning t : {BulkTuning{}, kTiny}) {
      ScopedBulkTuning scope(t);
      omp_set_num_threads(threads);
      std::vector<std::vector<uint32_t>> v = {{1, 2, 3}, std::vector<uint32_t>(5000, 7), {}, {9}, {}};
      const std::vector<size_t> sizes = {2000001, 3, 0, 17, 1 << 20};
      std::vector<std::vector<uint32_t>*> lists;
      for (auto& x : v) lists.push_back(&x);
      resize_each_for_overwrite<uint32_t>(lists, sizes);
      for (size_t k = 0; k < v.size(); ++k) {
        ASSERT_EQ(v[k].size(), sizes[k]) << k;
        EXPECT_TRUE(std::all_of(v[k].begin(), v[k].end(), [](uint32_t x) { return x == 0; })) << k;
      }
    }
  omp_set_num_threads(threads_before);
}

TEST(BulkMemory, ResizeCopyScanAndFirstBadAgreeWithSequentialCode) {
  for (BulkTuning t : {BulkTuning{}, kTiny}) {
    ScopedBulkTuning scope(t);
    std::vector<int64_t> v = {5, 6, 7};
    resize_for_overwrite(v, 100001);
    ASSERT_EQ(v.size(), 100001u);
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; }));
    resize_for_overwrite(v, 2);  // shrinking also gives zeros
    EXPECT_EQ(v, (std::vector<int64_t>{0, 0}));

    rng::Stream r(3, 1);
    std::vector<int64_t> a(30011);
    for (auto& x : a) x = static_cast<int64_t>(r.below(1000));
    EXPECT_EQ(copy_to_vector(std::span<const int64_t>(a)), a);
    EXPECT_TRUE(copy_to_vector(std::span<const int64_t>()).empty());

    std::vector<int64_t> scanned = a, expected(a.size());
    std::partial_sum(a.begin(), a.end(), expected.begin());
    parallel_inclusive_scan(scanned);
    EXPECT_EQ(scanned, expected);

    for (int64_t target : {int64_t{999}, int64_t{998}, int64_t{5000}}) {
      const auto it = std::find_if(a.begin(), a.end(), [&](int64_t x) { return x >= target; });
      const int64_t want = it == a.end() ? -1 : it - a.begin();
      EXPECT_EQ(first_bad(static_cast<int64_t>(a.size()), [&](int64_t k) { return a[k] >= target; }), want);
    }
    std::vector<int> hits(1000, 0);
    parallel_blocks(1000, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) ++hits[k];
    });
    EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
  }
}

// A container of many sections: empty, tiny, and one of more than one 64 MiB
// checksum block. Every section's checksum is the documented one, and a byte
// flipped in any section (either block of the long one) names that section.
TEST(ContainerChecksums, EverySectionOfAManySectionFileIsVerified) {
  test::TempDir dir;
  const std::string path = dir.file("c.bin");
  constexpr char kMagic[9] = "HTTEST\0\0";
  const size_t long_len = (size_t{64} << 20) + 4099;
  std::vector<uint8_t> big(long_len);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + (i >> 13));
  std::vector<std::vector<int32_t>> small;
  {
    ContainerWriter w(path, kMagic, 1);
    for (int s = 0; s < 12; ++s) {
      small.emplace_back(static_cast<size_t>(s * s * 97), s);
      w.add<int32_t>("small" + std::to_string(s), small.back());
    }
    w.add<uint8_t>("long", big);
    w.add<int32_t>("last", small[3]);
    w.commit();
  }
  const ContainerReader r(path, kMagic, 1);
  ASSERT_EQ(r.sections().size(), 14u);
  const SectionInfo& l = r.section("long");
  std::vector<uint64_t> digests = {xxh64(big.data(), size_t{64} << 20),
                                   xxh64(big.data() + (size_t{64} << 20), 4099)};
  EXPECT_EQ(l.checksum, xxh64(digests.data(), 16, long_len));
  EXPECT_EQ(r.section("small5").checksum, xxh64(small[5].data(), small[5].size() * 4));
  EXPECT_EQ(r.section("small0").checksum, xxh64(nullptr, 0));

  std::vector<std::pair<std::string, uint64_t>> flips;
  for (const SectionInfo& s : r.sections())
    if (s.length > 0) flips.emplace_back(s.name, s.offset + s.length / 3);
  flips.emplace_back("long", l.offset + l.length - 1);  // the second block
  flips.emplace_back("long", l.offset);                 // the first block
  for (const auto& [name, offset] : flips) {
    flip_byte(path, offset);
    const std::string msg = error_of([&] { ContainerReader(path, kMagic, 1); });
    EXPECT_NE(msg.find("checksum mismatch in section '" + name + "'"), std::string::npos) << name << ": " << msg;
    EXPECT_NO_THROW(ContainerReader(path, kMagic, 1, {false}));
    flip_byte(path, offset);
  }
  EXPECT_NO_THROW(ContainerReader(path, kMagic, 1));
}

// The first section in table order is the one reported when several differ.
TEST(ContainerChecksums, FirstCorruptedSectionIsReported) {
  test::TempDir dir;
  const std::string path = dir.file("c.bin");
  constexpr char kMagic[9] = "HTTEST\0\0";
  std::vector<int64_t> a(5000, 1), b(100, 2), c(3, 3);
  {
    ContainerWriter w(path, kMagic, 1);
    w.add<int64_t>("a", a);
    w.add<int64_t>("b", b);
    w.add<int64_t>("c", c);
    w.commit();
  }
  const ContainerReader r(path, kMagic, 1);
  flip_byte(path, r.section("c").offset);
  flip_byte(path, r.section("b").offset + 8);
  EXPECT_NE(error_of([&] { ContainerReader(path, kMagic, 1); }).find("section 'b'"), std::string::npos);
}

TEST(ParallelRead, GraphFileWithWideIdsAgrees) {
  const Graph g = test::make_graph(test::GraphKind::rmat, 500, 4000, 5);
  test::TempDir dir;
  write_graph(dir.file("g.htg"), g.view(), {8});
  ScopedBulkTuning scope(kTiny);
  const GraphFile f(dir.file("g.htg"));
  EXPECT_EQ(f.id_bytes(), 8);
  EXPECT_TRUE(std::ranges::equal(f.view().sources, g.sources));
  EXPECT_TRUE(std::ranges::equal(f.view().offsets, g.offsets));
}

Partition shuffled(const Graph& g, int m, int n) { return test::shuffled_partition(g, m, n, 9).second; }

TEST(ParallelRead, PartitionAgreesAndReportsTheSameFirstProblem) {
  const Graph g = test::make_graph(test::GraphKind::community, 3000, 20000, 4);
  Partition p = shuffled(g, 3, 2);
  p.graph_identity = {1, 2};
  test::TempDir dir;
  const std::string path = dir.file("p.htp");
  write_partition(path, p);
  ScopedBulkTuning scope(kTiny);
  const Partition q = read_partition(path);
  EXPECT_EQ(q.new_to_old, p.new_to_old);
  EXPECT_EQ(q.old_to_new, p.old_to_new);
  EXPECT_EQ(q.chunk_offsets, p.chunk_offsets);
  // Two duplicates and an id out of range: the first in entry order is named.
  Partition bad = p;
  bad.new_to_old[2500] = bad.new_to_old[10];
  bad.new_to_old[1200] = bad.new_to_old[7];
  bad.new_to_old[2900] = 1u << 30;
  EXPECT_NE(find_partition_problem(bad)->what.find("(entry 1200)"), std::string::npos)
      << find_partition_problem(bad)->what;
  bad.new_to_old[700] = 3001;
  EXPECT_EQ(find_partition_problem(bad)->what, "entry 700 is 3001, not < N = 3000");
}

// renumber() as it was written sequentially: rows in new order, ids mapped,
// each row sorted (stably, weights following) when the input's were.
Graph renumber_reference(const GraphView& g, const Partition& p) {
  Graph out;
  out.num_vertices = g.num_vertices;
  out.offsets.assign(g.num_vertices + 1, 0);
  for (int64_t v = 0; v < g.num_vertices; ++v) out.offsets[v + 1] = out.offsets[v] + g.in_degree(p.new_to_old[v]);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    const int64_t old = p.new_to_old[v];
    std::vector<std::pair<vid_t, float>> row;
    for (int64_t i = g.offsets[old]; i < g.offsets[old + 1]; ++i)
      row.emplace_back(p.old_to_new[g.sources[i]], g.weights.empty() ? 0.f : g.weights[i]);
    if (g.flags.sorted_neighbors)
      std::stable_sort(row.begin(), row.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [s, w] : row) {
      out.sources.push_back(s);
      if (!g.weights.empty()) out.weights.push_back(w);
    }
    const size_t f = static_cast<size_t>(g.feature_dim);
    if (f) out.features.insert(out.features.end(), g.features.begin() + old * f, g.features.begin() + (old + 1) * f);
    if (!g.labels.empty()) out.labels.push_back(g.labels[old]);
    if (!g.split.empty()) out.split.push_back(g.split[old]);
    out.orig_ids.push_back(g.orig_ids.empty() ? old : g.orig_ids[old]);
  }
  return out;
}

TEST(ParallelRead, RenumberAgreesWithTheSequentialDefinition) {
  Graph g = test::make_graph(test::GraphKind::rmat, 2000, 30000, 6);
  g.feature_dim = 3;
  g.num_classes = 4;
  rng::Stream r(1, 2);
  for (int64_t i = 0; i < g.num_vertices * 3; ++i) g.features.push_back(static_cast<float>(r.uniform()));
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    g.labels.push_back(static_cast<int32_t>(v % 5) - 1);
    g.split.push_back(static_cast<uint8_t>(v % 4));
  }
  // same_p keeps every id (one part, one chunk): renumber copies the rows.
  const Partition shuffled_p = shuffled(g, 4, 3), range_p = test::range_partition(g, 2, 2),
                  same_p = test::range_partition(g, 1, 1);
  for (int64_t v = 0; v < g.num_vertices; ++v) ASSERT_EQ(same_p.new_to_old[v], static_cast<vid_t>(v));
  for (const Partition* p : {&shuffled_p, &range_p, &same_p}) {
    for (bool weighted : {false, true}) {
      Graph h = to_graph(g.view());
      if (weighted)
        for (int64_t i = 0; i < h.num_edges(); ++i) h.weights.push_back(static_cast<float>(i % 17));
      if (p != &shuffled_p) h.orig_ids.assign(h.num_vertices, 0), std::iota(h.orig_ids.begin(), h.orig_ids.end(), 100);
      h.flags.sorted_neighbors = !(weighted && p == &shuffled_p);  // unsorted input stays in input order
      const Graph want = renumber_reference(h.view(), *p);
      for (BulkTuning t : {BulkTuning{}, kTiny}) {
        ScopedBulkTuning scope(t);
        const Graph got = renumber(h.view(), *p);
        EXPECT_EQ(got.offsets, want.offsets);
        EXPECT_EQ(got.sources, want.sources);
        EXPECT_EQ(got.weights, want.weights);
        EXPECT_EQ(got.features, want.features);
        EXPECT_EQ(got.labels, want.labels);
        EXPECT_EQ(got.split, want.split);
        EXPECT_EQ(got.orig_ids, want.orig_ids);
        EXPECT_EQ(got.flags.sorted_neighbors, h.flags.sorted_neighbors);
      }
    }
  }
}

// Rows dealt into chunk buckets (renumber's linear path: each chunk keeps its
// vertices' old order, so a row is an interleaving of ascending runs) and
// rows where a chunk's order is broken (the comparison sort): both the stable
// sort of the reference, weights and duplicates included, at any thread
// count.
TEST(ParallelRead, RenumberBucketedRowsAgreeWithTheSequentialDefinition) {
  Graph g = test::make_graph(test::GraphKind::rmat, 1500, 40000, 8, /*self_loops=*/true);
  for (int64_t i = 0; i < g.num_edges(); ++i) g.weights.push_back(static_cast<float>(i % 23));
  // Duplicate edges: a row's second copy of each of its first sources.
  Graph h;
  h.num_vertices = g.num_vertices;
  h.offsets.assign(1, 0);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    const int64_t b = g.offsets[v], e = g.offsets[v + 1];
    for (int64_t i = b; i < e; ++i) {
      h.sources.push_back(g.sources[i]);
      h.weights.push_back(g.weights[i]);
      if (i < b + 3) h.sources.push_back(g.sources[i]), h.weights.push_back(100.f + static_cast<float>(i % 7));
    }
    h.offsets.push_back(static_cast<int64_t>(h.sources.size()));
  }
  h.flags.sorted_neighbors = true;
  std::vector<int32_t> part(static_cast<size_t>(h.num_vertices));
  for (int64_t v = 0; v < h.num_vertices; ++v) part[v] = static_cast<int32_t>(v % 3);
  Partition strided;
  strided.params.parts = 3;
  strided.params.chunks = 4;
  strided.num_edges = h.num_edges();
  layout_partitions(part, strided);
  strided.chunk_offsets = test::even_chunks(strided.part_offsets, 4);
  // The same, one chunk's vertices in reverse old order: its runs descend.
  Partition broken = strided;
  const int64_t b = broken.chunk_offsets[5], e = broken.chunk_offsets[6];
  std::reverse(broken.new_to_old.begin() + b, broken.new_to_old.begin() + e);
  for (int64_t v = b; v < e; ++v) broken.old_to_new[broken.new_to_old[v]] = static_cast<vid_t>(v);
  // Empty chunks and a chunk table that is not the partition's (any
  // ascending ranges are buckets).
  Partition empty_chunks = strided;
  empty_chunks.chunk_offsets = {0, 0, 10, 10, 10, 700, 700, h.num_vertices, h.num_vertices};
  const int threads_before = omp_get_max_threads();
  for (const Partition* p : {&strided, &broken, &empty_chunks})
    for (bool weighted : {false, true}) {
      Graph x = to_graph(h.view());
      if (!weighted) x.weights.clear();
      const Graph want = renumber_reference(x.view(), *p);
      for (int threads : {1, 2, 3, 8})
        for (BulkTuning t : {BulkTuning{}, kTiny}) {
          ScopedBulkTuning scope(t);
          omp_set_num_threads(threads);
          const Graph got = renumber(x.view(), *p);
          EXPECT_EQ(got.offsets, want.offsets);
          EXPECT_EQ(got.sources, want.sources) << threads << " threads";
          EXPECT_EQ(got.weights, want.weights) << threads << " threads";
        }
    }
  omp_set_num_threads(threads_before);
}

Plan sample_plan() {
  const Graph g = test::make_graph(test::GraphKind::community, 600, 5000, 12);
  auto [g_new, p] = test::shuffled_partition(g, 3, 4, 2);
  Plan plan = build_plan(g_new.view(), p, {});
  plan.graph_identity = {123456, 0xabcdef};
  return plan;
}

bool same_steps(const Plan& a, const Plan& b) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const ChunkPlan &x = a.steps[s], &y = b.steps[s];
    if (x.nbr != y.nbr || x.offsets != y.offsets || x.src_local != y.src_local || x.src_merged != y.src_merged ||
        x.src_vid != y.src_vid || x.trans_vid != y.trans_vid || x.trans_slot != y.trans_slot ||
        x.trans_reused != y.trans_reused || x.remote_vid != y.remote_vid || x.remote_gpu != y.remote_gpu ||
        x.remote_slot != y.remote_slot || x.flush_slot != y.flush_slot || x.flush_vid != y.flush_vid)
      return false;
  }
  return true;
}

TEST(ParallelRead, PlanAgreesWithDefaultReading) {
  test::TempDir dir;
  const Plan plan = sample_plan();
  write_plan(dir.file("a.htplan"), plan);
  const Plan by_default = read_plan(dir.file("a.htplan"));
  ScopedBulkTuning scope(kTiny);
  const Plan tiny = read_plan(dir.file("a.htplan"));
  EXPECT_TRUE(same_steps(plan, by_default));
  EXPECT_TRUE(same_steps(plan, tiny));
}

// The derivation's blocks within a step (an own piece's merged rows, the
// flush lists from a slot map) give the built plan's lists at any thread
// count and block size, with one GPU (a step's only piece is its whole
// neighbor list) and with several.
TEST(ParallelRead, PlanDerivedInBlocksAgreesAtAnyThreadCount) {
  test::TempDir dir;
  const Graph g = test::make_graph(test::GraphKind::community, 900, 9000, 5);
  const int threads_before = omp_get_max_threads();
  for (const auto& [m, n] : {std::pair{1, 4}, std::pair{1, 1}, std::pair{2, 3}}) {
    auto [g_new, p] = test::shuffled_partition(g, m, n, 3);
    Plan plan = build_plan(g_new.view(), p, {});
    plan.graph_identity = {1, 2};
    const std::string path = dir.file("m" + std::to_string(m) + "n" + std::to_string(n) + ".htplan");
    write_plan(path, plan);
    for (int threads : {1, 2, 3, 8})
      for (BulkTuning t : {BulkTuning{}, kTiny}) {
        ScopedBulkTuning scope(t);
        omp_set_num_threads(threads);
        EXPECT_TRUE(same_steps(plan, read_plan(path))) << "m " << m << " n " << n << ", " << threads << " threads";
      }
  }
  omp_set_num_threads(threads_before);
}

// With the checksums skipped, out-of-range values are still found, and the
// message (which element, which step) is the same whatever the block size:
// the first bad element in file order.
TEST(ParallelRead, PlanValueErrorsNameTheFirstBadElement) {
  test::TempDir dir;
  const std::string path = dir.file("d.htplan");
  const auto message = [&](const std::function<void(Plan&)>& spoil, BulkTuning t) {
    Plan plan = sample_plan();
    spoil(plan);
    write_plan(path, plan);
    ScopedBulkTuning scope(t);
    return error_of([&] { read_plan(path, {false}); });
  };
  const std::vector<std::pair<const char*, std::function<void(Plan&)>>> spoils = {
      {"element", [](Plan& pl) {
         pl.steps[5].src_local[7] = 1u << 30;
         pl.steps[5].src_local[3] = 1u << 29;
         pl.steps[9].src_local[0] = 1u << 30;
       }},
      {"step 1: offsets decrease at destination 4", [](Plan& pl) { pl.steps[1].offsets[5] = -1; }},
      {"step 2: offsets must start at 0", [](Plan& pl) { pl.steps[2].offsets[0] = 1; }},
      {"above the one before", [](Plan& pl) {
         pl.steps[6].nbr[9] = pl.steps[6].nbr[8];
         pl.steps[8].nbr[2] = 1u << 30;
       }},
      {"recorded transition capacity", [](Plan& pl) { pl.trans_capacity[1] += 3; }},
  };
  for (const auto& [what, spoil] : spoils) {
    const std::string sequential_like = message(spoil, BulkTuning{}), tiny = message(spoil, kTiny);
    EXPECT_NE(tiny.find(what), std::string::npos) << tiny;
    EXPECT_EQ(tiny, sequential_like);
  }
  // The first of three bad src_local values (step 5, element 3 of the step).
  Plan plan = sample_plan();
  int64_t k = 3;
  for (size_t s = 0; s < 5; ++s) k += static_cast<int64_t>(plan.steps[s].src_local.size());
  EXPECT_NE(message(spoils[0].second, kTiny).find(fmt::format("element {} (step 5)", k)), std::string::npos);
}

// A byte flipped in any section of a plan is caught by its checksum.
TEST(ParallelRead, PlanCorruptionInEverySectionIsDetected) {
  test::TempDir dir;
  const std::string path = dir.file("c.htplan");
  write_plan(path, sample_plan());
  const std::vector<SectionInfo> sections = ContainerReader(path, kPlanMagic, kPlanVersion).sections();
  ScopedBulkTuning scope(kTiny);
  for (const SectionInfo& s : sections) {
    if (s.length == 0) continue;
    flip_byte(path, s.offset + s.length - 1);
    EXPECT_NE(error_of([&] { read_plan(path); }).find("section '" + s.name + "'"), std::string::npos) << s.name;
    flip_byte(path, s.offset + s.length - 1);
  }
  EXPECT_NO_THROW(read_plan(path));
}

}  // namespace
}  // namespace ht
