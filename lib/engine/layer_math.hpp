#pragma once
// The layer seam (issue 38): one GNN layer's per-batch math in terms of the
// generic Device primitives, behind one interface, one implementation per
// model (gcn_layer.cpp, gat_layer.cpp), chosen by one factory
// (make_layer_math). The Trainer's schedule (which batch loads, computes and
// returns, on which queue) hands a layer a LayerBatch of views of the slot's
// buffers and calls forward / backward; the layer issues the Device calls.
// The facts about a model that the rest of the engine branches on (what the
// topology carries, what backward gathers, what the store keeps) are its
// ModelTraits, chosen by the same factory file (model_traits).
//
// The implementations issue exactly the Device calls the Trainer issued
// before the seam, in the same order (that keeps the GPU's bits: every
// equivalence test unchanged).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "engine/device_buffers.hpp"
#include "engine/executor.hpp"
#include "engine/layer_order.hpp"
#include "models/model.hpp"

namespace ht {

// One layer's parameters and their gradients on one device, in the order of
// the model's parameter list (layer_param_specs, models/model.hpp): the
// Trainer uploads, all-reduces and zeroes them without knowing their names;
// the layer math finds its tensors by name once (LayerMath::param_index).
struct LayerParams {
  std::vector<DevArray<float>> value, grad;
  // Tensor k's values or gradient; an empty array for k < 0 (a tensor the
  // model's configuration leaves out, e.g. the bias without --bias).
  DevArray<float> at(int k) const { return k < 0 ? DevArray<float>{} : value[static_cast<size_t>(k)]; }
  DevArray<float> grad_at(int k) const { return k < 0 ? DevArray<float>{} : grad[static_cast<size_t>(k)]; }
};

// The facts about a model that code outside its layer math branches on; the
// same for every layer of the model.
struct ModelTraits {
  // Backward gathers the neighbors' rows again (GAT recomputes attention
  // from them; SAGE's transform-first layers); else it reads what forward
  // stored (GCN's cached aggregate or ∇t) and gathers nothing. Per layer:
  // backward_gathers(opt, l) (store_layout.hpp), which takes SAGE's layers
  // that store their mean out (Trainer::gathers, Trainer::hands_off).
  bool backward_gathers = false;
  // The packed topology carries per-edge weights (GCN's Â = D^-1/2 (A+I) D^-1/2,
  // from the degrees: Trainer's inv_sqrt_deg_).
  bool edge_weights = false;
  // The weights are SAGE's mean instead (1/deg(v) on v's in-edges, 0 on its
  // self-loop: sage_inv_degree, EdgeKeys::inv_deg).
  bool mean_weights = false;
  // The packed topology carries per-edge dropout keys (GAT's attention dropout).
  bool edge_keys = false;
  // Attention: GAT's device scratch (Device::gat_scratch, reserved by setup).
  bool attention = false;
  // Each layer keeps a per-vertex matrix in the vertex store for backward
  // (GCN: the aggregate a^l, or t^l / ∇t^l when transform-first): store_.agg.
  bool stores_layer_matrix = false;
  // Only the layers that aggregate first by the widths (ModelConfig::narrows
  // false) keep one: their aggregate (SAGE's mean), which forward writes and
  // backward reads (LayerBatch::agg) besides the rows it gathers, in place of
  // a second sparse product. Which layers keep a matrix, for every model:
  // stores_layer_matrix(opt, l) (store_layout.hpp).
  bool stores_wide_aggregates = false;
  // The layer runs in either order of its products, as --gcn-order picks
  // (layer_order.hpp: GCN's transform-first, on each vertex's owner); else
  // the model's layer math picks its own (SAGE: by the widths, on the chunk).
  bool gcn_orders = false;
  // Weight matrices [in, out · heads] per layer: ht-train's model size check
  // (train_job.cpp's model_need) estimates the parameters from the widths
  // with it, before the model is known to fit.
  int weight_matrices = 1;
  // ht-train's and ht-partition's options that apply to this model only
  // (refused with any other: apps/train_options.hpp); static strings, so
  // that the traits stay cheap to make.
  std::span<const char* const> options;
  // The model's own device buffers beyond the engine's (device_buffers.hpp),
  // declared in its layer file: setup allocates them in this order and hands
  // them to the layer math (LayerBatch::scratch), the planners count them.
  // Null: none.
  std::vector<DeviceBuffer> (*buffers)(const ModelBufferShape&) = nullptr;
};

// What one batch's layer math reads and writes on one device: views of the
// Trainer's buffers for this batch's slot.
struct LayerBatch {
  Device& d;
  const DevTopology& topo;
  int64_t nd = 0;           // destination rows of the batch
  int64_t buffer_rows = 0;  // rows of the merged buffers
  // The rows [0, active_rows) hold everything the step's topology reads: the
  // buffer less the second remote area on even steps (DevicePlan::remote_shift),
  // so that a product over the gathered rows (GAT's transform) skips it.
  int64_t active_rows = 0;
  // The same rows as two ranges whose sizes and relative places do not depend
  // on the buffer's layout (one remote area or two): [0, head_rows), the
  // transition rows (baseline mode: every row), and [remote_row0,
  // remote_row0 + remote_rows), the step's remote area. A product that sums
  // over the gathered rows (SAGE's and GAT's ∇W) runs over each range on its
  // own, so that a second area's place changes neither its shapes nor its
  // sums: kept remote rows and early pulls give the same bits.
  int64_t head_rows = 0, remote_row0 = 0, remote_rows = 0;
  // The merged data buffer's gathered rows (t^l when transform-first, else
  // x^l: buffer_rows x gather width) and, in backward, their gradients.
  // A backward that gathers nothing (backward_gathers(opt, l) false) must
  // not read X (it holds no rows of its batch): only G, where its gradients
  // return.
  DevMat X, G;
  // nd x out width: pre-activation and output, and (backward) their gradients.
  DevMat Z, H, dZ, dH;
  // A SAGE backward that gathers nothing: x_v, the destinations' own rows of
  // x^l (nd x in, the input dropout applied), loaded by the schedule as a
  // batch's own rows into H's rows (h^{l+1} is not loaded then: the layer
  // writes its recomputed h elsewhere); else empty (the layer copies x_v
  // out of X).
  DevMat own{};
  // Backward of a ReLU layer whose output h^{l+1} the GPU cache holds in fp32
  // on this device: the destinations' rows of it (nd x out, read only), the
  // activation's mask without recomputing z (relu'(z + b) = [h > 0], the same
  // bits: h = max(z + b, 0) was computed from the same z). Else empty: the
  // layer recomputes z where its activation needs it.
  DevMat out{};
  // The slot's aggregate rows (nd x max input width): forward writes the
  // cached aggregate there (out_a); backward reads it (in_a) where the layer
  // stores one (stores_layer_matrix(opt, l)), else it is scratch.
  DevArray<float> agg;
  LayerParams& p;
  DropoutSpec attn;  // attention dropout (GAT)
  // The model's own buffers on this device (ModelTraits::buffers, those setup
  // allocates), in the order the model declared them.
  std::span<const DevArray<float>> scratch;
};

// The gathered rows' products range by range (LayerBatch::head_rows): the
// same shapes and sums with one remote area or two, and never over the other
// area (idle in this step). f(first row, rows).
template <typename F>
void for_each_row_range(const LayerBatch& b, F f) {
  HT_ASSERT(b.head_rows + b.remote_rows <= b.active_rows && b.remote_row0 + b.remote_rows <= b.active_rows);
  if (b.head_rows > 0) f(int64_t{0}, b.head_rows);
  if (b.remote_rows > 0) f(b.remote_row0, b.remote_rows);
}

class LayerMath {
 public:
  virtual ~LayerMath() = default;
  virtual ModelKind kind() const = 0;
  virtual ModelTraits traits() const = 0;
  int layer() const { return layer_; }
  // Whether this layer computes t = x W on each vertex's owner before the
  // chunks aggregate t (a GCN order, layer_order.hpp); false for GAT.
  virtual bool transform_first() const { return false; }

  // Forward of one batch: Z and H = act(Z + b) from the gathered rows X.
  // Returns the rows backward reads back from the store (GCN's cached
  // aggregate, SAGE's mean, to write to the layer's store matrix), else an
  // empty matrix: exactly where stores_layer_matrix(opt, l) keeps one.
  virtual DevMat forward(const LayerBatch& b) const = 0;
  // Backward, first part, before the next layer's fused transform backward
  // and the dropout of ∇h: recomputes H (and Z) where the layer can without
  // its neighbors (GCN aggregate-first, from the cached aggregate). H is then
  // what the fused transform backward reads. Not called where LayerBatch::out
  // holds h^{l+1}: backward takes the mask from it.
  virtual void recompute_output(const LayerBatch&) const {}
  // Backward of one batch given dH: the parameter gradients (added) and the
  // gathered rows' gradients, added into G (none for layer 0).
  virtual void backward(const LayerBatch& b) const = 0;

  // Transform-first layers only (transform_first()), on a batch's own rows,
  // vertex-wise (Trainer::transform_batch, transform_backward_batch, and the
  // fused transform_rows, transform_backward_rows; the Trainer applies the
  // input dropout to X first): t = x W into T, and its backward ∇W += xᵀ ∇t
  // and, when dX is given (not layer 0), ∇x = ∇t Wᵀ. Other layers refuse
  // them (an internal error: the schedule runs no transform pass for them).
  virtual void transform(Device& d, DevMat X, DevMat T, const LayerParams& p) const;
  virtual void transform_backward(Device& d, DevMat X, DevMat dT, DevMat dX, LayerParams& p) const;

 protected:
  explicit LayerMath(const ModelConfig& m, int layer);
  // The place of tensor `what` in this layer's parameter list (LayerParams'
  // order), -1 when the configuration leaves it out.
  int param_index(const char* what) const;
  std::vector<ParamSpec> params_;  // layer_param_specs(model, layer)
  int layer_ = 0;
  int64_t in_w_ = 0, out_w_ = 0, tw_ = 0;  // widths of h^l, h^{l+1} and g = x W
  int heads_ = 1;
  bool last_ = false;
  float leaky_slope_ = 0.0f;
  Act act_ = Act::none;
};

// The implementation of layer `layer` of model `m`, the GCN order picking
// the order of its products. A kind without an implementation is refused
// (ht::Error). The factory (layer_math.cpp) is the one place that lists the
// implementations.
std::unique_ptr<LayerMath> make_layer_math(const ModelConfig& m, GcnOrder order, int layer);
// The model's traits, from the same factory file.
ModelTraits model_traits(ModelKind kind);

// The engine's activation of a model activation.
Act to_act(Activation a);

namespace engine_detail {

inline DevMat view(DevArray<float> storage, int64_t rows, int64_t cols) {
  HT_ASSERT(rows * cols <= storage.size);
  return {storage.data, rows, cols};
}

}  // namespace engine_detail

}  // namespace ht
