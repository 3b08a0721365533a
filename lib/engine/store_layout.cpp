#include "engine/store_layout.hpp"

#include "engine/layer_math.hpp"
#include "engine/layer_order.hpp"

namespace ht {

const char* store_kind_name(StoreKind k) {
  switch (k) {
    case StoreKind::features: return "features";
    case StoreKind::output: return "outputs";
    case StoreKind::gradient: return "gradients";
    case StoreKind::aggregate: return "aggregates";
    case StoreKind::transform: return "transforms";
  }
  return "?";
}

std::vector<StoreMatrix> store_matrices(const TrainerOptions& opt) {
  const ModelConfig& m = opt.model;
  std::vector<StoreMatrix> out{{StoreKind::features, 0, m.dims.front()}};
  for (int l = 0; l < m.num_layers(); ++l) {
    if (stores_h(opt, l + 1)) out.push_back({StoreKind::output, l + 1, m.out_width(l)});
    if (stores_grad(opt, l + 1)) out.push_back({StoreKind::gradient, l + 1, m.out_width(l)});
    if (stores_layer_matrix(opt, l))  // GCN's a^l, or t^l when transform-first; SAGE's mean
      out.push_back({transform_first(m, opt.gcn_order, l) ? StoreKind::transform : StoreKind::aggregate, l,
                     gather_width(m, opt.gcn_order, l)});
  }
  return out;
}

bool stores_layer_matrix(const TrainerOptions& opt, int l) {
  const ModelTraits t = model_traits(opt.model.kind);
  return t.stores_layer_matrix || (t.stores_wide_aggregates && !opt.model.narrows(l));
}

bool backward_gathers(const TrainerOptions& opt, int l) {
  const ModelTraits t = model_traits(opt.model.kind);
  return t.backward_gathers && !(t.stores_wide_aggregates && stores_layer_matrix(opt, l));
}

int64_t store_columns(const std::vector<StoreMatrix>& matrices, StoreKind kind) {
  int64_t c = 0;
  for (const StoreMatrix& s : matrices)
    if (s.kind == kind) c += s.cols;
  return c;
}

}  // namespace ht
