#include "cuda/cuda_device.hpp"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cusparse_spmm.hpp"
#include "cuda/kernels.cuh"

namespace ht {

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : device_(device), bytes_(bytes) {
  HT_CUDA_TRY(cudaSetDevice(device_));
  HT_CUDA_TRY(cudaMalloc(&ptr_, bytes_ == 0 ? 16 : bytes_));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) {
    cudaSetDevice(device_);
    cudaFree(ptr_);
  }
}

namespace {
// Below this, cudaHostAlloc is as fast and keeps small buffers off their own maps.
constexpr size_t kMapAtLeast = size_t{64} << 20;
}  // namespace

PinnedBuffer::PinnedBuffer(size_t bytes, bool pin) : bytes_(bytes) {
  if (bytes_ < kMapAtLeast) {
    HT_CUDA_TRY(cudaHostAlloc(&ptr_, bytes_ == 0 ? 16 : bytes_, cudaHostAllocPortable | cudaHostAllocMapped));
    std::memset(ptr_, 0, bytes_);
    pinned_ = true;
    return;
  }
  void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("cannot map {} of host memory: {}", format_bytes(static_cast<double>(bytes_)),
                            std::strerror(errno)));
  ::madvise(p, bytes_, MADV_HUGEPAGE);  // best effort: fewer pages to fault in and pin
  // First touch by every core, one byte per page, each thread a contiguous
  // range: the kernel faults the pages in zeroed, in parallel. (Not a memset
  // in small blocks: threads writing the same huge page at once each fault,
  // allocate and zero a whole 2 MiB page before all but one give theirs back,
  // and the kernel's zeroing would be written over once more.)
  Timer pages;
  prefault_pages(p, bytes_);
  pages_s_ = pages.seconds();
  ptr_ = p;
  mapped_ = bytes_;
  if (!pin) return;
  try {
    this->pin();
  } catch (...) {
    ::munmap(p, bytes_);
    throw;
  }
}
PinnedBuffer::PinnedBuffer(RowWindow window, bool pin) : bytes_(window.mapped_bytes()) {
  ptr_ = window.base();
  window_.emplace(std::move(window));
  if (pin) this->pin();
}

void PinnedBuffer::pin() {
  if (pinned_) return;
  Timer pin;
  void* range = window_ ? window_->mapped() : ptr_;
  if (bytes_ > 0) HT_CUDA_TRY(cudaHostRegister(range, bytes_, cudaHostRegisterPortable | cudaHostRegisterMapped));
  pin_s_ += pin.seconds();
  pinned_ = true;
}

PinnedBuffer::~PinnedBuffer() {
  if (window_) {
    if (bytes_ > 0 && pinned_) cudaHostUnregister(window_->mapped());
    return;  // the window unmaps itself
  }
  if (!ptr_) return;
  if (mapped_ > 0) {
    if (pinned_) cudaHostUnregister(ptr_);
    ::munmap(ptr_, mapped_);
    return;
  }
  cudaFreeHost(ptr_);
}

// Exceptions of host tasks: they run on the driver's thread, where nothing
// may throw; the first one is kept and rethrown by the issuing thread.
struct HostTaskErrors {
  std::mutex mutex;
  std::string first;
};

namespace {

struct HostTaskCall {
  std::function<void()> fn;
  std::shared_ptr<HostTaskErrors> errors;
};

void CUDART_CB run_host_task(void* p) {
  std::unique_ptr<HostTaskCall> call(static_cast<HostTaskCall*>(p));
  try {
    call->fn();
  } catch (const std::exception& e) {
    std::lock_guard lock(call->errors->mutex);
    if (call->errors->first.empty()) call->errors->first = e.what();
  }
}

}  // namespace

CudaDevice::CudaDevice(int index, int cuda_id, int64_t memory_cap, SpmmBackend spmm)
    : index_(index), cuda_id_(cuda_id), cap_(memory_cap), spmm_(spmm), host_errors_(std::make_shared<HostTaskErrors>()) {
  activate();
  for (cudaStream_t& st : streams_) HT_CUDA_TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  HT_CUBLAS_TRY(cublasCreate(&blas_));
  HT_CUBLAS_TRY(cublasSetStream(blas_, streams_[0]));
  size_t free_b = 0, total_b = 0;
  HT_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  const int64_t usable = static_cast<int64_t>(free_b) - (int64_t{256} << 20);  // leave room for the libraries
  if (cap_ <= 0 || cap_ > usable) cap_ = usable;
  stats_ = allocate(128);
  HT_CUDA_TRY(cudaMemsetAsync(stats_, 0, 128, streams_[0]));
  timing_.resize(1);
  HT_CUDA_TRY(cudaEventCreate(&timing_[0]));
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(cuda_id_);
  for (cudaStream_t st : streams_)
    if (st) cudaStreamSynchronize(st);
  sparse_.reset();  // its buffers are freed on the streams, before they go
  if (blas_) cublasDestroy(blas_);
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (cudaEvent_t e : timing_) cudaEventDestroy(e);
  for (cudaEvent_t e : upload_done_)
    if (e) cudaEventDestroy(e);
  for (cudaStream_t st : streams_)
    if (st) cudaStreamDestroy(st);
}

void CudaDevice::activate() const { HT_CUDA_TRY(cudaSetDevice(cuda_id_)); }

void CudaDevice::check_host_tasks() {
  std::lock_guard lock(host_errors_->mutex);
  if (!host_errors_->first.empty()) throw Error(fmt::format("GPU {}: host task failed: {}", index_, host_errors_->first));
}

Event CudaDevice::create_event() {
  activate();
  cudaEvent_t e = nullptr;
  HT_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  events_.push_back(e);
  return {static_cast<int>(events_.size()) - 1};
}

void CudaDevice::record(Event e) {
  HT_ASSERT(e.id >= 0 && e.id < static_cast<int>(events_.size()));
  activate();
  HT_CUDA_TRY(cudaEventRecord(events_[e.id], current()));
}

void CudaDevice::wait(const Device& owner_base, Event e) {
  const auto& owner = static_cast<const CudaDevice&>(owner_base);
  HT_ASSERT(e.id >= 0 && e.id < static_cast<int>(owner.events_.size()));
  activate();
  HT_CUDA_TRY(cudaStreamWaitEvent(current(), owner.events_[e.id], 0));
}

void CudaDevice::host_task(std::function<void()> fn) {
  activate();
  auto call = std::make_unique<HostTaskCall>(HostTaskCall{std::move(fn), host_errors_});
  HT_CUDA_TRY(cudaLaunchHostFunc(current(), run_host_task, call.get()));
  call.release();  // run_host_task owns it now
}

// Timing events are created as the timeline grows in the first epoch and
// reused after: none are created in later epochs.
void CudaDevice::begin_work() {
  activate();
  if (timing_used_ == static_cast<int64_t>(timing_.size())) {
    timing_.emplace_back();
    HT_CUDA_TRY(cudaEventCreate(&timing_.back()));
  }
  open_[static_cast<int>(queue_)] = timing_used_;
  HT_CUDA_TRY(cudaEventRecord(timing_[timing_used_++], current()));
}

void CudaDevice::end_work(WorkKind kind) {
  const int64_t begin = open_[static_cast<int>(queue_)];
  begin_work();  // the end mark
  pairs_.push_back({kind, begin, timing_used_ - 1, queue_});
}

void CudaDevice::reset_timeline() {
  synchronize();
  activate();
  HT_CUDA_TRY(cudaEventRecord(timing_[0], streams_[0]));
  HT_CUDA_TRY(cudaEventSynchronize(timing_[0]));
  timeline_offset_ = steady_seconds();
  timing_used_ = 1;
  pairs_.clear();
}

// Seconds of the host's steady clock: the start event's time is the host
// clock's reading when it completed (the queues were idle), plus the events'
// elapsed times.
std::vector<BusyInterval> CudaDevice::timeline() {
  synchronize();
  std::vector<BusyInterval> out;
  out.reserve(pairs_.size());
  auto at = [&](int64_t i) {
    float ms = 0;
    HT_CUDA_TRY(cudaEventElapsedTime(&ms, timing_[0], timing_[i]));
    return timeline_offset_ + ms * 1e-3;
  };
  for (const Pair& p : pairs_) out.push_back({p.kind, at(p.begin), at(p.end), index_, p.queue});
  return out;
}

DevMat CudaDevice::alloc_mat(int64_t rows, int64_t cols) {
  DevArray<float> a = alloc_floats(rows * cols);
  return {a.data, rows, cols};
}

void* CudaDevice::allocate(size_t bytes) {
  const int64_t need = static_cast<int64_t>((bytes + 255) / 256 * 256);
  if (bytes_ + need > cap_)
    throw Error(fmt::format("GPU {}: out of memory: {} more needed with {} already allocated, limit {} "
                            "(--gpu-mem or the device's free memory)",
                            index_, format_bytes(static_cast<double>(need)), format_bytes(static_cast<double>(bytes_)),
                            format_bytes(static_cast<double>(cap_))));
  buffers_.push_back(std::make_unique<DeviceBuffer>(cuda_id_, bytes));
  bytes_ += need;
  return buffers_.back()->data();
}

void CudaDevice::copy_in(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, streams_[0]));
  HT_CUDA_TRY(cudaStreamSynchronize(streams_[0]));
}

DevArray<std::byte> CudaDevice::alloc_bytes(int64_t n) {
  return {static_cast<std::byte*>(allocate(static_cast<size_t>(n))), n};
}

void CudaDevice::copy_bytes_in(const std::byte* src, DevArray<std::byte> dst, int64_t n) {
  HT_ASSERT(n <= dst.size);
  if (n <= 0) return;
  activate();
  // Default: `src` is pinned host memory, or device memory (the GPU cache).
  HT_CUDA_TRY(cudaMemcpyAsync(dst.data, src, static_cast<size_t>(n), cudaMemcpyDefault, current()));
}

// Pageable bytes through two pinned pieces: the host copies piece k + 1 (all
// cores) while the copy engine moves piece k. The driver's own path for
// pageable memory stages it with one thread.
void CudaDevice::upload_bytes(std::span<const std::byte> src, DevArray<std::byte> dst) {
  constexpr size_t kPiece = size_t{16} << 20;
  HT_ASSERT(static_cast<int64_t>(src.size()) <= dst.size);
  if (src.empty()) return;
  activate();
  if (!upload_staging_) {
    upload_staging_ = std::make_unique<PinnedBuffer>(2 * kPiece);
    for (cudaEvent_t& e : upload_done_) HT_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  auto* pieces = static_cast<std::byte*>(upload_staging_->data());
  for (size_t off = 0, k = 0; off < src.size(); off += kPiece, k ^= 1) {
    const size_t n = std::min(kPiece, src.size() - off);
    std::byte* piece = pieces + k * kPiece;
    HT_CUDA_TRY(cudaEventSynchronize(upload_done_[k]));  // its last copy has left (never recorded: at once)
    parallel_copy(piece, src.data() + off, n);
    HT_CUDA_TRY(cudaMemcpyAsync(dst.data + off, piece, n, cudaMemcpyHostToDevice, current()));
    HT_CUDA_TRY(cudaEventRecord(upload_done_[k], current()));
  }
}

DevArray<float> CudaDevice::alloc_floats(int64_t n) {
  float* p = static_cast<float*>(allocate(static_cast<size_t>(n) * 4));
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * 4, streams_[0]));  // never read garbage
  return {p, n};
}

void CudaDevice::write(DevArray<float> dst, std::span<const float> src) {
  HT_ASSERT(static_cast<int64_t>(src.size()) <= dst.size);
  copy_in(dst.data, src.data(), src.size_bytes());
}

void CudaDevice::read(DevArray<float> src, std::span<float> dst) {
  HT_ASSERT(static_cast<int64_t>(dst.size()) <= src.size);
  synchronize();
  HT_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data, dst.size_bytes(), cudaMemcpyDeviceToHost, streams_[0]));
  HT_CUDA_TRY(cudaStreamSynchronize(streams_[0]));
}

int64_t CudaDevice::gat_scratch(int64_t edges, int64_t rows, int heads, int64_t gcols) const {
  return cuda::gat_backward_scratch_floats(edges, rows, heads, gcols, 0);  // plus spmm_scratch for the segments
}

int64_t CudaDevice::spmm_scratch(int64_t segments, int64_t cols) const { return segments * cols; }

int64_t CudaDevice::row_ops_scratch(int64_t rows, int64_t cols) const {
  return std::max(cuda::col_sum_scratch_floats(rows, cols), cuda::softmax_xent_scratch_floats(rows));
}

void CudaDevice::reserve(int64_t scratch_floats) {
  if (scratch_floats > scratch_floats_) {
    scratch_ = alloc_floats(scratch_floats).data;
    scratch_floats_ = scratch_floats;
  }
}

void CudaDevice::copy_bytes_out(DevArray<std::byte> src, std::byte* dst, int64_t n) {
  HT_ASSERT(n <= src.size);
  if (n <= 0) return;
  activate();
  // Default: `dst` is pinned host memory, or device memory (the GPU cache).
  HT_CUDA_TRY(cudaMemcpyAsync(dst, src.data, static_cast<size_t>(n), cudaMemcpyDefault, current()));
}

void CudaDevice::widen_rows(DevArray<std::byte> src, StoreDtype t, DevMat dst) {
  HT_ASSERT(t != StoreDtype::f32 && dst.rows * dst.cols * 2 <= src.size);
  activate();
  cuda::widen_rows16(src.data, t, dst.rows * dst.cols, dst.data, current());
}

void CudaDevice::narrow_rows(DevMat src, StoreDtype t, DevArray<std::byte> dst) {
  HT_ASSERT(t != StoreDtype::f32 && src.rows * src.cols * 2 <= dst.size);
  activate();
  cuda::store_rows16(src.data, src.rows * src.cols, dst.data, t, current());
}

void CudaDevice::gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                                  const DropoutSpec& drop) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  activate();
  cuda::gather_rows(src.data, src.dtype, src_rows.data, dst_rows.data, src_rows.size, src.cols, dst.data, drop,
                    current());
}

void CudaDevice::copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) {
  HT_ASSERT(src.cols == dst.cols);
  if (n <= 0) return;
  activate();
  if (src.dtype != StoreDtype::f32) {  // widened by a zero-copy read of the rows (the trainer converts on compute)
    cuda::gather_rows(src.row_bytes(src_row0), src.dtype, nullptr, nullptr, n, src.cols, dst.row(dst_row0),
                      DropoutSpec{}, current());
    return;
  }
  HT_CUDA_TRY(cudaMemcpyAsync(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4,
                              cudaMemcpyDefault, current()));
}

void CudaDevice::copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) {
  HT_ASSERT(src.cols == dst.cols);
  if (n <= 0) return;
  activate();
  if (dst.dtype != StoreDtype::f32) {  // rounded by the device, written straight into the mapped rows
    cuda::store_rows16(src.row(src_row0), n * src.cols, dst.row_bytes(dst_row0), dst.dtype, current());
    return;
  }
  HT_CUDA_TRY(cudaMemcpyAsync(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4,
                              cudaMemcpyDefault, current()));
}

void CudaDevice::pull_from_peer(Device&, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) {
  HT_ASSERT(peer_src.cols == dst.cols);
  activate();
  cuda::pull_rows(peer_src.data, peer_rows.data, peer_rows.size, dst.cols, dst.row(dst_row0), current());
}

void CudaDevice::gather_rows(DevMat src, DevIdx src_rows, DevMat dst, DevIdx dst_rows) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  activate();
  cuda::pull_rows_scattered(src.data, src_rows.data, src_rows.size, dst.cols, dst.data, dst_rows.data, current());
}

void CudaDevice::copy_to_peer(DevMat src, Device& peer, DevMat peer_dst) {
  HT_CHECK(src.rows == peer_dst.rows && src.cols == peer_dst.cols, "peer copy of {}x{} rows into {}x{}", src.rows,
           src.cols, peer_dst.rows, peer_dst.cols);
  if (src.rows * src.cols == 0) return;
  activate();
  const int to = static_cast<CudaDevice&>(peer).cuda_id();
  HT_CUDA_TRY(cudaMemcpyPeerAsync(peer_dst.data, to, src.data, cuda_id(), static_cast<size_t>(src.rows * src.cols) * 4,
                                  current()));
}

void CudaDevice::push_add_to_peer(DevMat src, int64_t src_row0, Device&, DevMat peer_dst, DevIdx peer_rows) {
  HT_ASSERT(peer_dst.cols == src.cols);
  activate();
  cuda::push_add_rows(src.row(src_row0), peer_rows.data, peer_rows.size, src.cols, peer_dst.data, current());
}

void CudaDevice::add_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  activate();
  cuda::add_rows_and_zero(src.data, src_rows.data, dst_rows.data, src_rows.size, src.cols, dst.data, dst.dtype,
                          current());
}

void CudaDevice::scatter_rows_and_zero(DevMat src, DevIdx src_rows, DevIdx dst_rows, const HostMat& dst) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  activate();
  cuda::scatter_rows_and_zero(src.data, src_rows.data, dst_rows.data, src_rows.size, src.cols, dst.data, dst.dtype,
                              current());
}

void CudaDevice::compact_and_zero(DevMat src, DevIdx rows, DevMat staging) {
  HT_ASSERT(src.cols == staging.cols && rows.size <= staging.rows);
  activate();
  cuda::compact_and_zero(src.data, rows.data, rows.size, src.cols, staging.data, current());
}

void CudaDevice::zero(DevMat m, int64_t row0, int64_t n) {
  if (n <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(m.row(row0), 0, static_cast<size_t>(n * m.cols) * 4, current()));
}

void CudaDevice::zero(DevArray<float> a) {
  if (a.size <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(a.data, 0, static_cast<size_t>(a.size) * 4, current()));
}

void CudaDevice::copy(DevMat src, DevMat dst) {
  HT_CHECK(src.rows == dst.rows && src.cols == dst.cols, "device copy of {}x{} rows into {}x{}", src.rows, src.cols,
           dst.rows, dst.cols);
  if (src.rows * src.cols == 0) return;
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(src.rows * src.cols) * 4,
                              cudaMemcpyDeviceToDevice, current()));
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
// operands and keep each one's transpose flag.
void CudaDevice::gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  activate();
  if (k == 0) {
    if (beta == 0.0f) HT_CUDA_TRY(cudaMemsetAsync(c, 0, static_cast<size_t>(m * ldc) * 4, current()));
    return;
  }
  HT_CUBLAS_TRY(cublasSetStream(blas_, current()));
  HT_CUBLAS_TRY(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                            static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
}

// cuSPARSE's handle and buffers at the first product that uses them (`auto`
// picks the own kernels everywhere today: no run pays for the handle it does
// not use). Its buffers count against the cap like every allocation.
bool CudaDevice::use_cusparse(const SpmmCase& c) {
  if (choose_spmm_backend(spmm_, c) != SpmmBackend::cusparse) return false;
  if (!sparse_)
    sparse_ = std::make_unique<cuda::CusparseSpmm>([this](int64_t delta) {
      if (delta > 0 && bytes_ + delta > cap_)
        throw Error(fmt::format("GPU {}: out of memory for cuSPARSE's buffers: {} more needed with {} allocated, "
                                "limit {} (--gpu-mem or the device's free memory; --spmm own needs none)",
                                index_, format_bytes(static_cast<double>(delta)),
                                format_bytes(static_cast<double>(bytes_)), format_bytes(static_cast<double>(cap_))));
      bytes_ += delta;
    });
  return true;
}

void CudaDevice::spmm(const DevTopology& t, DevMat x, DevMat out) {
  HT_ASSERT(x.cols == out.cols);
  activate();
  if (use_cusparse({SpmmProduct::forward, t.num_dst, t.num_src_rows, t.num_edges, x.cols})) {
    sparse_->forward(t, x.data, x.cols, out.data, current());
    return;
  }
  reserve(spmm_scratch(t.seg_row.size, x.cols));  // a no-op once the trainer reserved it at setup
  cuda::spmm(t, x.data, x.cols, out.data, scratch_, current());
}

void CudaDevice::spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) {
  HT_ASSERT(dout.cols == dx.cols);
  activate();
  if (use_cusparse({SpmmProduct::transpose, t.num_src_rows, t.num_dst, t.num_edges, dx.cols})) {
    sparse_->transpose_add(t, dout.data, dx.cols, dx.data, current());
    return;
  }
  reserve(spmm_scratch(t.t_seg_row.size, dx.cols));  // a no-op once the trainer reserved it at setup
  cuda::spmm_transpose_add(t, dout.data, dx.cols, dx.data, scratch_, current());
}

void CudaDevice::bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) {
  activate();
  cuda::bias_act(z.data, bias.size ? bias.data : nullptr, z.rows, z.cols, act, h.data, current());
}

void CudaDevice::act_backward(DevMat dh, DevMat z, Act act, DevMat dz) {
  activate();
  cuda::act_backward(dh.data, z.data, dh.rows, dh.cols, act, dz.data, current());
}

void CudaDevice::col_sum_add(DevMat m, DevArray<float> grad) {
  activate();
  reserve(cuda::col_sum_scratch_floats(m.rows, m.cols));  // a no-op once the trainer reserved it at setup
  cuda::col_sum_add(m.data, m.rows, m.cols, grad.data, scratch_, current());
}

void CudaDevice::dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) {
  activate();
  cuda::dropout_rows(m.data, m.rows, m.cols, key_row0, drop, current());
}

void CudaDevice::gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                            float slope, DevArray<float> pre, DevArray<float> score) {
  HT_ASSERT(g.rows >= t.num_src_rows);
  reserve(cuda::gat_scores_scratch_floats(t.num_src_rows, heads));  // a no-op once the trainer reserved gat_scratch
  activate();
  cuda::gat_scores(t, g.data, t.num_src_rows, g.cols, att_src.data, att_dst.data, heads, slope, pre.data, score.data, scratch_,
                   current());
}

void CudaDevice::gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                             DevArray<float> alpha_drop, const DropoutSpec& attn) {
  activate();
  cuda::gat_softmax(t, heads, score.data, alpha.data, alpha_drop.data, attn, current());
}

void CudaDevice::gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                               DevMat out) {
  activate();
  if (use_cusparse({SpmmProduct::gat, t.num_dst, t.num_src_rows, t.num_edges, g.cols, heads, mean})) {
    sparse_->gat_aggregate(t, g.data, g.cols, alpha_drop.data, heads, mean, out.data, out.cols, current());
    return;
  }
  reserve(spmm_scratch(t.seg_row.size, g.cols));  // a no-op once the trainer reserved it at setup
  cuda::gat_aggregate(t, g.data, g.cols, alpha_drop.data, heads, mean, out.data, out.cols, scratch_, current());
}

void CudaDevice::gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst,
                              int heads, float slope, bool mean, DevArray<float> pre, DevArray<float> alpha,
                              DevArray<float> alpha_drop, const DropoutSpec& attn, DevMat dout, DevMat dg,
                              DevArray<float> d_att_src, DevArray<float> d_att_dst) {
  // A no-op once the trainer reserved gat_scratch and spmm_scratch.
  reserve(cuda::gat_backward_scratch_floats(t.num_edges, t.num_src_rows, heads, g.cols, t.t_seg_row.size));
  activate();
  cuda::gat_backward(t, g.data, g.cols, att_src.data, att_dst.data, heads, slope, mean, pre.data, alpha.data,
                     alpha_drop.data, attn, dout.data, dout.cols, dg.data, d_att_src.data, d_att_dst.data, scratch_,
                     current());
}

void CudaDevice::softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split, int64_t first_vertex,
                              float scale, DevMat dlogits) {
  activate();
  reserve(cuda::softmax_xent_scratch_floats(logits.rows));  // a no-op once the trainer reserved it at setup
  cuda::softmax_xent(logits.data, logits.rows, logits.cols, labels.data, split.data, first_vertex, scale, dlogits.data,
                     stats_, scratch_, current());
}

LossStats CudaDevice::take_loss_stats() {
  struct {
    double loss;
    unsigned long long correct[4], count[4];
  } h{};
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(&h, stats_, sizeof(h), cudaMemcpyDeviceToHost, streams_[0]));
  HT_CUDA_TRY(cudaMemsetAsync(stats_, 0, sizeof(h), streams_[0]));
  HT_CUDA_TRY(cudaStreamSynchronize(streams_[0]));
  LossStats st;
  st.loss_sum = h.loss;
  for (int k = 0; k < 4; ++k) {
    st.correct[k] = static_cast<int64_t>(h.correct[k]);
    st.count[k] = static_cast<int64_t>(h.count[k]);
  }
  return st;
}

void CudaDevice::synchronize() {
  activate();
  for (cudaStream_t st : streams_) HT_CUDA_TRY(cudaStreamSynchronize(st));
  check_host_tasks();
}

}  // namespace ht
