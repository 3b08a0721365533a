// GraphSAGE layer of the reference trainer (PyG SAGEConv's default):
// z = M x W + x W_root + b, M the neighbors' mean (sage_coef_, the self-loop
// weighted 0). The neighbors' products in the engine's order
// (engine/sage_layer.cpp, ModelConfig::narrows): aggregate-first, m = M x
// then m W; transform-first (a narrower output), t = x W then M t, and in
// backward s = Mᵀ ∇z, ∇W = xᵀ s, ∇x = s Wᵀ + ∇z W_rootᵀ.
#include "models/reference.hpp"

namespace ht {

namespace {

// out_v = Σ_{e = u -> v} coef_e x_u (M x), dense: a destination's row
// touches the union of its neighbors' columns.
RefMatrix mean_of(const RefTopology& topo, const std::vector<double>& coef, const RefSparseRows& x) {
  RefMatrix out;
  out.assign(x.rows, x.cols);
#pragma omp parallel for schedule(dynamic, 64) if(x.rows >= kRefParallelRows)
  for (int64_t v = 0; v < x.rows; ++v) {
    double* ov = out.row(v);
    for (int64_t e = topo.offsets[v]; e < topo.offsets[v + 1]; ++e) {
      const double c = coef[e];
      if (c == 0.0) continue;  // the self-loop
      const int64_t u = topo.src[e];
      for (int64_t q = x.offsets[u]; q < x.offsets[u + 1]; ++q) ov[x.index[q]] += c * x.values[q];
    }
  }
  return out;
}

}  // namespace

void ReferenceTrainer::sage_forward(int l, const LayerParams& p) {
  RefLayerState& s = layers_[static_cast<size_t>(l)];
  const RefSparseRows& x = s.input_rows;
  if (cfg_.narrows(l)) {  // transform-first: z = M (x W)
    RefMatrix t;
    ref_matmul(x, p.W, &t);
    s.aggregate = {};
    s.z = mean_of(topo_, sage_coef_, ref_nonzeros(t));
  } else {
    s.aggregate = ref_nonzeros(mean_of(topo_, sage_coef_, x));
    ref_matmul(s.aggregate, p.W, &s.z);
  }
  RefMatrix root;
  ref_matmul(x, p.W_root, &root);
  for (int64_t v = 0; v < s.z.rows; ++v)
    for (int64_t j = 0; j < s.z.cols; ++j) s.z.at(v, j) += root.at(v, j) + p.b[j];
}

void ReferenceTrainer::sage_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx) {
  const RefLayerState& s = layers_[static_cast<size_t>(l)];
  RefMatrix dW, dW_root;
  RefMatrix ds;  // transform-first: s = Mᵀ ∇z over every vertex
  if (cfg_.narrows(l)) {
    ds.assign(dz.rows, dz.cols);
    ref_add_transpose_product(topo_, sage_coef_, dz, &ds);
    ref_matmul_tn(s.input_rows, ds, &dW);
  } else {
    ref_matmul_tn(s.aggregate, dz, &dW);
  }
  accumulate(p.iW, dW.data);
  ref_matmul_tn(s.input_rows, dz, &dW_root);
  accumulate(p.iW_root, dW_root.data);
  if (!dx) return;
  ref_matmul_nt(dz, p.W_root, dx);  // the root term: ∇x_v = ∇z_v W_rootᵀ
  RefMatrix dmean;
  if (cfg_.narrows(l)) {  // ∇x += s Wᵀ
    ref_matmul_nt(ds, p.W, &dmean);
    for (size_t i = 0; i < dx->data.size(); ++i) dx->data[i] += dmean.data[i];
    return;
  }
  ref_matmul_nt(dz, p.W, &dmean);
  ref_add_transpose_product(topo_, sage_coef_, dmean, dx);  // ∇x += Mᵀ (∇z Wᵀ)
}

}  // namespace ht
