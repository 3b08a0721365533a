// GraphSAGE's layer math behind the layer seam (layer_math.hpp), PyG
// SAGEConv's default: z = mean_{u in N(v)} x_u W + x_v W_root + b, h = act(z).
// The mean is the sparse product with SAGE's edge weights (1/deg(v), the
// self-loop 0: ModelTraits::mean_weights); x_v is the destination's own row
// of the gathered rows (the self-loop's row, topo.dst_row), copied out with a
// local pull. Aggregate-first only. Nothing is stored for backward: backward
// gathers x again (as GAT's) and recomputes both products, so it works out of
// core with no store matrix of its own.
//
// One scratch of nd x in (the slot's aggregate rows) holds x_v, then the
// mean: z = x_v W_root, then z += mean W, in the same order in forward and
// backward (the same bits of z).
#include "engine/layer_math.hpp"

namespace ht {

using engine_detail::view;

namespace layer_detail {
ModelTraits sage_traits();  // below
}  // namespace layer_detail

namespace {

class SageLayer final : public LayerMath {
 public:
  SageLayer(const ModelConfig& m, int layer) : LayerMath(m, layer) {}

  ModelKind kind() const override { return ModelKind::sage; }
  ModelTraits traits() const override { return layer_detail::sage_traits(); }

  DevMat forward(const LayerBatch& b) const override {
    compute_z(b);
    b.d.bias_act(b.Z, b.p.at(b_), act_, b.H);
    return {};
  }

  void backward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    DevMat S = compute_z(b);  // holds the mean now
    d.bias_act(b.Z, ly.at(b_), act_, b.H);
    d.act_backward(b.dH, b.Z, act_, b.dZ);
    if (b_ >= 0) d.col_sum_add(b.dZ, ly.grad_at(b_));
    // The neighbors' part: ∇W += meanᵀ ∇z; ∇mean = ∇z Wᵀ (over the mean, read
    // above), ∇x += Mᵀ ∇mean (the self-loop's weight 0 adds nothing).
    d.gemm(true, false, in_w_, out_w_, b.nd, 1.0f, S.data, in_w_, b.dZ.data, out_w_, 1.0f, ly.grad_at(w_).data, out_w_);
    if (layer_ > 0) {
      d.gemm(false, true, b.nd, in_w_, out_w_, 1.0f, b.dZ.data, out_w_, ly.at(w_).data, out_w_, 0.0f, S.data, in_w_);
      d.spmm_transpose_add(b.topo, S, b.G);
    }
    // The root's part: ∇W_root += x_vᵀ ∇z; ∇x_v = ∇z W_rootᵀ, added into the
    // destinations' own rows of G (one row each: a fixed order).
    own_rows(b, S);
    d.gemm(true, false, in_w_, out_w_, b.nd, 1.0f, S.data, in_w_, b.dZ.data, out_w_, 1.0f, ly.grad_at(root_).data, out_w_);
    if (layer_ > 0) {
      d.gemm(false, true, b.nd, in_w_, out_w_, 1.0f, b.dZ.data, out_w_, ly.at(root_).data, out_w_, 0.0f, S.data, in_w_);
      d.push_add_to_peer(S, 0, d, b.G, b.topo.dst_row);
    }
  }

 private:
  const int w_ = param_index("W"), root_ = param_index("W_root"), b_ = param_index("b");

  // The slot's aggregate rows as nd x in: the scratch of both products.
  DevMat scratch(const LayerBatch& b) const { return view(b.agg, b.nd, in_w_); }

  // S = x_v: each destination's own row of the gathered rows.
  void own_rows(const LayerBatch& b, DevMat S) const {
    HT_ASSERT(b.topo.dst_row.size == b.nd);
    b.d.pull_from_peer(b.d, b.X, b.topo.dst_row, S, 0);
  }

  // Z = x_v W_root + mean W; returns the scratch, which holds the mean.
  DevMat compute_z(const LayerBatch& b) const {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const DevMat S = scratch(b);
    own_rows(b, S);
    d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, S.data, in_w_, ly.at(root_).data, out_w_, 0.0f, b.Z.data, out_w_);
    d.spmm(b.topo, b.X, S);  // the mean: SAGE's edge weights
    d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, S.data, in_w_, ly.at(w_).data, out_w_, 1.0f, b.Z.data, out_w_);
    return S;
  }
};

}  // namespace

namespace layer_detail {

std::unique_ptr<LayerMath> make_sage_layer(const ModelConfig& m, int layer) {
  return std::make_unique<SageLayer>(m, layer);
}

ModelTraits sage_traits() {
  ModelTraits t;
  t.backward_gathers = true;  // recomputes the mean and x_v from the gathered rows
  t.edge_weights = true;      // the mean's 1/deg
  t.mean_weights = true;
  t.weight_matrices = 2;  // W, W_root
  return t;
}

}  // namespace layer_detail
}  // namespace ht
