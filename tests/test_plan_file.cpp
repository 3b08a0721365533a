// Plan file: round trip of every field and parameter (format 2 stores nbr,
// offsets and src_local and derives every other list: the plan read back
// must equal the one built, field by field, for m = 1, 2, 4, reorganized or
// not, and with the parallel paths forced), refusal of a plan made for
// another graph/partition or of another format version, plans whose
// derived lists are not the derivation's refused at write, and corrupted or
// lying files -> ht::Error.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>
#include <omp.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_check.hpp"
#include "plan/plan_derive.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_shape.hpp"
#include "plan/plan_shape.hpp"
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

// Every comm-relevant shape: one GPU (no remote rows), two and four (remote
// rows from several owners), one batch (no reuse) and many, range and
// shuffled partitions, with and without reorganization; and the same with
// blocks of 7 elements, so that every parallel path of the derivation runs
// over many blocks and steps.
TEST(PlanFile, RoundTripEveryFieldForEveryShape) {
  test::TempDir dir;
  const Graph g = test::make_graph(test::GraphKind::rmat, 500, 4000, 21);
  int plans = 0;
  for (int m : {1, 2, 4})
    for (int n : {1, 3, 8})
      for (bool shuffled : {false, true})
        for (bool reorganize : {true, false}) {
          SCOPED_TRACE(fmt::format("m = {}, n = {}, shuffled = {}, reorganize = {}", m, n, shuffled, reorganize));
          Graph g_new;
          Partition p;
          if (shuffled) {
            std::tie(g_new, p) = test::shuffled_partition(g, m, n, 3);
          } else {
            g_new = g;
            p = test::range_partition(g, m, n);
          }
          const Plan plan = build_plan(g_new.view(), p, {reorganize, {}});
          const std::string path = dir.file(fmt::format("p{}.htplan", plans++));
          write_plan(path, plan);
          expect_same(plan, read_plan(path));
          {
            ScopedBulkTuning tiny(BulkTuning{0, 7});
            expect_same(plan, read_plan(path));
            write_plan(path + ".tiny", plan);
            expect_same(plan, read_plan(path + ".tiny"));
          }
          // The shape read from the header and tables is the plan's.
          const std::optional<PlanShape> shape = read_plan_shape(path);
          ASSERT_TRUE(shape);
          const PlanShape want = shape_of(plan);
          for (size_t k = 0; k < want.steps.size(); ++k) {
            const StepShape &a = shape->steps[k], &b = want.steps[k];
            EXPECT_EQ(std::tie(a.dst, a.edges, a.nbr, a.trans, a.reused, a.remote, a.flush),
                      std::tie(b.dst, b.edges, b.nbr, b.trans, b.reused, b.remote, b.flush));
          }
        }
}

// Fewer GPUs than threads: read_plan derives each GPU's slots side by side
// on teams of the threads (std::threads, each step's blocks by its team);
// the plan read at 8 threads is the plan written, as at one thread.
TEST(PlanFile, SlotsByTeamsSameAsOneThread) {
  test::TempDir dir;
  const Graph g = test::make_graph(test::GraphKind::rmat, 800, 6000, 17);
  const int threads = omp_get_max_threads();
  for (int m : {2, 3}) {
    SCOPED_TRACE(fmt::format("m = {}", m));
    const auto [g_new, p] = test::shuffled_partition(g, m, 4, 5);
    const Plan plan = build_plan(g_new.view(), p, {});
    const std::string path = dir.file(fmt::format("teams{}.htplan", m));
    write_plan(path, plan);
    ScopedBulkTuning tiny(BulkTuning{0, 7});
    for (int t : {1, 8}) {
      omp_set_num_threads(t);
      const Plan read = read_plan(path);
      omp_set_num_threads(threads);
      expect_same(plan, read);
    }
  }
}

// The file holds 4 bytes per edge (src_local), not 12.
TEST(PlanFile, StoresOnlyWhatCannotBeDerived) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const Plan plan = sample_plan(g, p);
  write_plan(dir.file("a.htplan"), plan);
  const ContainerReader r(dir.file("a.htplan"), kPlanMagic, kPlanVersion);
  for (const char* name : {"src_merged", "src_vid", "trans_vid", "trans_slot", "trans_reused", "remote_vid",
                           "remote_gpu", "remote_slot", "flush_slot", "flush_vid"})
    EXPECT_FALSE(r.has(name)) << name;
  int64_t edges = 0;
  for (const ChunkPlan& cp : plan.steps) edges += cp.num_edges();
  EXPECT_EQ(r.section("src_local").length, static_cast<uint64_t>(4 * edges));
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
  EXPECT_GE(flipped, 12);
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
  auto expect_rejected = [&](const std::function<void(Plan&)>& spoil, const char* what, const char* pattern) {
    Plan plan = sample_plan(g, p);
    spoil(plan);
    write_plan(path, plan);
    const std::string e = test::error_of([&] { read_plan(path); });
    EXPECT_NE(e.find(pattern), std::string::npos) << what << ": " << e;
  };
  expect_rejected([](Plan& pl) { pl.steps[0].src_local[0] = static_cast<uint32_t>(pl.steps[0].nbr.size()); },
                  "src_local", "src_local");
  expect_rejected([](Plan& pl) { std::swap(pl.steps[2].nbr[0], pl.steps[2].nbr[1]); }, "nbr order", "ascending");
  expect_rejected([](Plan& pl) { pl.steps[2].nbr.back() = static_cast<vid_t>(pl.num_vertices); }, "nbr id", "'nbr'");
  expect_rejected([](Plan& pl) { pl.steps[3].chunk = pl.steps[0].chunk; }, "chunk twice", "twice");
  expect_rejected([](Plan& pl) { pl.steps[1].offsets[1] = pl.steps[1].offsets.back() + 1; }, "offsets", "offsets");
  expect_rejected([](Plan& pl) { pl.steps[0].dst_end = pl.part_offsets[1] + 1; }, "dst range", "destinations");
  expect_rejected([](Plan& pl) { pl.nbr_capacity[0] = 1; }, "capacity", "capacit");
  expect_rejected([](Plan& pl) { pl.trans_capacity[2] += 5; }, "transition capacity", "transition capacity");
  expect_rejected([](Plan& pl) { pl.remote_capacity[1] += 1; }, "remote capacity", "remote capacity");
}

// Lists the file leaves out must be what reading derives, or the plan would
// read back as another one: write_plan refuses such a plan before writing.
TEST(PlanFile, DerivedListsThatDifferAreRefusedAtWrite) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("w.htplan");
  auto expect_refused = [&](const std::function<void(Plan&)>& spoil, const char* what) {
    Plan plan = sample_plan(g, p);
    spoil(plan);
    const std::string e = test::error_of([&] { write_plan(path, plan); });
    EXPECT_NE(e.find("internal error: cannot write the plan"), std::string::npos) << what << ": " << e;
    EXPECT_FALSE(std::filesystem::exists(path)) << what;
    EXPECT_NE(find_derivation_mismatch(plan), "") << what;
  };
  expect_refused([](Plan& pl) { pl.steps[1].src_merged.back() ^= 1; }, "src_merged");
  expect_refused([](Plan& pl) { pl.steps[1].src_vid[0] += 1; }, "src_vid");
  expect_refused([](Plan& pl) { std::swap(pl.steps[5].trans_slot[0], pl.steps[5].trans_slot[1]); }, "trans_slot");
  expect_refused([](Plan& pl) { pl.steps[4].trans_reused[0] ^= 1; }, "trans_reused");
  expect_refused([](Plan& pl) { pl.steps[2].trans_vid.pop_back(); }, "trans_vid");
  expect_refused([](Plan& pl) { pl.steps[4].remote_slot[0] += 1; }, "remote_slot");
  expect_refused([](Plan& pl) { pl.steps[4].remote_gpu.pop_back(); }, "remote_gpu");
  expect_refused([](Plan& pl) { pl.steps[5].flush_slot.push_back(0), pl.steps[5].flush_vid.push_back(1); },
                 "flush lists");
  Plan plan = sample_plan(g, p);
  EXPECT_EQ(find_derivation_mismatch(plan), "");
}

// write_plan runs a caller's check (ht-reorganize: the symbolic check), its
// own derivation check and the writing side by side, one after another with
// one thread: the same bytes as without the check; the file renamed into
// place only when every part passed, otherwise no file and no temporary file
// left, and the error of the first part that failed in the order (caller's
// check, derivation check, writing), whatever the thread count.
TEST(PlanFile, CheckAlongsideTheWriting) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const Plan plan = sample_plan(g, p);
  const int threads = omp_get_max_threads();
  // The parallel paths on this small plan too.
  const ScopedBulkTuning tiny({64, 16});
  write_plan(dir.file("plain.htplan"), plan);
  const std::vector<char> plain = test::read_bytes(dir.file("plain.htplan"));
  auto files_in_dir = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  for (int t : {1, 3}) {
    omp_set_num_threads(t);
    const std::string path = dir.file(fmt::format("with_check_{}.htplan", t));
    int checks = 0;
    PlanWriteTimes times;
    write_plan(path, plan, {}, [&] { ++checks; }, &times);
    EXPECT_EQ(checks, 1) << t << " threads";
    EXPECT_EQ(test::read_bytes(path), plain) << t << " threads";
    EXPECT_GE(times.total, times.commit) << t << " threads";
    EXPECT_GE(times.total, std::max({times.alongside, times.derivation, times.sections})) << t << " threads";
    std::filesystem::remove(path);
    // Without waiting for the disk (--no-sync): the same bytes, nothing else left.
    const std::vector<std::string> listed = files_in_dir();
    write_plan(path, plan, {}, [] {}, nullptr, false);
    EXPECT_EQ(test::read_bytes(path), plain) << t << " threads, no sync";
    std::filesystem::remove(path);
    EXPECT_EQ(files_in_dir(), listed) << t << " threads, no sync: a temporary file was left";

    const std::vector<std::string> before = files_in_dir();
    const std::string failed = dir.file(fmt::format("failed_{}.htplan", t));
    std::string e = test::error_of([&] { write_plan(failed, plan, {}, [] { throw Error("the check failed"); }); });
    EXPECT_NE(e.find("the check failed"), std::string::npos) << t << " threads: " << e;
    EXPECT_FALSE(std::filesystem::exists(failed)) << t << " threads";
    EXPECT_EQ(files_in_dir(), before) << t << " threads: a temporary file was left";

    // Both the caller's check and the derivation check fail: the caller's
    // error, as when the check ran before the writing.
    Plan spoiled = plan;
    spoiled.steps[1].src_merged.back() ^= 1;
    e = test::error_of([&] { write_plan(failed, spoiled, {}, [] { throw Error("the check failed"); }); });
    EXPECT_NE(e.find("the check failed"), std::string::npos) << t << " threads: " << e;
    e = test::error_of([&] { write_plan(failed, spoiled, {}, [] {}); });
    EXPECT_NE(e.find("internal error: cannot write the plan"), std::string::npos) << t << " threads: " << e;
    EXPECT_FALSE(std::filesystem::exists(failed)) << t << " threads";
    EXPECT_EQ(files_in_dir(), before) << t << " threads: a temporary file was left";
  }
  omp_set_num_threads(threads);
}

// What the file records about the derived lists must be what they are.
TEST(PlanFile, RecordedCountsThatLieAreRejected) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("e.htplan");
  write_plan(path, sample_plan(g, p));
  const SectionInfo counts = ContainerReader(path, kPlanMagic, kPlanVersion).section("step_counts");
  const std::vector<char> good = test::read_bytes(path);
  // (trans, reused, remote, flush) of step 4, each one more than it is.
  for (int field = 0; field < 4; ++field) {
    std::vector<char> bad = good;
    int64_t x;
    const size_t at = counts.offset + 8 * (4 * 4 + field);
    std::memcpy(&x, bad.data() + at, 8);
    x += 1;
    std::memcpy(bad.data() + at, &x, 8);
    test::write_bytes(path, bad);
    const std::string e = test::error_of([&] { read_plan(path, {false}); });
    EXPECT_NE(e.find("step_counts"), std::string::npos) << e;
    EXPECT_NE(e.find("step 4"), std::string::npos) << e;
    EXPECT_NE(test::error_of([&] { read_plan(path); }).find("checksum"), std::string::npos);
  }
}

// An index whose end is raised by 2^47 (a flipped byte) read without
// checksums: refused against its section's length before any work is made
// from it (it used to grow without bound).
TEST(PlanFile, IndexBeyondItsSectionIsRejectedWithoutChecksums) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("i.htplan");
  write_plan(path, sample_plan(g, p));
  const std::vector<char> good = test::read_bytes(path);
  for (const char* name : {"nbr_index", "offsets_index", "edge_index"}) {
    const SectionInfo index = ContainerReader(path, kPlanMagic, kPlanVersion).section(name);
    std::vector<char> bad = good;
    int64_t x;
    const size_t at = index.offset + index.length - 8;  // the last entry: the end of the last step
    std::memcpy(&x, bad.data() + at, 8);
    x += int64_t{1} << 47;
    std::memcpy(bad.data() + at, &x, 8);
    test::write_bytes(path, bad);
    const auto start = std::chrono::steady_clock::now();
    const std::string e = test::error_of([&] { read_plan(path, {false}); });
    EXPECT_NE(e.find(fmt::format("section '{}': ", name)), std::string::npos) << e;
    if (std::string(name) == "nbr_index") {
      EXPECT_NE(e.find("holds"), std::string::npos) << e;
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0) << name;
    test::write_bytes(path, good);
  }
}

// A recorded max_dst of 200 M (a flipped byte, the sections' checksums not
// yet verified): the shape the memory check reads first is refused (nullopt:
// not planned as memory and blamed on the machine), and read_plan names it.
TEST(PlanFile, ShapeWithMaximaThatAreNotTheStepsIsRefused) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("s.htplan");
  write_plan(path, sample_plan(g, p));
  ASSERT_TRUE(read_plan_shape(path).has_value());
  const SectionInfo sizes = ContainerReader(path, kPlanMagic, kPlanVersion).section("max_sizes");
  std::vector<char> bad = test::read_bytes(path);
  const int64_t huge = 200'000'000;
  std::memcpy(bad.data() + sizes.offset, &huge, 8);  // GPU 0's max_dst
  test::write_bytes(path, bad);
  EXPECT_FALSE(read_plan_shape(path).has_value());
  const std::string e = test::error_of([&] { read_plan(path, {false}); });
  EXPECT_NE(e.find("max_dst 200000000"), std::string::npos) << e;
}

// A plan file of format 1 (every list stored) is refused with what to do.
TEST(PlanFile, OtherFormatVersionSaysRerunReorganize) {
  test::TempDir dir;
  Graph g;
  Partition p;
  const std::string path = dir.file("v.htplan");
  write_plan(path, sample_plan(g, p));
  std::vector<char> bytes = test::read_bytes(path);
  const uint32_t old_version = 1;
  std::memcpy(bytes.data() + 8, &old_version, 4);
  test::write_bytes(path, bytes);
  const std::string e = test::error_of([&] { read_plan(path); });
  EXPECT_NE(e.find("plan file format 1, this build reads 2: rerun ht-reorganize"), std::string::npos) << e;
  EXPECT_FALSE(read_plan_shape(path));
}

}  // namespace
}  // namespace ht
