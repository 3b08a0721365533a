#include "cuda/cuda_executor.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/row_window.hpp"
#include "core/timer.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"
#include "engine/transport.hpp"

namespace ht {
namespace {

thread_local HostAllocTimes this_thread_times;  // Executor::host_alloc_times

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(int m, int64_t cap, int first_gpu, SpmmBackend spmm) {
    const int visible = cuda_device_count();
    HT_CHECK(visible > 0, "no CUDA GPU is visible (driver missing or CUDA_VISIBLE_DEVICES empty); use --backend cpu");
    HT_CHECK(m >= 1 && first_gpu >= 0 && first_gpu + m <= visible, "asked for GPUs {}..{} but {} are visible",
             first_gpu, first_gpu + m - 1, visible);
    for (int i = 0; i < m; ++i) devices_.push_back(std::make_unique<CudaDevice>(i, first_gpu + i, cap, spmm));
    enable_peer_access();
#ifdef HT_HAVE_NCCL
    if (m > 1) {
      comms_.resize(m);
      std::vector<int> ids(m);
      for (int i = 0; i < m; ++i) ids[i] = i;
      HT_NCCL_TRY(ncclCommInitAll(comms_.data(), m, ids.data()));
    }
#endif
    cudaDeviceProp prop{};
    HT_CUDA_TRY(cudaGetDeviceProperties(&prop, first_gpu));
    HT_CUDA_TRY(cudaGetDevice(&made_current_));  // (adopt_thread)
    log::info("CUDA executor: {} x {} ({} SMs, {:.1f} GiB); sparse products: {}", m, prop.name,
              prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 30),
              spmm == SpmmBackend::own        ? "own kernels"
              : spmm == SpmmBackend::cusparse ? "cuSPARSE (cusparseSpMM, CSR_ALG3)"
                                              : "auto (per product; own kernels until measured)");
  }

  ~CudaExecutor() override {
#ifdef HT_HAVE_NCCL
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
#endif
  }

  std::string name() const override { return "cuda"; }
  int num_devices() const override { return static_cast<int>(devices_.size()); }
  Device& device(int i) override { return *devices_.at(i); }

  // The buffers are made outside the lock (seconds for a large one); only
  // the lists are shared with the other allocating thread.
  HostMat alloc_host(int64_t rows, int64_t cols, StoreDtype dtype, bool pin) override {
    const int64_t bytes = rows * cols * dtype_bytes(dtype);
    auto buf = std::make_unique<PinnedBuffer>(static_cast<size_t>(bytes), pin);
    auto* p = static_cast<std::byte*>(buf->data());  // zeroed (faulted in by all cores when large)
    this_thread_times.pages += buf->pages_seconds();
    this_thread_times.pinned += buf->pin_seconds();
    std::lock_guard lock(host_mutex_);
    host_.push_back(std::move(buf));
    host_bytes_ += bytes;
    return {p, rows, cols, -1, dtype};
  }

  HostMat alloc_host_rows(int64_t rows, int64_t cols, StoreDtype dtype, int64_t begin, int64_t end,
                          bool pin) override {
    const int64_t row_bytes = cols * dtype_bytes(dtype);
    Timer pages;
    RowWindow window(rows, row_bytes, begin, end);  // its pages faulted in by all cores
    const double pages_s = pages.seconds();
    auto buf = std::make_unique<PinnedBuffer>(std::move(window), pin);
    this_thread_times.pages += pages_s;
    this_thread_times.pinned += buf->pin_seconds();
    std::lock_guard lock(host_mutex_);
    host_.push_back(std::move(buf));
    host_bytes_ += (end - begin) * row_bytes;
    return {host_.back()->data(), rows, cols, -1, dtype, begin, end};
  }

  HostAllocTimes host_alloc_times() const override { return this_thread_times; }

  // The buffer is found under the lock and registered outside it (seconds
  // for a large one); nothing removes buffers while the trainer sets up.
  void pin_host(const HostMat& m) override {
    PinnedBuffer* buf = find(m);
    const double before = buf->pin_seconds();
    buf->pin();
    this_thread_times.pinned += buf->pin_seconds() - before;
  }
  bool host_pinned(const HostMat& m) const override { return find(m)->pinned(); }

  // A fresh thread's current GPU is GPU 0, which a process of a several-process
  // job may not drive: registering memory there would make a context on it.
  void enter_thread() override { HT_CUDA_TRY(cudaSetDevice(devices_.front()->cuda_id())); }
  void adopt_thread() override { HT_CUDA_TRY(cudaSetDevice(made_current_)); }

  // The job-wide communicators: device i of this process is rank
  // first_device + i of one NCCL communicator over all the job's GPUs, its
  // id made by process 0 and sent to the others through the transport.
  void join(const JobLayout& job) override {
    Executor::join(job);
    if (!multi_process()) return;
#ifdef HT_HAVE_NCCL
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
    comms_.assign(devices_.size(), nullptr);
    ncclUniqueId id{};
    if (job.transport->rank() == 0) HT_NCCL_TRY(ncclGetUniqueId(&id));
    job.transport->broadcast(std::as_writable_bytes(std::span<ncclUniqueId>(&id, 1)), 0);
    HT_NCCL_TRY(ncclGroupStart());
    for (size_t i = 0; i < devices_.size(); ++i) {
      HT_CUDA_TRY(cudaSetDevice(devices_[i]->cuda_id()));
      HT_NCCL_TRY(ncclCommInitRank(&comms_[i], job.job_devices, id, job.first_device + static_cast<int>(i)));
    }
    HT_NCCL_TRY(ncclGroupEnd());
    log::info("NCCL: GPUs {}..{} of {} in this process", job.first_device,
              job.first_device + num_devices() - 1, job.job_devices);
#else
    throw Error("this build has no NCCL: a multi-process job on GPUs needs it");
#endif
  }

  // One NCCL group: every send and receive of the exchange on its device's
  // current stream, so that no order between them can deadlock.
  void exchange(std::span<const RowTransfer> group) override {
    if (group.empty()) return;
#ifdef HT_HAVE_NCCL
    HT_NCCL_TRY(ncclGroupStart());
    for (const RowTransfer& t : group) {
      const CudaDevice& d = *devices_.at(t.device);
      HT_CUDA_TRY(cudaSetDevice(d.cuda_id()));
      const size_t n = static_cast<size_t>(t.floats);
      if (t.send)
        HT_NCCL_TRY(ncclSend(t.data, n, ncclFloat, t.peer, comms_[t.device], d.current()));
      else
        HT_NCCL_TRY(ncclRecv(t.data, n, ncclFloat, t.peer, comms_[t.device], d.current()));
    }
    HT_NCCL_TRY(ncclGroupEnd());
#else
    Executor::exchange(group);
#endif
  }

  std::byte* alloc_pinned_bytes(int64_t n) override {
    auto buf = std::make_unique<PinnedBuffer>(static_cast<size_t>(n));  // plan blocks: not vertex buffers
    auto* p = static_cast<std::byte*>(buf->data());
    std::lock_guard lock(host_mutex_);
    host_.push_back(std::move(buf));
    return p;
  }

  bool has_device_memory() const override { return true; }

  HostMat alloc_store_on_device(int device, int64_t rows, int64_t cols) override {
    DevArray<float> a = devices_.at(device)->alloc_floats(rows * cols);
    return {a.data, rows, cols, device};
  }

  void store_fill(const HostMat& dst, std::span<const float> src) override {
    if (!dst.on_device()) return Executor::store_fill(dst, src);
    HT_CHECK(static_cast<int64_t>(src.size()) == dst.rows * dst.cols, "vertex store fill: size mismatch");
    // Through the device's pinned pieces (all cores fill them), on the queue
    // that zeroed the store: the driver stages pageable memory with one
    // thread (community in memory: 0.98 GB of h^0 in 0.22 s, issue 33).
    Device& d = *devices_.at(dst.device);
    d.use(Queue::compute);
    d.upload_bytes(std::as_bytes(src), {reinterpret_cast<std::byte*>(dst.f32()), dst.rows * dst.cols * 4});
    d.synchronize();
  }

  void store_zero(const HostMat& dst) override {
    if (!dst.on_device()) return Executor::store_zero(dst);
    Device& d = *devices_.at(dst.device);
    d.use(Queue::compute);
    d.zero(DevArray<float>{dst.f32(), dst.rows * dst.cols});
    d.synchronize();
  }

  void store_read(const HostMat& src, std::span<float> dst) override {
    if (!src.on_device()) return Executor::store_read(src, dst);
    devices_.at(src.device)->read({src.f32(), src.rows * src.cols}, dst);
  }

  void allreduce_sum(std::span<DevArray<float>> parts) override {
    HT_ASSERT(static_cast<int>(parts.size()) == num_devices());
    if (job_devices() == 1) return;
#ifdef HT_HAVE_NCCL
    HT_NCCL_TRY(ncclGroupStart());
    for (int i = 0; i < num_devices(); ++i) {
      HT_CUDA_TRY(cudaSetDevice(devices_[i]->cuda_id()));
      HT_NCCL_TRY(ncclAllReduce(parts[i].data, parts[i].data, static_cast<size_t>(parts[i].size), ncclFloat, ncclSum,
                                comms_[i], devices_[i]->stream()));
    }
    HT_NCCL_TRY(ncclGroupEnd());
    synchronize_all();
#else
    // Without NCCL: sum through the host (correct, slower).
    const int64_t n = parts[0].size;
    std::vector<float> sum(n, 0.0f), part(n);
    for (int i = 0; i < num_devices(); ++i) {
      devices_[i]->read(parts[i], part);
      for (int64_t j = 0; j < n; ++j) sum[j] += part[j];
    }
    for (int i = 0; i < num_devices(); ++i) devices_[i]->write(parts[i], sum);
#endif
  }

  int64_t peak_device_bytes() const override {
    int64_t m = 0;
    for (const auto& d : devices_) m = std::max(m, d->allocated_bytes());
    return m;
  }
  int64_t host_bytes() const override {
    std::lock_guard lock(host_mutex_);
    return host_bytes_;
  }
  int64_t memory_limit(int device) const override { return devices_.at(device)->memory_limit(); }

 private:
  // The host buffer whose data() is m.data (a window's: its base).
  PinnedBuffer* find(const HostMat& m) const {
    std::lock_guard lock(host_mutex_);
    for (const auto& b : host_)
      if (b->data() == m.data) return b.get();
    throw Error("pin_host: not a host buffer of this executor");
  }
  void enable_peer_access() {
    const int m = num_devices();
    for (int i = 0; i < m; ++i) {
      HT_CUDA_TRY(cudaSetDevice(devices_[i]->cuda_id()));
      for (int k = 0; k < m; ++k) {
        if (k == i) continue;
        int ok = 0;
        HT_CUDA_TRY(cudaDeviceCanAccessPeer(&ok, devices_[i]->cuda_id(), devices_[k]->cuda_id()));
        HT_CHECK(ok, "GPU {} cannot access GPU {}'s memory (no P2P); this version needs P2P between the GPUs", i, k);
        const cudaError_t e = cudaDeviceEnablePeerAccess(devices_[k]->cuda_id(), 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          cudaGetLastError();
        } else {
          HT_CUDA_TRY(e);
        }
      }
    }
  }

  std::vector<std::unique_ptr<CudaDevice>> devices_;
  int made_current_ = 0;  // the maker thread's current GPU as the constructor returned
  mutable std::mutex host_mutex_;  // host_, host_bytes_: the store may be allocated beside setup
  std::vector<std::unique_ptr<PinnedBuffer>> host_;
  int64_t host_bytes_ = 0;
#ifdef HT_HAVE_NCCL
  std::vector<ncclComm_t> comms_;
#endif
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Executor> make_cuda_executor(int num_devices, int64_t memory_cap_bytes, int first_gpu,
                                             SpmmBackend spmm) {
  return std::make_unique<CudaExecutor>(num_devices, memory_cap_bytes, first_gpu, spmm);
}

}  // namespace ht
