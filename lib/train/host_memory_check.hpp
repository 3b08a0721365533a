#pragma once
// ht-train's host memory check (engine/host_memory_plan.hpp is the
// arithmetic): the limit (--host-mem, else what the machine and the
// process's cgroups leave), the plan of this job, and the one-line error of a
// run that cannot fit, which names the need, the limit and where it came
// from, and the options of today that would fit, each planned (not guessed).
#include <cstdint>
#include <optional>
#include <string>

#include "core/memory_limit.hpp"
#include "engine/host_memory_plan.hpp"
#include "engine/trainer_options.hpp"
#include "graph/graph_shape.hpp"
#include "plan/plan_shape.hpp"

namespace ht {

struct TrainJob;

// Host memory of the CUDA runtime, cuBLAS and NCCL in a process (context,
// mapped library pages): an estimate, not measured on this machine.
int64_t cuda_runtime_bytes(int gpus);

// --host-mem when given (source "--host-mem"), else detected, with the
// process's RSS now counted as its own.
HostMemoryLimit host_memory_limit(const TrainJob& job);

// The process's RSS at its first call: ht-train calls it first, before
// anything is loaded and before the devices start (the CUDA runtime's host
// memory is cuda_runtime_bytes' estimate, not counted twice).
int64_t process_bytes_at_start();

// The planner's inputs for this job and model (`topt`), the graph of shape
// `g`, a plan of shape `plan` (unset: built in memory later) and the store
// placement.
HostPlanInputs host_plan_inputs(const TrainJob& job, const TrainerOptions& topt, const GraphShape& g,
                                std::optional<PlanShape> plan, bool store_on_device);

// Whether the vertex store is allocated beside the device plans
// (TrainerOptions::store_beside_plans): asked for, on the host, at least
// kStoreBesideAtLeast bytes (a smaller one takes a fraction of a second, not
// worth holding it through packing), and the plan of `in` with the store
// held through packing too fits `limit` (or the limit is unknown). Sets
// `in.store_beside_plans` to the answer.
inline constexpr int64_t kStoreBesideAtLeast = int64_t{1} << 30;
bool choose_store_beside_plans(const TrainerOptions& topt, HostPlanInputs& in, const HostMemoryLimit& limit);

// Throws ht::Error (one line) when the plan of `in` needs more than `limit`
// (a limit of 0 bytes is unknown: nothing is checked). Returns the plan.
HostMemoryPlan check_host_memory(const TrainJob& job, const HostPlanInputs& in, const HostMemoryLimit& limit);

// The planned peak next to the measured one, for the summary:
// "plan 14.20 GiB at training (vertex store ..., other ...), peak process RSS 13.37 GiB = 94% of the plan;
// limit 21.96 GiB (MemAvailable)".
std::string host_memory_line(const HostMemoryPlan& plan, int64_t peak_rss, const HostMemoryLimit& limit);

}  // namespace ht
