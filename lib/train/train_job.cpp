#include "train/train_job.hpp"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <future>
#include <limits>
#include <optional>
#include <iterator>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "core/kernel_counters.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/signals.hpp"
#include "core/timer.hpp"
#include "core/version.hpp"
#include "engine/layer_math.hpp"
#include "engine/memory_plan.hpp"
#include "graph/graph_file.hpp"
#include "graph/graph_shape.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_file.hpp"
#include "plan/plan_shape.hpp"
#include "train/checkpoint.hpp"
#include "train/chunk_choice.hpp"
#include "train/divergence.hpp"
#include "train/early_devices.hpp"
#include "train/epoch_log.hpp"
#include "train/host_memory_check.hpp"
#include "train/job_processes.hpp"
#include "train/metrics.hpp"
#include "train/model_npz.hpp"
#include "train/predictions.hpp"
#include "train/setup_threads.hpp"
#include "train/train_checkpoint.hpp"

namespace ht {

const NameTable<StoreChoice>& store_choice_names() {
  static const NameTable<StoreChoice> names{
      {"auto", StoreChoice::automatic}, {"host", StoreChoice::host}, {"device", StoreChoice::device}};
  return names;
}

const NameTable<Backend>& backend_names() {
  static const NameTable<Backend> names{{"auto", Backend::automatic}, {"cpu", Backend::cpu}, {"cuda", Backend::cuda}};
  return names;
}

std::string name_of(Backend backend) { return name_in(backend_names(), backend); }

const NameTable<OutputsFrom>& outputs_from_names() {
  static const NameTable<OutputsFrom> names{{"best", OutputsFrom::best}, {"last", OutputsFrom::last}};
  return names;
}

namespace {

// Seconds since the process started (0 when /proc does not say).
double process_seconds_from_proc() {
  // Field 22 of /proc/self/stat is the start time in clock ticks after boot;
  // /proc/uptime is now in seconds after boot. The command name (field 2)
  // may hold spaces: fields are counted after its closing parenthesis.
  std::ifstream stat("/proc/self/stat"), up("/proc/uptime");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  double uptime = 0;
  const size_t close = text.rfind(')');
  if (!(up >> uptime) || close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  for (int k = 3; k <= 22 && fields >> f; ++k)
    if (k == 22) return std::max(0.0, uptime - std::strtod(f.c_str(), nullptr) / static_cast<double>(sysconf(_SC_CLK_TCK)));
  return 0;
}

}  // namespace

// Read from /proc once: later calls (a few per epoch) add a steady clock to
// that first reading.
double process_seconds() {
  static const double at_first = process_seconds_from_proc();
  static const Timer since_first;
  return at_first + since_first.seconds();
}

std::string process_start_utc() {
  using namespace std::chrono;
  const auto start = system_clock::now() - duration_cast<system_clock::duration>(duration<double>(process_seconds()));
  const std::time_t t = system_clock::to_time_t(start);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

// "graph file 1.20 s, renumbering 2.10 s, ...": where setup's time went.
// A phase with parts lists them after its time: "device plans 4.10 s (steps
// 2.50 s, upload 0.90 s)"; one that ran beside another says so first, its
// time its own: "vertex store 3.00 s (beside device plans; pages 1.00 s, ...)".
std::string phase_text(const PhaseTimes& p) {
  std::string out;
  for (const auto& [name, seconds] : p.phases()) {
    out += fmt::format("{}{} {:.2f} s", out.empty() ? "" : ", ", name, seconds);
    std::string parts;
    for (const auto& [part, s] : p.parts(name)) parts += fmt::format("{}{} {:.2f} s", parts.empty() ? "" : ", ", part, s);
    const std::string& beside = p.beside(name);
    if (!beside.empty()) parts = fmt::format("beside {}{}{}", beside, parts.empty() ? "" : "; ", parts);
    if (!parts.empty()) out += fmt::format(" ({})", parts);
  }
  return out;
}

// "graph file 0.01 s, ..., device plans 9.80 s (vertex store beside)": the
// process's system CPU seconds per setup phase, a phase that ran beside
// another counted in that one's.
std::string system_text(const PhaseTimes& p) {
  std::string out;
  for (const auto& [name, seconds] : p.phases()) {
    const double sys = p.system(name);
    if (sys < 0) continue;
    out += fmt::format("{}{} {:.2f} s", out.empty() ? "" : ", ", name, sys);
    std::string with;
    for (const auto& [other, s] : p.phases())
      if (p.beside(other) == name) with += fmt::format("{}{}", with.empty() ? "" : ", ", other);
    if (!with.empty()) out += fmt::format(" ({} beside)", with);
  }
  return out;
}

// Setup's CPU seconds in the kernel, by phase, and (-v) what the kernel did
// for page faults meanwhile: a setup bound by faulting in, zeroing and
// compacting pages (transparent huge pages with defrag on madvise compact
// synchronously in the faulting thread) shows many system seconds and
// compaction stalls; one bound by its own work does not (issue 33).
void log_setup_kernel_share(TrainSummary& sum, const CpuSeconds& at_start, const VmCounters& vm_at_start) {
  const CpuSeconds now = process_cpu_seconds();
  sum.setup_user_seconds = now.user - at_start.user;
  sum.setup_system_seconds = now.system - at_start.system;
  log::info("setup CPU: user {:.2f} s, system {:.2f} s (the kernel's: page faults, zeroing, compaction, pinning); "
            "system by phase: {}",
            sum.setup_user_seconds, sum.setup_system_seconds, system_text(sum.setup_phases));
  const std::string vm = vm_counter_deltas(vm_at_start, read_vm_counters());
  const std::string thp = thp_settings();
  if (vm.empty() && thp.empty()) return;  // (not Linux, or /proc and /sys unreadable)
  log::debug("setup in the kernel: {}{}{}", vm.empty() ? "" : fmt::format("/proc/vmstat over setup (machine-wide) {}", vm),
             vm.empty() || thp.empty() ? "" : "; ", thp);
}

// Once the trainer has packed its device plans it reads only the plan's sizes
// and ranges: the per-step lists, most of the plan's memory, can go.
void release_step_lists(Plan& plan) {
  for (ChunkPlan& s : plan.steps) {
    ChunkPlan kept;
    kept.part = s.part;
    kept.chunk = s.chunk;
    kept.dst_begin = s.dst_begin;
    kept.dst_end = s.dst_end;
    s = std::move(kept);
  }
}

// The graph in new ids without its features: the trainer takes h^0's rows
// from the graph file itself (FeatureSource), so the largest array of the
// file is never copied.
Graph renumber_without_features(const GraphView& g, const Partition& p) {
  GraphView topology = g;
  topology.features = {};
  topology.features16 = {};
  return renumber(topology, p);
}

// Partition and plan: from files when given, else built in memory. (The
// graph's renumbering ran beside the plan's reading for a while, issue 33:
// both are memory-bound, and side by side they took 4.55 s where one after
// the other took 4.05 s on it-2004-like, 2 x H200, session 15.)
struct Pipeline {
  Partition partition;
  Plan plan;
};

// `before_chunk_choice`: called before --chunks auto reads the GPUs' free
// memory (after the partitioning of the GPUs' vertex sets).
Pipeline load_or_build(const TrainJob& job, const GraphFile& gf, PhaseTimes& times,
                       const std::function<void()>& before_chunk_choice) {
  Pipeline p;
  Timer t;
  if (!job.partition_path.empty()) {
    p.partition = read_partition(job.partition_path, {job.verify_checksums});
    check_partition_matches(p.partition, gf);
    times.add("partition file", t.seconds());
  } else {
    HT_CHECK(job.plan_path.empty(), "--plan needs the --partition it was made from");
    // In ht-train's terms: m is --gpus (times the processes), not ht-partition's --parts.
    if (job.parts > gf.view().num_vertices)
      throw option_error("--gpus", fmt::format("{} GPUs for a graph of {} vertices (every GPU needs at least one "
                                               "vertex)",
                                               job.parts, gf.view().num_vertices));
    PartitionParams params;
    params.parts = job.parts;
    const bool auto_chunks = job.chunks == kChunksAuto;
    params.chunks = auto_chunks ? 1 : job.chunks;  // auto: the GPUs' vertex sets first, then the chunks
    params.method = job.parts > 1 ? PartitionMethod::metis : PartitionMethod::range;
    PartitionRunInfo info;
    log::info("partitioning in memory: m = {}, n = {} ({})", job.parts,
              auto_chunks ? std::string("auto") : std::to_string(job.chunks), job.parts > 1 ? "METIS" : "range");
    p.partition = make_partition(gf.view(), gf.identity(), params, info);
    if (auto_chunks) {
      before_chunk_choice();
      p.partition = choose_job_chunks(job, gf.view(), std::move(p.partition), params);
    }
  }
  if (!job.plan_path.empty()) {
    p.plan = read_plan(job.plan_path, {job.verify_checksums}, nullptr, &times);
    check_plan_matches(p.plan, gf.identity(), read_identity(job.partition_path));
  }
  return p;
}

// --store auto keeps the vertex store on the GPU when there is one GPU and one
// chunk and store + plan fit in its memory; host otherwise.
bool resolve_store(const TrainJob& job, const TrainerOptions& opt, const Plan& plan, const Executor& exec,
                   int64_t num_vertices) {
  if (opt.host_dtype != StoreDtype::f32) {
    HT_CHECK(job.store != StoreChoice::device,
             "--store device keeps the vertex store in fp32 on the GPU; --host-dtype {} applies to a host store "
             "(use --store host or auto)",
             dtype_name(opt.host_dtype));
    return false;
  }
  if (job.store == StoreChoice::host || !exec.has_device_memory()) return false;
  if (job.store == StoreChoice::device) return true;
  if (plan.m != 1 || plan.n != 1) return false;
  DeviceMemoryNeed need = device_memory_need(plan, 0, opt);
  need.fixed_bytes += vertex_store_bytes(opt, num_vertices);
  const bool fits = exec.memory_limit(0) <= 0 || need.total() <= exec.memory_limit(0);
  if (!fits) log::info("vertex store kept in host memory: it does not fit next to the plan on the GPU");
  return fits;
}

// One object per busy interval of the last training epoch, in milliseconds
// since its start: which device and queue, what kind of work.
std::unique_ptr<AtomicFile> write_timeline(const std::string& path, const std::vector<BusyInterval>& intervals,
                                           double median_epoch_ms) {
  static const char* queue[] = {"compute", "load", "store", "host", "peer"};
  static const char* kind[] = {"compute", "h2d", "d2h", "d2d", "host"};
  JsonWriter w;
  w.begin_object().field("median_epoch_ms", median_epoch_ms).key("intervals").begin_array();
  for (const BusyInterval& b : intervals) {
    w.begin_object().field("device", b.device).field("queue", queue[static_cast<int>(b.queue)]);
    w.field("kind", kind[static_cast<int>(b.kind)]).field("begin_ms", b.begin * 1e3).field("end_ms", b.end * 1e3);
    w.end_object();
  }
  w.end_array().end_object();
  auto f = std::make_unique<AtomicFile>(path);
  const std::string text = w.str() + "\n";
  f->write(text.data(), text.size());
  return f;
}

JsonWriter& counters_json(JsonWriter& w, const LinkCounters& c) {
  w.field("h2d_bytes", c.h2d_bytes).field("d2h_bytes", c.d2h_bytes).field("p2p_bytes", c.p2p_bytes);
  w.field("reuse_bytes", c.reuse_bytes).field("h2d_rows", c.h2d_rows).field("p2p_rows", c.p2p_rows);
  w.field("reuse_rows", c.reuse_rows).field("d2h_rows", c.d2h_rows).field("p2p_early_rows", c.p2p_early_rows);
  w.field("net_bytes", c.net_bytes).field("net_rows", c.net_rows);
  w.field("cache_bytes", c.cache_bytes).field("cache_rows", c.cache_rows);
  w.field("cache_hit_fraction", cache_hit_fraction(c));
  return w;
}

LinkCounters diff(const LinkCounters& a, const LinkCounters& b) {
  static constexpr int64_t LinkCounters::*kFields[] = {
      &LinkCounters::h2d_bytes,  &LinkCounters::d2h_bytes,  &LinkCounters::p2p_bytes, &LinkCounters::reuse_bytes,
      &LinkCounters::h2d_rows,   &LinkCounters::d2h_rows,   &LinkCounters::p2p_rows,  &LinkCounters::reuse_rows,
      &LinkCounters::cache_bytes, &LinkCounters::cache_rows, &LinkCounters::net_bytes, &LinkCounters::net_rows,
      &LinkCounters::p2p_early_rows};
  static_assert(sizeof(kFields) / sizeof(kFields[0]) * sizeof(int64_t) == sizeof(LinkCounters),
                "every counter of LinkCounters is listed");
  LinkCounters d;
  for (int64_t LinkCounters::*f : kFields) d.*f = a.*f - b.*f;
  return d;
}

// Per-epoch series over the timed epochs (after warm-up), in ms.
struct EpochSeries {
  std::vector<double> epoch, h2d, d2d, compute, cpu, eval, busy_max, busy_mean;
  std::vector<ExposedTimes> exposed;

  void add(const EpochResult& r) {
    epoch.push_back(r.seconds * 1e3);
    h2d.push_back(r.t_h2d * 1e3);
    d2d.push_back(r.t_d2d * 1e3);
    compute.push_back(r.t_compute * 1e3);
    cpu.push_back(r.t_cpu * 1e3);
    exposed.push_back(exposed_ms(r));
    if (!r.gpu_busy.empty()) {
      double most = 0, total = 0;
      for (double b : r.gpu_busy) {
        most = std::max(most, b);
        total += b;
      }
      busy_max.push_back(most * 1e3);
      busy_mean.push_back(total * 1e3 / static_cast<double>(r.gpu_busy.size()));
    }
  }
};

JsonWriter& exposed_json(JsonWriter& w, const ExposedTimes& ms, std::string_view suffix) {
  auto key = [&](std::string_view name) { return fmt::format("x_{}_ms{}", name, suffix); };
  w.field(key("compute"), ms.compute).field(key("h2d"), ms.h2d).field(key("d2h"), ms.d2h);
  return w.field(key("host"), ms.host).field(key("idle"), ms.idle);
}

// `ev` is null on epochs without evaluation (`eval_ms` is then not written).
// `at`: the end of this epoch (its evaluation included) from the start of
// training and of the process (accuracy against wall time).
JsonWriter epoch_json(int run, int e, const EpochResult& r, const Evaluation* ev, double eval_ms,
                      const LinkCounters& moved, const RunTime& at) {
  JsonWriter w;
  w.begin_object().field("type", "epoch");
  if (run >= 0) w.field("run", run);
  w.field("epoch", e).field("loss", r.loss);
  if (ev) w.field("train_acc", ev->train_acc).field("val_acc", ev->val_acc).field("test_acc", ev->test_acc);
  w.field("epoch_ms", r.seconds * 1e3).field("h2d_ms", r.t_h2d * 1e3).field("d2d_ms", r.t_d2d * 1e3);
  w.field("compute_ms", r.t_compute * 1e3).field("cpu_ms", r.t_cpu * 1e3);
  exposed_json(w, exposed_ms(r), "");
  if (ev) w.field("eval_ms", eval_ms);
  w.field("train_seconds", at.train_seconds).field("process_seconds", at.process_seconds);
  counters_json(w, moved).end_object();
  return w;
}

// Link fields of the summary: null when the link was not measured (CPU
// backend), and the ratio null when nothing crossed the host link.
void link_json(JsonWriter& w, const TrainSummary& sum) {
  w.field("link_measured", sum.link_measured);
  auto number_or_null = [&](std::string_view k, bool known, double v) {
    w.key(k);
    if (known) w.value(v);
    else w.null();
  };
  const bool bound = sum.link_measured && sum.link_bound.seconds > 0;
  number_or_null("link_h2d_bytes_per_s", sum.link_measured, sum.link.h2d_bytes_per_s);
  number_or_null("link_d2h_bytes_per_s", sum.link_measured, sum.link.d2h_bytes_per_s);
  number_or_null("link_bound_ms", sum.link_measured, sum.link_bound.seconds * 1e3);
  number_or_null("epoch_over_link_bound", bound, sum.link_bound.ratio);
  number_or_null("link_phase_bound_ms", sum.link_measured, sum.link_phase_bound.total.seconds * 1e3);
  number_or_null("epoch_over_link_phase_bound", bound, sum.link_phase_bound.total.ratio);
}

// Where the epochs start (0, or the epochs a resumed checkpoint had done), the
// last evaluation, and the checkpoint writer (empty: no --checkpoint).
// The best epoch's parameters (values only) are kept for the outputs
// (--outputs-from best) and the checkpoints; the clocks' offsets are the
// training and process seconds of the runs this one resumed.
struct EpochLoop {
  int first_epoch = 0;
  Evaluation ev;
  std::function<void(int epochs_done)> checkpoint;
  ModelParams best_params;
  int evals_since_best = 0;  // evaluations after the best one (--early-stop)
  double train_offset = 0, process_offset = 0;
  Timer train_clock;         // reset when the epochs start
  RunTime now() const {
    RunTime t;
    t.train_seconds = train_offset + train_clock.seconds();
    t.process_seconds = process_offset + process_seconds();
    return t;
  }
};

// Parameter values without gradients (what the outputs and checkpoints need).
ModelParams values_of(const ModelParams& p) {
  ModelParams out;
  for (const ParamTensor& t : p.tensors) {
    out.tensors.push_back(ParamTensor{t.name, t.layer, t.rows, t.cols, t.value, {}});
  }
  return out;
}

// Why the epochs end before --epochs, or "" to go on: checked after each
// evaluation, and before the first epoch of a resumed run (whose checkpoint
// may have been written at the stop). The time limit is the one criterion
// that reads a clock, and the processes' clocks differ: the decision is the
// job's (any process past the limit stops them all), so every process calls
// this at the same points (it is collective when the limit is on).
// `now`: the time the epoch's record gives, so that a run stopped by the
// limit always records an epoch past it (a second reading of the clock is later).
std::string stop_reason(const TrainJob& job, const TrainSummary& sum, const EpochLoop& loop, const RunTime& now) {
  const bool time_up =
      job.time_limit > 0 && sum.epochs > 0 &&  // not before a fresh run's first epoch
      max_over_processes(job.transport, now.train_seconds >= job.time_limit ? int64_t{1} : int64_t{0}) != 0;
  if (job.target_acc >= 0 && sum.target_time.epoch >= 0)
    return fmt::format("target accuracy {} reached", job.target_acc);
  if (job.early_stop > 0 && sum.best_epoch >= 0 && loop.evals_since_best >= job.early_stop)
    return fmt::format("early stop (patience {})", job.early_stop);
  if (time_up) return fmt::format("time limit {} s", job.time_limit);
  return "";
}

std::string stopped_message(const TrainJob& job, int signal, int epochs_done) {
  const std::string what =
      job.checkpoint_path.empty()
          ? std::string("nothing saved (no --checkpoint given)")
          : fmt::format("checkpoint written to {} (continue with --resume {})", job.checkpoint_path, job.checkpoint_path);
  return fmt::format("stopped by {} after epoch {} of {}: {}; no other output written", signals::signal_name(signal),
                     epochs_done, job.epochs, what);
}

// A stop signal that arrived during setup (minutes on a large graph): the run
// ends at the next setup phase, there being nothing to checkpoint yet. Read
// from the signal state itself (stop_requested is polled after epochs);
// several processes stop together after the first epoch instead.
void stop_if_signalled_in_setup(const TrainJob& job) {
  if (job.transport || !job.stop_requested) return;
  if (const int stop = signals::stop_signal())
    throw signals::Interrupted(stop, fmt::format("stopped by {} during setup, before the first epoch; no output "
                                                 "written",
                                                 signals::signal_name(stop)));
}

// The training epochs with periodic evaluation: one metrics line per epoch,
// accuracies and the medians over the timed epochs into `sum`. Stops at the
// first non-finite loss, gradient or parameter, and after an epoch in which
// a stop was requested (checkpoint first).
void run_epochs(const TrainJob& job, Trainer& trainer, MetricsWriter& metrics, TrainSummary& sum, EpochLoop& loop) {
  EpochSeries series;
  const int first = loop.first_epoch;
  sum.warmup_used = std::min(job.warmup, std::max(job.epochs - first - 1, 0));
  Evaluation& ev = loop.ev;
  sum.epochs = first;
  loop.train_clock.reset();  // before the stop check: the time limit counts training, not setup
  sum.stop_reason = stop_reason(job, sum, loop, loop.now());
  if (!sum.stop_reason.empty()) log::info("the resumed run had stopped already: {}", sum.stop_reason);
  EpochLog lines(first, job.epochs, job.eval_every, log::enabled(log::Level::debug));
  std::string best_text;  // the best epoch's line, printed at the end if it was not
  bool best_shown = false;
  for (int e = first; e < job.epochs && sum.stop_reason.empty(); ++e) {
    const Timer epoch_clock;
    const LinkCounters before = trainer.counters();
    const EpochResult r = trainer.train_epoch(e);
    check_finite_epoch(e, r.loss, trainer.params());
    // Read before evaluating: evaluation traffic is not an epoch's. The job's: every process's.
    const LinkCounters moved = sum_over_processes(job.transport, diff(trainer.counters(), before));
    const bool timed = e - first >= sum.warmup_used;
    if (timed) {
      series.add(r);
      sum.per_epoch = moved;
      LinkCounters forward;
      forward.h2d_bytes = r.forward_h2d_bytes;
      forward.d2h_bytes = r.forward_d2h_bytes;
      forward = sum_over_processes(job.transport, forward);
      sum.forward_h2d_bytes = forward.h2d_bytes;
      sum.forward_d2h_bytes = forward.d2h_bytes;
    }
    const bool eval_now = (e + 1) % job.eval_every == 0 || e + 1 == job.epochs;
    double eval_ms = 0;
    if (eval_now) {
      // Timed here rather than taken from Evaluation::seconds, so that the
      // number means the same whatever the executor fills in.
      const Timer eval_timer;
      ev = trainer.evaluate();
      eval_ms = eval_timer.millis();
      if (timed) series.eval.push_back(eval_ms);
      const RunTime at = loop.now();
      if (sum.best_epoch < 0 || ev.val_acc > sum.best_val_acc) {
        sum.best_epoch = e;
        sum.best_val_acc = ev.val_acc;
        sum.test_acc_at_best_val = ev.test_acc;
        sum.best_time = at;
        sum.best_time.epoch = e;
        loop.best_params = values_of(trainer.params());
        loop.evals_since_best = 0;
      } else {
        ++loop.evals_since_best;
      }
      if (job.target_acc >= 0 && sum.target_time.epoch < 0 && ev.val_acc >= job.target_acc) {
        sum.target_time = at;
        sum.target_time.epoch = e;
      }
    }
    const RunTime recorded = loop.now();
    metrics.write(epoch_json(job.run_index, e, r, eval_now ? &ev : nullptr, eval_ms, moved, recorded));
    sum.final_loss = r.loss;
    sum.epochs = e + 1;
    // Every process evaluated the same numbers: they stop after the same epoch.
    if (eval_now) sum.stop_reason = stop_reason(job, sum, loop, recorded);
    lines.add(epoch_clock.seconds(), eval_ms * 1e-3, eval_now);
    if (eval_now) {
      const bool last = e + 1 == job.epochs || !sum.stop_reason.empty();
      const std::string text =
          fmt::format("{}loss {:.4f} | acc train {:.4f} val {:.4f} test {:.4f} | {:.1f} ms (eval {:.1f} ms)",
                      lines.prefix(e), r.loss, ev.train_acc, ev.val_acc, ev.test_acc, r.seconds * 1e3, eval_ms);
      const bool shown = lines.shown(e, last);
      if (shown) log::info("{}{}", text, last ? "" : fmt::format(" | {} left", duration_text(lines.seconds_left(e))));
      if (sum.best_epoch == e) {
        best_text = text;
        best_shown = shown;
      }
    }
    if (!sum.stop_reason.empty()) log::info("stopping after epoch {}: {}", e, sum.stop_reason);
    // A stop asked of any process stops every one after the same epoch.
    const int stop = static_cast<int>(max_over_processes(job.transport, job.stop_requested ? job.stop_requested() : 0));
    const bool last = e + 1 == job.epochs || !sum.stop_reason.empty();
    if (loop.checkpoint && ((e + 1) % job.checkpoint_every == 0 || last || stop)) loop.checkpoint(e + 1);
    if (stop && !last) throw signals::Interrupted(stop, stopped_message(job, stop, e + 1));
  }
  // The best epoch's line when it fell between the lines shown (out of order, so labelled).
  if (!best_text.empty() && !best_shown) log::info("{} | best validation", best_text);
  if (sum.stop_reason.empty()) sum.stop_reason = "epochs";
  sum.epochs_planned = job.epochs;
  sum.train_seconds = loop.now().train_seconds;
  sum.final_train_acc = ev.train_acc;
  sum.final_val_acc = ev.val_acc;
  sum.final_test_acc = ev.test_acc;
  sum.epoch_ms_median = median_of(series.epoch);
  sum.h2d_ms_median = median_of(series.h2d);
  sum.d2d_ms_median = median_of(series.d2d);
  sum.compute_ms_median = median_of(series.compute);
  sum.cpu_ms_median = median_of(series.cpu);
  sum.gpu_busy_max_ms_median = median_of(series.busy_max);
  sum.gpu_busy_mean_ms_median = median_of(series.busy_mean);
  sum.exposed_ms_median = median_exposed(series.exposed);
  sum.eval_ms_median = median_of(series.eval);
  sum.evaluations_timed = static_cast<int>(series.eval.size());
}

// What the run was, for the summary line of the metrics file.
struct RunLabels {
  const char* store;
  std::string_view host_dtype;  // of the vertex store's matrices
  bool overlap;
  std::string backend;
  int chunks;
  std::string comm;
  std::string gcn_order;  // empty for GAT
};

// The host memory plan beside the measured peak: its peak and need, the
// limit it was checked against, and every item of the peak phase by name.
void host_plan_json(JsonWriter& w, const TrainSummary& sum) {
  const HostMemoryPlan& p = sum.host_plan;
  w.field("host_plan_bytes", p.peak).field("host_plan_need_bytes", p.need);
  w.field("host_plan_phase", host_phase_name(p.peak_phase));
  w.field("host_limit_bytes", sum.host_limit.bytes).field("host_limit_source", sum.host_limit.source);
  w.key("host_plan_items").begin_object();
  for (const HostMemoryItem& it : p.items)
    if (it.phases & p.peak_phase) w.field(it.name, it.bytes);
  w.end_object();
}

// The host's name ("" when unknown).
std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

// When the run got where: epoch and seconds, null when it did not.
void run_time_json(JsonWriter& w, std::string_view prefix, const RunTime& t) {
  auto key = [&](std::string_view what) { return fmt::format("{}_{}", prefix, what); };
  w.key(key("epoch"));
  if (t.epoch >= 0) w.value(t.epoch);
  else w.null();
  w.key(key("train_seconds"));
  if (t.epoch >= 0) w.value(t.train_seconds);
  else w.null();
  w.key(key("process_seconds"));
  if (t.epoch >= 0) w.value(t.process_seconds);
  else w.null();
}

// What the run was and how it ended: the stop, the times to the best epoch
// and to the target, the build, the machine and every option, so that a
// metrics file says by itself where its numbers came from.
void provenance_json(JsonWriter& w, const TrainJob& job, const TrainSummary& sum) {
  w.field("seed", sum.seed);
  if (sum.run_index >= 0) w.field("run", sum.run_index);
  w.field("epochs_planned", sum.epochs_planned).field("stop_reason", sum.stop_reason);
  w.field("train_seconds", sum.train_seconds);
  run_time_json(w, "best", sum.best_time);
  w.key("target_acc");
  if (job.target_acc >= 0) w.value(job.target_acc);
  else w.null();
  run_time_json(w, "target", sum.target_time);
  w.field("early_stop", job.early_stop).field("time_limit", job.time_limit).field("outputs_from", sum.outputs_from);
  w.field("version", version_string()).field("commit", build_commit());
  w.field("start_time", process_start_utc()).field("host", host_name());
  w.key("options").begin_object();
  for (const auto& [name, value] : job.options) w.field(name, value);
  w.end_object();
}

JsonWriter summary_json(const TrainJob& job, const TrainSummary& sum, const RunLabels& run) {
  JsonWriter w;
  w.begin_object().field("type", "summary");
  if (sum.run_index >= 0) w.field("run", sum.run_index);
  w.field("epochs", sum.epochs).field("best_epoch", sum.best_epoch);
  w.field("best_val_acc", sum.best_val_acc).field("test_acc_at_best_val", sum.test_acc_at_best_val);
  w.field("final_loss", sum.final_loss).field("final_test_acc", sum.final_test_acc);
  w.field("epoch_ms_median", sum.epoch_ms_median).field("h2d_ms_median", sum.h2d_ms_median);
  w.field("d2d_ms_median", sum.d2d_ms_median).field("compute_ms_median", sum.compute_ms_median);
  w.field("cpu_ms_median", sum.cpu_ms_median);
  w.field("gpu_busy_max_ms_median", sum.gpu_busy_max_ms_median).field("gpu_busy_mean_ms_median", sum.gpu_busy_mean_ms_median);
  exposed_json(w, sum.exposed_ms_median, "_median");
  w.field("eval_ms_median", sum.eval_ms_median).field("evaluations_timed", sum.evaluations_timed);
  counters_json(w, sum.per_epoch);
  w.field("forward_h2d_bytes", sum.forward_h2d_bytes).field("forward_d2h_bytes", sum.forward_d2h_bytes);
  w.field("peak_device_bytes", sum.peak_device_bytes).field("host_buffer_bytes", sum.host_buffer_bytes);
  w.field("peak_rss_bytes", sum.peak_rss_bytes).field("setup_seconds", sum.setup_seconds);
  w.field("setup_threads", sum.setup_threads);
  w.field("gpu_cache_held_bytes", sum.gpu_cache_bytes).field("gpu_cache_tier_rows", sum.gpu_cache_tier_rows);
  w.field("gpu_cache_matrices", sum.gpu_cache_what).field("gpu_cache_saved_bytes_estimate", sum.gpu_cache_saved_estimate);
  w.key("setup_phases").begin_object();
  for (const auto& [name, seconds] : sum.setup_phases.phases()) w.field(name, seconds);
  w.end_object();
  w.key("setup_phase_parts").begin_object();  // {"device plans": {"steps": s, ...}, ...}: within the phase's time
  for (const auto& [name, seconds] : sum.setup_phases.phases()) {
    const PhaseTimes::Parts& parts = sum.setup_phases.parts(name);
    if (parts.empty()) continue;
    w.key(name).begin_object();
    for (const auto& [part, s] : parts) w.field(part, s);
    w.end_object();
  }
  w.end_object();
  // The process's system CPU seconds per phase (a phase beside another counted in that one's).
  w.field("setup_user_seconds", sum.setup_user_seconds).field("setup_system_seconds", sum.setup_system_seconds);
  w.key("setup_phases_system_seconds").begin_object();
  for (const auto& [name, seconds] : sum.setup_phases.phases())
    if (sum.setup_phases.system(name) >= 0) w.field(name, sum.setup_phases.system(name));
  w.end_object();
  // {"vertex store": "device plans"}: phases that ran beside another, in a thread of their own
  w.key("setup_phases_beside").begin_object();
  for (const auto& [name, seconds] : sum.setup_phases.phases())
    if (!sum.setup_phases.beside(name).empty()) w.field(name, sum.setup_phases.beside(name));
  w.end_object();
  host_plan_json(w, sum);
  w.field("setup_over_epoch", sum.epoch_ms_median > 0 ? sum.setup_seconds * 1e3 / sum.epoch_ms_median : 0.0);
  link_json(w, sum);
  w.field("store", run.store).field("host_dtype", run.host_dtype).field("overlap", run.overlap);
  w.field("backend", run.backend);
  w.field("gpus", sum.gpus).field("processes", sum.processes).field("chunks", run.chunks).field("comm", run.comm);
  if (!run.gcn_order.empty()) w.field("gcn_order", run.gcn_order);
  provenance_json(w, job, sum);
  w.end_object();
  return w;
}

// Before any work: option combinations, and every output writable and
// neither an input nor another output (the checkpoint may be the file it
// resumes from: it is replaced atomically).
void check_job(const TrainJob& job) {
  HT_CHECK(job.backend != Backend::automatic, "TrainJob: --backend auto is resolved by the caller (cpu or cuda)");
  HT_CHECK(job.epochs >= 1, "--epochs must be >= 1");
  HT_CHECK(job.eval_every >= 1, "--eval-every must be >= 1");
  HT_CHECK(job.checkpoint_every >= 1, "--checkpoint-every must be >= 1");
  HT_CHECK(job.early_stop >= 0, "--early-stop must be >= 0");
  HT_CHECK(job.time_limit >= 0, "--time-limit must be >= 0");
  if (job.target_acc > 1) throw option_error("--target-acc", fmt::format("{} is above 1 (an accuracy is a fraction)", job.target_acc));
  if (is_npz_path(job.load_model))
    throw option_error("--load-model", fmt::format("'{}': reads the HTMODEL format of --save-model FILE (not .npz); "
                                                   "the .npz layout is for other tools",
                                                   job.load_model));
  if (job.transport && job.transport->size() > 1 && job.store == StoreChoice::device)
    throw option_error("--store", "device (the in-memory mode) is one GPU's: not with several processes (use "
                                  "--store host or auto)");
  if (!job.load_model.empty() && !job.resume_path.empty())
    throw option_error("--resume", "not with --load-model (a checkpoint holds the parameters already)");
  if (job.predict_only) {
    if (job.load_model.empty() && job.resume_path.empty())
      throw option_error("--predict-only", "needs the parameters: --load-model MODEL (or --resume CHECKPOINT)");
    for (const auto& [path, option] : {std::pair{job.metrics_out, "--metrics-out"}, {job.save_model, "--save-model"},
                                       {job.checkpoint_path, "--checkpoint"}, {job.timeline_out, "--timeline-out"}})
      if (!path.empty()) throw option_error(option, "not with --predict-only (no training)");
  }
  const std::vector<std::string> inputs{job.graph_path, job.partition_path, job.plan_path, job.load_model};
  const std::vector<OutputPath> outputs{{job.checkpoint_path, "--checkpoint"}, {job.metrics_out, "--metrics-out"},
                                        {job.save_model, "--save-model"},       {job.predict_out, "--predict-out"},
                                        {job.logits_out, "--logits-out"},       {job.timeline_out, "--timeline-out"},
                                        {job.embeddings_out, "--embeddings-out"}};
  check_output_paths(outputs, inputs);
  for (const OutputPath& o : outputs)
    if (o.option != "--checkpoint" && same_file(o.path, job.resume_path))
      throw option_error(o.option, fmt::format("'{}' is the checkpoint this run resumes from; choose another file", o.path));
}

// --embeddings-out reads h^l from the vertex store after the last forward
// (rows the GPU cache holds from the GPUs: Trainer::layer_output): the layer
// must exist and the store must hold it (a fused transform keeps a
// transform-first layer's input on the GPU). Refused before any work.
void check_embeddings(const TrainJob& job, const TrainerOptions& t) {
  if (job.embeddings_out.empty()) return;
  const int layers = t.model.num_layers();
  if (job.embeddings_layer < 1 || job.embeddings_layer > layers)
    throw option_error("--embeddings-layer", fmt::format("{} is not a layer of the {}-layer model (1 .. {}; {} = the logits)",
                                                         job.embeddings_layer, layers, layers, layers));
  if (!stores_h(t, job.embeddings_layer))
    throw option_error("--embeddings-out",
                       fmt::format("layer {}'s output stays on the GPU (the next layer's transform is fused into its "
                                   "batches); add --no-fuse-transforms (the same results with an fp32 store) or "
                                   "--gcn-order aggregate",
                                   job.embeddings_layer));
}

// The first and last widths against the graph's features and classes.
void check_dims(const ModelConfig& m, const GraphShape& g, const std::string& graph_path) {
  if (g.feature_dim <= 0)
    throw file_error(graph_path, "the graph has no vertex features (F = 0); ht-train needs them (ht-convert "
                                 "--features X.npy, or --feature-dim for --generate)");
  if (m.dims.front() != g.feature_dim)
    throw option_error("--layers", fmt::format("starts with {} but the graph has {} feature columns", m.dims.front(),
                                               g.feature_dim));
  if (g.num_classes > 0 && m.dims.back() != g.num_classes)
    throw option_error("--layers", fmt::format("ends with {} but the graph has {} classes", m.dims.back(),
                                               g.num_classes));
}

// Memory that the model of these widths needs at the least: parameters with
// their gradients (8 bytes per value), and on the CPU backend (whose device
// memory is host memory) one output row per vertex and layer in the store's
// dtype. Widths are multiplied in 64 bits (a GAT width times its heads may
// not fit an int).
struct ModelNeed {
  double param_bytes = 0, row_bytes = 0;
  bool too_wide = false;  // a layer of more than 2^31 - 1 values per row
  int64_t vertices = 0;
  std::string option;     // --layers or --hidden (empty: the graph's widths)
  std::string model;      // "the GCN model 6-16-3"
  std::string text() const {  // "needs at least ... (...)"
    if (too_wide) return "needs a layer wider than 2^31 - 1 values (width times heads)";
    return fmt::format("needs at least {} of memory (parameters and gradients {}{})",
                       format_bytes(param_bytes + row_bytes), format_bytes(param_bytes),
                       row_bytes > 0 ? fmt::format(", a row per vertex and layer {} for N = {}", format_bytes(row_bytes),
                                                   vertices)
                                     : "");
  }
};

ModelNeed model_need(const TrainJob& job, const TrainerOptions& t, const GraphShape& g) {
  const ModelConfig& m = t.model;
  const int layers = m.num_layers();
  auto heads = [&](int l) -> double { return m.layer_heads(l); };
  auto out_width = [&](int l) -> double {  // width of h^{l+1} (ModelConfig::out_width, in doubles: it may not fit an int)
    return l != layers - 1 ? double(m.dims[l + 1]) * m.hidden_heads() : double(m.dims[l + 1]);
  };
  const double weights = model_traits(m.kind).weight_matrices;  // [in, out · heads] matrices per layer
  ModelNeed n;
  double params = 0, rows = 0;
  for (int l = 0; l < layers; ++l) {
    const double in = l == 0 ? double(m.dims[0]) : out_width(l - 1);
    params += in * m.dims[l + 1] * heads(l) * weights;
    rows += out_width(l);
    n.too_wide |= out_width(l) > std::numeric_limits<int>::max();
  }
  n.param_bytes = params * 8;
  n.vertices = g.vertices;
  if (job.backend == Backend::cpu)
    n.row_bytes = rows * static_cast<double>(g.vertices) * static_cast<double>(dtype_bytes(t.host_dtype));
  n.option = !job.trainer.model.dims.empty() ? "--layers" : job.hidden > 0 ? "--hidden" : "";
  n.model = fmt::format("the {} model {}{}", model_title(m.kind), fmt::join(m.dims, "-"),
                        m.hidden_heads() > 1 ? fmt::format(" ({} heads)", m.hidden_heads()) : "");
  return n;
}

// An error about the widths, in the terms of the option that set them.
Error width_error(const TrainJob& job, const ModelNeed& n, const std::string& what) {
  const std::string advice = n.option == "--hidden" ? "choose a smaller width" : "choose smaller widths";
  if (n.option.empty()) return file_error(job.graph_path, fmt::format("{}; {}", what, advice));
  if (n.option == "--hidden") return option_error(n.option, fmt::format("{}: {}; {}", job.hidden, what, advice));
  return option_error(n.option, fmt::format("{}; {}", what, advice));
}

// A need beyond the machine's memory (RAM + swap) is refused before any
// work, instead of a bare "out of memory" after loading the graph.
void check_model_fits(const TrainJob& job, const ModelNeed& n) {
  struct sysinfo si {};
  const double machine =
      sysinfo(&si) == 0 ? (static_cast<double>(si.totalram) + static_cast<double>(si.totalswap)) * si.mem_unit : 0;
  if (!n.too_wide && (machine <= 0 || n.param_bytes + n.row_bytes <= machine)) return;
  throw width_error(job, n,
                    n.too_wide ? fmt::format("{} {}", n.model, n.text())
                               : fmt::format("{} {} but this machine has {}", n.model, n.text(), format_bytes(machine)));
}

std::string hyperparameters(const TrainerOptions& t) {
  const OptimizerConfig& o = t.optimizer;
  return fmt::format("lr {} weight_decay {} decay_first_layer_only {} momentum {} dropout {} attn_dropout {} seed {}",
                     o.lr, o.weight_decay, o.decay_first_layer_only ? 1 : 0, o.momentum, t.model.dropout,
                     t.model.attn_dropout, t.model.seed);
}

CheckpointTarget checkpoint_target(const TrainJob& job, const TrainerOptions& t, const GraphFile& gf, const Plan& plan) {
  CheckpointTarget c;
  c.graph = gf.identity();
  if (!job.partition_path.empty()) c.partition = read_identity(job.partition_path);
  if (!job.plan_path.empty()) c.plan = read_identity(job.plan_path);
  c.m = plan.m;
  c.n = plan.n;
  c.model = model_shape(t.model);
  c.optimizer = name_of(t.optimizer.kind);
  c.host_dtype = std::string(dtype_name(t.host_dtype));
  c.normalize_features = job.normalize_features || gf.view().flags.features_normalized;
  return c;
}

TrainCheckpoint make_checkpoint(const CheckpointTarget& target, const TrainerOptions& t, Trainer& trainer,
                                const TrainJob& job, const TrainSummary& sum, const EpochLoop& loop, int done,
                                const MetricsWriter& metrics) {
  const Evaluation& ev = loop.ev;
  TrainCheckpoint c;
  c.target = target;
  c.hyperparameters = hyperparameters(t);
  c.epochs_done = done;
  c.epochs_planned = job.epochs;
  const Optimizer& opt = trainer.optimizer();
  c.optimizer_steps = opt.steps();
  c.best_epoch = sum.best_epoch;
  c.best_val_acc = sum.best_val_acc;
  c.test_acc_at_best_val = sum.test_acc_at_best_val;
  c.final_loss = sum.final_loss;
  c.final_train_acc = ev.train_acc;
  c.final_val_acc = ev.val_acc;
  c.final_test_acc = ev.test_acc;
  for (const ParamTensor& p : trainer.params().tensors) {
    c.tensors.push_back(p);
    c.tensors.back().grad.clear();  // not saved: a checkpoint is taken between epochs
  }
  c.m = opt.m();
  c.v = opt.v();
  c.metrics = metrics.text();
  c.best_tensors = loop.best_params.tensors;
  c.evals_since_best = loop.evals_since_best;
  const RunTime now = loop.now();
  c.train_seconds = now.train_seconds;
  c.process_seconds = now.process_seconds;
  c.best_train_seconds = sum.best_time.train_seconds;
  c.best_process_seconds = sum.best_time.process_seconds;
  c.target_epoch = sum.target_time.epoch;
  c.target_train_seconds = sum.target_time.train_seconds;
  c.target_process_seconds = sum.target_time.process_seconds;
  c.target_acc = job.target_acc;
  return c;
}

// --resume: parameters, optimizer state, bookkeeping and the metrics lines
// so far, after checking that the checkpoint is for this run.
void resume(const TrainJob& job, const CheckpointTarget& target, const TrainerOptions& t, Trainer& trainer,
            MetricsWriter& metrics, TrainSummary& sum, EpochLoop& loop) {
  TrainCheckpoint c = read_train_checkpoint(job.resume_path, job.verify_checksums);
  check_checkpoint_target(job.resume_path, c.target, target);
  if (c.hyperparameters != hyperparameters(t))
    log::warn("resuming with other hyperparameters than the checkpoint's ({} there, {} now): the run will differ "
              "from an uninterrupted one",
              c.hyperparameters, hyperparameters(t));
  if (!job.predict_only && c.epochs_done > job.epochs)
    throw option_error("--epochs", fmt::format("{} is fewer than the {} epochs checkpoint {} has done", job.epochs,
                                               c.epochs_done, job.resume_path));
  ModelParams p = trainer.params();
  for (size_t k = 0; k < p.tensors.size(); ++k) {
    ParamTensor& dst = p.tensors[k];
    if (k >= c.tensors.size() || c.tensors[k].name != dst.name || c.tensors[k].size() != dst.size())
      throw file_error(job.resume_path, fmt::format("checkpoint's parameter {} does not match the model's {}",
                                                    k < c.tensors.size() ? c.tensors[k].name : "(none)", dst.name));
    dst.value = c.tensors[k].value;
  }
  trainer.set_params(p);
  trainer.optimizer().restore(c.optimizer_steps, std::move(c.m), std::move(c.v));
  sum.resumed_from = c.epochs_done;
  sum.best_epoch = c.best_epoch;
  sum.best_val_acc = c.best_val_acc;
  sum.test_acc_at_best_val = c.test_acc_at_best_val;
  sum.final_loss = c.final_loss;
  sum.best_time = {c.best_epoch, c.best_train_seconds, c.best_process_seconds};
  // The time to a target is kept only for the same target (another one is looked for anew).
  if (c.target_acc == job.target_acc) sum.target_time = {c.target_epoch, c.target_train_seconds, c.target_process_seconds};
  loop.evals_since_best = c.evals_since_best;
  loop.train_offset = c.train_seconds;
  loop.process_offset = c.process_seconds;
  // A checkpoint of an older version has no best-epoch parameters: its
  // outputs can only be the last epoch's (said where the outputs are made).
  if (!c.best_tensors.empty()) loop.best_params.tensors = std::move(c.best_tensors);
  loop.first_epoch = c.epochs_done;
  loop.ev.train_acc = c.final_train_acc;
  loop.ev.val_acc = c.final_val_acc;
  loop.ev.test_acc = c.final_test_acc;
  metrics.write_text(c.metrics);
  log::info("resuming from {}: {} epochs done, {} optimizer steps", job.resume_path, c.epochs_done, c.optimizer_steps);
}

// --predict-only: one forward over every vertex.
void predict(Trainer& trainer, TrainSummary& sum) {
  const Evaluation ev = trainer.evaluate();
  sum.predicted_only = true;
  sum.final_loss = ev.loss;
  sum.final_train_acc = ev.train_acc;
  sum.final_val_acc = ev.val_acc;
  sum.final_test_acc = ev.test_acc;
}

// The first check, before the graph, partition and plan are read: the plan
// file's shape when there is one (an in-memory plan is counted at the
// second check, once built), and the store on the GPU when it may go there
// (resolve_store decides later): what is counted is never more than the run
// will hold.
void check_host_memory_early(const TrainJob& job, const TrainerOptions& topt, const GraphShape& shape,
                             const HostMemoryLimit& limit) {
  std::optional<PlanShape> plan;
  if (!job.plan_path.empty()) plan = read_plan_shape(job.plan_path);
  const bool store_may_be_on_device = job.backend == Backend::cuda && job.store != StoreChoice::host &&
                                      topt.host_dtype == StoreDtype::f32 &&
                                      (job.store == StoreChoice::device || !plan || (plan->m == 1 && plan->n == 1));
  const HostMemoryPlan p =
      check_host_memory(job, host_plan_inputs(job, topt, shape, std::move(plan), store_may_be_on_device), limit);
  log::debug("host memory before loading: {} needed of {} ({})", format_bytes(static_cast<double>(p.need)),
             format_bytes(static_cast<double>(limit.bytes)), limit.source);
}

void log_host_plan(const HostMemoryPlan& p, const HostMemoryLimit& limit) {
  HostPhaseTotal at{};
  for (const HostPhaseTotal& t : p.phases)
    if (t.phase == p.peak_phase) at = t;
  const std::string limit_text =
      limit.bytes > 0 ? format_bytes(static_cast<double>(limit.bytes)) : std::string("unknown");
  // One short line by default; with -v the items of the peak phase (a
  // 400-character line), then every item and phase.
  if (!log::enabled(log::Level::debug)) {
    log::info("host memory plan: {} at {}, of {} ({}); -v lists the items", format_bytes(static_cast<double>(p.peak)),
              host_phase_name(p.peak_phase), limit_text, limit.source);
    return;
  }
  log::debug("host memory plan: {} at {} ({}); needs {} without the mapped graph file's pages, of {} ({})",
             format_bytes(static_cast<double>(p.peak)), host_phase_name(p.peak_phase),
             host_items_text(p, p.peak_phase, at.resident, false, 4), format_bytes(static_cast<double>(p.need)),
             limit_text, limit.source);
  std::string items, phases;
  for (const HostMemoryItem& it : p.items)
    items += fmt::format("{}{} {} [{:x}]", items.empty() ? "" : "; ", it.name, format_bytes(static_cast<double>(it.bytes)),
                         it.phases);
  for (const HostPhaseTotal& t : p.phases)
    phases += fmt::format("{}{} {} (need {})", phases.empty() ? "" : ", ", host_phase_name(t.phase),
                          format_bytes(static_cast<double>(t.resident)), format_bytes(static_cast<double>(t.need)));
  log::debug("host memory plan items (phases: 1 loading, 2 renumbering, 16 packing, 4 setup, 8 training): {}; by phase: {}", items,
             phases);
}

// This process's executor: the plan's m GPUs, or with several processes its
// share of them (the job's devices rank * m / P ...), once every process is
// known to have read the same files.
std::unique_ptr<Executor> make_job_executor(const TrainJob& job, const Plan& plan, const CheckpointTarget& inputs,
                                            const ExecutorFactory& make_executor) {
  Transport* t = job.transport;
  if (!t) return make_executor(plan.m);
  const std::pair<std::string, FileIdentity> files[] = {
      {job.graph_path, inputs.graph}, {job.partition_path, inputs.partition}, {job.plan_path, inputs.plan}};
  check_same_inputs(t, files);
  const int procs = t->size();
  HT_CHECK(plan.m % procs == 0,
           "the partition has m = {} parts but the job has {} processes: m must be the job's GPU count, processes "
           "times --gpus",
           plan.m, procs);
  std::unique_ptr<Executor> exec = make_executor(plan.m / procs);
  exec->join({t, t->rank() * (plan.m / procs), plan.m});
  return exec;
}

// --outputs-from best: the trainer gets the best validation epoch's
// parameters back, and the outputs come from one more forward with them.
// That forward is exact: evaluation has no dropout and the engine's forward
// is a deterministic function of the parameters (fixed reduction orders on
// both executors), so it recomputes the logits the best epoch's evaluation
// had, bit for bit, at the cost of one evaluation; keeping that epoch's
// logits instead would copy N x C values at every improvement.
void use_output_params(const TrainJob& job, Trainer& trainer, TrainSummary& sum, const EpochLoop& loop) {
  const int last = sum.epochs - 1;
  if (job.outputs_from == OutputsFrom::last || sum.best_epoch < 0 || sum.best_epoch == last) {
    sum.outputs_from = fmt::format("last epoch {}", last);
    if (job.outputs_from == OutputsFrom::best && sum.best_epoch == last) sum.outputs_from = fmt::format("best epoch {}", last);
    return;
  }
  if (loop.best_params.tensors.empty())
    throw file_error(job.resume_path, "the checkpoint has no parameters of its best validation epoch (written by an "
                                      "older ht-train); resume with --outputs-from last");
  ModelParams p = trainer.params();
  for (size_t k = 0; k < p.tensors.size(); ++k) p.tensors[k].value = loop.best_params.tensors[k].value;
  trainer.set_params(p);
  sum.outputs_from = fmt::format("best epoch {}", sum.best_epoch);
  log::info("outputs from the best validation epoch {} (val {:.4f}, test {:.4f}); --outputs-from last for epoch {}'s",
            sum.best_epoch, sum.best_val_acc, sum.test_acc_at_best_val, last);
}

// The outputs' forward against the evaluation it recomputes: a difference
// would mean the forward is not reproducible (then the outputs are still
// the chosen parameters', but their accuracies are not the summary's).
void check_reproduced(const TrainSummary& sum, const Evaluation& again) {
  if (sum.outputs_from.rfind("best", 0) != 0) return;
  if (again.val_acc != sum.best_val_acc || again.test_acc != sum.test_acc_at_best_val)
    log::warn("the outputs' forward with the best epoch's parameters gives val {:.6f}, test {:.6f}, not the "
              "{:.6f}, {:.6f} evaluated at epoch {}",
              again.val_acc, again.test_acc, sum.best_val_acc, sum.test_acc_at_best_val, sum.best_epoch);
}

// Where setup started: its clock and the process's counters then.
struct SetupStart {
  Timer clock;
  CpuSeconds cpu = process_cpu_seconds();  // (the kernel's share of setup: issue 33)
  VmCounters vm = read_vm_counters();
};

TrainSummary train_from(const TrainJob& job, const ExecutorFactory& make_executor, std::optional<ModelNeed>& need,
                        const SetupStart& start, EarlyDevices& devices) {
  const Timer& setup = start.clock;
  const CpuSeconds& cpu_at_start = start.cpu;
  const VmCounters& vm_at_start = start.vm;
  TrainSummary sum;
  // The model and the host memory plan from the files' headers, so that a run
  // that cannot fit stops before the graph is read.
  sum.host_limit = host_memory_limit(job);
  const GraphShape shape = read_graph_shape(job.graph_path);
  SetupThreads setup_threads(shape.edges);  // (given back for the epochs)
  sum.setup_threads = setup_threads.threads();
  TrainerOptions topt = job.trainer;
  if (topt.model.dims.empty()) {
    const int h = job.hidden > 0 ? job.hidden : default_hidden(topt.model.kind);
    topt.model.dims = {shape.feature_dim, h, std::max(shape.num_classes, 1)};
  }
  check_dims(topt.model, shape, job.graph_path);
  topt.model.validate();
  check_embeddings(job, topt);
  need = model_need(job, topt, shape);
  check_model_fits(job, *need);
  check_host_memory_early(job, topt, shape, sum.host_limit);
  PhaseTimes& phases = sum.setup_phases;
  // In sequence the probe ran first, in this phase; else beside it and what follows.
  const char* first_phase = job.setup_in_sequence ? "link probe and checks" : "checks";
  phases.add(first_phase, setup.seconds());
  CpuSeconds cpu_lap = process_cpu_seconds();
  phases.set_system(first_phase, cpu_lap.system - cpu_at_start.system);
  Timer t;
  std::string last_phase = first_phase;  // the last one the devices' start ran beside
  auto lap = [&](const char* name) {
    phases.add(name, t.seconds());
    const CpuSeconds now = process_cpu_seconds();
    phases.set_system(name, now.system - cpu_lap.system);
    cpu_lap = now;
    t.reset();
    last_phase = name;
    stop_if_signalled_in_setup(job);
  };
  GraphFile gf(job.graph_path, {job.verify_checksums});
  const GraphView& g = gf.view();
  sum.has_labels = !g.labels.empty();
  lap("graph file");
  // The devices' start, waited for where first needed: what it ran beside
  // ("checks to" the phase it was waited for in, or the one before) and how
  // long this thread waited.
  std::string devices_beside;
  double devices_waited = 0;
  auto wait_for_devices = [&](const std::string& until) {
    if (devices.beside()) devices_beside = fmt::format("{} to {}", first_phase, until);
    devices_waited += devices.wait();
  };
  PhaseTimes reading;  // its parts, when read from files
  // --chunks auto on the GPUs reads their free memory: the probe's buffers
  // gone first, as in sequence (no executor is made beside it then).
  Pipeline pipe = load_or_build(job, gf, reading, [&] {
    if (job.device_memory) wait_for_devices("partition");
  });
  // Read into memory: their page cache would only stand in the store's way.
  // Dropped on a thread of its own beside the rest of setup (the future
  // waits for it when this function returns): where the plan's pages are
  // still dirty (ht-reorganize --no-sync) the kernel writes them back first,
  // 6.5 s of friendster-like's setup in session 15.
  std::future<void> dropping_plan;
  if (!job.plan_path.empty())
    dropping_plan = std::async(std::launch::async, [path = job.plan_path] { drop_file_cache(path); });
  const char* read_phase = job.plan_path.empty() ? "partition" : "partition and plan files";
  if (!job.plan_path.empty())
    for (const auto& [name, seconds] : reading.phases()) phases.add_part(read_phase, name, seconds);
  lap(read_phase);
  // A plan from files carries the topology: only the vertices' data goes to
  // new ids, and the degree weights come from the file's graph (a vertex's
  // in-edges but its self-loop do not depend on the ids): mapping every
  // edge took 2.7 s of friendster-like's setup (session 16).
  const bool topology_in_plan = !job.plan_path.empty();
  // Where no vertex changes its id (m = n = 1 in memory), the plan is built
  // on the file's own topology: a copy of every edge took 0.2-0.27 s of a
  // 1.3 s setup on community (issue 33).
  const bool ids_kept = !topology_in_plan && keeps_ids(pipe.partition);
  const bool topology_renumbered = !topology_in_plan && !ids_kept;
  HT_CHECK(g.weights.empty(), "{}: edge weights are not supported by the training engine yet", job.graph_path);
  Graph gn = topology_renumbered ? renumber_without_features(g, pipe.partition) : renumber_vertices(g, pipe.partition);
  std::vector<float> degree_weights;
  if (const ModelTraits traits = model_traits(topt.model.kind); !topology_renumbered && traits.edge_weights)
    degree_weights = in_new_ids(traits.mean_weights ? sage_inv_degree(g) : gcn_inv_sqrt_degree(g), pipe.partition);
  lap("renumbering");
  if (job.plan_path.empty()) {
    pipe.plan = build_plan(ids_kept ? g : gn.view(), pipe.partition);
    pipe.plan.graph_identity = gf.identity();
    lap("plan");
  }
  gf.drop_pages();  // read through (checksums, topology); features are read again below, in order
  const Plan& plan = pipe.plan;
  std::vector<int64_t> orig(pipe.partition.new_to_old.begin(), pipe.partition.new_to_old.end());
  // The run's files and shape (what a checkpoint must match, and what every process must have read).
  const CheckpointTarget target = checkpoint_target(job, topt, gf, plan);
  // The devices' start, waited for here (before the trainer's uploads, which
  // would disturb the probe): its executor when made for the plan's m, else
  // one made now, as in sequence.
  wait_for_devices(last_phase);
  std::unique_ptr<Executor> exec = devices.take_executor(job.transport ? 0 : plan.m);
  if (!exec) exec = make_job_executor(job, plan, target, make_executor);
  lap("executor");
  devices.report(sum, devices_beside, devices_waited);
  topt.store_on_device = resolve_store(job, topt, plan, *exec, gn.num_vertices);
  HostPlanInputs host_in = host_plan_inputs(job, topt, shape, shape_of(plan), topt.store_on_device);
  host_in.topology_renumbered = topology_renumbered;
  topt.store_beside_plans = choose_store_beside_plans(topt, host_in, sum.host_limit);
  topt.store_pages_first = job.store_pages_first;  // (only where it goes beside them)
  sum.host_plan = check_host_memory(job, host_in, sum.host_limit);
  log_host_plan(sum.host_plan, sum.host_limit);
  FeatureSource features{g, pipe.partition.new_to_old, pipe.partition.old_to_new,
                         job.normalize_features && !g.flags.features_normalized,
                         [&gf](int64_t b, int64_t e) { gf.drop_feature_rows(b, e); }};
  Trainer trainer(*exec, plan, topt, TrainerInputs{gn.view(), orig, std::move(features), [&] {
                    gn = Graph{};
                    release_step_lists(pipe.plan);
                  }, std::move(degree_weights)});
  phases.append(trainer.setup_phases());  // (its phases' system seconds its own)
  t.reset();
  cpu_lap = process_cpu_seconds();
  if (!job.load_model.empty()) {
    ModelParams p = trainer.params();
    load_model(job.load_model, topt.model, p);
    trainer.set_params(p);
  }
  const bool root = !job.transport || job.transport->rank() == 0;  // the one process that writes
  MetricsWriter metrics(root && job.write_metrics ? job.metrics_out : std::string());
  EpochLoop loop;
  if (!job.resume_path.empty()) resume(job, target, topt, trainer, metrics, sum, loop);
  if (!job.checkpoint_path.empty() && root)
    loop.checkpoint = [&](int done) {
      write_train_checkpoint(job.checkpoint_path,
                             make_checkpoint(target, topt, trainer, job, sum, loop, done, metrics));
    };
  lap("model and checkpoint");
  setup_threads.restore();
  sum.setup_seconds = setup.seconds();
  log::info("setup {:.2f} s: {}", sum.setup_seconds, phase_text(phases));
  log_setup_kernel_share(sum, cpu_at_start, vm_at_start);
  const std::string orders = layer_orders(topt.model, job.trainer.gcn_order);
  log::info("{} {} {} on {} (N = {}, E = {}): backend {}, m = {}{}, n = {}, comm {}, store {}{}{}, setup {:.2f} s",
            job.predict_only ? "predicting with" : "training", model_title(topt.model.kind),
            fmt::join(topt.model.dims, "-"), job.graph_path, g.num_vertices, g.num_edges, exec->name(), plan.m,
            job.transport ? fmt::format(" ({} processes of {})", job.transport->size(), exec->num_devices()) : "",
            plan.n, name_of(job.trainer.comm), trainer.store_on_device() ? "device" : "host",
            orders.empty() ? "" : ", layers " + orders, topt.overlap_copies ? "" : ", copies in line",
            sum.setup_seconds);

  if (job.predict_only) predict(trainer, sum);
  else {
    try {
      run_epochs(job, trainer, metrics, sum, loop);
    } catch (const DivergenceError&) {
      check_finite_features(g, job.graph_path);  // NaN features are no --lr's fault
      throw;
    }
  }
  // Several processes: the largest process's (each holds its own partitions' rows).
  sum.peak_device_bytes = max_over_processes(job.transport, exec->peak_device_bytes());
  sum.host_buffer_bytes = max_over_processes(job.transport, exec->host_bytes());
  sum.host_dtype = trainer.store_dtype();
  sum.gpu_cache_bytes = max_over_processes(job.transport, trainer.gpu_cache_held().bytes);
  sum.gpu_cache_tier_rows = max_over_processes(job.transport, trainer.gpu_cache_held().tier_rows);
  sum.gpu_cache_what = trainer.gpu_cache_held().what;
  sum.gpu_cache_saved_estimate = trainer.gpu_cache_held().saved_bytes;
  sum.peak_rss_bytes = max_over_processes(job.transport, peak_rss_bytes());
  sum.gpus = plan.m;
  sum.processes = job.transport ? job.transport->size() : 1;
  if (sum.link_measured) {
    sum.link_bound = link_lower_bound(sum.per_epoch, sum.link, plan.m, sum.epoch_ms_median * 1e-3);
    sum.link_phase_bound = link_phase_bound(sum.per_epoch, sum.forward_h2d_bytes, sum.forward_d2h_bytes, sum.link,
                                            plan.m, sum.epoch_ms_median * 1e-3);
  }

  sum.seed = topt.model.seed;
  sum.run_index = job.run_index;
  const bool outputs = !job.save_model.empty() || !job.predict_out.empty() || !job.logits_out.empty() ||
                       !job.embeddings_out.empty();
  if (outputs && !job.predict_only) use_output_params(job, trainer, sum, loop);
  const RunLabels labels{trainer.store_on_device() ? "device" : "host", dtype_name(trainer.store_dtype()),
                         topt.overlap_copies, exec->name(),
                         plan.n, name_of(job.trainer.comm), orders};
  metrics.write(summary_json(job, sum, labels));
  sum.metrics_text = metrics.text();

  // Every output is written to its temporary file first; then all are
  // renamed into place, so that a failure leaves none of them.
  std::vector<std::unique_ptr<AtomicFile>> files;
  std::unique_ptr<ContainerWriter> model;
  if (!job.timeline_out.empty() && root)
    files.push_back(write_timeline(job.timeline_out, trainer.last_timeline(), sum.epoch_ms_median));
  if (!job.save_model.empty() && root) {
    if (is_npz_path(job.save_model)) files.push_back(write_model_npz(job.save_model, topt.model, trainer.params()));
    else model = write_model(job.save_model, topt.model, trainer.params());
  }
  if (!job.predict_out.empty() || !job.logits_out.empty() || !job.embeddings_out.empty()) {
    if (!job.predict_only) {
      // (every process: the forward is the job's)
      const Evaluation again = trainer.evaluate();
      check_reproduced(sum, again);
    }
    const int64_t classes = topt.model.dims.back();
    std::vector<float> logits, embeddings;
    if (!job.predict_out.empty() || !job.logits_out.empty())
      logits = gather_held_rows(job.transport, trainer.logits(), classes, trainer.held_rows());
    const int64_t width = topt.model.out_width(job.embeddings_layer - 1);
    if (!job.embeddings_out.empty()) {
      std::vector<float> rows = trainer.layer_output(job.embeddings_layer);
      HT_CHECK(!rows.empty(), "--embeddings-out: layer {}'s output is not in the vertex store", job.embeddings_layer);
      embeddings = gather_held_rows(job.transport, std::move(rows), width, trainer.held_rows());
    }
    if (!root) return sum;
    if (!job.predict_out.empty()) files.push_back(write_predictions(job.predict_out, logits, classes, pipe.partition, g));
    if (!job.logits_out.empty()) files.push_back(write_logits_npy(job.logits_out, logits, classes, pipe.partition, g));
    if (!job.embeddings_out.empty())
      files.push_back(write_rows_npy(job.embeddings_out, embeddings, width, pipe.partition, g));
  }
  if (model) model->commit();
  for (auto& f : files) f->commit();
  metrics.commit();
  return sum;
}

// The devices start on a thread of their own (EarlyDevices) once the
// options are known to agree, before anything is read; an error of the
// setup meets the probe's first, as in sequence.
TrainSummary train(const TrainJob& job, const ExecutorFactory& make_executor, std::optional<ModelNeed>& need) {
  const SetupStart start;
  (void)process_bytes_at_start();  // before the devices' thread adds the CUDA runtime's
  check_job(job);
  // Before anything else collective: processes given other options would
  // take other steps (and wait for each other forever) or exchange rows of
  // other sizes.
  check_same_options(job.transport, options_that_must_agree(job));
  EarlyDevices devices(job, make_executor, job.setup_in_sequence);
  try {
    return train_from(job, make_executor, need, start, devices);
  } catch (...) {
    devices.rethrow_probe_error();
    throw;
  }
}

}  // namespace

// An allocation that fails once the widths are known is reported with what
// the model needs and the option that set its widths, not as a bare "out of
// memory" (the up-front check compares with the machine's memory only; a
// memory limit of the job or other processes can leave less).
TrainSummary run_train_job(const TrainJob& job, const ExecutorFactory& make_executor) {
  std::optional<ModelNeed> need;
  try {
    return train(job, make_executor, need);
  } catch (const std::bad_alloc&) {
    if (!need) throw;
    throw width_error(job, *need,
                      fmt::format("out of memory with {}, which {}; the rest of the run needs more", need->model,
                                  need->text()));
  }
}

}  // namespace ht
