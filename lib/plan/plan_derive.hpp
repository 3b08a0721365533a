#pragma once
// The lists of a plan that follow from its neighbor sets, its chunk
// topologies and the rules of docs/PLAN.md §1, so that a plan file need not
// store them (format 2; issue 20): transition sets, reuse flags and slots,
// remote rows, src_vid = nbr[src_local], src_merged, flush lists. A plan
// file holds nbr, offsets and src_local (and the per-GPU capacities the
// engine sizes its buffers with); these lists were 8 of its 12 bytes per edge.
//  - read_plan derives them (derive_plan_lists) and compares what it gets
//    with the counts and capacities the file records;
//  - write_plan refuses a plan whose own lists are not what derivation
//    gives (find_derivation_mismatch): the file would read back as another
//    plan;
//  - the builder assigns slots with step_slots, the one implementation of
//    the slot rule, so that a built plan reads back exactly.
// Every step is independent except the slots (batch j's follow batch j-1's
// on the same GPU); work runs over blocks of bulk_tuning().grain elements,
// and results never depend on the thread count.
//
// Preconditions (read_plan checks them before deriving): the shape and
// per-GPU arrays of Plan are right, each step's nbr is strictly ascending
// with ids < N, src_local < |nbr|.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/plan.hpp"

namespace ht {

// The sizes of a step's derived lists, which a plan file records (so that
// plan_shape.hpp can read them without deriving anything).
struct StepCounts {
  int64_t trans = 0;   // |𝕅_ij|
  int64_t reused = 0;  // of which kept in place from batch j-1
  int64_t remote = 0;  // remote rows
  int64_t flush = 0;   // gradient flushes after the step
  bool operator==(const StepCounts&) const = default;
};
StepCounts counts_of(const ChunkPlan& cp);

// 𝕅_ij of step s = (j, i): the vertices of partition i in ∪_k N_kj, ascending.
std::vector<vid_t> transition_set(const Plan& plan, size_t s);

// The slot rule for one step: `vid` = 𝕅_ij (ascending); `prev_vid` and
// `prev_slot` = 𝕅_i,j-1 and its slots (empty for batch 0); `capacity` = the
// slots the GPU's earlier batches used (max slot + 1, 0 before batch 0).
// A vertex of 𝕅_i,j-1 keeps its slot (reused = 1); the new ones, ascending,
// take the free slots below `capacity` in ascending order, then slots
// `capacity`, `capacity` + 1, … Fills `slot` and `reused` and returns the
// capacity after this batch (and in `kept` the number of reused vertices);
// -1 when a previous slot is not below `capacity` (an inconsistent plan;
// only write_plan's check can meet one). Parallel over blocks of the step.
int64_t step_slots(std::span<const vid_t> prev_vid, std::span<const uint32_t> prev_slot, std::span<const vid_t> vid,
                   int64_t capacity, std::vector<uint32_t>& slot, std::vector<uint8_t>& reused,
                   int64_t* kept = nullptr);

// Remote rows of step s (needs the transition sets and slots of every step
// of its batch) and the merged-buffer row of each of its nbr entries: the
// vertex's slot when GPU i owns it, else `base` (= trans_capacity[i]) + its
// row.
struct RemoteRows {
  std::vector<vid_t> vid;
  std::vector<int32_t> gpu;
  std::vector<uint32_t> slot;
  std::vector<uint32_t> merged;  // per nbr entry
};
// False when a neighbor is not in its owner's transition set of the batch
// (never for derived sets).
bool derive_remote_rows(const Plan& plan, size_t s, uint32_t base, RemoteRows& out);

// Flush list of step s: slots of 𝕅_ij whose vertex is not in 𝕅_i,j+1 (all
// after the last batch), ascending slot.
void derive_flushes(const Plan& plan, size_t s, std::vector<uint32_t>& slot, std::vector<vid_t>& vid);

// Fills every derived list of every step from nbr, offsets, src_local and
// the recorded capacities; `recorded` (one per step) are the counts a file
// records. "" when what is derived agrees with `recorded` and with the
// recorded transition capacities, else the first disagreement (in step
// order): the plan's derived lists are then incomplete.
std::string derive_plan_lists(Plan& plan, std::span<const StepCounts> recorded);

// "" when every derived list of `plan` is what derive_plan_lists would
// give, else the first step (in step order) that differs, and how. What
// the file stores is not judged here: a plan with a stored list or a
// recorded number that read_plan refuses (nbr not ascending, src_local out
// of range, a wrong capacity) gives "", since its file cannot read back as
// another plan (and tests forge such files with write_plan).
std::string find_derivation_mismatch(const Plan& plan);

}  // namespace ht
