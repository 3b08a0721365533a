#pragma once
// Symbolic checker of a plan: recomputes what the plan must contain from
// the graph and the partition with code independent of the builder, and
// executes the plan batch by batch on m emulated transition buffers that
// hold vertex ids instead of rows (full comm mode: reuse, loads, P2P reads
// through the merged buffer, gradient flushes). What it verifies:
//  - structure: sizes, ranges, each partition's chunks once, step (j, i)
//    runs on GPU i, destinations = the partition's chunk range, the order is
//    the identity when the plan says it is not reorganized;
//  - topology: each step's CSC = the graph's in-edges of its destinations
//    with exactly one self-loop each, sources ascending; src_local indexes
//    nbr at src_vid; nbr = sorted unique sources;
//  - transition sets: 𝕅_ij = the vertices of partition i in ∪_k N_kj,
//    ascending; reused = 1 exactly for vertices of 𝕅_i,j-1;
//  - buffers: a reused slot still holds its vertex; a loaded slot holds no
//    vertex needed in this batch and no unflushed gradient; slots of one
//    batch are distinct; every read through src_merged (local slot or
//    remote (gpu, slot)) finds src_vid; remote rows are exactly the
//    non-owned vertices of nbr, ordered by (gpu, slot);
//  - gradients: each vertex of each 𝕅_ij reaches the host exactly once per
//    run of consecutive batches it stays resident, after the run's last
//    batch; nothing is pending at the end;
//  - capacities are the maxima, volumes (both orders) equal the formulas.
// Every pass runs in parallel (OpenMP) over blocks of the lists, and the
// problems found are the same, in the same order, whatever the thread count.
#include <string>
#include <vector>

#include "partition/partition.hpp"
#include "plan/plan.hpp"

namespace ht {

// Problems found, at most `max_problems` messages (a final line says how
// many more); empty when the plan is right for (g_new, p).
std::vector<std::string> check_plan(const Plan& plan, const GraphView& g_new, const Partition& p,
                                    size_t max_problems = 20);

// The checks that need no graph (structure, transition sets from the plan's
// own nbr, buffers, gradients, capacities, volumes); for hand-made plans.
std::vector<std::string> check_plan_comm(const Plan& plan, size_t max_problems = 20);

// check_plan, throwing ht::Error with the problems when there are any.
void verify_plan(const Plan& plan, const GraphView& g_new, const Partition& p);

}  // namespace ht
