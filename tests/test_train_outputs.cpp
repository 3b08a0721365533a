// What a training run reports and writes about its best epoch (issues 34 and
// 36), at the library level on the CPU executor: outputs from the best
// validation epoch score exactly the summary's test accuracy; --early-stop
// and --target-acc stop where they say, with the times to the best epoch and
// to the target, and survive an interruption and --resume; --runs K reports
// mean and standard deviation over K seeds; --save-model FILE.npz holds the
// HTMODEL file's parameters; the metrics summary records the run's
// provenance (options, version, commit, start time, host).
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/file_io.hpp"
#include "core/signals.hpp"
#include "core/version.hpp"
#include "datasets/generators.hpp"
#include "datasets/npz.hpp"
#include "engine/cpu_executor.hpp"
#include "graph/graph_file.hpp"
#include "graph/types.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/model_npz.hpp"
#include "train/train_checkpoint.hpp"
#include "train/train_job.hpp"
#include "train/train_runs.hpp"

namespace ht {
namespace {

class TrainOutputs : public ::testing::Test {
 public:
  void SetUp() override {
    gen::CommunityParams p;
    p.num_vertices = 400;
    p.num_classes = 4;
    p.feature_dim = 8;
    p.avg_degree = 5;
    p.seed = 11;
    write_graph(graph_path(), gen::community_graph(p).view());
  }
  std::string graph_path() const { return dir.file("g.htg"); }

  // Two emulated GPUs, two chunks, dropout and a high learning rate: the
  // validation accuracy goes up and down, so the best epoch is not the last.
  TrainJob job(int epochs) const {
    TrainJob j;
    j.graph_path = graph_path();
    j.parts = 2;
    j.chunks = 2;
    j.epochs = epochs;
    j.warmup = 0;
    j.trainer.model.dropout = 0.5f;
    j.trainer.optimizer.lr = 0.05f;
    return j;
  }
  static TrainSummary run(const TrainJob& j) {
    return run_train_job(j, [](int m) { return std::make_unique<CpuExecutor>(m); });
  }
  static RunsSummary runs(const TrainJob& j, int k) {
    return run_train_runs(j, k, [](int m) { return std::make_unique<CpuExecutor>(m); });
  }

  // Test accuracy of a predictions CSV against the graph file's labels and split.
  double test_accuracy(const std::string& csv) const {
    GraphFile gf(graph_path());
    const GraphView& g = gf.view();
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "id,prediction");
    int64_t correct = 0, count = 0, rows = 0;
    while (std::getline(in, line)) {
      const size_t comma = line.find(',');
      const int64_t id = std::stoll(line.substr(0, comma));
      const int pred = std::stoi(line.substr(comma + 1));
      ++rows;
      if (g.split[id] != static_cast<uint8_t>(Split::test) || g.labels[id] < 0) continue;
      ++count;
      correct += pred == g.labels[id];
    }
    EXPECT_EQ(rows, g.num_vertices);
    EXPECT_GT(count, 0);
    return count ? static_cast<double>(correct) / count : 0.0;
  }

  // The JSON lines of a metrics file whose "type" is `type`.
  static std::vector<std::string> lines_of(const std::string& path, const std::string& type) {
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (line.find("\"type\":\"" + type + "\"") != std::string::npos) out.push_back(line);
    return out;
  }
  // The number after "key": in a JSON line (NaN when absent or null).
  static double number(const std::string& line, const std::string& key) {
    const size_t at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return std::nan("");
    const std::string rest = line.substr(at + key.size() + 3);
    if (rest.rfind("null", 0) == 0) return std::nan("");
    return std::stod(rest);
  }

  test::TempDir dir;
};

TEST_F(TrainOutputs, BestEpochPredictionsScoreTheSummarysTestAccuracy) {
  TrainJob j = job(30);
  j.predict_out = dir.file("best.csv");
  j.logits_out = dir.file("best.npy");
  j.save_model = dir.file("best.model");
  const TrainSummary best = run(j);
  ASSERT_GE(best.best_epoch, 0);
  ASSERT_LT(best.best_epoch, best.epochs - 1) << "the test needs a best epoch before the last";
  EXPECT_EQ(best.outputs_from, "best epoch " + std::to_string(best.best_epoch));
  // Exactly: the predictions are the best epoch's evaluation, recomputed.
  EXPECT_EQ(test_accuracy(j.predict_out), best.test_acc_at_best_val);
  EXPECT_NE(best.test_acc_at_best_val, best.final_test_acc) << "pick a run whose last epoch scores otherwise";

  TrainJob last = job(30);
  last.outputs_from = OutputsFrom::last;
  last.predict_out = dir.file("last.csv");
  last.save_model = dir.file("last.model");
  const TrainSummary l = run(last);
  EXPECT_EQ(l.outputs_from, "last epoch 29");
  EXPECT_EQ(test_accuracy(last.predict_out), l.final_test_acc);
  EXPECT_EQ(l.best_epoch, best.best_epoch);

  // The saved model is the best epoch's: predicting from it gives the same bytes.
  TrainJob p = job(30);
  p.predict_only = true;
  p.load_model = j.save_model;
  p.predict_out = dir.file("p.csv");
  p.logits_out = dir.file("p.npy");
  run(p);
  EXPECT_EQ(test::read_bytes(p.predict_out), test::read_bytes(j.predict_out));
  EXPECT_EQ(test::read_bytes(p.logits_out), test::read_bytes(j.logits_out));
}

TEST_F(TrainOutputs, EarlyStopAfterPatienceEvaluations) {
  for (int every : {1, 2}) {
    SCOPED_TRACE(every);
    TrainJob j = job(300);
    j.eval_every = every;
    j.early_stop = 3;
    j.metrics_out = dir.file("m.jsonl");
    const TrainSummary s = run(j);
    ASSERT_LT(s.epochs, 300) << "no early stop";
    EXPECT_EQ(s.epochs, s.best_epoch + 1 + 3 * every);
    EXPECT_EQ(s.epochs_planned, 300);
    EXPECT_EQ(s.stop_reason, "early stop (patience 3)");
    EXPECT_EQ(lines_of(j.metrics_out, "epoch").size(), static_cast<size_t>(s.epochs));
    EXPECT_GT(s.best_time.train_seconds, 0);
    EXPECT_LE(s.best_time.train_seconds, s.train_seconds);
    // The process clock (/proc: 10 ms ticks) started before training did.
    EXPECT_GT(s.best_time.process_seconds + 0.011, s.best_time.train_seconds);
    EXPECT_EQ(s.best_time.epoch, s.best_epoch);
    const std::string summary = lines_of(j.metrics_out, "summary").at(0);
    EXPECT_EQ(number(summary, "best_epoch"), s.best_epoch);
    EXPECT_EQ(number(summary, "best_train_seconds"), s.best_time.train_seconds);
    EXPECT_TRUE(std::isnan(number(summary, "target_train_seconds")));
  }
}

// --time-limit: the first evaluation at or past the limit ends the run (the
// epochs between evaluations run to it), with the summary and the metrics a
// signal would not leave; setup is not counted.
TEST_F(TrainOutputs, TimeLimitStopsAtTheFirstEvaluationPastIt) {
  TrainJob j = job(300);
  j.time_limit = 1e-9;  // past at the first evaluation, whatever the machine
  j.eval_every = 3;
  j.metrics_out = dir.file("m.jsonl");
  const TrainSummary s = run(j);
  EXPECT_EQ(s.epochs, 3);
  EXPECT_EQ(s.stop_reason, "time limit 1e-09 s");
  EXPECT_EQ(lines_of(j.metrics_out, "epoch").size(), 3u);
  const std::string summary = lines_of(j.metrics_out, "summary").at(0);
  EXPECT_EQ(number(summary, "time_limit"), 1e-9);
  // Off (0): the epochs run out.
  TrainJob off = job(4);
  const TrainSummary all = run(off);
  EXPECT_EQ(all.epochs, 4);
  EXPECT_EQ(all.stop_reason, "epochs");
}

TEST_F(TrainOutputs, TargetAccuracyStopsAtTheFirstEvaluationReachingIt) {
  TrainJob j = job(300);
  j.target_acc = 0.6;
  j.metrics_out = dir.file("m.jsonl");
  const TrainSummary s = run(j);
  ASSERT_GE(s.target_time.epoch, 0) << "target not reached";
  EXPECT_EQ(s.target_time.epoch, s.epochs - 1);
  EXPECT_EQ(s.stop_reason, "target accuracy 0.6 reached");
  const std::vector<std::string> epochs = lines_of(j.metrics_out, "epoch");
  ASSERT_EQ(epochs.size(), static_cast<size_t>(s.epochs));
  for (size_t e = 0; e + 1 < epochs.size(); ++e) EXPECT_LT(number(epochs[e], "val_acc"), 0.6) << e;
  EXPECT_GE(number(epochs.back(), "val_acc"), 0.6);
  EXPECT_LE(number(epochs.back(), "train_seconds"), s.train_seconds);
  EXPECT_LE(s.target_time.train_seconds, s.train_seconds);
  EXPECT_GT(s.target_time.train_seconds, 0);
  // The epoch lines' clocks go forward (accuracy against wall time).
  for (size_t e = 1; e < epochs.size(); ++e)
    EXPECT_GT(number(epochs[e], "train_seconds"), number(epochs[e - 1], "train_seconds"));
  const std::string summary = lines_of(j.metrics_out, "summary").at(0);
  EXPECT_EQ(number(summary, "target_epoch"), s.target_time.epoch);
  EXPECT_EQ(number(summary, "target_acc"), 0.6);

  // Resumed from the checkpoint of the stop: the same target trains no more;
  // a higher one is looked for anew.
  j.checkpoint_path = dir.file("ck");
  j.metrics_out.clear();
  run(j);
  TrainJob same = j;
  same.resume_path = j.checkpoint_path;
  same.checkpoint_path.clear();
  const TrainSummary again = run(same);
  EXPECT_EQ(again.epochs, s.epochs);
  EXPECT_EQ(again.target_time.epoch, s.target_time.epoch);
  TrainJob higher = same;
  higher.target_acc = 0.7;
  const TrainSummary h = run(higher);
  EXPECT_GT(h.epochs, s.epochs);
  ASSERT_GE(h.target_time.epoch, 0) << "the higher target is not reached";
  EXPECT_EQ(h.target_time.epoch, h.epochs - 1);
  EXPECT_GT(h.target_time.epoch, s.target_time.epoch);
}

// Early stopping across an interruption: the resumed run stops at the same
// epoch with the same best epoch and the same outputs; a checkpoint written
// at the stop resumes to no further epoch.
TEST_F(TrainOutputs, EarlyStopSurvivesResume) {
  TrainJob full = job(300);
  full.early_stop = 4;
  full.predict_out = dir.file("full.csv");
  full.metrics_out = dir.file("full.jsonl");
  const TrainSummary a = run(full);
  ASSERT_LT(a.epochs, 300);
  ASSERT_GT(a.epochs, 4);

  TrainJob first = job(300);
  first.early_stop = 4;
  first.checkpoint_path = dir.file("ck");
  int polls = 0;
  first.stop_requested = [&] { return ++polls == a.epochs - 2 ? SIGTERM : 0; };
  EXPECT_THROW(run(first), signals::Interrupted);
  EXPECT_EQ(read_train_checkpoint(first.checkpoint_path).epochs_done, a.epochs - 2);
  EXPECT_FALSE(read_train_checkpoint(first.checkpoint_path).best_tensors.empty());

  TrainJob second = job(300);
  second.early_stop = 4;
  second.resume_path = second.checkpoint_path = first.checkpoint_path;
  second.predict_out = dir.file("resumed.csv");
  second.metrics_out = dir.file("resumed.jsonl");
  const TrainSummary b = run(second);
  EXPECT_EQ(b.epochs, a.epochs);
  EXPECT_EQ(b.best_epoch, a.best_epoch);
  EXPECT_EQ(b.test_acc_at_best_val, a.test_acc_at_best_val);
  EXPECT_EQ(b.stop_reason, a.stop_reason);
  EXPECT_EQ(test::read_bytes(full.predict_out), test::read_bytes(second.predict_out));
  EXPECT_EQ(lines_of(second.metrics_out, "epoch").size(), static_cast<size_t>(a.epochs));
  EXPECT_GE(b.train_seconds, read_train_checkpoint(first.checkpoint_path).train_seconds);

  // Resuming the checkpoint of the stop trains nothing more.
  TrainJob third = job(300);
  third.early_stop = 4;
  third.resume_path = second.checkpoint_path;
  third.predict_out = dir.file("again.csv");
  const TrainSummary c = run(third);
  EXPECT_EQ(c.epochs, a.epochs);
  EXPECT_EQ(c.best_epoch, a.best_epoch);
  EXPECT_EQ(c.best_time.train_seconds, b.best_time.train_seconds);
  EXPECT_EQ(test::read_bytes(third.predict_out), test::read_bytes(full.predict_out));
}

TEST_F(TrainOutputs, MeanAndSampleStandardDeviation) {
  const std::vector<double> v{0.5, 0.7, 0.9};
  const MeanStd m = mean_std(v);
  EXPECT_DOUBLE_EQ(m.mean, 0.7);
  EXPECT_DOUBLE_EQ(m.std, 0.2);  // sqrt((0.04 + 0 + 0.04) / 2)
  EXPECT_EQ(mean_std(std::vector<double>{0.3}).std, 0.0);
  EXPECT_EQ(mean_std(std::vector<double>{}).mean, 0.0);
}

TEST_F(TrainOutputs, RunsUseConsecutiveSeedsAndReportMeanAndStd) {
  TrainJob j = job(6);
  j.trainer.model.seed = 7;
  j.metrics_out = dir.file("runs.jsonl");
  const RunsSummary r = runs(j, 3);
  ASSERT_EQ(r.runs.size(), 3u);
  std::vector<double> acc;
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(r.runs[k].seed, 7u + k);
    EXPECT_EQ(r.runs[k].run_index, k);
    acc.push_back(r.runs[k].test_acc_at_best_val);
  }
  EXPECT_EQ(r.test_acc.mean, mean_std(acc).mean);
  EXPECT_EQ(r.test_acc.std, mean_std(acc).std);
  // Each run equals the single run of its seed.
  TrainJob one = job(6);
  one.trainer.model.seed = 8;
  EXPECT_EQ(run(one).test_acc_at_best_val, r.runs[1].test_acc_at_best_val);
  EXPECT_EQ(lines_of(j.metrics_out, "epoch").size(), 18u);
  const std::vector<std::string> summaries = lines_of(j.metrics_out, "summary");
  ASSERT_EQ(summaries.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(number(summaries[k], "run"), k);
  const std::vector<std::string> rec = lines_of(j.metrics_out, "runs");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(number(rec[0], "test_acc_at_best_val_mean"), r.test_acc.mean);
  EXPECT_EQ(number(rec[0], "test_acc_at_best_val_std"), r.test_acc.std);
  EXPECT_NE(rec[0].find("\"per_run\":["), std::string::npos);

  j.save_model = dir.file("m.model");
  const std::string e = test::error_of([&] { runs(j, 2); });
  EXPECT_NE(e.find("--save-model: not with --runs 2"), std::string::npos) << e;
}

TEST_F(TrainOutputs, NpzModelHoldsTheHtmodelParameters) {
  TrainJob j = job(4);
  j.trainer.model.kind = ModelKind::gat;
  j.trainer.model.heads = 2;
  j.save_model = dir.file("m.npz");
  run(j);
  TrainJob h = j;
  h.save_model = dir.file("m.model");
  run(h);
  ModelConfig cfg = j.trainer.model;
  cfg.dims = {8, 8, 4};  // GAT: hidden 8 per head by default
  ModelParams p = init_params(cfg);
  load_model(h.save_model, cfg, p);
  const data::NpzArchive z(j.save_model);
  ASSERT_EQ(z.keys().size(), p.tensors.size() + 1);
  for (size_t k = 0; k < p.tensors.size(); ++k) {
    const ParamTensor& t = p.tensors[k];
    ASSERT_EQ(z.keys()[k], t.name);
    const data::NpyArray a = z.array(t.name);
    EXPECT_EQ(a.rows(), t.rows);
    EXPECT_EQ(a.cols(), t.cols);
    EXPECT_EQ(a.to_float32(), t.value) << t.name;
  }
  EXPECT_EQ(z.keys().back(), "config");
  const std::string config = model_config_json(cfg, p);
  EXPECT_NE(config.find("\"model\":\"gat\""), std::string::npos) << config;
  EXPECT_NE(config.find("\"dims\":[8,8,4]"), std::string::npos) << config;
  EXPECT_NE(config.find("\"activations\":[\"elu\",\"none\"]"), std::string::npos) << config;
  // Two saves of one model are the same bytes (fixed zip time stamps).
  run(j);
  const std::vector<char> again = test::read_bytes(j.save_model);
  run(j);
  EXPECT_EQ(test::read_bytes(j.save_model), again);
  // The CRC of the zip members: the standard check value.
  const std::string nine = "123456789";
  EXPECT_EQ(crc32_ieee(std::as_bytes(std::span(nine.data(), nine.size()))), 0xCBF43926u);
  TrainJob l = job(2);
  l.load_model = j.save_model;
  EXPECT_NE(test::error_of([&] { run(l); }).find("--load-model"), std::string::npos);
}

// The .npy [N, cols] f4 written by --logits-out / --embeddings-out.
std::vector<float> read_npy_rows(const std::string& path, int64_t rows, int64_t cols) {
  const std::vector<char> b = test::read_bytes(path);
  EXPECT_GE(b.size(), 128u);
  const std::string header(b.begin(), b.begin() + 128);
  EXPECT_NE(header.find(fmt::format("'shape': ({}, {})", rows, cols)), std::string::npos) << header;
  std::vector<float> v(static_cast<size_t>(rows * cols));
  EXPECT_EQ(b.size(), 128 + v.size() * 4);
  if (b.size() == 128 + v.size() * 4) std::memcpy(v.data(), b.data() + 128, v.size() * 4);
  return v;
}

TEST_F(TrainOutputs, EmbeddingsAreTheChosenLayersOutputInGraphOrder) {
  TrainJob j = job(5);
  j.embeddings_out = dir.file("e.npy");
  // GCN 8-16-4: layer 1 is transform-first and fused, so h^1 stays on the device.
  const std::string e = test::error_of([&] { run(j); });
  EXPECT_NE(e.find("--no-fuse-transforms"), std::string::npos) << e;
  j.trainer.fuse_transforms = false;
  j.logits_out = dir.file("l.npy");
  const TrainSummary s = run(j);
  const std::vector<float> h1 = read_npy_rows(j.embeddings_out, 400, 16);
  bool positive = false;
  for (float v : h1) {
    EXPECT_GE(v, 0.0f);  // after the ReLU
    positive |= v > 0;
  }
  EXPECT_TRUE(positive);
  // The same layer of the same model on one device and one chunk: the same rows in the same
  // (graph file) order, up to float rounding (other partitions sum in other orders).
  TrainJob one = j;
  one.parts = 1;
  one.chunks = 1;
  one.embeddings_out = dir.file("e1.npy");
  one.logits_out.clear();
  run(one);
  const std::vector<float> h1_one = read_npy_rows(one.embeddings_out, 400, 16);
  for (size_t k = 0; k < h1.size(); ++k) ASSERT_NEAR(h1[k], h1_one[k], 1e-4f * (1 + std::fabs(h1[k]))) << k;
  // The last layer is the logits.
  j.embeddings_layer = 2;
  run(j);
  EXPECT_EQ(test::read_bytes(j.embeddings_out), test::read_bytes(j.logits_out));
  j.embeddings_layer = 3;
  EXPECT_NE(test::error_of([&] { run(j); }).find("--embeddings-layer"), std::string::npos);
  // From the best epoch by default: the outputs of --predict-only with the saved model.
  j.embeddings_layer = 1;
  j.save_model = dir.file("m.model");
  run(j);
  TrainJob p = job(5);
  p.trainer.fuse_transforms = false;
  p.predict_only = true;
  p.load_model = j.save_model;
  p.embeddings_out = dir.file("pe.npy");
  run(p);
  EXPECT_EQ(test::read_bytes(p.embeddings_out), test::read_bytes(j.embeddings_out));
  (void)s;
}

TEST_F(TrainOutputs, SummaryRecordsTheRunsProvenance) {
  TrainJob j = job(2);
  j.metrics_out = dir.file("m.jsonl");
  j.options = {{"--epochs", "2"}, {"--graph", "g.htg"}};
  run(j);
  const std::string s = lines_of(j.metrics_out, "summary").at(0);
  EXPECT_NE(s.find("\"options\":{\"--epochs\":\"2\",\"--graph\":\"g.htg\"}"), std::string::npos) << s;
  EXPECT_NE(s.find("\"version\":\"" + version_string() + "\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"commit\":\"" + build_commit() + "\""), std::string::npos) << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\"start_time\":\"20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]Z\"")))
      << s;
  EXPECT_TRUE(std::regex_search(s, std::regex("\"host\":\"[^\"]+\""))) << s;
  EXPECT_NE(s.find("\"stop_reason\":\"epochs\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"seed\":1"), std::string::npos) << s;
  // The process clock runs (at its 10 ms resolution).
  const double before = process_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_GE(process_seconds() - before, 0.04);
  EXPECT_GE(before, 0.0);
  // Built from this git checkout (CMake read the commit at configure time).
  if (!build_commit().empty()) {
    EXPECT_TRUE(std::regex_match(build_commit(), std::regex("[0-9a-f]{40}(-dirty)?"))) << build_commit();
  }
}

}  // namespace
}  // namespace ht
