#pragma once
// Error macros for CUDA, cuBLAS, cuSPARSE and NCCL calls: throw ht::Error naming the
// call, the library's message, file and line (RAFT-style *_TRY). The
// throwers live in a .cpp so that kernel files (nvcc) need no fmt.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

namespace ht::cuda {
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_cusparse_error(cusparseStatus_t st, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(int code, const char* message, const char* call, const char* file, int line);
}  // namespace ht::cuda

#define HT_CUDA_TRY(call)                                                                   \
  do {                                                                                      \
    const cudaError_t ht_err_ = (call);                                                     \
    if (ht_err_ != cudaSuccess) ::ht::cuda::throw_cuda_error(ht_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define HT_CUDA_CHECK_LAST() HT_CUDA_TRY(cudaGetLastError())

#define HT_CUBLAS_TRY(call)                                                                        \
  do {                                                                                             \
    const cublasStatus_t ht_st_ = (call);                                                          \
    if (ht_st_ != CUBLAS_STATUS_SUCCESS) ::ht::cuda::throw_cublas_error(ht_st_, #call, __FILE__, __LINE__); \
  } while (0)

#define HT_CUSPARSE_TRY(call)                                                                        \
  do {                                                                                               \
    const cusparseStatus_t ht_sp_ = (call);                                                          \
    if (ht_sp_ != CUSPARSE_STATUS_SUCCESS) ::ht::cuda::throw_cusparse_error(ht_sp_, #call, __FILE__, __LINE__); \
  } while (0)

#ifdef HT_HAVE_NCCL
#include <nccl.h>
#define HT_NCCL_TRY(call)                                                                              \
  do {                                                                                                 \
    const ncclResult_t ht_nr_ = (call);                                                                \
    if (ht_nr_ != ncclSuccess)                                                                         \
      ::ht::cuda::throw_nccl_error(static_cast<int>(ht_nr_), ncclGetErrorString(ht_nr_), #call, __FILE__, __LINE__); \
  } while (0)
#endif
