// GAT's layer math behind the layer seam (layer_math.hpp): g = x W (heads
// side by side), attention scores, their softmax over each destination's
// in-edges (attention dropout on α), z = Σ α g + b, h = act(z). Backward
// gathers the neighbors again and recomputes the forward (nothing cached).
#include "engine/layer_math.hpp"

namespace ht {

using engine_detail::view;

namespace layer_detail {
ModelTraits gat_traits();  // below
}  // namespace layer_detail

namespace {

class GatLayer final : public LayerMath {
 public:
  GatLayer(const ModelConfig& m, int layer) : LayerMath(m, layer) {}

  ModelKind kind() const override { return ModelKind::gat; }
  ModelTraits traits() const override { return layer_detail::gat_traits(); }

  DevMat forward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const AttentionBuffers& s = b.att;
    DevMat Gt = view(s.gt, b.buffer_rows, tw_);
    d.gemm(false, false, b.active_rows, tw_, in_w_, 1.0f, b.X.data, in_w_, ly.W.data, tw_, 0.0f, Gt.data, tw_);
    d.gat_scores(b.topo, Gt, ly.att_src, ly.att_dst, heads_, leaky_slope_, s.pre, s.score);
    d.gat_softmax(b.topo, heads_, s.score, s.alpha, s.alpha_drop, b.attn);
    d.gat_aggregate(b.topo, Gt, s.alpha_drop, heads_, last_, b.Z);
    d.bias_act(b.Z, ly.b, act_, b.H);
    return {};
  }

  void backward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const AttentionBuffers& s = b.att;
    const DevMat X = b.X;  // x^l, gathered again (the products: its active rows)
    DevMat Gt = view(s.gt, b.buffer_rows, tw_), dGt = view(s.dgt, b.buffer_rows, tw_);
    d.gemm(false, false, b.active_rows, tw_, in_w_, 1.0f, X.data, in_w_, ly.W.data, tw_, 0.0f, Gt.data, tw_);
    d.gat_scores(b.topo, Gt, ly.att_src, ly.att_dst, heads_, leaky_slope_, s.pre, s.score);
    d.gat_softmax(b.topo, heads_, s.score, s.alpha, s.alpha_drop, b.attn);
    d.gat_aggregate(b.topo, Gt, s.alpha_drop, heads_, last_, b.Z);
    d.bias_act(b.Z, ly.b, act_, b.H);
    d.act_backward(b.dH, b.Z, act_, b.dZ);
    if (ly.db.size) d.col_sum_add(b.dZ, ly.db);
    d.gat_backward(b.topo, Gt, ly.att_src, ly.att_dst, heads_, leaky_slope_, last_, s.pre, s.alpha, s.alpha_drop,
                   b.attn, b.dZ, dGt, ly.d_att_src, ly.d_att_dst);
    d.gemm(true, false, in_w_, tw_, b.active_rows, 1.0f, X.data, in_w_, dGt.data, tw_, 1.0f, ly.dW.data, tw_);
    if (layer_ > 0)
      d.gemm(false, true, b.active_rows, in_w_, tw_, 1.0f, dGt.data, tw_, ly.W.data, tw_, 1.0f, b.G.data, in_w_);
  }
};

}  // namespace

namespace layer_detail {

std::unique_ptr<LayerMath> make_gat_layer(const ModelConfig& m, int layer) {
  return std::make_unique<GatLayer>(m, layer);
}

ModelTraits gat_traits() {
  ModelTraits t;
  t.backward_gathers = true;  // backward recomputes the attention from the neighbors
  t.edge_keys = true;         // attention dropout keyed by edge
  t.attention = true;
  t.buffer_wide_products = true;  // the transform of the gathered rows
  return t;
}

}  // namespace layer_detail
}  // namespace ht
