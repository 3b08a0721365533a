#pragma once
// Host link bandwidth of one GPU, as the CUDA library's link probe measures
// it at start-up (cuda/link_probe.hpp), so that a run can say how far its
// epoch is from what the link alone allows. The struct lives here, below
// both: the job (lib/train) reads it without including or linking the CUDA
// library; ht-train hands it the probe as a function (TrainJob::probe_link).

namespace ht {

struct LinkBandwidth {
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;
};

}  // namespace ht
