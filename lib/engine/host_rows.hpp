#pragma once
// Rows of a vertex-store matrix in host memory read and written as fp32,
// whatever its dtype: the CPU executor's copies and the trainer's host adds
// use these, so that both round at the same points as the GPU kernels
// (widen when loading, round to nearest even when storing; a host add
// widens both sides, adds in fp32 and rounds once).
#include <cstring>

#include "core/half.hpp"
#include "engine/executor.hpp"

namespace ht {

// out[0, n) = row r, columns [c0, c0 + n), widened.
inline void load_row(const HostMat& m, int64_t r, float* out, int64_t n, int64_t c0 = 0) {
  if (m.dtype == StoreDtype::f32) {
    std::memcpy(out, m.row(r) + c0, static_cast<size_t>(n) * 4);
    return;
  }
  const auto* h = reinterpret_cast<const uint16_t*>(m.row_bytes(r)) + c0;
  for (int64_t c = 0; c < n; ++c) out[c] = widen16(h[c], m.dtype);
}

// Row r, columns [0, n) = in[0, n), rounded to the dtype.
inline void store_row(const HostMat& m, int64_t r, const float* in, int64_t n) {
  if (m.dtype == StoreDtype::f32) {
    std::memcpy(m.row(r), in, static_cast<size_t>(n) * 4);
    return;
  }
  auto* h = reinterpret_cast<uint16_t*>(m.row_bytes(r));
  for (int64_t c = 0; c < n; ++c) h[c] = narrow16(in[c], m.dtype);
}

// Row r of `dst` into the cache ahead of a write (the host adds of a staged
// piece: its rows ascend, a few rows apart, where the hardware prefetcher
// does not reach).
inline void prefetch_row(const HostMat& dst, int64_t r) {
  const auto* p = reinterpret_cast<const char*>(dst.row_bytes(r));
  const int64_t bytes = dst.cols * dst.elem_bytes();
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b, 1);
}

// Row r of `dst` += row k of `src` (same dtype and width): fp32 sum, one rounding.
inline void add_row(const HostMat& dst, int64_t r, const HostMat& src, int64_t k) {
  const int64_t n = dst.cols;
  if (dst.dtype == StoreDtype::f32) {
    float* out = dst.row(r);
    const float* in = src.row(k);
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) out[c] += in[c];
    return;
  }
  auto* out = reinterpret_cast<uint16_t*>(dst.row_bytes(r));
  const auto* in = reinterpret_cast<const uint16_t*>(src.row_bytes(k));
  // One loop per type, so that the compiler vectorizes it (the gradient
  // returns that still reach the host are added at memory speed).
  if (dst.dtype == StoreDtype::bf16) {
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) out[c] = float_to_bf16(bf16_to_float(out[c]) + bf16_to_float(in[c]));
    return;
  }
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) out[c] = float_to_f16(f16_to_float(out[c]) + f16_to_float(in[c]));
}

}  // namespace ht
