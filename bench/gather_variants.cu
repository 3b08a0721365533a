// Gather variants measured against each other (bench only): which access
// pattern reads random rows of pinned, mapped host memory fastest over PCIe.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); return 1; } } while (0)

// A: warp per row, float4 per lane (the production kernel's pattern).
__global__ void warp_f4(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst) {
  const int lane = threadIdx.x & 31;
  const int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5, nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t k = w; k < n; k += nw) {
    const float4* s = reinterpret_cast<const float4*>(src + (int64_t)rows[k] * cols);
    float4* d = reinterpret_cast<float4*>(dst + k * cols);
    for (int64_t j = lane; j < cols / 4; j += 32) d[j] = s[j];
  }
}
// B: warp per row, one float per lane.
__global__ void warp_f1(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst) {
  const int lane = threadIdx.x & 31;
  const int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5, nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
  for (int64_t k = w; k < n; k += nw) {
    const float* s = src + (int64_t)rows[k] * cols;
    float* d = dst + k * cols;
    for (int64_t j = lane; j < cols; j += 32) d[j] = s[j];
  }
}
// C: flattened: every thread copies one float4 of the whole (row, col4) space,
// so a warp's 32 loads cover consecutive pieces of one or several rows and
// many independent loads are in flight per warp (unrolled by U).
template <int U>
__global__ void flat_f4(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst) {
  const int64_t c4 = cols / 4, total = n * c4;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i0 < total; i0 += stride * U) {
    float4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + u * stride;
      if (i < total) v[u] = reinterpret_cast<const float4*>(src + (int64_t)rows[i / c4] * cols)[i % c4];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + u * stride;
      if (i < total) reinterpret_cast<float4*>(dst)[i] = v[u];
    }
  }
}
// D: flattened scalar (4-byte) copy, unrolled by U.
template <int U>
__global__ void flat_f1(const float* src, const uint32_t* rows, int64_t n, int64_t cols, float* dst) {
  const int64_t total = n * cols;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i0 = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i0 < total; i0 += stride * U) {
    float v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + u * stride;
      if (i < total) v[u] = src[(int64_t)rows[i / cols] * cols + i % cols];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t i = i0 + u * stride;
      if (i < total) dst[i] = v[u];
    }
  }
}

#include <sys/mman.h>

int main() {
  const int64_t move = int64_t{1} << 30, host_bytes = int64_t{4} << 30;
  // Regular pinned pages.
  float* host;
  CK(cudaHostAlloc((void**)&host, host_bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  std::memset(host, 1, host_bytes);
  // Transparent huge pages, then registered (pinned + mapped).
  void* raw = mmap(nullptr, host_bytes + (2 << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  float* huge = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(raw) + (2 << 20) - 1) & ~uintptr_t((2 << 20) - 1));
  const int adv = madvise(huge, host_bytes, MADV_HUGEPAGE);
  std::memset(huge, 1, host_bytes);
  CK(cudaHostRegister(huge, host_bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  float* huge_dev;
  CK(cudaHostGetDevicePointer((void**)&huge_dev, huge, 0));
  FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char thp[128] = "?";
  if (f) { if (!std::fgets(thp, sizeof thp, f)) thp[0] = 0; std::fclose(f); }
  std::printf("madvise(MADV_HUGEPAGE) = %d, THP: %s", adv, thp);
  float* dev;
  CK(cudaMalloc((void**)&dev, move));
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto time = [&](auto launch) {
    for (int i = 0; i < 2; ++i) launch();
    std::vector<float> t;
    for (int i = 0; i < 7; ++i) {
      cudaEventRecord(a);
      launch();
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return move / (t[3] * 1e-3) / 1e9;
  };
  std::printf("memcpy regular %.1f GB/s, huge %.1f GB/s\n",
              time([&] { cudaMemcpyAsync(dev, host, move, cudaMemcpyHostToDevice); }),
              time([&] { cudaMemcpyAsync(dev, huge, move, cudaMemcpyHostToDevice); }));
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  std::mt19937_64 rng(1);
  std::printf("%6s %10s %10s %10s %10s %10s\n", "floats", "random", "sorted25%", "rand64MiB", "huge-rand", "huge-sort");
  for (int64_t cols : {16, 64, 100, 128, 256, 512}) {
    const int64_t n = move / 4 / cols, hr = host_bytes / 4 / cols;
    std::vector<uint32_t> r(n), srt(n), small(n);
    for (auto& x : r) x = static_cast<uint32_t>(rng() % hr);
    // Sorted: every 4th row on average (25% density) in ascending order.
    { int64_t k = 0; for (int64_t v = 0; v < hr && k < n; ++v) if (rng() % 4 == 0) srt[k++] = (uint32_t)v; for (; k < n; ++k) srt[k] = srt[k - 1]; }
    const int64_t small_rows = (int64_t{64} << 20) / 4 / cols;
    for (auto& x : small) x = static_cast<uint32_t>(rng() % small_rows);
    uint32_t *dr, *ds, *dm;
    CK(cudaMalloc((void**)&dr, n * 4));
    CK(cudaMalloc((void**)&ds, n * 4));
    CK(cudaMalloc((void**)&dm, n * 4));
    CK(cudaMemcpy(dr, r.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(ds, srt.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dm, small.data(), n * 4, cudaMemcpyHostToDevice));
    const unsigned grid = sms * 8;
    double g[5];
    g[0] = time([&] { flat_f1<4><<<grid, 256>>>(host, dr, n, cols, dev); });
    g[1] = time([&] { flat_f1<4><<<grid, 256>>>(host, ds, n, cols, dev); });
    g[2] = time([&] { flat_f1<4><<<grid, 256>>>(host, dm, n, cols, dev); });
    g[3] = time([&] { flat_f1<4><<<grid, 256>>>(huge_dev, dr, n, cols, dev); });
    g[4] = time([&] { flat_f1<4><<<grid, 256>>>(huge_dev, ds, n, cols, dev); });
    CK(cudaGetLastError());
    std::printf("%6lld %10.1f %10.1f %10.1f %10.1f %10.1f\n", (long long)cols, g[0], g[1], g[2], g[3], g[4]);
    cudaFree(dr); cudaFree(ds); cudaFree(dm);
  }
  return 0;
}
