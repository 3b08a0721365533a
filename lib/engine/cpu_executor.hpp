#pragma once
// CPU reference executor: plain C++ + OpenMP. Emulates m GPUs with separate
// buffers, so the whole plan (P2P reads, in-place reuse, pushes, flushes)
// runs and is tested on a machine with no GPU. It is the oracle for the CUDA
// executor and a usable fallback.
//
// Queue timing: every queue of an emulated device is a list of operations.
// `eager` runs each operation when it is issued (program order: an operation
// issued ahead of the work it must not disturb shows a missing buffer
// rotation). `late` runs compute at once but defers the load, store and host
// queues until an event wait or a synchronize forces them, so an operation
// runs as late as the events allow: a missing wait shows up as a stale or
// overwritten row. `late_compute` is the mirror image: loads run when issued,
// every other queue waits until forced, so a load that overwrites a buffer
// (or a packed step) that earlier work still has to read shows up. The peer
// queue's early pulls are deferred under both (run before a consumer that
// does not wait for them, or after a load that overwrites their source) and
// run when issued under `late_compute_early_peer` (before the compute that
// still reads what they overwrite). The equivalence tests
// run all three timings.
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/row_window.hpp"
#include "engine/executor.hpp"

namespace ht {

enum class CopyTiming { eager, late, late_compute, late_compute_early_peer };

// The emulation of pinning: the host buffers allocated unpinned
// (Executor::alloc_host with `pin` false) until pin_host. A device op that
// reads or writes host rows of one throws, as a GPU could not reach them
// through a mapped pointer. Shared by the executor (which writes it) and its
// devices (which check at issue time).
class UnpinnedHost {
 public:
  void add(const HostMat& m);
  void remove(const HostMat& m);
  bool overlaps(const HostMat& m) const;

 private:
  static std::pair<uintptr_t, uintptr_t> range(const HostMat& m);
  mutable std::mutex mutex_;
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges_;  // [begin, end) of each unpinned buffer's rows
};

class CpuDevice final : public Device {
 public:
  explicit CpuDevice(int index, CopyTiming timing = CopyTiming::eager,
                     std::shared_ptr<const UnpinnedHost> unpinned = nullptr)
      : index_(index), timing_(timing), unpinned_(std::move(unpinned)) {}
  int index() const override { return index_; }

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
  void copy_bytes_out(DevArray<std::byte> src, std::byte* dst, int64_t n) override;
  void widen_rows(DevArray<std::byte> src, StoreDtype t, DevMat dst) override;
  void narrow_rows(DevMat src, StoreDtype t, DevArray<std::byte> dst) override;
  DevIdx upload(std::span<const uint32_t> v) override { return store(u32_, v); }
  DevArray<int64_t> upload(std::span<const int64_t> v) override { return store(i64_, v); }
  DevArray<float> upload(std::span<const float> v) override { return store(f32_, v); }
  DevArray<uint8_t> upload(std::span<const uint8_t> v) override { return store(u8_, v); }
  DevArray<int32_t> upload(std::span<const int32_t> v) override { return store(i32_, v); }
  void write(DevArray<float> dst, std::span<const float> src) override;
  void read(DevArray<float> src, std::span<float> dst) override;

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
                                         const EdgeKeys& vertices) override;
  // Runs the current queue's deferred operations: what is issued next on it
  // may run at once (CpuExecutor::exchange).
  void catch_up() { run_until(queue_, state(queue_).issued); }

  int64_t allocated_bytes() const override { return bytes_; }

 private:
  struct QueueState {
    std::deque<std::function<void()>> pending;  // deferred operations, oldest first
    int64_t issued = 0, done = 0;
    bool running = false;
    double open = 0;  // begin_work's time (steady_seconds)
  };
  struct Mark {
    Queue queue = Queue::compute;
    int64_t position = 0;  // the queue's issued count at record time
  };
  template <typename T>
  DevArray<T> store(std::deque<std::vector<T>>& pool, std::span<const T> v) {
    pool.emplace_back(v.begin(), v.end());
    bytes_ += static_cast<int64_t>(v.size() * sizeof(T));
    return {pool.back().data(), static_cast<int64_t>(v.size())};
  }
  // Issues `op` on the current queue: runs it now, or defers it (late timing).
  void enqueue(std::function<void()> op);
  bool deferred(Queue q) const {
    switch (timing_) {
      case CopyTiming::eager: return false;
      case CopyTiming::late: return q != Queue::compute;
      case CopyTiming::late_compute: return q != Queue::load;
      case CopyTiming::late_compute_early_peer: return q != Queue::load && q != Queue::peer;
    }
    return false;
  }
  // Runs queue q's deferred operations up to its issued position `pos`.
  void run_until(Queue q, int64_t pos);
  QueueState& state(Queue q) { return queues_[static_cast<int>(q)]; }

  // Throws when `m` is an unpinned host buffer (UnpinnedHost).
  void check_pinned(const HostMat& m, const char* op) const;

  int index_;
  CopyTiming timing_;
  std::shared_ptr<const UnpinnedHost> unpinned_;
  QueueState queues_[kNumQueues];
  std::vector<Mark> events_;
  std::vector<BusyInterval> intervals_;
  LossStats loss_;
  int64_t bytes_ = 0;
  std::deque<std::vector<float>> f32_;
  std::deque<std::vector<std::byte>> bytes_pool_;
  std::deque<std::vector<uint32_t>> u32_;
  std::deque<std::vector<int64_t>> i64_;
  std::deque<std::vector<uint8_t>> u8_;
  std::deque<std::vector<int32_t>> i32_;
};

class CpuExecutor final : public Executor {
 public:
  explicit CpuExecutor(int num_devices, CopyTiming timing = CopyTiming::eager);
  std::string name() const override { return "cpu"; }
  int num_devices() const override { return static_cast<int>(devices_.size()); }
  Device& device(int i) override { return *devices_.at(i); }
  HostMat alloc_host(int64_t rows, int64_t cols, StoreDtype dtype = StoreDtype::f32, bool pin = true) override;
  HostMat alloc_host_rows(int64_t rows, int64_t cols, StoreDtype dtype, int64_t begin, int64_t end,
                          bool pin = true) override;
  // Emulated: the buffer leaves the unpinned list (no time is counted).
  void pin_host(const HostMat& m) override { unpinned_->remove(m); }
  bool host_pinned(const HostMat& m) const override { return !unpinned_->overlaps(m); }
  std::byte* alloc_pinned_bytes(int64_t n) override;
  void allreduce_sum(std::span<DevArray<float>> per_device) override;
  // Over MPI (the job's Transport): each transfer runs when issued, after its
  // device's queue has caught up, so every process runs its exchanges in
  // issue order, the order of the trainer's schedule.
  void exchange(std::span<const RowTransfer> group) override;
  int64_t peak_device_bytes() const override;
  int64_t host_bytes() const override {
    std::lock_guard lock(host_mutex_);
    return host_bytes_;
  }
  HostAllocTimes host_alloc_times() const override;

 private:
  std::shared_ptr<UnpinnedHost> unpinned_ = std::make_shared<UnpinnedHost>();
  std::vector<std::unique_ptr<CpuDevice>> devices_;
  mutable std::mutex host_mutex_;  // the lists below: the store may be allocated beside setup
  std::deque<std::vector<float>> host_;  // small host buffers
  std::deque<HostBlock> large_host_;     // large ones (alloc_host)
  std::deque<std::vector<std::byte>> host_bytes_pool_;
  std::deque<RowWindow> windows_;
  int64_t host_bytes_ = 0;
};

}  // namespace ht
