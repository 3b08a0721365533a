#include "engine/executor.hpp"

#include <cstring>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"

namespace ht {

// Defaults for vertex stores in host memory; executors with device-resident
// stores override them. Every queue is drained first (the devices may still
// be writing the rows), and the whole-matrix copies, up to hundreds of GiB,
// run over all cores.
void Executor::store_fill(const HostMat& dst, std::span<const float> src) {
  HT_ASSERT(!dst.on_device() && static_cast<int64_t>(src.size()) == dst.rows * dst.cols);
  synchronize_all();
  parallel_copy(dst.data, src.data(), src.size_bytes());
}

void Executor::store_zero(const HostMat& dst) {
  HT_ASSERT(!dst.on_device());
  synchronize_all();
  parallel_blocks(dst.rows * dst.cols, [&](int64_t b, int64_t e) {
    std::memset(dst.data + b, 0, static_cast<size_t>(e - b) * sizeof(float));
  });
}

void Executor::store_read(const HostMat& src, std::span<float> dst) {
  HT_ASSERT(!src.on_device() && static_cast<int64_t>(dst.size()) == src.rows * src.cols);
  synchronize_all();
  parallel_copy(dst.data(), src.data, dst.size_bytes());
}

}  // namespace ht
