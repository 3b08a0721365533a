#include "engine/memory_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "engine/layer_math.hpp"

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

namespace {

// Packed bytes of one step (engine/device_plan.cpp's layout, from the step's
// sizes): topology, index lists, 17 arrays aligned to 256 bytes.
int64_t packed_step_bytes(const StepShape& s, CommMode mode, int64_t buffer_rows, bool weights, bool edge_keys,
                          bool early_pulls) {
  const int64_t ne = s.edges, nd = s.dst;
  const int64_t loads = mode == CommMode::baseline ? s.nbr : s.trans;
  const int64_t flushes = mode == CommMode::baseline ? s.nbr : mode == CommMode::p2p ? s.trans : s.flush;
  const int64_t remote = mode == CommMode::baseline ? 0 : s.remote;
  int64_t b = 8 * (nd + 1) + 4 * ne * 3 + 4 * nd + 8 * (buffer_rows + 1);
  if (weights) b += 4 * ne;
  if (edge_keys) b += 16 * ne;
  b += 8 * loads + 4 * remote + 8 * flushes;
  if (early_pulls) b += 8 * remote + 2 * 256;  // pull_src, pull_dst
  return b + 17 * 256;
}

// Rows returned to the host after the step (engine/device_plan.cpp's flush_count).
int64_t step_flushes(const StepShape& s, CommMode mode) {
  return mode == CommMode::baseline ? s.nbr : mode == CommMode::p2p ? s.trans : s.flush;
}

}  // namespace

// Mirrors Trainer::setup_devices: what a device holds is the merged data and
// gradient buffers, two slots of everything a batch in flight needs (packed
// step, read-ahead rows, inputs, outputs), the staging ring of returned
// gradient pieces, and the per-vertex arrays and parameters. Only the two
// slots' steps are resident, so more chunks shrink the per-batch terms.
DeviceMemoryNeed device_memory_need(const PlanShape& plan, int gpu, const TrainerOptions& opt, bool streamed) {
  const ModelConfig& m = opt.model;
  const CommMode mode = opt.comm;
  const auto [max_in, max_out, max_tw, max_heads, max_gather] = layer_extents(m, opt.gcn_order);
  // Per step: edge weights (GCN's Â), edge keys (GAT); attention buffers (GAT).
  const ModelTraits traits = model_traits(m.kind);
  const bool early = remote_areas(opt, plan.m, plan.n) != RemoteAreas::one;  // the pull lists in steps j > 0
  const int64_t rows = merged_buffer_rows(plan, gpu, opt);
  const int64_t nd = plan.max_dst[gpu], ne = plan.max_edges[gpu];
  int64_t max_step = 0, all_steps = 0, max_later = 0, max_flush = 0;
  for (int j = 0; j < plan.n; ++j) {
    const StepShape& s = plan.step(j, gpu);
    const int64_t b = packed_step_bytes(s, mode, rows, traits.edge_weights, traits.edge_keys, early && j > 0);
    max_step = std::max(max_step, b);
    all_steps += b;
    if (j > 0) max_later = std::max(max_later, s.trans - s.reused);
    max_flush = std::max(max_flush, step_flushes(s, mode));
  }
  const bool ahead = reads_ahead(opt, plan.n);
  DeviceMemoryNeed need;
  int64_t& var = need.per_chunk_bytes;
  var += 4 * rows * max_gather * 2;  // merged data and gradient buffers
  var += 4 * early_send_rows(plan, gpu, opt) * max_gather;  // early pulls' packed rows
  var += streamed ? 2 * max_step : all_steps;  // packed steps: a ring of two, or all of them
  if (ahead) var += 2 * 4 * max_later * max_gather;
  // Per slot: inputs (a, h, ∇h), outputs (a, h, ∇logits); z and ∇z once.
  var += 4 * nd * (2 * (2 * max_in + 3 * max_out + m.dims.back()) + 2 * max_out);
  var += 4 * nd * 2 * 2 * fused_transform_width(opt);  // fused transforms: t out and ∇t in per slot
  if (traits.attention) var += 4 * rows * max_tw * 2 + 4 * 5 * ne * max_heads;
  const int64_t piece = std::max<int64_t>(1, std::min(max_flush, staging_piece_rows(max_gather)));
  var += 3 * 4 * piece * max_gather;  // staging ring (pieces of at most 64 MiB)
  need.fixed_bytes = plan.num_vertices * (8 + 4 + 1) + 3 * 4 * m.dims.front() * static_cast<int64_t>(max_tw + max_out) +
                     (int64_t{16} << 20);  // keys/labels/split, parameters, library workspace
  if (opt.host_dtype != StoreDtype::f32)  // 16-bit shadows of the slots' inputs and outputs and of the staging ring
    var += 2 * (2 * nd * (2 * max_in + 4 * max_out) + 3 * piece * max_gather);
  return need;
}

DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, bool streamed) {
  return device_memory_need(shape_of(plan), gpu, opt, streamed);
}

bool streams_steps(const PlanShape& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  switch (opt.steps) {
    case StepPlacement::streamed: return plan.n > 2;
    case StepPlacement::resident: return false;
    case StepPlacement::automatic: break;
  }
  if (plan.n <= 2 || limit <= 0) return false;
  return device_memory_need(plan, gpu, opt, false).total() > limit;
}

bool streams_steps(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  return streams_steps(shape_of(plan), gpu, opt, limit);
}

DeviceMemoryNeed device_memory_need(const PlanShape& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  return device_memory_need(plan, gpu, opt, streams_steps(plan, gpu, opt, limit));
}

DeviceMemoryNeed device_memory_need(const Plan& plan, int gpu, const TrainerOptions& opt, int64_t limit) {
  const PlanShape shape = shape_of(plan);
  return device_memory_need(shape, gpu, opt, streams_steps(shape, gpu, opt, limit));
}

int64_t merged_buffer_rows(const PlanShape& plan, int gpu, const TrainerOptions& opt) {
  if (opt.comm == CommMode::baseline) return plan.nbr_capacity[gpu];
  const bool two = remote_areas(opt, plan.m, plan.n) != RemoteAreas::one;
  return plan.merged_capacity(gpu) + (two ? plan.remote_capacity[gpu] : 0);
}

int64_t early_send_rows(const PlanShape& plan, int gpu, const TrainerOptions& opt) {
  if (remote_areas(opt, plan.m, plan.n) != RemoteAreas::early_pulls) return 0;
  int64_t most = 0;
  for (int j = 1; j < plan.n; ++j) {
    int64_t rows = 0;
    for (int q = 0; q < plan.m; ++q)
      if (q != gpu) rows += plan.step(j, q).remote;
    most = std::max(most, rows);
  }
  return most;
}

int64_t second_merged_buffer_bytes(const PlanShape& plan, int gpu, const TrainerOptions& opt) {
  if (!opt.early_start || opt.merged_buffers != 2) return 0;
  const int64_t rows = std::max<int64_t>(merged_buffer_rows(plan, gpu, opt), 1);
  return 4 * rows * layer_extents(opt.model, opt.gcn_order).max_gather;
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
