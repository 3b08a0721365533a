#include "cuda/cuda_check.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw Error(fmt::format("CUDA error {} ({}) in {} at {}:{}", static_cast<int>(err), cudaGetErrorString(err), call,
                          file, line));
}

void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw Error(fmt::format("cuBLAS error {} ({}) in {} at {}:{}", static_cast<int>(st), cublasGetStatusString(st), call,
                          file, line));
}

void throw_cusparse_error(cusparseStatus_t st, const char* call, const char* file, int line) {
  throw Error(fmt::format("cuSPARSE error {} ({}) in {} at {}:{}", static_cast<int>(st), cusparseGetErrorString(st),
                          call, file, line));
}

void throw_nccl_error(int code, const char* message, const char* call, const char* file, int line) {
  throw Error(fmt::format("NCCL error {} ({}) in {} at {}:{}", code, message, call, file, line));
}

}  // namespace ht::cuda
