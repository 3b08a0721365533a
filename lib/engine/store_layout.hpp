#pragma once
// The vertex store's matrices one by one (what Trainer's constructor
// allocates: h^0, then per layer h^{l+1}, ∇x^{l+1} and the layer's stored
// matrix: GCN's cached aggregate or transform, SAGE's mean; less what stays
// on the device), so that planners can say
// which kind of data the memory goes to. Every matrix has N rows; summed,
// the columns are vertex_store_bytes' (tests/test_host_memory_plan.cpp).
#include <cstdint>
#include <vector>

#include "engine/trainer_options.hpp"

namespace ht {

enum class StoreKind { features, output, gradient, aggregate, transform };

// "features", "outputs", "gradients", "aggregates", "transforms".
const char* store_kind_name(StoreKind k);

struct StoreMatrix {
  StoreKind kind = StoreKind::features;
  int layer = 0;  // h^layer / ∇x^layer for outputs and gradients; the layer for aggregates and transforms
  int64_t cols = 0;
};

std::vector<StoreMatrix> store_matrices(const TrainerOptions& opt);

// Whether layer l keeps a matrix in the store for its backward (store_.agg[l]):
// every GCN layer (a^l, or t^l when transform-first), SAGE's layers that
// aggregate first (the mean; ModelTraits::stores_wide_aggregates), no GAT layer.
bool stores_layer_matrix(const TrainerOptions& opt, int l);

// Whether layer l's backward gathers its neighbors' rows again (the merged
// buffer, P2P pulls): GAT's layers (ModelTraits::backward_gathers) and SAGE's
// transform-first ones, whose ∇W sums over every gathered row. A SAGE layer
// that stores its mean needs only it and x_v, its destinations' own rows,
// which backward loads as a batch's own rows (Trainer::issue_loads); GCN's
// layers read what forward stored.
bool backward_gathers(const TrainerOptions& opt, int l);

// Columns of every matrix of `kind`, summed.
int64_t store_columns(const std::vector<StoreMatrix>& matrices, StoreKind kind);

}  // namespace ht
