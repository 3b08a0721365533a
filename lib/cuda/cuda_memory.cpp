#include "cuda/cuda_memory.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_executor.hpp"

namespace ht {

int64_t cuda_usable_memory(int devices) {
  const int visible = cuda_device_count();
  HT_CHECK(devices >= 1 && devices <= visible, "asked for {} GPUs but {} are visible", devices, visible);
  int64_t usable = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < devices; ++i) {
    HT_CUDA_TRY(cudaSetDevice(i));
    size_t free_b = 0, total_b = 0;
    HT_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    // The same room for the libraries as CudaDevice's constructor leaves.
    usable = std::min(usable, static_cast<int64_t>(free_b) - (int64_t{256} << 20));
  }
  HT_CUDA_TRY(cudaSetDevice(0));  // as the run starts: GPU 0 current
  return std::max<int64_t>(usable, 0);
}

}  // namespace ht
