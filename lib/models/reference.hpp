#pragma once
// Reference trainer: the deliberately plain full-graph implementation of the
// models of models/model.hpp, used as the test oracle for the training
// engine. No partitions, no plans, no caching tricks: every layer is computed
// over all vertices, forward and backward, in DOUBLE precision (parameters
// stay float in ModelParams; they are widened once per pass).
//
// Vertex ids are the indices of the GraphView it receives; dropout masks are
// keyed by these ids (the engine maps its renumbered ids back to them).
// Epochs are whatever the caller passes; train() numbers them 0, 1, 2, ...
#include <cstdint>
#include <vector>

#include "graph/graph.hpp"
#include "models/model.hpp"

namespace ht {

// Loops over fewer rows than this stay serial: up to Cora-sized graphs the
// per-loop work is too small for OpenMP barriers to pay off, and on a loaded
// machine (tests in parallel) they cost several times the work itself.
inline constexpr int64_t kRefParallelRows = 32768;

// Row-major dense matrix of doubles.
struct RefMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> data;

  void assign(int64_t r, int64_t c) {
    rows = r;
    cols = c;
    data.assign(static_cast<size_t>(r * c), 0.0);
  }
  double* row(int64_t r) { return data.data() + r * cols; }
  const double* row(int64_t r) const { return data.data() + r * cols; }
  double& at(int64_t r, int64_t c) { return data[static_cast<size_t>(r * cols + c)]; }
  double at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

// Accuracy counts per split, and the training loss, of one forward pass.
// Vertices without a label (-1) are not counted.
struct EvalResult {
  double loss = 0;  // mean cross-entropy over training vertices
  int64_t train_correct = 0, train_total = 0;
  int64_t val_correct = 0, val_total = 0;
  int64_t test_correct = 0, test_total = 0;

  static double ratio(int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / b : 0.0; }
  double train_acc() const { return ratio(train_correct, train_total); }
  double val_acc() const { return ratio(val_correct, val_total); }
  double test_acc() const { return ratio(test_correct, test_total); }
};

// The self-looped topology both models aggregate over: for each destination
// v its in-edges except existing self-loops (duplicates kept, input order),
// then exactly one self-loop v -> v of weight 1. Plus the transpose (per
// source, the ids of its out-edges) for race-free backward gathers.
struct RefTopology {
  int64_t num_vertices = 0;
  std::vector<int64_t> offsets;      // N + 1, CSC by destination
  std::vector<int64_t> src, dst;     // per edge
  std::vector<double> weight;        // per edge (1 when the graph has none)
  std::vector<int64_t> out_offsets;  // N + 1, by source
  std::vector<int64_t> out_edges;    // edge ids grouped by source
  int64_t num_edges() const { return static_cast<int64_t>(src.size()); }
};
RefTopology make_ref_topology(const GraphView& g);

// The nonzero entries of each row of a matrix (CSR).
struct RefSparseRows {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> offsets;  // rows + 1
  std::vector<int32_t> index;    // column of each nonzero, ascending per row
  std::vector<double> values;
};

// Intermediates of one layer from the last forward pass.
struct RefLayerState {
  RefMatrix input;                 // x = dropout(h^l); empty for layer 0 (sparse features: input_rows)
  RefSparseRows input_rows;        // nonzeros of x, every layer
  std::vector<double> input_mask;  // [N * in] dropout factor of x (0 or 1/(1-p)); empty without
                                   // dropout and for layer 0 (no gradient flows into features)
  RefSparseRows aggregate;         // GCN: a = Â x; SAGE: the neighbors' mean (aggregate-first layers; ref_dense() widens it); else empty
  RefMatrix transform;             // GAT: g = x W, heads side by side
  RefMatrix score_src;             // GAT: [N, heads] att_src·g_v
  RefMatrix score_dst;             // GAT: [N, heads] att_dst·g_v
  RefMatrix pre_attn;              // GAT: [E', heads] att_src·g_u + att_dst·g_v before LeakyReLU
  RefMatrix alpha;                 // GAT: [E', heads] softmax over in-edges, before attention dropout
  RefMatrix attn_mask;             // GAT: [E', heads] attention dropout factor (0 or 1/(1-p)), else 1
  RefMatrix z;                     // pre-activation
  RefMatrix output;                // h^{l+1} = act(z) (= z for the last layer)
};

// Outcome of train(): per-epoch results and the best-validation epoch.
struct ReferenceRun {
  std::vector<double> train_loss;  // per epoch, with dropout
  std::vector<EvalResult> eval;    // per epoch, after the optimizer step
  int best_epoch = -1;             // first epoch with the highest validation accuracy
  double best_val_acc = 0;
  double test_acc_at_best = 0;
};

class ReferenceTrainer {
 public:
  // The graph's arrays must outlive the trainer. Parameters come from
  // init_params(cfg); replace them through params() if needed.
  ReferenceTrainer(const GraphView& graph, ModelConfig cfg, OptimizerConfig opt);

  // Forward over all vertices (dropout when `training`), loss = mean softmax
  // cross-entropy over split==train vertices, backward into
  // params().tensors[k].grad (zeroed first). Returns the loss.
  double forward_backward(int epoch, bool training);
  // Forward and loss only (gradients untouched).
  double forward_loss(int epoch, bool training);
  // One optimizer step with the current gradients.
  void step();
  // Forward without dropout; loss and accuracies.
  EvalResult evaluate();
  // `epochs` rounds of forward_backward(e, true) + step() + evaluate().
  ReferenceRun train(int epochs);

  ModelParams& params() { return params_; }
  const ModelParams& params() const { return params_; }
  const ModelConfig& config() const { return cfg_; }
  const RefTopology& topology() const { return topo_; }
  Optimizer& optimizer() { return optimizer_; }

  // Last forward pass: logits = the last layer's z.
  const RefMatrix& logits() const { return layers_.back().z; }
  const RefLayerState& layer(int l) const { return layers_.at(static_cast<size_t>(l)); }
  // Last backward pass: ∇h^l for l >= 1 (∇ of layer l's input before dropout),
  // and the double-precision gradient of params().tensors[k].
  const RefMatrix& input_grad(int l) const { return input_grads_.at(static_cast<size_t>(l)); }
  const std::vector<double>& param_grad(size_t k) const { return grads_.at(k); }
  // GCN: D^-1/2 of Â (self-loop replaced by one of weight 1), in double.
  const std::vector<double>& gcn_inv_sqrt_deg() const { return inv_sqrt_deg_; }
  // SAGE: the mean's weight of each edge of topology() (0 on the self-loop).
  const std::vector<double>& sage_coef() const { return sage_coef_; }

 private:
  // Parameters of one layer widened to double, and where their gradients go.
  struct LayerParams {
    RefMatrix W, att_src, att_dst, W_root;
    std::vector<double> b;
    int iW = -1, iatt_src = -1, iatt_dst = -1, ib = -1, iW_root = -1;  // indices into params_.tensors
  };

  LayerParams widen(int l) const;
  double forward(int epoch, bool training);
  void backward();
  void apply_input_dropout(int l, int epoch, bool training, const RefMatrix* h);
  double loss_and_grad(RefMatrix* dlogits) const;
  void accumulate(int index, const std::vector<double>& g);

  void gcn_forward(int l, const LayerParams& p);
  void gcn_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx);
  void gat_forward(int l, int epoch, bool training, const LayerParams& p);
  void gat_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx);
  void sage_forward(int l, const LayerParams& p);
  void sage_backward(int l, const LayerParams& p, const RefMatrix& dz, RefMatrix* dx);

  GraphView graph_;
  ModelConfig cfg_;
  ModelParams params_;
  Optimizer optimizer_;
  RefTopology topo_;
  std::vector<double> inv_sqrt_deg_;
  std::vector<double> gcn_coef_;  // per edge of topo_: dinv[dst] * w * dinv[src]
  std::vector<double> sage_coef_;  // per edge of topo_: 1 / (dst's edges but its self-loop), 0 on the self-loop
  RefSparseRows features_;        // h^0 (nonzeros) in double
  std::vector<RefLayerState> layers_;
  std::vector<RefMatrix> input_grads_;
  std::vector<std::vector<double>> grads_;
  int64_t num_train_ = 0;
};

// Products with a layer input as the left operand go through its nonzeros
// (sparse bag-of-words features, ReLU zeros); deterministic summation order.
RefSparseRows ref_nonzeros(const RefMatrix& x);
RefMatrix ref_dense(const RefSparseRows& x);
void ref_matmul(const RefSparseRows& x, const RefMatrix& w, RefMatrix* y);     // y = x w
void ref_matmul_tn(const RefSparseRows& x, const RefMatrix& g, RefMatrix* y);  // y = x^T g
void ref_matmul_nt(const RefMatrix& g, const RefMatrix& w, RefMatrix* y);      // y = g w^T
// out_u += Σ_{e = u -> v} coef_e g_v (the edge-weighted product's transpose,
// Âᵀ g or Mᵀ g), gathered per source through the topology's out-edges.
void ref_add_transpose_product(const RefTopology& topo, const std::vector<double>& coef, const RefMatrix& g,
                               RefMatrix* out);

}  // namespace ht
