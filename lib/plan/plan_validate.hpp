#pragma once
// Cheap consistency checks of a plan, in time linear in the plan's size: what
// a forged but resealed plan could use to make the engine allocate too much
// or compute something else without an error.
//  - the per-GPU maxima (capacities, max_dst, max_edges) equal the real
//    maxima over the GPU's steps (not merely bound them);
//  - every edge's source agrees across its three encodings: nbr[src_local],
//    the row its merged index names (a transition slot's vertex, or a remote
//    row), and src_vid;
//  - transition slots hold one vertex each per step, a reused row is in the
//    previous step's same slot;
//  - every remote row reads the slot its vertex has on its owner GPU in the
//    same batch;
//  - every flushed slot holds the flushed vertex.
// read_plan derives every list but nbr, offsets and src_local from the file
// (plan_derive.hpp), so that the three encodings of a source, the slots of
// remote rows and flushes agree by construction there; it checks the maxima
// (find_capacity_mismatch). find_plan_inconsistency checks a plan from any
// source. The full symbolic check (the plan computes what the graph says)
// stays in ht-reorganize --check (partition/plan_check.hpp).
#include <string>

#include "plan/plan.hpp"

namespace ht {

// "" when consistent, else the first problem ("step S (batch j, GPU i): ...").
std::string find_plan_inconsistency(const Plan& plan);

// The first check alone: "" when the per-GPU maxima are the real maxima
// over the GPU's steps, else which one differs.
std::string find_capacity_mismatch(const Plan& plan);

}  // namespace ht
