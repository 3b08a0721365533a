#include "cuda/cuda_device.hpp"

#include <omp.h>

#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "cuda/cuda_check.hpp"
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

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  HT_CUDA_TRY(cudaHostAlloc(&ptr_, bytes_ == 0 ? 16 : bytes_, cudaHostAllocPortable | cudaHostAllocMapped));
}
PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

CudaDevice::CudaDevice(int index, int cuda_id, int64_t memory_cap) : index_(index), cuda_id_(cuda_id), cap_(memory_cap) {
  activate();
  HT_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  HT_CUDA_TRY(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&queued_, &copied_[0], &copied_[1]})
    HT_CUDA_TRY(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  HT_CUBLAS_TRY(cublasCreate(&blas_));
  HT_CUBLAS_TRY(cublasSetStream(blas_, stream_));
  size_t free_b = 0, total_b = 0;
  HT_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  const int64_t usable = static_cast<int64_t>(free_b) - (int64_t{256} << 20);  // leave room for the libraries
  if (cap_ <= 0 || cap_ > usable) cap_ = usable;
  stats_ = allocate(128);
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(cuda_id_);
  if (blas_) cublasDestroy(blas_);
  for (cudaEvent_t e : {queued_, copied_[0], copied_[1]})
    if (e) cudaEventDestroy(e);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaDevice::activate() const { HT_CUDA_TRY(cudaSetDevice(cuda_id_)); }

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
  HT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  HT_CUDA_TRY(cudaStreamSynchronize(stream_));
}

DevMat CudaDevice::alloc_mat(int64_t rows, int64_t cols) {
  DevArray<float> a = alloc_floats(rows * cols);
  return {a.data, rows, cols};
}

DevArray<float> CudaDevice::alloc_floats(int64_t n) {
  float* p = static_cast<float*>(allocate(static_cast<size_t>(n) * 4));
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * 4, stream_));  // never read garbage
  return {p, n};
}

void CudaDevice::write(DevArray<float> dst, std::span<const float> src) {
  HT_ASSERT(static_cast<int64_t>(src.size()) <= dst.size);
  copy_in(dst.data, src.data(), src.size_bytes());
}

void CudaDevice::read(DevArray<float> src, std::span<float> dst) {
  HT_ASSERT(static_cast<int64_t>(dst.size()) <= src.size);
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data, dst.size_bytes(), cudaMemcpyDeviceToHost, stream_));
  HT_CUDA_TRY(cudaStreamSynchronize(stream_));
}

void CudaDevice::reserve(int64_t staging_floats, int64_t scratch_floats) {
  if (staging_floats > staging_floats_) {
    staging_ = alloc_floats(staging_floats).data;
    host_staging_ = std::make_unique<PinnedBuffer>(static_cast<size_t>(staging_floats) * 4);
    staging_floats_ = staging_floats;
  }
  if (scratch_floats > scratch_floats_) {
    scratch_ = alloc_floats(scratch_floats).data;
    scratch_floats_ = scratch_floats;
  }
}

void CudaDevice::gather_from_host(const HostMat& src, DevIdx src_rows, DevIdx dst_rows, DevMat dst,
                                  const DropoutSpec& drop) {
  HT_ASSERT(src.cols == dst.cols && src_rows.size == dst_rows.size);
  activate();
  cuda::gather_rows(src.data, src_rows.data, dst_rows.data, src_rows.size, src.cols, dst.data, drop, stream_);
}

void CudaDevice::copy_from_host(const HostMat& src, int64_t src_row0, int64_t n, DevMat dst, int64_t dst_row0) {
  HT_ASSERT(src.cols == dst.cols);
  if (n <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4,
                              cudaMemcpyDefault, stream_));
}

void CudaDevice::copy_to_host(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0) {
  HT_ASSERT(src.cols == dst.cols);
  if (n <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemcpyAsync(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4,
                              cudaMemcpyDefault, stream_));
}

void CudaDevice::write_behind(DevMat src, int64_t src_row0, int64_t n, const HostMat& dst, int64_t dst_row0,
                              int slot) {
  HT_ASSERT(src.cols == dst.cols && (slot == 0 || slot == 1));
  if (n <= 0) return;
  activate();
  HT_CUDA_TRY(cudaEventRecord(queued_, stream_));
  HT_CUDA_TRY(cudaStreamWaitEvent(copy_stream_, queued_, 0));
  HT_CUDA_TRY(cudaMemcpyAsync(dst.row(dst_row0), src.row(src_row0), static_cast<size_t>(n * src.cols) * 4,
                              cudaMemcpyDefault, copy_stream_));
  HT_CUDA_TRY(cudaEventRecord(copied_[slot], copy_stream_));
}

void CudaDevice::wait_write_behind(int slot) {
  HT_ASSERT(slot == 0 || slot == 1);
  activate();
  HT_CUDA_TRY(cudaStreamWaitEvent(stream_, copied_[slot], 0));
}

void CudaDevice::pull_from_peer(Device&, DevMat peer_src, DevIdx peer_rows, DevMat dst, int64_t dst_row0) {
  HT_ASSERT(peer_src.cols == dst.cols);
  activate();
  cuda::pull_rows(peer_src.data, peer_rows.data, peer_rows.size, dst.cols, dst.row(dst_row0), stream_);
}

void CudaDevice::push_add_to_peer(DevMat src, int64_t src_row0, Device&, DevMat peer_dst, DevIdx peer_rows) {
  HT_ASSERT(peer_dst.cols == src.cols);
  activate();
  cuda::push_add_rows(src.row(src_row0), peer_rows.data, peer_rows.size, src.cols, peer_dst.data, stream_);
}

void CudaDevice::flush_add_to_host(DevMat src, DevIdx src_rows, DevIdx host_rows,
                                   std::span<const uint32_t> host_rows_cpu, const HostMat& host) {
  HT_ASSERT(src.cols == host.cols && src_rows.size == host_rows.size &&
            static_cast<int64_t>(host_rows_cpu.size()) == host_rows.size);
  const int64_t n = src_rows.size, c = src.cols;
  if (n == 0) return;
  activate();
  if (host.on_device()) {  // in-memory mode: accumulate on the GPU
    HT_ASSERT(host.device == index_);
    cuda::add_rows_and_zero(src.data, src_rows.data, host_rows.data, n, c, host.data, stream_);
    return;
  }
  HT_ASSERT(n * c <= staging_floats_);
  cuda::compact_and_zero(src.data, src_rows.data, n, c, staging_, stream_);
  float* hs = static_cast<float*>(host_staging_->data());
  HT_CUDA_TRY(cudaMemcpyAsync(hs, staging_, static_cast<size_t>(n * c) * 4, cudaMemcpyDeviceToHost, stream_));
  HT_CUDA_TRY(cudaStreamSynchronize(stream_));
  const uint32_t* rows = host_rows_cpu.data();
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k) {
    float* d = host.row(rows[k]);
    const float* s = hs + k * c;
    for (int64_t j = 0; j < c; ++j) d[j] += s[j];
  }
}

void CudaDevice::zero(DevMat m, int64_t row0, int64_t n) {
  if (n <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(m.row(row0), 0, static_cast<size_t>(n * m.cols) * 4, stream_));
}

void CudaDevice::zero(DevArray<float> a) {
  if (a.size <= 0) return;
  activate();
  HT_CUDA_TRY(cudaMemsetAsync(a.data, 0, static_cast<size_t>(a.size) * 4, stream_));
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the
// operands and keep each one's transpose flag.
void CudaDevice::gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  activate();
  if (k == 0) {
    if (beta == 0.0f) HT_CUDA_TRY(cudaMemsetAsync(c, 0, static_cast<size_t>(m * ldc) * 4, stream_));
    return;
  }
  HT_CUBLAS_TRY(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                            static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
}

void CudaDevice::spmm(const DevTopology& t, DevMat x, DevMat out) {
  HT_ASSERT(x.cols == out.cols);
  activate();
  cuda::spmm(t, x.data, x.cols, out.data, stream_);
}

void CudaDevice::spmm_transpose_add(const DevTopology& t, DevMat dout, DevMat dx) {
  HT_ASSERT(dout.cols == dx.cols);
  activate();
  cuda::spmm_transpose_add(t, dout.data, dx.cols, dx.data, stream_);
}

void CudaDevice::bias_act(DevMat z, DevArray<float> bias, Act act, DevMat h) {
  activate();
  cuda::bias_act(z.data, bias.size ? bias.data : nullptr, z.rows, z.cols, act, h.data, stream_);
}

void CudaDevice::act_backward(DevMat dh, DevMat z, Act act, DevMat dz) {
  activate();
  cuda::act_backward(dh.data, z.data, dh.rows, dh.cols, act, dz.data, stream_);
}

void CudaDevice::col_sum_add(DevMat m, DevArray<float> grad) {
  activate();
  cuda::col_sum_add(m.data, m.rows, m.cols, grad.data, stream_);
}

void CudaDevice::dropout_rows(DevMat m, int64_t key_row0, const DropoutSpec& drop) {
  activate();
  cuda::dropout_rows(m.data, m.rows, m.cols, key_row0, drop, stream_);
}

void CudaDevice::gat_scores(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst, int heads,
                            float slope, DevArray<float> pre, DevArray<float> score) {
  activate();
  cuda::gat_scores(t, g.data, g.cols, att_src.data, att_dst.data, heads, slope, pre.data, score.data, stream_);
}

void CudaDevice::gat_softmax(const DevTopology& t, int heads, DevArray<float> score, DevArray<float> alpha,
                             DevArray<float> alpha_drop, const DropoutSpec& attn) {
  activate();
  cuda::gat_softmax(t, heads, score.data, alpha.data, alpha_drop.data, attn, stream_);
}

void CudaDevice::gat_aggregate(const DevTopology& t, DevMat g, DevArray<float> alpha_drop, int heads, bool mean,
                               DevMat out) {
  activate();
  cuda::gat_aggregate(t, g.data, g.cols, alpha_drop.data, heads, mean, out.data, out.cols, stream_);
}

void CudaDevice::gat_backward(const DevTopology& t, DevMat g, DevArray<float> att_src, DevArray<float> att_dst,
                              int heads, float slope, bool mean, DevArray<float> pre, DevArray<float> alpha,
                              DevArray<float> alpha_drop, const DropoutSpec& attn, DevMat dout, DevMat dg,
                              DevArray<float> d_att_src, DevArray<float> d_att_dst) {
  HT_ASSERT(t.num_edges * heads <= scratch_floats_);
  activate();
  cuda::gat_backward(t, g.data, g.cols, att_src.data, att_dst.data, heads, slope, mean, pre.data, alpha.data,
                     alpha_drop.data, attn, dout.data, dout.cols, dg.data, d_att_src.data, d_att_dst.data, scratch_,
                     stream_);
}

LossStats CudaDevice::softmax_xent(DevMat logits, DevArray<int32_t> labels, DevArray<uint8_t> split,
                                   int64_t first_vertex, float scale, DevMat dlogits) {
  activate();
  cuda::softmax_xent(logits.data, logits.rows, logits.cols, labels.data, split.data, first_vertex, scale, dlogits.data,
                     stats_, stream_);
  struct {
    double loss;
    unsigned long long correct[4], count[4];
  } h{};
  HT_CUDA_TRY(cudaMemcpyAsync(&h, stats_, sizeof(h), cudaMemcpyDeviceToHost, stream_));
  HT_CUDA_TRY(cudaStreamSynchronize(stream_));
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
  HT_CUDA_TRY(cudaStreamSynchronize(stream_));
}

void CudaDevice::drain() {
  synchronize();
  HT_CUDA_TRY(cudaStreamSynchronize(copy_stream_));
}

}  // namespace ht
