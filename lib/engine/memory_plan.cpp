#include "engine/memory_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "engine/device_plan.hpp"

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

// Mirrors Trainer::setup_devices: what a device holds is the merged data and
// gradient buffers, two slots of everything a batch in flight needs (packed
// step, read-ahead rows, inputs, outputs), the staging ring of returned
// gradient pieces, and the per-vertex arrays and parameters. Only the two
// slots' steps are resident, so more chunks shrink the per-batch terms.
DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, bool streamed) {
  const ModelConfig& m = opt.model;
  const CommMode mode = opt.comm;
  const auto [max_in, max_out, max_tw, max_heads, max_gather] = layer_extents(m, opt.gcn_order);
  const bool gat = m.kind == ModelKind::gat;
  const int64_t rows = mode == CommMode::baseline ? plan.nbr_capacity[gpu] : plan.merged_capacity(gpu);
  const int64_t nd = plan.max_dst[gpu], ne = plan.max_edges[gpu];
  int64_t max_step = 0, all_steps = 0, max_later = 0, max_flush = 0;
  for (int j = 0; j < plan.n; ++j) {
    const ChunkPlan& s = plan.step(j, gpu);
    const int64_t b = packed_step_bytes(s, mode, rows, m.kind == ModelKind::gcn, gat);
    max_step = std::max(max_step, b);
    all_steps += b;
    int64_t loads = 0;
    for (size_t t = 0; t < s.trans_vid.size(); ++t) loads += s.trans_reused[t] ? 0 : 1;
    if (j > 0) max_later = std::max(max_later, loads);
    max_flush = std::max(max_flush, flush_count(s, mode));
  }
  const bool ahead = reads_ahead(opt, plan.n);
  DeviceMemoryNeed need;
  int64_t& var = need.per_chunk_bytes;
  var += 4 * rows * max_gather * 2;  // merged data and gradient buffers
  var += streamed ? 2 * max_step : all_steps;  // packed steps: a ring of two, or all of them
  if (ahead) var += 2 * 4 * max_later * max_gather;
  // Per slot: inputs (a, h, ∇h), outputs (a, h, ∇logits); z and ∇z once.
  var += 4 * nd * (2 * (2 * max_in + 3 * max_out + m.dims.back()) + 2 * max_out);
  var += 4 * nd * 2 * 2 * fused_transform_width(opt);  // fused transforms: t out and ∇t in per slot
  if (gat) var += 4 * rows * max_tw * 2 + 4 * 5 * ne * max_heads;
  const int64_t piece = std::max<int64_t>(1, std::min(max_flush, staging_piece_rows(max_gather)));
  var += 3 * 4 * piece * max_gather;  // staging ring (pieces of at most 64 MiB)
  need.fixed_bytes = plan.num_vertices * (8 + 4 + 1) + 3 * 4 * m.dims.front() * static_cast<int64_t>(max_tw + max_out) +
                     (int64_t{16} << 20);  // keys/labels/split, parameters, library workspace
  if (opt.host_dtype != StoreDtype::f32)  // 16-bit shadows of the slots' inputs and outputs and of the staging ring
    var += 2 * (2 * nd * (2 * max_in + 4 * max_out) + 3 * piece * max_gather);
  return need;
}

bool streams_steps(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  switch (opt.steps) {
    case StepPlacement::streamed: return plan.n > 2;
    case StepPlacement::resident: return false;
    case StepPlacement::automatic: break;
  }
  if (plan.n <= 2 || limit <= 0) return false;
  return device_memory_need(plan, gpu, opt, false).total() > limit;
}

DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  return device_memory_need(plan, gpu, opt, streams_steps(plan, gpu, opt, limit));
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
