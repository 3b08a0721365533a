#pragma once
// The training loop of Algorithm 1 over a plan: per layer and batch, dedup
// load of h^l (Algorithm 2), chunk compute on every device, h^{l+1} written to
// host; backward per layer (last to first) and batch with recomputation (GAT)
// or cached aggregates (GCN), dedup gradient return (Algorithm 3); weight
// gradients all-reduced, then one optimizer step applied to every replica.
#include <memory>
#include <vector>

#include "engine/device_plan.hpp"
#include "engine/executor.hpp"
#include "engine/layer_order.hpp"
#include "engine/trainer_options.hpp"
#include "engine/vertex_store.hpp"
#include "graph/graph.hpp"
#include "models/model.hpp"
#include "plan/plan.hpp"

namespace ht {


// Bytes of the vertex store (h^0..h^L, ∇x^1..∇x^L, and per GCN layer the
// cached aggregate or the transform t / ∇t).
int64_t vertex_store_bytes(const ModelConfig& m, GcnOrder order, int64_t num_vertices);

struct EpochResult {
  double loss = 0;        // training loss of the (dropout) training forward
  double train_acc = 0, val_acc = 0, test_acc = 0;
  double eval_loss = 0;   // loss of the evaluation forward
  double seconds = 0;
  // Time breakdown (seconds): host->device loads, device<->device, compute, CPU accumulation.
  // Busy time of each kind of work, summed over the devices' queues (work of
  // different kinds overlaps, so these add up to more than `seconds`).
  double t_h2d = 0, t_d2d = 0, t_compute = 0, t_cpu = 0;
  // Exposed time: the epoch's wall time split by what was running, read from a
  // per-queue timeline (CUDA events on GPUs, host clocks on the CPU executor).
  // At every instant the time goes to the first busy kind in the order
  // compute, h2d, d2h, host (CPU accumulation), else to idle (host issue,
  // optimizer, waits); the five add up to `seconds`.
  double x_compute = 0, x_h2d = 0, x_d2h = 0, x_host = 0, x_idle = 0;
};

struct Evaluation {
  double loss = 0, train_acc = 0, val_acc = 0, test_acc = 0;
  double seconds = 0;  // wall time of the evaluation forward
};

class Trainer {
 public:
  // `g` is the graph in the plan's NEW ids; `orig_id[v]` is the graph file id
  // of new id v (dropout keys, exported predictions).
  Trainer(Executor& exec, const GraphView& g, std::span<const int64_t> orig_id, const Plan& plan,
          TrainerOptions opt);
  ~Trainer();

  // One training epoch: forward (with dropout), loss, backward, optimizer step.
  EpochResult train_epoch(int epoch);
  // Forward without dropout over every vertex; accuracies by split.
  Evaluation evaluate();
  // Loss and weight gradients of one epoch without the optimizer step (tests).
  double compute_gradients(int epoch);

  // Read-only: parameters change through train_epoch and set_params, which
  // also copy them to every device.
  const ModelParams& params() const { return params_; }
  void set_params(const ModelParams& p);  // e.g. loaded from a checkpoint
  Optimizer& optimizer() { return optimizer_; }
  // Logits of the last forward, rows in new ids (row-major, N x C).
  std::vector<float> logits() const;
  bool store_on_device() const { return store_.residence == Residence::device; }
  const LinkCounters& counters() const { return exec_.counters(); }

 private:
  struct Layer;   // per-device parameters and gradients of one layer
  struct DeviceState;
  void setup_devices();
  void upload_params();
  double forward(int epoch, bool training, LossStats* stats);
  void backward(int epoch);
  // Algorithm 2 for `src` (rows of `width` floats); input dropout of layer
  // `drop_layer` applied on the way (none when negative).
  void load_inputs(const HostMat& src, int64_t width, int batch, int drop_layer, int epoch, bool training);
  void load_layer_inputs(int layer, int batch, int epoch, bool training);
  void forward_batch(int layer, int batch, bool training, int epoch, LossStats* stats);
  void backward_batch(int layer, int batch, int epoch);
  // Transform-first GCN: the vertex-wise passes over each batch's own rows.
  void transform_batch(int layer, int batch, int epoch, bool training);
  void transform_backward_batch(int layer, int batch, int epoch);
  // Algorithm 3 into `dst` (rows of `width` floats).
  void return_gradients(const HostMat& dst, int64_t width, int batch);
  bool transform_first(int layer) const { return ht::transform_first(opt_.model, opt_.gcn_order, layer); }
  void reduce_and_collect_grads();
  // Dropout of a layer's input / attention; `keys` = the device's copy of the
  // original vertex ids.
  DropoutSpec input_dropout(int layer, int epoch, bool training, const int64_t* keys) const;
  DropoutSpec attn_dropout(int layer, int epoch, bool training, const int64_t* keys) const;
  HostMat alloc_store(int64_t rows, int64_t cols);
  void count_host_rows(int64_t rows, int64_t width, bool to_device);
  // Rows [v0, v0 + src.rows) of `dst` = src: write-behind with the batch's
  // buffer slot when copies overlap, else in line.
  void write_out(Device& d, DevMat src, const HostMat& dst, int64_t v0, int slot);
  // dst = rows [v0, v0 + dst.rows) of `src` (a batch's own rows), counted.
  void read_in(Device& d, const HostMat& src, int64_t v0, DevMat dst);
  DevMat own_input(DeviceState& st, int layer, int batch, int epoch, bool training);
  void drain();

  Executor& exec_;
  const GraphView& g_;
  std::span<const int64_t> orig_id_;
  const Plan& plan_;
  TrainerOptions opt_;
  ModelParams params_;
  Optimizer optimizer_;
  VertexStore store_;
  std::vector<float> inv_sqrt_deg_;
  int64_t num_train_ = 0;
  std::vector<std::unique_ptr<DeviceState>> dev_;
  EpochResult timing_;
};

}  // namespace ht
