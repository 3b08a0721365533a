#include "cuda/link_probe.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <limits>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"

namespace ht {
namespace {

// The pinned buffer is small: pinning it is most of the probe's time, and
// beside setup's first phases (where ht-train runs it) the pinning stalled
// their page faults: 256 MiB cost a small graph's setup 0.15-0.2 s
// (issue 33). A timed sample copies it kCopiesPerSample times back to back
// (256 MiB, as one copy of a 256 MiB buffer before), so that the fixed
// cost of a copy (a few microseconds) stays below 0.5% of a sample at
// 55 GB/s.
constexpr size_t kProbeBytes = size_t{64} << 20;
constexpr int kCopiesPerSample = 4;
constexpr int kTimedCopies = 3;

// Switches the calling thread to `device` and back: the probe runs on the
// thread that then builds the executor, which picks its devices itself.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    HT_CUDA_TRY(cudaGetDevice(&previous_));
    HT_CUDA_TRY(cudaSetDevice(device));
  }
  ~DeviceGuard() { (void)cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

class PinnedHost {
 public:
  explicit PinnedHost(size_t bytes) { HT_CUDA_TRY(cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault)); }
  ~PinnedHost() { (void)cudaFreeHost(ptr_); }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class DeviceMemory {
 public:
  explicit DeviceMemory(size_t bytes) { HT_CUDA_TRY(cudaMalloc(&ptr_, bytes)); }
  ~DeviceMemory() { (void)cudaFree(ptr_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class Stream {
 public:
  Stream() { HT_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { HT_CUDA_TRY(cudaEventCreate(&e_)); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// Bytes per second of the fastest of kTimedCopies samples after one warm-up
// copy (the first copy of a direction pays for page-table and DMA set-up).
double best_copy_rate(void* dst, const void* src, cudaMemcpyKind kind, cudaStream_t stream) {
  Event start, stop;
  HT_CUDA_TRY(cudaMemcpyAsync(dst, src, kProbeBytes, kind, stream));
  float best_ms = std::numeric_limits<float>::infinity();
  for (int i = 0; i < kTimedCopies; ++i) {
    HT_CUDA_TRY(cudaEventRecord(start.get(), stream));
    for (int c = 0; c < kCopiesPerSample; ++c) HT_CUDA_TRY(cudaMemcpyAsync(dst, src, kProbeBytes, kind, stream));
    HT_CUDA_TRY(cudaEventRecord(stop.get(), stream));
    HT_CUDA_TRY(cudaEventSynchronize(stop.get()));
    float ms = 0;
    HT_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (ms < best_ms) best_ms = ms;
  }
  HT_CHECK(best_ms > 0, "link probe: {} copies of {} MiB timed at {} ms", kCopiesPerSample, kProbeBytes >> 20,
           best_ms);
  return static_cast<double>(kProbeBytes) * kCopiesPerSample / (best_ms * 1e-3);
}

}  // namespace

LinkBandwidth measure_link_bandwidth(int cuda_device) {
  const DeviceGuard guard(cuda_device);
  const PinnedHost host(kProbeBytes);
  const DeviceMemory device(kProbeBytes);
  const Stream stream;
  LinkBandwidth bw;
  bw.h2d_bytes_per_s = best_copy_rate(device.get(), host.get(), cudaMemcpyHostToDevice, stream.get());
  bw.d2h_bytes_per_s = best_copy_rate(host.get(), device.get(), cudaMemcpyDeviceToHost, stream.get());
  return bw;
}

}  // namespace ht
