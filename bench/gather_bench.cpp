// Zero-copy gather vs pinned cudaMemcpy (issue 7, SPEC §9 target: gather >=
// 85% of memcpy bandwidth for rows >= 256 B, any alignment). The gather is
// the production kernel (ht::cuda::gather_rows) reading random rows of a
// pinned, mapped host matrix; the reference is one cudaMemcpyAsync of the
// same number of bytes from pinned memory. Median of repeated runs after
// warm-up, timed with CUDA events.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/rng.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernels.cuh"

namespace {

template <typename F>
float median_ms(F&& launch, int warmup, int reps) {
  cudaEvent_t a, b;
  HT_CUDA_TRY(cudaEventCreate(&a));
  HT_CUDA_TRY(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) launch();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    HT_CUDA_TRY(cudaEventRecord(a));
    launch();
    HT_CUDA_TRY(cudaEventRecord(b));
    HT_CUDA_TRY(cudaEventSynchronize(b));
    float ms = 0;
    HT_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const double gib = argc > 1 ? std::atof(argv[1]) : 1.0;  // bytes gathered per run
    const int64_t host_bytes = static_cast<int64_t>(4.0 * gib * (1 << 30));  // source matrix: 4x larger
    float* host = nullptr;
    HT_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&host), host_bytes, cudaHostAllocPortable | cudaHostAllocMapped));
    ht::rng::Stream r(1, 1);
    for (int64_t i = 0; i < host_bytes / 4; i += 1024) host[i] = static_cast<float>(r.uniform());  // touch pages
    std::memset(host, 1, host_bytes);
    const int64_t move = static_cast<int64_t>(gib * (1 << 30));
    float* dev = nullptr;
    HT_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&dev), move + 4096));
    const float memcpy_ms = median_ms([&] { HT_CUDA_TRY(cudaMemcpyAsync(dev, host, move, cudaMemcpyHostToDevice)); }, 2, 9);
    const double memcpy_gbs = move / (memcpy_ms * 1e-3) / 1e9;
    std::printf("pinned cudaMemcpy H2D: %.1f GB/s (%.2f GiB, median of 9)\n", memcpy_gbs, gib);
    std::printf("random: rows in random order over the whole %.0f GiB matrix (bound by host address translation);\n"
                "ascending: 25%% of the rows in ascending order, as the plan's transition lists load them\n",
                4 * gib);
    std::printf("%8s %9s %8s %13s %7s %14s %7s\n", "floats", "row bytes", "aligned", "random GB/s", "ratio",
                "ascending GB/s", "ratio");
    for (int64_t cols : {16, 32, 64, 100, 128, 200, 256, 500, 512, 1000, 1024}) {
      const int64_t host_rows = host_bytes / 4 / cols;
      const int64_t n = move / 4 / cols;
      std::vector<uint32_t> src(n), dst(n), asc(n);
      for (int64_t k = 0; k < n; ++k) src[k] = static_cast<uint32_t>(r.below(host_rows));
      {
        int64_t k = 0;
        for (int64_t v = 0; v < host_rows && k < n; ++v)
          if (r.below(4) == 0) asc[k++] = static_cast<uint32_t>(v);
        for (; k < n; ++k) asc[k] = asc[k - 1];
      }
      std::iota(dst.begin(), dst.end(), 0u);
      uint32_t *dsrc = nullptr, *ddst = nullptr, *dasc = nullptr;
      HT_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&dasc), n * 4));
      HT_CUDA_TRY(cudaMemcpy(dasc, asc.data(), n * 4, cudaMemcpyHostToDevice));
      HT_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&dsrc), n * 4));
      HT_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&ddst), n * 4));
      HT_CUDA_TRY(cudaMemcpy(dsrc, src.data(), n * 4, cudaMemcpyHostToDevice));
      HT_CUDA_TRY(cudaMemcpy(ddst, dst.data(), n * 4, cudaMemcpyHostToDevice));
      ht::DropoutSpec none;
      const float ms = median_ms([&] { ht::cuda::gather_rows(host, ht::StoreDtype::f32, dsrc, ddst, n, cols, dev, none, nullptr); }, 2, 9);
      const double gbs = static_cast<double>(n) * cols * 4 / (ms * 1e-3) / 1e9;
      const float ms_asc = median_ms([&] { ht::cuda::gather_rows(host, ht::StoreDtype::f32, dasc, ddst, n, cols, dev, none, nullptr); }, 2, 9);
      const double gbs_asc = static_cast<double>(n) * cols * 4 / (ms_asc * 1e-3) / 1e9;
      std::printf("%8lld %9lld %8s %13.1f %7.2f %14.1f %7.2f\n", static_cast<long long>(cols),
                  static_cast<long long>(cols * 4), (cols * 4) % 128 == 0 ? "yes" : "no", gbs, gbs / memcpy_gbs,
                  gbs_asc, gbs_asc / memcpy_gbs);
      cudaFree(dasc);
      cudaFree(dsrc);
      cudaFree(ddst);
    }
    cudaFree(dev);
    cudaFreeHost(host);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ht-bench-gather: error: %s\n", e.what());
    return 1;
  }
}
