#include "train/train_job.hpp"

#include <algorithm>
#include <fstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "engine/memory_plan.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_file.hpp"
#include "train/checkpoint.hpp"
#include "train/metrics.hpp"

namespace ht {
namespace {

const char* comm_name(CommMode c) {
  switch (c) {
    case CommMode::baseline: return "baseline";
    case CommMode::p2p: return "p2p";
    case CommMode::full: return "full";
  }
  return "?";
}

void normalize_rows(Graph& g) {
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    float* row = g.features.data() + v * g.feature_dim;
    double s = 0;
    for (int32_t j = 0; j < g.feature_dim; ++j) s += row[j];
    if (s != 0)
      for (int32_t j = 0; j < g.feature_dim; ++j) row[j] = static_cast<float>(row[j] / s);
  }
  g.flags.features_normalized = true;
}

// Partition and plan: from files when given, else built in memory.
struct Pipeline {
  Partition partition;
  Plan plan;
};

Pipeline load_or_build(const TrainJob& job, const GraphFile& gf) {
  Pipeline p;
  if (!job.partition_path.empty()) {
    p.partition = read_partition(job.partition_path, {job.verify_checksums});
    check_partition_matches(p.partition, gf);
  } else {
    HT_CHECK(job.plan_path.empty(), "--plan needs the --partition it was made from");
    PartitionParams params;
    params.parts = job.parts;
    params.chunks = job.chunks;
    params.method = job.parts > 1 ? PartitionMethod::metis : PartitionMethod::range;
    PartitionRunInfo info;
    log::info("partitioning in memory: m = {}, n = {} ({})", job.parts, job.chunks,
              job.parts > 1 ? "METIS" : "range");
    p.partition = make_partition(gf.view(), gf.identity(), params, info);
  }
  if (!job.plan_path.empty()) {
    p.plan = read_plan(job.plan_path, {job.verify_checksums});
    check_plan_matches(p.plan, gf.identity(), read_identity(job.partition_path));
  }
  return p;
}

void write_predictions(const std::string& path, const std::vector<float>& logits, int64_t classes,
                       const Partition& part, const GraphView& g) {
  std::vector<int32_t> pred(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    const float* z = logits.data() + v * classes;
    pred[part.new_to_old[v]] = static_cast<int32_t>(std::max_element(z, z + classes) - z);
  }
  std::string out = "id,prediction\n";
  for (int64_t old = 0; old < g.num_vertices; ++old)
    out += fmt::format("{},{}\n", g.orig_ids.empty() ? old : g.orig_ids[old], pred[old]);
  write_text_file_atomic(path, out);
}

// --store auto keeps the vertex store on the GPU when there is one GPU and one
// chunk and store + plan fit in its memory; host otherwise.
bool resolve_store(const TrainJob& job, const TrainerOptions& opt, const Plan& plan, const Executor& exec,
                   int64_t num_vertices) {
  if (job.store == StoreChoice::host || !exec.has_device_memory()) return false;
  if (job.store == StoreChoice::device) return true;
  if (plan.m != 1 || plan.n != 1) return false;
  DeviceMemoryNeed need = device_memory_need(plan, 0, opt);
  need.fixed_bytes += vertex_store_bytes(opt.model, opt.gcn_order, num_vertices);
  const bool fits = exec.memory_limit(0) <= 0 || need.total() <= exec.memory_limit(0);
  if (!fits) log::info("vertex store kept in host memory: it does not fit next to the plan on the GPU");
  return fits;
}

// One object per busy interval of the last training epoch, in milliseconds
// since its start: which device and queue, what kind of work.
void write_timeline(const std::string& path, const std::vector<BusyInterval>& intervals, double median_epoch_ms) {
  static const char* queue[] = {"compute", "load", "store", "host"};
  static const char* kind[] = {"compute", "h2d", "d2h", "d2d", "host"};
  JsonWriter w;
  w.begin_object().field("median_epoch_ms", median_epoch_ms).key("intervals").begin_array();
  for (const BusyInterval& b : intervals) {
    w.begin_object().field("device", b.device).field("queue", queue[static_cast<int>(b.queue)]);
    w.field("kind", kind[static_cast<int>(b.kind)]).field("begin_ms", b.begin * 1e3).field("end_ms", b.end * 1e3);
    w.end_object();
  }
  w.end_array().end_object();
  write_text_file_atomic(path, w.str() + "\n");
}

JsonWriter& counters_json(JsonWriter& w, const LinkCounters& c) {
  w.field("h2d_bytes", c.h2d_bytes).field("d2h_bytes", c.d2h_bytes).field("p2p_bytes", c.p2p_bytes);
  w.field("reuse_bytes", c.reuse_bytes).field("h2d_rows", c.h2d_rows).field("p2p_rows", c.p2p_rows);
  w.field("reuse_rows", c.reuse_rows).field("d2h_rows", c.d2h_rows);
  return w;
}

LinkCounters diff(const LinkCounters& a, const LinkCounters& b) {
  return {a.h2d_bytes - b.h2d_bytes, a.d2h_bytes - b.d2h_bytes, a.p2p_bytes - b.p2p_bytes,
          a.reuse_bytes - b.reuse_bytes, a.h2d_rows - b.h2d_rows, a.d2h_rows - b.d2h_rows,
          a.p2p_rows - b.p2p_rows, a.reuse_rows - b.reuse_rows};
}

// The probe runs before the executor exists, so that its buffers cannot
// collide with the executor's pools; it counts as setup (a run waits for it).
void probe_link(const TrainJob& job, TrainSummary& sum) {
  if (!job.probe_link) return;
  const Timer t;
  sum.link = job.probe_link();
  sum.link_measured = true;
  sum.link_probe_seconds = t.seconds();
  log::info("host link of GPU 0: H2D {:.1f} GB/s, D2H {:.1f} GB/s (pinned copies; probe took {:.0f} ms)",
            sum.link.h2d_bytes_per_s / 1e9, sum.link.d2h_bytes_per_s / 1e9, sum.link_probe_seconds * 1e3);
}

// Per-epoch series over the timed epochs (after warm-up), in ms.
struct EpochSeries {
  std::vector<double> epoch, h2d, d2d, compute, cpu, eval;
  std::vector<ExposedTimes> exposed;

  void add(const EpochResult& r) {
    epoch.push_back(r.seconds * 1e3);
    h2d.push_back(r.t_h2d * 1e3);
    d2d.push_back(r.t_d2d * 1e3);
    compute.push_back(r.t_compute * 1e3);
    cpu.push_back(r.t_cpu * 1e3);
    exposed.push_back(exposed_ms(r));
  }
};

JsonWriter& exposed_json(JsonWriter& w, const ExposedTimes& ms, std::string_view suffix) {
  auto key = [&](std::string_view name) { return fmt::format("x_{}_ms{}", name, suffix); };
  w.field(key("compute"), ms.compute).field(key("h2d"), ms.h2d).field(key("d2h"), ms.d2h);
  return w.field(key("host"), ms.host).field(key("idle"), ms.idle);
}

// `ev` is null on epochs without evaluation (`eval_ms` is then not written).
JsonWriter epoch_json(int e, const EpochResult& r, const Evaluation* ev, double eval_ms, const LinkCounters& moved) {
  JsonWriter w;
  w.begin_object().field("type", "epoch").field("epoch", e).field("loss", r.loss);
  if (ev) w.field("train_acc", ev->train_acc).field("val_acc", ev->val_acc).field("test_acc", ev->test_acc);
  w.field("epoch_ms", r.seconds * 1e3).field("h2d_ms", r.t_h2d * 1e3).field("d2d_ms", r.t_d2d * 1e3);
  w.field("compute_ms", r.t_compute * 1e3).field("cpu_ms", r.t_cpu * 1e3);
  exposed_json(w, exposed_ms(r), "");
  if (ev) w.field("eval_ms", eval_ms);
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
}

// The training epochs with periodic evaluation: one metrics line per epoch,
// accuracies and the medians over the timed epochs into `sum`.
void run_epochs(const TrainJob& job, Trainer& trainer, MetricsWriter& metrics, TrainSummary& sum) {
  EpochSeries series;
  sum.warmup_used = std::min(job.warmup, job.epochs - 1);
  Evaluation ev;
  for (int e = 0; e < job.epochs; ++e) {
    const LinkCounters before = trainer.counters();
    const EpochResult r = trainer.train_epoch(e);
    // Read before evaluating: evaluation traffic is not an epoch's.
    const LinkCounters moved = diff(trainer.counters(), before);
    const bool timed = e >= sum.warmup_used;
    if (timed) {
      series.add(r);
      sum.per_epoch = moved;
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
      if (sum.best_epoch < 0 || ev.val_acc > sum.best_val_acc) {
        sum.best_epoch = e;
        sum.best_val_acc = ev.val_acc;
        sum.test_acc_at_best_val = ev.test_acc;
      }
      log::info("epoch {:4d} | loss {:.4f} | acc train {:.4f} val {:.4f} test {:.4f} | {:.1f} ms (eval {:.1f} ms)", e,
                r.loss, ev.train_acc, ev.val_acc, ev.test_acc, r.seconds * 1e3, eval_ms);
    }
    metrics.write(epoch_json(e, r, eval_now ? &ev : nullptr, eval_ms, moved));
    sum.final_loss = r.loss;
  }
  sum.epochs = job.epochs;
  sum.final_train_acc = ev.train_acc;
  sum.final_val_acc = ev.val_acc;
  sum.final_test_acc = ev.test_acc;
  sum.epoch_ms_median = median_of(series.epoch);
  sum.h2d_ms_median = median_of(series.h2d);
  sum.d2d_ms_median = median_of(series.d2d);
  sum.compute_ms_median = median_of(series.compute);
  sum.cpu_ms_median = median_of(series.cpu);
  sum.exposed_ms_median = median_exposed(series.exposed);
  sum.eval_ms_median = median_of(series.eval);
  sum.evaluations_timed = static_cast<int>(series.eval.size());
}

// What the run was, for the summary line of the metrics file.
struct RunLabels {
  const char* store;
  bool overlap;
  std::string backend;
  int chunks;
  const char* comm;
  std::string gcn_order;  // empty for GAT
};

JsonWriter summary_json(const TrainSummary& sum, const RunLabels& run) {
  JsonWriter w;
  w.begin_object().field("type", "summary").field("epochs", sum.epochs).field("best_epoch", sum.best_epoch);
  w.field("best_val_acc", sum.best_val_acc).field("test_acc_at_best_val", sum.test_acc_at_best_val);
  w.field("final_loss", sum.final_loss).field("final_test_acc", sum.final_test_acc);
  w.field("epoch_ms_median", sum.epoch_ms_median).field("h2d_ms_median", sum.h2d_ms_median);
  w.field("d2d_ms_median", sum.d2d_ms_median).field("compute_ms_median", sum.compute_ms_median);
  w.field("cpu_ms_median", sum.cpu_ms_median);
  exposed_json(w, sum.exposed_ms_median, "_median");
  w.field("eval_ms_median", sum.eval_ms_median).field("evaluations_timed", sum.evaluations_timed);
  counters_json(w, sum.per_epoch);
  w.field("peak_device_bytes", sum.peak_device_bytes).field("host_buffer_bytes", sum.host_buffer_bytes);
  w.field("peak_rss_bytes", sum.peak_rss_bytes).field("setup_seconds", sum.setup_seconds);
  w.field("setup_over_epoch", sum.epoch_ms_median > 0 ? sum.setup_seconds * 1e3 / sum.epoch_ms_median : 0.0);
  link_json(w, sum);
  w.field("store", run.store).field("overlap", run.overlap).field("backend", run.backend);
  w.field("gpus", sum.gpus).field("chunks", run.chunks).field("comm", run.comm);
  if (!run.gcn_order.empty()) w.field("gcn_order", run.gcn_order);
  w.end_object();
  return w;
}

}  // namespace

TrainSummary run_train_job(const TrainJob& job, const ExecutorFactory& make_executor) {
  Timer setup;
  TrainSummary sum;
  HT_CHECK(job.epochs >= 1, "--epochs must be >= 1");
  HT_CHECK(job.eval_every >= 1, "--eval-every must be >= 1");
  probe_link(job, sum);
  GraphFile gf(job.graph_path, {job.verify_checksums});
  const GraphView& g = gf.view();
  TrainerOptions topt = job.trainer;
  if (topt.model.dims.empty()) {
    const int h = job.hidden > 0 ? job.hidden : (topt.model.kind == ModelKind::gcn ? 16 : 8);
    topt.model.dims = {g.feature_dim, h, std::max(g.num_classes, 1)};
  }
  topt.model.validate();
  Pipeline pipe = load_or_build(job, gf);
  Graph gn = renumber(g, pipe.partition);
  if (job.normalize_features && !g.flags.features_normalized) normalize_rows(gn);
  if (job.plan_path.empty()) {
    pipe.plan = build_plan(gn.view(), pipe.partition);
    pipe.plan.graph_identity = gf.identity();
  }
  const Plan& plan = pipe.plan;
  std::vector<int64_t> orig(pipe.partition.new_to_old.begin(), pipe.partition.new_to_old.end());
  std::unique_ptr<Executor> exec = make_executor(plan.m);
  topt.store_on_device = resolve_store(job, topt, plan, *exec, gn.num_vertices);
  Trainer trainer(*exec, gn.view(), orig, plan, topt);
  if (!job.load_model.empty()) {
    ModelParams p = trainer.params();
    load_model(job.load_model, topt.model, p);
    trainer.set_params(p);
  }
  MetricsWriter metrics(job.metrics_out);
  sum.setup_seconds = setup.seconds();
  const std::string orders = layer_orders(topt.model, job.trainer.gcn_order);
  log::info("training {} {} on {} (N = {}, E = {}): backend {}, m = {}, n = {}, comm {}, store {}{}{}, setup {:.2f} s",
            topt.model.kind == ModelKind::gcn ? "GCN" : "GAT",
            fmt::join(topt.model.dims, "-"), job.graph_path, g.num_vertices, g.num_edges, exec->name(), plan.m,
            plan.n, comm_name(job.trainer.comm), trainer.store_on_device() ? "device" : "host",
            orders.empty() ? "" : ", layers " + orders, topt.overlap_copies ? "" : ", copies in line",
            sum.setup_seconds);

  run_epochs(job, trainer, metrics, sum);
  sum.peak_device_bytes = exec->peak_device_bytes();
  sum.host_buffer_bytes = exec->host_bytes();
  sum.peak_rss_bytes = peak_rss_bytes();
  sum.gpus = plan.m;
  if (sum.link_measured)
    sum.link_bound = link_lower_bound(sum.per_epoch, sum.link, plan.m, sum.epoch_ms_median * 1e-3);

  const RunLabels labels{trainer.store_on_device() ? "device" : "host", topt.overlap_copies, exec->name(),
                         plan.n, comm_name(job.trainer.comm), orders};
  metrics.write(summary_json(sum, labels));

  if (!job.timeline_out.empty()) write_timeline(job.timeline_out, trainer.last_timeline(), sum.epoch_ms_median);
  if (!job.save_model.empty()) save_model(job.save_model, topt.model, trainer.params());
  if (!job.predict_out.empty()) {
    trainer.evaluate();
    write_predictions(job.predict_out, trainer.logits(), topt.model.dims.back(), pipe.partition, g);
  }
  metrics.commit();
  return sum;
}

}  // namespace ht
