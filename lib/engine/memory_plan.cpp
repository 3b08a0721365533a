#include "engine/memory_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"

namespace ht {

LayerExtents layer_extents(const ModelConfig& m, GcnOrder order) {
  LayerExtents x;
  for (int l = 0; l < m.num_layers(); ++l) {
    x.max_in = std::max<int64_t>(x.max_in, m.in_width(l));
    x.max_out = std::max<int64_t>(x.max_out, std::max(m.out_width(l), m.transform_width(l)));
    x.max_tw = std::max<int64_t>(x.max_tw, m.transform_width(l));
    x.max_heads = std::max<int64_t>(x.max_heads, m.layer_heads(l));
    x.max_gather = std::max(x.max_gather, gather_width(m, order, l));
  }
  return x;
}

DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt) {
  const ModelConfig& m = opt.model;
  const CommMode mode = opt.comm;
  const auto [max_in, max_out, max_tw, max_heads, max_gather] = layer_extents(m, opt.gcn_order);
  const bool gat = m.kind == ModelKind::gat;
  const int64_t rows = mode == CommMode::baseline ? plan.nbr_capacity[gpu] : plan.merged_capacity(gpu);
  const int64_t nd = plan.max_dst[gpu], ne = plan.max_edges[gpu];
  DeviceMemoryNeed need;
  int64_t& var = need.per_chunk_bytes;
  var += 4 * rows * max_gather * 3;  // data, gradient and flush staging buffers
  // Aggregate, output, output gradient (doubled for write-behind), transform, transform gradient.
  const int64_t copies = opt.overlap_copies ? 2 : 1;
  var += 4 * nd * (copies * (max_in + 2 * max_out) + 2 * max_out);
  if (gat) var += 4 * rows * max_tw * 2 + 4 * 5 * ne * max_heads;
  // Topology and index lists of every batch (they stay resident).
  for (int j = 0; j < plan.n; ++j) {
    const ChunkPlan& s = plan.step(j, gpu);
    const int64_t e = s.num_edges();
    var += 8 * (s.num_dst() + 1) + 4 * e * 4 + 4 * s.num_dst() + 8 * (rows + 1) + (gat ? 16 * e : 0);
    var += 8 * static_cast<int64_t>(s.trans_vid.size() + s.flush_slot.size()) + 4 * s.remote_slot.size();
  }
  need.fixed_bytes = plan.num_vertices * (8 + 4 + 1) + 3 * 4 * m.dims.front() * static_cast<int64_t>(max_tw + max_out) +
                     (int64_t{16} << 20);  // keys/labels/split, parameters, library workspace
  return need;
}

void check_device_memory(const DeviceMemoryNeed& need, int64_t limit, int gpu, int chunks) {
  if (limit <= 0 || need.total() <= limit) return;
  std::string hint;
  if (limit > need.fixed_bytes) {
    const double scale = static_cast<double>(need.per_chunk_bytes) / static_cast<double>(limit - need.fixed_bytes);
    const int64_t k = static_cast<int64_t>(std::ceil(chunks * scale * 1.15));
    hint = fmt::format("; about {} chunks per GPU would fit (ht-partition --chunks {}, or --chunks {} when "
                       "partitioning in memory)",
                       k, k, k);
  } else {
    hint = "; even the per-vertex arrays do not fit: use more GPUs";
  }
  throw Error(fmt::format("GPU {} needs {} for this plan ({} chunks per GPU) but {} is available{}", gpu,
                          format_bytes(static_cast<double>(need.total())), chunks,
                          format_bytes(static_cast<double>(limit)), hint));
}

}  // namespace ht
