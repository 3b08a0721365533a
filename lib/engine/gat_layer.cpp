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

// GAT's own buffers on one device (gat_buffers below, in this order).
struct AttentionBuffers {
  DevArray<float> gt, dgt;                        // buffer_rows x max transform width
  DevArray<float> pre, score, alpha, alpha_drop;  // max_edges x max heads
  explicit AttentionBuffers(std::span<const DevArray<float>> s) {
    HT_ASSERT(s.size() == 6);
    gt = s[0], dgt = s[1], pre = s[2], score = s[3], alpha = s[4], alpha_drop = s[5];
  }
};

std::vector<DeviceBuffer> gat_buffers(const ModelBufferShape& s) {
  std::vector<DeviceBuffer> list;
  auto add = [&](const char* name, int64_t rows, int64_t cols) -> DeviceBuffer& {
    DeviceBuffer& b = list.emplace_back();
    b.name = name;
    b.rows = rows;
    b.cols = cols;
    return b;
  };
  add("GAT transform", s.rows, s.x.max_tw);
  add("GAT transform gradient", s.rows, s.x.max_tw);
  for (const char* name : {"attention pre-activations", "attention scores", "attention coefficients",
                           "attention coefficients after dropout"})
    add(name, s.ne, s.x.max_heads);
  // gat_backward's per-edge gradients (Device::gat_scratch, reserved by setup).
  add("GAT backward scratch", s.ne, s.x.max_heads).site = BufferSite::reserved;
  return list;
}

class GatLayer final : public LayerMath {
 public:
  GatLayer(const ModelConfig& m, int layer) : LayerMath(m, layer) {}

  ModelKind kind() const override { return ModelKind::gat; }
  ModelTraits traits() const override { return layer_detail::gat_traits(); }

  DevMat forward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const AttentionBuffers s(b.scratch);
    DevMat Gt = view(s.gt, b.buffer_rows, tw_);
    transform(b, b.X, Gt);
    d.gat_scores(b.topo, Gt, ly.at(src_), ly.at(dst_), heads_, leaky_slope_, s.pre, s.score);
    d.gat_softmax(b.topo, heads_, s.score, s.alpha, s.alpha_drop, b.attn);
    d.gat_aggregate(b.topo, Gt, s.alpha_drop, heads_, last_, b.Z);
    d.bias_act(b.Z, ly.at(b_), act_, b.H);
    return {};
  }

  void backward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const AttentionBuffers s(b.scratch);
    const DevMat X = b.X;  // x^l, gathered again (the products: range by range)
    DevMat Gt = view(s.gt, b.buffer_rows, tw_), dGt = view(s.dgt, b.buffer_rows, tw_);
    transform(b, X, Gt);
    d.gat_scores(b.topo, Gt, ly.at(src_), ly.at(dst_), heads_, leaky_slope_, s.pre, s.score);
    d.gat_softmax(b.topo, heads_, s.score, s.alpha, s.alpha_drop, b.attn);
    d.gat_aggregate(b.topo, Gt, s.alpha_drop, heads_, last_, b.Z);
    d.bias_act(b.Z, ly.at(b_), act_, b.H);
    d.act_backward(b.dH, b.Z, act_, b.dZ);
    if (b_ >= 0) d.col_sum_add(b.dZ, ly.grad_at(b_));
    d.gat_backward(b.topo, Gt, ly.at(src_), ly.at(dst_), heads_, leaky_slope_, last_, s.pre, s.alpha, s.alpha_drop,
                   b.attn, b.dZ, dGt, ly.grad_at(src_), ly.grad_at(dst_));
    for_each_row_range(b, [&](int64_t r0, int64_t rows) {
      d.gemm(true, false, in_w_, tw_, rows, 1.0f, X.row(r0), in_w_, dGt.row(r0), tw_, 1.0f, ly.grad_at(w_).data, tw_);
      if (layer_ > 0)
        d.gemm(false, true, rows, in_w_, tw_, 1.0f, dGt.row(r0), tw_, ly.at(w_).data, tw_, 1.0f, b.G.row(r0), in_w_);
    });
  }

 private:
  // Gt = X W over the gathered rows, range by range (for_each_row_range):
  // not over the other remote area, which this step does not read.
  void transform(const LayerBatch& b, DevMat X, DevMat Gt) const {
    for_each_row_range(b, [&](int64_t r0, int64_t rows) {
      b.d.gemm(false, false, rows, tw_, in_w_, 1.0f, X.row(r0), in_w_, b.p.at(w_).data, tw_, 0.0f, Gt.row(r0), tw_);
    });
  }

  const int w_ = param_index("W"), src_ = param_index("att_src"), dst_ = param_index("att_dst"),
            b_ = param_index("b");
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
  t.buffers = gat_buffers;
  static constexpr const char* kOptions[] = {"--heads", "--out-heads", "--attn-dropout"};
  t.options = kOptions;
  return t;
}

}  // namespace layer_detail
}  // namespace ht
