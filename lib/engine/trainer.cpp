#include "engine/trainer.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <future>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/huge_pages.hpp"
#include "core/kernel_counters.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "engine/device_buffers.hpp"
#include "engine/device_uploads.hpp"
#include "engine/memory_plan.hpp"
#include "engine/store_layout.hpp"
#include "engine/store_features.hpp"
#include "engine/timeline.hpp"
#include "engine/trainer_state.hpp"

namespace ht {

using engine_detail::view;

Trainer::Trainer(Executor& exec, const Plan& plan, TrainerOptions opt, TrainerInputs in)
    : exec_(exec), plan_(plan), opt_(std::move(opt)), params_(init_params(opt_.model)), optimizer_(opt_.optimizer),
      traits_(model_traits(opt_.model.kind)) {
  const ModelConfig& m = opt_.model;
  const GraphView& g = in.graph;
  const FeatureSource features = in.features ? *in.features : FeatureSource::of(g);
  num_vertices_ = g.num_vertices;
  if (exec_.multi_process()) {
    HT_CHECK(exec_.job_devices() == plan_.m, "the plan is for {} GPUs but the job has {} ({} processes of {})", plan_.m,
             exec_.job_devices(), exec_.job_devices() / exec_.num_devices(), exec_.num_devices());
    HT_CHECK(opt_.comm != CommMode::baseline,
             "--comm baseline reads every neighbor row from one host's memory: several processes need p2p or full");
    HT_CHECK(!opt_.store_on_device, "the in-memory mode (--store device) runs one process on one GPU");
  } else {
    HT_CHECK(exec_.num_devices() == plan_.m, "the plan is for {} GPUs but the executor has {}", plan_.m,
             exec_.num_devices());
  }
  first_ = exec_.first_device();
  held_begin_ = exec_.multi_process() ? plan_.part_offsets[first_] : 0;
  held_end_ = exec_.multi_process() ? plan_.part_offsets[first_ + exec_.num_devices()] : g.num_vertices;
  HT_CHECK(g.num_vertices == plan_.num_vertices, "the plan has {} vertices, the graph {}", plan_.num_vertices,
           g.num_vertices);
  HT_CHECK(features.rows() == g.num_vertices, "the features have {} rows, the graph {} vertices", features.rows(),
           g.num_vertices);
  HT_CHECK(features.graph.has_features() && !g.labels.empty() && !g.split.empty(),
           "training needs features, labels and a split in the graph file");
  HT_CHECK(features.cols() == m.dims.front(), "the model's input width {} differs from the graph's feature width {}",
           m.dims.front(), features.cols());
  HT_CHECK(g.num_classes <= m.dims.back(), "the output width {} is smaller than the number of classes {}",
           m.dims.back(), g.num_classes);
  HT_CHECK(g.weights.empty(), "edge weights are not supported by the training engine yet");
  HT_CHECK(static_cast<int64_t>(in.orig_id.size()) == g.num_vertices, "{} original ids for {} vertices",
           in.orig_id.size(), g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) num_train_ += (g.split[v] == 1 && g.labels[v] >= 0) ? 1 : 0;
  HT_CHECK(num_train_ > 0, "the graph has no training vertices (split code 1 with a label)");
  if (traits_.edge_weights && !in.degree_weights.empty()) {
    HT_CHECK(static_cast<int64_t>(in.degree_weights.size()) == g.num_vertices, "{} degree weights for {} vertices",
             in.degree_weights.size(), g.num_vertices);
    inv_sqrt_deg_ = std::move(in.degree_weights);
  } else if (traits_.edge_weights) {  // Â's edge weights, or SAGE's mean
    inv_sqrt_deg_ = traits_.mean_weights ? sage_inv_degree(g) : gcn_inv_sqrt_degree(g);
  }

  const int L = m.num_layers();
  for (int l = 0; l < L; ++l) layer_math_.push_back(make_layer_math(m, opt_.gcn_order, l));
  const int64_t n = g.num_vertices;
  HT_CHECK(!opt_.store_on_device || opt_.host_dtype == StoreDtype::f32,
           "the in-memory mode keeps the vertex store in fp32 (--host-dtype {} is for host stores)",
           dtype_name(opt_.host_dtype));
  if (opt_.host_dtype == StoreDtype::f16) check_f16_range(features);
  if (opt_.store_on_device) {
    HT_CHECK(plan_.m == 1 && plan_.n == 1, "in-memory mode needs one GPU and one chunk (m = 1, n = 1), not m = {}, n = {}",
             plan_.m, plan_.n);
    if (exec_.has_device_memory()) {
      store_.residence = Residence::device;
      // The store comes on top of what the plan needs.
      DeviceMemoryNeed need = device_memory_need(plan_, 0, opt_, exec_.memory_limit(0));
      need.fixed_bytes += vertex_store_bytes(opt_, n);
      check_device_memory(need, exec_.memory_limit(0), 0, plan_.n);
    }
  }
  // The devices first: once their plans are packed, the caller can free the
  // plan's lists and the renumbered graph before the store takes its memory
  // (when the store is not allocated beside them: TrainerOptions::
  // store_beside_plans). The store's thread starts once the devices' memory
  // is checked, so that a plan that does not fit fails at once; it touches
  // only the executor's host allocations and returns the matrices, which
  // nothing reads before it has ended. (Should setup_devices throw, the
  // future's destructor waits for the thread before the members go.)
  // With store_pages_first the store's pages are faulted in right there, by
  // every core and alone, and only its pinning goes to the thread.
  const bool beside = opt_.store_beside_plans && store_.residence == Residence::host;
  const bool pages_first = beside && opt_.store_pages_first;
  const int64_t feature_cols = features.cols();
  // The store (or, pages first, its pins alone), its wall and system CPU
  // time and where it went (the executor's sums are the allocating thread's own).
  struct Allocated {
    VertexStore store;
    double seconds = 0, system = 0;
    HostAllocTimes times;
  };
  const std::vector<int64_t> room = cache_room_guess();  // (here: the thread reads no plan sizes)
  // Pinned in the allocating thread (beside the device plans), but for what
  // the GPU cache is expected to hold whole (deferred_pins; pin_store_rest
  // after it chose). allocate(false): the pages alone, nothing pinned.
  auto pin_expected = [this, room](const VertexStore& s) {
    const std::vector<const HostMat*> deferred = deferred_pins(s, room);
    for_each_host_matrix(s, [&](const HostMat& mat) {
      if (std::find(deferred.begin(), deferred.end(), &mat) == deferred.end()) exec_.pin_host(mat);
    });
  };
  auto timed = [this](Allocated& a, auto&& work) {
    const HostAllocTimes before = exec_.host_alloc_times();
    const CpuSeconds cpu = process_cpu_seconds();
    Timer own;
    work();
    a.seconds = own.seconds();
    a.system = process_cpu_seconds().system - cpu.system;
    const HostAllocTimes after = exec_.host_alloc_times();
    a.times = {after.pages - before.pages, after.pinned - before.pinned};
  };
  auto allocate = [this, n, feature_cols, pin_expected, timed](bool pin) {
    Allocated a;
    timed(a, [&] {
      a.store = alloc_vertex_store(n, feature_cols, pin);
      if (pin) pin_expected(a.store);
    });
    return a;
  };
  Allocated early;  // pages first: the store, its pages faulted in before the device plans' steps
  double early_seconds = 0, early_system = 0;  // (within setup_devices' time: not the device plans')
  std::future<Allocated> store_thread;
  Timer t;
  const CpuSeconds plans_cpu = process_cpu_seconds();
  setup_devices(in, [&] {
    if (!beside) return;
    if (pages_first) {
      // Faulting in a hundred GiB is the kernel's work (zeroing, and where
      // huge pages are asked for, compacting free memory); beside the steps,
      // which fault in and free large lists of their own on every core, both
      // fought over the same locks and cores (issue 33: 41.7 s of pages
      // beside 39.5 s of steps, 1647 s of system CPU). Alone, every core
      // faults the store in, then the steps have the cores; only the
      // pinning (a driver call, one thread) stays beside them.
      Timer held;
      early = allocate(false);
      early_seconds = held.seconds();
      early_system = early.system;
      setup_phases_.add("vertex store", early.seconds);
      setup_phases_.set_system("vertex store", early.system);
      if (early.times.pages > 0) setup_phases_.add_part("vertex store", "pages", early.times.pages);
      store_thread = std::async(std::launch::async, [this, pin_expected, timed, s = &early.store] {
        exec_.enter_thread();
        Allocated a;
        timed(a, [&] { pin_expected(*s); });
        return a;
      });
      return;
    }
    store_thread = std::async(std::launch::async, [this, allocate] {
      exec_.enter_thread();
      return allocate(true);
    });
  });
  Timer lists;
  if (in.inputs_read) in.inputs_read();
  setup_phases_.add_part("device plans", "inputs released", lists.seconds());
  setup_phases_.add("device plans", t.seconds() - early_seconds);
  // (the process's: with the store's thread beside, its system time too)
  setup_phases_.set_system("device plans", process_cpu_seconds().system - plans_cpu.system - early_system);
  t.reset();
  const CpuSeconds store_cpu = process_cpu_seconds();
  Allocated a = beside ? store_thread.get() : allocate(true);
  const double waited = t.seconds();
  if (pages_first) a.store = std::move(early.store);
  store_.h = std::move(a.store.h);
  store_.grad = std::move(a.store.grad);
  store_.agg = std::move(a.store.agg);
  // The phase of what ran after (or beside) the device plans: the whole
  // store, or (pages first) its pinning.
  const std::string phase = pages_first ? "vertex store pinning" : "vertex store";
  setup_phases_.add(phase, a.seconds);
  if (beside) setup_phases_.set_beside(phase, "device plans");
  else setup_phases_.set_system(phase, process_cpu_seconds().system - store_cpu.system);
  if (a.times.pages > 0) setup_phases_.add_part(phase, "pages", a.times.pages);
  if (a.times.pinned > 0) setup_phases_.add_part(phase, "pinned", a.times.pinned);
  if (beside) setup_phases_.add_part(phase, "waited for", waited);  // after the device plans
  t.reset();
  CpuSeconds cpu = process_cpu_seconds();
  auto system_lap = [&](const char* name) {
    const CpuSeconds now = process_cpu_seconds();
    setup_phases_.set_system(name, now.system - cpu.system);
    cpu = now;
  };
  fill_feature_store(exec_, store_.h[0], features);
  setup_phases_.add("h^0", t.seconds());
  system_lap("h^0");
  report_store_pages();
  t.reset();
  cpu = process_cpu_seconds();
  setup_gpu_cache(in.orig_id);  // last: it takes what the working set leaves
  if (store_.residence == Residence::host && !may_cache_whole()) pin_store_rest();  // (counts: all pinned)
  Timer part;
  exec_.synchronize_all();
  setup_phases_.add_part("GPU cache", "synchronize", part.seconds());
  part.reset();
  release_resident_blocks();
  setup_phases_.add_part("GPU cache", "blocks released", part.seconds());
  setup_phases_.add("GPU cache", t.seconds());
  system_lap("GPU cache");
}

Trainer::~Trainer() = default;

// The host store's share of transparent huge pages (core/huge_pages.hpp),
// said once its pages are touched: with 4 KiB pages every random row read or
// add takes a TLB miss, and a fragmented machine may refuse the huge pages.
void Trainer::report_store_pages() const {
  if (store_.residence != Residence::host) return;
  std::vector<MemoryRange> ranges;
  int64_t bytes = 0;
  for_each_host_matrix(store_, [&](const HostMat& m) {
    const MemoryRange r{m.row_bytes(m.held_first()), static_cast<size_t>(m.held_bytes())};
    if (std::any_of(ranges.begin(), ranges.end(), [&](const MemoryRange& o) { return o.p == r.p; })) return;
    ranges.push_back(r);
    bytes += static_cast<int64_t>(r.bytes);
  });
  if (bytes < (int64_t{1} << 30)) return;  // (small stores: a few TLB entries either way)
  const int64_t huge = huge_page_bytes(ranges);
  if (huge < 0) return;
  const double share = static_cast<double>(huge) / static_cast<double>(bytes);
  if (share >= 0.5) {
    log::info("vertex store: {:.0f}% of its {} in 2 MiB pages", 100 * share, format_bytes(static_cast<double>(bytes)));
    return;
  }
  log::warn("vertex store: only {:.0f}% of its {} in 2 MiB pages: row reads and host adds take a TLB miss each "
            "(transparent huge pages off, or free memory fragmented: as root, 'echo 1 > "
            "/proc/sys/vm/compact_memory' before the run)",
            100 * share, format_bytes(static_cast<double>(bytes)));
}

int64_t vertex_store_bytes(const TrainerOptions& opt, int64_t num_vertices, StoreDtype dtype) {
  int64_t cols = 0;
  for (const StoreMatrix& sm : store_matrices(opt)) cols += sm.cols;  // the one list of the store's matrices
  return dtype_bytes(dtype) * num_vertices * cols;
}

// h^0, then per layer h^{l+1}, ∇x^{l+1} and the layer's stored matrix, in
// store_matrices' order; matrices no pass reads from the store are not
// allocated (stores_h, stores_grad). Reads only what the constructor set
// before setup_devices: it may run in a thread of its own beside it.
VertexStore Trainer::alloc_vertex_store(int64_t n, int64_t feature_cols, bool pin) {
  const ModelConfig& m = opt_.model;
  const int L = m.num_layers();
  VertexStore s;
  s.residence = store_.residence;
  s.h.resize(L + 1);
  s.grad.resize(L + 1);
  s.h[0] = alloc_store(n, feature_cols, pin);
  for (int l = 0; l < L; ++l) {
    if (stores_h(opt_, l + 1)) s.h[l + 1] = alloc_store(n, m.out_width(l), pin);
    if (stores_grad(opt_, l + 1)) s.grad[l + 1] = alloc_store(n, m.out_width(l), pin);
    // One entry per layer, empty where the layer keeps nothing (GAT; SAGE's narrowing layers).
    s.agg.push_back(stores_layer_matrix(opt_, l) ? alloc_store(n, gather_width(m, opt_.gcn_order, l), pin) : HostMat{});
  }
  return s;
}

// Host matrices unpinned when the GPU cache may hold some whole: the
// allocating thread pins them after (Trainer's constructor, deferred_pins);
// and when `pin_now` is false (the store's pages faulted in before the device
// plans, its pins beside them).
HostMat Trainer::alloc_store(int64_t rows, int64_t cols, bool pin_now) {
  if (store_.residence == Residence::device) return exec_.alloc_store_on_device(0, rows, cols);
  const bool pin = pin_now && !may_cache_whole();
  if (exec_.multi_process()) return exec_.alloc_host_rows(rows, cols, opt_.host_dtype, held_begin_, held_end_, pin);
  return exec_.alloc_host(rows, cols, opt_.host_dtype, pin);
}

std::vector<float> Trainer::logits() const { return layer_output(static_cast<int>(store_.h.size()) - 1); }

std::vector<float> Trainer::layer_output(int l) const {
  if (l < 1 || l >= static_cast<int>(store_.h.size()) || !store_.h[l].data) return {};
  const HostMat& z = store_.h[l];
  std::vector<float> out(static_cast<size_t>(z.rows * z.cols));
  exec_.store_read(z, out);
  for (const auto& st : dev_) read_cached_rows(*st, z, out);
  return out;
}

// The rows of `m` that device `st`'s GPU cache holds whole (their host copy is
// not written) over `out` (rows of m, fp32), widened on the device through
// its first merged buffer (free between passes) in pieces.
void Trainer::read_cached_rows(DeviceState& st, const HostMat& m, std::span<float> out) const {
  const HostMat& cached = source(st, m);
  if (&cached == &m) return;
  Device& d = *st.dev;
  const int64_t r0 = cached.held_first(), r1 = cached.held_last(), cols = cached.cols;
  const int64_t piece = std::max<int64_t>(1, st.xs[0].size / cols);
  d.use(Queue::compute);
  for (int64_t p0 = r0; p0 < r1; p0 += piece) {
    const int64_t cnt = std::min(piece, r1 - p0);
    const HostMat rows{cached.row_bytes(p0), cnt, cols, d.index(), cached.dtype};
    d.gather_from_host(rows, DevIdx{nullptr, cnt}, DevIdx{nullptr, cnt}, view(st.xs[0], cnt, cols), DropoutSpec{});
    d.read(DevArray<float>{st.xs[0].data, cnt * cols}, out.subspan(static_cast<size_t>(p0 * cols), static_cast<size_t>(cnt * cols)));
  }
}

void Trainer::setup_devices(const TrainerInputs& in, const std::function<void()>& checked) {
  const ModelConfig& m = opt_.model;
  const int L = m.num_layers();
  const auto [max_in, max_out, max_tw, max_heads, max_gather, max_narrowed] = layer_extents(m, opt_.gcn_order);
  const std::span<const float> degrees = inv_sqrt_deg_;
  const EdgeKeys keys{traits_.mean_weights ? std::span<const float>{} : degrees, in.orig_id,
                      traits_.mean_weights ? degrees : std::span<const float>{}};
  const int local = exec_.num_devices();
  for (int i = 0; i < local; ++i)
    check_device_memory(device_memory_need(plan_, first_ + i, opt_, exec_.memory_limit(i)), exec_.memory_limit(i),
                        first_ + i, plan_.n);
  // Where the phase's time goes (the summary's "device plans" parts).
  Timer part;
  auto lap = [&](const char* name) {
    setup_phases_.add_part("device plans", name, part.seconds());
    part.reset();
  };
  lap("checks");
  checked();
  part.reset();  // (what `checked` did is not the device plans': the caller times it)
  // Streamed steps are copied from their packed blocks every pass: pinned.
  // Resident ones are copied once (upload_bytes) and their blocks released
  // when setup ends (release_resident_blocks): ordinary memory, not pinned.
  std::vector<bool> streamed(static_cast<size_t>(local));
  for (int i = 0; i < local; ++i)  // (the plan's device first_ + i)
    streamed[static_cast<size_t>(i)] = streams_steps(plan_, first_ + i, opt_, exec_.memory_limit(i));
  auto alloc = [&](int gpu, int64_t bytes) {
    if (streamed[static_cast<size_t>(gpu - first_)]) return exec_.alloc_pinned_bytes(bytes);
    return resident_blocks_.emplace_back(static_cast<size_t>(bytes)).data();
  };
  std::vector<DevicePlan*> plans;
  const RemoteAreas areas = remote_areas(opt_, plan_.m, plan_.n);
  std::vector<uint8_t> derived(static_cast<size_t>(local));
  for (int i = 0; i < local; ++i) derived[static_cast<size_t>(i)] = opt_.derive_steps && !streamed[static_cast<size_t>(i)];
  Timer built_in;
  std::vector<DevicePlan> built = build_device_plans(plan_, first_, local, opt_.comm, keys, traits_.edge_keys, alloc,
                                                     areas, derived);
  log::debug("device plans: placement checks {:.2f} s, steps built {:.2f} s", part.seconds() - built_in.seconds(),
             built_in.seconds());
  const PlanShape shape = shape_of(plan_);
  // A device's sizes for the buffer list, from its device plan (the planners
  // take the same from the plan's shape).
  auto buffer_shape = [&](const DevicePlan& dp, int job, bool streamed_steps) {
    BufferShape b;
    b.rows = std::max<int64_t>(dp.buffer_rows, 1);
    b.nd = std::max<int64_t>(plan_.max_dst[job], 1);
    b.ne = std::max<int64_t>(plan_.max_edges[job], 1);
    b.later = read_ahead() ? std::max<int64_t>(dp.max_later_loads, 1) : 0;
    b.send = early_send_rows(shape, job, opt_);
    b.max_flush = dp.max_flush;
    b.num_vertices = num_vertices_;
    b.streamed = streamed_steps;
    if (streamed_steps) {
      b.steps.push_back(std::max<int64_t>(dp.max_step_bytes, 256));
    } else {
      for (const DeviceStep& step : dp.steps) b.steps.push_back(step.block_bytes);
    }
    b.store_on_device = store_on_device();
    return b;
  };
  lap("steps");
  // Where "buffers" goes, summed over the devices (log: which driver calls
  // take the time beside the store's pinning): device allocations, uploads of
  // the per-vertex arrays and parameters, the staging ring's host buffers,
  // scratch reserves, events, the second merged buffer.
  enum { kAllocs, kUploads, kStaging, kScratch, kEvents, kSecond, kBufferParts };
  std::array<double, kBufferParts> buffer_s{};
  Timer buffer_part;
  auto buffer_lap = [&](int k) {
    buffer_s[static_cast<size_t>(k)] += buffer_part.seconds();
    buffer_part.reset();
  };
  for (int i = 0; i < local; ++i) {
    auto st = std::make_unique<DeviceState>();
    Device& d = exec_.device(i);
    st->dev = &d;
    st->job = first_ + i;
    d.use(Queue::compute);
    st->plan = std::move(built[static_cast<size_t>(i)]);
    const DevicePlan& dp = st->plan;
    st->streamed = streamed[static_cast<size_t>(i)];
    const BufferShape shape_here = buffer_shape(dp, st->job, st->streamed);
    const std::vector<DeviceBuffer> list = device_buffers(shape_here, opt_);
    auto floats = [&](const DeviceBuffer& b) {
      HT_ASSERT(b.elem == 4);
      return d.alloc_floats(b.size());
    };
    auto upload = [&](const DeviceBuffer& b, auto values) {  // a per-vertex array or a parameter tensor
      HT_ASSERT(static_cast<int64_t>(values.size()) == b.size() && b.elem == static_cast<int64_t>(sizeof(values[0])));
      return d.upload(values);
    };
    st->layers.resize(static_cast<size_t>(L));
    buffer_lap(kAllocs);
    // The list, in its order (device_buffers.hpp); the second merged buffer last, below.
    for (const DeviceBuffer& b : list) {
      const int k = b.slot;
      if (b.site != BufferSite::allocated) continue;
      const bool uploads = b.use == BufferUse::keys || b.use == BufferUse::labels || b.use == BufferUse::split ||
                           b.use == BufferUse::param;
      buffer_lap(kAllocs);
      switch (b.use) {
        case BufferUse::merged: st->xs[0] = st->xs[1] = st->x = floats(b); break;
        case BufferUse::gradient: st->g = floats(b); break;
        case BufferUse::early_send: st->send = floats(b); break;
        case BufferUse::z: st->z = floats(b); break;
        case BufferUse::dz: st->dz = floats(b); break;
        case BufferUse::step:  // resident: every step copied once, after mark_first_flushes below
          st->ring.push_back(d.alloc_bytes(b.bytes()));
          st->ring_step.push_back(st->streamed ? -1 : k);
          break;
        case BufferUse::incoming: st->incoming[k] = floats(b); break;
        case BufferUse::in_a: st->in_a[k] = floats(b); break;
        case BufferUse::in_h: st->in_h[k] = floats(b); break;
        case BufferUse::in_dh: st->in_dh[k] = floats(b); break;
        case BufferUse::out_a: st->out_a[k] = floats(b); break;
        case BufferUse::out_h: st->out_h[k] = floats(b); break;
        case BufferUse::out_dl: st->out_dl[k] = floats(b); break;
        case BufferUse::out_t: st->out_t[k] = floats(b); break;
        case BufferUse::in_t: st->in_t[k] = floats(b); break;
        case BufferUse::raw_in: st->raw_in[k] = d.alloc_bytes(b.bytes()); break;
        case BufferUse::raw_out: st->raw_out[k] = d.alloc_bytes(b.bytes()); break;
        case BufferUse::model: st->model_buffers.push_back(floats(b)); break;
        case BufferUse::staging:
          st->staging_dev[k] = floats(b);
          st->staging_host[k] = exec_.alloc_host(b.rows, b.cols, opt_.host_dtype);
          break;
        case BufferUse::raw_staging: st->raw_staging[k] = d.alloc_bytes(b.bytes()); break;
        case BufferUse::keys: st->keys = upload(b, in.orig_id); break;
        case BufferUse::labels: st->labels = upload(b, in.graph.labels); break;
        case BufferUse::split: st->split = upload(b, in.graph.split); break;
        case BufferUse::param: {  // the parameters, in the model's list (layer_param_specs)
          const ParamTensor& t = params_.tensors[static_cast<size_t>(b.index)];
          st->layers[static_cast<size_t>(t.layer)].value.push_back(upload(b, std::span<const float>(t.value)));
          break;
        }
        case BufferUse::param_grad: {
          const ParamTensor& t = params_.tensors[static_cast<size_t>(b.index)];
          st->layers[static_cast<size_t>(t.layer)].grad.push_back(floats(b));
          break;
        }
        case BufferUse::second_merged: break;  // last, below
      }
      buffer_lap(uploads ? kUploads : b.use == BufferUse::staging ? kStaging : kAllocs);
    }
    reserve_scratch(*st);
    st->staging_rows = std::max<int64_t>(1, std::min(dp.max_flush, staging_piece_rows(max_gather)));
    buffer_lap(kScratch);
    for (int s = 0; s < kSlots; ++s)
      for (Event* e : {&st->loaded[s], &st->computed[s], &st->stored[s]}) *e = d.create_event();
    for (Event* e : {&st->x_ready, &st->pulled, &st->early_packed, &st->early_sent, &st->pushed, &st->flushed, &st->g_ready, &st->phase_stored,
                     &st->phase_host, &st->x_free[0], &st->x_free[1]})
      *e = d.create_event();
    for (auto& set : st->batch_stored)
      for (int j = 0; j < plan_.n; ++j) set.push_back(d.create_event());
    for (int r = 1; r < plan_.m; ++r) st->push_round.push_back(d.create_event());
    for (int k = 0; k < kStagingSlots; ++k) {
      st->compacted[k] = d.create_event();
      st->copied[k] = d.create_event();
      st->added[k] = (own_host_queues() ? d : exec_.device(0)).create_event();  // recorded on the adding host queue
    }
    buffer_lap(kEvents);
    // Last, so that it takes only what is left: the second merged buffer lets
    // a gathering pass load while the previous one computes.
    for (const DeviceBuffer& b : list) {
      if (b.use != BufferUse::second_merged) continue;
      try {
        st->xs[1] = floats(b);
      } catch (const Error&) {
        log::info("GPU {}: one merged buffer (no room for a second): gathering passes wait for the previous one",
                  st->job);
      }
    }
    buffer_lap(kSecond);
    plans.push_back(&st->plan);
    dev_.push_back(std::move(st));
  }
  lap("buffers");
  const std::string buffer_parts = fmt::format(
      "device plans' buffers over {} device{}: allocations {:.2f} s, uploads {:.2f} s, staging host buffers {:.2f} s, "
      "scratch {:.2f} s, events {:.2f} s, second merged buffers {:.2f} s",
      local, local > 1 ? "s" : "", buffer_s[kAllocs], buffer_s[kUploads], buffer_s[kStaging], buffer_s[kScratch],
      buffer_s[kEvents], buffer_s[kSecond]);
  if (std::accumulate(buffer_s.begin(), buffer_s.end(), 0.0) >= 1.0) log::info("{}", buffer_parts);  // (large runs)
  else log::debug("{}", buffer_parts);
  setup_net(max_gather);
  write_first_ = mark_first_flushes(plans, num_vertices_, held_begin_, held_end_);
  if (!write_first_) log::debug("some vertex is never returned: gradient stores are cleared per layer");
  lap("first returns");
  setup_forwarding();
  setup_handoff(plans);  // before the resident steps are copied: it reorders their flush lists
  lap("forwarding and handoff");
  // The resident steps' uploads, a thread per device (each device's pinned
  // pieces and copy engine its own; were device after device), each with its
  // share of the cores for filling the pieces (device_uploads.hpp). The
  // queues are drained after: the uploads read the caller's graph, which it
  // may free next.
  std::vector<std::vector<ByteUpload>> uploads(dev_.size());
  for (size_t i = 0; i < dev_.size(); ++i) {
    const DeviceState& s = *dev_[i];
    if (s.streamed) continue;
    for (int j = 0; j < plan_.n; ++j)
      for (const ByteUpload& u : packed_copies(s.plan.steps[j], s.ring[j])) uploads[i].push_back(u);
  }
  upload_on_devices(exec_, uploads);
  lap("upload");
  derive_resident_steps(keys);
  lap("derived on the devices");
}

// The working memory of the ops a device runs (GAT's per-edge values, the
// partial sums of the loss, the column sums and the long rows' segments),
// reserved at setup (the batches' largest sizes, as the buffer list's shape
// takes them) and again once the derived steps' segments are known.
void Trainer::reserve_scratch(DeviceState& st) {
  const auto [max_in, max_out, max_tw, max_heads, max_gather, max_narrowed] = layer_extents(opt_.model, opt_.gcn_order);
  const int64_t rows = std::max<int64_t>(st.plan.buffer_rows, 1), nd = std::max<int64_t>(plan_.max_dst[st.job], 1),
                ne = std::max<int64_t>(plan_.max_edges[st.job], 1);
  Device& d = *st.dev;
  const int64_t segments = st.plan.max_segments;
  if (traits_.attention)
    d.reserve(d.gat_scratch(ne, rows, static_cast<int>(max_heads), max_tw) + d.spmm_scratch(segments, max_tw));
  d.reserve(d.row_ops_scratch(nd, max_out));  // partial sums: bias gradients, loss
  d.reserve(d.spmm_scratch(segments, std::max({max_gather, max_in, max_out})));  // hub rows' partial sums
}

// Resident steps whose device derives their topology (DeviceStep::derived),
// after their upload, a thread per device: then their transposes' segments
// are known, and the scratch for them reserved. A GPU that cannot have the
// derivation's working memory leaves it to the host, which derives each
// step into a host copy of its block and uploads what it wrote: the same bytes.
void Trainer::derive_resident_steps(const EdgeKeys& vertices) {
  std::vector<bool> busy;
  for (const auto& st : dev_)
    busy.push_back(std::any_of(st->plan.steps.begin(), st->plan.steps.end(), [](const DeviceStep& s) { return s.derived; }));
  on_devices_at_once(exec_, busy, [&](int i) {
    DeviceState& st = *dev_[static_cast<size_t>(i)];
    Device& d = *st.dev;
    std::vector<DeriveTopology> steps;
    for (size_t j = 0; j < st.plan.steps.size(); ++j) steps.push_back(derivation_of(st.plan.steps[j], st.ring[j]));
    std::vector<int64_t> segments;
    try {
      if (opt_.refuse_device_derivation) throw Error("refused: TrainerOptions::refuse_device_derivation");
      segments = d.derive_topologies(steps, vertices);
    } catch (const Error& e) {
      log::info("GPU {}: the steps' topology derived on the host ({})", st.job, e.what());
      d.synchronize();
      segments.clear();
      for (size_t j = 0; j < st.plan.steps.size(); ++j)
        segments.push_back(derive_on_host(d, st.plan.steps[j], st.ring[j], vertices));
      steps_derived_on_host_ += static_cast<int64_t>(st.plan.steps.size());
    }
    int64_t most = 0;
    for (size_t j = 0; j < st.plan.steps.size(); ++j) {
      DeviceStep& step = st.plan.steps[j];
      step.plan_src = {};  // (the plan's lists go once setup has read them: inputs_read)
      step.t_seg_row.count = step.t_seg_edge.count = segments[j];
      step.segments = std::max(step.segments, segments[j]);
      most = std::max(most, step.segments);
    }
    if (most > st.plan.max_segments) {
      st.plan.max_segments = most;
      reserve_scratch(st);
    }
  });
}

// One derived step's topology on the host (derive_resident_steps'
// fallback): its block's packed part and src copied, the rest written there, all uploaded.
int64_t Trainer::derive_on_host(Device& d, const DeviceStep& step, DevArray<std::byte> at,
                                const EdgeKeys& vertices) {
  std::vector<std::byte> block = host_block_of(step);
  const int64_t segments = derive_topology_on_host(derivation_of(step, {block.data(), step.block_bytes}), vertices);
  d.use(Queue::compute);
  d.upload_bytes(block, at);  // (src too: shifted here)
  d.synchronize();
  return segments;
}

// The resident steps are on their devices and setup has read their host
// copies for the last time (the GPU cache's lists, the tier's returns): the
// blocks go, and the steps' `bytes` with them.
void Trainer::release_resident_blocks() {
  for (auto& st : dev_)
    if (!st->streamed)
      for (DeviceStep& step : st->plan.steps) step.bytes = {};
  resident_blocks_.clear();
}

void Trainer::upload_params() {
  for (auto& st : dev_) {
    std::vector<size_t> k(st->layers.size(), 0);  // the tensor's place in its layer's list
    for (const ParamTensor& t : params_.tensors)
      st->dev->write(st->layers[static_cast<size_t>(t.layer)].value[k[static_cast<size_t>(t.layer)]++], t.value);
  }
}

void Trainer::set_params(const ModelParams& p) {
  HT_CHECK(p.tensors.size() == params_.tensors.size(), "parameter set does not match the model");
  for (size_t k = 0; k < p.tensors.size(); ++k)
    HT_CHECK(p.tensors[k].size() == params_.tensors[k].size() && p.tensors[k].name == params_.tensors[k].name,
             "parameter {} does not match the model", p.tensors[k].name);
  params_ = p;
  upload_params();
}

DropoutSpec Trainer::input_dropout(int layer, int epoch, bool training, const int64_t* keys) const {
  DropoutSpec d;
  d.active = training && opt_.model.dropout > 0;
  d.rate = opt_.model.dropout;
  d.seed = opt_.model.seed;
  d.epoch = epoch;
  d.layer = layer;
  d.keys = keys;
  return d;
}

DropoutSpec Trainer::attn_dropout(int layer, int epoch, bool training, const int64_t* keys) const {
  DropoutSpec d = input_dropout(layer, epoch, training, keys);
  d.active = training && opt_.model.attn_dropout > 0;
  d.rate = opt_.model.attn_dropout;
  return d;
}

bool Trainer::read_ahead() const { return reads_ahead(opt_, plan_.n); }

// A gathering pass's pulls of batch j + 1 run while batch j computes when the
// buffers have two remote areas, except where the row tier holds rows of the
// gathered matrix (its rows reach the owner's merged buffer on the compute
// queue at the batch's start: read_tier).
bool Trainer::pulls_early(int l) const {
  if (dev_.empty() || dev_[0]->plan.areas != RemoteAreas::early_pulls) return false;
  for (const auto& st : dev_)
    if (st->tier_of(gathered(l))) return false;
  return true;
}

// One pass over the batches of a layer, issued without waiting: batch j + 1's
// loads are issued before batch j's compute (read-ahead), and the host blocks
// nowhere. The devices' queues order everything through events.
void Trainer::run_pass(Pass pass, int l, int epoch, bool training) {
  for (auto& st : dev_) st->slot_of.assign(plan_.n, 0);
  // A pass after gradient returns reads rows the host adds complete only at
  // the end: a barrier. Otherwise batch j waits for the batches of the
  // previous pass that produced its rows (wait_producer, issue_gather).
  // A pass that receives handed-off gradients reads the previous pass's
  // returns through the device, except the rows of some batches gathered from
  // the host: those loads alone wait for the barrier (issue_loads).
  early_ = opt_.early_start && opt_.comm != CommMode::baseline && (!prev_returned_ || receiving_);
  const bool gathering = gathers(pass, l);
  const int xp = gather_seq_ & 1;
  if (gathering) {
    for (auto& st : dev_) {
      st->x = st->xs[xp];
      if (!early_) continue;
      // The merged buffer's last users, on every device (peers pull from it):
      // two gathering passes ago, or the last one when there is one buffer.
      const bool one_buffer = !two_merged_buffers();
      st->dev->use(Queue::load);
      for (auto& peer : dev_) {
        st->dev->wait(*peer->dev, peer->x_free[xp]);
        if (one_buffer) st->dev->wait(*peer->dev, peer->x_free[xp ^ 1]);
      }
    }
  }
  if (!early_) phase_barrier();
  const bool ahead = read_ahead();
  auto compute = [&](int j) {
    for (auto& st : dev_) {
      switch (pass) {
        case Pass::forward: forward_batch(*st, l, j, training, epoch); break;
        case Pass::transform: transform_batch(*st, l, j, epoch, training); break;
        case Pass::backward: backward_batch(*st, l, j, epoch); break;
        case Pass::transform_backward: transform_backward_batch(*st, l, j, epoch); break;
      }
    }
  };
  const bool early = gathering && pulls_early(l);
  auto compute_batch = [&](int j) {
    if (gathering) issue_exchange(l, j, ahead && j > 0, early && j > 0, epoch, training);
    if (early && j + 1 < plan_.n) issue_early_pulls(l, j + 1);
    compute(j);
    if (pass == Pass::backward) {
      const bool tf = transform_first(l);
      if (tf) {
        issue_return(store_.agg[l], opt_.model.out_width(l), j);
      } else if (l > 0) {
        issue_return(store_.grad[l], opt_.model.in_width(l), j);
      }
      // The slot (and its packed step, which the return reads) is free now.
      for (auto& st : dev_) {
        st->dev->use(Queue::compute);
        st->dev->record(st->computed[st->slot_of[j]]);
      }
    }
  };
  issue_loads(pass, l, 0, epoch, training, true);
  for (int j = 0; j < plan_.n; ++j) {
    if (ahead && j + 1 < plan_.n) issue_loads(pass, l, j + 1, epoch, training, false);
    compute_batch(j);
    if (!ahead && j + 1 < plan_.n) issue_loads(pass, l, j + 1, epoch, training, false);
  }
  if (gathering) {
    for (auto& st : dev_) {
      st->dev->use(Queue::compute);
      st->dev->record(st->x_free[xp]);
    }
    ++gather_seq_;
  }
  end_phase();
  forwarded_ = pass == Pass::forward && forwards(l);
  prev_returned_ = pass == Pass::backward;
  prev_produced_ = pass != Pass::backward;
  ++pass_seq_;
}

double Trainer::forward(int epoch, bool training, LossStats* stats) {
  const ModelConfig& m = opt_.model;
  prev_returned_ = true;  // the first pass waits for everything before it
  forwarded_ = false;
  for (int l = 0; l < m.num_layers(); ++l) {
    // Transform-first: every vertex's t = x W must be on host before any
    // chunk gathers its neighbors' rows (the pass ends with a barrier).
    if (transform_first(l) && !fused_transform(l)) run_pass(Pass::transform, l, epoch, training);
    run_pass(Pass::forward, l, epoch, training);
  }
  if (!stats) return 0.0;
  *stats = gather_loss_stats();
  return stats->loss_sum / static_cast<double>(num_train_);
}

void Trainer::backward(int epoch) {
  const ModelConfig& m = opt_.model;
  for (int l = m.num_layers() - 1; l >= 0; --l) {
    const bool tf = transform_first(l);
    // The gradient the chunks return: ∇t^l (in t^l's place) or ∇x^l. Host
    // stores are written by each row's first return; a store on the device
    // (or a plan that never returns some row) is cleared on its queue.
    if (tf || l > 0) {
      const HostMat& dst = tf ? store_.agg[l] : store_.grad[l];
      if (store_on_device()) {
        Device& d = exec_.device(dst.device);
        d.use(Queue::compute);
        d.zero(DevArray<float>{dst.f32(), dst.rows * dst.cols});
      } else if (!write_first_) {
        exec_.store_zero(dst);
        for (auto& st : dev_) {  // and the rows of it in the GPU cache or its row tier
          st->dev->use(Queue::compute);
          if (const DeviceState::RowTier* t = st->tier_returns(dst))
            st->dev->zero(DevArray<float>{t->rows.f32(), (t->rows.bytes() + 3) / 4});
          const HostMat& cached = source(*st, dst);
          if (&cached == &dst) continue;
          st->dev->zero(DevArray<float>{cached.row(cached.held_first()), (cached.held_last() - cached.held_first()) * cached.cols});
        }
      }
    }
    handing_off_ = hands_off(l);
    receiving_ = hands_off(l + 1);
    run_pass(Pass::backward, l, epoch, true);
    if (handing_off_) park_handoff(l);
    handing_off_ = receiving_ = false;  // (a transform backward pass reads this pass's returns from the host)
    if (tf && !fused_transform(l)) run_pass(Pass::transform_backward, l, epoch, true);
  }
  if (hands_off(1) && handoff_stays_in_g(1)) {  // the handed-off rows were read: g is all zeros again
    for (auto& st : dev_) {
      st->dev->use(Queue::compute);
      st->dev->zero(st->g);
    }
  }
  handing_off_ = receiving_ = false;
}

void Trainer::reduce_and_collect_grads() {
  exec_.synchronize_all();
  std::vector<size_t> k(dev_[0]->layers.size(), 0);  // the tensor's place in its layer's list
  for (ParamTensor& t : params_.tensors) {
    const size_t l = static_cast<size_t>(t.layer), i = k[l]++;
    std::vector<DevArray<float>> parts;
    for (auto& st : dev_) parts.push_back(st->layers[l].grad[i]);
    exec_.allreduce_sum(parts);
    dev_[0]->dev->read(parts[0], t.grad);
  }
}

void Trainer::start_timeline() {
  for (auto& st : dev_) st->dev->reset_timeline();
  timeline_start_ = steady_seconds();
}

// Timelines are in seconds of the host's steady clock.
void Trainer::finish_timeline(EpochResult& r, double wall) {
  std::vector<BusyInterval> all;
  for (auto& st : dev_) {
    for (BusyInterval b : st->dev->timeline()) {
      b.begin -= timeline_start_;
      b.end -= timeline_start_;
      all.push_back(b);
    }
  }
  const TimelineSplit s = split_timeline(all, wall);
  r.gpu_busy.assign(dev_.size(), 0.0);
  for (const BusyInterval& b : all) {
    if (b.queue != Queue::compute) continue;
    for (size_t i = 0; i < dev_.size(); ++i)
      if (dev_[i]->dev->index() == b.device) r.gpu_busy[i] += b.end - b.begin;  // one queue: no overlaps
  }
  last_timeline_ = std::move(all);
  r.t_compute = s.busy[static_cast<int>(WorkKind::compute)];
  r.t_h2d = s.busy[static_cast<int>(WorkKind::h2d)];
  r.t_d2d = s.busy[static_cast<int>(WorkKind::d2d)];
  r.t_cpu = s.busy[static_cast<int>(WorkKind::host)];
  r.x_compute = s.compute;
  r.x_h2d = s.h2d;
  r.x_d2h = s.d2h;
  r.x_host = s.host;
  r.x_idle = s.idle;
}

double Trainer::compute_gradients(int epoch) {
  timing_ = {};
  start_timeline();
  Timer total;
  for (auto& st : dev_) {
    st->dev->use(Queue::compute);
    for (auto& ly : st->layers)
      for (const DevArray<float>& a : ly.grad) st->dev->zero(a);
  }
  LossStats stats;
  const LinkCounters before = exec_.counters();  // counted as issued: the forward's issues end before the backward's
  const double loss = forward(epoch, true, &stats);
  timing_.forward_h2d_bytes = exec_.counters().h2d_bytes - before.h2d_bytes;
  timing_.forward_d2h_bytes = exec_.counters().d2h_bytes - before.d2h_bytes;
  backward(epoch);
  reduce_and_collect_grads();
  timing_.seconds = total.seconds();
  timing_.loss = loss;
  return loss;
}

EpochResult Trainer::train_epoch(int epoch) {
  Timer total;
  compute_gradients(epoch);
  optimizer_.step(params_);
  upload_params();
  timing_.seconds = total.seconds();
  finish_timeline(timing_, timing_.seconds);
  return timing_;
}

Evaluation Trainer::evaluate() {
  LossStats s;
  Evaluation r;
  r.loss = forward(0, false, &s);
  auto acc = [&](int k) { return s.count[k] ? static_cast<double>(s.correct[k]) / s.count[k] : 0.0; };
  r.train_acc = acc(1);
  r.val_acc = acc(2);
  r.test_acc = acc(3);
  return r;
}

}  // namespace ht
