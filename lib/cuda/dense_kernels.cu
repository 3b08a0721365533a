// Sparse aggregation over a chunk's topology (one warp per destination row,
// or per source row for the transpose; rows with more than kLongRowEdges
// edges in segments of a block each) and elementwise ops.
#include <type_traits>

#include "cuda/cuda_check.hpp"
#include "cuda/device_math.cuh"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kWarps = 8;

__device__ __forceinline__ int64_t global_warp() {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}
__device__ __forceinline__ int64_t num_warps() { return (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5; }

// Rows with more than kLongRowEdges edges are cut into segments
// (DevTopology::seg_row), each summed by a block of kSegWarps warps: one warp
// on a hub row of 10^5 edges would run long after the others have finished
// (R-MAT and web graphs), and one block per hub still did.
constexpr int kSegWarps = 8;

// The sparse kernels read rows as float4 when the width and the pointers
// allow, else as float; lanes do the arithmetic per component.
__device__ __forceinline__ void axpy(float& a, float w, float t) { a += w * t; }
__device__ __forceinline__ void axpy(float4& a, float w, const float4& t) {
  a.x += w * t.x;
  a.y += w * t.y;
  a.z += w * t.z;
  a.w += w * t.w;
}
__device__ __forceinline__ void add(float& a, float b) { a += b; }
__device__ __forceinline__ void add(float4& a, const float4& b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

// acc += weight * x[nbr(e)] over the edges of one row: groups of 32 edges
// starting at `first`, then every `stride` edges, up to `end`. The group's
// edges are read one per lane and broadcast with shuffles; each lane keeps V
// accumulators of type T, so the warp reads each neighbor row once in
// coalesced pieces, whatever the width (up to V * 32 T's). Each accumulator
// adds its edges in edge order. HEADS: the weight of a column is its head's
// (EdgeWeights), read by each lane for its columns.
template <typename T, int V, bool TRANSPOSE, bool HEADS>
__device__ __forceinline__ void add_edges(int64_t first, int64_t end, int64_t stride, const uint32_t* __restrict__ edge_of,
                                          const uint32_t* __restrict__ nbr_of, const EdgeWeights& wts,
                                          const T* __restrict__ x, int64_t wt, T (&acc)[V]) {
  const int lane = threadIdx.x & 31;
  int64_t head[V];
  if constexpr (HEADS) {
#pragma unroll
    for (int v = 0; v < V; ++v) head[v] = (v * 32 + lane) / wts.f;
  }
  for (int64_t e0 = first; e0 < end; e0 += stride) {
    const int64_t mine = e0 + lane;
    uint32_t my_nbr = 0, my_e = 0;
    float my_w = 0.f;
    if (mine < end) {
      my_e = TRANSPOSE ? edge_of[mine] : static_cast<uint32_t>(mine);
      my_nbr = nbr_of[my_e];
      if constexpr (!HEADS) my_w = wts.w ? wts.w[my_e] : 1.f;
    }
    const int count = static_cast<int>(end - e0 < 32 ? end - e0 : 32);
    for (int k = 0; k < count; ++k) {
      const uint32_t nb = __shfl_sync(0xffffffffu, my_nbr, k);
      const T* xs = x + static_cast<int64_t>(nb) * wt;
      if constexpr (HEADS) {
        const float* we = wts.w + static_cast<int64_t>(__shfl_sync(0xffffffffu, my_e, k)) * wts.heads;
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const int64_t j = v * 32 + lane;
          if (j < wt) axpy(acc[v], we[head[v]], __ldg(xs + j));
        }
      } else {
        const float w = __shfl_sync(0xffffffffu, my_w, k);
#pragma unroll
        for (int v = 0; v < V; ++v) {
          const int64_t j = v * 32 + lane;
          if (j < wt) axpy(acc[v], w, __ldg(xs + j));
        }
      }
    }
  }
}

// Sparse aggregation, one warp per output row with at most kLongRowEdges
// edges (wt: the width in T's). TRANSPOSE: rows are source rows of the chunk
// (t_offsets / t_edge), the "neighbor" of edge e is its destination and the
// result is added.
template <typename T, int V, bool TRANSPOSE, bool HEADS>
__global__ void spmm_vec_kernel(int64_t num_rows, const int64_t* __restrict__ offsets,
                                const uint32_t* __restrict__ edge_of, const uint32_t* __restrict__ nbr_of,
                                EdgeWeights wts, const T* __restrict__ x, int64_t wt, T* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = global_warp(); r < num_rows; r += num_warps()) {
    const int64_t b = offsets[r], e_end = offsets[r + 1];
    if (e_end - b > kLongRowEdges) continue;  // its segments are summed by spmm_segment_kernel
    if (TRANSPOSE && b == e_end) continue;
    T acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = T{};
    add_edges<T, V, TRANSPOSE, HEADS>(b, e_end, 32, edge_of, nbr_of, wts, x, wt, acc);
    T* o = out + r * wt;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t j = v * 32 + lane;
      if (j < wt) {
        if (TRANSPOSE) add(acc[v], o[j]);
        o[j] = acc[v];
      }
    }
  }
}

// The end of segment k (DevTopology::seg_row): the next segment of its row, or the row's end.
__device__ __forceinline__ int64_t segment_end(int64_t k, int64_t num_segs, const uint32_t* seg_row,
                                               const int64_t* seg_edge, const int64_t* offsets) {
  return k + 1 < num_segs && seg_row[k + 1] == seg_row[k] ? seg_edge[k + 1] : offsets[seg_row[k] + 1];
}

// One block per segment of a long row (blocks stride over the segments):
// warp w sums the edge groups w, w + kSegWarps, ... of the segment; the warps'
// sums are added in warp order into partial[k] (wt T's), so a row's result is
// the same bits every run.
template <typename T, int V, bool TRANSPOSE, bool HEADS>
__global__ void spmm_segment_kernel(int64_t num_segs, const uint32_t* __restrict__ seg_row,
                                    const int64_t* __restrict__ seg_edge, const int64_t* __restrict__ offsets,
                                    const uint32_t* __restrict__ edge_of, const uint32_t* __restrict__ nbr_of,
                                    EdgeWeights wts, const T* __restrict__ x, int64_t wt, T* __restrict__ partial) {
  extern __shared__ __align__(16) unsigned char segment_shared[];
  T* warp_sum = reinterpret_cast<T*>(segment_shared);  // kSegWarps x wt
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t k = blockIdx.x; k < num_segs; k += gridDim.x) {
    const int64_t b = seg_edge[k], e_end = segment_end(k, num_segs, seg_row, seg_edge, offsets);
    T acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = T{};
    add_edges<T, V, TRANSPOSE, HEADS>(b + 32 * warp, e_end, 32 * kSegWarps, edge_of, nbr_of, wts, x, wt, acc);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t j = v * 32 + lane;
      if (j < wt) warp_sum[warp * wt + j] = acc[v];
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < wt; j += blockDim.x) {
      T sum = warp_sum[j];
      for (int w = 1; w < kSegWarps; ++w) add(sum, warp_sum[w * wt + j]);
      partial[k * wt + j] = sum;
    }
    __syncthreads();  // warp_sum is reused by the block's next segment
  }
}

// A long row's result: its segments' partial sums added in segment order (one
// block per row, at the row's first segment), then added to (TRANSPOSE) or
// stored in the output row.
template <typename T, bool TRANSPOSE>
__global__ void spmm_segment_sum_kernel(int64_t num_segs, const uint32_t* __restrict__ seg_row,
                                        const T* __restrict__ partial, int64_t wt, T* __restrict__ out) {
  for (int64_t k = blockIdx.x; k < num_segs; k += gridDim.x) {
    const uint32_t r = seg_row[k];
    if (k > 0 && seg_row[k - 1] == r) continue;
    for (int64_t j = threadIdx.x; j < wt; j += blockDim.x) {
      T sum = partial[k * wt + j];
      for (int64_t q = k + 1; q < num_segs && seg_row[q] == r; ++q) add(sum, partial[q * wt + j]);
      if (TRANSPOSE) add(sum, out[r * wt + j]);
      out[r * wt + j] = sum;
    }
  }
}

// Fallback for widths that launch_vec does not take (over 256 and not a
// multiple of 4, or over 1024): a warp per row, long rows too.
__global__ void spmm_kernel(int64_t num_dst, const int64_t* __restrict__ offsets, const uint32_t* __restrict__ src,
                            const float* __restrict__ weight, const float* __restrict__ x, int64_t cols,
                            float* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  for (int64_t d = global_warp(); d < num_dst; d += num_warps()) {
    const int64_t b = offsets[d], e_end = offsets[d + 1];
    for (int64_t j0 = 0; j0 < cols; j0 += 32) {
      const int64_t j = j0 + lane;
      float acc = 0.f;
      if (j < cols)
        for (int64_t e = b; e < e_end; ++e) acc += (weight ? weight[e] : 1.f) * x[static_cast<int64_t>(src[e]) * cols + j];
      if (j < cols) out[d * cols + j] = acc;
    }
  }
}

__global__ void spmm_t_kernel(int64_t num_rows, const int64_t* __restrict__ t_offsets,
                              const uint32_t* __restrict__ t_edge, const uint32_t* __restrict__ edge_dst,
                              const float* __restrict__ weight, const float* __restrict__ dout, int64_t cols,
                              float* __restrict__ dx) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = global_warp(); r < num_rows; r += num_warps()) {
    const int64_t b = t_offsets[r], e_end = t_offsets[r + 1];
    if (b == e_end) continue;
    for (int64_t j0 = 0; j0 < cols; j0 += 32) {
      const int64_t j = j0 + lane;
      if (j >= cols) continue;
      float acc = 0.f;
      for (int64_t k = b; k < e_end; ++k) {
        const uint32_t e = t_edge[k];
        acc += (weight ? weight[e] : 1.f) * dout[static_cast<int64_t>(edge_dst[e]) * cols + j];
      }
      dx[r * cols + j] += acc;
    }
  }
}

__global__ void bias_act_kernel(float* z, const float* bias, int64_t rows, int64_t cols, Act act, float* h) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = z[i];
    if (bias) v += bias[i % cols];
    z[i] = v;
    h[i] = act_fwd(v, act);
  }
}

__global__ void act_backward_kernel(const float* dh, const float* z, int64_t n, Act act, float* dz) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dz[i] = dh[i] * act_grad(z[i], act);
}

// Column sums in two passes, in a fixed order (the same bits every run; one
// atomic per column and block made bias gradients, and through Adam whole
// runs, differ in their last bits from run to run): each block sums a tile of
// rows for 32 columns into partial[block row][column], then one thread per
// column adds the partials in block order.
__global__ void col_sum_partial_kernel(const float* m, int64_t rows, int64_t cols, int64_t rows_per_block,
                                       float* partial) {
  __shared__ float part[8][33];
  const int64_t j = blockIdx.y * 32 + threadIdx.x;
  const int64_t r0 = blockIdx.x * rows_per_block;
  const int64_t r1 = min(rows, r0 + rows_per_block);
  float acc = 0.f;
  if (j < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += blockDim.y) acc += m[r * cols + j];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && j < cols) {
    float s = 0.f;
    for (int k = 0; k < 8; ++k) s += part[k][threadIdx.x];
    partial[blockIdx.x * cols + j] = s;
  }
}

__global__ void col_sum_finish_kernel(const float* partial, int64_t blocks, int64_t cols, float* grad) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float s = 0.f;
  for (int64_t b = 0; b < blocks; ++b) s += partial[b * cols + j];
  grad[j] += s;
}

__global__ void dropout_rows_kernel(float* m, int64_t rows, int64_t cols, int64_t key_row0, DropoutSpec drop) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, c = i % cols;
    m[i] *= keep_scale(drop, drop.keys[key_row0 + r], c);
  }
}

unsigned warp_blocks(int64_t n) {
  const unsigned b = blocks_for(n, kWarps);
  return b > (1u << 20) ? (1u << 20) : b;
}
unsigned elem_blocks(int64_t n) {
  const unsigned b = blocks_for(n, 256);
  return b > (1u << 20) ? (1u << 20) : b;
}


// Sums a topology's rows in T's of the width: short rows a warp each, long
// rows by segments (partials in `scratch`, then added in segment order); V is
// the fewest accumulators per lane that cover the width. False when the width
// needs more than 8.
template <typename T, bool TRANSPOSE, bool HEADS>
bool launch_rows(const SparseRows& rows, EdgeWeights wts, const float* x, int64_t cols, float* out, float* scratch,
                 cudaStream_t s) {
  constexpr int64_t per = static_cast<int64_t>(sizeof(T) / sizeof(float));
  const int64_t wt = cols / per;
  wts.f /= per;  // the head width in T's
  const T* xt = reinterpret_cast<const T*>(x);
  T* ot = reinterpret_cast<T*>(out);
  auto go = [&](auto v) {
    constexpr int V = decltype(v)::value;
    spmm_vec_kernel<T, V, TRANSPOSE, HEADS><<<warp_blocks(rows.count), 32 * kWarps, 0, s>>>(
        rows.count, rows.offsets, rows.edge_of, rows.nbr_of, wts, xt, wt, ot);
    HT_CUDA_CHECK_LAST();
    const int64_t segs = rows.seg_row.size;
    if (segs == 0) return;
    const unsigned blocks = static_cast<unsigned>(segs < 65535 ? segs : 65535);
    const size_t shared = sizeof(T) * kSegWarps * static_cast<size_t>(wt);
    T* partial = reinterpret_cast<T*>(scratch);
    spmm_segment_kernel<T, V, TRANSPOSE, HEADS><<<blocks, 32 * kSegWarps, shared, s>>>(
        segs, rows.seg_row.data, rows.seg_edge, rows.offsets, rows.edge_of, rows.nbr_of, wts, xt, wt, partial);
    HT_CUDA_CHECK_LAST();
    spmm_segment_sum_kernel<T, TRANSPOSE><<<blocks, wt < 256 ? 32 * blocks_for(wt, 32) : 256, 0, s>>>(
        segs, rows.seg_row.data, partial, wt, ot);
    HT_CUDA_CHECK_LAST();
  };
  if (wt <= 32) go(std::integral_constant<int, 1>{});
  else if (wt <= 64) go(std::integral_constant<int, 2>{});
  else if (wt <= 128) go(std::integral_constant<int, 4>{});
  else if (wt <= 256) go(std::integral_constant<int, 8>{});
  else return false;
  return true;
}

// float4 rows where the width, the head width and the pointers allow, else float rows.
template <bool TRANSPOSE, bool HEADS>
bool launch_vec(const SparseRows& rows, const EdgeWeights& wts, const float* x, int64_t cols, float* out,
                float* scratch, cudaStream_t s) {
  const bool four = cols % 4 == 0 && (!HEADS || wts.f % 4 == 0) && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(out) % 16 == 0 && reinterpret_cast<uintptr_t>(scratch) % 16 == 0;
  return four ? launch_rows<float4, TRANSPOSE, HEADS>(rows, wts, x, cols, out, scratch, s)
              : launch_rows<float, TRANSPOSE, HEADS>(rows, wts, x, cols, out, scratch, s);
}

}  // namespace

bool spmm_rows(bool transpose, const SparseRows& rows, const EdgeWeights& wts, const float* x, int64_t cols,
               float* out, float* scratch, cudaStream_t s) {
  if (rows.count == 0) return true;
  if (wts.heads > 0)
    return transpose ? launch_vec<true, true>(rows, wts, x, cols, out, scratch, s)
                     : launch_vec<false, true>(rows, wts, x, cols, out, scratch, s);
  return transpose ? launch_vec<true, false>(rows, wts, x, cols, out, scratch, s)
                   : launch_vec<false, false>(rows, wts, x, cols, out, scratch, s);
}

void spmm(const DevTopology& t, const float* x, int64_t cols, float* out, float* scratch, cudaStream_t s) {
  if (t.num_dst == 0) return;
  const float* w = t.weight.size ? t.weight.data : nullptr;
  if (spmm_rows(false, forward_rows(t), {w}, x, cols, out, scratch, s)) return;
  spmm_kernel<<<warp_blocks(t.num_dst), 32 * kWarps, 0, s>>>(t.num_dst, t.offsets.data, t.src.data, w, x, cols, out);
  HT_CUDA_CHECK_LAST();
}

void spmm_transpose_add(const DevTopology& t, const float* dout, int64_t cols, float* dx, float* scratch,
                        cudaStream_t s) {
  if (t.num_src_rows == 0) return;
  const float* w = t.weight.size ? t.weight.data : nullptr;
  if (spmm_rows(true, transposed_rows(t), {w}, dout, cols, dx, scratch, s)) return;
  spmm_t_kernel<<<warp_blocks(t.num_src_rows), 32 * kWarps, 0, s>>>(t.num_src_rows, t.t_offsets.data, t.t_edge.data,
                                                                    t.edge_dst.data, w, dout, cols, dx);
  HT_CUDA_CHECK_LAST();
}

void bias_act(float* z, const float* bias, int64_t rows, int64_t cols, Act act, float* h, cudaStream_t s) {
  if (rows * cols == 0) return;
  bias_act_kernel<<<elem_blocks(rows * cols), 256, 0, s>>>(z, bias, rows, cols, act, h);
  HT_CUDA_CHECK_LAST();
}

void act_backward(const float* dh, const float* z, int64_t rows, int64_t cols, Act act, float* dz, cudaStream_t s) {
  if (rows * cols == 0) return;
  act_backward_kernel<<<elem_blocks(rows * cols), 256, 0, s>>>(dh, z, rows * cols, act, dz);
  HT_CUDA_CHECK_LAST();
}

int64_t col_sum_scratch_floats(int64_t rows, int64_t cols) { return blocks_for(rows, kColSumRows) * cols; }

void col_sum_add(const float* m, int64_t rows, int64_t cols, float* grad, float* scratch, cudaStream_t s) {
  if (rows * cols == 0) return;
  const int64_t blocks = blocks_for(rows, kColSumRows);
  dim3 grid(blocks, blocks_for(cols, 32));
  col_sum_partial_kernel<<<grid, dim3(32, 8), 0, s>>>(m, rows, cols, kColSumRows, scratch);
  HT_CUDA_CHECK_LAST();
  add_block_partials(scratch, blocks, cols, grad, s);
}

void add_block_partials(const float* partial, int64_t blocks, int64_t cols, float* out, cudaStream_t s) {
  col_sum_finish_kernel<<<blocks_for(cols, 256), 256, 0, s>>>(partial, blocks, cols, out);
  HT_CUDA_CHECK_LAST();
}

void dropout_rows(float* m, int64_t rows, int64_t cols, int64_t key_row0, const DropoutSpec& drop, cudaStream_t s) {
  if (!drop.active || rows * cols == 0) return;
  dropout_rows_kernel<<<elem_blocks(rows * cols), 256, 0, s>>>(m, rows, cols, key_row0, drop);
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
