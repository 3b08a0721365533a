// GAT kernels: edge scores, edge softmax (+ attention dropout), weighted
// aggregation, and their backward. Heads sit side by side in g (head h owns
// columns [h*f, (h+1)*f)).
#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "cuda/device_math.cuh"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kWarps = 8;

__device__ __forceinline__ int64_t gthread() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// One thread per (edge, head).
__global__ void scores_kernel(int64_t num_dst, const int64_t* offsets, const uint32_t* src, const uint32_t* dst_row,
                              const uint32_t* edge_dst, int64_t num_edges, const float* g, int64_t gcols,
                              const float* att_src, const float* att_dst, int heads, float slope, float* pre,
                              float* score) {
  const int64_t f = gcols / heads;
  for (int64_t i = gthread(); i < num_edges * heads; i += gstride()) {
    const int64_t e = i / heads;
    const int h = static_cast<int>(i % heads);
    const float* gs = g + static_cast<int64_t>(src[e]) * gcols + h * f;
    const float* gd = g + static_cast<int64_t>(dst_row[edge_dst[e]]) * gcols + h * f;
    float s = 0.f;
    for (int64_t j = 0; j < f; ++j) s += att_src[h * f + j] * gs[j] + att_dst[h * f + j] * gd[j];
    pre[i] = s;
    score[i] = s > 0.f ? s : slope * s;
  }
}

// One thread per (destination, head).
__global__ void softmax_kernel(int64_t num_dst, const int64_t* offsets, int heads, const float* score, float* alpha,
                               float* alpha_drop, DropoutSpec attn, const int64_t* src_key, const int64_t* dst_key) {
  for (int64_t i = gthread(); i < num_dst * heads; i += gstride()) {
    const int64_t d = i / heads;
    const int h = static_cast<int>(i % heads);
    const int64_t b = offsets[d], en = offsets[d + 1];
    float mx = -INFINITY;
    for (int64_t e = b; e < en; ++e) mx = fmaxf(mx, score[e * heads + h]);
    float sum = 0.f;
    for (int64_t e = b; e < en; ++e) sum += expf(score[e * heads + h] - mx);
    for (int64_t e = b; e < en; ++e) {
      const float a = expf(score[e * heads + h] - mx) / sum;
      alpha[e * heads + h] = a;
      alpha_drop[e * heads + h] = attn.active ? a * attn_scale(attn, h, src_key[e], dst_key[e]) : a;
    }
  }
}

// One warp per destination; lanes over output columns.
__global__ void aggregate_kernel(int64_t num_dst, const int64_t* offsets, const uint32_t* src, const float* g,
                                 int64_t gcols, const float* alpha_drop, int heads, bool mean, float* out,
                                 int64_t out_cols) {
  const int lane = threadIdx.x & 31;
  const int64_t f = gcols / heads;
  for (int64_t d = gthread() >> 5; d < num_dst; d += gstride() >> 5) {
    const int64_t b = offsets[d], en = offsets[d + 1];
    for (int64_t c = lane; c < out_cols; c += 32) {
      float acc = 0.f;
      for (int64_t e = b; e < en; ++e) {
        const float* gs = g + static_cast<int64_t>(src[e]) * gcols;
        if (mean) {
          for (int h = 0; h < heads; ++h) acc += alpha_drop[e * heads + h] * gs[h * f + c];
        } else {
          acc += alpha_drop[e * heads + c / f] * gs[c];
        }
      }
      out[d * out_cols + c] = mean ? acc / heads : acc;
    }
  }
}

__device__ __forceinline__ float dout_at(const float* dout, int64_t dout_cols, bool mean, int heads, int64_t f,
                                         int64_t d, int h, int64_t j) {
  return mean ? dout[d * dout_cols + j] / heads : dout[d * dout_cols + h * f + j];
}

// Per (destination, head): dalpha, softmax backward, LeakyReLU backward -> dpre.
__global__ void dpre_kernel(int64_t num_dst, const int64_t* offsets, const uint32_t* src, const float* g,
                            int64_t gcols, int heads, float slope, bool mean, const float* pre, const float* alpha,
                            DropoutSpec attn, const int64_t* src_key, const int64_t* dst_key, const float* dout,
                            int64_t dout_cols, float* dpre) {
  const int64_t f = gcols / heads;
  for (int64_t i = gthread(); i < num_dst * heads; i += gstride()) {
    const int64_t d = i / heads;
    const int h = static_cast<int>(i % heads);
    const int64_t b = offsets[d], en = offsets[d + 1];
    float dot = 0.f;
    for (int64_t e = b; e < en; ++e) {
      const float* gs = g + static_cast<int64_t>(src[e]) * gcols + h * f;
      float da = 0.f;
      for (int64_t j = 0; j < f; ++j) da += dout_at(dout, dout_cols, mean, heads, f, d, h, j) * gs[j];
      if (attn.active) da *= attn_scale(attn, h, src_key[e], dst_key[e]);
      dpre[e * heads + h] = da;
      dot += alpha[e * heads + h] * da;
    }
    for (int64_t e = b; e < en; ++e) {
      const float ds = alpha[e * heads + h] * (dpre[e * heads + h] - dot);
      dpre[e * heads + h] = ds * (pre[e * heads + h] > 0.f ? 1.f : slope);
    }
  }
}

// One warp per source row: aggregation term + att_src term (overwrites dg row).
__global__ void dg_src_kernel(int64_t num_rows, const int64_t* t_offsets, const uint32_t* t_edge,
                              const uint32_t* edge_dst, int64_t gcols, int heads, bool mean, const float* att_src,
                              const float* alpha_drop, const float* dpre, const float* dout, int64_t dout_cols,
                              float* dg) {
  const int lane = threadIdx.x & 31;
  const int64_t f = gcols / heads;
  for (int64_t r = gthread() >> 5; r < num_rows; r += gstride() >> 5) {
    const int64_t b = t_offsets[r], en = t_offsets[r + 1];
    for (int64_t c = lane; c < gcols; c += 32) {
      const int h = static_cast<int>(c / f);
      const int64_t j = c % f;
      float acc = 0.f;
      for (int64_t k = b; k < en; ++k) {
        const uint32_t e = t_edge[k];
        acc += alpha_drop[e * heads + h] * dout_at(dout, dout_cols, mean, heads, f, edge_dst[e], h, j) +
               dpre[e * heads + h] * att_src[c];
      }
      dg[r * gcols + c] = acc;
    }
  }
}

// One warp per destination: att_dst term into the destination's own row.
__global__ void dg_dst_kernel(int64_t num_dst, const int64_t* offsets, const uint32_t* dst_row, int64_t gcols,
                              int heads, const float* att_dst, const float* dpre, float* dg) {
  const int lane = threadIdx.x & 31;
  const int64_t f = gcols / heads;
  for (int64_t d = gthread() >> 5; d < num_dst; d += gstride() >> 5) {
    const int64_t b = offsets[d], en = offsets[d + 1];
    float* row = dg + static_cast<int64_t>(dst_row[d]) * gcols;
    for (int64_t c = lane; c < gcols; c += 32) {
      const int h = static_cast<int>(c / f);
      float acc = 0.f;
      for (int64_t e = b; e < en; ++e) acc += dpre[e * heads + h];
      row[c] += acc * att_dst[c];
    }
  }
}

// Attention-vector gradients in a fixed order: each block sums a tile of
// edges per column into its partial row, then one thread per column adds the
// partials in block order (atomics made GAT runs differ in their last bits
// from run to run).
__global__ void datt_kernel(int64_t num_edges, const uint32_t* src, const uint32_t* dst_row, const uint32_t* edge_dst,
                            const float* g, int64_t gcols, int heads, const float* dpre, int64_t edges_per_block,
                            float* part_src, float* part_dst) {
  const int64_t f = gcols / heads;
  const int64_t e0 = blockIdx.x * edges_per_block, e1 = min(num_edges, e0 + edges_per_block);
  for (int64_t c = threadIdx.x; c < gcols; c += blockDim.x) {
    const int h = static_cast<int>(c / f);
    float as = 0.f, ad = 0.f;
    for (int64_t e = e0; e < e1; ++e) {
      const float dp = dpre[e * heads + h];
      as += dp * g[static_cast<int64_t>(src[e]) * gcols + c];
      ad += dp * g[static_cast<int64_t>(dst_row[edge_dst[e]]) * gcols + c];
    }
    part_src[blockIdx.x * gcols + c] = as;
    part_dst[blockIdx.x * gcols + c] = ad;
  }
}

__global__ void datt_finish_kernel(const float* part_src, const float* part_dst, int64_t blocks, int64_t gcols,
                                   float* d_att_src, float* d_att_dst) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= gcols) return;
  float as = 0.f, ad = 0.f;
  for (int64_t b = 0; b < blocks; ++b) {
    as += part_src[b * gcols + c];
    ad += part_dst[b * gcols + c];
  }
  d_att_src[c] += as;
  d_att_dst[c] += ad;
}

unsigned grid_for(int64_t threads) {
  const unsigned b = blocks_for(threads, 256);
  return b > (1u << 20) ? (1u << 20) : b;
}

}  // namespace

void gat_scores(const DevTopology& t, const float* g, int64_t gcols, const float* att_src, const float* att_dst,
                int heads, float slope, float* pre, float* score, cudaStream_t s) {
  if (t.num_edges == 0) return;
  scores_kernel<<<grid_for(t.num_edges * heads), 256, 0, s>>>(t.num_dst, t.offsets.data, t.src.data, t.dst_row.data,
                                                              t.edge_dst.data, t.num_edges, g, gcols, att_src,
                                                              att_dst, heads, slope, pre, score);
  HT_CUDA_CHECK_LAST();
}

void gat_softmax(const DevTopology& t, int heads, const float* score, float* alpha, float* alpha_drop,
                 const DropoutSpec& attn, cudaStream_t s) {
  if (t.num_dst == 0) return;
  softmax_kernel<<<grid_for(t.num_dst * heads), 256, 0, s>>>(t.num_dst, t.offsets.data, heads, score, alpha,
                                                             alpha_drop, attn, t.edge_src_key.data,
                                                             t.edge_dst_key.data);
  HT_CUDA_CHECK_LAST();
}

void gat_aggregate(const DevTopology& t, const float* g, int64_t gcols, const float* alpha_drop, int heads, bool mean,
                   float* out, int64_t out_cols, cudaStream_t s) {
  if (t.num_dst == 0) return;
  aggregate_kernel<<<grid_for(t.num_dst * 32), 32 * kWarps, 0, s>>>(t.num_dst, t.offsets.data, t.src.data, g, gcols,
                                                                    alpha_drop, heads, mean, out, out_cols);
  HT_CUDA_CHECK_LAST();
}

void gat_backward(const DevTopology& t, const float* g, int64_t gcols, const float* att_src, const float* att_dst,
                  int heads, float slope, bool mean, const float* pre, const float* alpha, const float* alpha_drop,
                  const DropoutSpec& attn, const float* dout, int64_t dout_cols, float* dg, float* d_att_src,
                  float* d_att_dst, float* scratch, cudaStream_t s) {
  HT_CUDA_TRY(cudaMemsetAsync(dg, 0, static_cast<size_t>(t.num_src_rows * gcols) * sizeof(float), s));
  if (t.num_edges == 0) return;
  dpre_kernel<<<grid_for(t.num_dst * heads), 256, 0, s>>>(t.num_dst, t.offsets.data, t.src.data, g, gcols, heads,
                                                          slope, mean, pre, alpha, attn, t.edge_src_key.data,
                                                          t.edge_dst_key.data, dout, dout_cols, scratch);
  HT_CUDA_CHECK_LAST();
  dg_src_kernel<<<grid_for(t.num_src_rows * 32), 32 * kWarps, 0, s>>>(
      t.num_src_rows, t.t_offsets.data, t.t_edge.data, t.edge_dst.data, gcols, heads, mean, att_src, alpha_drop,
      scratch, dout, dout_cols, dg);
  HT_CUDA_CHECK_LAST();
  dg_dst_kernel<<<grid_for(t.num_dst * 32), 32 * kWarps, 0, s>>>(t.num_dst, t.offsets.data, t.dst_row.data, gcols,
                                                                 heads, att_dst, scratch, dg);
  HT_CUDA_CHECK_LAST();
  // Partials after the per-edge values in the scratch (gat_backward_scratch_floats).
  const int64_t blocks = std::min<int64_t>(blocks_for(t.num_edges, 256), kDattBlocks);
  const int64_t per_block = (t.num_edges + blocks - 1) / blocks;
  float* part_src = scratch + t.num_edges * heads;
  float* part_dst = part_src + blocks * gcols;
  datt_kernel<<<blocks, 128, 0, s>>>(t.num_edges, t.src.data, t.dst_row.data, t.edge_dst.data, g, gcols, heads,
                                     scratch, per_block, part_src, part_dst);
  HT_CUDA_CHECK_LAST();
  datt_finish_kernel<<<blocks_for(gcols, 256), 256, 0, s>>>(part_src, part_dst, blocks, gcols, d_att_src, d_att_dst);
  HT_CUDA_CHECK_LAST();
}

int64_t gat_backward_scratch_floats(int64_t edges, int heads, int64_t gcols) {
  return edges * heads + 2 * kDattBlocks * gcols;
}

}  // namespace ht::cuda
