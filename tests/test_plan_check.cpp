// The symbolic checker catches each kind of broken plan: wrong slots, reuse
// flags, reads, flushes, topology, transition sets, remote order,
// capacities, volumes, and a plan for another partition; and it reports the
// same problems whatever the thread count and block size.
#include <omp.h>

#include <functional>

#include <gtest/gtest.h>

#include "core/bulk_memory.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_check.hpp"
#include "plan_test_graphs.hpp"

namespace ht {
namespace {

struct Fixture {
  Graph g = test::make_graph(test::GraphKind::community, 400, 3000, 8);
  Partition p = test::range_partition(g, 2, 4);
  Plan plan = build_plan(g.view(), p, {});
};

// Index of the first entry of step (j, i) with trans_reused == value.
size_t entry(const ChunkPlan& cp, uint8_t value) {
  for (size_t b = 0; b < cp.trans_reused.size(); ++b)
    if (cp.trans_reused[b] == value) return b;
  ADD_FAILURE() << "no entry with reused = " << int{value};
  return 0;
}

void expect_caught(const std::function<void(Plan&, const Partition&)>& spoil, const std::string& what,
                   const std::string& expect_text) {
  Fixture f;
  ASSERT_EQ(check_plan(f.plan, f.g.view(), f.p), std::vector<std::string>{});
  spoil(f.plan, f.p);
  const auto problems = check_plan(f.plan, f.g.view(), f.p);
  ASSERT_FALSE(problems.empty()) << what << " not caught";
  bool found = false;
  for (const auto& s : problems) found |= s.find(expect_text) != std::string::npos;
  EXPECT_TRUE(found) << what << ": no problem mentions '" << expect_text << "'; first: " << problems[0];
  EXPECT_THROW(verify_plan(f.plan, f.g.view(), f.p), Error);
}

// The remote rows must be exactly the neighbors other GPUs own (the
// expected list is built in parallel blocks: grain 7 makes many).
TEST(PlanCheck, CatchesRemoteRowsOfAnotherSet) {
  for (BulkTuning t : {BulkTuning{}, BulkTuning{0, 7}}) {
    ScopedBulkTuning scope(t);
    expect_caught(
        [](Plan& pl, const Partition&) {
          ChunkPlan& cp = pl.step(2, 1);
          cp.remote_vid.back() = cp.trans_vid[0];  // a vertex GPU 1 owns
        },
        "own vertex as a remote row", "remote rows are not the neighbors owned by other GPUs");
  }
}

TEST(PlanCheck, AcceptsTheBuiltPlan) {
  Fixture f;
  EXPECT_EQ(check_plan(f.plan, f.g.view(), f.p), std::vector<std::string>{});
  EXPECT_NO_THROW(verify_plan(f.plan, f.g.view(), f.p));
}

TEST(PlanCheck, CatchesBrokenBuffers) {
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& cp = pl.step(1, 0);
        const size_t a = entry(cp, 1), b = entry(cp, 0);
        std::swap(cp.trans_slot[a], cp.trans_slot[b]);
      },
      "reused vertex moved to another slot", "reused slot");
  expect_caught([](Plan& pl, const Partition&) { pl.step(2, 1).trans_reused[entry(pl.step(2, 1), 1)] = 0; },
                "reuse flag cleared", "reused = 0");
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& cp = pl.step(1, 1);
        cp.trans_slot[entry(cp, 0)] = cp.trans_slot[entry(cp, 1)];
      },
      "loaded into a slot that is reused", "given to two vertices");
  expect_caught([](Plan& pl, const Partition&) { pl.step(0, 0).src_merged[3] ^= 1; }, "read of the wrong row",
                "is not there");
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& cp = pl.step(1, 1);
        std::swap(cp.remote_slot[0], cp.remote_slot[1]);
      },
      "remote rows out of order", "remote row");
}

TEST(PlanCheck, CatchesBrokenGradientFlushes) {
  expect_caught(
      [](Plan& pl, const Partition&) {
        pl.step(0, 0).flush_slot.pop_back();
        pl.step(0, 0).flush_vid.pop_back();
      },
      "a gradient left on the GPU", "never flushed");
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& cp = pl.step(0, 1);
        const ChunkPlan& next = pl.step(1, 1);
        const size_t b = entry(next, 1);  // a vertex that stays for batch 1
        const vid_t v = next.trans_vid[b];
        const uint32_t slot = next.trans_slot[b];
        auto at = std::lower_bound(cp.flush_slot.begin(), cp.flush_slot.end(), slot);
        cp.flush_vid.insert(cp.flush_vid.begin() + (at - cp.flush_slot.begin()), v);
        cp.flush_slot.insert(at, slot);
      },
      "a gradient flushed twice", "reaches the host twice");
}

TEST(PlanCheck, CatchesWrongSetsTopologyAndNumbers) {
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& cp = pl.step(2, 0);
        cp.trans_vid.pop_back(), cp.trans_slot.pop_back(), cp.trans_reused.pop_back();
      },
      "transition vertex missing", "transition set");
  expect_caught([](Plan& pl, const Partition&) { pl.step(1, 0).src_vid[0] += 1; }, "source changed", "in-edges");
  expect_caught([](Plan& pl, const Partition&) { pl.volumes.v_ru += 1; }, "volume", "V_ru");
  expect_caught([](Plan& pl, const Partition&) { pl.volumes_before.v_p2p -= 1; }, "volume before", "volumes_before");
  expect_caught([](Plan& pl, const Partition&) { pl.remote_capacity[1] += 1; }, "capacity", "not the maxima");
  expect_caught([](Plan& pl, const Partition&) { pl.reorganized = false, pl.step(0, 0).chunk = 3, pl.step(3, 0).chunk = 0; },
                "unreorganized plan out of order", "not reorganized");
  expect_caught(
      [](Plan& pl, const Partition&) {
        ChunkPlan& a = pl.step(0, 1);
        ChunkPlan& b = pl.step(0, 0);
        std::swap(a, b);
      },
      "steps on the wrong GPU", "has part");
}

// Plans broken in many places at once (dozens of problems, more than the
// list shows): the list, its order and the count of the rest are the same
// with one thread or several, in blocks of 64 Ki elements or of 7.
TEST(PlanCheck, SameProblemsWhateverTheThreadCount) {
  const std::vector<std::pair<const char*, std::function<void(Plan&)>>> spoils = {
      {"none", [](Plan&) {}},
      {"every read", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) std::fill(cp.src_merged.begin(), cp.src_merged.end(), 0);
       }},
      {"every slot shared", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) std::fill(cp.trans_slot.begin(), cp.trans_slot.end(), 0);
       }},
      {"nothing flushed", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) {
           cp.flush_slot.clear();
           cp.flush_vid.clear();
         }
       }},
      {"flushes twice", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps)
           if (!cp.flush_slot.empty()) {
             cp.flush_slot.insert(cp.flush_slot.begin(), cp.flush_slot.back());
             cp.flush_vid.insert(cp.flush_vid.begin(), cp.flush_vid.back());
           }
       }},
      {"remote order", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) std::reverse(cp.remote_slot.begin(), cp.remote_slot.end());
       }},
      {"remote set", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps)
           if (!cp.remote_vid.empty() && !cp.trans_vid.empty()) cp.remote_vid.back() = cp.trans_vid[0];
       }},
      {"topology", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) std::fill(cp.src_vid.begin(), cp.src_vid.end(), cp.nbr[0]);
       }},
      {"reuse flags", [](Plan& pl) {
         for (ChunkPlan& cp : pl.steps) std::fill(cp.trans_reused.begin(), cp.trans_reused.end(), 1);
       }},
  };
  const int threads = omp_get_max_threads();
  for (const auto& [what, spoil] : spoils) {
    SCOPED_TRACE(what);
    Fixture f;
    spoil(f.plan);
    std::vector<std::vector<std::string>> lists;
    for (BulkTuning t : {BulkTuning{}, BulkTuning{0, 7}}) {
      ScopedBulkTuning scope(t);
      for (int k : {1, std::max(4, threads)}) {
        omp_set_num_threads(k);
        lists.push_back(check_plan(f.plan, f.g.view(), f.p, 12));
      }
    }
    omp_set_num_threads(threads);
    EXPECT_EQ(lists[0].empty(), std::string(what) == "none") << (lists[0].empty() ? "" : lists[0][0]);
    for (size_t k = 1; k < lists.size(); ++k) EXPECT_EQ(lists[k], lists[0]) << "run " << k;
  }
}

// The batch unions and volumes are recomputed per batch and piece of the id
// range when threads outnumber batches (n = 4 here; 8 threads and blocks of
// 7 make 8 pieces a batch): a right plan's volumes still match, wrong ones
// are caught, and a neighbor list out of order (its batch merged as a whole)
// gives the same problems as one thread in one piece.
TEST(PlanCheck, UnionsAndVolumesInPiecesOfTheIdRange) {
  const std::vector<std::pair<const char*, std::function<void(Plan&)>>> spoils = {
      {"none", [](Plan&) {}},
      {"V_ru", [](Plan& pl) { pl.volumes.v_ru += 1; }},
      {"volumes_before", [](Plan& pl) { pl.volumes_before.v_p2p -= 1; }},
      {"nbr order", [](Plan& pl) { std::swap(pl.step(1, 0).nbr[0], pl.step(1, 0).nbr[1]); }},
  };
  const int threads = omp_get_max_threads();
  for (const auto& [what, spoil] : spoils) {
    SCOPED_TRACE(what);
    Fixture f;
    spoil(f.plan);
    std::vector<std::vector<std::string>> lists;
    for (BulkTuning t : {BulkTuning{}, BulkTuning{0, 7}})
      for (int k : {1, 8}) {
        ScopedBulkTuning scope(t);
        omp_set_num_threads(k);
        lists.push_back(check_plan(f.plan, f.g.view(), f.p, 12));
      }
    omp_set_num_threads(threads);
    ASSERT_EQ(lists[0].empty(), std::string(what) == "none") << (lists[0].empty() ? "" : lists[0][0]);
    if (std::string(what) != "none" && std::string(what) != "nbr order") {
      bool named = false;
      for (const auto& s : lists[0]) named |= s.find(what) != std::string::npos;
      EXPECT_TRUE(named) << lists[0][0];
    }
    for (size_t k = 1; k < lists.size(); ++k) EXPECT_EQ(lists[k], lists[0]) << "run " << k;
  }
}

TEST(PlanCheck, RefusesAnotherPartition) {
  Fixture f;
  Partition other = f.p;
  other.chunk_offsets[1] += 1;
  const auto problems = check_plan(f.plan, f.g.view(), other);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("the partition says"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace ht
