#include "engine/memory_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/memory.hpp"
#include "engine/device_buffers.hpp"
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
    if (m.narrows(l)) x.max_narrowed = std::max<int64_t>(x.max_narrowed, m.out_width(l));
  }
  return x;
}

namespace {

// Packed bytes of one step (engine/device_plan.cpp's layout, from the step's
// sizes): topology, index lists, 17 arrays aligned to 256 bytes.
int64_t packed_step_bytes(const StepShape& s, CommMode mode, int64_t buffer_rows, bool weights, bool edge_keys,
                          bool early_pulls, bool derived) {
  const int64_t ne = s.edges, nd = s.dst;
  const int64_t loads = mode == CommMode::baseline ? s.nbr : s.trans;
  const int64_t flushes = mode == CommMode::baseline ? s.nbr : mode == CommMode::p2p ? s.trans : s.flush;
  const int64_t remote = mode == CommMode::baseline ? 0 : s.remote;
  int64_t b = 8 * (nd + 1) + 4 * ne * 3 + 4 * nd + 8 * (buffer_rows + 1);
  if (weights) b += 4 * ne;
  if (edge_keys) b += 16 * ne;
  b += 8 * loads + 4 * remote + 8 * flushes;
  if (early_pulls) b += 8 * remote + 2 * 256;  // pull_src, pull_dst
  if (derived) b += 12 * most_long_row_segments(ne) + 2 * 256;  // room for the transpose's segments
  return b + 17 * 256;
}

// Rows returned to the host after the step (engine/device_plan.cpp's flush_count).
int64_t step_flushes(const StepShape& s, CommMode mode) {
  return mode == CommMode::baseline ? s.nbr : mode == CommMode::p2p ? s.trans : s.flush;
}

// A device's sizes for the buffer list (device_buffers.hpp) as this planner
// has always estimated them: the plan's largest batch and the merged buffer's
// rows as they are (setup allocates at least one row of each), the rows a
// later batch loads as full mode's, the packed steps estimated from their
// sizes (packed_step_bytes).
BufferShape gpu_buffer_shape(const PlanShape& plan, int gpu, const TrainerOptions& opt, bool streamed) {
  const CommMode mode = opt.comm;
  const ModelTraits traits = model_traits(opt.model.kind);  // per step: edge weights, edge keys
  const bool early = remote_areas(opt, plan.m, plan.n) != RemoteAreas::one;  // the pull lists in steps j > 0
  BufferShape s;
  s.rows = merged_buffer_rows(plan, gpu, opt);
  s.nd = plan.max_dst[gpu];
  s.ne = plan.max_edges[gpu];
  int64_t max_step = 0, max_later = 0;
  for (int j = 0; j < plan.n; ++j) {
    const StepShape& st = plan.step(j, gpu);
    const int64_t b = packed_step_bytes(st, mode, s.rows, traits.edge_weights, traits.edge_keys, early && j > 0,
                                        !streamed && opt.derive_steps);
    max_step = std::max(max_step, b);
    if (!streamed) s.steps.push_back(b);
    if (j > 0) max_later = std::max(max_later, st.trans - st.reused);
    s.max_flush = std::max(s.max_flush, step_flushes(st, mode));
  }
  if (streamed) s.steps.push_back(max_step);
  s.streamed = streamed;
  s.later = reads_ahead(opt, plan.n) ? max_later : 0;
  s.send = early_send_rows(plan, gpu, opt);
  s.num_vertices = plan.num_vertices;
  return s;
}

}  // namespace

// The buffer list Trainer::setup_devices allocates (device_buffers.hpp),
// summed: the merged data and gradient buffers, two slots of everything a
// batch in flight needs (packed step, read-ahead rows, inputs, outputs), the
// model's buffers, the staging ring of returned gradient pieces, and the
// per-vertex arrays. Only the two slots' steps are resident, so more chunks
// shrink the per-batch terms. Left out: the second merged buffer (setup
// allocates it only when it fits: second_merged_buffer_bytes), and the
// parameters' exact entries, for which this planner keeps its estimate.
DeviceMemoryNeed device_memory_need(const PlanShape& plan, int gpu, const TrainerOptions& opt, bool streamed) {
  const ModelConfig& m = opt.model;
  const LayerExtents x = layer_extents(m, opt.gcn_order);
  DeviceMemoryNeed need;
  for (const DeviceBuffer& b : device_buffers(gpu_buffer_shape(plan, gpu, opt, streamed), opt)) {
    if (b.use == BufferUse::second_merged || b.use == BufferUse::param || b.use == BufferUse::param_grad) continue;
    (b.per_chunk ? need.per_chunk_bytes : need.fixed_bytes) += b.bytes();  // a reserved scratch too
  }
  need.fixed_bytes += 3 * 4 * m.dims.front() * static_cast<int64_t>(x.max_tw + x.max_out) +
                      (int64_t{16} << 20);  // parameters (an estimate), library workspace
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
  BufferShape s = gpu_buffer_shape(plan, gpu, opt, false);
  s.rows = std::max<int64_t>(s.rows, 1);  // (setup's rows)
  int64_t b = 0;
  for (const DeviceBuffer& e : device_buffers(s, opt))
    if (e.use == BufferUse::second_merged) b += e.bytes();
  return b;
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
