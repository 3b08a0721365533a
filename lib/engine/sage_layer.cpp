// GraphSAGE's layer math behind the layer seam (layer_math.hpp), PyG
// SAGEConv's default: z = mean_{u in N(v)} x_u W + x_v W_root + b, h = act(z).
// The mean is the sparse product with SAGE's edge weights (1/deg(v), the
// self-loop 0: ModelTraits::mean_weights); x_v is the destination's own row
// of the gathered rows (the self-loop's row, topo.dst_row), copied out with a
// local pull. A transform-first layer's backward gathers x again (as GAT's:
// its products sum over every gathered row); an aggregate-first layer's
// gathers nothing (backward_gathers(opt, l), store_layout.hpp): it reads the
// mean forward stored (ModelTraits::stores_wide_aggregates), as GCN's a^l,
// and x_v loaded as the batch's own rows of h^l (LayerBatch::own, the input
// dropout applied), and returns ∇x through G as before.
//
// The order of the neighbors' products follows GCN's rule
// (ModelConfig::narrows), on the chunk: the gathered rows are always x^l.
//   aggregate-first (the output as wide as the input or wider): one scratch
//     of nd x in (the slot's aggregate rows) holds x_v, then the mean:
//     z = x_v W_root, then z += mean W; the mean is the layer's stored
//     matrix (forward returns it; the store writes it). Backward reads it
//     back into the slot's aggregate rows: z again from x_v (loaded into the
//     slot's h^{l+1} rows, LayerBatch::own: no neighbor row crosses the host
//     link or NVLink; the same values as the gathered row's) and the mean by
//     the same two products, ∇W += meanᵀ ∇z, ∇x += Mᵀ (∇z Wᵀ): the sparse
//     product of width in runs once per batch and epoch, not twice. With an
//     fp32 store the mean read back is the bits forward used, so backward's
//     z and ∇W are today's bits; a 16-bit store rounds it on its way to the
//     store (as GCN's a^l), so backward's z (act's mask) and ∇W take the
//     rounded mean while forward's z took the fp32 one.
//   transform-first (narrower output): t = x W over the gathered rows (SAGE's
//     own buffer, rows x out; range by range, LayerBatch::head_rows),
//     z = M t, then z += x_v W_root. The
//     sparse products run over out columns instead of in. Backward:
//     s = Mᵀ ∇z over the gathered rows (in t's buffer), ∇W += xᵀ s,
//     ∇x += s Wᵀ: no mean at all, nothing stored.
// Backward recomputes z only where the activation's derivative needs it: a
// layer without activation (the last) takes ∇z = ∇h. Forward and backward
// compute z in the same order (the same bits).
#include "engine/layer_math.hpp"

namespace ht {

using engine_detail::view;

namespace layer_detail {
ModelTraits sage_traits();  // below
}  // namespace layer_detail

namespace {

// SAGE's own buffer (sage_buffers): t = x W of a transform-first layer over
// the merged buffer's rows, reused in backward for s = Mᵀ ∇z. None when no
// layer narrows.
std::vector<DeviceBuffer> sage_buffers(const ModelBufferShape& s) {
  std::vector<DeviceBuffer> list;
  if (s.x.max_narrowed == 0) return list;
  DeviceBuffer& b = list.emplace_back();
  b.name = "SAGE transform of the gathered rows";
  b.rows = s.rows;
  b.cols = s.x.max_narrowed;
  return list;
}

class SageLayer final : public LayerMath {
 public:
  SageLayer(const ModelConfig& m, int layer) : LayerMath(m, layer), transform_first_(m.narrows(layer)) {}

  ModelKind kind() const override { return ModelKind::sage; }
  ModelTraits traits() const override { return layer_detail::sage_traits(); }

  DevMat forward(const LayerBatch& b) const override {
    compute_z(b);
    b.d.bias_act(b.Z, b.p.at(b_), act_, b.H);
    // Aggregate-first: the mean, for backward (the store's a^l).
    return transform_first_ ? DevMat{} : scratch(b);
  }

  void backward(const LayerBatch& b) const override {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    // Aggregate-first: the stored mean, read back by the schedule.
    const DevMat S = scratch(b);
    // ∇z = ∇h ⊙ act'(z): z recomputed only for an activation (transform-first
    // it also leaves x_v in S; aggregate-first from the stored mean), and not
    // where the GPU cache holds h^{l+1} (b.out: ReLU's mask, the same bits).
    const bool recompute = act_ != Act::none && !b.out.data;
    DevMat dZ = b.dH;
    if (b.out.data) {
      d.act_backward(b.dH, b.out, act_, b.dZ);
      dZ = b.dZ;
    } else if (recompute) {
      if (transform_first_) {
        compute_z(b);
      } else {
        // x_v loaded (b.own: the Trainer's schedule), or copied out of the
        // gathered rows (a batch that gathered them: test_layer_math) into
        // ∇z's rows (in <= out wide here), free until act' writes ∇z.
        HT_ASSERT(in_w_ <= out_w_);
        DevMat V = b.own;
        if (!V.data) {
          V = view(DevArray<float>{b.dZ.data, b.nd * out_w_}, b.nd, in_w_);
          own_rows(b, V);
        }
        z_root(b, V, 0.0f);
        z_mean(b, S);
      }
      // h is not read after this backward: with x_v loaded into its rows
      // (b.own), ∇z's rows take it instead (act' overwrites them next).
      d.bias_act(b.Z, ly.at(b_), act_, b.own.data ? b.dZ : b.H);
      d.act_backward(b.dH, b.Z, act_, b.dZ);
      dZ = b.dZ;
    }
    if (b_ >= 0) d.col_sum_add(dZ, ly.grad_at(b_));
    if (transform_first_) {
      // The neighbors' part over the gathered rows: s = Mᵀ ∇z (t's buffer,
      // read above), ∇W += xᵀ s, ∇x += s Wᵀ.
      const DevMat T = transformed(b);
      for_each_row_range(b, [&](int64_t r0, int64_t rows) { d.zero(T, r0, rows); });
      d.spmm_transpose_add(b.topo, dZ, T);
      for_each_row_range(b, [&](int64_t r0, int64_t rows) {
        d.gemm(true, false, in_w_, out_w_, rows, 1.0f, b.X.row(r0), in_w_, T.row(r0), out_w_, 1.0f,
               ly.grad_at(w_).data, out_w_);
      });
      if (layer_ > 0)
        for_each_row_range(b, [&](int64_t r0, int64_t rows) {
          d.gemm(false, true, rows, in_w_, out_w_, 1.0f, T.row(r0), out_w_, ly.at(w_).data, out_w_, 1.0f, b.G.row(r0),
                 in_w_);
        });
      if (!recompute) own_rows(b, S);  // else compute_z left x_v in S
    } else {
      // ∇W += meanᵀ ∇z; ∇mean = ∇z Wᵀ (over the mean, read above), ∇x += Mᵀ
      // ∇mean (the self-loop's weight 0 adds nothing).
      d.gemm(true, false, in_w_, out_w_, b.nd, 1.0f, S.data, in_w_, dZ.data, out_w_, 1.0f, ly.grad_at(w_).data,
             out_w_);
      if (layer_ > 0) {
        d.gemm(false, true, b.nd, in_w_, out_w_, 1.0f, dZ.data, out_w_, ly.at(w_).data, out_w_, 0.0f, S.data, in_w_);
        d.spmm_transpose_add(b.topo, S, b.G);
      }
      if (!b.own.data) own_rows(b, S);
    }
    // The root's part: ∇W_root += x_vᵀ ∇z; ∇x_v = ∇z W_rootᵀ, added into the
    // destinations' own rows of G (one row each: a fixed order).
    HT_ASSERT(!transform_first_ || !b.own.data);  // transform-first gathers
    const DevMat V = b.own.data ? b.own : S;
    d.gemm(true, false, in_w_, out_w_, b.nd, 1.0f, V.data, in_w_, dZ.data, out_w_, 1.0f, ly.grad_at(root_).data,
           out_w_);
    if (layer_ > 0) {
      d.gemm(false, true, b.nd, in_w_, out_w_, 1.0f, dZ.data, out_w_, ly.at(root_).data, out_w_, 0.0f, S.data, in_w_);
      d.push_add_to_peer(S, 0, d, b.G, b.topo.dst_row);
    }
  }

 private:
  bool transform_first_ = false;
  const int w_ = param_index("W"), root_ = param_index("W_root"), b_ = param_index("b");

  // The slot's aggregate rows as nd x in: x_v, and aggregate-first the mean.
  DevMat scratch(const LayerBatch& b) const { return view(b.agg, b.nd, in_w_); }

  // Transform-first: t = x W (and in backward s = Mᵀ ∇z) over the buffer's rows.
  DevMat transformed(const LayerBatch& b) const {
    HT_ASSERT(b.scratch.size() == 1);
    return view(b.scratch[0], b.buffer_rows, out_w_);
  }

  // S = x_v: each destination's own row of the gathered rows.
  void own_rows(const LayerBatch& b, DevMat S) const {
    HT_ASSERT(b.topo.dst_row.size == b.nd);
    b.d.pull_from_peer(b.d, b.X, b.topo.dst_row, S, 0);
  }

  // Z without the bias; leaves x_v (transform-first) or the mean
  // (aggregate-first) in the scratch.
  void compute_z(const LayerBatch& b) const {
    Device& d = b.d;
    const LayerParams& ly = b.p;
    const DevMat S = scratch(b);
    if (transform_first_) {
      // t = x W over the gathered rows (every row the topology reads), z = M t, z += x_v W_root.
      const DevMat T = transformed(b);
      for_each_row_range(b, [&](int64_t r0, int64_t rows) {
        d.gemm(false, false, rows, out_w_, in_w_, 1.0f, b.X.row(r0), in_w_, ly.at(w_).data, out_w_, 0.0f, T.row(r0),
               out_w_);
      });
      d.spmm(b.topo, T, b.Z);
      own_rows(b, S);
      d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, S.data, in_w_, ly.at(root_).data, out_w_, 1.0f, b.Z.data, out_w_);
      return;
    }
    own_rows(b, S);
    z_root(b, S, 0.0f);
    d.spmm(b.topo, b.X, S);  // the mean: SAGE's edge weights
    z_mean(b, S);
  }

  // z = x_v W_root + beta z (x_v in V: nd x in).
  void z_root(const LayerBatch& b, DevMat V, float beta) const {
    b.d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, V.data, in_w_, b.p.at(root_).data, out_w_, beta, b.Z.data,
             out_w_);
  }
  // Aggregate-first: z += mean W (the mean in S).
  void z_mean(const LayerBatch& b, DevMat S) const {
    b.d.gemm(false, false, b.nd, out_w_, in_w_, 1.0f, S.data, in_w_, b.p.at(w_).data, out_w_, 1.0f, b.Z.data, out_w_);
  }
};

}  // namespace

namespace layer_detail {

std::unique_ptr<LayerMath> make_sage_layer(const ModelConfig& m, int layer) {
  return std::make_unique<SageLayer>(m, layer);
}

ModelTraits sage_traits() {
  ModelTraits t;
  // Transform-first layers: ∇W sums over every gathered row. Those that store
  // their mean do not gather (backward_gathers(opt, l): x_v loaded as own rows).
  t.backward_gathers = true;
  t.stores_wide_aggregates = true;  // the mean of an aggregate-first layer (no second sparse product)
  t.edge_weights = true;      // the mean's 1/deg
  t.mean_weights = true;
  t.weight_matrices = 2;  // W, W_root
  t.buffers = sage_buffers;
  return t;
}

}  // namespace layer_detail
}  // namespace ht
