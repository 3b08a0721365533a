#include "train/train_runs.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json.hpp"
#include "core/log.hpp"
#include "train/metrics.hpp"

namespace ht {

MeanStd mean_std(std::span<const double> values) {
  MeanStd r;
  if (values.empty()) return r;
  double sum = 0;
  for (double v : values) sum += v;
  r.mean = sum / static_cast<double>(values.size());
  if (values.size() < 2) return r;
  double sq = 0;
  for (double v : values) sq += (v - r.mean) * (v - r.mean);
  r.std = std::sqrt(sq / static_cast<double>(values.size() - 1));
  return r;
}

namespace {

void refuse_single_run_outputs(const TrainJob& job, int runs) {
  for (const auto& [path, option] :
       {std::pair{job.save_model, "--save-model"}, {job.predict_out, "--predict-out"}, {job.logits_out, "--logits-out"}, {job.embeddings_out, "--embeddings-out"},
        {job.checkpoint_path, "--checkpoint"}, {job.resume_path, "--resume"}, {job.timeline_out, "--timeline-out"},
        {job.load_model, "--load-model"}})
    if (!path.empty())
      throw option_error(option, fmt::format("not with --runs {} (it holds one run's state; train that run alone "
                                             "with its --seed)",
                                             runs));
  if (job.predict_only) throw option_error("--runs", "not with --predict-only (no training)");
}

JsonWriter mean_std_json(JsonWriter& w, std::string_view name, const MeanStd& m) {
  return w.field(fmt::format("{}_mean", name), m.mean).field(fmt::format("{}_std", name), m.std);
}

JsonWriter runs_json(const RunsSummary& r) {
  JsonWriter w;
  w.begin_object().field("type", "runs").field("runs", static_cast<int>(r.runs.size()));
  mean_std_json(w, "test_acc_at_best_val", r.test_acc);
  mean_std_json(w, "best_train_seconds", r.best_train_seconds);
  mean_std_json(w, "best_process_seconds", r.best_process_seconds);
  w.field("target_reached", r.target_reached);
  mean_std_json(w, "target_train_seconds", r.target_train_seconds);
  w.key("per_run").begin_array();
  for (const TrainSummary& s : r.runs) {
    w.begin_object().field("run", s.run_index).field("seed", s.seed).field("epochs", s.epochs);
    w.field("stop_reason", s.stop_reason).field("best_epoch", s.best_epoch).field("best_val_acc", s.best_val_acc);
    w.field("test_acc_at_best_val", s.test_acc_at_best_val);
    w.field("best_train_seconds", s.best_time.train_seconds).field("best_process_seconds", s.best_time.process_seconds);
    w.key("target_train_seconds");
    if (s.target_time.epoch >= 0) w.value(s.target_time.train_seconds);
    else w.null();
    w.field("epoch_ms_median", s.epoch_ms_median).end_object();
  }
  w.end_array().end_object();
  return w;
}

}  // namespace

RunsSummary run_train_runs(const TrainJob& job, int runs, const ExecutorFactory& make_executor) {
  HT_CHECK(runs >= 1, "--runs must be >= 1");
  RunsSummary out;
  if (runs == 1) {
    out.runs.push_back(run_train_job(job, make_executor));
  } else {
    refuse_single_run_outputs(job, runs);
    for (int k = 0; k < runs; ++k) {
      TrainJob j = job;
      j.write_metrics = false;  // the lines are collected, written once all runs are done
      j.run_index = k;
      j.trainer.model.seed = job.trainer.model.seed + static_cast<uint64_t>(k);
      log::info("run {} of {}: seed {}", k + 1, runs, j.trainer.model.seed);
      out.runs.push_back(run_train_job(j, make_executor));
      log::info("{}", run_line(out.runs.back()));
    }
  }
  std::vector<double> acc, best_train, best_process, target;
  for (const TrainSummary& s : out.runs) {
    acc.push_back(s.test_acc_at_best_val);
    best_train.push_back(s.best_time.train_seconds);
    best_process.push_back(s.best_time.process_seconds);
    if (s.target_time.epoch >= 0) target.push_back(s.target_time.train_seconds);
  }
  out.test_acc = mean_std(acc);
  out.best_train_seconds = mean_std(best_train);
  out.best_process_seconds = mean_std(best_process);
  out.target_reached = static_cast<int>(target.size());
  out.target_train_seconds = mean_std(target);
  const bool root = !job.transport || job.transport->rank() == 0;
  if (runs > 1 && root && !job.metrics_out.empty()) {
    MetricsWriter metrics(job.metrics_out);
    for (const TrainSummary& s : out.runs) metrics.write_text(s.metrics_text);
    metrics.write(runs_json(out));
    metrics.commit();
  }
  return out;
}

std::string run_line(const TrainSummary& s) {
  std::string line = fmt::format("run {} (seed {}): best validation {:.4f} at epoch {}, test {:.4f}, {:.2f} s to it "
                                 "(train), {:.2f} s (process); {} epochs, stopped: {}",
                                 s.run_index, s.seed, s.best_val_acc, s.best_epoch, s.test_acc_at_best_val,
                                 s.best_time.train_seconds, s.best_time.process_seconds, s.epochs, s.stop_reason);
  if (s.target_time.epoch >= 0)
    line += fmt::format("; target at epoch {}, {:.2f} s (train)", s.target_time.epoch, s.target_time.train_seconds);
  return line;
}

std::string runs_line(const RunsSummary& r) {
  std::string line = fmt::format("{} runs: test accuracy at best validation {:.4f} ± {:.4f}; time to it {:.2f} ± {:.2f} s "
                                 "(train), {:.2f} ± {:.2f} s (process)",
                                 r.runs.size(), r.test_acc.mean, r.test_acc.std, r.best_train_seconds.mean,
                                 r.best_train_seconds.std, r.best_process_seconds.mean, r.best_process_seconds.std);
  if (r.target_reached > 0)
    line += fmt::format("; target reached in {} of {} runs, {:.2f} ± {:.2f} s (train)", r.target_reached, r.runs.size(),
                        r.target_train_seconds.mean, r.target_train_seconds.std);
  return line;
}

}  // namespace ht
