#pragma once
// cuSPARSE's SpMM behind the Device's sparse products (CudaDevice::spmm,
// spmm_transpose_add and gat_aggregate when engine/spmm_backend.hpp picks
// cuSPARSE). One per device: the library handle (RAII) and device buffers
// that grow as needed and are reused (allocated and freed in stream order on
// the calling stream, so growing never waits): the inputs prepared for the
// library (below) and the library's workspace (cusparseSpMM_bufferSize).
//
// Algorithm: CUSPARSE_SPMM_CSR_ALG3, the one CSR algorithm of cusparseSpMM
// documented as deterministic (bit-wise the same results on every run;
// CSR_ALG1 and CSR_ALG2 may differ from run to run). It takes op(A) = A only,
// and a transposed product (op(A) = Aᵀ) is not deterministic with any
// algorithm: the transpose is multiplied as a CSR of its own, made per call
// from the topology's stored transpose (t_offsets, and t_edge gathered into
// columns edge_dst[t_edge[k]] and weights weight[t_edge[k]]: 8 bytes per edge).
//
// The topology is a CSC over destinations, which is the CSR of Â with a row
// per destination: row offsets = offsets (int64), columns = src (uint32, read
// as int32: fewer than 2^31 input rows, checked by cusparse_takes), values =
// weight (the GCN normalization, stored per edge; ones when absent). Nothing
// is copied, unless this cuSPARSE refuses 64-bit offsets with 32-bit columns:
// then the offsets are narrowed to 32 bits per call (logged once). Dense
// matrices are row-major, leading dimension = the DevMat's width.
// GAT: head h is a product of its own, weights alpha_drop[e * H + h] (copied
// head after head: cuSPARSE reads a matrix's values contiguously), on columns
// [h f, (h + 1) f) of g; averaged heads accumulate into out with alpha 1/H.
#include <cusparse.h>

#include <cstdint>
#include <functional>

#include "engine/executor.hpp"

namespace ht::cuda {

class CusparseSpmm {
 public:
  // `charge(delta)`: the owning device accounts `delta` more (or fewer) bytes
  // of device memory, and throws when that passes its limit.
  explicit CusparseSpmm(std::function<void(int64_t)> charge);
  ~CusparseSpmm();
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;

  // out[d] = Σ_e weight[e] x[src[e]] (x: t.num_src_rows x cols, out: t.num_dst x cols).
  void forward(const DevTopology& t, const float* x, int64_t cols, float* out, cudaStream_t s);
  // dx[r] += Σ_{e: src[e] = r} weight[e] dout[dst(e)].
  void transpose_add(const DevTopology& t, const float* dout, int64_t cols, float* dx, cudaStream_t s);
  // Device::gat_aggregate (g: t.num_src_rows x gcols; out: t.num_dst x out_cols).
  void gat_aggregate(const DevTopology& t, const float* g, int64_t gcols, const float* alpha_drop, int heads, bool mean,
                     float* out, int64_t out_cols, cudaStream_t s);

  // Device memory held by the buffers.
  int64_t buffer_bytes() const;
  // Whether the offsets are handed over as they are (64-bit, no copy).
  bool wide_offsets() const { return wide_offsets_; }

 private:
  // A device buffer that grows in stream order.
  class Buffer {
   public:
    explicit Buffer(std::function<void(int64_t)>* charge) : charge_(charge) {}
    ~Buffer();
    void* ensure(int64_t bytes, cudaStream_t s);
    int64_t bytes() const { return bytes_; }

   private:
    std::function<void(int64_t)>* charge_;
    void* ptr_ = nullptr;
    int64_t bytes_ = 0;
    cudaStream_t stream_ = nullptr;  // where it was last allocated (freed there)
  };
  struct Csr {
    int64_t rows = 0, cols = 0, nnz = 0;
    const int64_t* offsets = nullptr;
    const void* columns = nullptr;  // 32-bit
    const float* values = nullptr;
  };
  struct Dense {
    int64_t rows = 0, cols = 0, ld = 0;
    const float* data = nullptr;
  };
  // c = alpha a b + beta c.
  void multiply(const Csr& a, const Dense& b, const Dense& c, float alpha, float beta, cudaStream_t s);
  // c = alpha a b + beta c with a's offsets as given (64-bit) or narrowed
  // (32-bit, already in offsets32_): the first status that is not success
  // (descriptor, workspace size, product), or success.
  cusparseStatus_t try_multiply(const Csr& a, bool wide, const Dense& b, const Dense& c, float alpha, float beta,
                                cudaStream_t s);

  std::function<void(int64_t)> charge_;
  cusparseHandle_t handle_ = nullptr;
  bool wide_offsets_ = true;
  Buffer prep_{&charge_}, offsets32_{&charge_}, work_{&charge_};
};

}  // namespace ht::cuda
