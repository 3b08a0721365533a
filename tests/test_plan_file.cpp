// Plan file: round trip of every field and parameter, refusal of a plan made
// for another graph/partition, and corrupted or lying files -> ht::Error.

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_check.hpp"
#include "plan/plan_file.hpp"
#include "plan_test_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

Plan sample_plan(Graph& g_new, Partition& p) {
  const Graph g = test::make_graph(test::GraphKind::community, 300, 2000, 12);
  std::tie(g_new, p) = test::shuffled_partition(g, 3, 4, 2);
  Plan plan = build_plan(g_new.view(), p, {});
  plan.graph_identity = {123456, 0xabcdef};
  plan.partition_identity = {654321, 0xfedcba};
  return plan;
}

void expect_same(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.m, b.m);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.num_vertices, b.num_vertices);
  EXPECT_EQ(a.graph_identity, b.graph_identity);
  EXPECT_EQ(a.partition_identity, b.partition_identity);
  EXPECT_EQ(a.reorganized, b.reorganized);
  EXPECT_EQ(a.part_offsets, b.part_offsets);
  EXPECT_EQ(a.trans_capacity, b.trans_capacity);
  EXPECT_EQ(a.remote_capacity, b.remote_capacity);
  EXPECT_EQ(a.nbr_capacity, b.nbr_capacity);
  EXPECT_EQ(a.max_dst, b.max_dst);
  EXPECT_EQ(a.max_edges, b.max_edges);
  EXPECT_EQ(a.volumes.v_ori, b.volumes.v_ori);
  EXPECT_EQ(a.volumes.v_p2p, b.volumes.v_p2p);
  EXPECT_EQ(a.volumes.v_ru, b.volumes.v_ru);
  EXPECT_EQ(a.volumes_before.v_ori, b.volumes_before.v_ori);
  EXPECT_EQ(a.volumes_before.v_p2p, b.volumes_before.v_p2p);
  EXPECT_EQ(a.volumes_before.v_ru, b.volumes_before.v_ru);
  EXPECT_EQ(a.cost_before, b.cost_before);
  EXPECT_EQ(a.cost_after, b.cost_after);
  EXPECT_EQ(a.seconds, b.seconds);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t s = 0; s < a.steps.size(); ++s) {
    const ChunkPlan &x = a.steps[s], &y = b.steps[s];
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_EQ(x.part, y.part);
    EXPECT_EQ(x.chunk, y.chunk);
    EXPECT_EQ(x.dst_begin, y.dst_begin);
    EXPECT_EQ(x.dst_end, y.dst_end);
    EXPECT_EQ(x.nbr, y.nbr);
    EXPECT_EQ(x.offsets, y.offsets);
    EXPECT_EQ(x.src_local, y.src_local);
    EXPECT_EQ(x.src_merged, y.src_merged);
    EXPECT_EQ(x.src_vid, y.src_vid);
    EXPECT_EQ(x.trans_vid, y.trans_vid);
    EXPECT_EQ(x.trans_slot, y.trans_slot);
    EXPECT_EQ(x.trans_reused, y.trans_reused);
    EXPECT_EQ(x.remote_vid, y.remote_vid);
    EXPECT_EQ(x.remote_gpu, y.remote_gpu);
    EXPECT_EQ(x.remote_slot, y.remote_slot);
    EXPECT_EQ(x.flush_slot, y.flush_slot);
    EXPECT_EQ(x.flush_vid, y.flush_vid);
  }
}


TEST(PlanFile, RoundTripEveryField) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const Plan plan = sample_plan(g, p);
  PlanParams params;
  params.row_bytes = 2408;
  params.profile = {50e9, 300e9, 2e12};
  params.reorganize_requested = true;
  write_plan(dir.file("a.htplan"), plan, params);
  PlanParams back;
  const Plan read = read_plan(dir.file("a.htplan"), {}, &back);
  expect_same(plan, read);
  EXPECT_EQ(back.row_bytes, 2408);
  EXPECT_EQ(back.profile.t_hd, 50e9);
  EXPECT_EQ(back.profile.t_dd, 300e9);
  EXPECT_EQ(back.profile.t_ru, 2e12);
  EXPECT_TRUE(back.reorganize_requested);
  EXPECT_EQ(check_plan(read, g.view(), p), std::vector<std::string>{});
}

TEST(PlanFile, SingleGpuPlanWithEmptySections) {
  test::TempDir dir;
  const Graph g = test::make_graph(test::GraphKind::random, 40, 100, 3);
  const Partition p = test::range_partition(g, 1, 1);  // no remote rows, nothing reused
  const Plan plan = build_plan(g.view(), p, {false, {}});
  write_plan(dir.file("b.htplan"), plan);
  const Plan read = read_plan(dir.file("b.htplan"));
  expect_same(plan, read);
  EXPECT_FALSE(read.reorganized);
}

TEST(PlanFile, RefusesAnotherGraphOrPartition) {
  Graph g;
  Partition p;
  const Plan plan = sample_plan(g, p);
  EXPECT_NO_THROW(check_plan_matches(plan, plan.graph_identity, plan.partition_identity));
  try {
    check_plan_matches(plan, {123456, 0xabcdee}, plan.partition_identity);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rerun ht-reorganize"), std::string::npos) << e.what();
  }
  try {
    check_plan_matches(plan, plan.graph_identity, {1, 2});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another partition"), std::string::npos) << e.what();
  }
}

TEST(PlanFile, CorruptedFilesGiveErrors) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const Plan plan = sample_plan(g, p);
  const std::string path = dir.file("c.htplan");
  write_plan(path, plan);
  const std::vector<char> good = test::read_bytes(path);
  const std::vector<SectionInfo> sections = ContainerReader(path, kPlanMagic, kPlanVersion).sections();
  // Truncated.
  test::write_bytes(path, std::vector<char>(good.begin(), good.begin() + static_cast<int64_t>(good.size() / 2)));
  EXPECT_THROW(read_plan(path), Error);
  // A flipped byte in the middle of every non-empty section: its checksum
  // catches it.
  int flipped = 0;
  for (const SectionInfo& sec : sections) {
    if (sec.length == 0) continue;
    std::vector<char> bad = good;
    bad[sec.offset + sec.length / 2] ^= 0x5a;
    test::write_bytes(path, bad);
    EXPECT_THROW(read_plan(path), Error) << "section " << sec.name;
    ++flipped;
  }
  EXPECT_GE(flipped, 20);
  // Wrong kind of file.
  std::vector<char> bad = good;
  bad[2] = 'X';
  test::write_bytes(path, bad);
  EXPECT_THROW(read_plan(path), Error);
  EXPECT_THROW(read_plan(dir.file("missing.htplan")), Error);
}

// Values an engine would index with are range-checked on reading even when
// the checksums are right (a buggy writer) or skipped.
TEST(PlanFile, OutOfRangeIndicesAreRejected) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("d.htplan");
  auto expect_rejected = [&](const std::function<void(Plan&)>& spoil, const char* what) {
    Plan plan = sample_plan(g, p);
    spoil(plan);
    write_plan(path, plan);
    EXPECT_THROW(read_plan(path), Error) << what;
  };
  expect_rejected([](Plan& pl) { pl.steps[1].src_merged.back() = pl.merged_capacity(1); }, "src_merged");
  expect_rejected([](Plan& pl) { pl.steps[0].src_local[0] = static_cast<uint32_t>(pl.steps[0].nbr.size()); },
                  "src_local");
  expect_rejected([](Plan& pl) { pl.steps[2].trans_slot[0] = pl.trans_capacity[2]; }, "trans_slot");
  expect_rejected([](Plan& pl) { pl.steps[4].remote_gpu[0] = pl.steps[4].part; }, "remote_gpu");
  expect_rejected([](Plan& pl) { pl.steps[4].remote_slot[0] = 1u << 30; }, "remote_slot");
  expect_rejected([](Plan& pl) { pl.steps[5].flush_slot.push_back(0), pl.steps[5].flush_vid.push_back(1u << 30); },
                  "flush_vid");
  expect_rejected([](Plan& pl) { pl.steps[3].chunk = pl.steps[0].chunk; }, "chunk twice");
  expect_rejected([](Plan& pl) { pl.steps[1].offsets[1] = pl.steps[1].offsets.back() + 1; }, "offsets");
  expect_rejected([](Plan& pl) { pl.steps[0].dst_end = pl.part_offsets[1] + 1; }, "dst range");
  expect_rejected([](Plan& pl) { pl.nbr_capacity[0] = 1; }, "capacity");
}

}  // namespace
}  // namespace ht
