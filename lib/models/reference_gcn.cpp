// GCN layer of the reference trainer: a = Â x, z = a W + b.
#include <algorithm>

#include "models/reference.hpp"

namespace ht {

namespace {

// a = Â x with x and a as sparse rows: each destination row is accumulated in
// a dense scratch row (contributions per column in edge order), then its
// touched columns are emitted in ascending order.
RefSparseRows aggregate(const RefTopology& topo, const std::vector<double>& coef, const RefSparseRows& x) {
  const int64_t n = x.rows;
  std::vector<std::vector<int32_t>> index(static_cast<size_t>(n));
  std::vector<std::vector<double>> values(static_cast<size_t>(n));
#pragma omp parallel if(n >= kRefParallelRows)
  {
    std::vector<double> acc(static_cast<size_t>(x.cols), 0.0);
    std::vector<char> touched(static_cast<size_t>(x.cols), 0);
    std::vector<int32_t> cols;
#pragma omp for schedule(dynamic, 64)
    for (int64_t v = 0; v < n; ++v) {
      cols.clear();
      for (int64_t e = topo.offsets[v]; e < topo.offsets[v + 1]; ++e) {
        const double c = coef[e];
        const int64_t u = topo.src[e];
        for (int64_t q = x.offsets[u]; q < x.offsets[u + 1]; ++q) {
          const int32_t j = x.index[q];
          if (!touched[j]) touched[j] = 1, cols.push_back(j);
          acc[j] += c * x.values[q];
        }
      }
      std::sort(cols.begin(), cols.end());
      index[v] = cols;
      values[v].reserve(cols.size());
      for (int32_t j : cols) {
        values[v].push_back(acc[j]);
        acc[j] = 0.0;
        touched[j] = 0;
      }
    }
  }
  RefSparseRows a;
  a.rows = n;
  a.cols = x.cols;
  a.offsets.assign(static_cast<size_t>(n + 1), 0);
  for (int64_t v = 0; v < n; ++v) {
    a.offsets[v + 1] = a.offsets[v] + static_cast<int64_t>(index[v].size());
    a.index.insert(a.index.end(), index[v].begin(), index[v].end());
    a.values.insert(a.values.end(), values[v].begin(), values[v].end());
  }
  return a;
}

}  // namespace

void ReferenceTrainer::gcn_forward(int l, const LayerParams& p) {
  RefLayerState& s = layers_[static_cast<size_t>(l)];
  s.aggregate = aggregate(topo_, gcn_coef_, s.input_rows);
  ref_matmul(s.aggregate, p.W, &s.z);
  for (int64_t v = 0; v < s.z.rows; ++v)
    for (int64_t j = 0; j < s.z.cols; ++j) s.z.at(v, j) += p.b[j];
}

void ReferenceTrainer::gcn_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx) {
  const RefLayerState& s = layers_[static_cast<size_t>(l)];
  RefMatrix dW;
  ref_matmul_tn(s.aggregate, dz, &dW);
  accumulate(p.iW, dW.data);
  if (!dx) return;
  RefMatrix da;
  ref_matmul_nt(dz, p.W, &da);
  dx->assign(da.rows, da.cols);
  ref_add_transpose_product(topo_, gcn_coef_, da, dx);  // dx = Âᵀ da
}

}  // namespace ht
