// Communication kernels: zero-copy gathers from mapped host memory, P2P pulls
// and push-accumulates, and gradient compaction for flushes. One warp per row;
// lanes read consecutive 16-byte vectors when the row width allows it, so a
// warp issues 512-byte coalesced requests.
#include <cuda_bf16.h>
#include <type_traits>
#include <cuda_fp16.h>

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

// ---- 16-bit host rows (--host-dtype): widened to fp32 as they are loaded,
// rounded to nearest even as they are stored (as core/half.hpp does on the
// host). Rows of even width move as pairs, so a lane reads or writes 4 bytes
// and a warp a 128-byte line, as with fp32 rows.
template <class T> struct Pair;
template <> struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  static __device__ float2 widen(type v) { return __bfloat1622float2(v); }
  static __device__ type narrow(float2 v) { return __float22bfloat162_rn(v); }
  static __device__ float widen1(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __nv_bfloat16 narrow1(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Pair<__half> {
  using type = __half2;
  static __device__ float2 widen(type v) { return __half22float2(v); }
  static __device__ type narrow(float2 v) { return __float22half2_rn(v); }
  static __device__ float widen1(__half v) { return __half2float(v); }
  static __device__ __half narrow1(float v) { return __float2half_rn(v); }
};

template <class T>
__global__ void gather_rows16_kernel(const T* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                     const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                     float* __restrict__ dst, DropoutSpec drop) {
  using P = Pair<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const int64_t sr = src_rows ? src_rows[k] : k;
    const T* s = src + sr * cols;
    float* d = dst + (dst_rows ? static_cast<int64_t>(dst_rows[k]) : k) * cols;
    const int64_t key = drop.active ? drop.keys[sr] : 0;
    if ((cols & 1) == 0) {
      const auto* s2 = reinterpret_cast<const typename P::type*>(s);
      const int shift = static_cast<int>((reinterpret_cast<uintptr_t>(s) >> 2) & 31);
      for (int64_t u = lane - shift; u < cols / 2; u += 32) {
        if (u < 0) continue;
        const float2 v = P::widen(s2[u]);
        d[2 * u] = drop.active ? v.x * keep_scale(drop, key, 2 * u) : v.x;
        d[2 * u + 1] = drop.active ? v.y * keep_scale(drop, key, 2 * u + 1) : v.y;
      }
    } else {
      for (int64_t j = lane; j < cols; j += 32) {
        const float v = P::widen1(s[j]);
        d[j] = drop.active ? v * keep_scale(drop, key, j) : v;
      }
    }
  }
}

// dst[i] = round(src[i]) for i < count (contiguous rows). In pairs when both
// ends are aligned for it (8 bytes for fp32 pairs, 4 for 16-bit pairs).
template <class T, bool kPairs>
__global__ void store_rows16_kernel(const float* __restrict__ src, int64_t count, T* __restrict__ dst) {
  using P = Pair<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if constexpr (kPairs) {
    auto* d2 = reinterpret_cast<typename P::type*>(dst);
    const auto* s2 = reinterpret_cast<const float2*>(src);
    for (int64_t i = first; i < count / 2; i += stride) d2[i] = P::narrow(s2[i]);
    if ((count & 1) && first == 0) dst[count - 1] = P::narrow1(src[count - 1]);
  } else {
    for (int64_t i = first; i < count; i += stride) dst[i] = P::narrow1(src[i]);
  }
}

template <class T>
__global__ void widen_rows16_kernel(const T* __restrict__ src, int64_t count, float* __restrict__ dst) {
  using P = Pair<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    dst[i] = P::widen1(src[i]);
}

template <class T>
__global__ void scatter_rows16_and_zero_kernel(float* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                               const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                               T* __restrict__ dst) {
  using P = Pair<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    float* s = src + static_cast<int64_t>(src_rows[k]) * cols;
    T* d = dst + static_cast<int64_t>(dst_rows[k]) * cols;
    if ((cols & 1) == 0) {
      auto* d2 = reinterpret_cast<typename P::type*>(d);
      auto* s2 = reinterpret_cast<float2*>(s);
      for (int64_t u = lane; u < cols / 2; u += 32) {
        d2[u] = P::narrow(s2[u]);
        s2[u] = make_float2(0.f, 0.f);
      }
    } else {
      for (int64_t j = lane; j < cols; j += 32) {
        d[j] = P::narrow1(s[j]);
        s[j] = 0.f;
      }
    }
  }
}

// A 16-bit store's staged add, on the device (the GPU cache's row tier): the
// source rounded to the dtype (as a staged piece is), widened, added in fp32,
// rounded once: the bits of the host's add (engine/host_rows.hpp).
template <class T>
__global__ void add_rows16_and_zero_kernel(float* __restrict__ src, const uint32_t* __restrict__ src_rows,
                                           const uint32_t* __restrict__ dst_rows, int64_t n, int64_t cols,
                                           T* __restrict__ dst) {
  using P = Pair<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    float* s = src + static_cast<int64_t>(src_rows[k]) * cols;
    T* d = dst + static_cast<int64_t>(dst_rows[k]) * cols;
    for (int64_t j = lane; j < cols; j += 32) {
      d[j] = P::narrow1(__fadd_rn(P::widen1(d[j]), P::widen1(P::narrow1(s[j]))));
      s[j] = 0.f;
    }
  }
}

// dst row k, or dst_rows[k] when given. V: float4 where the width and the
// pointers allow it (quad_rows), so that a warp's request over NVLink is 512
// bytes instead of 128 (more bytes in flight per request: P2P reads are
// latency-bound); `cols` counts V's.
template <class V>
__global__ void pull_rows_kernel(const V* __restrict__ src, const uint32_t* __restrict__ rows, int64_t n,
                                 int64_t cols, V* __restrict__ dst, const uint32_t* __restrict__ dst_rows) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const V* s = src + static_cast<int64_t>(rows[k]) * cols;
    V* d = dst + (dst_rows ? static_cast<int64_t>(dst_rows[k]) : k) * cols;
    for (int64_t j = lane; j < cols; j += 32) d[j] = s[j];
  }
}

// The adds into a peer's rows. One pusher at a time adds into an owner's rows
// (Trainer::apply_pushes' rounds), so no two adds meet; the system-scope
// atomics are fire-and-forget reductions over NVLink (no read comes back),
// and float4's are one request per four floats: each is four IEEE fp32 adds,
// the same bits as four scalar ones.
template <class V>
__global__ void push_add_rows_kernel(const V* __restrict__ src, const uint32_t* __restrict__ rows, int64_t n,
                                     int64_t cols, V* dst) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t nwarps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  for (int64_t k = warp; k < n; k += nwarps) {
    const V* s = src + k * cols;
    V* d = dst + static_cast<int64_t>(rows[k]) * cols;
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

void gather_rows(const void* src, StoreDtype t, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n,
                 int64_t cols, float* dst, const DropoutSpec& drop, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = row_blocks(n), threads = 32 * kWarpsPerBlock;
  if (t == StoreDtype::f32)
    gather_rows_kernel<<<blocks, threads, 0, s>>>(static_cast<const float*>(src), src_rows, dst_rows, n, cols, dst, drop);
  else if (t == StoreDtype::bf16)
    gather_rows16_kernel<<<blocks, threads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), src_rows, dst_rows, n,
                                                    cols, dst, drop);
  else
    gather_rows16_kernel<<<blocks, threads, 0, s>>>(static_cast<const __half*>(src), src_rows, dst_rows, n, cols,
                                                    dst, drop);
  HT_CUDA_CHECK_LAST();
}

void store_rows16(const float* src, int64_t count, void* dst, StoreDtype t, cudaStream_t s) {
  if (count == 0) return;
  const unsigned blocks = blocks_for(count / 2 + 1, 256) > 65535u * 8 ? 65535u * 8 : blocks_for(count / 2 + 1, 256);
  const bool pairs = reinterpret_cast<uintptr_t>(src) % 8 == 0 && reinterpret_cast<uintptr_t>(dst) % 4 == 0;
  auto launch = [&](auto* out) {
    using T = std::remove_pointer_t<decltype(out)>;
    if (pairs)
      store_rows16_kernel<T, true><<<blocks, 256, 0, s>>>(src, count, out);
    else
      store_rows16_kernel<T, false><<<blocks, 256, 0, s>>>(src, count, out);
  };
  if (t == StoreDtype::bf16)
    launch(static_cast<__nv_bfloat16*>(dst));
  else
    launch(static_cast<__half*>(dst));
  HT_CUDA_CHECK_LAST();
}

// Rows as float4 when the width is a multiple of 4 and both ends are 16-byte aligned.
static bool quad_rows(int64_t cols, const void* a, const void* b) {
  return cols % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
}

void pull_rows_scattered(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst,
                         const uint32_t* dst_rows, cudaStream_t s) {
  if (n == 0) return;
  if (quad_rows(cols, src, dst))
    pull_rows_kernel<float4><<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(
        reinterpret_cast<const float4*>(src), rows, n, cols / 4, reinterpret_cast<float4*>(dst), dst_rows);
  else
    pull_rows_kernel<float><<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, dst, dst_rows);
  HT_CUDA_CHECK_LAST();
}

void pull_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s) {
  pull_rows_scattered(src, rows, n, cols, dst, nullptr, s);
}

void push_add_rows(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst, cudaStream_t s) {
  if (n == 0) return;
  if (quad_rows(cols, src, dst))
    push_add_rows_kernel<float4><<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(
        reinterpret_cast<const float4*>(src), rows, n, cols / 4, reinterpret_cast<float4*>(dst));
  else
    push_add_rows_kernel<float><<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, dst);
  HT_CUDA_CHECK_LAST();
}

void add_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                       void* dst, StoreDtype t, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = row_blocks(n), threads = 32 * kWarpsPerBlock;
  if (t == StoreDtype::f32)
    add_rows_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols, static_cast<float*>(dst));
  else if (t == StoreDtype::bf16)
    add_rows16_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols,
                                                          static_cast<__nv_bfloat16*>(dst));
  else
    add_rows16_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols, static_cast<__half*>(dst));
  HT_CUDA_CHECK_LAST();
}

void widen_rows16(const void* src, StoreDtype t, int64_t count, float* dst, cudaStream_t s) {
  if (count == 0) return;
  const unsigned blocks = blocks_for(count, 256) > 65535u * 8 ? 65535u * 8 : blocks_for(count, 256);
  if (t == StoreDtype::bf16)
    widen_rows16_kernel<<<blocks, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(src), count, dst);
  else
    widen_rows16_kernel<<<blocks, 256, 0, s>>>(static_cast<const __half*>(src), count, dst);
  HT_CUDA_CHECK_LAST();
}

void scatter_rows_and_zero(float* src, const uint32_t* src_rows, const uint32_t* dst_rows, int64_t n, int64_t cols,
                           void* dst, StoreDtype t, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = row_blocks(n), threads = 32 * kWarpsPerBlock;
  if (t == StoreDtype::f32)
    scatter_rows_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols, static_cast<float*>(dst));
  else if (t == StoreDtype::bf16)
    scatter_rows16_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols,
                                                              static_cast<__nv_bfloat16*>(dst));
  else
    scatter_rows16_and_zero_kernel<<<blocks, threads, 0, s>>>(src, src_rows, dst_rows, n, cols,
                                                              static_cast<__half*>(dst));
  HT_CUDA_CHECK_LAST();
}

void compact_and_zero(float* src, const uint32_t* rows, int64_t n, int64_t cols, float* staging, cudaStream_t s) {
  if (n == 0) return;
  compact_and_zero_kernel<<<row_blocks(n), 32 * kWarpsPerBlock, 0, s>>>(src, rows, n, cols, staging);
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
