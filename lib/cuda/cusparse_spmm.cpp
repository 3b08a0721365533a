#include "cuda/cusparse_spmm.hpp"

#include <algorithm>
#include <utility>

#include "core/error.hpp"
#include "core/log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/kernels.cuh"

namespace ht::cuda {
namespace {

constexpr int64_t kAlign = 256;
int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Descriptors of one call, destroyed when it returns (host objects: cheap).
struct SpMat {
  cusparseConstSpMatDescr_t d = nullptr;
  ~SpMat() {
    if (d) cusparseDestroySpMat(d);
  }
};
struct DnMat {
  cusparseConstDnMatDescr_t in = nullptr;
  cusparseDnMatDescr_t out = nullptr;
  ~DnMat() {
    if (in) cusparseDestroyDnMat(in);
    if (out) cusparseDestroyDnMat(out);
  }
};

}  // namespace

CusparseSpmm::Buffer::~Buffer() {
  if (!ptr_) return;
  cudaFreeAsync(ptr_, stream_);
  cudaStreamSynchronize(stream_);
}

// Grows to at least `bytes` (by half again, so that a few growths reach the
// largest step): the old buffer is freed after the work queued on its
// stream, the new one allocated in order on `s` (the stream-ordered pool
// hands freed memory to another stream only after the free has happened), so
// nothing waits.
void* CusparseSpmm::Buffer::ensure(int64_t bytes, cudaStream_t s) {
  if (bytes <= bytes_) return ptr_;
  const int64_t grown = aligned(std::max(bytes, bytes_ + bytes_ / 2));
  (*charge_)(grown - bytes_);  // throws when over the device's limit
  if (ptr_) HT_CUDA_TRY(cudaFreeAsync(ptr_, stream_));
  ptr_ = nullptr;
  bytes_ = 0;
  const cudaError_t err = cudaMallocAsync(&ptr_, static_cast<size_t>(grown), s);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    (*charge_)(-grown);
    HT_CUDA_TRY(err);
  }
  bytes_ = grown;
  stream_ = s;
  return ptr_;
}

CusparseSpmm::CusparseSpmm(std::function<void(int64_t)> charge) : charge_(std::move(charge)) {
  HT_CUSPARSE_TRY(cusparseCreate(&handle_));
}

CusparseSpmm::~CusparseSpmm() {
  if (handle_) cusparseDestroy(handle_);
}

int64_t CusparseSpmm::buffer_bytes() const { return prep_.bytes() + offsets32_.bytes() + work_.bytes(); }

cusparseStatus_t CusparseSpmm::try_multiply(const Csr& a, bool wide, const Dense& b, const Dense& c, float alpha,
                                            float beta, cudaStream_t s) {
  SpMat am;
  const void* offsets = wide ? static_cast<const void*>(a.offsets) : offsets32_.ensure(0, s);
  cusparseStatus_t st = cusparseCreateConstCsr(&am.d, a.rows, a.cols, a.nnz, offsets, a.columns, a.values,
                                               wide ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                               CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
  if (st != CUSPARSE_STATUS_SUCCESS) return st;
  DnMat bm, cm;
  HT_CUSPARSE_TRY(cusparseCreateConstDnMat(&bm.in, b.rows, b.cols, b.ld, b.data, CUDA_R_32F, CUSPARSE_ORDER_ROW));
  HT_CUSPARSE_TRY(
      cusparseCreateDnMat(&cm.out, c.rows, c.cols, c.ld, const_cast<float*>(c.data), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  size_t bytes = 0;
  st = cusparseSpMM_bufferSize(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                               am.d, bm.in, &beta, cm.out, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG3, &bytes);
  if (st != CUSPARSE_STATUS_SUCCESS) return st;
  void* work = work_.ensure(static_cast<int64_t>(bytes), s);
  return cusparseSpMM(handle_, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, am.d, bm.in,
                      &beta, cm.out, CUDA_R_32F, CUSPARSE_SPMM_CSR_ALG3, work);
}

// The offsets as they are first; when this cuSPARSE refuses them (64-bit
// offsets with 32-bit columns are not in every version's list), narrowed to
// 32 bits from then on. A refusal (not supported, invalid value) launches
// nothing, so the product is simply made again; any other failure, or a
// refusal of the narrowed form too, is an error.
void CusparseSpmm::multiply(const Csr& a, const Dense& b, const Dense& c, float alpha, float beta, cudaStream_t s) {
  HT_CUSPARSE_TRY(cusparseSetStream(handle_, s));
  cusparseStatus_t wide = CUSPARSE_STATUS_SUCCESS;
  if (wide_offsets_) {
    wide = try_multiply(a, true, b, c, alpha, beta, s);
    if (wide == CUSPARSE_STATUS_SUCCESS) return;
    if (wide != CUSPARSE_STATUS_NOT_SUPPORTED && wide != CUSPARSE_STATUS_INVALID_VALUE)
      throw_cusparse_error(wide, "cusparseSpMM (CSR_ALG3)", __FILE__, __LINE__);
  }
  auto* narrow = static_cast<int32_t*>(offsets32_.ensure(4 * (a.rows + 1), s));
  narrow_offsets(a.offsets, a.rows + 1, narrow, s);
  const cusparseStatus_t st = try_multiply(a, false, b, c, alpha, beta, s);
  if (st != CUSPARSE_STATUS_SUCCESS) throw_cusparse_error(st, "cusparseSpMM (CSR_ALG3)", __FILE__, __LINE__);
  if (wide_offsets_) {
    wide_offsets_ = false;
    log::info("cuSPARSE: 64-bit row offsets with 32-bit columns refused ({}); offsets narrowed to 32 bits per call",
              cusparseGetErrorString(wide));
  }
}

void CusparseSpmm::forward(const DevTopology& t, const float* x, int64_t cols, float* out, cudaStream_t s) {
  if (t.num_dst == 0 || cols == 0) return;
  if (t.num_edges == 0) {
    HT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<size_t>(t.num_dst * cols) * 4, s));
    return;
  }
  const float* values = t.weight.size ? t.weight.data : nullptr;
  if (!values) {  // unweighted: ones
    auto* ones = static_cast<float*>(prep_.ensure(4 * t.num_edges, s));
    fill(ones, t.num_edges, 1.0f, s);
    values = ones;
  }
  multiply({t.num_dst, t.num_src_rows, t.num_edges, t.offsets.data, t.src.data, values},
           {t.num_src_rows, cols, cols, x}, {t.num_dst, cols, cols, out}, 1.0f, 0.0f, s);
}

void CusparseSpmm::transpose_add(const DevTopology& t, const float* dout, int64_t cols, float* dx, cudaStream_t s) {
  if (t.num_src_rows == 0 || t.num_edges == 0 || cols == 0) return;
  auto* base = static_cast<std::byte*>(prep_.ensure(aligned(4 * t.num_edges) * 2, s));
  auto* col = reinterpret_cast<uint32_t*>(base);
  auto* val = reinterpret_cast<float*>(base + aligned(4 * t.num_edges));
  transposed_csr(t.t_edge.data, t.edge_dst.data, t.weight.size ? t.weight.data : nullptr, t.num_edges, col, val, s);
  multiply({t.num_src_rows, t.num_dst, t.num_edges, t.t_offsets.data, col, val}, {t.num_dst, cols, cols, dout},
           {t.num_src_rows, cols, cols, dx}, 1.0f, 1.0f, s);
}

void CusparseSpmm::gat_aggregate(const DevTopology& t, const float* g, int64_t gcols, const float* alpha_drop,
                                 int heads, bool mean, float* out, int64_t out_cols, cudaStream_t s) {
  HT_ASSERT(heads > 0 && gcols % heads == 0);
  const int64_t f = gcols / heads;
  if (t.num_dst == 0 || out_cols == 0) return;
  if (t.num_edges == 0) {
    HT_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<size_t>(t.num_dst * out_cols) * 4, s));
    return;
  }
  const float* values = alpha_drop;  // one head: its weights as they are
  if (heads > 1) {
    auto* per_head = static_cast<float*>(prep_.ensure(4 * t.num_edges * heads, s));
    head_major(alpha_drop, t.num_edges, heads, per_head, s);
    values = per_head;
  }
  for (int h = 0; h < heads; ++h) {
    const float alpha = mean ? 1.0f / static_cast<float>(heads) : 1.0f;
    const float beta = mean && h > 0 ? 1.0f : 0.0f;
    multiply({t.num_dst, t.num_src_rows, t.num_edges, t.offsets.data, t.src.data, values + h * t.num_edges},
             {t.num_src_rows, f, gcols, g + h * f}, {t.num_dst, f, out_cols, out + (mean ? 0 : h * f)}, alpha, beta,
             s);
  }
}

}  // namespace ht::cuda
