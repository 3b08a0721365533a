// Softmax cross-entropy over the rows of a chunk: gradient rows for training
// vertices, loss sum and per-split correct counts reduced with atomics.
#include "cuda/cuda_check.hpp"
#include "cuda/device_math.cuh"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

struct Stats {
  double loss;
  unsigned long long correct[4];
  unsigned long long count[4];
};

__global__ void xent_kernel(const float* logits, int64_t rows, int64_t cols, const int32_t* labels,
                            const uint8_t* split, int64_t first_vertex, float scale, float* dlogits, Stats* st) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t v = first_vertex + r;
    const float* z = logits + r * cols;
    const int32_t y = labels[v];
    const uint8_t s = split[v];
    float mx = z[0];
    int64_t arg = 0;
    for (int64_t j = 1; j < cols; ++j)
      if (z[j] > mx) {
        mx = z[j];
        arg = j;
      }
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += exp(static_cast<double>(z[j] - mx));
    if (y >= 0 && s <= 3) {
      atomicAdd(&st->count[s], 1ull);
      if (arg == y) atomicAdd(&st->correct[s], 1ull);
    }
    const bool train = y >= 0 && s == 1;
    if (train) atomicAdd(&st->loss, -(static_cast<double>(z[y] - mx) - log(sum)));
    if (dlogits) {
      for (int64_t j = 0; j < cols; ++j) {
        const double p = exp(static_cast<double>(z[j] - mx)) / sum;
        dlogits[r * cols + j] = train ? static_cast<float>((p - (j == y ? 1.0 : 0.0)) * scale) : 0.f;
      }
    }
  }
}

}  // namespace

void softmax_xent(const float* logits, int64_t rows, int64_t cols, const int32_t* labels, const uint8_t* split,
                  int64_t first_vertex, float scale, float* dlogits, void* stats, cudaStream_t s) {
  if (rows == 0) return;
  xent_kernel<<<blocks_for(rows, 256), 256, 0, s>>>(logits, rows, cols, labels, split, first_vertex, scale, dlogits,
                                                    static_cast<Stats*>(stats));
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
