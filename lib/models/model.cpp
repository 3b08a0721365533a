#include "models/model.hpp"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht {

const NameTable<ModelKind>& model_kind_names() {
  static const NameTable<ModelKind> names{{"gcn", ModelKind::gcn}, {"gat", ModelKind::gat}, {"sage", ModelKind::sage}};
  return names;
}

const NameTable<OptimizerKind>& optimizer_kind_names() {
  static const NameTable<OptimizerKind> names{{"adam", OptimizerKind::adam}, {"sgd", OptimizerKind::sgd}};
  return names;
}

std::string name_of(ModelKind kind) { return name_in(model_kind_names(), kind); }
std::string name_of(OptimizerKind kind) { return name_in(optimizer_kind_names(), kind); }

void unhandled_model_kind(ModelKind kind, const char* where) {
  throw Error(fmt::format("internal error: model kind {} reached {}, which has no case for it",
                          static_cast<int>(kind), where));
}

std::string model_title(ModelKind kind) {
  std::string s = name_of(kind);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

int default_hidden(ModelKind kind) {
  switch (kind) {
    case ModelKind::gcn: return 16;
    case ModelKind::gat: return 8;
    case ModelKind::sage: return 16;
  }
  unhandled_model_kind(kind, "default_hidden");
}

int ModelConfig::hidden_heads() const {
  switch (kind) {
    case ModelKind::gcn: return 1;
    case ModelKind::gat: return heads;
    case ModelKind::sage: return 1;
  }
  unhandled_model_kind(kind, "ModelConfig::hidden_heads");
}

int ModelConfig::output_heads() const {
  switch (kind) {
    case ModelKind::gcn: return 1;
    case ModelKind::gat: return out_heads;
    case ModelKind::sage: return 1;
  }
  unhandled_model_kind(kind, "ModelConfig::output_heads");
}

int ModelConfig::in_width(int l) const { return l == 0 ? dims[0] : out_width(l - 1); }

int ModelConfig::out_width(int l) const {
  switch (kind) {
    case ModelKind::gcn: return dims[l + 1];
    case ModelKind::sage: return dims[l + 1];
    case ModelKind::gat: return is_last(l) ? dims[l + 1] : dims[l + 1] * heads;  // hidden layers concatenate heads
  }
  unhandled_model_kind(kind, "ModelConfig::out_width");
}

Activation ModelConfig::activation(int l) const {
  if (is_last(l)) return Activation::none;
  switch (kind) {
    case ModelKind::gcn: return Activation::relu;
    case ModelKind::gat: return Activation::elu;
    case ModelKind::sage: return Activation::relu;
  }
  unhandled_model_kind(kind, "ModelConfig::activation");
}

void ModelConfig::validate() const {
  HT_CHECK(dims.size() >= 2, "a model needs at least an input and an output width (e.g. 1433-16-7)");
  for (int d : dims) HT_CHECK(d >= 1, "layer widths must be positive");
  HT_CHECK(heads >= 1 && out_heads >= 1, "heads must be >= 1");
  HT_CHECK(dropout >= 0 && dropout < 1, "dropout must be in [0, 1)");
  HT_CHECK(attn_dropout >= 0 && attn_dropout < 1, "attention dropout must be in [0, 1)");
}

ParamTensor& ModelParams::get(int layer, const std::string& what) {
  for (auto& t : tensors)
    if (t.layer == layer && t.name == fmt::format("l{}.{}", layer, what)) return t;
  throw Error(fmt::format("no parameter {} in layer {}", what, layer));
}
const ParamTensor& ModelParams::get(int layer, const std::string& what) const {
  return const_cast<ModelParams*>(this)->get(layer, what);
}
void ModelParams::zero_grad() {
  for (auto& t : tensors) std::fill(t.grad.begin(), t.grad.end(), 0.0f);
}
int64_t ModelParams::count() const {
  int64_t c = 0;
  for (const auto& t : tensors) c += t.size();
  return c;
}

namespace {
ParamTensor make(int layer, const std::string& what, int rows, int cols) {
  ParamTensor t;
  t.name = fmt::format("l{}.{}", layer, what);
  t.layer = layer;
  t.rows = rows;
  t.cols = cols;
  t.value.assign(t.size(), 0.0f);
  t.grad.assign(t.size(), 0.0f);
  return t;
}
void glorot(ParamTensor& t, uint64_t seed, int tensor_index, double fan_in, double fan_out) {
  const double a = std::sqrt(6.0 / (fan_in + fan_out));
  for (int64_t k = 0; k < t.size(); ++k) {
    const double u = rng::to_unit_double(rng::hash(seed, static_cast<uint64_t>(t.layer),
                                                   static_cast<uint64_t>(tensor_index), static_cast<uint64_t>(k)));
    t.value[k] = static_cast<float>((2.0 * u - 1.0) * a);
  }
}
}  // namespace

std::vector<ParamSpec> layer_param_specs(const ModelConfig& cfg, int l) {
  const int64_t in = cfg.in_width(l), out = cfg.dims[static_cast<size_t>(l) + 1], h = cfg.layer_heads(l);
  const auto glorot_spec = [](const char* what, int64_t rows, int64_t cols, int stream, double fan_in, double fan_out) {
    return ParamSpec{what, rows, cols, stream, fan_in, fan_out};
  };
  const auto bias = [&](int64_t cols) { return ParamSpec{"b", 1, cols}; };  // zeros
  std::vector<ParamSpec> s;
  switch (cfg.kind) {
    case ModelKind::gcn:
      s.push_back(glorot_spec("W", in, out, 0, in, out));
      if (cfg.bias) s.push_back(bias(out));
      return s;
    case ModelKind::gat:
      s.push_back(glorot_spec("W", in, h * out, 0, in, h * out));
      s.push_back(glorot_spec("att_src", h, out, 1, 1, out));
      s.push_back(glorot_spec("att_dst", h, out, 2, 1, out));
      if (cfg.bias) s.push_back(bias(cfg.out_width(l)));
      return s;
    case ModelKind::sage:
      // As PyG's SAGEConv (its Linear layers' default, kaiming_uniform with
      // a = √5): uniform in ±1/√in, which is glorot's bound with fans (6·in, 0).
      // Glorot's larger weights (±√(6/(in+out))) cost it 2 points on CiteSeer
      // and a slow start on deep, wide models (bench/RESULTS.md, session 11).
      s.push_back(glorot_spec("W", in, out, 0, 6.0 * static_cast<double>(in), 0));
      s.push_back(glorot_spec("W_root", in, out, 3, 6.0 * static_cast<double>(in), 0));  // its own stream (GAT's use 1, 2)
      // PyG's bias (lin_l's) starts in the same ±1/√in, not at 0.
      if (cfg.bias) s.push_back(glorot_spec("b", 1, out, 4, 6.0 * static_cast<double>(in), 0));
      return s;
  }
  unhandled_model_kind(cfg.kind, "layer_param_specs");
}

ModelParams init_params(const ModelConfig& cfg) {
  cfg.validate();
  ModelParams p;
  for (int l = 0; l < cfg.num_layers(); ++l)
    for (const ParamSpec& s : layer_param_specs(cfg, l)) {
      p.tensors.push_back(make(l, s.what, static_cast<int>(s.rows), static_cast<int>(s.cols)));
      if (s.stream >= 0) glorot(p.tensors.back(), cfg.seed, s.stream, s.fan_in, s.fan_out);
    }
  return p;
}

std::vector<float> gcn_inv_sqrt_degree(const GraphView& g) {
  std::vector<float> out(g.num_vertices);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    double d = 1.0;  // the self-loop (added or replacing an existing one)
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (static_cast<int64_t>(g.sources[i]) == v) continue;
      d += g.weights.empty() ? 1.0 : g.weights[i];
    }
    out[v] = static_cast<float>(1.0 / std::sqrt(d));
  }
  return out;
}

std::vector<float> sage_inv_degree(const GraphView& g) {
  std::vector<float> out(g.num_vertices);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    int64_t d = 0;
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) d += static_cast<int64_t>(g.sources[i]) == v ? 0 : 1;
    out[v] = d > 0 ? static_cast<float>(1.0 / static_cast<double>(d)) : 0.0f;
  }
  return out;
}

void Optimizer::step(ModelParams& p) {
  if (m_.empty()) {
    for (const auto& t : p.tensors) {
      m_.emplace_back(t.size(), 0.0f);
      v_.emplace_back(t.size(), 0.0f);
    }
  }
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, static_cast<double>(t_));
  for (size_t k = 0; k < p.tensors.size(); ++k) {
    ParamTensor& t = p.tensors[k];
    const bool decay = cfg_.weight_decay > 0 && (!cfg_.decay_first_layer_only || t.layer == 0);
    for (int64_t i = 0; i < t.size(); ++i) {
      float g = t.grad[i];
      if (decay) g += cfg_.weight_decay * t.value[i];
      if (cfg_.kind == OptimizerKind::sgd) {
        if (cfg_.momentum > 0) {
          m_[k][i] = cfg_.momentum * m_[k][i] + g;
          g = m_[k][i];
        }
        t.value[i] -= cfg_.lr * g;
      } else {
        m_[k][i] = cfg_.beta1 * m_[k][i] + (1 - cfg_.beta1) * g;
        v_[k][i] = cfg_.beta2 * v_[k][i] + (1 - cfg_.beta2) * g * g;
        const double mh = m_[k][i] / bc1, vh = v_[k][i] / bc2;
        t.value[i] -= static_cast<float>(cfg_.lr * mh / (std::sqrt(vh) + cfg_.eps));
      }
    }
  }
}

}  // namespace ht
