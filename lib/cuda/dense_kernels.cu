// Sparse aggregation over a chunk's topology (one warp per destination row,
// or per source row for the transpose; a block per row with more than
// kLongRow edges) and elementwise ops.
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

// Rows with more edges than this go to spmm_long_kernel (a block of
// kLongWarps warps each): one warp on a hub row of 10^5 edges would run long
// after the others have finished (R-MAT and web graphs).
constexpr int64_t kLongRow = 4096;
constexpr int kLongWarps = 8;

// acc += weight[e] * x[nbr(e)] over the edges of one row: groups of 32 edges
// starting at `first`, then every `stride` edges, up to `end`. The group's
// edges are read one per lane and broadcast with shuffles; each lane keeps V
// float4 accumulators, so the warp reads each neighbor row once in 512-byte
// coalesced pieces, whatever the width (up to V * 128 columns).
template <int V, bool TRANSPOSE>
__device__ __forceinline__ void add_edges(int64_t first, int64_t end, int64_t stride, const uint32_t* __restrict__ edge_of,
                                          const uint32_t* __restrict__ nbr_of, const float* __restrict__ weight,
                                          const float4* __restrict__ x, int64_t cols4, float4 (&acc)[V]) {
  const int lane = threadIdx.x & 31;
  for (int64_t e0 = first; e0 < end; e0 += stride) {
    const int64_t mine = e0 + lane;
    uint32_t my_nbr = 0;
    float my_w = 0.f;
    if (mine < end) {
      const uint32_t e = TRANSPOSE ? edge_of[mine] : static_cast<uint32_t>(mine);
      my_nbr = nbr_of[e];
      my_w = weight ? weight[e] : 1.f;
    }
    const int count = static_cast<int>(end - e0 < 32 ? end - e0 : 32);
    for (int k = 0; k < count; ++k) {
      const uint32_t nb = __shfl_sync(0xffffffffu, my_nbr, k);
      const float w = __shfl_sync(0xffffffffu, my_w, k);
      const float4* xs = x + static_cast<int64_t>(nb) * cols4;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        const int64_t j = v * 32 + lane;
        if (j < cols4) {
          const float4 t = __ldg(xs + j);
          acc[v].x += w * t.x;
          acc[v].y += w * t.y;
          acc[v].z += w * t.z;
          acc[v].w += w * t.w;
        }
      }
    }
  }
}

__device__ __forceinline__ void add4(float4& a, const float4& b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  a.w += b.w;
}

// Sparse aggregation, one warp per output row with at most kLongRow edges.
// TRANSPOSE: rows are source rows of the chunk (t_offsets / t_edge), the
// "neighbor" of edge e is its destination and the result is added.
template <int V, bool TRANSPOSE>
__global__ void spmm_vec_kernel(int64_t num_rows, const int64_t* __restrict__ offsets,
                                const uint32_t* __restrict__ edge_of, const uint32_t* __restrict__ nbr_of,
                                const float* __restrict__ weight, const float4* __restrict__ x, int64_t cols4,
                                float4* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  for (int64_t r = global_warp(); r < num_rows; r += num_warps()) {
    const int64_t b = offsets[r], e_end = offsets[r + 1];
    if (e_end - b > kLongRow) continue;  // spmm_long_kernel's
    float4 acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    add_edges<V, TRANSPOSE>(b, e_end, 32, edge_of, nbr_of, weight, x, cols4, acc);
    float4* o = out + r * cols4;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t j = v * 32 + lane;
      if (j < cols4) {
        if (TRANSPOSE) {
          if (b == e_end) continue;
          float4 cur = o[j];
          add4(cur, acc[v]);
          o[j] = cur;
        } else {
          o[j] = acc[v];
        }
      }
    }
  }
}

// Rows with more than kLongRow edges, one block each (blocks stride over the
// rows; the degree test is the same for the whole block): warp w sums the
// edge groups w, w + kLongWarps, ...; the warps' partial sums are then added
// in warp order, so a row's result is the same bits every run.
template <int V, bool TRANSPOSE>
__global__ void spmm_long_kernel(int64_t num_rows, const int64_t* __restrict__ offsets,
                                 const uint32_t* __restrict__ edge_of, const uint32_t* __restrict__ nbr_of,
                                 const float* __restrict__ weight, const float4* __restrict__ x, int64_t cols4,
                                 float4* __restrict__ out) {
  extern __shared__ float4 partial[];  // kLongWarps x cols4
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t r = blockIdx.x; r < num_rows; r += gridDim.x) {
    const int64_t b = offsets[r], e_end = offsets[r + 1];
    if (e_end - b <= kLongRow) continue;
    float4 acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = make_float4(0.f, 0.f, 0.f, 0.f);
    add_edges<V, TRANSPOSE>(b + 32 * warp, e_end, 32 * kLongWarps, edge_of, nbr_of, weight, x, cols4, acc);
#pragma unroll
    for (int v = 0; v < V; ++v) {
      const int64_t j = v * 32 + lane;
      if (j < cols4) partial[warp * cols4 + j] = acc[v];
    }
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols4; j += blockDim.x) {
      float4 sum = partial[j];
      for (int w = 1; w < kLongWarps; ++w) add4(sum, partial[w * cols4 + j]);
      if (TRANSPOSE) add4(sum, out[r * cols4 + j]);
      out[r * cols4 + j] = sum;
    }
    __syncthreads();  // the partial sums are reused by the block's next row
  }
}

// Fallback for widths that are not a multiple of 4 or wider than 1024.
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


// Picks the float4 kernel with the fewest accumulators that cover the width.
template <bool TRANSPOSE>
bool launch_vec(int64_t rows, const int64_t* offsets, const uint32_t* edge_of, const uint32_t* nbr_of,
                const float* weight, const float* x, int64_t cols, float* out, cudaStream_t s) {
  if (cols % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return false;
  const int64_t c4 = cols / 4;
  auto go = [&](auto kernel) {
    kernel<<<warp_blocks(rows), 32 * kWarps, 0, s>>>(rows, offsets, edge_of, nbr_of, weight,
                                                     reinterpret_cast<const float4*>(x), c4,
                                                     reinterpret_cast<float4*>(out));
  };
  // Long rows: a block each; a few hundred blocks stride over the rows (each
  // reads only the offsets of the rows that are not long).
  auto go_long = [&](auto kernel) {
    const unsigned blocks = static_cast<unsigned>(rows < 512 ? rows : 512);
    const size_t shared = sizeof(float4) * kLongWarps * static_cast<size_t>(c4);
    kernel<<<blocks, 32 * kLongWarps, shared, s>>>(rows, offsets, edge_of, nbr_of, weight,
                                                    reinterpret_cast<const float4*>(x), c4,
                                                    reinterpret_cast<float4*>(out));
  };
  if (c4 <= 32) go(spmm_vec_kernel<1, TRANSPOSE>), go_long(spmm_long_kernel<1, TRANSPOSE>);
  else if (c4 <= 64) go(spmm_vec_kernel<2, TRANSPOSE>), go_long(spmm_long_kernel<2, TRANSPOSE>);
  else if (c4 <= 128) go(spmm_vec_kernel<4, TRANSPOSE>), go_long(spmm_long_kernel<4, TRANSPOSE>);
  else if (c4 <= 256) go(spmm_vec_kernel<8, TRANSPOSE>), go_long(spmm_long_kernel<8, TRANSPOSE>);
  else return false;
  HT_CUDA_CHECK_LAST();
  return true;
}

}  // namespace

void spmm(const DevTopology& t, const float* x, int64_t cols, float* out, cudaStream_t s) {
  if (t.num_dst == 0) return;
  const float* w = t.weight.size ? t.weight.data : nullptr;
  if (launch_vec<false>(t.num_dst, t.offsets.data, nullptr, t.src.data, w, x, cols, out, s)) return;
  spmm_kernel<<<warp_blocks(t.num_dst), 32 * kWarps, 0, s>>>(t.num_dst, t.offsets.data, t.src.data, w, x, cols, out);
  HT_CUDA_CHECK_LAST();
}

void spmm_transpose_add(const DevTopology& t, const float* dout, int64_t cols, float* dx, cudaStream_t s) {
  if (t.num_src_rows == 0) return;
  const float* w = t.weight.size ? t.weight.data : nullptr;
  if (launch_vec<true>(t.num_src_rows, t.t_offsets.data, t.t_edge.data, t.edge_dst.data, w, dout, cols, dx, s)) return;
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
  col_sum_finish_kernel<<<blocks_for(cols, 256), 256, 0, s>>>(scratch, blocks, cols, grad);
  HT_CUDA_CHECK_LAST();
}

void dropout_rows(float* m, int64_t rows, int64_t cols, int64_t key_row0, const DropoutSpec& drop, cudaStream_t s) {
  if (!drop.active || rows * cols == 0) return;
  dropout_rows_kernel<<<elem_blocks(rows * cols), 256, 0, s>>>(m, rows, cols, key_row0, drop);
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
