// What stays on the device between passes (docs/ARCHITECTURE.md, "Data that
// stays on the device"): a layer's outputs forwarded into the next layer's
// merged buffer, gradients handed from one backward pass to the next, the
// input features in the GPU cache, and which layer outputs still go to the
// host store. Each is switchable
// (TrainerOptions) and gives the same bits as the host round trip with an
// fp32 store.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "engine/cache_value.hpp"
#include "engine/device_uploads.hpp"
#include "engine/memory_plan.hpp"
#include "engine/row_tier.hpp"
#include "engine/trainer.hpp"
#include "engine/trainer_state.hpp"
#include "plan/plan_shape.hpp"

namespace ht {

using engine_detail::view;

namespace {

// A list on the device (none when empty). Large ones go through
// upload_bytes, as the resident steps do: on the GPU, pinned pieces filled by
// all cores while the copy engine moves the one before (Device::upload takes
// the driver's path for pageable memory, staged by one thread; the row
// tier's split lists are as long as the load lists). upload_bytes is
// ordered on the current queue; training reads the lists after setup's
// synchronize_all.
DevIdx upload_or_empty(Device& d, std::span<const uint32_t> v) {
  if (v.empty()) return DevIdx{};
  if (v.size_bytes() < bulk_tuning().huge_bytes) return d.upload(v);  // (tests: every list through upload_bytes)
  const DevArray<std::byte> on_device = d.alloc_bytes(static_cast<int64_t>(v.size_bytes()));
  d.upload_bytes(std::as_bytes(v), on_device);
  return DevIdx{reinterpret_cast<uint32_t*>(on_device.data), static_cast<int64_t>(v.size())};
}


}  // namespace

// The GPU cache: store matrices whose rows a device reads (and writes) are
// kept in its memory, each while it fits on every device, so they stop
// crossing the host link. In the p2p and full modes a device touches only its
// own partition's rows of the store (it loads its transition sets, writes its
// chunks' rows; other rows come from peers), so it caches just those: the
// cache is spread over the devices. In the baseline mode every device reads
// every neighbor row, so only h^0 is cached, whole, on each. The candidates
// (cache_candidates) are taken by value per byte of device memory
// (engine/cache_value.hpp), each that fits on every device; the row tier gets
// what is left. Gradient matrices (t / ∇t of transform-first layers, ∇x^l)
// are fp32 accumulators on the device whatever the store's type
// (TrainerOptions::gpu_accumulate): issue_return adds into them on the owner's
// compute queue, in the order the host would. Not cached: the logits (read
// by logits()). The host matrices stay (allocated before the cache is sized);
// nothing reads the rows a device caches there.
void Trainer::setup_gpu_cache(std::span<const int64_t> orig_id) {
  if (!may_cache_whole()) return;
  const bool automatic = opt_.gpu_cache == kGpuCacheAuto;
  const bool spread = opt_.comm != CommMode::baseline;
  Timer whole;
  std::vector<int64_t> left, row0, row1;
  for (auto& st : dev_) {
    const Device& d = *st->dev;
    const int64_t limit = exec_.memory_limit(d.index());
    if (automatic) left.push_back(limit > 0 ? limit - d.allocated_bytes() - gpu_cache_margin(limit) : 0);
    else left.push_back(limit > 0 ? std::min(opt_.gpu_cache, limit - d.allocated_bytes()) : opt_.gpu_cache);
    const size_t i = row0.size();  // its partition's rows, or all of them
    row0.push_back(spread ? plan_.part_offsets[first_ + i] : 0);
    row1.push_back(spread ? plan_.part_offsets[first_ + i + 1] : num_vertices_);
  }
  int64_t loads = 0, returns = 0;  // device 0's, per own row and epoch
  for (const DeviceStep& step : dev_[0]->plan.steps) {
    loads += step.load_count();
    returns += step.flush_count();
  }
  const double own_rows = static_cast<double>(std::max<int64_t>(row1[0] - row0[0], 1));
  std::vector<Candidate> wanted = cache_candidates(store_, spread || plan_.m == 1, static_cast<double>(loads) / own_rows,
                                                   static_cast<double>(returns) / own_rows);
  std::vector<CacheCandidate> values;
  for (const Candidate& c : wanted) values.push_back(c.value);
  // The test and diagnostic hook (cache_whole_max) takes the first matrices in layer order.
  std::vector<size_t> order = rank_by_value(values);
  if (opt_.cache_whole_max >= 0) std::sort(order.begin(), order.end());
  std::vector<std::pair<size_t, std::string>> taken;  // (candidate, name)
  int64_t most = 0;  // bytes on the fullest device
  double saved = 0;  // bytes per epoch on device 0
  std::vector<int64_t> used(dev_.size(), 0);
  // Copies from unpinned host rows (h^0 held whole: deferred_pins), run after
  // the loop on every device at once (device_uploads.hpp; were device after
  // device: issue 33, 10.8 s for 8 GiB per GPU on 4 GPUs).
  std::vector<std::vector<ByteUpload>> pageable(dev_.size());
  for (size_t k : order) {
    const Candidate& c = wanted[k];
    const HostMat* mat = c.stored;
    if (opt_.cache_whole_max >= 0 && static_cast<int>(taken.size()) >= opt_.cache_whole_max) break;
    const int64_t row_bytes = c.value.gpu_row_bytes;
    bool fits = true;
    for (size_t i = 0; i < dev_.size(); ++i) fits = fits && (row1[i] - row0[i]) * row_bytes <= left[i] - used[i];
    if (!fits) {
      if (mat == &store_.h[0]) {
        log::info("GPU cache: the input features ({} per GPU) do not fit whole in the {}",
                  format_bytes((row1[0] - row0[0]) * row_bytes), automatic ? "free GPU memory" : "cache budget");
        if (opt_.cache_whole_max >= 0) break;  // layer order: the tier takes h^0
      }
      continue;  // a smaller one may fit
    }
    const bool widened = c.accumulator && mat->dtype != StoreDtype::f32;
    for (size_t i = 0; i < dev_.size(); ++i) {
      Device& d = *dev_[i]->dev;
      const int64_t bytes = (row1[i] - row0[i]) * row_bytes;
      const DevArray<std::byte> copy = d.alloc_bytes(bytes);
      d.use(Queue::compute);
      if (widened) {  // an fp32 accumulator: written (or cleared) before any pass reads it
        d.zero(DevArray<float>{reinterpret_cast<float*>(copy.data), bytes / 4});
      } else if (mat != &store_.h[0]) {
        // A written matrix (rewritten before it is read): its host copy is
        // the store's zeros still, so zeros on the device are the same bits
        // without a copy (an odd 16-bit tail copied: upload_bytes takes
        // unpinned memory).
        d.zero(DevArray<float>{reinterpret_cast<float*>(copy.data), bytes / 4});
        const int64_t tail = bytes % 4;
        if (tail > 0)
          d.upload_bytes(std::span<const std::byte>(mat->row_bytes(row0[i]) + (bytes - tail), static_cast<size_t>(tail)),
                         DevArray<std::byte>{copy.data + (bytes - tail), tail});
      } else if (exec_.host_pinned(*mat)) {
        d.copy_bytes_in(mat->row_bytes(row0[i]), copy, bytes);
      } else {  // not pinned (held whole: deferred_pins): through upload_bytes' pinned pieces, below
        pageable[i].push_back({std::span<const std::byte>(mat->row_bytes(row0[i]), static_cast<size_t>(bytes)), copy});
      }
      // Indexed by store row like the host matrix; only rows [row0, row1) are ever touched.
      const auto base = reinterpret_cast<uintptr_t>(copy.data) - static_cast<uintptr_t>(row0[i] * row_bytes);
      const StoreDtype dtype = widened ? StoreDtype::f32 : mat->dtype;
      dev_[i]->cache.push_back(
          {mat, HostMat{reinterpret_cast<void*>(base), mat->rows, mat->cols, d.index(), dtype, row0[i], row1[i]}});
      used[i] += bytes;
      most = std::max(most, used[i]);
    }
    saved += c.value.value() * static_cast<double>((row1[0] - row0[0]) * row_bytes);
    taken.push_back({k, widened ? c.value.name + " (fp32)" : c.value.name});
  }
  Timer uploads;
  upload_on_devices(exec_, pageable);
  if (std::any_of(pageable.begin(), pageable.end(), [](const auto& u) { return !u.empty(); }))
    log::debug("GPU cache: whole matrices from unpinned host memory uploaded to {} GPU{} at once in {:.2f} s",
               dev_.size(), dev_.size() > 1 ? "s" : "", uploads.seconds());
  std::sort(taken.begin(), taken.end());  // named in layer order
  std::vector<std::string> cached;
  for (auto& t : taken) cached.push_back(std::move(t.second));
  if (!cached.empty())
    log::info("GPU cache: {} ({} on the fullest of {} GPU{}{}; saves about {} of host-link and host-add traffic per epoch{})",
              fmt::join(cached, ", "), format_bytes(most), dev_.size(), dev_.size() > 1 ? "s" : "",
              dev_.size() > 1 ? (spread ? ", each its partition's rows" : ", whole on each") : "",
              format_bytes(static_cast<int64_t>(saved)), dev_.size() > 1 ? " on GPU 0" : "");
  for (size_t i = 0; i < dev_.size(); ++i) left[i] -= used[i];
  cache_held_.what = fmt::format("{}", fmt::join(cached, ", "));  // setup_row_tier adds its part
  cache_held_.saved_bytes = static_cast<int64_t>(saved);
  setup_phases_.add_part("GPU cache", "whole matrices", whole.seconds());
  pin_store_rest();  // before the row tier, which reads its matrix's host rows
  setup_row_tier(left, orig_id);
  for (size_t i = 0; i < dev_.size(); ++i) {
    const HostMat& tier = dev_[i]->tier.rows;
    cache_held_.bytes = std::max(cache_held_.bytes, used[i] + tier.rows * tier.cols * tier.elem_bytes());
  }
}

// The matrices of `s` the cache may hold whole (all of them only when a
// device writes the rows it caches: the p2p and full modes, or one device;
// else h^0 alone), each valued from device 0's plan: per own row and epoch,
// g loads of a gathered matrix (its load lists over its own rows, per pass
// that gathers it), r returns of a gradient matrix (its flush lists), of
// which all but the first are host adds.
std::vector<Trainer::Candidate> Trainer::cache_candidates(const VertexStore& s, bool written_too, double g,
                                                          double r) const {
  const ModelConfig& m = opt_.model;
  const double adds = std::max(0.0, r - 1.0);
  const bool accumulate = store_dtype() == StoreDtype::f32 || opt_.gpu_accumulate;
  std::vector<Candidate> out;
  auto add = [&](const HostMat& mat, std::string name, double crossings, double host_adds, bool accumulator) {
    if (mat.data == nullptr) return;
    const int64_t store_row = mat.cols * mat.elem_bytes();
    const int64_t gpu_row = accumulator ? mat.cols * 4 : store_row;
    out.push_back({&mat, accumulator, CacheCandidate{std::move(name), gpu_row, store_row, crossings, host_adds}});
  };
  // Reads of the matrix layer l gathers: its loads (GAT's backward gathers
  // again; SAGE's that stores its mean reads its own rows once instead).
  // Layer l gathers t^l when it transforms first, else h^l (gathered).
  auto gather_reads = [&](int l) {
    if (gathers(Pass::backward, l)) return 2.0 * g;
    return g + (loads_own_rows(l) ? 1.0 : 0.0);
  };
  add(s.h[0], "h^0", !transform_first(0) ? gather_reads(0) : 2.0, 0, false);
  if (!written_too) return out;
  // s.agg: GCN's a^l (aggregate-first) or t^l (transform-first), SAGE's
  // mean (named a^l too); empty where a layer stores nothing (add skips it).
  for (int l = 0; l < m.num_layers(); ++l)
    if (!transform_first(l)) add(s.agg[l], fmt::format("a^{}", l), 2.0, 0, false);  // written, read back
  for (int l = 1; l < m.num_layers(); ++l)  // written, gathered or read by a transform
    add(s.h[l], fmt::format("h^{}", l), 1.0 + (!transform_first(l) ? gather_reads(l) : 1.0), 0, false);
  if (!accumulate) return out;
  // Matrices gradients return into: the flushes add into them on the device,
  // in the order the host adds them (a device returns only its own rows,
  // batch by batch).
  for (int l = 0; l < m.num_layers(); ++l)
    if (transform_first(l))  // t written and gathered forward; ∇t returned and read back
      add(s.agg[l], fmt::format("t^{}", l), 1.0 + g + r + 1.0, adds, true);
  for (int l = 1; l <= m.num_layers(); ++l)  // returned, read back (∇logits: written, read)
    add(s.grad[l], fmt::format("∇x^{}", l), l == m.num_layers() ? 2.0 : r + 1.0, l == m.num_layers() ? 0 : adds,
        true);
  return out;
}

// Whether setup_gpu_cache may hold store matrices whole: a host store, a
// cache asked for, and (automatic) device memory to put it in.
bool Trainer::may_cache_whole() const {
  if (opt_.gpu_cache == 0 || store_on_device()) return false;
  return opt_.gpu_cache != kGpuCacheAuto || exec_.has_device_memory();
}

// The room the GPU cache is expected to find on each of this process's
// devices once the buffers are allocated (setup_gpu_cache measures it then):
// the limit less device_memory_need, the second merged buffer (which the
// need leaves out and setup_devices takes when it fits) and the margin; or
// the budget. Empty when the cache cannot hold matrices whole. Computed
// before the store's thread starts (from the plan's sizes).
std::vector<int64_t> Trainer::cache_room_guess() const {
  if (!may_cache_whole()) return {};
  const bool automatic = opt_.gpu_cache == kGpuCacheAuto;
  const PlanShape shape = shape_of(plan_);
  std::vector<int64_t> room;
  for (int i = 0; i < exec_.num_devices(); ++i) {
    const int job = first_ + i;
    const int64_t limit = exec_.memory_limit(i);
    const int64_t free = limit - device_memory_need(plan_, job, opt_, limit).total() -
                         second_merged_buffer_bytes(shape, job, opt_);
    room.push_back(automatic ? (limit > 0 ? free - gpu_cache_margin(limit) : 0)
                             : (limit > 0 ? std::min(opt_.gpu_cache, free) : opt_.gpu_cache));
  }
  return room;
}

// The matrices of `s` the store's thread leaves unpinned: every candidate of
// the GPU cache when all of them are expected to fit on every device (`room`:
// cache_room_guess); else none, and the store is pinned beside the device
// plans as before. The cache's choice needs the plans (its values) and the
// buffers (its room), which come after the thread has started; a wrong guess
// costs time (pin_store_rest pins what the cache leaves, or a matrix it takes
// was pinned for nothing), never bits. Runs in the store's thread: reads the
// options and the plan's partition offsets only.
std::vector<const HostMat*> Trainer::deferred_pins(const VertexStore& s, std::span<const int64_t> room) const {
  if (room.empty()) return {};
  const bool spread = opt_.comm != CommMode::baseline;
  const std::vector<Candidate> c = cache_candidates(s, spread || plan_.m == 1, 0, 0);
  for (size_t i = 0; i < room.size(); ++i) {
    const int job = first_ + static_cast<int>(i);
    const int64_t rows = spread ? plan_.part_offsets[job + 1] - plan_.part_offsets[job] : num_vertices_;
    int64_t want = 0;
    for (const Candidate& k : c) want += rows * k.value.gpu_row_bytes;
    if (want > room[i]) return {};
  }
  std::vector<const HostMat*> out;
  for (const Candidate& k : c) out.push_back(k.stored);
  return out;
}

// Once the cache has taken its whole matrices: every store matrix not yet
// pinned is pinned now, except those the cache holds whole (no device reads
// or writes their host rows: source() points every device at its copy).
void Trainer::pin_store_rest() {
  Timer t;
  int64_t late = 0;
  store_pinned_ = {};
  for_each_host_matrix(store_, [&](const HostMat& mat) {
    const int64_t bytes = mat.held_bytes();
    if (!exec_.host_pinned(mat)) {
      // Held whole by every device here (the cache takes a matrix on all or none).
      const bool whole =
          std::all_of(dev_.begin(), dev_.end(), [&](const auto& st) { return &source(*st, mat) != &mat; });
      if (whole) {
        store_pinned_.unpinned_bytes += bytes;
        return;
      }
      exec_.pin_host(mat);
      late += bytes;
    }
    store_pinned_.pinned_bytes += bytes;
  });
  if (late > 0) setup_phases_.add_part("GPU cache", "store pinned", t.seconds());
  if (store_pinned_.unpinned_bytes > 0 || late > 0)
    log::info("vertex store: {} pinned ({} of it after the GPU cache chose), {} not (held whole by the GPU cache)",
              format_bytes(store_pinned_.pinned_bytes), format_bytes(late), format_bytes(store_pinned_.unpinned_bytes));
}

// The matrix layer l gathers into the merged buffer: t^l (transform-first), else h^l.
const HostMat& Trainer::gathered(int l) const { return transform_first(l) ? store_.agg[l] : store_.h[l]; }

// The row tier takes the first gathered matrix, in layer order, that the GPU
// cache does not hold whole (its layer, or -1 for none): h^0 (never written),
// or a matrix written every epoch, whose rows a device may hold only where it
// writes them too (its own partition's rows: the p2p and full modes, or one
// device).
int Trainer::tier_layer() const {
  const ModelConfig& m = opt_.model;
  const bool writer_reads = opt_.comm != CommMode::baseline || plan_.m == 1;
  for (int l = 0; l < m.num_layers(); ++l) {
    const HostMat& g = gathered(l);
    if (g.data == nullptr || &source(*dev_[0], g) != &g) continue;  // not in the store, or cached whole
    if (&g != &store_.h[0] && !writer_reads) continue;
    return l;
  }
  return -1;
}

// The rows device `st` tiers of a matrix `cols` wide (`row_bytes` each in the
// store): the hottest of `loads` among rows [b, e) that fit in `room` bytes
// with their lists (8 bytes per load-list entry of the device: the split
// lists; per row its dropout key, its vertex and, written, its local row; a
// 16-bit written matrix also the largest batch's rows in fp32).
Trainer::TierChoice Trainer::choose_tier_rows(const DeviceState& st, std::span<const std::span<const uint32_t>> loads,
                                              int64_t b, int64_t e, int64_t room, int64_t cols, int64_t row_bytes,
                                              bool written, bool narrow, bool returns) const {
  int64_t entries = 0;
  for (const DeviceStep& step : st.plan.steps) entries += 2 * step.load_vids.count + (returns ? step.flush_count() : 0);
  const int64_t per_row = row_bytes + 8 + 4 + (written ? 4 : 0);
  int64_t capacity = (room - 4 * entries) / per_row;
  if (opt_.tier_rows_max >= 0) capacity = std::min(capacity, opt_.tier_rows_max);
  TierChoice c;
  if (capacity <= 0) return c;
  // Rows handed from one backward pass to the next stay out of a tier that
  // takes returns (split_tier_returns: they are returned once, by the last
  // batch, and read from the gradient buffer).
  // (A mark per eligible row, instead of a sort and a binary search per tier
  // row: a billion-edge graph has millions of each.)
  std::vector<uint8_t> handed;
  if (returns) {
    handed.assign(static_cast<size_t>(e - b), 0);
    for (size_t j = 0; j < st.plan.handoff.size(); ++j)
      for (uint32_t r : st.plan.handoff[j].rows) {
        const int64_t v = st.plan.steps[j].plan->dst_begin + r;
        if (v >= b && v < e) handed[static_cast<size_t>(v - b)] = 1;
      }
  }
  auto hottest = [&](int64_t k) {
    TierRows t = hottest_rows(loads, b, e, k);
    if (handed.empty()) return t;
    std::vector<uint32_t> kept;
    for (uint32_t v : t.vids)
      if (!handed[v - b]) kept.push_back(v);
    t.vids = std::move(kept);  // (hot_loads still counts the few dropped: a statistic)
    return t;
  };
  c.hot = hottest(capacity);
  if (!written) return c;
  for (int pass = 0; pass < 2; ++pass) {
    c.own.assign(st.plan.steps.size(), {});
    parallel_tasks(static_cast<int64_t>(st.plan.steps.size()), [&](int64_t j) {
      const ChunkPlan& batch = *st.plan.steps[static_cast<size_t>(j)].plan;
      c.own[static_cast<size_t>(j)] = own_tier_rows(c.hot.vids, batch.dst_begin, batch.dst_begin + batch.num_dst());
    });
    int64_t most = 0, total = 0;
    for (const TierOwnRows& o : c.own) {
      most = std::max<int64_t>(most, static_cast<int64_t>(o.local_rows.size()));
      total += static_cast<int64_t>(o.local_rows.size());
    }
    HT_ASSERT(total == static_cast<int64_t>(c.hot.vids.size()));  // every tier row is one of its batches' own
    c.scratch_floats = narrow ? most * cols : 0;
    const int64_t k = static_cast<int64_t>(c.hot.vids.size());
    const int64_t over = k * per_row + 4 * entries + 4 * c.scratch_floats - room;
    if (over <= 0) return c;
    HT_ASSERT(pass == 0);  // fewer rows: less scratch, so the second choice fits
    capacity = k - (over + per_row - 1) / per_row;
    if (capacity <= 0) return {};
    c.hot = hottest(capacity);
  }
  return c;
}

// Per device, in what the whole matrices left (`room` bytes): the tier's
// rows (choose_tier_rows), their dropout keys, each batch's split load lists
// and, for a written matrix, its own tier rows; filled from the store.
void Trainer::setup_row_tier(std::span<const int64_t> room, std::span<const int64_t> orig_id) {
  const int layer = tier_layer();
  if (layer < 0) return;
  const HostMat* mat = &gathered(layer);
  const std::string name = fmt::format("{}^{}", transform_first(layer) ? "t" : "h", layer);
  // The passes that gather it: the forward, whose first batch loads nothing
  // when the layer before forwards its rows on the device, and a backward
  // that gathers (GAT's; SAGE's own rows are loaded from the store).
  const int from = layer > 0 && forwards(layer - 1) ? 1 : 0;
  const int passes = gathers(Pass::backward, layer) ? 2 : 1;
  const bool written = mat != &store_.h[0];
  // t^l of a transform-first GCN layer is also where its backward pass returns ∇t^l.
  const bool returns = opt_.tier_returns && written && transform_first(layer);
  const int64_t cols = mat->cols, row_bytes = cols * mat->elem_bytes();
  // Where the tier's time goes, over all devices (the summary's "GPU cache" parts).
  double rows_s = 0, lists_s = 0, uploads_s = 0, fill_s = 0, returns_s = 0;
  Timer part;
  auto lap = [&part](double& into) {
    into += part.seconds();
    part.reset();
  };
  for (size_t i = 0; i < dev_.size(); ++i) {
    DeviceState& st = *dev_[i];
    Device& d = *st.dev;
    part.reset();
    std::vector<std::span<const uint32_t>> lists, loads;  // every batch's; those an epoch reads from the host
    for (const DeviceStep& step : st.plan.steps)
      lists.push_back({reinterpret_cast<const uint32_t*>(step.bytes.data() + step.load_vids.offset),
                       static_cast<size_t>(step.load_vids.count)});
    for (int p = 0; p < passes; ++p)
      for (size_t j = p == 0 ? from : 0; j < lists.size(); ++j) loads.push_back(lists[j]);
    // A written matrix: the rows this device writes (its partition's), else any row.
    const bool own = written && plan_.m > 1;
    const int64_t b = own ? plan_.part_offsets[st.job] : 0, e = own ? plan_.part_offsets[st.job + 1] : num_vertices_;
    const TierChoice c =
        choose_tier_rows(st, loads, b, e, room[i], cols, row_bytes, written, mat->dtype != StoreDtype::f32, returns);
    lap(rows_s);
    if (c.hot.vids.empty()) continue;
    DeviceState::RowTier& t = st.tier;
    const int64_t k = static_cast<int64_t>(c.hot.vids.size());
    d.use(Queue::compute);
    t.stored = mat;
    t.rows = HostMat{d.alloc_bytes((k * row_bytes + 3) / 4 * 4).data, k, cols, d.index(), mat->dtype};  // (zeroed as floats)
    std::vector<int64_t> keys(c.hot.vids.size());
    parallel_blocks(k, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) keys[static_cast<size_t>(p)] = orig_id[c.hot.vids[static_cast<size_t>(p)]];
    });
    const TierIndex index = TierIndex::of(c.hot.vids);  // (the loads' split and the returns' share it)
    const std::vector<TierSplit> splits = split_step_loads(st, lists, index);
    lap(lists_s);
    t.keys = d.upload(std::span<const int64_t>(keys));
    for (size_t j = 0; j < st.plan.steps.size(); ++j) {
      const TierSplit& split = splits[j];
      t.hot_slots.push_back(upload_or_empty(d, split.hot_slots));
      t.hot_rows.push_back(upload_or_empty(d, split.hot_rows));
      t.cold_vids.push_back(upload_or_empty(d, split.cold_vids));
      t.cold_rows.push_back(upload_or_empty(d, split.cold_rows));
      if (j == 0) t.cold_by_producer = split.cold_pieces;
      if (written) {
        t.own_rows.push_back(upload_or_empty(d, c.own[j].local_rows));
        t.own_slot0.push_back(c.own[j].slot0);
      }
    }
    if (c.scratch_floats > 0) t.scratch = d.alloc_floats(c.scratch_floats);
    lap(uploads_s);
    fill_tier(st, c.hot.vids);
    lap(fill_s);
    const double returned = returns ? setup_tier_returns(st, index) : 0.0;
    lap(returns_s);
    cache_held_.tier_rows = std::max(cache_held_.tier_rows, k);
    if (i == 0)
      log::info("GPU cache tier: the {} rows of {} loaded most often ({:.1f}% of its loads from the host, {}){}{}", k,
                name, 100.0 * static_cast<double>(c.hot.hot_loads) / static_cast<double>(std::max<int64_t>(c.hot.loads, 1)),
                format_bytes(k * row_bytes), dev_.size() > 1 ? " on GPU 0, each GPU its own" : "",
                returns ? fmt::format("; they take {:.1f}% of the returns of ∇{} on the GPU", 100.0 * returned, name) : "");
  }
  if (cache_held_.tier_rows > 0)
    cache_held_.what += fmt::format("{}tier of {}", cache_held_.what.empty() ? "" : "; ", name);
  for (const auto& [what, seconds] : {std::pair{"tier rows", rows_s}, {"tier lists", lists_s},
                                      {"tier uploads", uploads_s}, {"tier fill", fill_s}, {"tier returns", returns_s}})
    setup_phases_.add_part("GPU cache", what, seconds);
}

// The tier takes the returns into its matrix (RowTier::returns): every step's
// flush list split (split_tier_returns, each over all threads), the tier
// slots of its tier rows uploaded, the resident steps' flush lists copied
// again. Returns
// the share of the flush entries the tier takes.
double Trainer::setup_tier_returns(DeviceState& st, const TierIndex& index) {
  const int64_t n = static_cast<int64_t>(st.plan.steps.size());
  std::vector<std::vector<uint32_t>> slots(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    slots[static_cast<size_t>(j)] = split_tier_returns(st.plan.steps[static_cast<size_t>(j)], index);
  Device& d = *st.dev;
  d.use(Queue::compute);
  int64_t taken = 0, all = 0;
  DeviceState::RowTier& t = st.tier;
  t.returns = true;
  for (int64_t j = 0; j < n; ++j) {
    const DeviceStep& step = st.plan.steps[static_cast<size_t>(j)];
    t.ret_slots.push_back(upload_or_empty(d, slots[static_cast<size_t>(j)]));
    taken += step.tier_first + step.tier_staged;
    all += step.flush_count();
    if (st.streamed) continue;
    // Resident: setup_devices copied the step before the split (and
    // synchronized since); only its flush lists changed. (The whole step
    // again was a second copy of every plan at setup.)
    const DevArray<std::byte> on_device = st.ring[static_cast<size_t>(j)];
    for (const Slice& s : {step.flush_rows, step.flush_vids}) {
      const int64_t bytes = s.count * static_cast<int64_t>(sizeof(uint32_t));
      d.upload_bytes(step.bytes.subspan(static_cast<size_t>(s.offset), static_cast<size_t>(bytes)),
                     DevArray<std::byte>{on_device.data + s.offset, bytes});
    }
  }
  return static_cast<double>(taken) / static_cast<double>(std::max<int64_t>(all, 1));
}

// Every step's load list split by the tier (split_loads), step after step,
// each over all threads: at a billion edges the lists hold hundreds of
// millions of entries, and a device has a few steps (one task per step left
// most cores idle).
std::vector<TierSplit> Trainer::split_step_loads(const DeviceState& st, std::span<const std::span<const uint32_t>> lists,
                                                 const TierIndex& index) const {
  const size_t n = st.plan.steps.size();
  std::vector<TierSplit> out(n);
  for (size_t j = 0; j < n; ++j) {
    const DeviceStep& step = st.plan.steps[j];
    const auto* rows = reinterpret_cast<const uint32_t*>(step.bytes.data() + step.load_rows.offset);
    out[j] = split_loads(lists[j], {rows, static_cast<size_t>(step.load_rows.count)}, index,
                         j == 0 ? std::span<const Slice>(step.load_by_producer) : std::span<const Slice>{});
  }
  return out;
}

// The tier's rows from the store, on the compute queue (16-bit rows through
// the merged buffer, free at setup, widened and rounded back: the same bits).
void Trainer::fill_tier(DeviceState& st, std::span<const uint32_t> vids) {
  Device& d = *st.dev;
  const DeviceState::RowTier& t = st.tier;
  const int64_t k = t.rows.rows, cols = t.rows.cols;
  const DevIdx dev_vids = d.upload(vids);
  const bool narrow = t.rows.dtype != StoreDtype::f32;
  const int64_t piece = narrow ? std::max<int64_t>(1, st.xs[0].size / cols) : k;
  for (int64_t p0 = 0; p0 < k; p0 += piece) {
    const int64_t cnt = std::min(piece, k - p0);
    const DevIdx rows = dev_vids.sub(p0, cnt);
    if (!narrow) {
      d.gather_from_host(*t.stored, rows, DevIdx{nullptr, cnt}, DevMat{t.rows.row(p0), cnt, cols}, DropoutSpec{});
      continue;
    }
    const DevMat tmp = view(st.xs[0], cnt, cols);
    d.gather_from_host(*t.stored, rows, DevIdx{nullptr, cnt}, tmp, DropoutSpec{});
    d.narrow_rows(tmp, t.rows.dtype, DevArray<std::byte>{t.rows.row_bytes(p0), cnt * cols * t.rows.elem_bytes()});
  }
}

const HostMat& Trainer::source(const DeviceState& st, const HostMat& m) const {
  for (const auto& c : st.cache)
    if (c.stored == &m) return c.rows;
  return m;
}

// The activation's mask from the cached output (TrainerOptions::
// mask_from_cache): ReLU only, whose derivative the output alone gives
// exactly ([h > 0]); h^{l+1} written by this pass's forward (h_on_host: a
// fused transform stores t^{l+1} instead) and held whole in fp32 (a 16-bit
// copy may round a tiny positive h to zero).
DevMat Trainer::cached_output_rows(const DeviceState& st, int l, int64_t v0, int64_t nd) const {
  const ModelConfig& m = opt_.model;
  if (!opt_.mask_from_cache || nd == 0 || m.is_last(l) || m.activation(l) != Activation::relu || !h_on_host(l + 1))
    return {};
  const HostMat& src = source(st, store_.h[l + 1]);
  if (!src.on_device() || src.dtype != StoreDtype::f32 || !src.holds(v0) || !src.holds(v0 + nd - 1)) return {};
  HT_ASSERT(src.cols == m.out_width(l));
  return DevMat{src.row(v0), nd, src.cols};
}

// Every device got its second merged buffer (it is allocated only when it fits).
bool Trainer::two_merged_buffers() const {
  for (auto& st : dev_)
    if (st->xs[0].data == st->xs[1].data) return false;
  return true;
}

// Device forwarding: per producing batch k, the rows of its outputs that the
// first batch gathers (its load list's piece produced by batch k, local to
// batch k) and where they go in the merged buffer.
void Trainer::setup_forwarding() {
  forwarding_ = opt_.forward_on_device && opt_.early_start && opt_.comm != CommMode::baseline && !store_on_device();
  forwarding_ = forwarding_ && two_merged_buffers();
  if (forwarding_) {
    for (auto& st : dev_) {
      const DeviceStep& first = st->plan.steps[0];
      const auto* vids = reinterpret_cast<const uint32_t*>(first.bytes.data() + first.load_vids.offset);
      const auto* rows = reinterpret_cast<const uint32_t*>(first.bytes.data() + first.load_rows.offset);
      for (int k = 0; k < plan_.n; ++k) {
        const Slice piece = first.load_by_producer[k];
        const uint32_t v0 = static_cast<uint32_t>(st->plan.steps[k].plan->dst_begin);
        std::vector<uint32_t> local(vids + piece.offset, vids + piece.offset + piece.count);
        for (uint32_t& v : local) v -= v0;
        st->dev->use(Queue::compute);
        st->forward_src.push_back(upload_or_empty(*st->dev, local));
        st->forward_dst.push_back(upload_or_empty(*st->dev, {rows + piece.offset, static_cast<size_t>(piece.count)}));
      }
    }
  }
}

// Gradient handoff: the plan's handed-off rows (mark_handoff) and, per batch,
// the lists of rows taken from the device and from the host.
void Trainer::setup_handoff(std::vector<DevicePlan*>& plans) {
  handoff_ = write_first_ && opt_.handoff_gradients && !store_on_device();
  bool any_handoff = false;
  for (int l = 1; l < opt_.model.num_layers(); ++l) any_handoff = any_handoff || hands_off(l);
  handoff_ = handoff_ && any_handoff;
  if (handoff_) {
    mark_handoff(plans, num_vertices_);
    for (auto& st : dev_) {
      st->dev->use(Queue::compute);
      for (const HandoffRows& h : st->plan.handoff) {
        st->handoff_rows.push_back(upload_or_empty(*st->dev, h.rows));
        st->handoff_slots.push_back(upload_or_empty(*st->dev, h.slots));
        st->handoff_host_rows.push_back(upload_or_empty(*st->dev, h.host_rows));
        st->handoff_host_vids.push_back(upload_or_empty(*st->dev, h.host_vids));
      }
    }
  }
}

// The rows layer l + 1 gathers (h^{l+1}, or t^{l+1} when transform-first and
// fused) come out of forward pass l.
bool Trainer::forwards(int l) const {
  if (!forwarding_ || l + 1 >= opt_.model.num_layers()) return false;
  return !transform_first(l + 1) || fused_transform(l + 1);
}

// Batch j's outputs `rows` (its own vertices) into the next gathering pass's
// merged buffer where its first batch loads them, on the compute queue, with
// layer l + 1's input dropout (t is gathered without). The buffer's last
// users were the gathering pass before this one, on every device (peers pull
// from it): waited for once per pass, before batch 0 writes.
void Trainer::forward_rows(DeviceState& st, int l, int j, DevMat rows, bool training, int epoch) {
  Device& d = *st.dev;
  const int next = (gather_seq_ & 1) ^ 1;
  const int64_t width = gather_width(opt_.model, opt_.gcn_order, l + 1);
  HT_ASSERT(rows.cols == width);
  if (j == 0)
    for (auto& peer : dev_) d.wait(*peer->dev, peer->x_free[next]);
  if (st.forward_src[j].size == 0) return;
  const int64_t v0 = st.plan.steps[j].plan->dst_begin;
  // Keys of the batch's rows: the gather reads keys[local row].
  const DropoutSpec drop = transform_first(l + 1) ? DropoutSpec{} : input_dropout(l + 1, epoch, training, st.keys.data + v0);
  const HostMat src{rows.data, rows.rows, rows.cols, d.index()};
  d.gather_from_host(src, st.forward_src[j], st.forward_dst[j], view(st.xs[next], st.plan.buffer_rows, width), drop);
}

// Layer l's returns (∇x^l, or ∇t^l of a fused transform-first layer) are
// what layer l - 1's backward reads. They wait in g when layer l - 1 returns
// nothing (layer 0, unless a transform-first GCN layer, which returns ∇t),
// else in the merged data buffer layer l - 1 does not gather into (GCN
// aggregate-first or transform-first backward gathers nothing).
bool Trainer::hands_off(int l) const {
  const ModelConfig& m = opt_.model;
  if (!handoff_ || l < 1 || l >= m.num_layers() || (transform_first(l) && !fused_transform(l))) return false;
  if (handoff_stays_in_g(l)) return true;
  // The rows wait in the merged buffer the last gathering pass used, which
  // layer l - 1's backward leaves alone unless it gathers (GAT's, SAGE's
  // transform-first layers: backward_gathers).
  return !gathers(Pass::backward, l - 1) && two_merged_buffers();
}

bool Trainer::handoff_stays_in_g(int l) const {
  return l == 1 && !transform_first(0);
}

// The handed-off rows are complete in g once the pass's last flush is on the
// compute queue; a next pass that returns gradients needs g (zeroed), so the
// rows move to the merged buffer it leaves alone, once the peers stopped
// pulling from that buffer (the last gathering pass that used it).
void Trainer::park_handoff(int l) {
  const int64_t width = gather_width(opt_.model, opt_.gcn_order, l);
  const int spare = (gather_seq_ & 1) ^ 1;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    d.use(Queue::compute);
    if (handoff_stays_in_g(l)) {
      st->handoff_buf = st->g;
      continue;
    }
    for (auto& peer : dev_) d.wait(*peer->dev, peer->x_free[spare]);
    const DevMat g = view(st->g, st->plan.buffer_rows, width);
    d.begin_work();
    d.copy(g, view(st->xs[spare], st->plan.buffer_rows, width));
    d.zero(g, 0, g.rows);
    d.end_work(WorkKind::compute);
    st->handoff_buf = st->xs[spare];
  }
}

// Rows of the previous pass's returns that stayed on the device (mark_handoff,
// park_handoff) into batch j's ∇ input, on the compute queue after the batch's loads (the
// other rows, gathered from the host store).
void Trainer::take_handoff(DeviceState& st, int j, DevMat dst) {
  const HandoffRows& h = st.plan.handoff[j];
  if (h.rows.empty()) return;
  const HostMat g{st.handoff_buf.data, st.plan.buffer_rows, dst.cols, st.dev->index()};
  st.dev->gather_from_host(g, st.handoff_slots[j], st.handoff_rows[j], dst, DropoutSpec{});
}

}  // namespace ht
