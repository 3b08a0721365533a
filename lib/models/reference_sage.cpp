// GraphSAGE layer of the reference trainer (PyG SAGEConv's default): the
// neighbors' mean m = M x (M: sage_coef_, the self-loop weighted 0), then
// z = m W + x W_root + b.
#include "models/reference.hpp"

namespace ht {

void ReferenceTrainer::sage_forward(int l, const LayerParams& p) {
  RefLayerState& s = layers_[static_cast<size_t>(l)];
  const RefSparseRows& x = s.input_rows;
  RefMatrix mean;  // dense: a destination's row touches the union of its neighbors' columns
  mean.assign(x.rows, x.cols);
#pragma omp parallel for schedule(dynamic, 64) if(x.rows >= kRefParallelRows)
  for (int64_t v = 0; v < x.rows; ++v) {
    double* mv = mean.row(v);
    for (int64_t e = topo_.offsets[v]; e < topo_.offsets[v + 1]; ++e) {
      const double c = sage_coef_[e];
      if (c == 0.0) continue;  // the self-loop
      const int64_t u = topo_.src[e];
      for (int64_t q = x.offsets[u]; q < x.offsets[u + 1]; ++q) mv[x.index[q]] += c * x.values[q];
    }
  }
  s.aggregate = ref_nonzeros(mean);
  ref_matmul(s.aggregate, p.W, &s.z);
  RefMatrix root;
  ref_matmul(x, p.W_root, &root);
  for (int64_t v = 0; v < s.z.rows; ++v)
    for (int64_t j = 0; j < s.z.cols; ++j) s.z.at(v, j) += root.at(v, j) + p.b[j];
}

void ReferenceTrainer::sage_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx) {
  const RefLayerState& s = layers_[static_cast<size_t>(l)];
  RefMatrix dW, dW_root;
  ref_matmul_tn(s.aggregate, dz, &dW);
  accumulate(p.iW, dW.data);
  ref_matmul_tn(s.input_rows, dz, &dW_root);
  accumulate(p.iW_root, dW_root.data);
  if (!dx) return;
  RefMatrix dmean;
  ref_matmul_nt(dz, p.W, &dmean);
  ref_matmul_nt(dz, p.W_root, dx);  // the root term: ∇x_v = ∇z_v W_rootᵀ
  // dx_u += Σ_{e = u -> v} coef_e dmean_v (Mᵀ dmean), gathered per source.
#pragma omp parallel for schedule(dynamic, 64) if(dmean.rows >= kRefParallelRows)
  for (int64_t u = 0; u < dmean.rows; ++u) {
    double* xu = dx->row(u);
    for (int64_t k = topo_.out_offsets[u]; k < topo_.out_offsets[u + 1]; ++k) {
      const int64_t e = topo_.out_edges[k];
      const double c = sage_coef_[e];
      const double* dv = dmean.row(topo_.dst[e]);
      for (int64_t j = 0; j < dmean.cols; ++j) xu[j] += c * dv[j];
    }
  }
}

}  // namespace ht
