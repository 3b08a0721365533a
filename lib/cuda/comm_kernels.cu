// Communication kernels: zero-copy gathers from mapped host memory, P2P pulls
// and push-accumulates, and gradient compaction for flushes. One warp per row;
// lanes read consecutive 16-byte vectors when the row width allows it, so a
// warp issues 512-byte coalesced requests.
#include "cuda/cuda_check.hpp"
#include "cuda/device_math.cuh"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// One warp per row, one float per lane. Lanes are shifted so that every
// warp-wide load covers exactly one 128-byte line of host memory (the
// "circular shift" of the zero-copy papers): rows whose width is not a
// multiple of 128 B would otherwise straddle two lines per request.
__global__ void gather_rows_kernel(const float* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                   const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                   float* __restrict__ dst, DropoutSpec drop) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const int64_t sr = src_rows ? src_rows[k] : k;
    const float* s = src + sr * cols;
    float* d = dst + (dst_rows ? static_cast<int64_t>(dst_rows[k]) : k) * cols;
    const int64_t key = drop.active ? drop.keys[sr] : 0;
    const int shift = static_cast<int>((reinterpret_cast<uintptr_t>(s) >> 2) & 31);
    for (int64_t j = lane - shift; j < cols; j += 32) {
      if (j < 0) continue;
      d[j] = drop.active ? s[j] * keep_scale(drop, key, j) : s[j];
    }
  }
}

__global__ void pull_rows_kernel(const float* __restrict__ src, const uint32_t* __restrict__ rows, int64_t n,
                                 int64_t cols, float* __restrict__ dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const float* s = src + static_cast<int64_t>(rows[k]) * cols;
    float* d = dst + k * cols;
    for (int64_t j = lane; j < cols; j += 32) d[j] = s[j];
  }
}

__global__ void push_add_rows_kernel(const float* __restrict__ src, const uint32_t* __restrict__ rows, int64_t n,
                                     int64_t cols, float* dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const float* s = src + k * cols;
    float* d = dst + static_cast<int64_t>(rows[k]) * cols;
    for (int64_t j = lane; j < cols; j += 32) atomicAdd_system(d + j, s[j]);
  }
}

__global__ void compact_and_zero_kernel(float* __restrict__ src, const uint32_t* __restrict__ rows, int64_t n,
                                        int64_t cols, float* __restrict__ staging) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    float* s = src + static_cast<int64_t>(rows[k]) * cols;
    float* d = staging + k * cols;
    for (int64_t j = lane; j < cols; j += 32) {
      d[j] = s[j];
      s[j] = 0.f;
    }
  }
}

__global__ void add_rows_and_zero_kernel(float* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                         const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                         float* __restrict__ dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    float* s = src + static_cast<int64_t>(src_rows[k]) * cols;
    float* d = dst + static_cast<int64_t>(dst_rows[k]) * cols;
    for (int64_t j = lane; j < cols; j += 32) {
      d[j] += s[j];
      s[j] = 0.f;
    }
  }
}

__global__ void scatter_rows_and_zero_kernel(float* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                             const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                             float* __restrict__ dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    float* s = src + static_cast<int64_t>(src_rows[k]) * cols;
    float* d = dst + static_cast<int64_t>(dst_rows[k]) * cols;
    for (int64_t j = lane; j < cols; j += 32) {
      d[j] = s[j];
      s[j] = 0.f;
    }
  }
}

unsigned row_blocks(int64_t n) { return blocks_for(n, kWarpsPerBlock) > 65535u * 16 ? 65535u * 16 : blocks_for(n, kWarpsPerBlock); }

}  // namespace

void gather_rows(const float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                 float* dst, const DropoutSpec& drop, cudaStream_t s) {
  if (n == 0) return;
  gather_rows_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, src_rows, dst_rows, n, cols, dst, drop);
  HT_CUDA_CHECK_LAST();
}

void pull_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s) {
  if (n == 0) return;
  pull_rows_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, dst);
  HT_CUDA_CHECK_LAST();
}

void push_add_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s) {
  if (n == 0) return;
  push_add_rows_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, dst);
  HT_CUDA_CHECK_LAST();
}

void add_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                       float* dst, cudaStream_t s) {
  if (n == 0) return;
  add_rows_and_zero_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, src_rows, dst_rows, n, cols, dst);
  HT_CUDA_CHECK_LAST();
}

void scatter_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                           float* dst, cudaStream_t s) {
  if (n == 0) return;
  scatter_rows_and_zero_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, src_rows, dst_rows, n, cols, dst);
  HT_CUDA_CHECK_LAST();
}

void compact_and_zero(float* src, const uint32_t* rows, int64_t n, int64_t cols, float* staging, cudaStream_t s) {
  if (n == 0) return;
  compact_and_zero_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, staging);
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
