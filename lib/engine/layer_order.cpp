#include "engine/layer_order.hpp"

#include "engine/layer_math.hpp"

namespace ht {

const NameTable<GcnOrder>& gcn_order_names() {
  static const NameTable<GcnOrder> names{
      {"auto", GcnOrder::automatic}, {"aggregate", GcnOrder::aggregate_first}, {"transform", GcnOrder::transform_first}};
  return names;
}

std::string name_of(GcnOrder order) { return name_in(gcn_order_names(), order); }

bool transform_first(const ModelConfig& m, GcnOrder order, int l) {
  if (!model_traits(m.kind).gcn_orders) return false;  // the order is GCN's choice: others aggregate first
  switch (order) {
    case GcnOrder::aggregate_first: return false;
    case GcnOrder::transform_first: return true;
    case GcnOrder::automatic: break;
  }
  return m.narrows(l);
}

std::string layer_orders(const ModelConfig& m, GcnOrder order) {
  if (!model_traits(m.kind).gcn_orders) return "";
  std::string out;
  for (int l = 0; l < m.num_layers(); ++l) {
    if (l > 0) out += ',';
    out += name_of(transform_first(m, order, l) ? GcnOrder::transform_first : GcnOrder::aggregate_first);
  }
  return out;
}

int64_t gather_width(const ModelConfig& m, GcnOrder order, int l) {
  return transform_first(m, order, l) ? m.out_width(l) : m.in_width(l);
}

}  // namespace ht
