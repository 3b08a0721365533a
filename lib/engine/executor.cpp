#include "engine/executor.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"

namespace ht {

// Defaults for vertex stores in host memory; executors with device-resident
// stores override them.
void Executor::store_fill(const HostMat& dst, std::span<const float> src) {
  HT_ASSERT(!dst.on_device() && static_cast<int64_t>(src.size()) == dst.rows * dst.cols);
  std::copy(src.begin(), src.end(), dst.data);
}

void Executor::store_zero(const HostMat& dst) {
  HT_ASSERT(!dst.on_device());
  std::memset(dst.data, 0, static_cast<size_t>(dst.rows * dst.cols) * sizeof(float));
}

void Executor::store_read(const HostMat& src, std::span<float> dst) {
  HT_ASSERT(!src.on_device() && static_cast<int64_t>(dst.size()) == src.rows * src.cols);
  std::copy(src.data, src.data + dst.size(), dst.begin());
}

}  // namespace ht
