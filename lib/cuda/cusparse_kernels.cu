// The inputs cusparseSpMM needs beside the topology's own arrays
// (cusparse_spmm.cpp): narrowed row offsets, the transpose's columns and
// weights in its edge order, GAT's weights head by head. Element-wise copies.
#include "cuda/cuda_check.hpp"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b > (1 << 20) ? (1 << 20) : b);
}

__device__ __forceinline__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void narrow_kernel(const int64_t* __restrict__ in, int64_t n, int32_t* __restrict__ out) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = static_cast<int32_t>(in[i]);
}

__global__ void transposed_kernel(const uint32_t* __restrict__ t_edge, const uint32_t* __restrict__ edge_dst,
                                  const float* __restrict__ weight, int64_t edges, uint32_t* __restrict__ col,
                                  float* __restrict__ val) {
  for (int64_t k = first_index(); k < edges; k += stride()) {
    const uint32_t e = t_edge[k];
    col[k] = edge_dst[e];
    val[k] = weight ? weight[e] : 1.0f;
  }
}

__global__ void head_major_kernel(const float* __restrict__ w, int64_t edges, int heads, float* __restrict__ out) {
  const int64_t n = edges * heads;
  for (int64_t i = first_index(); i < n; i += stride()) {
    const int64_t h = i / edges, e = i - h * edges;
    out[i] = w[e * heads + h];
  }
}

__global__ void fill_kernel(float* __restrict__ out, int64_t n, float value) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = value;
}

}  // namespace

void narrow_offsets(const int64_t* in, int64_t n, int32_t* out, cudaStream_t s) {
  if (n <= 0) return;
  narrow_kernel<<<blocks_for(n), kThreads, 0, s>>>(in, n, out);
  HT_CUDA_CHECK_LAST();
}

void transposed_csr(const uint32_t* t_edge, const uint32_t* edge_dst, const float* weight, int64_t edges,
                    uint32_t* col, float* val, cudaStream_t s) {
  if (edges <= 0) return;
  transposed_kernel<<<blocks_for(edges), kThreads, 0, s>>>(t_edge, edge_dst, weight, edges, col, val);
  HT_CUDA_CHECK_LAST();
}

void head_major(const float* w, int64_t edges, int heads, float* out, cudaStream_t s) {
  if (edges <= 0 || heads <= 0) return;
  head_major_kernel<<<blocks_for(edges * heads), kThreads, 0, s>>>(w, edges, heads, out);
  HT_CUDA_CHECK_LAST();
}

void fill(float* out, int64_t n, float value, cudaStream_t s) {
  if (n <= 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(out, n, value);
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
