#pragma once
// One GPU behind the Device interface: a stream, a cuBLAS handle, cuSPARSE
// (cuda/cusparse_spmm.hpp, when the sparse products may use it), RAII
// allocations tracked against a memory cap, four streams
// (compute, load, store, host) ordered by events, a timeline of timing events.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/row_window.hpp"
#include "engine/executor.hpp"
#include "engine/spmm_backend.hpp"

namespace ht {

namespace cuda {
class CusparseSpmm;
}

// Owns one cudaMalloc allocation (freed on the owning device).
class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  int device_;
  void* ptr_ = nullptr;
  size_t bytes_;
};

// Owns one pinned, mapped, portable host allocation.
// Pinned, mapped host memory, zeroed. Large buffers are an anonymous map
// (transparent huge pages asked for) faulted in by all cores, then
// registered with CUDA as one range: cudaHostAlloc pins and zeroes page by
// page on one thread (measured on the H100 machine, 32 GiB: 16.6 s against
// 1.6 s; ht-bench-pin). One registration per buffer: a copy whose range
// spans two registrations is refused by the driver; and registering pieces
// from several threads gains little (ht-bench-pin: 16 GiB in 8 pieces, 0.88 s
// against 1.01 s): the driver pins under a lock of its own.
//
// With `pin` false a large buffer is faulted in but registered only by pin()
// (the vertex store: what the GPU cache holds whole is never pinned). Small
// buffers (cudaHostAlloc) are pinned either way.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes, bool pin = true);
  // The mapped rows of a row window (core/row_window.hpp), registered as one
  // range; data() is the window's base (row 0 of the whole matrix).
  explicit PinnedBuffer(RowWindow window, bool pin = true);
  // Registers the buffer when it is not yet (its seconds in pin_seconds()).
  void pin();
  bool pinned() const { return pinned_; }
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Seconds this buffer's construction took to fault its pages in and to
  // register them (0 for small buffers, which cudaHostAlloc pins; a window's
  // pages are faulted in by RowWindow).
  double pages_seconds() const { return pages_s_; }
  double pin_seconds() const { return pin_s_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_;
  double pages_s_ = 0, pin_s_ = 0;
  bool pinned_ = false;
  size_t mapped_ = 0;  // > 0: an anonymous map of this many bytes, registered once pinned_
  std::optional<RowWindow> window_;  // a window: its mapped range is registered
};

class CudaDevice final : public Device {
 public:
  // `spmm`: who computes the sparse products (engine/spmm_backend.hpp).
  CudaDevice(int index, int cuda_id, int64_t memory_cap, SpmmBackend spmm = SpmmBackend::automatic);
  ~CudaDevice() override;
  int index() const override { return index_; }
  int cuda_id() const { return cuda_id_; }
  int64_t allocated_bytes() const override { return bytes_; }
  int64_t memory_limit() const { return cap_; }

  Event create_event() override;
  void record(Event e) override;
  void wait(const Device& owner, Event e) override;
  void host_task(std::function<void()> fn) override;
  void begin_work() override;
  void end_work(WorkKind kind) override;
  void reset_timeline() override;
  std::vector<BusyInterval> timeline() override;

  DevMat alloc_mat(int64_t rows, int64_t cols) override;
  DevArray<float> alloc_floats(int64_t n) override;
  DevArray<std::byte> alloc_bytes(int64_t n) override;
  void copy_bytes_in(const std::byte* src, DevArray<std::byte> dst, int64_t n) override;
  void upload_bytes(std::span<const std::byte> src, DevArray<std::byte> dst) override;
  DevIdx upload(std::span<const uint32_t> v) override { return upload_raw<uint32_t>(v); }
  DevArray<int64_t> upload(std::span<const int64_t> v) override { return upload_raw<int64_t>(v); }
  DevArray<float> upload(std::span<const float> v) override { return upload_raw<float>(v); }
  DevArray<uint8_t> upload(std::span<const uint8_t> v) override { return upload_raw<uint8_t>(v); }
  DevArray<int32_t> upload(std::span<const int32_t> v) override { return upload_raw<int32_t>(v); }
  void write(DevArray<float> dst, std::span<const float> src) override;
  void read(DevArray<float> src, std::span<float> dst) override;
  void reserve(int64_t scratch_floats) override;
  int64_t row_ops_scratch(int64_t rows, int64_t cols) const override;
  int64_t gat_scratch(int64_t edges, int64_t rows, int heads, int64_t gcols) const override;
  int64_t spmm_scratch(int64_t segments, int64_t cols) const override;
  void copy_bytes_out(DevArray<std::byte> src, std::byte* dst, int64_t n) override;
  void widen_rows(DevArray<std::byte> src, StoreDtype t, DevMat dst) override;
  void narrow_rows(DevMat src, StoreDtype t, DevArray<std::byte> dst) override;

  void gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                        const DropoutSpec& drop) override;
  void copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) override;
  void copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) override;
  void pull_from_peer(Device& peer, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) override;
  void gather_rows(DevMat src, DevIdx src_rows, DevMat dst, DevIdx dst_rows) override;
  void copy_to_peer(DevMat src, Device& peer, DevMat peer_dst) override;
  void push_add_to_peer(DevMat src, int64_t src_row0, Device& peer, DevMat peer_dst, DevIdx peer_rows) override;
  void add_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) override;
  void compact_and_zero(DevMat src, DevIdx rows, DevMat staging) override;
  void scatter_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) override;
  void zero(DevMat m, int64_t row0, int64_t n) override;
  void zero(DevArray<float> a) override;
  void copy(DevMat src, DevMat dst) override;

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) override;
  void spmm(const DevTopology& t, DevMat x, DevMat out) override;
  void spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) override;
  void bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) override;
  void act_backward(DevMat dh, DevMat z, Act act, DevMat dz) override;
  void col_sum_add(DevMat m, DevArray<float> grad) override;
  void dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) override;
  void gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                  float slope, DevArray<float> pre, DevArray<float> score) override;
  void gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                   DevArray<float> alpha_drop, const DropoutSpec& attn) override;
  void gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                     DevMat out) override;
  void gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                    float slope, bool mean, DevArray<float> pre, DevArray<float> alpha, DevArray<float> alpha_drop,
                    const DropoutSpec& attn, DevMat dout, DevMat dg, DevArray<float> d_att_src,
                    DevArray<float> d_att_dst) override;
  void softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex,
                    float scale, DevMat dlogits) override;
  LossStats take_loss_stats() override;
  void synchronize() override;
  std::vector<int64_t> derive_topologies(std::span<const DeriveTopology> steps,
                                         const EdgeKeys& vertices) override;  // (cuda_derive.cpp)
  SpmmBackend spmm_backend() const { return spmm_; }
  // The compute stream (NCCL and cuBLAS work runs there).
  cudaStream_t stream() const { return streams_[0]; }
  // The stream of the current queue (Device::use).
  cudaStream_t current() const { return streams_[static_cast<int>(queue_)]; }

 private:
  void* allocate(size_t bytes);
  void activate() const;
  template <typename T>
  DevArray<T> upload_raw(std::span<const T> v) {
    T* p = static_cast<T*>(allocate(v.size_bytes()));
    copy_in(p, v.data(), v.size_bytes());
    return {p, static_cast<int64_t>(v.size())};
  }
  void copy_in(void* dst, const void* src, size_t bytes);
  // Who computes this product (choose_spmm_backend), cuSPARSE created if needed.
  bool use_cusparse(const SpmmCase& c);

  // Rethrows an exception a host task raised on the driver's thread.
  void check_host_tasks();

  int index_, cuda_id_;
  int64_t cap_;
  int64_t bytes_ = 0;
  cudaStream_t streams_[kNumQueues] = {};  // by Queue: compute, load, store, host, peer
  std::vector<cudaEvent_t> events_;        // Device::create_event, no timing
  // Timeline: timing events recorded in pairs; [0] marks the start.
  std::vector<cudaEvent_t> timing_;
  int64_t timing_used_ = 0;
  int64_t open_[kNumQueues] = {};          // begin_work's event per queue
  struct Pair {
    WorkKind kind;
    int64_t begin, end;
    Queue queue;
  };
  std::vector<Pair> pairs_;
  double timeline_offset_ = 0;             // start event vs the host's clock at reset
  cublasHandle_t blas_ = nullptr;
  SpmmBackend spmm_ = SpmmBackend::automatic;
  std::unique_ptr<cuda::CusparseSpmm> sparse_;  // from the first product that uses it (use_cusparse)
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  std::shared_ptr<struct HostTaskErrors> host_errors_;
  // upload_bytes: two pinned pieces the host fills in turn, each reused
  // once its copy (the event) has left; made on first use.
  std::unique_ptr<PinnedBuffer> upload_staging_;
  cudaEvent_t upload_done_[2] = {};
  float* scratch_ = nullptr;        // device: GAT backward per-edge values
  int64_t scratch_floats_ = 0;
  void* stats_ = nullptr;           // device: loss statistics, accumulated until read
};

}  // namespace ht
