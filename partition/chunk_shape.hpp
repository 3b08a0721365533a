#pragma once
// The sizes of the plan that build_plan would make for a partition
// (plan/plan_shape.hpp), computed from the graph in its file's ids: no
// renumbered graph, no chunk topologies, no slots or merged indices. What is
// built is what the sizes depend on: each chunk's neighbor set (one pass over
// the edges), the batch order (Algorithm 4 and the cost comparison, as
// build_plan does) and the batch unions. `ht-train --chunks auto` sizes the
// GPU working set of candidate chunk counts with it (train/chunk_choice.hpp).
#include "partition/partition.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_shape.hpp"

namespace ht {

// shape_of(build_plan(renumber(g, p), p, opt)) without building the plan
// (tests hold the two equal). `g` is the graph in old ids (the graph file's).
PlanShape partition_plan_shape(const GraphView& g, const Partition& p, const PlanBuildOptions& opt = {});

// A shape no larger, in every size the GPU memory need grows with, than the
// one above, whatever the batch order: the same chunks, remote rows and
// neighbor sets; as transition set of a step only its own chunk's rows of its
// partition, all of them reused and none flushed; as transition capacity of
// GPU i the most rows of partition i any one chunk reads. One pass over the
// edges, no batch order: a quick test that a budget is too small.
PlanShape partition_plan_shape_bound(const GraphView& g, const Partition& p);

}  // namespace ht
