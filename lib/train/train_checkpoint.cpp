#include "train/train_checkpoint.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <span>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht {
namespace {

// The "info" section: one "key value" line per field (doubles with 17
// significant digits, which read back to the same bits).
using Info = std::map<std::string, std::string>;

std::string identity_text(const FileIdentity& id) { return fmt::format("{} {}", id.bytes, id.checksum); }

std::string info_text(const TrainCheckpoint& c) {
  const CheckpointTarget& t = c.target;
  std::string s;
  auto put = [&](const std::string& k, const std::string& v) { s += k + " " + v + "\n"; };
  auto put_d = [&](const std::string& k, double v) { put(k, fmt::format("{:.17g}", v)); };
  put("model", t.model);
  put("optimizer", t.optimizer);
  put("host_dtype", t.host_dtype);
  put("normalize_features", t.normalize_features ? "1" : "0");
  put("graph", identity_text(t.graph));
  put("partition", identity_text(t.partition));
  put("plan", identity_text(t.plan));
  put("m", std::to_string(t.m));
  put("n", std::to_string(t.n));
  put("hyperparameters", c.hyperparameters);
  put("epochs_done", std::to_string(c.epochs_done));
  put("epochs_planned", std::to_string(c.epochs_planned));
  put("optimizer_steps", std::to_string(c.optimizer_steps));
  put("best_epoch", std::to_string(c.best_epoch));
  put_d("best_val_acc", c.best_val_acc);
  put_d("test_acc_at_best_val", c.test_acc_at_best_val);
  put_d("final_loss", c.final_loss);
  put_d("final_train_acc", c.final_train_acc);
  put_d("final_val_acc", c.final_val_acc);
  put_d("final_test_acc", c.final_test_acc);
  put("evals_since_best", std::to_string(c.evals_since_best));
  put_d("train_seconds", c.train_seconds);
  put_d("process_seconds", c.process_seconds);
  put_d("best_train_seconds", c.best_train_seconds);
  put_d("best_process_seconds", c.best_process_seconds);
  put("target_epoch", std::to_string(c.target_epoch));
  put_d("target_train_seconds", c.target_train_seconds);
  put_d("target_process_seconds", c.target_process_seconds);
  put_d("target_acc", c.target_acc);
  std::string names;
  for (const ParamTensor& p : c.tensors) names += (names.empty() ? "" : " ") + p.name;
  put("tensors", names);
  return s;
}

Info parse_info(const std::string& path, std::string_view text) {
  Info info;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) info[line] = "";
    else info[line.substr(0, sp)] = line.substr(sp + 1);
  }
  for (const char* k : {"model", "optimizer", "graph", "partition", "plan", "m", "n", "epochs_done", "optimizer_steps",
                        "best_epoch", "tensors"})
    if (!info.count(k)) throw file_error(path, fmt::format("checkpoint info lacks '{}'", k));
  return info;
}

int64_t to_int(const std::string& path, const Info& info, const std::string& key) {
  const auto it = info.find(key);
  if (it == info.end()) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0') throw file_error(path, fmt::format("checkpoint info: bad {}", key));
  return v;
}

// A field that must lie in [lo, hi]: a damaged or forged file is refused
// naming the field, not by whatever its value would break later.
int64_t int_field(const std::string& path, const Info& info, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = to_int(path, info, key);
  if (v < lo || v > hi)
    throw file_error(path, fmt::format("checkpoint info: {} {} is not in [{}, {}]", key,
                                       info.count(key) ? info.at(key) : "(absent)", lo, hi));
  return v;
}

// A number in [lo, hi] (NaN is not); absent: 0.
double to_double(const std::string& path, const Info& info, const std::string& key, double lo, double hi) {
  const auto it = info.find(key);
  if (it == info.end()) return 0.0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (end == it->second.c_str() || *end != '\0') throw file_error(path, fmt::format("checkpoint info: bad {}", key));
  if (!(v >= lo && v <= hi))
    throw file_error(path, fmt::format("checkpoint info: {} {} is not in [{}, {}]", key, it->second, lo, hi));
  return v;
}

// Refuses a NaN or infinite value (or a negative one where `non_negative`),
// naming the tensor and its element: a checkpoint of a run that diverged is
// never written, so such values are damage, not a learning rate too large.
void check_finite(const std::string& path, std::string_view what, const ParamTensor& p, std::span<const float> values,
                  bool non_negative = false) {
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i];
    if (std::isfinite(x) && !(non_negative && x < 0)) continue;
    throw file_error(path, fmt::format("checkpoint {} of parameter {} holds {} at element {} of [{}, {}]", what, p.name,
                                       x, i, p.rows, p.cols));
  }
}

// The metrics lines of the epochs done: JSON objects, the epochs' lines
// numbered 0 .. epochs_done - 1 in order (the lines a resumed run copies
// into --metrics-out).
void check_metrics(const std::string& path, std::string_view text, int epochs_done) {
  int epochs = 0;
  int64_t line_no = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    const std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    const auto bad = [&](const std::string& why) {
      return file_error(path, fmt::format("checkpoint metrics, line {}: {}", line_no, why));
    };
    if (line.size() < 2 || line.front() != '{' || line.back() != '}') throw bad("not a JSON object");
    if (line.find("\"type\":\"epoch\"") == std::string_view::npos) continue;
    const size_t k = line.find("\"epoch\":");
    const std::string number(line.substr(k == std::string_view::npos ? line.size() : k + 8, 12));
    char* end = nullptr;
    const long e = std::strtol(number.c_str(), &end, 10);
    if (end == number.c_str() || e != epochs) throw bad(fmt::format("epoch {} where epoch {} was due", number.substr(0, static_cast<size_t>(end - number.c_str())), epochs));
    ++epochs;
  }
  if (epochs != epochs_done)
    throw file_error(path, fmt::format("checkpoint metrics hold {} epoch lines but its info records {} epochs done",
                                       epochs, epochs_done));
}

FileIdentity to_identity(const std::string& path, const Info& info, const std::string& key) {
  std::istringstream in(info.at(key));
  FileIdentity id;
  if (!(in >> id.bytes >> id.checksum)) throw file_error(path, fmt::format("checkpoint info: bad {}", key));
  return id;
}

std::vector<float> concat(const std::vector<std::vector<float>>& parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

std::string model_shape(const ModelConfig& m) {
  return fmt::format("{} {} heads {} out_heads {} bias {}", name_of(m.kind),
                     fmt::join(m.dims, "-"), m.hidden_heads(), m.output_heads(), m.bias ? 1 : 0);
}

void write_train_checkpoint(const std::string& path, const TrainCheckpoint& c) {
  HT_CHECK(c.m.size() == c.tensors.size() && c.v.size() == c.tensors.size(),
           "checkpoint: optimizer state for {} / {} of {} tensors", c.m.size(), c.v.size(), c.tensors.size());
  ContainerWriter w(path, kCheckpointMagic, kCheckpointVersion);
  w.set_meta(0, static_cast<uint64_t>(c.epochs_done));
  w.set_meta(1, static_cast<uint64_t>(c.tensors.size()));
  const std::string info = info_text(c);
  w.add_section("info", DType::u8, info.size(), 1, info.data());
  std::vector<int64_t> shapes;
  std::vector<std::vector<float>> values;
  for (const ParamTensor& p : c.tensors) {
    shapes.push_back(p.rows);
    shapes.push_back(p.cols);
    values.push_back(p.value);
  }
  w.add<int64_t>("param_shapes", shapes, 2);
  w.add<float>("params", concat(values));
  w.add<float>("opt_m", concat(c.m));
  w.add<float>("opt_v", concat(c.v));
  w.add_section("metrics", DType::u8, c.metrics.size(), 1, c.metrics.data());
  if (!c.best_tensors.empty()) {
    HT_CHECK(c.best_tensors.size() == c.tensors.size(), "checkpoint: {} best-epoch tensors for {} tensors",
             c.best_tensors.size(), c.tensors.size());
    std::vector<std::vector<float>> best;
    for (const ParamTensor& p : c.best_tensors) best.push_back(p.value);
    w.add<float>("best_params", concat(best));
  }
  w.commit();
}

TrainCheckpoint read_train_checkpoint(const std::string& path, bool verify_checksums) {
  ContainerReader r(path, kCheckpointMagic, kCheckpointVersion, ReadOptions{verify_checksums});
  for (const char* s : {"info", "param_shapes", "params", "opt_m", "opt_v", "metrics"})
    if (!r.has(s)) throw file_error(path, fmt::format("checkpoint lacks section '{}'", s));
  auto text = [&](const char* name) {
    auto b = r.array<uint8_t>(name);
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  const Info info = parse_info(path, text("info"));
  TrainCheckpoint c;
  CheckpointTarget& t = c.target;
  t.model = info.at("model");
  t.optimizer = info.at("optimizer");
  t.host_dtype = info.count("host_dtype") ? info.at("host_dtype") : "fp32";
  t.normalize_features = to_int(path, info, "normalize_features") != 0;
  t.graph = to_identity(path, info, "graph");
  t.partition = to_identity(path, info, "partition");
  t.plan = to_identity(path, info, "plan");
  t.m = static_cast<int>(int_field(path, info, "m", 1, 1 << 20));
  t.n = static_cast<int>(int_field(path, info, "n", 1, 1 << 30));
  c.hyperparameters = info.count("hyperparameters") ? info.at("hyperparameters") : "";
  constexpr int64_t kMaxEpochs = 1'000'000'000;  // ht-train --epochs' bound
  c.epochs_done = static_cast<int>(int_field(path, info, "epochs_done", 1, kMaxEpochs));
  if (r.meta(0) != static_cast<uint64_t>(c.epochs_done))
    throw file_error(path, fmt::format("checkpoint info records {} epochs done but its header {}", c.epochs_done,
                                       r.meta(0)));
  c.epochs_planned = static_cast<int>(int_field(path, info, "epochs_planned", 0, kMaxEpochs));
  c.optimizer_steps = int_field(path, info, "optimizer_steps", 0, int64_t{1} << 53);
  c.best_epoch = static_cast<int>(int_field(path, info, "best_epoch", -1, c.epochs_done - 1));
  const double inf = std::numeric_limits<double>::infinity();
  c.best_val_acc = to_double(path, info, "best_val_acc", 0, 1);
  c.test_acc_at_best_val = to_double(path, info, "test_acc_at_best_val", 0, 1);
  c.final_loss = to_double(path, info, "final_loss", -inf, inf);  // finite: a diverged run writes no checkpoint
  c.final_train_acc = to_double(path, info, "final_train_acc", 0, 1);
  c.final_val_acc = to_double(path, info, "final_val_acc", 0, 1);
  c.final_test_acc = to_double(path, info, "final_test_acc", 0, 1);
  c.evals_since_best = static_cast<int>(int_field(path, info, "evals_since_best", 0, kMaxEpochs));
  c.train_seconds = to_double(path, info, "train_seconds", 0, inf);
  c.process_seconds = to_double(path, info, "process_seconds", 0, inf);
  c.best_train_seconds = to_double(path, info, "best_train_seconds", 0, inf);
  c.best_process_seconds = to_double(path, info, "best_process_seconds", 0, inf);
  c.target_epoch = info.count("target_epoch") ? static_cast<int>(int_field(path, info, "target_epoch", -1, c.epochs_done - 1)) : -1;
  c.target_train_seconds = to_double(path, info, "target_train_seconds", 0, inf);
  c.target_process_seconds = to_double(path, info, "target_process_seconds", 0, inf);
  c.target_acc = info.count("target_acc") ? to_double(path, info, "target_acc", -1, 1) : -1;

  std::vector<std::string> names;
  std::istringstream ns(info.at("tensors"));
  for (std::string n; ns >> n;) names.push_back(n);
  const auto shapes = r.array<int64_t>("param_shapes", names.size() * 2);
  int64_t total = 0;
  for (size_t k = 0; k < names.size(); ++k) {
    ParamTensor p;
    p.name = names[k];
    p.rows = static_cast<int>(shapes[2 * k]);
    p.cols = static_cast<int>(shapes[2 * k + 1]);
    if (shapes[2 * k] < 0 || shapes[2 * k + 1] < 0 || shapes[2 * k] > (1 << 30) || shapes[2 * k + 1] > (1 << 30))
      r.fail_in("param_shapes", fmt::format("tensor {} has shape [{}, {}]", p.name, shapes[2 * k], shapes[2 * k + 1]));
    total += p.size();
    c.tensors.push_back(std::move(p));
  }
  const auto values = r.array<float>("params", static_cast<uint64_t>(total));
  const auto m = r.array<float>("opt_m", static_cast<uint64_t>(total));
  const auto v = r.array<float>("opt_v", static_cast<uint64_t>(total));
  if (r.meta(1) != names.size())
    throw file_error(path, fmt::format("checkpoint info names {} tensors but its header {}", names.size(), r.meta(1)));
  int64_t at = 0;
  for (ParamTensor& p : c.tensors) {
    const auto part = [&](std::span<const float> all) { return all.subspan(static_cast<size_t>(at), static_cast<size_t>(p.size())); };
    check_finite(path, "value", p, part(values));
    check_finite(path, "optimizer moment opt_m", p, part(m));
    check_finite(path, "optimizer moment opt_v", p, part(v), true);
    p.value.assign(values.begin() + at, values.begin() + at + p.size());
    c.m.emplace_back(m.begin() + at, m.begin() + at + p.size());
    c.v.emplace_back(v.begin() + at, v.begin() + at + p.size());
    at += p.size();
  }
  c.metrics = text("metrics");
  if (r.has("best_params")) {
    const auto best = r.array<float>("best_params", static_cast<uint64_t>(total));
    at = 0;
    for (const ParamTensor& p : c.tensors) {
      ParamTensor b{p.name, p.layer, p.rows, p.cols, {}, {}};
      b.value.assign(best.begin() + at, best.begin() + at + p.size());
      c.best_tensors.push_back(std::move(b));
      at += p.size();
    }
  }
  check_metrics(path, c.metrics, c.epochs_done);
  return c;
}

void check_checkpoint_target(const std::string& path, const CheckpointTarget& saved, const CheckpointTarget& now) {
  auto refuse = [&](const std::string& what, const std::string& was, const std::string& is) {
    throw file_error(path, fmt::format("checkpoint is for another {} ({}; this run: {}); resume with the run's own "
                                       "inputs and options, or start over without --resume",
                                       what, was, is));
  };
  auto id = [](const FileIdentity& f) {
    return f.bytes == 0 ? std::string("built in memory") : fmt::format("{} bytes, checksum {:016x}", f.bytes, f.checksum);
  };
  if (saved.graph != now.graph) refuse("graph", id(saved.graph), id(now.graph));
  if (saved.partition != now.partition || saved.m != now.m || saved.n != now.n)
    refuse("partition", fmt::format("m = {}, n = {}, {}", saved.m, saved.n, id(saved.partition)),
           fmt::format("m = {}, n = {}, {}", now.m, now.n, id(now.partition)));
  if (saved.plan != now.plan) refuse("plan", id(saved.plan), id(now.plan));
  if (saved.model != now.model) refuse("model", saved.model, now.model);
  if (saved.optimizer != now.optimizer) refuse("optimizer", saved.optimizer, now.optimizer);
  if (saved.host_dtype != now.host_dtype) refuse("host dtype", saved.host_dtype, now.host_dtype);
  if (saved.normalize_features != now.normalize_features)
    refuse("feature normalization", saved.normalize_features ? "--normalize-features" : "raw features",
           now.normalize_features ? "--normalize-features" : "raw features");
}

}  // namespace ht
