// GCN's layer math behind the layer seam (layer_math.hpp): z = Â x W + b in
// either order of the products (layer_order.hpp), h = act(z).
//   aggregate-first: forward a = Â x (cached in the store for backward), z = a W;
//     backward recomputes z, h from the cached a (no neighbor reload), or
//     where the GPU cache holds h in fp32, takes ReLU's mask from it.
//   transform-first: t = x W on each vertex's owner (`transform`, in the
//     Trainer's vertex-wise passes or fused into the layer before's batches),
//     forward z = Â t; backward returns ∇t = Âᵀ ∇z, of which the vertex-wise
//     `transform_backward` makes ∇W and ∇x.
#include "engine/layer_math.hpp"

namespace ht {

using engine_detail::view;

namespace layer_detail {
ModelTraits gcn_traits();  // below
}  // namespace layer_detail

namespace {

class GcnLayer final : public LayerMath {
 public:
  GcnLayer(const ModelConfig& m, GcnOrder order, int layer)
      : LayerMath(m, layer), transform_first_(ht::transform_first(m, order, layer)) {}

  ModelKind kind() const override { return ModelKind::gcn; }
  ModelTraits traits() const override { return layer_detail::gcn_traits(); }
  bool transform_first() const override { return transform_first_; }

  DevMat forward(const LayerBatch& b) const override {
    Device& d = b.d;
    DevMat A{};
    if (transform_first_) {
      d.spmm(b.topo, b.X, b.Z);  // z = Â t
    } else {
      A = view(b.agg, b.nd, in_w_);
      d.spmm(b.topo, b.X, A);  // cached: a^l for backward
      d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, A.data, in_w_, b.p.at(w_).data, out_w_, 0.0f, b.Z.data, out_w_);
    }
    d.bias_act(b.Z, b.p.at(b_), act_, b.H);
    return A;
  }

  // h^{l+1} recomputed from the cached aggregate: no neighbor reload.
  void recompute_output(const LayerBatch& b) const override {
    if (transform_first_) return;
    Device& d = b.d;
    DevMat A = view(b.agg, b.nd, in_w_);
    d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, A.data, in_w_, b.p.at(w_).data, out_w_, 0.0f, b.Z.data, out_w_);
    d.bias_act(b.Z, b.p.at(b_), act_, b.H);
  }

  void backward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    if (transform_first_) {
      // ∇z = ∇h ⊙ relu'(z), and relu'(z) = [h > 0]: h^{l+1}, already on host, is the mask,
      // so z needs no cache and no neighbor reload. The last layer has no activation.
      HT_ASSERT(act_ == Act::relu || act_ == Act::none);
      if (act_ == Act::relu) d.act_backward(b.dH, b.H, act_, b.dZ);
      const DevMat dT = act_ == Act::relu ? b.dZ : b.dH;
      if (b_ >= 0) d.col_sum_add(dT, ly.grad_at(b_));
      d.spmm_transpose_add(b.topo, dT, b.G);  // ∇t = Âᵀ ∇z
      return;
    }
    DevMat A = view(b.agg, b.nd, in_w_);
    // z from recompute_output, or ReLU's mask from the cached h^{l+1} (b.out).
    d.act_backward(b.dH, b.out.data ? b.out : b.Z, act_, b.dZ);
    d.gemm(true, false, in_w_, out_w_, b.nd, 1.0f, A.data, in_w_, b.dZ.data, out_w_, 1.0f, ly.grad_at(w_).data, out_w_);
    if (b_ >= 0) d.col_sum_add(b.dZ, ly.grad_at(b_));
    if (layer_ > 0) {  // ∇a = ∇z Wᵀ (into a's rows, read above), ∇x = Âᵀ ∇a
      d.gemm(false, true, b.nd, in_w_, out_w_, 1.0f, b.dZ.data, out_w_, ly.at(w_).data, out_w_, 0.0f, A.data, in_w_);
      d.spmm_transpose_add(b.topo, A, b.G);
    }
  }

  void transform(Device& d, DevMat X, DevMat T, const LayerParams& p) const override {
    HT_ASSERT(transform_first_ && X.cols == in_w_ && T.rows == X.rows && T.cols == out_w_);
    d.gemm(false, false, X.rows, out_w_, in_w_, 1.0f, X.data, in_w_, p.at(w_).data, out_w_, 0.0f, T.data, out_w_);
  }

  void transform_backward(Device& d, DevMat X, DevMat dT, DevMat dX, LayerParams& p) const override {
    HT_ASSERT(transform_first_ && X.cols == in_w_ && dT.rows == X.rows && dT.cols == out_w_);
    const int64_t nd = X.rows;
    d.gemm(true, false, in_w_, out_w_, nd, 1.0f, X.data, in_w_, dT.data, out_w_, 1.0f, p.grad_at(w_).data, out_w_);
    if (dX.data) d.gemm(false, true, nd, in_w_, out_w_, 1.0f, dT.data, out_w_, p.at(w_).data, out_w_, 0.0f, dX.data, in_w_);
  }

 private:
  bool transform_first_ = false;
  const int w_ = param_index("W"), b_ = param_index("b");
};

}  // namespace

namespace layer_detail {

std::unique_ptr<LayerMath> make_gcn_layer(const ModelConfig& m, GcnOrder order, int layer) {
  return std::make_unique<GcnLayer>(m, order, layer);
}

ModelTraits gcn_traits() {
  ModelTraits t;
  t.backward_gathers = false;  // backward reads the cached aggregate (or ∇t)
  t.edge_weights = true;       // Â's normalization
  t.stores_layer_matrix = true;
  t.gcn_orders = true;  // aggregate-first or transform-first (layer_order.hpp)
  static constexpr const char* kOptions[] = {"--gcn-order"};
  t.options = kOptions;
  return t;
}

}  // namespace layer_detail
}  // namespace ht
