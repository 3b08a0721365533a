// --chunks auto (train/chunk_choice.hpp): the plan shape estimated from a
// partition equals the shape of the plan build_plan makes; the working set
// it gives equals the one computed from real plans; the choice is the
// smallest candidate that fits, monotone in the budget, fails with the
// smallest working set when nothing fits; a training run with --chunks auto
// equals the run with that count given by hand, bit for bit.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "datasets/generators.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/memory_plan.hpp"
#include "graph/build.hpp"
#include "graph/graph_file.hpp"
#include "partition/chunk_shape.hpp"
#include "partition/partition_run.hpp"
#include "partition/plan_builder.hpp"
#include "test_util.hpp"
#include "train/chunk_choice.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

Graph community(int64_t n, uint64_t seed) {
  gen::CommunityParams p;
  p.num_vertices = n;
  p.num_classes = 4;
  p.feature_dim = 24;
  p.avg_degree = 8;
  p.seed = seed;
  return gen::community_graph(p);
}

// Neighbors within +-30 ids (chunks have local neighbor sets), with
// self-loops and duplicate edges, which the plan builder drops and keeps.
Graph banded() {
  rng::Stream r(7, 1);
  EdgeList el;
  el.num_vertices = 900;
  for (int e = 0; e < 7000; ++e) {
    const int64_t d = static_cast<int64_t>(r.below(900));
    const int64_t s = std::clamp<int64_t>(d + static_cast<int64_t>(r.below(61)) - 30, 0, 899);
    el.src.push_back(static_cast<vid_t>(e % 50 == 0 ? d : s));
    el.dst.push_back(static_cast<vid_t>(d));
    if (e % 97 == 0) {  // a duplicate
      el.src.push_back(el.src.back());
      el.dst.push_back(el.dst.back());
    }
  }
  return csc_from_edges(std::move(el));
}

PartitionParams params_for(int m) {
  PartitionParams q;
  q.parts = m;
  q.chunks = 1;
  q.method = m > 1 ? PartitionMethod::metis : PartitionMethod::range;  // as ht-train in memory
  return q;
}

Partition base_for(const GraphView& g, int m) {
  PartitionRunInfo info;
  return make_partition(g, {}, params_for(m), info);
}

Plan real_plan(const GraphView& g, const Partition& p, const PlanBuildOptions& opt = {}) {
  const Graph gn = renumber(g, p);
  return build_plan(gn.view(), p, opt);
}

void expect_same_shape(const PlanShape& a, const PlanShape& b) {
  ASSERT_EQ(a.m, b.m);
  ASSERT_EQ(a.n, b.n);
  EXPECT_EQ(a.num_vertices, b.num_vertices);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t k = 0; k < a.steps.size(); ++k) {
    SCOPED_TRACE(::testing::Message() << "step " << k);
    const StepShape &x = a.steps[k], &y = b.steps[k];
    EXPECT_EQ(x.dst, y.dst);
    EXPECT_EQ(x.edges, y.edges);
    EXPECT_EQ(x.nbr, y.nbr);
    EXPECT_EQ(x.trans, y.trans);
    EXPECT_EQ(x.reused, y.reused);
    EXPECT_EQ(x.remote, y.remote);
    EXPECT_EQ(x.flush, y.flush);
  }
  EXPECT_EQ(a.trans_capacity, b.trans_capacity);
  EXPECT_EQ(a.remote_capacity, b.remote_capacity);
  EXPECT_EQ(a.nbr_capacity, b.nbr_capacity);
  EXPECT_EQ(a.max_dst, b.max_dst);
  EXPECT_EQ(a.max_edges, b.max_edges);
}

TrainerOptions gcn_options(int64_t feature_dim) {
  TrainerOptions t;
  t.model.dims = {static_cast<int>(feature_dim), 32, 4};
  return t;
}

// Working set of count n from the plan itself, as the Trainer checks it.
int64_t real_working_set(const GraphView& g, const Partition& base, int n, const TrainerOptions& opt, int64_t limit) {
  const Partition p = rechunk(g, base, params_for(base.m()), n);
  const Plan plan = real_plan(g, p);
  const PlanShape shape = shape_of(plan);
  int64_t most = 0;
  for (int i = 0; i < plan.m; ++i) {
    // The auto choice also counts the second merged buffer (the Trainer's
    // last allocation, when it fits), here from the real plan's shape.
    most = std::max(most, device_memory_need(plan, i, opt, limit).total() + second_merged_buffer_bytes(shape, i, opt));
  }
  return most;
}

}  // namespace

TEST(ChunkChoice, Candidates) {
  EXPECT_EQ(chunk_candidates(1), (std::vector<int>{1}));
  EXPECT_EQ(chunk_candidates(5), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(chunk_candidates(256), (std::vector<int>{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}));
  EXPECT_EQ(chunk_candidates(kMaxAutoChunks).back(), kMaxAutoChunks);
}

TEST(ChunkChoice, ShapeEqualsTheBuiltPlansShape) {
  const Graph graphs[] = {community(600, 3), banded()};
  for (const Graph& g : graphs)
    for (int m : {1, 2, 3})
      for (int n : {1, 2, 3, 5, 8})
        for (bool reorganize : {true, false}) {
          SCOPED_TRACE(::testing::Message() << "N " << g.num_vertices << " m " << m << " n " << n << " reorganize "
                                            << reorganize);
          const Partition base = base_for(g.view(), m);
          const Partition p = rechunk(g.view(), base, params_for(m), n);
          // The count cut afterwards is the partition make_partition makes for it.
          PartitionParams direct = params_for(m);
          direct.chunks = n;
          PartitionRunInfo info;
          const Partition q = make_partition(g.view(), {}, direct, info);
          EXPECT_EQ(p.new_to_old, q.new_to_old);
          EXPECT_EQ(p.chunk_offsets, q.chunk_offsets);
          PlanBuildOptions opt;
          opt.reorganize = reorganize;
          expect_same_shape(partition_plan_shape(g.view(), p, opt), shape_of(real_plan(g.view(), p, opt)));
        }
}

TEST(ChunkChoice, WorkingSetEqualsTheRealPlans) {
  const Graph g = community(700, 5);
  for (int m : {1, 2}) {
    const Partition base = base_for(g.view(), m);
    for (CommMode comm : {CommMode::baseline, CommMode::p2p, CommMode::full})
      for (ModelKind kind : {ModelKind::gcn, ModelKind::gat})
        for (int n : {1, 3, 6}) {
          SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " comm " << name_of(comm));
          TrainerOptions opt = gcn_options(g.feature_dim);
          opt.comm = comm;
          opt.model.kind = kind;
          if (kind == ModelKind::gat) opt.model.heads = 2;
          opt.host_dtype = n == 3 ? StoreDtype::bf16 : StoreDtype::f32;
          const Partition p = rechunk(g.view(), base, params_for(m), n);
          const int64_t resident = real_working_set(g.view(), base, n, opt, 0);
          EXPECT_EQ(chunk_working_set(g.view(), p, opt, 0).working_set, resident);
          // A limit below the resident steps makes them stream (n > 2), in both.
          EXPECT_EQ(chunk_working_set(g.view(), p, opt, resident - 1).working_set,
                    real_working_set(g.view(), base, n, opt, resident - 1));
        }
  }
}

TEST(ChunkChoice, TheBoundIsAtMostTheWorkingSet) {
  const Graph graphs[] = {community(700, 19), banded()};
  for (const Graph& g : graphs)
    for (int m : {1, 2, 3}) {
      const Partition base = base_for(g.view(), m);
      for (int n : {1, 2, 5, 16})
        for (CommMode comm : {CommMode::baseline, CommMode::p2p, CommMode::full})
          for (ModelKind kind : {ModelKind::gcn, ModelKind::gat}) {
            SCOPED_TRACE(::testing::Message() << "N " << g.num_vertices << " m " << m << " n " << n << " comm "
                                              << name_of(comm));
            TrainerOptions opt = gcn_options(std::max(g.feature_dim, 8));
            opt.comm = comm;
            opt.model.kind = kind;
            const Partition p = rechunk(g.view(), base, params_for(m), n);
            const int64_t resident = chunk_working_set(g.view(), p, opt, 0).working_set;
            for (int64_t limit : {int64_t{0}, resident / 2, resident - 1})
              EXPECT_LE(chunk_working_set_bound(g.view(), p, opt, limit).working_set,
                        chunk_working_set(g.view(), p, opt, limit).working_set)
                  << "limit " << limit;
          }
    }
}

TEST(ChunkChoice, PicksTheSmallestFittingCount) {
  const Graph g = community(800, 9);
  const TrainerOptions opt = gcn_options(g.feature_dim);
  for (int m : {1, 2}) {
    const Partition base = base_for(g.view(), m);
    const std::vector<int> counts = chunk_candidates(kMaxAutoChunks);
    // Budgets at and just below the working sets of a few counts, from real plans.
    for (int k : {2, 4, 8, 16}) {
      for (int64_t below : {0, 1}) {
        const int64_t budget = real_working_set(g.view(), base, k, opt, 0) - below;
        SCOPED_TRACE(::testing::Message() << "m " << m << " budget " << budget);
        const ChunkChoice c = choose_chunks(g.view(), base, params_for(m), opt, {budget, "test"});
        EXPECT_EQ(c.tier, 0);  // below the cache's margin: no tier
        EXPECT_EQ(c.partition.n(), c.chunks);
        EXPECT_LE(real_working_set(g.view(), base, c.chunks, opt, budget), budget);
        for (int n : counts) {
          if (n >= c.chunks) break;
          EXPECT_GT(real_working_set(g.view(), base, n, opt, budget), budget) << "n = " << n << " fits too";
        }
        if (below == 0) {
          EXPECT_LE(c.chunks, k);
        }
        EXPECT_NE(c.summary.find(fmt::format("chunks: auto chose n = {} per GPU", c.chunks)), std::string::npos)
            << c.summary;
      }
    }
  }
}

TEST(ChunkChoice, MonotoneInTheBudget) {
  const Graph g = community(800, 11);
  TrainerOptions opt = gcn_options(g.feature_dim);
  opt.comm = CommMode::p2p;
  const Partition base = base_for(g.view(), 2);
  const int64_t least = real_working_set(g.view(), base, kMaxAutoChunks, opt, 0);
  const int64_t most = real_working_set(g.view(), base, 1, opt, 0);
  int previous = kMaxAutoChunks + 1;
  for (int step = 0; step <= 24; ++step) {
    const int64_t budget = least + (most - least) * step / 24;
    const ChunkChoice c = choose_chunks(g.view(), base, params_for(2), opt, {budget, "test"});
    EXPECT_LE(c.chunks, previous) << "budget " << budget;
    previous = c.chunks;
  }
  EXPECT_EQ(previous, 1);  // the whole graph's working set fits: one chunk
}

TEST(ChunkChoice, BudgetBelowTheSmallestWorkingSetIsAnError) {
  const Graph g = community(600, 13);
  const TrainerOptions opt = gcn_options(g.feature_dim);
  const Partition base = base_for(g.view(), 2);
  const ChunkNeed least = chunk_working_set(g.view(), rechunk(g.view(), base, params_for(2), kMaxAutoChunks), opt, 1);
  const std::string msg = test::error_of(
      [&] { choose_chunks(g.view(), base, params_for(2), opt, {least.working_set - 1, "--gpu-mem"}); });
  EXPECT_NE(msg.find("option --chunks: auto: the smallest GPU working set, "), std::string::npos) << msg;
  EXPECT_NE(msg.find(format_bytes(static_cast<double>(least.working_set))), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("at n = {} chunks per GPU", kMaxAutoChunks)), std::string::npos) << msg;
  EXPECT_NE(msg.find("of --gpu-mem"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  // Below the bound it fails before trying the other counts, with the same figure.
  const Partition most = rechunk(g.view(), base, params_for(2), kMaxAutoChunks);
  const int64_t bound = chunk_working_set_bound(g.view(), most, opt, 1).working_set;
  EXPECT_LE(bound, least.working_set);
  const std::string fast =
      test::error_of([&] { choose_chunks(g.view(), base, params_for(2), opt, {bound - 1, "--gpu-mem"}); });
  EXPECT_NE(fast.find(format_bytes(static_cast<double>(least.working_set))), std::string::npos) << fast;
  // At exactly that budget the largest count is chosen (the smaller ones need more).
  const ChunkChoice c = choose_chunks(g.view(), base, params_for(2), opt, {least.working_set, "--gpu-mem"});
  EXPECT_GT(c.chunks, 1);
}

TEST(ChunkChoice, WithoutABudgetOneChunk) {
  const Graph g = community(300, 2);
  const Partition base = base_for(g.view(), 2);
  const ChunkChoice c = choose_chunks(g.view(), base, params_for(2), gcn_options(g.feature_dim), {0, "no limit"});
  EXPECT_EQ(c.chunks, 1);
  EXPECT_EQ(c.partition.n(), 1);
  EXPECT_TRUE(c.tried.empty());
  EXPECT_NE(c.summary.find("no GPU memory budget (no limit)"), std::string::npos) << c.summary;
}

TEST(ChunkChoice, GpuCacheTier) {
  Partition p;
  p.params.parts = 2;
  p.num_vertices = 1000000;
  p.part_offsets = {0, 600000, 1000000};
  TrainerOptions opt;
  const int64_t gib = int64_t{1} << 30;
  const int64_t features = 600000 * 128 * 4;  // the fullest GPU's rows of h^0
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 16 * gib), features + (int64_t{512} << 20));
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 0), 0);  // no budget
  opt.host_dtype = StoreDtype::bf16;
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 16 * gib), features / 2 + (int64_t{512} << 20));
  opt.host_dtype = StoreDtype::f32;
  opt.comm = CommMode::baseline;  // h^0 whole on every GPU
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 16 * gib), 1000000 * 128 * 4 + (int64_t{512} << 20));
  opt.comm = CommMode::full;
  EXPECT_EQ(gpu_cache_tier(opt, p, 2048, 16 * gib), 0);  // more than 1/8 of the budget: none
  opt.gpu_cache = 0;
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 16 * gib), 0);
  opt.gpu_cache = 3 * gib;  // an explicit cache size is kept whole
  EXPECT_EQ(gpu_cache_tier(opt, p, 128, 16 * gib), 3 * gib);
}

TEST(ChunkChoice, AnExplicitCacheSizeIsKeptFree) {
  const Graph g = community(800, 17);
  TrainerOptions opt = gcn_options(g.feature_dim);
  const Partition base = base_for(g.view(), 1);
  const int64_t budget = real_working_set(g.view(), base, 4, opt, 0);
  const ChunkChoice without = choose_chunks(g.view(), base, params_for(1), opt, {budget, "test"});
  opt.gpu_cache = 64 << 10;
  const ChunkChoice with = choose_chunks(g.view(), base, params_for(1), opt, {budget + (64 << 10), "test"});
  EXPECT_EQ(with.tier, 64 << 10);
  EXPECT_EQ(with.chunks, without.chunks);
  EXPECT_NE(with.summary.find("+ GPU cache tier 64.00 KiB of "), std::string::npos) << with.summary;
  EXPECT_NE(with.summary.find(" + tier)"), std::string::npos) << with.summary;
}

class ChunkChoiceJob : public ::testing::Test {
 public:
  void SetUp() override {
    gen::CommunityParams p;
    p.num_vertices = 400;
    p.num_classes = 3;
    p.feature_dim = 12;
    p.avg_degree = 6;
    p.seed = 21;
    write_graph(graph_path(), gen::community_graph(p).view());
  }
  std::string graph_path() const { return dir.file("g.htg"); }
  TrainJob job(int chunks, const std::string& metrics) const {
    TrainJob j;
    j.graph_path = graph_path();
    j.parts = 2;
    j.chunks = chunks;
    j.epochs = 4;
    j.eval_every = 2;
    j.warmup = 0;
    j.trainer.model.dropout = 0.3f;
    j.metrics_out = dir.file(metrics);
    return j;
  }
  static TrainSummary run(const TrainJob& j) {
    return run_train_job(j, [](int m) { return std::make_unique<CpuExecutor>(m); });
  }
  // The epoch lines of a metrics file without their timings.
  static std::string losses(const std::string& path) {
    std::string out, text = read_text_file(path);
    size_t at = 0;
    while ((at = text.find("\"loss\":", at)) != std::string::npos) {
      const size_t end = text.find(",\"epoch_ms\"", at);
      out += text.substr(at, end - at) + "\n";
      at = end;
    }
    return out;
  }
  // The chunk count of the metrics file's summary line.
  static int chunks_of(const std::string& path) {
    const std::string text = read_text_file(path);
    const size_t at = text.find("\"chunks\":", text.find("\"type\":\"summary\""));
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + 9));
  }

  test::TempDir dir;
};

TEST_F(ChunkChoiceJob, AutoTrainsAsTheCountGivenByHand) {
  // A budget that one chunk per GPU does not fit: the working set at n = 4.
  const GraphFile gf(graph_path());
  TrainJob probe = job(kChunksAuto, "unused");
  TrainerOptions opt = probe.trainer;
  opt.model = resolved_model(opt.model, 0, gf.view().feature_dim, gf.view().num_classes);
  const Partition base = base_for(gf.view(), 2);
  TrainJob automatic = job(kChunksAuto, "auto.jsonl");
  automatic.gpu_mem_bytes = real_working_set(gf.view(), base, 4, opt, 0);
  const TrainSummary a = run(automatic);
  const int n = chunks_of(automatic.metrics_out);
  EXPECT_GT(n, 1);
  EXPECT_LE(n, 4);
  const TrainSummary b = run(job(n, "hand.jsonl"));
  EXPECT_EQ(chunks_of(dir.file("hand.jsonl")), n);
  EXPECT_EQ(a.final_loss, b.final_loss);
  EXPECT_EQ(a.final_test_acc, b.final_test_acc);
  const std::string lines = losses(automatic.metrics_out);
  EXPECT_FALSE(lines.empty());
  EXPECT_EQ(lines, losses(dir.file("hand.jsonl")));
}

TEST_F(ChunkChoiceJob, AutoWithoutABudgetOnTheCpuBackendIsOneChunk) {
  const TrainJob j = job(kChunksAuto, "auto.jsonl");
  run(j);
  EXPECT_EQ(chunks_of(j.metrics_out), 1);
}

TEST_F(ChunkChoiceJob, TooSmallABudgetStopsBeforeTraining) {
  TrainJob j = job(kChunksAuto, "auto.jsonl");
  j.gpu_mem_bytes = 1 << 20;  // below the per-device arrays and the library workspace alone
  const std::string msg = test::error_of([&] { run(j); });
  EXPECT_NE(msg.find("option --chunks: auto: the smallest GPU working set"), std::string::npos) << msg;
  EXPECT_FALSE(file_exists(j.metrics_out));
}

}  // namespace ht
