#pragma once
// The CUDA executor: one Device per selected GPU (RAII device buffers,
// a stream, a cuBLAS handle, cuSPARSE for the sparse products when asked), host vertex buffers pinned and mapped for every
// GPU (zero-copy gathers), P2P access between the GPUs, NCCL all-reduce of
// weight gradients.
#include <cstdint>
#include <memory>

#include "engine/executor.hpp"
#include "engine/spmm_backend.hpp"

namespace ht {

// Number of visible CUDA devices (0 when there is no driver or no GPU).
int cuda_device_count();

// `memory_cap_bytes` caps each device's allocations (0 = no cap beyond the
// device's free memory); exceeding it raises an error that says how many
// chunks per GPU would fit.
// The devices are CUDA devices first_gpu ... first_gpu + num_devices - 1 (a
// process of a multi-process job on a node takes its share of the node's GPUs).
// `spmm`: who computes the sparse products (ht-train --spmm;
// engine/spmm_backend.hpp).
std::unique_ptr<Executor> make_cuda_executor(int num_devices, int64_t memory_cap_bytes = 0, int first_gpu = 0,
                                             SpmmBackend spmm = SpmmBackend::automatic);

}  // namespace ht
