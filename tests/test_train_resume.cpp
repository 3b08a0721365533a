// Long runs that survive (issue 17) at the library level, on the CPU
// executor: an interrupted and resumed run equals the uninterrupted one bit
// for bit (parameters, metrics, predictions); checkpoints of another run are
// refused; training stops at the first non-finite value; outputs are checked
// before any work and committed together.
#include <cmath>
#include <csignal>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/file_io.hpp"
#include "core/signals.hpp"
#include "datasets/generators.hpp"
#include "engine/cpu_executor.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"
#include "train/checkpoint.hpp"
#include "train/train_checkpoint.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

class TrainResume : public ::testing::Test {
 public:
  void SetUp() override {
    gen::CommunityParams p;
    p.num_vertices = 300;
    p.num_classes = 3;
    p.feature_dim = 6;
    p.avg_degree = 6;
    p.seed = 3;
    write_graph(graph_path(), gen::community_graph(p).view());
  }
  std::string graph_path() const { return dir.file("g.htg"); }

  // Two emulated GPUs, two chunks, dropout on: the random masks depend on the epoch.
  TrainJob job(ModelKind kind, OptimizerKind opt, int epochs) const {
    TrainJob j;
    j.graph_path = graph_path();
    j.parts = 2;
    j.chunks = 2;
    j.epochs = epochs;
    j.eval_every = 2;
    j.warmup = 0;
    j.trainer.model.kind = kind;
    j.trainer.model.dropout = 0.3f;
    if (kind == ModelKind::gat) {
      j.trainer.model.heads = 2;
      j.trainer.model.attn_dropout = 0.2f;
    }
    j.trainer.optimizer.kind = opt;
    if (opt == OptimizerKind::sgd) {
      j.trainer.optimizer.momentum = 0.9f;
      j.trainer.optimizer.lr = 0.05f;
    }
    return j;
  }
  static TrainSummary run(const TrainJob& j) {
    return run_train_job(j, [](int m) { return std::make_unique<CpuExecutor>(m); });
  }
  // The epoch lines of a metrics file without their timings.
  static std::string losses(const std::string& path) {
    std::string out, text = read_text_file(path);
    size_t at = 0;
    while ((at = text.find("\"loss\":", at)) != std::string::npos) {
      const size_t end = text.find(",\"epoch_ms\"", at);
      out += text.substr(at, end - at) + "\n";
      at = end;
    }
    return out;
  }

  test::TempDir dir;
};

void expect_resume_is_exact(TrainResume& t, ModelKind kind, OptimizerKind opt) {
  SCOPED_TRACE(name_of(kind));
  // Uninterrupted: 6 epochs.
  TrainJob full = t.job(kind, opt, 6);
  full.metrics_out = t.dir.file("full.jsonl");
  full.save_model = t.dir.file("full.model");
  full.predict_out = t.dir.file("full.csv");
  const TrainSummary a = TrainResume::run(full);

  // Interrupted after epoch 3 (a stop request, as SIGTERM makes), then resumed.
  TrainJob first = t.job(kind, opt, 6);
  first.checkpoint_path = t.dir.file("ck");
  first.checkpoint_every = 2;
  first.metrics_out = t.dir.file("part.jsonl");
  int polls = 0;
  first.stop_requested = [&] { return ++polls == 3 ? SIGTERM : 0; };
  try {
    TrainResume::run(first);
    FAIL() << "no stop";
  } catch (const signals::Interrupted& e) {
    EXPECT_EQ(e.exit_code(), 143);
    EXPECT_NE(std::string(e.what()).find("after epoch 3 of 6"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(file_exists(first.metrics_out)) << "an interrupted run commits no outputs";
  EXPECT_EQ(read_train_checkpoint(first.checkpoint_path).epochs_done, 3);

  TrainJob second = t.job(kind, opt, 6);
  second.resume_path = first.checkpoint_path;
  second.checkpoint_path = first.checkpoint_path;  // the same file: replaced atomically
  second.metrics_out = t.dir.file("resumed.jsonl");
  second.save_model = t.dir.file("resumed.model");
  second.predict_out = t.dir.file("resumed.csv");
  const TrainSummary b = TrainResume::run(second);

  EXPECT_EQ(b.resumed_from, 3);
  EXPECT_EQ(a.final_loss, b.final_loss);
  EXPECT_EQ(a.best_epoch, b.best_epoch);
  EXPECT_EQ(a.best_val_acc, b.best_val_acc);
  EXPECT_EQ(a.final_test_acc, b.final_test_acc);
  EXPECT_EQ(test::read_bytes(full.predict_out), test::read_bytes(second.predict_out));
  EXPECT_EQ(TrainResume::losses(full.metrics_out), TrainResume::losses(second.metrics_out));
  EXPECT_EQ(TrainResume::losses(full.metrics_out).size() > 0, true);
  // Parameters bit for bit (the model files hold only them and the shape).
  EXPECT_EQ(test::read_bytes(full.save_model), test::read_bytes(second.save_model));
  EXPECT_EQ(read_train_checkpoint(second.checkpoint_path).epochs_done, 6);
}

TEST_F(TrainResume, InterruptedAndResumedEqualsUninterruptedGcnAdam) {
  expect_resume_is_exact(*this, ModelKind::gcn, OptimizerKind::adam);
}

TEST_F(TrainResume, InterruptedAndResumedEqualsUninterruptedGatSgdMomentum) {
  expect_resume_is_exact(*this, ModelKind::gat, OptimizerKind::sgd);
}

TEST_F(TrainResume, InterruptedAndResumedEqualsUninterruptedSageAdam) {
  expect_resume_is_exact(*this, ModelKind::sage, OptimizerKind::adam);
}

TEST_F(TrainResume, CheckpointOfAnotherRunIsRefused) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 2);
  j.checkpoint_path = dir.file("ck");
  run(j);
  TrainJob other = job(ModelKind::gcn, OptimizerKind::adam, 4);
  other.resume_path = j.checkpoint_path;
  other.hidden = 8;  // another model shape
  std::string e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find("checkpoint is for another model"), std::string::npos) << e;
  other = job(ModelKind::gcn, OptimizerKind::sgd, 4);
  other.resume_path = j.checkpoint_path;
  e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find("another optimizer"), std::string::npos) << e;
  other = job(ModelKind::gcn, OptimizerKind::adam, 4);
  other.resume_path = j.checkpoint_path;
  other.chunks = 3;  // another (in-memory) partition
  e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find("another partition"), std::string::npos) << e;
  other = job(ModelKind::gcn, OptimizerKind::adam, 1);
  other.resume_path = j.checkpoint_path;
  e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find("fewer than the 2 epochs"), std::string::npos) << e;
  // Another graph.
  gen::CommunityParams p;
  p.num_vertices = 301;
  p.num_classes = 3;
  p.feature_dim = 6;
  write_graph(dir.file("g2.htg"), gen::community_graph(p).view());
  other = job(ModelKind::gcn, OptimizerKind::adam, 4);
  other.graph_path = dir.file("g2.htg");
  other.resume_path = j.checkpoint_path;
  e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find("checkpoint is for another graph"), std::string::npos) << e;
  // A model file is not a checkpoint.
  j.save_model = dir.file("m");
  j.checkpoint_path.clear();
  run(j);
  other = job(ModelKind::gcn, OptimizerKind::adam, 4);
  other.resume_path = dir.file("m");
  e = test::error_of([&] { run(other); });
  EXPECT_NE(e.find(dir.file("m")), std::string::npos) << e;
}

// A copy of checkpoint `from` at `to`, resealed (valid checksums) with the
// header's epochs done `meta0` (unless negative) and each `edits` pair's
// first text replaced by its second in the info and metrics sections, and
// params[`nan_at`] (unless negative) made NaN: what a forger or a damaged
// writer makes, which the checksums alone accept.
void reseal(const std::string& from, const std::string& to, int64_t meta0,
            const std::vector<std::pair<std::string, std::string>>& edits, int64_t nan_at = -1) {
  ContainerReader r(from, kCheckpointMagic, kCheckpointVersion);
  ContainerWriter w(to, kCheckpointMagic, kCheckpointVersion);
  for (int k = 0; k < container::kNumMeta; ++k) w.set_meta(k, r.meta(k));
  if (meta0 >= 0) w.set_meta(0, static_cast<uint64_t>(meta0));
  for (const SectionInfo& s : r.sections()) {
    const auto raw = r.bytes(s.name, s.dtype);
    std::vector<std::byte> b(raw.begin(), raw.end());
    if (s.name == "info" || s.name == "metrics") {
      std::string text(reinterpret_cast<const char*>(b.data()), b.size());
      for (const auto& [was, is] : edits)
        if (const size_t at = text.find(was); at != std::string::npos) text.replace(at, was.size(), is);
      b.assign(reinterpret_cast<const std::byte*>(text.data()), reinterpret_cast<const std::byte*>(text.data()) + text.size());
      w.add_section(s.name, s.dtype, b.size(), 1, b.data());
      continue;
    }
    if (s.name == "params" && nan_at >= 0) reinterpret_cast<float*>(b.data())[nan_at] = std::nanf("");
    w.add_section(s.name, s.dtype, s.shape[0], s.shape[1], b.data(), static_cast<int>(s.ndim));
  }
  w.commit();
}

TEST_F(TrainResume, ForgedCheckpointsAreRefusedNamingTheField) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 3);
  j.eval_every = 1;
  j.checkpoint_path = dir.file("ck");
  run(j);
  ASSERT_EQ(read_train_checkpoint(j.checkpoint_path).epochs_done, 3);
  const std::string forged = dir.file("forged");
  const auto refused = [&](int64_t meta0, const std::vector<std::pair<std::string, std::string>>& edits,
                           int64_t nan_at = -1) {
    reseal(j.checkpoint_path, forged, meta0, edits, nan_at);
    return test::error_of([&] { read_train_checkpoint(forged); });
  };
  // The copy itself reads back: the checks accept what a run writes.
  EXPECT_EQ(refused(-1, {}), "");
  EXPECT_EQ(read_train_checkpoint(forged).epochs_done, 3);

  std::string e = refused(-1, {{"epochs_done 3", "epochs_done 9"}});
  EXPECT_NE(e.find("checkpoint info records 9 epochs done but its header 3"), std::string::npos) << e;
  e = refused(9, {{"epochs_done 3", "epochs_done 9"}});  // header and info agree: the metrics do not
  EXPECT_NE(e.find("checkpoint metrics hold 3 epoch lines but its info records 9 epochs done"), std::string::npos)
      << e;
  e = refused(-1, {{"epochs_done 3", "epochs_done 4000000000"}});
  EXPECT_NE(e.find("checkpoint info: epochs_done 4000000000 is not in [1, 1000000000]"), std::string::npos) << e;
  e = refused(-1, {{"optimizer_steps 3", "optimizer_steps -2"}});
  EXPECT_NE(e.find("checkpoint info: optimizer_steps -2 is not in"), std::string::npos) << e;
  e = refused(-1, {{"best_epoch ", "best_epoch 7"}});  // "7<old>": beyond the epochs done
  EXPECT_NE(e.find("checkpoint info: best_epoch 7"), std::string::npos) << e;
  e = refused(-1, {{"best_val_acc ", "best_val_acc nan"}});
  EXPECT_NE(e.find("checkpoint info: bad best_val_acc"), std::string::npos) << e;
  e = refused(-1, {{"\"epoch\":1,", "\"epoch\":7,"}});
  EXPECT_NE(e.find("checkpoint metrics, line 2: epoch 7 where epoch 1 was due"), std::string::npos) << e;
  e = refused(-1, {{"{\"type\"", "garbage{\"type\""}});
  EXPECT_NE(e.find("checkpoint metrics, line 1: not a JSON object"), std::string::npos) << e;
  e = refused(-1, {}, 5);
  EXPECT_NE(e.find("checkpoint value of parameter l0.W holds nan at element 5 of [6, 16]"), std::string::npos) << e;
  EXPECT_EQ(e.find("diverged"), std::string::npos) << e;

  // Resuming from it (and --predict-only) stops at the same line, before any epoch.
  TrainJob again = job(ModelKind::gcn, OptimizerKind::adam, 4);
  again.resume_path = forged;
  e = test::error_of([&] { run(again); });
  EXPECT_NE(e.find("holds nan"), std::string::npos) << e;
  again.predict_only = true;
  again.predict_out = dir.file("p.csv");
  e = test::error_of([&] { run(again); });
  EXPECT_NE(e.find("holds nan"), std::string::npos) << e;
  EXPECT_FALSE(file_exists(again.predict_out));
}

// A model file (--load-model) with a NaN parameter: refused naming it.
TEST_F(TrainResume, ModelWithNonFiniteParametersIsRefused) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 1);
  j.save_model = dir.file("m");
  run(j);
  ContainerReader r(j.save_model, kModelMagic, kModelVersion);
  ContainerWriter w(dir.file("bad"), kModelMagic, kModelVersion);
  for (int k = 0; k < container::kNumMeta; ++k) w.set_meta(k, r.meta(k));
  for (const SectionInfo& s : r.sections()) {
    const auto raw = r.bytes(s.name, s.dtype);
    std::vector<std::byte> b(raw.begin(), raw.end());
    if (s.name == "l1.W") reinterpret_cast<float*>(b.data())[2] = std::numeric_limits<float>::infinity();
    w.add_section(s.name, s.dtype, s.shape[0], s.shape[1], b.data(), static_cast<int>(s.ndim));
  }
  w.commit();
  TrainJob p = job(ModelKind::gcn, OptimizerKind::adam, 1);
  p.load_model = dir.file("bad");
  p.predict_only = true;
  p.predict_out = dir.file("p.csv");
  const std::string e = test::error_of([&] { run(p); });
  EXPECT_NE(e.find("parameter l1.W holds inf at element 2"), std::string::npos) << e;
}

// Model files record the model by name (version 2); version 1 files, which
// recorded it as a number (0 GCN, 1 GAT), still read; a name this build
// does not know is refused in one line naming the file.
ModelConfig small_model(ModelKind kind) {
  ModelConfig m;
  m.kind = kind;
  m.dims = {6, 4, 3};
  m.heads = kind == ModelKind::gat ? 2 : 1;
  m.seed = 7;
  return m;
}

// `params` with every value changed, so that a read that leaves init_params'
// values in place is seen.
ModelParams changed(ModelParams p) {
  for (ParamTensor& t : p.tensors)
    for (size_t i = 0; i < t.value.size(); ++i) t.value[i] = 0.25f * static_cast<float>(i % 7) - t.value[i];
  return p;
}

void expect_same_values(const ModelParams& a, const ModelParams& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t k = 0; k < a.tensors.size(); ++k) EXPECT_EQ(a.tensors[k].value, b.tensors[k].value) << a.tensors[k].name;
}

// A model file written as version 1 wrote it: the kind number in meta[0], no name.
void write_version1_model(const std::string& path, const ModelConfig& m, const ModelParams& p, uint64_t kind_number) {
  ContainerWriter w(path, kModelMagic, 1);
  w.set_meta(0, kind_number);
  w.set_meta(1, static_cast<uint64_t>(m.num_layers()));
  w.set_meta(2, static_cast<uint64_t>(m.heads));
  w.set_meta(3, static_cast<uint64_t>(m.out_heads));
  for (const ParamTensor& t : p.tensors)
    w.add_section(t.name, DType::f32, static_cast<uint64_t>(t.rows), static_cast<uint64_t>(t.cols), t.value.data(), 2);
  w.commit();
}

// Loading a model file of `kind` as the other model: the error, and that model.
std::pair<std::string, ModelKind> load_as_other_model(const std::string& path, ModelKind kind) {
  const ModelKind other = kind == ModelKind::gcn ? ModelKind::gat : ModelKind::gcn;
  ModelParams q = init_params(small_model(other));
  return {test::error_of([&] { load_model(path, small_model(other), q); }), other};
}

TEST_F(TrainResume, ModelFileRecordsTheModelByNameAndReadsBack) {
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::gat, ModelKind::sage}) {
    SCOPED_TRACE(name_of(kind));
    const ModelConfig m = small_model(kind);
    const ModelParams saved = changed(init_params(m));
    const std::string path = dir.file("m_" + name_of(kind));
    save_model(path, m, saved);
    {
      ContainerReader r(path, kModelMagic, kModelVersion);
      EXPECT_EQ(r.version(), 2u);
      const auto b = r.bytes(kModelNameSection, DType::u8);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), b.size()), name_of(kind));
      EXPECT_EQ(recorded_model_kind(r), kind);
    }
    ModelParams loaded = init_params(m);
    load_model(path, m, loaded);
    expect_same_values(loaded, saved);
    // The other model is refused by name.
    const auto [e, other] = load_as_other_model(path, kind);
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_NE(e.find(fmt::format("checkpoint is a {} with 2 layers; the requested model is a {}", model_title(kind),
                                 model_title(other))),
              std::string::npos)
        << e;
  }
}

TEST_F(TrainResume, VersionOneModelFileStillReads) {
  for (const auto& [kind, number] : {std::pair{ModelKind::gcn, 0}, std::pair{ModelKind::gat, 1}}) {
    SCOPED_TRACE(name_of(kind));
    const ModelConfig m = small_model(kind);
    const ModelParams saved = changed(init_params(m));
    const std::string path = dir.file("v1_" + name_of(kind));
    write_version1_model(path, m, saved, static_cast<uint64_t>(number));
    ModelParams loaded = init_params(m);
    load_model(path, m, loaded);
    expect_same_values(loaded, saved);
    // Version 1's other number is the other model: refused as such.
    const std::string e = load_as_other_model(path, kind).first;
    EXPECT_NE(e.find(fmt::format("checkpoint is a {}", model_title(kind))), std::string::npos) << e;
  }
  // A version 1 number that was never a model.
  const ModelConfig m = small_model(ModelKind::gcn);
  write_version1_model(dir.file("v1_bad"), m, init_params(m), 2);
  ModelParams q = init_params(m);
  const std::string e = test::error_of([&] { load_model(dir.file("v1_bad"), m, q); });
  EXPECT_NE(e.find(dir.file("v1_bad")), std::string::npos) << e;
  EXPECT_NE(e.find("model file (version 1) records model kind 2, not 0 (gcn) or 1 (gat)"), std::string::npos) << e;
}

TEST_F(TrainResume, ModelFileWithAnUnknownModelNameIsRefused) {
  const ModelConfig m = small_model(ModelKind::gcn);
  const std::string good = dir.file("good");
  save_model(good, m, init_params(m));
  // The file resealed (valid checksums) with `name` in place of "gcn", or without the name.
  const auto tampered = [&](const std::optional<std::string>& name) {
    const std::string path = dir.file("tampered");
    {
      ContainerReader r(good, kModelMagic, kModelVersion);
      ContainerWriter w(path, kModelMagic, kModelVersion);
      for (int k = 0; k < container::kNumMeta; ++k) w.set_meta(k, r.meta(k));
      for (const SectionInfo& s : r.sections()) {
        if (s.name == kModelNameSection) {
          if (name) w.add_section(s.name, DType::u8, name->size(), 1, name->data());
          continue;
        }
        const auto raw = r.bytes(s.name, s.dtype);
        w.add_section(s.name, s.dtype, s.shape[0], s.shape[1], raw.data(), static_cast<int>(s.ndim));
      }
      w.commit();
    }
    ModelParams q = init_params(m);
    return test::error_of([&] { load_model(path, m, q); });
  };
  EXPECT_EQ(tampered(std::string("gcn")), "");  // the copy itself reads
  std::string e = tampered(std::string("gin"));
  EXPECT_NE(e.find(dir.file("tampered")), std::string::npos) << e;
  EXPECT_NE(e.find("model file records model 'gin', which this build does not know (it knows gat, gcn, sage)"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;  // one line
  e = tampered(std::string("gc\nn"));  // printed on one line still
  EXPECT_NE(e.find("model 'gc?n'"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = tampered(std::string("GCN"));  // names are exact
  EXPECT_NE(e.find("model 'GCN', which this build does not know"), std::string::npos) << e;
  e = tampered(std::nullopt);
  EXPECT_NE(e.find("model file lacks its model name (section 'model')"), std::string::npos) << e;
}

// A signal during setup (as ht-train installs the handlers: graceful) ends
// the run at the next setup phase, not after the first epoch (which a large
// graph reaches after minutes): a Ctrl-C was ignored meanwhile.
TEST_F(TrainResume, SignalDuringSetupStopsBeforeTheFirstEpoch) {
  signals::install("test_train_resume", true);
  std::raise(SIGTERM);
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 3);
  j.metrics_out = dir.file("m.jsonl");
  int polls = 0;
  j.stop_requested = [&] { return ++polls, signals::stop_signal(); };
  try {
    run(j);
    ADD_FAILURE() << "no stop";
  } catch (const signals::Interrupted& e) {
    EXPECT_EQ(e.exit_code(), 143);
    EXPECT_NE(std::string(e.what()).find("stopped by SIGTERM during setup, before the first epoch"), std::string::npos)
        << e.what();
  }
  signals::clear_stop_signal();
  EXPECT_EQ(polls, 0) << "stopped after an epoch";
  EXPECT_FALSE(file_exists(j.metrics_out));
}

TEST_F(TrainResume, DivergenceStopsAtOnceAndWritesNothing) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::sgd, 30);
  j.trainer.optimizer.momentum = 0;
  j.trainer.optimizer.lr = 1e30f;
  j.metrics_out = dir.file("m.jsonl");
  j.save_model = dir.file("model");
  j.predict_out = dir.file("p.csv");
  j.checkpoint_path = dir.file("ck");
  const std::string e = test::error_of([&] { run(j); });
  EXPECT_NE(e.find("training diverged at epoch"), std::string::npos) << e;
  EXPECT_NE(e.find("layer"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  for (const char* f : {"m.jsonl", "model", "p.csv"}) EXPECT_FALSE(file_exists(dir.file(f))) << f;
}

// A NaN feature makes the first epoch diverge whatever the learning rate:
// the error names the graph file, the vertex and the column, not --lr.
TEST_F(TrainResume, NonFiniteFeaturesAreBlamedOnTheFeatures) {
  gen::CommunityParams p;
  p.num_vertices = 300;
  p.num_classes = 3;
  p.feature_dim = 6;
  p.seed = 3;
  Graph g = gen::community_graph(p);
  g.features[17 * 6 + 4] = std::nanf("");
  write_graph(dir.file("nan.htg"), g.view());
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 3);
  j.graph_path = dir.file("nan.htg");
  j.metrics_out = dir.file("m.jsonl");
  const std::string e = test::error_of([&] { run(j); });
  EXPECT_NE(e.find("nan.htg"), std::string::npos) << e;
  EXPECT_NE(e.find("feature 4 of vertex 17 is NaN"), std::string::npos) << e;
  EXPECT_EQ(e.find("--lr"), std::string::npos) << e;
  EXPECT_FALSE(file_exists(j.metrics_out));
}

TEST_F(TrainResume, OutputsCheckedBeforeAnyWork) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 2);
  const std::string graph_before = read_text_file(graph_path());
  j.metrics_out = graph_path();
  EXPECT_NE(test::error_of([&] { run(j); }).find("is an input of this run"), std::string::npos);
  j.metrics_out = dir.file("x");
  j.save_model = dir.file("x");
  EXPECT_NE(test::error_of([&] { run(j); }).find("also the output of --metrics-out"), std::string::npos);
  j.save_model = dir.file("missing/model");
  EXPECT_NE(test::error_of([&] { run(j); }).find("does not exist"), std::string::npos);
  j.save_model.clear();
  j.predict_out = dir.file("p.csv");
  j.resume_path = dir.file("ck");
  test::write_file(dir.file("ck"), "x");
  j.logits_out = dir.file("ck");
  EXPECT_NE(test::error_of([&] { run(j); }).find("resumes from"), std::string::npos);
  EXPECT_EQ(read_text_file(graph_path()), graph_before);
  EXPECT_FALSE(file_exists(dir.file("x")));
}

TEST_F(TrainResume, PredictOnlyEqualsTheTrainedRunsPredictions) {
  TrainJob j = job(ModelKind::gcn, OptimizerKind::adam, 3);
  j.save_model = dir.file("model");
  j.predict_out = dir.file("trained.csv");
  j.logits_out = dir.file("trained.npy");
  run(j);
  TrainJob p = job(ModelKind::gcn, OptimizerKind::adam, 3);
  p.predict_only = true;
  p.load_model = j.save_model;
  p.predict_out = dir.file("p.csv");
  p.logits_out = dir.file("p.npy");
  const TrainSummary s = run(p);
  EXPECT_TRUE(s.predicted_only);
  EXPECT_TRUE(s.has_labels);
  EXPECT_EQ(test::read_bytes(j.predict_out), test::read_bytes(p.predict_out));
  const std::vector<char> npy = test::read_bytes(p.logits_out);
  EXPECT_EQ(npy, test::read_bytes(j.logits_out));
  ASSERT_GT(npy.size(), 128u);
  EXPECT_EQ(std::string(npy.begin() + 1, npy.begin() + 6), "NUMPY");
  EXPECT_EQ(npy.size(), 128u + 300u * 3u * 4u);  // header padded to 128 bytes, then N x C f4
  p.load_model.clear();
  EXPECT_NE(test::error_of([&] { run(p); }).find("--load-model"), std::string::npos);
}

}  // namespace
}  // namespace ht
