#include "engine/executor.hpp"

#include <cstring>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "engine/host_rows.hpp"
#include "engine/transport.hpp"

namespace ht {

// Defaults for vertex stores in host memory; executors with device-resident
// stores override them. Every queue is drained first (the devices may still
// be writing the rows), and the whole-matrix copies, up to hundreds of GiB,
// run over all cores.
void Executor::store_fill(const HostMat& dst, std::span<const float> src) {
  HT_ASSERT(!dst.on_device() && static_cast<int64_t>(src.size()) == dst.rows * dst.cols);
  synchronize_all();
  const int64_t r0 = dst.held_first(), r1 = dst.held_last();
  if (dst.dtype == StoreDtype::f32)
    return parallel_copy(dst.row(r0), src.data() + r0 * dst.cols, static_cast<size_t>((r1 - r0) * dst.cols) * 4);
  parallel_blocks(r1 - r0, [&](int64_t b, int64_t e) {
    for (int64_t r = r0 + b; r < r0 + e; ++r) store_row(dst, r, src.data() + r * dst.cols, dst.cols);
  });
}

void Executor::store_zero(const HostMat& dst) {
  HT_ASSERT(!dst.on_device());
  synchronize_all();
  // All-zero bits are +0 in every dtype.
  std::byte* first = dst.row_bytes(dst.held_first());
  parallel_blocks(dst.row_bytes(dst.held_last()) - first, [&](int64_t b, int64_t e) {
    std::memset(first + b, 0, static_cast<size_t>(e - b));
  });
}

void Executor::store_read(const HostMat& src, std::span<float> dst) {
  HT_ASSERT(!src.on_device() && static_cast<int64_t>(dst.size()) == src.rows * src.cols);
  synchronize_all();
  const int64_t r0 = src.held_first(), r1 = src.held_last();
  if (src.dtype == StoreDtype::f32)
    return parallel_copy(dst.data() + r0 * src.cols, src.row(r0), static_cast<size_t>((r1 - r0) * src.cols) * 4);
  parallel_blocks(r1 - r0, [&](int64_t b, int64_t e) {
    for (int64_t r = r0 + b; r < r0 + e; ++r) load_row(src, r, dst.data() + r * src.cols, src.cols);
  });
}

void Executor::join(const JobLayout& job) {
  if (!job.transport) {
    job_ = {};
    return;
  }
  const int per = num_devices(), procs = job.transport->size();
  HT_CHECK(job.job_devices == per * procs && job.first_device == job.transport->rank() * per,
           "process {} of {}: devices {}..{} of {} do not divide the job evenly ({} per process)",
           job.transport->rank(), procs, job.first_device, job.first_device + per - 1, job.job_devices, per);
  job_ = job;
}

void Executor::exchange(std::span<const RowTransfer> group) {
  HT_CHECK(group.empty(), "the {} executor cannot exchange rows with other processes", name());
}

void Executor::allgather_devices(std::span<const std::byte> mine, std::span<std::byte> all) {
  HT_ASSERT(static_cast<int64_t>(all.size()) == static_cast<int64_t>(mine.size()) / num_devices() * job_devices());
  if (!multi_process()) {
    std::memcpy(all.data(), mine.data(), mine.size());
    return;
  }
  job_.transport->allgather(mine, all);
}

}  // namespace ht
