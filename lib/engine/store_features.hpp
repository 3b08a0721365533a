#pragma once
// Where the graph's features enter the vertex store (h^0), for every pair of
// feature dtype (graph file) and store dtype (--host-dtype): the bytes as
// they are when the two agree, else converted row by row (a 16-bit file into
// an fp32 store widens, exactly; fp32 into a 16-bit store rounds once to
// nearest even; bf16 into fp16 or fp16 into bf16 widens and rounds again).
#include "engine/executor.hpp"
#include "graph/graph.hpp"

namespace ht {

// Throws when a feature of `g` is beyond fp16's range or not finite (the
// check of --host-dtype fp16, for features of any dtype).
void check_f16_range(const GraphView& g);

// h^0 = g's features in dst's dtype (dst: N x F, on the host or a device).
void fill_feature_store(Executor& exec, const HostMat& dst, const GraphView& g);

}  // namespace ht
