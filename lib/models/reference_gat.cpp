// GAT layer of the reference trainer (PyG GATConv semantics):
//   g = x W (head k in columns [k*o, (k+1)*o)), s_u = att_src[k]·g_u[k], t_v = att_dst[k]·g_v[k],
//   e_uv = LeakyReLU(s_u + t_v), α = softmax over the in-edges of v (self-loop included),
//   β = α · attention-dropout factor, out_v[k] = Σ_u β_uv g_u[k];
//   hidden layers: z = concat_k out[k] + b; output layer: z = mean_k out[k] + b.
#include <algorithm>
#include <cmath>

#include "models/reference.hpp"

namespace ht {
namespace {

// Per-head dot products of g's head blocks with att [heads, o].
void head_scores(const RefMatrix& g, const RefMatrix& att, RefMatrix* out) {
  const int64_t heads = att.rows, o = att.cols;
  out->assign(g.rows, heads);
#pragma omp parallel for schedule(static) if(g.rows >= kRefParallelRows)
  for (int64_t v = 0; v < g.rows; ++v)
    for (int64_t k = 0; k < heads; ++k) {
      double s = 0;
      for (int64_t j = 0; j < o; ++j) s += att.at(k, j) * g.at(v, k * o + j);
      out->at(v, k) = s;
    }
}

}  // namespace

void ReferenceTrainer::gat_forward(int l, int epoch, bool training, const LayerParams& p) {
  RefLayerState& s = layers_[static_cast<size_t>(l)];
  const int64_t heads = cfg_.layer_heads(l), o = cfg_.dims[l + 1], n = topo_.num_vertices;
  const bool concat = !cfg_.is_last(l);
  const double slope = cfg_.leaky_slope;
  ref_matmul(s.input_rows, p.W, &s.transform);
  const RefMatrix& g = s.transform;
  head_scores(g, p.att_src, &s.score_src);
  head_scores(g, p.att_dst, &s.score_dst);

  const int64_t m = topo_.num_edges();
  s.pre_attn.assign(m, heads);
  s.alpha.assign(m, heads);
  s.attn_mask.assign(m, heads);
  const bool drop = training && cfg_.attn_dropout > 0;
  const double scale = drop ? 1.0 / (1.0 - static_cast<double>(cfg_.attn_dropout)) : 1.0;
  s.z.assign(n, concat ? heads * o : o);
#pragma omp parallel for schedule(dynamic, 64) if(n >= kRefParallelRows)
  for (int64_t v = 0; v < n; ++v) {
    const int64_t e0 = topo_.offsets[v], e1 = topo_.offsets[v + 1];
    double* zv = s.z.row(v);
    for (int64_t k = 0; k < heads; ++k) {
      double mx = -INFINITY;
      for (int64_t e = e0; e < e1; ++e) {
        const double pre = s.score_src.at(topo_.src[e], k) + s.score_dst.at(v, k);
        s.pre_attn.at(e, k) = pre;
        mx = std::max(mx, pre > 0 ? pre : slope * pre);
      }
      double sum = 0;
      for (int64_t e = e0; e < e1; ++e) {
        const double pre = s.pre_attn.at(e, k);
        const double ex = std::exp((pre > 0 ? pre : slope * pre) - mx);
        s.alpha.at(e, k) = ex;
        sum += ex;
      }
      for (int64_t e = e0; e < e1; ++e) {
        const double a = s.alpha.at(e, k) / sum;
        s.alpha.at(e, k) = a;
        double f = 1.0;
        if (drop)
          f = attn_dropout_keep(cfg_.seed, epoch, l, static_cast<int>(k), topo_.src[e], v, cfg_.attn_dropout)
                  ? scale
                  : 0.0;
        s.attn_mask.at(e, k) = f;
        const double beta = a * f;
        if (beta == 0.0) continue;
        const double* gu = g.row(topo_.src[e]) + k * o;
        double* out = concat ? zv + k * o : zv;
        const double w = concat ? beta : beta / static_cast<double>(heads);
        for (int64_t j = 0; j < o; ++j) out[j] += w * gu[j];
      }
    }
    for (int64_t j = 0; j < s.z.cols; ++j) zv[j] += p.b[j];
  }
}

void ReferenceTrainer::gat_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx) {
  const RefLayerState& s = layers_[static_cast<size_t>(l)];
  const int64_t heads = cfg_.layer_heads(l), o = cfg_.dims[l + 1], n = topo_.num_vertices;
  const bool concat = !cfg_.is_last(l);
  const double slope = cfg_.leaky_slope;
  const RefMatrix& g = s.transform;

  // ∇out_v[k]: the head's block of dz (concat) or dz / heads (mean).
  RefMatrix dout;
  dout.assign(n, heads * o);
  for (int64_t v = 0; v < n; ++v)
    for (int64_t k = 0; k < heads; ++k)
      for (int64_t j = 0; j < o; ++j)
        dout.at(v, k * o + j) = concat ? dz.at(v, k * o + j) : dz.at(v, j) / static_cast<double>(heads);

  // Per destination: ∇ of the pre-LeakyReLU scores through softmax and dropout.
  const int64_t m = topo_.num_edges();
  RefMatrix dpre, dt;  // [E', heads], [N, heads]
  dpre.assign(m, heads);
  dt.assign(n, heads);
#pragma omp parallel for schedule(dynamic, 64) if(n >= kRefParallelRows)
  for (int64_t v = 0; v < n; ++v) {
    const int64_t e0 = topo_.offsets[v], e1 = topo_.offsets[v + 1];
    for (int64_t k = 0; k < heads; ++k) {
      const double* dov = dout.row(v) + k * o;
      double dot = 0;  // Σ_e α_e ∇α_e
      for (int64_t e = e0; e < e1; ++e) {
        const double* gu = g.row(topo_.src[e]) + k * o;
        double dbeta = 0;
        for (int64_t j = 0; j < o; ++j) dbeta += dov[j] * gu[j];
        const double dalpha = dbeta * s.attn_mask.at(e, k);
        dpre.at(e, k) = dalpha;  // holds ∇α until the next loop
        dot += s.alpha.at(e, k) * dalpha;
      }
      for (int64_t e = e0; e < e1; ++e) {
        const double de = s.alpha.at(e, k) * (dpre.at(e, k) - dot);
        const double d = de * (s.pre_attn.at(e, k) > 0 ? 1.0 : slope);
        dpre.at(e, k) = d;
        dt.at(v, k) += d;
      }
    }
  }

  // Per source: ∇g_u through the messages and through the source scores.
  RefMatrix dg, ds;
  dg.assign(n, heads * o);
  ds.assign(n, heads);
#pragma omp parallel for schedule(dynamic, 64) if(n >= kRefParallelRows)
  for (int64_t u = 0; u < n; ++u) {
    double* dgu = dg.row(u);
    for (int64_t q = topo_.out_offsets[u]; q < topo_.out_offsets[u + 1]; ++q) {
      const int64_t e = topo_.out_edges[q];
      const double* dov = dout.row(topo_.dst[e]);
      for (int64_t k = 0; k < heads; ++k) {
        ds.at(u, k) += dpre.at(e, k);
        const double beta = s.alpha.at(e, k) * s.attn_mask.at(e, k);
        for (int64_t j = 0; j < o; ++j) dgu[k * o + j] += beta * dov[k * o + j];
      }
    }
    for (int64_t k = 0; k < heads; ++k)
      for (int64_t j = 0; j < o; ++j)
        dgu[k * o + j] += ds.at(u, k) * p.att_src.at(k, j) + dt.at(u, k) * p.att_dst.at(k, j);
  }

  std::vector<double> datt_src(static_cast<size_t>(heads * o), 0.0), datt_dst(datt_src.size(), 0.0);
  for (int64_t u = 0; u < n; ++u)
    for (int64_t k = 0; k < heads; ++k)
      for (int64_t j = 0; j < o; ++j) {
        datt_src[k * o + j] += ds.at(u, k) * g.at(u, k * o + j);
        datt_dst[k * o + j] += dt.at(u, k) * g.at(u, k * o + j);
      }
  accumulate(p.iatt_src, datt_src);
  accumulate(p.iatt_dst, datt_dst);

  RefMatrix dW;
  ref_matmul_tn(s.input_rows, dg, &dW);
  accumulate(p.iW, dW.data);
  if (dx) ref_matmul_nt(dg, p.W, dx);
}

}  // namespace ht
