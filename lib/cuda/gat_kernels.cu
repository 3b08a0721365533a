// GAT kernels: edge scores, edge softmax (+ attention dropout), weighted
// aggregation, and their backward. Heads sit side by side in g (head h owns
// columns [h*f, (h+1)*f)). Per-row reductions take a warp per row and a
// block per row of more than kLongRowEdges edges (hubs); per-edge work a warp
// per edge; the aggregation and its transpose are spmm_rows with a weight per
// edge and head.
#include <algorithm>

#include "cuda/cuda_check.hpp"
#include "cuda/device_math.cuh"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kWarps = 8;

__device__ __forceinline__ int64_t gthread() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t gstride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ __forceinline__ int64_t global_warp() { return gthread() >> 5; }
__device__ __forceinline__ int64_t num_warps() { return gstride() >> 5; }

// The sum of v over the warp, the same bits in every lane (butterfly: each
// lane adds the same pairs).
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Each row's score terms per head, a warp per row (lanes over the head's
// columns): el[r, h] = att_src_h . g[r]_h, er[r, h] = att_dst_h . g[r]_h.
// An edge's score then reads two numbers per head instead of two rows.
__global__ void row_scores_kernel(int64_t rows, const float* g, int64_t gcols, const float* att_src,
                                  const float* att_dst, int heads, float* el, float* er) {
  const int lane = threadIdx.x & 31;
  const int64_t f = gcols / heads;
  for (int64_t r = global_warp(); r < rows; r += num_warps()) {
    const float* gr = g + r * gcols;
    for (int h = 0; h < heads; ++h) {
      float ps = 0.f, pd = 0.f;
      for (int64_t c = h * f + lane; c < (h + 1) * f; c += 32) {
        ps += att_src[c] * gr[c];
        pd += att_dst[c] * gr[c];
      }
      ps = warp_sum(ps);
      pd = warp_sum(pd);
      if (lane == 0) {
        el[r * heads + h] = ps;
        er[r * heads + h] = pd;
      }
    }
  }
}

// One thread per (edge, head): pre = el[src] + er[dst], score = LeakyReLU(pre).
__global__ void scores_kernel(const uint32_t* src, const uint32_t* dst_row, const uint32_t* edge_dst, int64_t num_edges,
                              int heads, const float* el, const float* er, float slope, float* pre, float* score) {
  for (int64_t i = gthread(); i < num_edges * heads; i += gstride()) {
    const int64_t e = i / heads;
    const int h = static_cast<int>(i - e * heads);
    const float p = el[static_cast<int64_t>(src[e]) * heads + h] + er[static_cast<int64_t>(dst_row[edge_dst[e]]) * heads + h];
    pre[i] = p;
    score[i] = p > 0.f ? p : slope * p;
  }
}

// Rows of a topology taken by groups of THREADS threads: THREADS == 32, a
// warp per row of at most kLongRowEdges edges; else a block per long row
// (at its first segment in seg_row), so that a hub's 10^5 edges are not one
// warp's. Every thread of a group sees the same rows (the group's reductions
// need all of them).
template <int THREADS>
struct RowGroups {
  static constexpr int kThreads = THREADS;
  int64_t count;  // rows (warps) or segments (blocks)
  const int64_t* offsets;
  const uint32_t* seg_row;
  __device__ int64_t first() const { return THREADS == 32 ? global_warp() : blockIdx.x; }
  __device__ int64_t step() const { return THREADS == 32 ? num_warps() : gridDim.x; }
  __device__ int rank() const { return THREADS == 32 ? threadIdx.x & 31 : threadIdx.x; }
  // The row of item `it`, or -1 when it is another group's.
  __device__ int64_t row(int64_t it) const {
    if constexpr (THREADS == 32) return offsets[it + 1] - offsets[it] > kLongRowEdges ? -1 : it;
    else return it > 0 && seg_row[it - 1] == seg_row[it] ? -1 : static_cast<int64_t>(seg_row[it]);
  }
};

constexpr int kGroupBlock = 256;  // threads of a long row's block
__device__ __shared__ float group_partial[kGroupBlock / 32];

// Sum / max over the group, the same bits in every thread: warps first, then
// the warps' results in warp order.
template <int THREADS>
__device__ __forceinline__ float group_sum(float v) {
  v = warp_sum(v);
  if constexpr (THREADS == 32) {
    return v;
  } else {
    if ((threadIdx.x & 31) == 0) group_partial[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = group_partial[0];
    for (int w = 1; w < THREADS / 32; ++w) s += group_partial[w];
    __syncthreads();
    return s;
  }
}
template <int THREADS>
__device__ __forceinline__ float group_max(float v) {
  v = warp_max(v);
  if constexpr (THREADS == 32) {
    return v;
  } else {
    if ((threadIdx.x & 31) == 0) group_partial[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = group_partial[0];
    for (int w = 1; w < THREADS / 32; ++w) s = fmaxf(s, group_partial[w]);
    __syncthreads();
    return s;
  }
}

// Edge softmax per (destination, head), a group per destination: max, sum of
// exponentials, then alpha (and alpha with attention dropout).
template <int THREADS>
__global__ void softmax_kernel(RowGroups<THREADS> rows, int heads, const float* score, float* alpha,
                               float* alpha_drop, DropoutSpec attn, const int64_t* src_key, const int64_t* dst_key) {
  for (int64_t it = rows.first(); it < rows.count; it += rows.step()) {
    const int64_t d = rows.row(it);
    if (d < 0) continue;
    const int64_t b = rows.offsets[d], en = rows.offsets[d + 1];
    for (int h = 0; h < heads; ++h) {
      float mx = -INFINITY;
      for (int64_t e = b + rows.rank(); e < en; e += THREADS) mx = fmaxf(mx, score[e * heads + h]);
      mx = group_max<THREADS>(mx);
      float sum = 0.f;
      for (int64_t e = b + rows.rank(); e < en; e += THREADS) sum += expf(score[e * heads + h] - mx);
      sum = group_sum<THREADS>(sum);
      for (int64_t e = b + rows.rank(); e < en; e += THREADS) {
        const float a = expf(score[e * heads + h] - mx) / sum;
        alpha[e * heads + h] = a;
        alpha_drop[e * heads + h] = attn.active ? a * attn_scale(attn, h, src_key[e], dst_key[e]) : a;
      }
    }
  }
}

// Mean over several heads (GAT's output layer with --out-heads > 1): one
// warp per destination; lanes over output columns.
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

// One warp per edge, lanes over a head's columns: dalpha = dout[dst]_h .
// g[src]_h per head (times the attention-dropout scale) into dpre.
__global__ void dalpha_kernel(const uint32_t* src, const uint32_t* edge_dst, int64_t num_edges, const float* g,
                              int64_t gcols, int heads, bool mean, DropoutSpec attn, const int64_t* src_key,
                              const int64_t* dst_key, const float* dout, int64_t dout_cols, float* dpre) {
  const int lane = threadIdx.x & 31;
  const int64_t f = gcols / heads;
  for (int64_t e = global_warp(); e < num_edges; e += num_warps()) {
    const int64_t d = edge_dst[e];
    const float* gs = g + static_cast<int64_t>(src[e]) * gcols;
    for (int h = 0; h < heads; ++h) {
      float p = 0.f;
      for (int64_t j = lane; j < f; j += 32) p += dout_at(dout, dout_cols, mean, heads, f, d, h, j) * gs[h * f + j];
      p = warp_sum(p);
      if (lane == 0) dpre[e * heads + h] = attn.active ? p * attn_scale(attn, h, src_key[e], dst_key[e]) : p;
    }
  }
}

// Softmax and LeakyReLU backward per (destination, head), a group per
// destination: dpre holds dalpha; dot = Σ alpha dalpha, then dpre =
// alpha (dalpha - dot) LeakyReLU'(pre).
template <int THREADS>
__global__ void softmax_backward_kernel(RowGroups<THREADS> rows, int heads, float slope, const float* pre,
                                        const float* alpha, float* dpre) {
  for (int64_t it = rows.first(); it < rows.count; it += rows.step()) {
    const int64_t d = rows.row(it);
    if (d < 0) continue;
    const int64_t b = rows.offsets[d], en = rows.offsets[d + 1];
    for (int h = 0; h < heads; ++h) {
      float dot = 0.f;
      for (int64_t e = b + rows.rank(); e < en; e += THREADS) dot += alpha[e * heads + h] * dpre[e * heads + h];
      dot = group_sum<THREADS>(dot);
      for (int64_t e = b + rows.rank(); e < en; e += THREADS) {
        const float ds = alpha[e * heads + h] * (dpre[e * heads + h] - dot);
        dpre[e * heads + h] = ds * (pre[e * heads + h] > 0.f ? 1.f : slope);
      }
    }
  }
}

// The attention vectors' terms of dg, a group per row: dg[out_row(r)]_h +=
// att_h * Σ dpre[e]_h over the row's edges (forward rows: destinations, att =
// att_dst, out_row = dst_row; transposed rows: source rows, att = att_src);
// the sums are kept in sums[r, h].
template <int THREADS, bool TRANSPOSE>
__global__ void attention_rows_kernel(RowGroups<THREADS> rows, const uint32_t* edge_of, const uint32_t* out_row,
                                      int64_t gcols, int heads, const float* att, const float* dpre, float* dg,
                                      float* sums) {
  const int64_t f = gcols / heads;
  for (int64_t it = rows.first(); it < rows.count; it += rows.step()) {
    const int64_t r = rows.row(it);
    if (r < 0) continue;
    const int64_t b = rows.offsets[r], en = rows.offsets[r + 1];
    float* row = dg + static_cast<int64_t>(TRANSPOSE ? r : out_row[r]) * gcols;
    for (int h = 0; h < heads; ++h) {
      float sum = 0.f;
      for (int64_t k = b + rows.rank(); k < en; k += THREADS) sum += dpre[(TRANSPOSE ? edge_of[k] : k) * heads + h];
      sum = group_sum<THREADS>(sum);
      if (rows.rank() == 0) sums[r * heads + h] = sum;  // for the attention vectors' gradients (datt_kernel)
      if (b == en) continue;
      for (int64_t c = h * f + rows.rank(); c < (h + 1) * f; c += THREADS) row[c] += sum * att[c];
    }
  }
}

// Mean over several heads (GAT's output layer with --out-heads > 1): one warp
// per source row, the aggregation term (overwrites the dg row).
__global__ void dg_src_kernel(int64_t num_rows, const int64_t* t_offsets, const uint32_t* t_edge,
                              const uint32_t* edge_dst, int64_t gcols, int heads, bool mean, const float* alpha_drop,
                              const float* dout, int64_t dout_cols, float* dg) {
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
        acc += alpha_drop[e * heads + h] * dout_at(dout, dout_cols, mean, heads, f, edge_dst[e], h, j);
      }
      dg[r * gcols + c] = acc;
    }
  }
}

// Attention-vector gradients in a fixed order: d_att[c] = Σ_r g[row_of(r), c]
// sums[r, c / f] (the per-row sums of dpre of attention_rows_kernel, so g is
// read once per row, not per edge). Each block sums a tile of rows for 32
// columns into its partial row; add_block_partials adds them in block
// order (atomics made GAT runs differ in their last bits from run to run).
__global__ void datt_kernel(int64_t rows, const uint32_t* row_of, const float* g, int64_t gcols, int heads,
                            const float* sums, int64_t rows_per_block, float* partial) {
  __shared__ float part[8][33];
  const int64_t f = gcols / heads;
  const int64_t c = blockIdx.y * 32 + threadIdx.x;
  const int64_t r0 = blockIdx.x * rows_per_block, r1 = min(rows, r0 + rows_per_block);
  float acc = 0.f;
  if (c < gcols) {
    const int64_t h = c / f;
    for (int64_t r = r0 + threadIdx.y; r < r1; r += blockDim.y)
      acc += g[static_cast<int64_t>(row_of ? row_of[r] : r) * gcols + c] * sums[r * heads + h];
  }
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < gcols) {
    float sum = 0.f;
    for (int k = 0; k < 8; ++k) sum += part[k][threadIdx.x];
    partial[blockIdx.x * gcols + c] = sum;
  }
}

// d_att += Σ_r g[row_of(r)] sums[r] over `rows` rows, in a fixed order; `part`
// holds kDattBlocks x gcols floats.
void attention_vector_grad(int64_t rows, const uint32_t* row_of, const float* g, int64_t gcols, int heads,
                           const float* sums, float* part, float* d_att, cudaStream_t s) {
  if (rows == 0) return;
  const int64_t per_block = std::max<int64_t>(64, (rows + kDattBlocks - 1) / kDattBlocks);
  const int64_t blocks = (rows + per_block - 1) / per_block;
  datt_kernel<<<dim3(static_cast<unsigned>(blocks), blocks_for(gcols, 32)), dim3(32, 8), 0, s>>>(
      rows, row_of, g, gcols, heads, sums, per_block, part);
  HT_CUDA_CHECK_LAST();
  add_block_partials(part, blocks, gcols, d_att, s);
}

// gat_backward's scratch before the segments (16-byte aligned): dpre, the
// per-row sums (source rows, destinations), the gradients' partials.
int64_t scratch_front_floats(int64_t edges, int64_t rows, int heads, int64_t gcols) {
  return (edges * heads + 2 * rows * heads + kDattBlocks * gcols + 3) / 4 * 4;
}

unsigned grid_for(int64_t threads) {
  const unsigned b = blocks_for(threads, 256);
  return b > (1u << 20) ? (1u << 20) : b;
}

// Calls launch(rows, grid, block) with a warp per short row (RowGroups<32>),
// then, when the topology has long rows, with a block per long row.
template <typename Launch>
void over_row_groups(const SparseRows& r, Launch launch) {
  launch(RowGroups<32>{r.count, r.offsets, r.seg_row.data}, grid_for(r.count * 32), 256u);
  HT_CUDA_CHECK_LAST();
  if (r.seg_row.size == 0) return;
  launch(RowGroups<kGroupBlock>{r.seg_row.size, r.offsets, r.seg_row.data},
         static_cast<unsigned>(std::min<int64_t>(r.seg_row.size, 65535)), static_cast<unsigned>(kGroupBlock));
  HT_CUDA_CHECK_LAST();
}

// Concatenated heads, or the mean of one head, is a sparse product with a
// weight per edge and head (spmm_rows); the mean of several heads is not.
bool per_head_product(bool mean, int heads) { return !mean || heads == 1; }

}  // namespace

int64_t gat_scores_scratch_floats(int64_t rows, int heads) { return 2 * rows * heads; }

void gat_scores(const DevTopology& t, const float* g, int64_t rows, int64_t gcols, const float* att_src,
                const float* att_dst, int heads, float slope, float* pre, float* score, float* scratch, cudaStream_t s) {
  if (t.num_edges == 0) return;
  float* el = scratch;
  float* er = scratch + rows * heads;
  row_scores_kernel<<<grid_for(rows * 32), 256, 0, s>>>(rows, g, gcols, att_src, att_dst, heads, el, er);
  HT_CUDA_CHECK_LAST();
  scores_kernel<<<grid_for(t.num_edges * heads), 256, 0, s>>>(t.src.data, t.dst_row.data, t.edge_dst.data,
                                                              t.num_edges, heads, el, er, slope, pre, score);
  HT_CUDA_CHECK_LAST();
}

void gat_softmax(const DevTopology& t, int heads, const float* score, float* alpha, float* alpha_drop,
                 const DropoutSpec& attn, cudaStream_t s) {
  if (t.num_dst == 0) return;
  over_row_groups(forward_rows(t), [&](auto rows, unsigned grid, unsigned block) {
    softmax_kernel<decltype(rows)::kThreads><<<grid, block, 0, s>>>(rows, heads, score, alpha, alpha_drop, attn,
                                                                     t.edge_src_key.data, t.edge_dst_key.data);
  });
}

void gat_aggregate(const DevTopology& t, const float* g, int64_t gcols, const float* alpha_drop, int heads, bool mean,
                   float* out, int64_t out_cols, float* scratch, cudaStream_t s) {
  if (t.num_dst == 0) return;
  if (per_head_product(mean, heads) &&
      spmm_rows(false, forward_rows(t), {alpha_drop, heads, gcols / heads}, g, gcols, out, scratch, s))
    return;
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
  // Scratch: dpre, the per-row sums of the attention terms, the gradients'
  // partials, the segments (gat_backward_scratch_floats).
  float* dpre = scratch;
  float* sums_src = dpre + t.num_edges * heads;
  float* sums_dst = sums_src + t.num_src_rows * heads;
  float* part = sums_dst + t.num_src_rows * heads;
  float* segments = scratch + scratch_front_floats(t.num_edges, t.num_src_rows, heads, gcols);
  dalpha_kernel<<<grid_for(t.num_edges * 32), 256, 0, s>>>(t.src.data, t.edge_dst.data, t.num_edges, g, gcols, heads,
                                                           mean, attn, t.edge_src_key.data, t.edge_dst_key.data, dout,
                                                           dout_cols, dpre);
  HT_CUDA_CHECK_LAST();
  over_row_groups(forward_rows(t), [&](auto rows, unsigned grid, unsigned block) {
    softmax_backward_kernel<decltype(rows)::kThreads><<<grid, block, 0, s>>>(rows, heads, slope, pre, alpha, dpre);
  });
  // dg[r] = Σ alpha_drop dout[dst] over the source row's edges (the
  // aggregation's transpose), then the attention terms.
  if (!per_head_product(mean, heads) ||
      !spmm_rows(true, transposed_rows(t), {alpha_drop, heads, gcols / heads}, dout, gcols, dg, segments, s)) {
    dg_src_kernel<<<grid_for(t.num_src_rows * 32), 32 * kWarps, 0, s>>>(t.num_src_rows, t.t_offsets.data,
                                                                        t.t_edge.data, t.edge_dst.data, gcols, heads,
                                                                        mean, alpha_drop, dout, dout_cols, dg);
    HT_CUDA_CHECK_LAST();
  }
  over_row_groups(transposed_rows(t), [&](auto rows, unsigned grid, unsigned block) {
    attention_rows_kernel<decltype(rows)::kThreads, true>
        <<<grid, block, 0, s>>>(rows, t.t_edge.data, nullptr, gcols, heads, att_src, dpre, dg, sums_src);
  });
  over_row_groups(forward_rows(t), [&](auto rows, unsigned grid, unsigned block) {
    attention_rows_kernel<decltype(rows)::kThreads, false>
        <<<grid, block, 0, s>>>(rows, nullptr, t.dst_row.data, gcols, heads, att_dst, dpre, dg, sums_dst);
  });
  attention_vector_grad(t.num_src_rows, nullptr, g, gcols, heads, sums_src, part, d_att_src, s);
  attention_vector_grad(t.num_dst, t.dst_row.data, g, gcols, heads, sums_dst, part, d_att_dst, s);
}

int64_t gat_backward_scratch_floats(int64_t edges, int64_t rows, int heads, int64_t gcols, int64_t segments) {
  // (gat_scores's two values per row and head fit in the same space.)
  return scratch_front_floats(edges, rows, heads, gcols) + segments * gcols;
}

}  // namespace ht::cuda
