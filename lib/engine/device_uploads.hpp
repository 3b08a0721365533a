#pragma once
// Uploads from ordinary (pageable) host memory to several devices at once.
// Device::upload_bytes moves bytes through two pinned pieces per device that
// the host fills while the copy engine moves the one before; device after
// device, one host thread fills every device's pieces in turn while the other
// devices' copy engines wait (issue 33: the GPU cache's h^0, 8 GiB per GPU on
// 4 GPUs, took 10.8 s so). A thread per device keeps every copy engine busy.
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "engine/executor.hpp"

namespace ht {

// `src` (any host memory) into `dst` on a device.
struct ByteUpload {
  std::span<const std::byte> src;
  DevArray<std::byte> dst;
};

// per_device[i]: device i's uploads, in order. Each device with any runs
// them in a thread of its own (its pinned pieces and copy engine its own),
// with its share of the cores for filling the pieces; one such device runs
// them in the caller's thread. Every queue is drained first (upload_bytes
// orders itself after its queue's earlier work, which then waits on no other
// device) and after (the sources may be freed once this returns). The uploads
// go on each device's compute queue. The first error is rethrown once every
// thread has ended.
void upload_on_devices(Executor& exec, std::span<const std::vector<ByteUpload>> per_device);

// work(i) for every device i with busy[i], each in a thread of its own with
// its share of the cores (one such device: in the caller's thread); the
// first error rethrown once every thread has ended.
void on_devices_at_once(Executor& exec, const std::vector<bool>& busy, const std::function<void(int)>& work);

}  // namespace ht
