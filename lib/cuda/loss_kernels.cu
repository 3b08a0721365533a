// Softmax cross-entropy over the rows of a chunk: gradient rows for training
// vertices; per-split correct counts reduced with (integer) atomics, the loss
// sum in a fixed order (per block in thread order, then the blocks in order)
// so that it is the same bits every run.
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

constexpr int kThreads = 256;

__global__ void xent_kernel(const float* logits, int64_t rows, int64_t cols, const int32_t* labels,
                            const uint8_t* split, int64_t first_vertex, float scale, float* dlogits, Stats* st,
                            double* partial) {
  __shared__ double loss[kThreads];
  const int64_t r = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  loss[threadIdx.x] = 0.0;
  if (r < rows) {
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
    if (train) loss[threadIdx.x] = -(static_cast<double>(z[y] - mx) - log(sum));
    if (dlogits) {
      for (int64_t j = 0; j < cols; ++j) {
        const double p = exp(static_cast<double>(z[j] - mx)) / sum;
        dlogits[r * cols + j] = train ? static_cast<float>((p - (j == y ? 1.0 : 0.0)) * scale) : 0.f;
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double b = 0.0;
    for (int k = 0; k < kThreads; ++k) b += loss[k];
    partial[blockIdx.x] = b;
  }
}

__global__ void loss_finish_kernel(const double* partial, int64_t blocks, Stats* st) {
  double s = 0.0;
  for (int64_t b = 0; b < blocks; ++b) s += partial[b];
  st->loss += s;
}

}  // namespace

int64_t softmax_xent_scratch_floats(int64_t rows) { return 2 * static_cast<int64_t>(blocks_for(rows, kThreads)); }

void softmax_xent(const float* logits, int64_t rows, int64_t cols, const int32_t* labels, const uint8_t* split,
                  int64_t first_vertex, float scale, float* dlogits, void* stats, float* scratch, cudaStream_t s) {
  if (rows == 0) return;
  const int64_t blocks = blocks_for(rows, kThreads);
  auto* partial = reinterpret_cast<double*>(scratch);
  xent_kernel<<<blocks, kThreads, 0, s>>>(logits, rows, cols, labels, split, first_vertex, scale, dlogits,
                                         static_cast<Stats*>(stats), partial);
  HT_CUDA_CHECK_LAST();
  loss_finish_kernel<<<1, 1, 0, s>>>(partial, blocks, static_cast<Stats*>(stats));
  HT_CUDA_CHECK_LAST();
}

}  // namespace ht::cuda
