// CudaDevice::derive_topologies: resident steps' topology written by the GPU
// (cuda/topology_kernels.cu) from what the host packed, instead of by the
// host's cores and then copied (issue 33: on the small graphs the steps and
// their upload were half of setup).
#include <algorithm>
#include <array>
#include <memory>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_device.hpp"
#include "cuda/kernels.cuh"

namespace ht {

namespace {

// A host array on the device for the derivation's time (nothing when empty).
template <typename T>
std::unique_ptr<DeviceBuffer> temporary(CudaDevice& d, std::span<const T> v) {
  if (v.empty()) return nullptr;
  auto b = std::make_unique<DeviceBuffer>(d.cuda_id(), v.size_bytes());
  d.upload_bytes(std::as_bytes(v), {static_cast<std::byte*>(b->data()), static_cast<int64_t>(v.size_bytes())});
  return b;
}

template <typename T>
const T* data_of(const std::unique_ptr<DeviceBuffer>& b) {
  return b ? static_cast<const T*>(b->data()) : nullptr;
}

}  // namespace

std::vector<int64_t> CudaDevice::derive_topologies(std::span<const DeriveTopology> steps,
                                                   const EdgeKeys& vertices) {
  synchronize();
  use(Queue::compute);
  bool weighted = false, keyed = false;
  size_t temp_bytes = 0, src_vid_bytes = 0;
  for (const DeriveTopology& d : steps) {
    weighted = weighted || d.topo.weight.size > 0;
    keyed = keyed || d.topo.edge_src_key.size > 0;
    temp_bytes = std::max(temp_bytes, cuda::derive_topology_temp_bytes(d.topo.num_edges, d.topo.num_src_rows));
    src_vid_bytes = std::max(src_vid_bytes, d.src_vid.size_bytes());
  }
  const EdgeKeys keys = vertices.for_step(weighted, keyed);
  const std::span<const float> sqrt_deg = keys.inv_sqrt_deg, mean = keys.inv_deg;
  const std::span<const int64_t> orig = keys.orig_id;
  HT_CHECK(!weighted || !sqrt_deg.empty() || !mean.empty(), "GPU {}: weighted steps derived without vertex weights", index_);
  HT_CHECK(!keyed || !orig.empty(), "GPU {}: keyed steps derived without the vertices' ids", index_);
  // Held only while the steps are derived, within the memory cap all the same.
  const int64_t need = static_cast<int64_t>(temp_bytes + src_vid_bytes + sqrt_deg.size_bytes() + mean.size_bytes() +
                                            orig.size_bytes() + 256);
  if (bytes_ + need > cap_)
    throw Error(fmt::format("GPU {}: {} for deriving the steps' topology do not fit beside {} allocated (limit {})",
                            index_, format_bytes(static_cast<double>(need)), format_bytes(static_cast<double>(bytes_)),
                            format_bytes(static_cast<double>(cap_))));
  activate();
  const std::unique_ptr<DeviceBuffer> sqrt_on = temporary(*this, sqrt_deg), mean_on = temporary(*this, mean),
                                      orig_on = temporary(*this, orig);
  constexpr int kR = cuda::kDeriveResults;
  DeviceBuffer temp(cuda_id_, temp_bytes), src_vid(cuda_id_, src_vid_bytes), results(cuda_id_, kR * steps.size() * 8);
  auto* result = static_cast<int64_t*>(results.data());
  for (size_t k = 0; k < steps.size(); ++k) {
    const DeriveTopology& d = steps[k];
    const DevTopology& t = d.topo;
    HT_CHECK(static_cast<int64_t>(d.src_vid.size()) == t.num_edges && t.num_edges < int64_t{UINT32_MAX},
             "plan step ({}, {}): {} source vertices for {} edges", d.part, d.chunk, d.src_vid.size(), t.num_edges);
    upload_bytes(std::as_bytes(d.src_vid), {static_cast<std::byte*>(src_vid.data()), static_cast<int64_t>(d.src_vid.size_bytes())});
    cuda::TopologyDerivation a;
    a.nd = t.num_dst;
    a.ne = t.num_edges;
    a.rows = t.num_src_rows;
    a.dst_begin = d.dst_begin;
    a.shift_from = d.shift_from;
    a.shift = d.shift;
    a.seg_capacity = t.t_seg_row.size;
    a.offsets = t.offsets.data;
    a.src = t.src.data;
    a.src_vid = static_cast<const uint32_t*>(src_vid.data());
    if (t.weight.size > 0) {
      a.inv_sqrt_deg = data_of<float>(sqrt_on);
      a.inv_deg = data_of<float>(mean_on);
      a.weight = t.weight.data;
    }
    if (t.edge_src_key.size > 0) {
      a.orig_id = data_of<int64_t>(orig_on);
      a.src_key = t.edge_src_key.data;
      a.dst_key = t.edge_dst_key.data;
    }
    a.edge_dst = t.edge_dst.data;
    a.dst_row = t.dst_row.data;
    a.t_offsets = t.t_offsets.data;
    a.t_edge = t.t_edge.data;
    a.t_seg_row = t.t_seg_row.data;
    a.t_seg_edge = t.t_seg_edge.data;
    cuda::derive_topology(a, temp.data(), result + kR * k, current());
  }
  std::vector<int64_t> found(kR * steps.size());
  HT_CUDA_TRY(cudaMemcpyAsync(found.data(), result, found.size() * 8, cudaMemcpyDeviceToHost, current()));
  HT_CUDA_TRY(cudaStreamSynchronize(current()));
  std::vector<int64_t> segments;
  for (size_t k = 0; k < steps.size(); ++k) {
    const DeriveTopology& d = steps[k];
    const int64_t* r = found.data() + kR * k;
    HT_CHECK(r[2] == INT64_MAX, "plan step ({}, {}): edge {} reads a row beyond the buffer ({} rows)", d.part, d.chunk,
             r[2], d.topo.num_src_rows);
    HT_CHECK(r[0] == INT64_MAX, "plan step ({}, {}): destination {} has no self-loop", d.part, d.chunk,
             d.dst_begin + r[0]);
    HT_CHECK(r[1] <= d.topo.t_seg_row.size, "plan step ({}, {}): {} transpose segments, room for {}", d.part, d.chunk,
             r[1], d.topo.t_seg_row.size);
    segments.push_back(r[1]);
  }
  return segments;
}

}  // namespace ht
