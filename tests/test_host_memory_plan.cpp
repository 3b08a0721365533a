// The host memory planner (engine/host_memory_plan.hpp, train/host_memory_check.hpp):
// the kernel files' parsers (meminfo, cgroup v1 and v2) on their text and on
// a fake /proc and /sys tree; --host-mem sizes; the store layout against
// vertex_store_bytes; plan shapes from a file against the plan's; the packed
// blocks against build_device_plan's, the emulated device memory and the
// host store against what the CPU executor allocates for a Trainer; the
// phases' arithmetic; and the one-line error with advice that fits.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>

#include "core/memory.hpp"
#include "core/memory_limit.hpp"
#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/device_plan.hpp"
#include "engine/host_memory_plan.hpp"
#include "engine/store_layout.hpp"
#include "engine/trainer.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_shape.hpp"
#include "test_util.hpp"
#include "training_problem.hpp"
#include "train/host_memory_check.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;

// ---- kernel files

TEST(HostMemoryLimit, Meminfo) {
  const std::string text =
      "MemTotal:       24683620 kB\nMemFree:        23250832 kB\nMemAvailable:   23830748 kB\n"
      "Cached:           675812 kB\nSwapCached:            0 kB\nOdd:            12\n";
  EXPECT_EQ(meminfo_bytes(text, "MemAvailable"), int64_t{23830748} * 1024);
  EXPECT_EQ(meminfo_bytes(text, "Cached"), int64_t{675812} * 1024);  // not SwapCached
  EXPECT_EQ(meminfo_bytes(text, "Odd"), 12);                         // no unit: bytes
  EXPECT_FALSE(meminfo_bytes(text, "MemAvail"));                     // a prefix is not the key
  EXPECT_FALSE(meminfo_bytes(text, "Missing"));
  EXPECT_FALSE(meminfo_bytes("MemAvailable: lots kB\n", "MemAvailable"));
  EXPECT_FALSE(meminfo_bytes("", "MemAvailable"));
}

TEST(HostMemoryLimit, CgroupFiles) {
  EXPECT_FALSE(cgroup_limit_value("max\n"));
  EXPECT_FALSE(cgroup_limit_value("9223372036854771712\n"));  // v1 "unlimited"
  EXPECT_FALSE(cgroup_limit_value("-1"));
  EXPECT_FALSE(cgroup_limit_value(""));
  EXPECT_EQ(cgroup_limit_value("1073741824\n"), kGiB);
  const std::string stat = "cache 9633792\nactive_file 520192\ninactive_file 16384\ntotal_active_file 470417408\n";
  EXPECT_EQ(memory_stat_value(stat, "active_file"), 520192);
  EXPECT_EQ(memory_stat_value(stat, "total_active_file"), 470417408);
  EXPECT_FALSE(memory_stat_value(stat, "file"));
  EXPECT_EQ(cgroup_available(2 * kGiB, 3 * kGiB / 2, kGiB / 4), 3 * kGiB / 4);
  EXPECT_EQ(cgroup_available(kGiB, 2 * kGiB, 0), 0);  // over its limit already: nothing left
}

TEST(HostMemoryLimit, CgroupPaths) {
  const std::string v1 =
      "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/1d161f\n3:cpuset:/\n0::/\n";
  EXPECT_EQ(cgroup_v1_memory_path(v1), "/process_api/1d161f");
  EXPECT_EQ(cgroup_v2_path(v1), "/");
  EXPECT_EQ(cgroup_v1_memory_path("5:cpuacct,memory:/a/b\n"), "/a/b");
  EXPECT_FALSE(cgroup_v1_memory_path("5:cpuacct,memoryx:/a\n1:cpu:/\n"));
  EXPECT_EQ(cgroup_v2_path("0::/user.slice/job-7.scope\n"), "/user.slice/job-7.scope");
  EXPECT_FALSE(cgroup_v2_path("4:memory:/a\n"));
  EXPECT_FALSE(cgroup_v2_path("0::relative\n"));
  EXPECT_FALSE(cgroup_v2_path(""));
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(HostMemoryLimit, DetectsTheSmallestOfMeminfoAndCgroups) {
  {  // cgroup v2: the parent's limit decides, its page cache counts as available
    test::TempDir d;
    const auto root = d.path();
    write_file(root / "proc/meminfo", "MemAvailable: 10485760 kB\n");  // 10 GiB
    write_file(root / "proc/self/cgroup", "0::/job/step\n");
    write_file(root / "sys/fs/cgroup/job/memory.max", "2147483648\n");
    write_file(root / "sys/fs/cgroup/job/memory.current", "1610612736\n");
    write_file(root / "sys/fs/cgroup/job/memory.stat", "anon 1\nactive_file 134217728\ninactive_file 134217728\n");
    write_file(root / "sys/fs/cgroup/job/step/memory.max", "max\n");
    const HostMemoryLimit l = detect_host_memory_limit(100, root.string());
    EXPECT_EQ(l.bytes, 3 * kGiB / 4 + 100);
    EXPECT_NE(l.source.find("cgroup v2 memory.max 2.00 GiB of /sys/fs/cgroup/job"), std::string::npos) << l.source;
  }
  {  // cgroup v1: hierarchical_memory_limit below the cgroup's own
    test::TempDir d;
    const auto root = d.path();
    write_file(root / "proc/meminfo", "MemAvailable: 10485760 kB\n");
    write_file(root / "proc/self/cgroup", "4:memory:/a\n0::/\n");
    write_file(root / "sys/fs/cgroup/memory/a/memory.limit_in_bytes", "9223372036854771712\n");
    write_file(root / "sys/fs/cgroup/memory/a/memory.usage_in_bytes", "1073741824\n");
    write_file(root / "sys/fs/cgroup/memory/a/memory.stat",
               "hierarchical_memory_limit 4294967296\ntotal_active_file 0\ntotal_inactive_file 1073741824\n");
    const HostMemoryLimit l = detect_host_memory_limit(0, root.string());
    EXPECT_EQ(l.bytes, 4 * kGiB);
    EXPECT_NE(l.source.find("cgroup v1"), std::string::npos) << l.source;
  }
  {  // unlimited cgroups: MemAvailable
    test::TempDir d;
    const auto root = d.path();
    write_file(root / "proc/meminfo", "MemTotal: 1 kB\nMemAvailable: 1048576 kB\n");
    write_file(root / "proc/self/cgroup", "0::/x\n");
    write_file(root / "sys/fs/cgroup/x/memory.max", "max\n");
    const HostMemoryLimit l = detect_host_memory_limit(kMiB, root.string());
    EXPECT_EQ(l.bytes, kGiB + kMiB);
    EXPECT_EQ(l.source, "MemAvailable");
  }
  {  // nothing readable: unknown
    test::TempDir d;
    const HostMemoryLimit l = detect_host_memory_limit(kMiB, d.path().string());
    EXPECT_EQ(l.bytes, 0);
  }
  EXPECT_GT(detect_host_memory_limit(0).bytes, 0);  // this machine has a /proc/meminfo
}

TEST(HostMemoryLimit, ParsesSizes) {
  EXPECT_EQ(parse_memory_size("auto"), 0);
  EXPECT_EQ(parse_memory_size("0"), 0);
  EXPECT_EQ(parse_memory_size("96G"), 96 * kGiB);
  EXPECT_EQ(parse_memory_size("96gib"), 96 * kGiB);
  EXPECT_EQ(parse_memory_size("512MiB"), 512 * kMiB);
  EXPECT_EQ(parse_memory_size(" 4 GiB "), 4 * kGiB);
  EXPECT_EQ(parse_memory_size("1.5"), 3 * kGiB / 2);  // a bare number is GiB, as --gpu-mem's
  EXPECT_EQ(parse_memory_size("100b"), 100);
  EXPECT_EQ(parse_memory_size("64k"), 64 * kKiB);
  EXPECT_EQ(parse_memory_size("2T"), 2048 * kGiB);
  for (const char* bad : {"", "G", "-1", "12x", "1e3", "1..2", "auto1", "99999999999T"})
    EXPECT_FALSE(parse_memory_size(bad)) << bad;
}

// ---- a small training problem

struct Problem {
  Graph g;
  Partition part;
  Plan plan;
  Problem(int m, int n) : g(test::training_graph(400, 3000, 12, 5, 3)), part(test::id_range_partition(g, m, n)) {
    plan = build_plan(g.view(), part);
  }
};

ModelConfig gcn() {
  ModelConfig c;
  c.dims = {12, 16, 8, 5};  // aggregate-first, aggregate-first, transform-first
  return c;
}

ModelConfig gat() {
  ModelConfig c;
  c.kind = ModelKind::gat;
  c.dims = {12, 4, 5};
  c.heads = 3;
  c.out_heads = 2;
  return c;
}

ModelConfig sage() {
  ModelConfig c;
  c.kind = ModelKind::sage;
  c.dims = {12, 16, 5};
  return c;
}

TEST(HostMemoryPlan, StoreLayoutAddsUpToVertexStoreBytes) {
  for (const ModelConfig& model : {gcn(), gat(), sage()})
    for (GcnOrder order : {GcnOrder::automatic, GcnOrder::aggregate_first, GcnOrder::transform_first})
      for (bool fuse : {true, false})
        for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16}) {
          TrainerOptions opt;
          opt.model = model;
          opt.gcn_order = order;
          opt.fuse_transforms = fuse;
          int64_t cols = 0;
          const std::vector<StoreMatrix> mats = store_matrices(opt);
          for (const StoreMatrix& s : mats) cols += s.cols;
          EXPECT_EQ(cols * 1000 * dtype_bytes(t), vertex_store_bytes(opt, 1000, t));
          EXPECT_EQ(store_columns(mats, StoreKind::features), model.dims.front());
        }
}

TEST(HostMemoryPlan, PlanShapeFromTheFileEqualsThePlans) {
  Problem pr(2, 3);
  test::TempDir d;
  const std::string path = d.file("p.htplan");
  write_plan(path, pr.plan);
  const std::optional<PlanShape> f = read_plan_shape(path);
  ASSERT_TRUE(f);
  const PlanShape s = shape_of(pr.plan);
  EXPECT_EQ(f->m, 2);
  EXPECT_EQ(f->n, 3);
  EXPECT_EQ(f->num_vertices, s.num_vertices);
  ASSERT_EQ(f->steps.size(), s.steps.size());
  int64_t reused = 0;
  for (size_t k = 0; k < s.steps.size(); ++k) {
    const StepShape &a = f->steps[k], &b = s.steps[k];
    EXPECT_EQ(std::tie(a.dst, a.edges, a.nbr, a.trans, a.reused, a.remote, a.flush),
              std::tie(b.dst, b.edges, b.nbr, b.trans, b.reused, b.remote, b.flush))
        << "step " << k;
    reused += a.reused;
  }
  EXPECT_GT(reused, 0);
  EXPECT_EQ(f->trans_capacity, s.trans_capacity);
  EXPECT_EQ(f->remote_capacity, s.remote_capacity);
  EXPECT_EQ(f->nbr_capacity, s.nbr_capacity);
  EXPECT_EQ(f->max_dst, s.max_dst);
  EXPECT_EQ(f->max_edges, s.max_edges);
  EXPECT_GT(plan_memory_bytes(s), 12 * 3000);
  // Not a plan: no shape (read_plan names the problem).
  std::ofstream(d.file("x.htplan")) << "not a plan";
  EXPECT_FALSE(read_plan_shape(d.file("x.htplan")));
}

TEST(HostMemoryPlan, PackedBlocksAreBuildDevicePlans) {
  Problem pr(2, 3);
  std::vector<float> inv(static_cast<size_t>(pr.g.num_vertices), 0.5f);
  std::vector<int64_t> orig(static_cast<size_t>(pr.g.num_vertices));
  std::iota(orig.begin(), orig.end(), 0);
  const PlanShape s = shape_of(pr.plan);
  for (CommMode mode : {CommMode::baseline, CommMode::p2p, CommMode::full})
    for (bool gat_keys : {false, true})
      for (RemoteAreas areas : {RemoteAreas::one, RemoteAreas::early_pulls, RemoteAreas::kept_rows})  // pull lists in every step but the first
        for (int i = 0; i < pr.plan.m; ++i) {
          std::vector<std::vector<std::byte>> blocks;
          const EdgeKeys keys{gat_keys ? std::span<const float>() : std::span<const float>(inv), orig};
          const DevicePlan dp = build_device_plan(
              pr.plan, i, mode, keys, gat_keys,
              [&](int64_t n) {
                blocks.emplace_back(static_cast<size_t>(n));
                return blocks.back().data();
              },
              areas);
          const bool early = areas != RemoteAreas::one && mode != CommMode::baseline;
          EXPECT_EQ(dp.remote_shift, early ? s.remote_capacity[i] : 0);
          // The same step derived on its device: its block there (room for the transpose's segments).
          const DevicePlan derived = build_device_plans(
              pr.plan, i, 1, mode, keys, gat_keys,
              [&](int, int64_t n) {
                blocks.emplace_back(static_cast<size_t>(n));
                return blocks.back().data();
              },
              areas, {1})[0];
          for (int j = 0; j < pr.plan.n; ++j) {
            EXPECT_EQ(packed_block_bytes(s.step(j, i), mode, dp.buffer_rows, !gat_keys, gat_keys, early && j > 0),
                      static_cast<int64_t>(dp.steps[j].bytes.size()))
                << "mode " << name_of(mode) << " gpu " << i << " batch " << j << " areas " << static_cast<int>(areas);
            EXPECT_EQ(packed_block_bytes(s.step(j, i), mode, dp.buffer_rows, !gat_keys, gat_keys, early && j > 0, true),
                      derived.steps[j].block_bytes)
                << "derived: mode " << name_of(mode) << " gpu " << i << " batch " << j;
          }
        }
}

struct EngineCase {
  ModelConfig model;
  int m = 1, n = 1;
  CommMode comm = CommMode::full;
  StoreDtype dtype = StoreDtype::f32;
  StepPlacement steps = StepPlacement::automatic;
  int merged_buffers = 2;
  bool early_start = true, fuse = true, handoff = true, forward = true, overlap = true;
  int64_t gpu_cache = kGpuCacheAuto;
};

// What the plan says the CPU executor allocates equals what it allocates:
// the emulated devices' memory, and the host store with its staging ring.
TEST(HostMemoryPlan, EmulatedDevicesAndStoreAreWhatTheCpuExecutorAllocates) {
  std::vector<EngineCase> cases;
  for (const ModelConfig& model : {gcn(), gat(), sage()})
    for (int m : {1, 2})
      for (int n : {1, 3})
        for (CommMode comm : {CommMode::baseline, CommMode::p2p, CommMode::full}) cases.push_back({model, m, n, comm});
  EngineCase c{gcn(), 2, 3};
  for (auto change : std::vector<std::function<void(EngineCase&)>>{
           [](EngineCase& e) { e.dtype = StoreDtype::bf16; }, [](EngineCase& e) { e.steps = StepPlacement::streamed; },
           [](EngineCase& e) { e.steps = StepPlacement::resident; }, [](EngineCase& e) { e.merged_buffers = 1; },
           [](EngineCase& e) { e.early_start = false; }, [](EngineCase& e) { e.fuse = false; },
           [](EngineCase& e) { e.handoff = false; }, [](EngineCase& e) { e.forward = false; },
           [](EngineCase& e) { e.overlap = false; }, [](EngineCase& e) { e.gpu_cache = 1 << 20; },
           [](EngineCase& e) { e.gpu_cache = 16; }}) {
    EngineCase e = c;
    change(e);
    cases.push_back(e);
  }
  for (const EngineCase& e : cases) {
    SCOPED_TRACE(fmt::format("{} m={} n={} {} {} steps {} buffers {} early {} fuse {} handoff {} forward {} overlap {} "
                             "cache {}",
                             model_title(e.model.kind), e.m, e.n, name_of(e.comm),
                             dtype_name(e.dtype), static_cast<int>(e.steps), e.merged_buffers, e.early_start, e.fuse,
                             e.handoff, e.forward, e.overlap, e.gpu_cache));
    Problem pr(e.m, e.n);
    TrainerOptions opt;
    opt.model = e.model;
    opt.comm = e.comm;
    opt.host_dtype = e.dtype;
    opt.steps = e.steps;
    opt.merged_buffers = e.merged_buffers;
    opt.early_start = e.early_start;
    opt.fuse_transforms = e.fuse;
    opt.handoff_gradients = e.handoff;
    opt.forward_on_device = e.forward;
    opt.overlap_copies = e.overlap;
    opt.gpu_cache = e.gpu_cache;
    std::vector<int64_t> orig(pr.part.new_to_old.begin(), pr.part.new_to_old.end());
    CpuExecutor exec(e.m);
    const Trainer tr(exec, pr.g.view(), orig, pr.plan, opt);
    const PlanShape s = shape_of(pr.plan);
    int64_t planned_device = 0;
    for (int i = 0; i < e.m; ++i) planned_device = std::max(planned_device, emulated_device_bytes(s, i, opt));
    if (e.gpu_cache > 0) {  // a budget: what the cache takes of it is the trainer's choice
      EXPECT_LE(exec.peak_device_bytes(), planned_device);
      EXPECT_GE(exec.peak_device_bytes() + e.gpu_cache, planned_device);
    } else {
      EXPECT_EQ(planned_device, exec.peak_device_bytes());
    }

    HostPlanInputs in;
    in.graph = shape_of(pr.g.view());
    in.plan = s;
    in.opt = opt;
    in.emulated_devices = true;
    const HostMemoryPlan p = plan_host_memory(in);
    int64_t store = 0, emulated = 0;
    for (const HostMemoryItem& it : p.items) {
      if (it.name == "vertex store" || it.name == "staging ring (pinned)") store += it.bytes;
      if (it.name == "emulated device memory") emulated += it.bytes;
    }
    EXPECT_EQ(store, exec.host_bytes());
    int64_t all_devices = 0;
    for (int i = 0; i < e.m; ++i) all_devices += emulated_device_bytes(s, i, opt);
    EXPECT_EQ(emulated, all_devices);
  }
}

// A process of a multi-process job plans its own devices and its
// partitions' rows of the store (what alloc_host_rows holds).
TEST(HostMemoryPlan, AProcessPlansItsDevicesAndRows) {
  Problem pr(4, 3);
  TrainerOptions opt;
  opt.model = gcn();
  opt.comm = CommMode::full;
  HostPlanInputs in;
  in.graph = shape_of(pr.g.view());
  in.plan = shape_of(pr.plan);
  in.opt = opt;
  in.emulated_devices = true;
  auto bytes = [](const HostMemoryPlan& p, const std::string& name) {
    for (const HostMemoryItem& it : p.items)
      if (it.name == name) return it.bytes;
    return int64_t{-1};
  };
  const HostMemoryPlan whole = plan_host_memory(in);
  in.first_device = 2;
  in.devices = 2;
  const HostMemoryPlan mine = plan_host_memory(in);
  const int64_t rows = pr.plan.part_offsets[4] - pr.plan.part_offsets[2], n = pr.g.num_vertices;
  int64_t cols = 0;
  for (const StoreMatrix& m : store_matrices(opt)) cols += m.cols;
  EXPECT_EQ(bytes(whole, "vertex store"), 4 * n * cols);
  EXPECT_EQ(bytes(mine, "vertex store"), 4 * rows * cols);
  EXPECT_EQ(bytes(mine, "emulated device memory"),
            emulated_device_bytes(*in.plan, 2, opt) + emulated_device_bytes(*in.plan, 3, opt));
  EXPECT_LT(bytes(mine, "device plans (pinned)"), bytes(whole, "device plans (pinned)"));
}

HostPlanInputs big_inputs() {
  HostPlanInputs in;
  in.graph.vertices = 1'000'000;
  in.graph.edges = 50'000'000;
  in.graph.feature_dim = 100;
  in.graph.num_classes = 47;
  in.graph.labels = in.graph.split = true;
  in.graph.file_bytes = 613'016'128;
  in.opt.model.dims = {100, 256, 256, 47};
  in.partition_file_bytes = 4'000'000;
  in.emulated_devices = true;
  return in;
}

const HostMemoryItem* item(const HostMemoryPlan& p, const std::string& name) {
  for (const HostMemoryItem& it : p.items)
    if (it.name == name) return &it;
  return nullptr;
}

TEST(HostMemoryPlan, PhasesAndItems) {
  HostPlanInputs in = big_inputs();
  const HostMemoryPlan p = plan_host_memory(in);
  EXPECT_FALSE(p.plan_known);  // no plan yet: its items are left out
  EXPECT_EQ(item(p, "device plans (pinned)"), nullptr);
  ASSERT_EQ(p.phases.size(), 5u);
  const HostMemoryItem* store = item(p, "vertex store");
  ASSERT_NE(store, nullptr);
  // h^0 100, h^1 256, ∇x^1 256, a^0 100, a^1 256, h^3 47, ∇x^3 47, t^2 47 (h^2, ∇x^2 stay on the device).
  EXPECT_EQ(store->bytes, int64_t{1'000'000} * (100 + 256 + 256 + 100 + 256 + 47 + 47 + 47) * 4);
  EXPECT_EQ(store->phases, unsigned{kPhaseSetup | kPhaseTrain});
  const HostMemoryItem* file = item(p, "graph file (mapped)");
  ASSERT_NE(file, nullptr);
  EXPECT_TRUE(file->graph_file);
  // Read while loading and renumbering, then given back: never held with the store.
  EXPECT_EQ(file->phases, unsigned{kPhaseLoad | kPhaseRenumber});
  EXPECT_EQ(item(p, "renumbered graph (no features)")->phases, unsigned{kPhaseRenumber | kPhasePack});
  for (const HostPhaseTotal& t : p.phases) {
    int64_t resident = 0, need = 0;
    for (const HostMemoryItem& it : p.items) {
      if (it.phases & t.phase) resident += it.bytes;
      if (counts_in_need(it, t.phase)) need += it.bytes;
    }
    EXPECT_GE(t.resident, resident);  // plus the margin
    EXPECT_LE(t.resident, resident + resident / 20);
    EXPECT_EQ(t.need - need, t.resident - resident);  // the same margin
    EXPECT_EQ(resident, need);  // the file's pages are only resident while they count
    EXPECT_LE(t.resident, p.peak);
    EXPECT_LE(t.need, p.need);
  }
  EXPECT_LE(p.need, p.peak);

  in.opt.host_dtype = StoreDtype::bf16;
  EXPECT_EQ(item(plan_host_memory(in), "vertex store")->bytes, store->bytes / 2);
  in.store_on_device = true;
  EXPECT_EQ(item(plan_host_memory(in), "vertex store"), nullptr);

  // With a plan: its items, the steps' build only at setup.
  Problem pr(1, 3);
  HostPlanInputs small;
  small.graph = shape_of(pr.g.view(), 100'000);
  small.plan = shape_of(pr.plan);
  small.opt.model = gcn();
  small.plan_file_bytes = 50'000;
  const HostMemoryPlan q = plan_host_memory(small);
  EXPECT_TRUE(q.plan_known);
  ASSERT_NE(item(q, "device plans (pinned)"), nullptr);
  EXPECT_EQ(item(q, "device plan build (packing only)")->phases, unsigned{kPhasePack});
  EXPECT_EQ(item(q, "plan file (while read)")->phases, unsigned{kPhaseLoad});
  // The plan's lists go once the device plans are packed: not held with the store.
  EXPECT_EQ(item(q, "plan")->phases, unsigned{kPhaseLoad | kPhaseRenumber | kPhasePack});
  EXPECT_EQ(item(q, "plan")->phases & item(q, "vertex store")->phases, 0u);
  EXPECT_EQ(item(q, "emulated device memory"), nullptr);  // a GPU's memory is not the host's
  const std::string text = host_items_text(q, q.peak_phase, q.peak, false, 2);
  EXPECT_NE(text.find("other "), std::string::npos) << text;
}

// The parameters the plan counts are init_params' (GCN and GAT, with and
// without bias, several heads), counted without making them: a model of
// 10^10 parameters (40 GB each for values and gradients) is planned at once.
TEST(HostMemoryPlan, ParametersAreCountedWithoutAllocatingThem) {
  HostPlanInputs in = big_inputs();
  const int64_t n = in.graph.vertices;
  const auto planned = [&](const ModelConfig& m) {
    in.opt.model = m;
    const HostMemoryItem* it = item(plan_host_memory(in), "vertex ids, degrees, parameters");
    EXPECT_NE(it, nullptr);
    return it ? (it->bytes - 8 * n - (m.kind != ModelKind::gat ? 4 * n : 0)) / 16 : -1;  // degrees: GCN's, SAGE's
  };
  ModelConfig gcn_model;
  gcn_model.dims = {100, 256, 256, 47};
  EXPECT_EQ(planned(gcn_model), init_params(gcn_model).count());
  gcn_model.bias = false;
  EXPECT_EQ(planned(gcn_model), init_params(gcn_model).count());
  ModelConfig gat;
  gat.kind = ModelKind::gat;
  gat.dims = {100, 8, 16, 47};
  gat.heads = 4;
  gat.out_heads = 3;
  EXPECT_EQ(planned(gat), init_params(gat).count());
  gat.bias = false;
  EXPECT_EQ(planned(gat), init_params(gat).count());
  ModelConfig sage_model;
  sage_model.kind = ModelKind::sage;
  sage_model.dims = {100, 64, 47};
  EXPECT_EQ(planned(sage_model), init_params(sage_model).count());
  sage_model.bias = false;
  EXPECT_EQ(planned(sage_model), init_params(sage_model).count());

  ModelConfig huge;
  huge.dims = {100, 100'000, 100'000, 47};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(planned(huge), int64_t{100} * 100'000 + 100'000 + int64_t{100'000} * 100'000 + 100'000 +
                               int64_t{100'000} * 47 + 47);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

// A store allocated beside the device plans is held while they are packed:
// the packing phase grows by the store, nothing else changes. ht-train asks
// for it where the store is at least kStoreBesideAtLeast and that still fits.
TEST(HostMemoryPlan, StoreBesidePlansIsHeldWhilePacking) {
  Problem pr(1, 3);
  HostPlanInputs in;
  in.graph = shape_of(pr.g.view(), 100'000);
  in.plan = shape_of(pr.plan);
  in.opt.model = gcn();
  const HostMemoryPlan after = plan_host_memory(in);
  in.store_beside_plans = true;
  const HostMemoryPlan beside = plan_host_memory(in);
  const int64_t store = item(after, "vertex store")->bytes;
  ASSERT_GT(store, 0);
  EXPECT_EQ(item(beside, "vertex store")->bytes, store);
  EXPECT_EQ(item(beside, "vertex store")->phases, unsigned{kPhasePack | kPhaseSetup | kPhaseTrain});
  ASSERT_EQ(beside.phases.size(), after.phases.size());
  for (size_t k = 0; k < after.phases.size(); ++k) {
    const int64_t grown = beside.phases[k].need - after.phases[k].need;
    if (after.phases[k].phase == kPhasePack) {
      EXPECT_GE(grown, store);
      EXPECT_LE(grown, store + store / 20);  // and its share of the margin
    } else {
      EXPECT_EQ(grown, 0) << host_phase_name(after.phases[k].phase);
    }
  }

  HostPlanInputs big = big_inputs();  // a store of 1.1 GB
  const TrainerOptions asked;  // store_beside_plans by default
  ASSERT_TRUE(asked.store_beside_plans);
  EXPECT_TRUE(choose_store_beside_plans(asked, big, {0, "unknown"}));
  EXPECT_TRUE(big.store_beside_plans);
  const int64_t with = plan_host_memory(big).need;
  big.store_beside_plans = false;
  const int64_t without = plan_host_memory(big).need;
  ASSERT_GT(with, without);
  EXPECT_TRUE(choose_store_beside_plans(asked, big, {with, "--host-mem"}));
  EXPECT_FALSE(choose_store_beside_plans(asked, big, {with - 1, "--host-mem"}));  // fits only after the plans
  EXPECT_FALSE(big.store_beside_plans);
  TrainerOptions off;
  off.store_beside_plans = false;
  EXPECT_FALSE(choose_store_beside_plans(off, big, {0, "unknown"}));
  HostPlanInputs on_device = big_inputs();
  on_device.store_on_device = true;
  EXPECT_FALSE(choose_store_beside_plans(asked, on_device, {0, "unknown"}));
  EXPECT_FALSE(choose_store_beside_plans(asked, in, {0, "unknown"}));  // a small store: after the plans
  EXPECT_LT(store, kStoreBesideAtLeast);
}

TEST(HostMemoryCheck, RefusesWithAdviceThatFits) {
  TrainJob job;
  job.backend = Backend::cpu;
  HostPlanInputs in = big_inputs();
  const HostMemoryPlan f32 = plan_host_memory(in);
  HostPlanInputs half = in;
  half.opt.host_dtype = StoreDtype::bf16;
  const int64_t bf16_need = plan_host_memory(half).need;
  ASSERT_LT(bf16_need, f32.need);
  // Between the two: refused, and bf16 named with what it would need.
  const HostMemoryLimit limit{(bf16_need + f32.need) / 2, "--host-mem"};
  try {
    check_host_memory(job, in, limit);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs " + format_bytes(static_cast<double>(f32.need))), std::string::npos) << msg;
    EXPECT_NE(msg.find(format_bytes(static_cast<double>(limit.bytes)) + " is available (--host-mem)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("--host-dtype bf16 would need " + format_bytes(static_cast<double>(bf16_need)) + " and fit"),
              std::string::npos)
        << msg;
  }
  EXPECT_NO_THROW(check_host_memory(job, half, limit));
  EXPECT_NO_THROW(check_host_memory(job, in, {f32.need, "x"}));
  EXPECT_NO_THROW(check_host_memory(job, in, {0, "unknown"}));  // unknown: not checked
  // Nothing fits: the closest set of options is named.
  try {
    check_host_memory(job, in, {kGiB, "MemAvailable"});
    FAIL() << "no error";
  } catch (const Error& e) {
    // (bf16 features in the file no longer help: setup holds no copy of them.)
    EXPECT_NE(std::string(e.what()).find("even --host-dtype bf16 would need"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ht
