#pragma once
// Which implementation computes a sparse product on the CUDA executor: the
// project's own kernels (lib/cuda/dense_kernels.cu, gat_kernels.cu) or
// cuSPARSE's cusparseSpMM with its deterministic CSR algorithm
// (lib/cuda/cusparse_spmm.*). Both give the same results up to float
// rounding; each is deterministic (the same bits run to run). The CPU
// executor has one implementation and ignores the choice.
//
// `automatic` picks per product (choose_spmm_backend): the one measured
// faster for that kind of product and shape. Until the measurements of
// bench/spmm_backends.sh are in bench/RESULTS.md it picks the own kernels
// everywhere (they are what every earlier result used).
#include <cstdint>
#include <string>

#include "core/names.hpp"

namespace ht {

enum class SpmmBackend { automatic, own, cusparse };

// "auto", "own", "cusparse": ht-train --spmm.
const NameTable<SpmmBackend>& spmm_backend_names();
std::string name_of(SpmmBackend backend);

// The three sparse products of the Device interface (engine/executor.hpp).
enum class SpmmProduct {
  forward,    // Device::spmm: out = Â x
  transpose,  // Device::spmm_transpose_add: dx += Âᵀ dout
  gat,        // Device::gat_aggregate: a weight per edge and head
};

// One product as the device is asked for it.
struct SpmmCase {
  SpmmProduct product = SpmmProduct::forward;
  int64_t rows = 0;      // output rows (destinations; source rows for the transpose)
  int64_t src_rows = 0;  // rows of the input matrix (the sparse matrix's columns)
  int64_t edges = 0;
  int64_t cols = 0;      // dense width (GAT: all heads)
  int heads = 0;         // GAT only
  bool mean = false;     // GAT only: heads averaged
};

// Whether cuSPARSE can take the case as the CUDA executor maps it: 32-bit
// column indices (the topology's src) need fewer than 2^31 input rows, and
// its row offsets and edge count must fit what cusparseSpMM takes.
bool cusparse_takes(const SpmmCase& c);

// The backend that computes `c` when `requested` was asked for: never
// automatic. `own` and cases cuSPARSE cannot take give own; `cusparse` gives
// cusparse; `automatic` gives the faster of the two for the case (today:
// own, see above). The one place a per-case choice is made.
SpmmBackend choose_spmm_backend(SpmmBackend requested, const SpmmCase& c);

}  // namespace ht
