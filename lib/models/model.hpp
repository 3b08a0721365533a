#pragma once
// Model definitions shared by the reference trainer (the test oracle) and the
// training engine: configuration, parameter layout and deterministic
// initialization, dropout keying, GCN edge normalization, optimizers.
//
// Layer l (0-based, L layers) maps h^l -> h^{l+1}:
//   x = dropout(h^l)                      (rate `dropout`, mask keyed by ORIGINAL vertex id)
//   GCN: a = Â x;  z = a W + b;           Â = D^-1/2 (A + I) D^-1/2, D = in-degree incl. self-loop
//   GAT: g = x W (heads concatenated); e_uv = LeakyReLU(att_src·g_u + att_dst·g_v) per head;
//        α = softmax over in-edges of v (self-loop included); attention dropout on α;
//        out_v = Σ_u α_uv g_u; hidden layers concatenate heads, the output layer averages them; z = out + b
//   SAGE: z = W_n·mean_{u in N(v)} x_u + W_r·x_v + b (PyG SAGEConv's default: mean aggregator over
//        the in-edges without self-loops, root weight; a vertex without in-neighbors has mean 0)
//   h^{l+1} = act(z) for hidden layers (GCN, SAGE: ReLU, GAT: ELU), z itself for the last layer.
// Loss: mean softmax cross-entropy over training vertices.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/names.hpp"
#include "core/rng.hpp"
#include "graph/graph.hpp"

namespace ht {

enum class ModelKind { gcn, gat, sage };
enum class Activation { relu, elu, none };
enum class OptimizerKind { adam, sgd };

// "gcn", "gat", "sage" and "adam", "sgd": ht-train --model / --optimizer, checkpoints.
const NameTable<ModelKind>& model_kind_names();
const NameTable<OptimizerKind>& optimizer_kind_names();
std::string name_of(ModelKind kind);
std::string name_of(OptimizerKind kind);
// Code that depends on the model kind branches with a switch over ModelKind
// that lists every kind and has no default (-Werror=switch: a kind one of
// them misses is a compile error there). A switch whose cases all return
// ends with this call: a value that is no enumerator (a cast from a number)
// is an internal error naming `where`, never another model's path.
[[noreturn]] void unhandled_model_kind(ModelKind kind, const char* where);
// The name in capitals, for messages ("GCN", "GAT").
std::string model_title(ModelKind kind);
// The hidden width of --layers auto (16 for GCN, 8 per head for GAT, as
// their papers on Cora).
int default_hidden(ModelKind kind);

struct ModelConfig {
  ModelKind kind = ModelKind::gcn;
  std::vector<int> dims;        // e.g. {1433, 16, 7}; for GAT hidden dims are per head
  int heads = 1;                // GAT heads of hidden layers (concatenated)
  int out_heads = 1;            // GAT heads of the output layer (averaged)
  float dropout = 0.0f;         // on every layer's input
  float attn_dropout = 0.0f;    // GAT: on attention coefficients
  float leaky_slope = 0.2f;     // GAT
  bool bias = true;
  uint64_t seed = 1;            // initialization and dropout

  int num_layers() const { return static_cast<int>(dims.size()) - 1; }
  bool is_last(int l) const { return l == num_layers() - 1; }
  // Heads of the hidden layers (concatenated) and of the output layer
  // (averaged): GAT's, 1 for a model without heads.
  int hidden_heads() const;
  int output_heads() const;
  int layer_heads(int l) const { return is_last(l) ? output_heads() : hidden_heads(); }
  // Width of h^l (input of layer l): features for l = 0, else the previous layer's output.
  int in_width(int l) const;
  // Width of g = x W (all heads side by side).
  int transform_width(int l) const { return dims[l + 1] * layer_heads(l); }
  // Width of h^{l+1}.
  int out_width(int l) const;
  // Layer l's output is narrower than its input: there, transforming before
  // aggregating (x W, then the sparse product) sums and moves fewer columns
  // (SPEC §10). The one rule of GCN's automatic order (engine/layer_order.hpp)
  // and of SAGE's order (engine/sage_layer.cpp, and the reference's).
  bool narrows(int l) const { return out_width(l) < in_width(l); }
  Activation activation(int l) const;
  void validate() const;  // throws ht::Error on nonsense
};

// One parameter tensor, row-major.
struct ParamTensor {
  std::string name;  // "l0.W", "l0.b", "l1.att_src", ...
  int layer = 0;
  int rows = 0, cols = 0;
  std::vector<float> value;
  std::vector<float> grad;
  int64_t size() const { return static_cast<int64_t>(rows) * cols; }
};

// Parameters of a model, in a fixed order per layer:
//   GCN: W [in, out], b [out]
//   GAT: W [in, heads*out], att_src [heads, out], att_dst [heads, out], b [heads*out | out]
//   SAGE: W [in, out] (neighbors' mean), W_root [in, out] (the vertex itself), b [out]
struct ModelParams {
  std::vector<ParamTensor> tensors;
  ParamTensor& get(int layer, const std::string& what);
  const ParamTensor& get(int layer, const std::string& what) const;
  void zero_grad();
  int64_t count() const;
};

// One parameter tensor of a layer as the model declares it: its name, shape
// and initial values. Shapes in 64 bits: the memory checks count a model's
// parameters from its widths before refusing one too large (a width times its
// heads may not fit an int); init_params makes only models that fit.
struct ParamSpec {
  std::string what;         // "W", "b", "att_src", ...: the tensor is "l<layer>.<what>"
  int64_t rows = 0, cols = 0;
  int stream = -1;          // uniform in ±√(6 / (fan_in + fan_out)) (Glorot) on this stream of the seed's hash (the tensor index); -1: zeros
  double fan_in = 0, fan_out = 0;
  int64_t size() const { return rows * cols; }
};

// The model's parameter list of layer `layer`, in its fixed order (below):
// the one place that states a model's tensors. init_params makes them; the
// engine uploads, all-reduces and zeroes them in this order, the memory
// planners count them, checkpoints and .npz files store ModelParams' tensors.
std::vector<ParamSpec> layer_param_specs(const ModelConfig& cfg, int layer);

// Deterministic Glorot-uniform weights (counter-based on (seed, layer,
// tensor, index)), zero biases. Independent of partitioning and backend.
ModelParams init_params(const ModelConfig& cfg);

// Dropout: keep element (vertex, col) of layer l's input in `epoch`?
// Keyed by the vertex's ORIGINAL (graph file) id so it is partition-invariant.
// It is rng::hash(seed', epoch, layer, vertex, col), split so that a row's
// part is hashed once (dropout_row_hash) and each column adds one mix.
HT_HD uint64_t dropout_row_hash(uint64_t seed, int epoch, int layer, int64_t vertex) {
  uint64_t h = rng::mix64((seed ^ 0xD5A61266F0C9392CULL) ^ 0x6A09E667F3BCC909ULL);
  h = rng::mix64(h ^ static_cast<uint64_t>(epoch));
  h = rng::mix64(h ^ static_cast<uint64_t>(layer));
  return rng::mix64(h ^ static_cast<uint64_t>(vertex));
}
HT_HD bool dropout_keep_col(uint64_t row_hash, int col, float rate) {
  return rng::to_unit_float(rng::mix64(row_hash ^ static_cast<uint64_t>(col))) >= rate;
}
HT_HD bool dropout_keep(uint64_t seed, int epoch, int layer, int64_t vertex, int col, float rate) {
  return dropout_keep_col(dropout_row_hash(seed, epoch, layer, vertex), col, rate);
}
// Attention dropout on edge (src -> dst) of head `head` (ORIGINAL ids).
HT_HD bool attn_dropout_keep(uint64_t seed, int epoch, int layer, int head, int64_t src, int64_t dst,
                             float rate) {
  const uint64_t h = rng::hash(seed ^ 0x3C6EF372FE94F82BULL, static_cast<uint64_t>(epoch),
                               (static_cast<uint64_t>(layer) << 32) | static_cast<uint64_t>(head),
                               static_cast<uint64_t>(src), static_cast<uint64_t>(dst));
  return rng::to_unit_float(h) >= rate;
}

// GCN normalization degrees: for every vertex, 1/sqrt(1 + Σ in-edge weights
// excluding self-loops), i.e. the degree of A + I where an existing self-loop
// is replaced by one of weight 1 (PyG's add_remaining_self_loops does the same
// on unweighted graphs; on weighted graphs it keeps the loop's weight).
std::vector<float> gcn_inv_sqrt_degree(const GraphView& g);
// SAGE's mean weights: for every vertex, 1 / (its in-edges excluding
// self-loops), 0 for a vertex without any (edge weights ignored: the mean
// aggregator counts edges). The self-loop the plans add gets weight 0.
std::vector<float> sage_inv_degree(const GraphView& g);

// Optimizers (state per tensor). Weight decay is L2 added to the gradient
// (torch semantics); `decay_first_layer_only` reproduces Kipf & Welling.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  float lr = 0.01f;
  float weight_decay = 0.0f;
  bool decay_first_layer_only = false;
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float momentum = 0.0f;  // SGD
};

class Optimizer {
 public:
  explicit Optimizer(OptimizerConfig cfg) : cfg_(cfg) {}
  void step(ModelParams& p);  // uses p.tensors[k].grad
  const OptimizerConfig& config() const { return cfg_; }
  int64_t steps() const { return t_; }
  // State (for checkpoints).
  std::vector<std::vector<float>>& m() { return m_; }
  std::vector<std::vector<float>>& v() { return v_; }
  const std::vector<std::vector<float>>& m() const { return m_; }
  const std::vector<std::vector<float>>& v() const { return v_; }
  // Continues from a checkpoint: `steps` steps taken, moments m and v (Adam;
  // SGD keeps its momentum buffer in m), one vector per tensor.
  void restore(int64_t steps, std::vector<std::vector<float>> m, std::vector<std::vector<float>> v) {
    t_ = steps;
    m_ = std::move(m);
    v_ = std::move(v);
  }

 private:
  OptimizerConfig cfg_;
  int64_t t_ = 0;
  std::vector<std::vector<float>> m_, v_;
};

}  // namespace ht
