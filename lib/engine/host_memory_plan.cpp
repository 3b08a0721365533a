#include "engine/host_memory_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/memory.hpp"
#include "engine/device_buffers.hpp"
#include "engine/device_plan.hpp"
#include "engine/layer_math.hpp"
#include "engine/memory_plan.hpp"
#include "engine/store_layout.hpp"
#include "models/model.hpp"

namespace ht {
namespace {

// What every process holds besides its data: the binary and its libraries
// (OpenBLAS, OpenMP), thread stacks, the allocator's slack. Measured on the
// CPU backend at 10-20 MiB (ht-train on an 800-vertex graph: 10.2 MiB).
constexpr int64_t kProcessBytes = int64_t{16} << 20;

// The model's parts the items count (as Trainer::setup and setup_devices
// allocate them): edge weights (GCN's Â, SAGE's mean) and the degrees they
// come from, edge keys (GAT's attention dropout).
struct ModelParts {
  bool weights = false, edge_keys = false;
};
ModelParts parts_of(ModelKind kind) {
  const ModelTraits t = model_traits(kind);
  return {t.edge_weights, t.edge_keys};
}

int64_t share_of(int64_t bytes, double fraction) { return static_cast<int64_t>(static_cast<double>(bytes) * fraction); }

// Trainer's step placement on an executor without a memory limit (the CPU
// backend's): resident unless streaming is asked for (streams_steps).
bool streams_on_host(const PlanShape& p, const TrainerOptions& opt) {
  return opt.steps == StepPlacement::streamed && p.n > 2;
}

// Rows each step loads from the host store and returns to it (index lists of
// the packed block, engine/device_plan.cpp's index_lists).
int64_t load_count(const StepShape& s, CommMode mode) {
  switch (mode) {
    case CommMode::baseline: return s.nbr;
    case CommMode::p2p: return s.trans;
    case CommMode::full: break;
  }
  return s.trans - s.reused;
}

int64_t flush_rows(const StepShape& s, CommMode mode) {
  switch (mode) {
    case CommMode::baseline: return s.nbr;
    case CommMode::p2p: return s.trans;
    case CommMode::full: break;
  }
  return s.flush;
}

// Σ over the parameter tensors of their sizes (values; gradients are as many):
// the model's parameter list (layer_param_specs) counted without making the
// tensors (the check that refuses a model too large for memory must not
// allocate it).
int64_t parameter_count(const ModelConfig& m) {
  m.validate();
  int64_t c = 0;
  for (int l = 0; l < m.num_layers(); ++l)
    for (const ParamSpec& s : layer_param_specs(m, l)) c += s.size();
  return c;
}

// Whether some backward pass hands its gradients to the next on the device
// (Trainer::hands_off with every vertex returned, the case of every plan the
// builder makes).
bool hands_off_some_layer(const TrainerOptions& opt, bool two_buffers) {
  const ModelConfig& m = opt.model;
  if (!opt.handoff_gradients) return false;
  auto tf = [&](int l) { return transform_first(m, opt.gcn_order, l); };
  for (int l = 1; l < m.num_layers(); ++l) {
    if (tf(l) && !fuses_transform(opt, l)) continue;
    // Trainer::hands_off's last case: layer l - 1's backward leaves the merged buffers alone.
    if ((l == 1 && !tf(0)) || (two_buffers && !backward_gathers(opt, l - 1))) return true;
  }
  return false;
}

// Host memory a step's build holds for a moment (make_topology's arrays, its
// counting sort's counters and the index lists): about its packed block plus
// a counter per buffer row for each part of the transpose (one per thread the
// step gets, at most one per buffer row's worth of edges: device_plan.cpp).
int64_t step_build_bytes(const StepShape& s, CommMode mode, int64_t rows, bool weights, bool edge_keys, bool early,
                         int step_threads) {
  const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(step_threads, s.edges / std::max<int64_t>(rows, 1)), 1, 1024);
  return packed_block_bytes(s, mode, rows, weights, edge_keys, early) + 4 * parts * rows;
}

struct Builder {
  const HostPlanInputs& in;
  HostMemoryPlan plan;

  void add(std::string name, int64_t bytes, unsigned phases, std::string detail = {}, bool graph_file = false) {
    if (bytes <= 0) return;
    plan.items.push_back({std::move(name), std::move(detail), bytes, phases, graph_file});
  }
};

// The renumbered graph (partition/partition.cpp's renumber) as the training
// job makes it: every array of the file in new ids but the features (h^0 is
// filled from the file), orig_ids always; the topology only where the plan
// is built in memory from it (a plan file carries its own: renumber_vertices).
int64_t renumbered_graph_bytes(const GraphShape& g, bool topology) {
  const int64_t n = g.vertices, e = g.edges;
  int64_t b = 8 * n;
  if (topology) b += 8 * (n + 1) + 4 * e + (g.weights ? 4 * e : 0);
  if (g.labels) b += 4 * n;
  if (g.split) b += n;
  return b;
}

std::string store_detail(const std::vector<StoreMatrix>& mats, int64_t n, int64_t elem) {
  std::string out;
  for (StoreKind k : {StoreKind::features, StoreKind::output, StoreKind::gradient, StoreKind::aggregate,
                      StoreKind::transform}) {
    const int64_t cols = store_columns(mats, k);
    if (cols == 0) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", store_kind_name(k),
                       format_bytes(static_cast<double>(cols * n * elem)));
  }
  return out;
}

void plan_items(Builder& b) {
  const HostPlanInputs& in = b.in;
  const PlanShape& p = *in.plan;
  const TrainerOptions& opt = in.opt;
  const ModelConfig& m = opt.model;
  const auto [weights, edge_keys] = parts_of(m.kind);
  const CommMode mode = opt.comm;
  const int64_t n_vertices = in.graph.vertices;
  const unsigned held = kPhasePack | kPhaseSetup | kPhaseTrain;

  // The plan itself: read from its file (the mapping's pages while it is
  // read) or built in memory from the renumbered graph (what the builder
  // holds for a moment is not counted); its lists go once the device plans
  // are packed.
  const int64_t plan_bytes = plan_memory_bytes(p);
  if (in.plan_file_bytes > 0) {
    b.add("plan", plan_bytes, kPhaseLoad | kPhaseRenumber | kPhasePack);
    b.add("plan file (while read)", in.plan_file_bytes, kPhaseLoad);
  } else {
    b.add("plan", plan_bytes, kPhaseRenumber | kPhasePack);
  }

  // Packed steps of every device in pinned host memory, and the lists the
  // device plans keep on the host (staged flush ids, handoff rows).
  int64_t packed = 0, lists = 0, flushes = 0, build = 0, emulated = 0, staging = 0;
  const auto ext = layer_extents(m, opt.gcn_order);
  const bool two_buffers = opt.early_start && opt.merged_buffers == 2 && !in.store_on_device;
  const int k_at_once = std::max(1, std::min(in.threads, p.n));
  const int first = in.first_device, last = in.devices > 0 ? first + in.devices : p.m;  // this process's devices
  // Every device's steps are built side by side, fewer than threads sharing them.
  const int step_threads = std::max(1, in.threads / std::max(1, (last - first) * p.n));
  for (int i = first; i < last; ++i) {
    const int64_t rows = merged_buffer_rows(p, i, opt);
    const bool early = remote_areas(opt, p.m, p.n) != RemoteAreas::one;  // the pull lists in steps j > 0
    std::vector<int64_t> step_build;
    int64_t max_flush = 0, own = 0;
    for (int j = 0; j < p.n; ++j) {
      const StepShape& s = p.step(j, i);
      packed += packed_block_bytes(s, mode, rows, weights, edge_keys, early && j > 0);
      step_build.push_back(step_build_bytes(s, mode, rows, weights, edge_keys, early && j > 0, step_threads));
      flushes += flush_rows(s, mode);
      max_flush = std::max(max_flush, flush_rows(s, mode));
      own += s.dst;
    }
    std::sort(step_build.rbegin(), step_build.rend());
    int64_t at_once = 0;
    for (int k = 0; k < k_at_once && k < static_cast<int>(step_build.size()); ++k) at_once += step_build[k];
    build = std::max(build, at_once);
    if (!in.store_on_device && hands_off_some_layer(opt, two_buffers)) lists += 8 * own;
    if (!in.store_on_device) {
      const int64_t piece = std::max<int64_t>(1, std::min(max_flush, staging_piece_rows(ext.max_gather)));
      staging += 3 * ((piece * ext.max_gather * dtype_bytes(opt.host_dtype) + 3) / 4 * 4);
    }
    if (in.emulated_devices) emulated += emulated_device_bytes(p, i, opt);
  }
  lists += 4 * flushes;  // staged flush ids (the returns that are not first returns), at most every flush
  b.add("device plans (pinned)", packed + lists, held);
  b.add("staging ring (pinned)", staging, held);
  b.add("emulated device memory", emulated, held, fmt::format("{} device{}", last - first, last - first > 1 ? "s" : ""));
  // Setup builds each device's steps a few at a time, then marks first
  // returns (a flag per flushed row and per vertex). An emulated device's
  // buffers are allocated after its steps are built: the last device's are
  // not there yet while its build peaks.
  const int64_t last_device = in.emulated_devices ? emulated_device_bytes(p, last - 1, opt) : 0;
  b.add("device plan build (packing only)", std::max(build - last_device, flushes + n_vertices), kPhasePack);
  // The model's scratch the executor reserves (the buffer list's reserved
  // entries): on the CPU backend, host memory while training.
  if (const ModelTraits t = model_traits(m.kind); in.emulated_devices && t.buffers) {
    int64_t ne = 0;
    for (int i = first; i < last; ++i) ne = std::max(ne, p.max_edges[i]);
    for (const DeviceBuffer& e : t.buffers(ModelBufferShape{0, ne, ext}))
      if (e.site == BufferSite::reserved) b.add(e.name + " (CPU)", e.bytes(), kPhaseTrain);
  }
}

}  // namespace

int64_t packed_block_bytes(const StepShape& s, CommMode mode, int64_t buffer_rows, bool weights, bool edge_keys,
                           bool early_pulls, bool derived) {
  int64_t end = 0;
  auto add = [&](int64_t count, int64_t size) { end = (end + count * size + 255) / 256 * 256; };
  const int64_t loads = load_count(s, mode), flushes = flush_rows(s, mode);
  add(s.dst + 1, 8);                 // offsets
  add(s.edges, 4);                   // src
  add(weights ? s.edges : 0, 4);     // weight
  add(s.dst, 4);                     // dst_row
  add(buffer_rows + 1, 8);           // t_offsets
  add(s.edges, 4);                   // t_edge
  add(s.edges, 4);                   // edge_dst
  add(edge_keys ? s.edges : 0, 8);   // src_key
  add(edge_keys ? s.edges : 0, 8);   // dst_key
  add(loads, 4);                     // load_vids
  add(loads, 4);                     // load_rows
  add(mode == CommMode::baseline ? 0 : s.remote, 4);  // remote_slots
  add(flushes, 4);                   // flush_rows
  add(flushes, 4);                   // flush_vids
  add(early_pulls ? s.remote : 0, 4);  // pull_src
  add(early_pulls ? s.remote : 0, 4);  // pull_dst
  if (derived) {  // t_seg_row, t_seg_edge: room for the most segments
    add(most_long_row_segments(s.edges), 4);
    add(most_long_row_segments(s.edges), 8);
  }
  return std::max<int64_t>(end, 256);
}

int64_t emulated_device_bytes(const PlanShape& p, int gpu, const TrainerOptions& opt) {
  const auto [weights, edge_keys] = parts_of(opt.model.kind);
  const CommMode mode = opt.comm;
  // The buffer list (device_buffers.hpp) with the sizes setup takes from the
  // device plan (rows at least 1; the packed steps' exact bytes).
  const int64_t brows = merged_buffer_rows(p, gpu, opt);
  BufferShape s;
  s.rows = std::max<int64_t>(brows, 1);
  s.nd = std::max<int64_t>(p.max_dst[gpu], 1);
  s.ne = std::max<int64_t>(p.max_edges[gpu], 1);
  s.streamed = streams_on_host(p, opt);
  int64_t max_step = 0, max_later = 0, first_loads = 0;
  for (int j = 0; j < p.n; ++j) {
    const StepShape& st = p.step(j, gpu);
    const int64_t bytes = packed_block_bytes(st, mode, brows, weights, edge_keys,
                                             remote_areas(opt, p.m, p.n) != RemoteAreas::one && j > 0,
                                             opt.derive_steps && !s.streamed);
    max_step = std::max(max_step, bytes);
    if (!s.streamed) s.steps.push_back(bytes);
    if (j > 0) max_later = std::max(max_later, load_count(st, mode));
    if (j == 0) first_loads = load_count(st, mode);
    s.max_flush = std::max(s.max_flush, flush_rows(st, mode));
  }
  if (s.streamed) s.steps.push_back(std::max<int64_t>(max_step, 256));
  s.later = reads_ahead(opt, p.n) ? std::max<int64_t>(max_later, 1) : 0;
  s.send = early_send_rows(p, gpu, opt);
  s.num_vertices = p.num_vertices;
  int64_t b = allocated_bytes(device_buffers(s, opt));  // the second merged buffer too
  // What setup's later parts allocate, by what they find.
  const bool two_buffers = opt.early_start && opt.merged_buffers == 2;
  if (opt.gpu_cache > 0) {
    // An explicit --gpu-cache budget fills the emulated device too, with
    // store rows of its choice: planned as the budget, or the whole store
    // when that is less.
    int64_t store = 0;
    for (const StoreMatrix& sm : store_matrices(opt)) store += p.num_vertices * sm.cols * dtype_bytes(opt.host_dtype);
    b += std::min(opt.gpu_cache, store);
  }
  if (opt.forward_on_device && two_buffers && mode != CommMode::baseline) b += 8 * first_loads;
  if (hands_off_some_layer(opt, two_buffers)) {
    int64_t own = 0;
    for (int j = 0; j < p.n; ++j) own += p.step(j, gpu).dst;
    b += 8 * own;
  }
  return b;
}

HostMemoryPlan plan_host_memory(const HostPlanInputs& in) {
  Builder b{in, {}};
  const GraphShape& g = in.graph;
  const TrainerOptions& opt = in.opt;
  const ModelConfig& m = opt.model;
  const int64_t n = g.vertices;
  const unsigned packed = kPhasePack | kPhaseSetup | kPhaseTrain;
  const unsigned held = kPhaseSetup | kPhaseTrain;

  b.add("process and libraries", std::max(kProcessBytes, in.process_bytes) + in.runtime_bytes, kAllPhases);
  // Checksums and renumbering read the whole file; then its pages are given
  // back, and setup reads the features again block by block, giving each
  // block back behind it.
  b.add("graph file (mapped)", g.file_bytes, kPhaseLoad | kPhaseRenumber, {}, true);
  if (g.id_bytes == 8) b.add("graph ids narrowed to 32 bits", 4 * g.edges, kAllPhases);
  b.add("partition", 8 * n, kAllPhases);
  b.add("partition file (while read)", in.partition_file_bytes, kPhaseLoad);
  const bool topology = in.plan_file_bytes == 0 && in.topology_renumbered;  // (the plan built in memory from it)
  b.add(topology ? "renumbered graph (no features)" : "renumbered vertex data", renumbered_graph_bytes(g, topology),
        kPhaseRenumber | kPhasePack);
  const int64_t params = parameter_count(m);
  b.add("vertex ids, degrees, parameters", 8 * n + (parts_of(m.kind).weights ? 4 * n : 0) + 16 * params, packed);
  if (!in.store_on_device) {
    // A process of a multi-process job holds its devices' rows: their chunks' destinations.
    int64_t rows = n;
    if (in.devices > 0 && in.plan) {
      rows = 0;
      for (int i = in.first_device; i < in.first_device + in.devices; ++i)
        for (int j = 0; j < in.plan->n; ++j) rows += in.plan->step(j, i).dst;
    }
    const std::vector<StoreMatrix> mats = store_matrices(opt);
    const int64_t elem = dtype_bytes(opt.host_dtype);
    int64_t bytes = 0;
    for (const StoreMatrix& s : mats) bytes += (rows * s.cols * elem + 3) / 4 * 4;
    b.add("vertex store", bytes, in.store_beside_plans ? held | kPhasePack : held,
          fmt::format("{}: {}{}", dtype_name(opt.host_dtype), store_detail(mats, rows, elem),
                      rows < n ? fmt::format("; this process's {} of {} rows", rows, n) : ""));
  } else {
    b.add("features in store order for the GPU store (setup only)", 4 * n * g.feature_dim, kPhaseSetup);
  }
  if (in.plan) {
    plan_items(b);
  } else {
    b.plan.plan_known = false;
  }
  int64_t outputs = 0;
  if (in.logits_out || in.predict_out) outputs += 4 * n * m.dims.back();  // Trainer::logits()
  if (in.logits_out) outputs += 4 * n * m.dims.back();                     // rows in file order
  if (in.predict_out) outputs += 20 * n;                                   // predictions and their text
  b.add("logits and outputs (at the end)", outputs, kPhaseTrain);

  HostMemoryPlan& p = b.plan;
  for (HostPhase ph : kPhasesInOrder) {
    HostPhaseTotal t{ph, 0, 0};
    for (const HostMemoryItem& it : p.items) {
      if (!(it.phases & ph)) continue;
      t.resident += it.bytes;
      // The mapped graph file is page cache once renumbering has read it.
      if (counts_in_need(it, ph)) t.need += it.bytes;
    }
    // Allocator and page rounding, the parts of the libraries' memory that
    // grow with the data: a small share on top.
    const int64_t margin = share_of(t.resident, 0.02);
    t.resident += margin;
    t.need += margin;
    p.phases.push_back(t);
    if (t.resident > p.peak) {
      p.peak = t.resident;
      p.peak_phase = ph;
    }
    if (t.need > p.need) {
      p.need = t.need;
      p.need_phase = ph;
    }
  }
  return p;
}

const char* host_phase_name(HostPhase p) {
  switch (p) {
    case kPhaseLoad: return "loading";
    case kPhaseRenumber: return "renumbering";
    case kPhasePack: return "packing";
    case kPhaseSetup: return "setup";
    case kPhaseTrain: return "training";
  }
  return "?";
}

bool counts_in_need(const HostMemoryItem& it, HostPhase ph) {
  return (it.phases & ph) && (!it.graph_file || ph == kPhaseLoad || ph == kPhaseRenumber);
}

std::string host_items_text(const HostMemoryPlan& p, HostPhase ph, int64_t total, bool need, int top) {
  std::vector<const HostMemoryItem*> held;
  for (const HostMemoryItem& it : p.items)
    if (need ? counts_in_need(it, ph) : (it.phases & ph) != 0) held.push_back(&it);
  std::stable_sort(held.begin(), held.end(),
                   [](const HostMemoryItem* a, const HostMemoryItem* b) { return a->bytes > b->bytes; });
  std::string out;
  int64_t listed = 0;
  for (int k = 0; k < static_cast<int>(held.size()) && k < top; ++k) {
    const HostMemoryItem& it = *held[k];
    out += fmt::format("{}{} {}{}", out.empty() ? "" : ", ", it.name, format_bytes(static_cast<double>(it.bytes)),
                       it.detail.empty() ? "" : " (" + it.detail + ")");
    listed += it.bytes;
  }
  if (total > listed) out += fmt::format("{}other {}", out.empty() ? "" : ", ", format_bytes(static_cast<double>(total - listed)));
  return out;
}

}  // namespace ht
