#pragma once
// Host memory of one training run, computed before anything large is
// allocated, item by item and phase by phase: the vertex store by kind, the
// graph (the mapped file and the renumbered copy), partition and plan, the
// device plans' pinned blocks, the staging ring, on the CPU backend the
// emulated devices' memory (host memory too), and what setup holds for a
// moment. The peak is the largest phase; it is what the process's peak RSS
// should come to (file pages of the mapped graph included, as the kernel
// counts them). Whether a run fits is decided on `need`: the graph file's
// pages are page cache the kernel can drop once the graph has been
// renumbered, so they count only while they are read; the run gives them
// back (madvise) behind each read, so they are not resident later either.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/trainer_options.hpp"
#include "graph/graph_shape.hpp"
#include "plan/plan_shape.hpp"

namespace ht {

struct HostPlanInputs {
  GraphShape graph;
  std::optional<PlanShape> plan;  // unset: not known yet (built in memory later); its items are left out
  TrainerOptions opt;
  bool emulated_devices = false;  // CPU backend: every device buffer is host memory
  bool store_on_device = false;   // in-memory mode on a GPU: no host store
  int64_t partition_file_bytes = 0;  // 0: partitioned in memory
  int64_t plan_file_bytes = 0;       // 0: the plan is built in memory
  // False where the plan comes from files or keeps every id (m = n = 1 in
  // memory): only the vertices' data is renumbered, not the topology.
  bool topology_renumbered = true;
  int threads = 1;                   // OpenMP threads: device plan steps built at once
  bool logits_out = false, predict_out = false;  // end-of-run outputs (a copy of the logits each)
  int64_t runtime_bytes = 0;         // the executor's own (CUDA runtime and libraries): an estimate
  // What the process holds before it loads anything (its RSS then: the
  // program and the shared libraries it touched, e.g. a CUDA build's); at
  // least a fixed allowance.
  int64_t process_bytes = 0;
  // A process of a multi-process job: it drives the plan's devices
  // first_device ... first_device + devices - 1 and holds only their
  // partitions' rows of the vertex store (devices 0: every device, one process).
  int first_device = 0, devices = 0;
  // The vertex store is allocated beside the device plans
  // (TrainerOptions::store_beside_plans): held while they are packed too.
  bool store_beside_plans = false;
};

// Phases of a run, in order (loading, renumbering, packing, setup,
// training); items say in which they are held. Packing builds the device
// plans; then the plan's lists and the renumbered graph go, and setup
// allocates the vertex store and fills h^0 from the graph file.
enum HostPhase : unsigned { kPhaseLoad = 1, kPhaseRenumber = 2, kPhaseSetup = 4, kPhaseTrain = 8, kPhasePack = 16 };
inline constexpr unsigned kAllPhases = kPhaseLoad | kPhaseRenumber | kPhasePack | kPhaseSetup | kPhaseTrain;
inline constexpr HostPhase kPhasesInOrder[] = {kPhaseLoad, kPhaseRenumber, kPhasePack, kPhaseSetup, kPhaseTrain};

struct HostMemoryItem {
  std::string name;    // "vertex store"
  std::string detail;  // "outputs 1.2 GiB, gradients ...", or empty
  int64_t bytes = 0;
  unsigned phases = kAllPhases;
  bool graph_file = false;  // the mapped graph file: needed only while it is read (load, renumber)
};

struct HostPhaseTotal {
  HostPhase phase = kPhaseLoad;
  int64_t resident = 0;  // expected RSS in this phase
  int64_t need = 0;      // what must fit in memory (resident less droppable file pages)
};

struct HostMemoryPlan {
  std::vector<HostMemoryItem> items;  // in the order they are computed
  std::vector<HostPhaseTotal> phases;
  int64_t peak = 0;  // largest resident total
  int64_t need = 0;  // largest need
  HostPhase peak_phase = kPhaseTrain;
  HostPhase need_phase = kPhaseTrain;
  bool plan_known = true;  // false: the plan's items (device plans, emulated devices) are not in it yet
};

HostMemoryPlan plan_host_memory(const HostPlanInputs& in);

const char* host_phase_name(HostPhase p);  // "loading", "renumbering", "packing", "setup", "training"

// The `top` largest items held in phase `ph` (`need`: those that count in its
// need), then the rest of `total` as "other": "vertex store 8.60 GiB (fp32:
// outputs ..., ...), emulated device memory 3.10 GiB, other 1.02 GiB".
std::string host_items_text(const HostMemoryPlan& p, HostPhase ph, int64_t total, bool need, int top = 4);

// Whether item `it` counts in phase `ph`'s need (held, and not the mapped
// graph file after renumbering).
bool counts_in_need(const HostMemoryItem& it, HostPhase ph);

// ---- the arithmetic behind the items, exposed for tests

// Bytes of one step's packed block as build_device_plan lays it out
// (engine/device_plan.cpp) for `mode`, with `buffer_rows` rows in the
// device's data buffer; `derived`: the block on the device of a step it
// derives (DeviceStep::block_bytes: room for the transpose's segments; the
// host packs less of it, counted here whole).
int64_t packed_block_bytes(const StepShape& s, CommMode mode, int64_t buffer_rows, bool weights, bool edge_keys,
                           bool early_pulls = false, bool derived = false);

// Emulated device memory of device `gpu` (CPU backend): everything
// Trainer::setup_devices allocates on it (what CpuExecutor::peak_device_bytes
// reports after setup).
int64_t emulated_device_bytes(const PlanShape& plan, int gpu, const TrainerOptions& opt);

}  // namespace ht
