// The layer seam's factory: the one place that lists the models' layer
// implementations (layer_math.hpp).
#include "engine/layer_math.hpp"

#include <string>

#include <fmt/format.h>

namespace ht {

// The implementations, one file per model, each defining its two functions:
// adding a model adds its file and its cases here.
namespace layer_detail {
std::unique_ptr<LayerMath> make_gcn_layer(const ModelConfig& m, GcnOrder order, int layer);  // gcn_layer.cpp
ModelTraits gcn_traits();
std::unique_ptr<LayerMath> make_gat_layer(const ModelConfig& m, int layer);  // gat_layer.cpp
ModelTraits gat_traits();
std::unique_ptr<LayerMath> make_sage_layer(const ModelConfig& m, int layer);  // sage_layer.cpp
ModelTraits sage_traits();
}  // namespace layer_detail

Act to_act(Activation a) {
  switch (a) {
    case Activation::relu: return Act::relu;
    case Activation::elu: return Act::elu;
    case Activation::none: break;
  }
  return Act::none;
}

LayerMath::LayerMath(const ModelConfig& m, int layer)
    : layer_(layer),
      in_w_(m.in_width(layer)),
      out_w_(m.out_width(layer)),
      tw_(m.transform_width(layer)),
      heads_(m.layer_heads(layer)),
      last_(m.is_last(layer)),
      leaky_slope_(m.leaky_slope),
      act_(to_act(m.activation(layer))) {
  params_ = layer_param_specs(m, layer);
}

int LayerMath::param_index(const char* what) const {
  for (size_t k = 0; k < params_.size(); ++k)
    if (params_[k].what == what) return static_cast<int>(k);
  return -1;
}

void LayerMath::transform(Device&, DevMat, DevMat, const LayerParams&) const {
  throw Error(fmt::format("internal error: layer {} of model {} has no vertex-wise transform", layer_,
                          name_of(kind())));
}

void LayerMath::transform_backward(Device&, DevMat, DevMat, DevMat, LayerParams&) const {
  throw Error(fmt::format("internal error: layer {} of model {} has no vertex-wise transform backward", layer_,
                          name_of(kind())));
}

namespace {

[[noreturn]] void refuse_kind(ModelKind kind, const char* what) {
  std::string known;
  for (const auto& [name, k] : model_kind_names()) known += (known.empty() ? "" : ", ") + name;
  throw Error(fmt::format("{}: model kind {} has no layer implementation (the known kinds: {})", what,
                          static_cast<int>(kind), known));
}

}  // namespace

std::unique_ptr<LayerMath> make_layer_math(const ModelConfig& m, GcnOrder order, int layer) {
  HT_CHECK(layer >= 0 && layer < m.num_layers(), "make_layer_math: layer {} of a model of {} layers", layer,
           m.num_layers());
  switch (m.kind) {
    case ModelKind::gcn: return layer_detail::make_gcn_layer(m, order, layer);
    case ModelKind::gat: return layer_detail::make_gat_layer(m, layer);
    case ModelKind::sage: return layer_detail::make_sage_layer(m, layer);
  }
  refuse_kind(m.kind, "make_layer_math");
}

ModelTraits model_traits(ModelKind kind) {
  switch (kind) {
    case ModelKind::gcn: return layer_detail::gcn_traits();
    case ModelKind::gat: return layer_detail::gat_traits();
    case ModelKind::sage: return layer_detail::sage_traits();
  }
  refuse_kind(kind, "model_traits");
}

}  // namespace ht
