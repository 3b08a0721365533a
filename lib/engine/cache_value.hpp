#pragma once
// What the GPU cache holds when not everything fits: every store matrix a
// device could keep whole is a candidate, valued by the host-link bytes and
// host work it saves per epoch for each byte of device memory it takes
// (Trainer::setup_gpu_cache counts them from the plan). A gradient matrix
// held on the GPU saves a device-to-host copy, a host add and a later
// host-to-device copy for each row a batch returns; a matrix written forward
// and read backward saves two copies per row; h^0 one per load.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ht {

struct CacheCandidate {
  std::string name;
  int64_t gpu_row_bytes = 0;   // device memory per row (fp32 for gradient accumulators)
  int64_t store_row_bytes = 0; // what a row weighs on the link (the store's type)
  double crossings = 0;        // link crossings per row per epoch it saves
  double host_adds = 0;        // host adds per row per epoch it saves
  // Saved bytes per epoch per byte of device memory: host adds count as one
  // crossing each (the add reads and writes the row in host memory, and the
  // host's adds, not the link, bound the largest runs).
  double value() const {
    if (gpu_row_bytes <= 0) return 0;
    return (crossings + host_adds) * static_cast<double>(store_row_bytes) / static_cast<double>(gpu_row_bytes);
  }
};

// Indices of `c` by value per byte, highest first; equal values keep their
// order in `c` (layer order).
std::vector<size_t> rank_by_value(std::span<const CacheCandidate> c);

}  // namespace ht
