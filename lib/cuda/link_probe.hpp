#pragma once
// Host link bandwidth of one GPU, measured at start-up so that a run can say
// how far its epoch is from what the link alone allows (the struct is
// engine/link_bandwidth.hpp's, which the job reads without this library).
#include "engine/link_bandwidth.hpp"

namespace ht {

// Pinned-memory cudaMemcpyAsync each way on `cuda_device`: one warm-up
// copy, then the best of 3 samples of 256 MiB (four copies of a 64 MiB
// buffer) timed with CUDA events (a fraction of a second in all, most of it
// the context's creation and pinning the buffer). The calling thread's current
// device is restored. CUDA failures throw ht::Error.
LinkBandwidth measure_link_bandwidth(int cuda_device);

}  // namespace ht
