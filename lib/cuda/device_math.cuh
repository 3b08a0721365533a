#pragma once
// Device-side helpers shared by the kernels.
#include <cstdint>

#include "engine/executor.hpp"
#include "models/model.hpp"

namespace ht::cuda {

__device__ __forceinline__ float act_fwd(float x, Act a) {
  if (a == Act::relu) return x > 0.f ? x : 0.f;
  if (a == Act::elu) return x > 0.f ? x : expm1f(x);
  return x;
}
__device__ __forceinline__ float act_grad(float z, Act a) {
  if (a == Act::relu) return z > 0.f ? 1.f : 0.f;
  if (a == Act::elu) return z > 0.f ? 1.f : expf(z);
  return 1.f;
}
__device__ __forceinline__ float keep_scale(const DropoutSpec& d, int64_t key, int64_t col) {
  if (!d.active) return 1.f;
  return dropout_keep(d.seed, d.epoch, d.layer, key, static_cast<int>(col), d.rate) ? 1.f / (1.f - d.rate) : 0.f;
}
__device__ __forceinline__ float attn_scale(const DropoutSpec& d, int head, int64_t src, int64_t dst) {
  if (!d.active) return 1.f;
  return attn_dropout_keep(d.seed, d.epoch, d.layer, head, src, dst, d.rate) ? 1.f / (1.f - d.rate) : 0.f;
}

inline unsigned blocks_for(int64_t work, int per_block) {
  const int64_t b = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 2147483647 ? 2147483647 : b));
}

}  // namespace ht::cuda
