// ht-train's setup with its independent phases side by side (issue 33), at
// the library level on the CPU executor: the link probe and the executor
// start on a thread of their own beside the files' reading. The runs give
// the bits of the phases in sequence (TrainJob::setup_in_sequence), the
// setup's phases say what ran beside what, and an error of either side (a
// corrupt plan, a missing partition, a failing probe or executor, a signal)
// surfaces as it did in sequence.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/signals.hpp"
#include "datasets/generators.hpp"
#include "engine/cpu_executor.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "partition/reorganize_tool.hpp"
#include "test_util.hpp"
#include "train/chunk_choice.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

class SetupOverlap : public ::testing::Test {
 public:
  void SetUp() override {
    gen::CommunityParams p;
    p.num_vertices = 600;
    p.num_classes = 4;
    p.feature_dim = 8;
    p.avg_degree = 6;
    p.seed = 5;
    write_graph(file("g.htg"), gen::community_graph(p).view());
    write_range_plan(2, 3, "p");
  }
  std::string file(const std::string& name) const { return dir.file(name); }

  // A range partition of g.htg into m parts of n chunks and its plan:
  // NAME.htp and NAME.htplan.
  void write_range_plan(int m, int n, const std::string& name) const {
    GraphFile gf(file("g.htg"));
    PartitionParams params;
    params.parts = m;
    params.chunks = n;
    params.method = PartitionMethod::range;
    PartitionRunInfo info;
    write_partition(file(name + ".htp"), make_partition(gf.view(), gf.identity(), params, info));
    ReorganizeToolOptions r;
    r.graph_path = file("g.htg");
    r.partition_path = file(name + ".htp");
    r.output_path = file(name + ".htplan");
    run_reorganize_tool(r);
  }

  // Two emulated GPUs from the files, a fake probe (the CPU backend has
  // none): both sides of the overlap run.
  TrainJob job(bool in_sequence, const std::string& out) const {
    TrainJob j;
    j.graph_path = file("g.htg");
    j.partition_path = file("p.htp");
    j.plan_path = file("p.htplan");
    j.parts = 2;
    j.epochs = 4;
    j.warmup = 0;
    j.trainer.model.dropout = 0.5f;
    j.setup_in_sequence = in_sequence;
    j.probe_link = [] { return LinkBandwidth{2e10, 1e10}; };
    j.save_model = file(out + ".model");
    j.logits_out = file(out + ".npy");
    return j;
  }

  // The run, its executor made by a factory that records its thread.
  TrainSummary run(const TrainJob& j) {
    return run_train_job(j, [this](int m) {
      maker = std::this_thread::get_id();
      return std::make_unique<CpuExecutor>(m);
    });
  }

  // The error message of a run that must fail.
  std::string error_of(const TrainJob& j) {
    try {
      run(j);
    } catch (const std::exception& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  // Both orders give one message; returned.
  std::string same_error(TrainJob j) {
    j.setup_in_sequence = true;
    const std::string in_sequence = error_of(j);
    j.setup_in_sequence = false;
    const std::string beside = error_of(j);
    EXPECT_EQ(in_sequence, beside);
    return beside;
  }

  test::TempDir dir;
  std::thread::id maker;
};

TEST_F(SetupOverlap, SameBitsAsInSequence) {
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    const TrainSummary a = run(job(true, "seq"));
    EXPECT_EQ(maker, std::this_thread::get_id());
    const TrainSummary b = run(job(false, "par"));
    EXPECT_NE(maker, std::this_thread::get_id()) << "the executor was not made beside the files' reading";
    EXPECT_EQ(a.final_loss, b.final_loss) << threads;
    EXPECT_EQ(a.final_val_acc, b.final_val_acc);
    EXPECT_EQ(test::read_bytes(file("seq.model")), test::read_bytes(file("par.model"))) << threads;
    EXPECT_EQ(test::read_bytes(file("seq.npy")), test::read_bytes(file("par.npy"))) << threads;
    EXPECT_TRUE(b.link_measured);
    EXPECT_EQ(b.link.h2d_bytes_per_s, 2e10);
    EXPECT_EQ(a.link_bound.seconds > 0, b.link_bound.seconds > 0);

    // What ran beside what: in sequence nothing (the probe in the first phase).
    const PhaseTimes& s = a.setup_phases;
    EXPECT_GE(s.system("link probe and checks"), 0);
    EXPECT_EQ(s.beside("renumbering"), "");
    EXPECT_GE(s.system("renumbering"), 0);
    EXPECT_GE(s.system("executor"), 0);
    const PhaseTimes& p = b.setup_phases;
    EXPECT_EQ(p.beside("renumbering"), "");  // after the plan's reading (side by side it was slower)
    EXPECT_GE(p.system("renumbering"), 0);
    EXPECT_EQ(p.beside("device start"), "checks to renumbering");
    std::vector<std::string> parts;
    for (const auto& [name, seconds] : p.parts("device start")) parts.push_back(name);
    EXPECT_EQ(parts, (std::vector<std::string>{"link probe", "executor", "waited for"}));
    // The main thread's phases add up to setup; the ones beside are not in the sum.
    EXPECT_LE(p.total(), b.setup_seconds + 1e-6);
  }
  omp_set_num_threads(saved);
}

// A partition made in memory: the executor's device count is --gpus, so it
// is made beside too.
TEST_F(SetupOverlap, InMemoryPartitionSameBits) {
  TrainJob a = job(true, "seq");
  a.partition_path.clear();
  a.plan_path.clear();
  a.chunks = 2;
  TrainJob b = a;
  b.setup_in_sequence = false;
  b.save_model = file("par.model");
  run(a);
  const TrainSummary sb = run(b);
  EXPECT_NE(maker, std::this_thread::get_id());
  EXPECT_EQ(test::read_bytes(file("seq.model")), test::read_bytes(file("par.model")));
  EXPECT_EQ(sb.setup_phases.beside("renumbering"), "");
  EXPECT_EQ(sb.setup_phases.beside("device start"), "checks to plan");
}

// One GPU and one chunk in memory: every vertex keeps its id, so the plan is
// built on the file's own topology and only the vertices' data is renumbered
// (issue 33). The same bits as the same partition read from files (whose
// topology is the plan file's), GCN's degree weights and dropout included.
TEST_F(SetupOverlap, InMemoryOneChunkKeepsIdsSameBitsAsFiles) {
  write_range_plan(1, 1, "p1");
  for (ModelKind kind : {ModelKind::gcn, ModelKind::sage}) {
    TrainJob files = job(false, "files");
    files.parts = 1;
    files.partition_path = file("p1.htp");
    files.plan_path = file("p1.htplan");
    files.trainer.model.kind = kind;
    TrainJob memory = files;
    memory.partition_path.clear();
    memory.plan_path.clear();
    memory.chunks = 1;
    memory.save_model = file("memory.model");
    memory.logits_out = file("memory.npy");
    const TrainSummary a = run(files);
    const TrainSummary b = run(memory);
    EXPECT_EQ(a.final_loss, b.final_loss) << name_of(kind);
    EXPECT_EQ(test::read_bytes(file("files.model")), test::read_bytes(file("memory.model"))) << name_of(kind);
    EXPECT_EQ(test::read_bytes(file("files.npy")), test::read_bytes(file("memory.npy"))) << name_of(kind);
    // The host memory plan counts the vertices' data alone, not a renumbered graph.
    std::vector<std::string> items;
    for (const HostMemoryItem& it : b.host_plan.items) items.push_back(it.name);
    EXPECT_NE(std::find(items.begin(), items.end(), "renumbered vertex data"), items.end());
    EXPECT_EQ(std::find(items.begin(), items.end(), "renumbered graph (no features)"), items.end());
  }
}

// --chunks auto with a GPU memory budget (a fake one here): the chunk choice
// reads the GPUs' free memory, so the probe is waited for before it, within
// the partitioning, and the executor is made after the plan, as in sequence.
TEST_F(SetupOverlap, ChunksAutoWaitsForTheProbeBeforeReadingDeviceMemory) {
  TrainJob a = job(true, "seq");
  a.partition_path.clear();
  a.plan_path.clear();
  a.chunks = kChunksAuto;
  std::atomic<bool> probed{false};  // (written by the devices' thread)
  a.probe_link = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    probed = true;
    return LinkBandwidth{2e10, 1e10};
  };
  bool probed_first = true;
  a.device_memory = [&](int) {
    probed_first = probed_first && probed;
    return int64_t{1} << 40;
  };
  TrainJob b = a;
  b.setup_in_sequence = false;
  b.save_model = file("par.model");
  run(a);
  probed = false;
  const TrainSummary sb = run(b);
  EXPECT_TRUE(probed_first);
  EXPECT_EQ(maker, std::this_thread::get_id());  // made after the plan
  EXPECT_EQ(test::read_bytes(file("seq.model")), test::read_bytes(file("par.model")));
  EXPECT_EQ(sb.setup_phases.beside("device start"), "checks to partition");
  for (const auto& [part, seconds] : sb.setup_phases.parts("device start")) EXPECT_NE(part, "executor");
}

// A plan file whose bytes were changed: its checksum error, whichever order.
TEST_F(SetupOverlap, CorruptPlanGivesTheSameError) {
  std::vector<char> bytes = test::read_bytes(file("p.htplan"));
  bytes[bytes.size() - 9] ^= 0x5a;  // in the last section's data
  test::write_bytes(file("p.htplan"), bytes);
  const std::string e = same_error(job(false, "x"));
  EXPECT_NE(e.find("checksum mismatch"), std::string::npos) << e;
}

TEST_F(SetupOverlap, MissingPartitionGivesTheSameError) {
  TrainJob j = job(false, "x");
  j.partition_path = file("none.htp");
  const std::string e = same_error(j);
  EXPECT_NE(e.find("none.htp"), std::string::npos) << e;
}

// A probe that fails: its error, not what came after it in sequence (here a
// corrupt plan, read while the probe ran).
TEST_F(SetupOverlap, FailingProbeGivesItsErrorFirst) {
  TrainJob j = job(false, "x");
  j.probe_link = []() -> LinkBandwidth { throw Error("link probe: no pinned memory"); };
  EXPECT_EQ(same_error(j), "link probe: no pinned memory");
  std::vector<char> bytes = test::read_bytes(file("p.htplan"));
  bytes[bytes.size() - 9] ^= 0x5a;
  test::write_bytes(file("p.htplan"), bytes);
  EXPECT_EQ(same_error(j), "link probe: no pinned memory");
}

// An executor that cannot be made: its error where it was made in sequence,
// after the plan (whose own error comes first).
TEST_F(SetupOverlap, FailingExecutorGivesItsErrorAfterThePlans) {
  TrainJob j = job(false, "x");
  auto error_with = [&](bool in_sequence) {
    j.setup_in_sequence = in_sequence;
    try {
      run_train_job(j, [](int) -> std::unique_ptr<Executor> { throw Error("no GPU for the executor"); });
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_with(true), "no GPU for the executor");
  EXPECT_EQ(error_with(false), "no GPU for the executor");
  std::vector<char> bytes = test::read_bytes(file("p.htplan"));
  bytes[bytes.size() - 9] ^= 0x5a;
  test::write_bytes(file("p.htplan"), bytes);
  const std::string plan_error = error_with(true);
  EXPECT_NE(plan_error.find("checksum mismatch"), std::string::npos) << plan_error;
  EXPECT_EQ(error_with(false), plan_error);
}

// A signal that arrives while the devices start (the probe raises it): the
// run stops at the next setup phase, the devices' thread joined.
TEST_F(SetupOverlap, SignalWhileTheDevicesStartStopsTheRun) {
  signals::install("test_setup_overlap", true);
  for (bool in_sequence : {true, false}) {
    TrainJob j = job(in_sequence, "x");
    j.probe_link = [] {
      std::raise(SIGTERM);
      return LinkBandwidth{2e10, 1e10};
    };
    j.stop_requested = [] { return signals::stop_signal(); };
    j.metrics_out = file("m.jsonl");
    try {
      run(j);
      ADD_FAILURE() << "no stop";
    } catch (const signals::Interrupted& e) {
      EXPECT_NE(std::string(e.what()).find("stopped by SIGTERM during setup"), std::string::npos) << e.what();
    }
    signals::clear_stop_signal();
    EXPECT_FALSE(file_exists(j.metrics_out));
  }
}

}  // namespace
}  // namespace ht
