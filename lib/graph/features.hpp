#pragma once
// Feature matrices in another dtype: widening 16-bit features to fp32
// (exact) and narrowing fp32 ones to bf16 / fp16 (round to nearest even,
// core/half.hpp), for the graph writer (`ht-convert --feature-dtype`) and
// the consumers that need fp32 values of a 16-bit file.
#include <cstdint>
#include <span>
#include <vector>

#include "core/half.hpp"
#include "graph/graph.hpp"

namespace ht {

// The whole feature matrix in fp32 (N * F values; empty without features).
std::vector<float> widen_features(const GraphView& g);

// x (rows of `dim` values) rounded once to `t` (bf16 or fp16). A finite value
// that the dtype cannot hold (fp16: beyond ±65504; bf16: beyond ~±3.39e38)
// throws ht::Error naming the vertex and column (and its input id when
// `orig_ids` is given); NaN and ±Inf stay NaN and ±Inf.
std::vector<uint16_t> narrow_features(std::span<const float> x, int32_t dim, StoreDtype t,
                                      std::span<const int64_t> orig_ids = {});

// g's features converted to `t` in place (16-bit to another 16-bit dtype
// widens and rounds again: two roundings of the original values).
void convert_features(Graph& g, StoreDtype t);

}  // namespace ht
