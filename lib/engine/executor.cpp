#include "engine/executor.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace ht {
namespace {

// Whole-matrix copies of the vertex store run at setup and between epochs,
// over up to hundreds of GiB: split them over the cores.
void parallel_copy(float* dst, const float* src, int64_t n) {
  constexpr int64_t kBlock = int64_t{1} << 22;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) std::memcpy(dst + b, src + b, static_cast<size_t>(std::min(kBlock, n - b)) * 4);
}

}  // namespace

// Defaults for vertex stores in host memory; executors with device-resident
// stores override them. Every queue is drained first: the devices may still
// be writing the rows.
void Executor::store_fill(const HostMat& dst, std::span<const float> src) {
  HT_ASSERT(!dst.on_device() && static_cast<int64_t>(src.size()) == dst.rows * dst.cols);
  drain_all();
  parallel_copy(dst.data, src.data(), dst.rows * dst.cols);
}

void Executor::store_zero(const HostMat& dst) {
  HT_ASSERT(!dst.on_device());
  drain_all();
  const int64_t n = dst.rows * dst.cols;
  constexpr int64_t kBlock = int64_t{1} << 22;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < n; b += kBlock) std::memset(dst.data + b, 0, static_cast<size_t>(std::min(kBlock, n - b)) * 4);
}

void Executor::store_read(const HostMat& src, std::span<float> dst) {
  HT_ASSERT(!src.on_device() && static_cast<int64_t>(dst.size()) == src.rows * src.cols);
  drain_all();
  parallel_copy(dst.data(), src.data, src.rows * src.cols);
}

}  // namespace ht
