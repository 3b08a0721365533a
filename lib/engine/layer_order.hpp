#pragma once
// Order of a GCN layer's two products. Both give the same result up to float
// rounding; they differ in what moves and what is aggregated:
//   aggregate-first: a = Â x, z = a W. Chunks gather and aggregate rows of the
//     layer's INPUT width; a is cached for backward (no neighbor reload).
//   transform-first: t = x W on each vertex's owner (a vertex-wise pass), then
//     z = Â t. Chunks gather and aggregate rows of the OUTPUT width; backward
//     takes ReLU's mask from h^{l+1} (nothing cached), returns ∇t (output
//     width), then a vertex-wise pass computes ∇W and ∇x.
// `automatic` picks transform-first where the output is narrower than the
// input (SPEC §10: transfer the narrower width; ModelConfig::narrows). GAT
// layers always transform on the chunk and gather the input width; SAGE
// layers gather the input width and, by the same rule, transform the
// gathered rows on the chunk where the output is narrower (sage_layer.cpp):
// this order, which --gcn-order sets, is GCN's only.
#include <cstdint>
#include <string>

#include "core/names.hpp"
#include "models/model.hpp"

namespace ht {

enum class GcnOrder { automatic, aggregate_first, transform_first };

// "auto", "aggregate", "transform": ht-train --gcn-order; layer_orders() and
// the metrics file name each layer's order with them.
const NameTable<GcnOrder>& gcn_order_names();
std::string name_of(GcnOrder order);

// Whether layer l runs transform-first.
bool transform_first(const ModelConfig& m, GcnOrder order, int l);

// The order each layer runs in, e.g. "aggregate,transform" ("" for GAT).
std::string layer_orders(const ModelConfig& m, GcnOrder order);

// Width of the rows layer l gathers from host, aggregates and returns
// gradients for: the output width when transform-first, else the input width.
int64_t gather_width(const ModelConfig& m, GcnOrder order, int l);

}  // namespace ht
