#pragma once
// The sizes of a plan without its contents: per step the counts of every
// list, per GPU the capacities. Memory planners work from it, so that a plan
// file's memory can be known from its header and offset tables (a few pages)
// before the file is read, and an in-memory plan's from the plan itself.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace ht {

struct StepShape {
  int64_t dst = 0;     // |V_ij|
  int64_t edges = 0;   // chunk edges (self-loops included)
  int64_t nbr = 0;     // |N_ij|
  int64_t trans = 0;   // transition set
  int64_t reused = 0;  // of which kept in place from the batch before (full mode loads the others)
  int64_t remote = 0;  // remote rows
  int64_t flush = 0;   // flush list (full mode)
};

struct PlanShape {
  int m = 1, n = 1;
  int64_t num_vertices = 0;
  std::vector<StepShape> steps;  // index j * m + i, as Plan::steps
  std::vector<int64_t> trans_capacity, remote_capacity, nbr_capacity, max_dst, max_edges;  // per GPU

  const StepShape& step(int batch, int gpu) const { return steps[static_cast<size_t>(batch) * m + gpu]; }
  int64_t merged_capacity(int gpu) const { return trans_capacity[gpu] + remote_capacity[gpu]; }
};

PlanShape shape_of(const Plan& plan);

// The shape of a plan file from its header, per-GPU capacities, per-step
// offset tables and recorded sizes of the derived lists (step_counts),
// without reading (or verifying, or deriving) any list.
// nullopt when the tables do not add up: read_plan then names the problem.
std::optional<PlanShape> read_plan_shape(const std::string& path);

// Bytes a Plan of this shape holds in memory (its vectors and step records).
int64_t plan_memory_bytes(const PlanShape& s);

}  // namespace ht
