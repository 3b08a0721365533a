// The one list of a device's buffers (device_buffers.hpp).
#include "engine/device_buffers.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "engine/layer_math.hpp"

namespace ht {

std::vector<DeviceBuffer> device_buffers(const BufferShape& s, const TrainerOptions& opt) {
  const ModelConfig& m = opt.model;
  const LayerExtents x = layer_extents(m, opt.gcn_order);
  const bool half = opt.host_dtype != StoreDtype::f32;
  std::vector<DeviceBuffer> list;
  auto add = [&](std::string name, BufferUse use, int64_t rows, int64_t cols, int slot = 0) -> DeviceBuffer& {
    DeviceBuffer& b = list.emplace_back();
    b.name = std::move(name);
    b.use = use;
    b.rows = rows;
    b.cols = cols;
    b.slot = slot;
    return b;
  };
  add("merged data buffer", BufferUse::merged, s.rows, x.max_gather);
  add("merged gradient buffer", BufferUse::gradient, s.rows, x.max_gather);
  if (s.send > 0) add("early pulls' packed rows", BufferUse::early_send, s.send, x.max_gather);
  add("z", BufferUse::z, s.nd, x.max_out);
  add("dz", BufferUse::dz, s.nd, x.max_out);
  if (s.streamed) {  // a ring of two slots, each of the largest step
    HT_ASSERT(s.steps.size() == 1);
    for (int k = 0; k < kSlots; ++k) add("packed step (ring slot)", BufferUse::step, 1, s.steps[0], k).elem = 1;
  } else {
    for (size_t j = 0; j < s.steps.size(); ++j)
      add("packed step", BufferUse::step, 1, s.steps[j], static_cast<int>(j)).elem = 1;
  }
  const int64_t tw = fused_transform_width(opt);
  for (int k = 0; k < kSlots; ++k) {
    if (s.later > 0) add("read-ahead rows", BufferUse::incoming, s.later, x.max_gather, k);
    add("aggregate or own input rows in", BufferUse::in_a, s.nd, x.max_in, k);
    add("h^{l+1} in", BufferUse::in_h, s.nd, x.max_out, k);
    add("∇h^{l+1} or ∇t in", BufferUse::in_dh, s.nd, x.max_out, k);
    add("aggregate or ∇x out", BufferUse::out_a, s.nd, x.max_in, k);
    add("h^{l+1} or t out", BufferUse::out_h, s.nd, x.max_out, k);
    add("∇logits out", BufferUse::out_dl, s.nd, m.dims.back(), k);
    if (tw > 0) {  // fused transforms: the next layer's t out, ∇t in
      add("fused t out", BufferUse::out_t, s.nd, tw, k);
      add("fused ∇t in", BufferUse::in_t, s.nd, tw, k);
    }
    if (half) {  // 16-bit shadows: a, h, ∇h (or ∇t) in; a, h, t or ∇logits out
      add("16-bit inputs", BufferUse::raw_in, s.nd, x.max_in + 2 * x.max_out, k).elem = 2;
      add("16-bit outputs", BufferUse::raw_out, s.nd, x.max_in + 2 * x.max_out, k).elem = 2;
    }
  }
  if (const ModelTraits t = model_traits(m.kind); t.buffers) {
    int k = 0;
    for (DeviceBuffer& b : t.buffers(ModelBufferShape{s.rows, s.ne, x})) {
      b.use = BufferUse::model;
      b.owner = name_of(m.kind);
      if (b.site == BufferSite::allocated) b.slot = k++;
      list.push_back(std::move(b));
    }
  }
  if (!s.store_on_device) {  // staging ring (pieces of at most 64 MiB)
    const int64_t piece = std::max<int64_t>(1, std::min(s.max_flush, staging_piece_rows(x.max_gather)));
    for (int k = 0; k < kStagingSlots; ++k) {
      add("staging piece", BufferUse::staging, piece, x.max_gather, k);
      if (half) add("16-bit staging piece", BufferUse::raw_staging, piece, x.max_gather, k).elem = 2;
    }
  }
  add("original ids", BufferUse::keys, s.num_vertices, 1).elem = 8;
  add("labels", BufferUse::labels, s.num_vertices, 1).elem = 4;
  add("split", BufferUse::split, s.num_vertices, 1).elem = 1;
  int index = 0;
  for (int l = 0; l < m.num_layers(); ++l) {
    for (const ParamSpec& p : layer_param_specs(m, l)) {
      add(fmt::format("l{}.{}", l, p.what), BufferUse::param, p.rows, p.cols).index = index;
      add(fmt::format("∇l{}.{}", l, p.what), BufferUse::param_grad, p.rows, p.cols).index = index;
      ++index;
    }
  }
  for (DeviceBuffer& b : list)
    if (b.use == BufferUse::keys || b.use == BufferUse::labels || b.use == BufferUse::split ||
        b.use == BufferUse::param || b.use == BufferUse::param_grad)
      b.per_chunk = false;
  // Last: setup allocates it only when it fits (a gathering pass then loads
  // while the previous one computes).
  if (opt.early_start && opt.merged_buffers == 2 && !s.store_on_device)
    add("second merged data buffer", BufferUse::second_merged, s.rows, x.max_gather);
  return list;
}

int64_t allocated_bytes(const std::vector<DeviceBuffer>& list) {
  int64_t b = 0;
  for (const DeviceBuffer& e : list)
    if (e.site == BufferSite::allocated) b += e.bytes();
  return b;
}

}  // namespace ht
