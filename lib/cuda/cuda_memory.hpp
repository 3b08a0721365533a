#pragma once
// GPU memory a run may use, asked before the executor exists (ht-train
// --chunks auto sizes the chunk count with it).
#include <cstdint>

namespace ht {

// The smallest memory any of GPUs 0..devices-1 leaves to the executor: its
// free memory less the room CudaDevice leaves for the libraries (the cap the
// executor applies when no --gpu-mem is given). Throws when a GPU is missing.
int64_t cuda_usable_memory(int devices);

}  // namespace ht
