#include "engine/executor.hpp"

#include <cstring>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "engine/host_rows.hpp"

namespace ht {

// Defaults for vertex stores in host memory; executors with device-resident
// stores override them. Every queue is drained first (the devices may still
// be writing the rows), and the whole-matrix copies, up to hundreds of GiB,
// run over all cores.
void Executor::store_fill(const HostMat& dst, std::span<const float> src) {
  HT_ASSERT(!dst.on_device() && static_cast<int64_t>(src.size()) == dst.rows * dst.cols);
  synchronize_all();
  if (dst.dtype == StoreDtype::f32) return parallel_copy(dst.data, src.data(), src.size_bytes());
  parallel_blocks(dst.rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) store_row(dst, r, src.data() + r * dst.cols, dst.cols);
  });
}

void Executor::store_zero(const HostMat& dst) {
  HT_ASSERT(!dst.on_device());
  synchronize_all();
  // All-zero bits are +0 in every dtype.
  parallel_blocks(dst.bytes(), [&](int64_t b, int64_t e) {
    std::memset(static_cast<std::byte*>(dst.data) + b, 0, static_cast<size_t>(e - b));
  });
}

void Executor::store_read(const HostMat& src, std::span<float> dst) {
  HT_ASSERT(!src.on_device() && static_cast<int64_t>(dst.size()) == src.rows * src.cols);
  synchronize_all();
  if (src.dtype == StoreDtype::f32) return parallel_copy(dst.data(), src.data, dst.size_bytes());
  parallel_blocks(src.rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) load_row(src, r, dst.data() + r * src.cols, src.cols);
  });
}

}  // namespace ht
