// The math of one batch on one device (Algorithm 1's per-chunk work), issued
// on the compute queue; outputs go to host on the store queue (publish).
#include <vector>

#include "core/error.hpp"
#include "engine/trainer.hpp"
#include "engine/trainer_state.hpp"

namespace ht {

using engine_detail::view;

struct Trainer::BatchView {
  Device& d;
  int slot;
  int64_t nd, v0;  // the chunk's rows: nd destinations from new id v0
};

// Start of a batch's compute on the compute queue: its loads are done and,
// when it writes outputs behind, batch k - 2's copies have read the slot's
// output buffers.
Trainer::BatchView Trainer::start_batch(DeviceState& st, int j, bool writes_outputs) {
  Device& d = *st.dev;
  const int s = st.slot_of[j];
  const ChunkPlan& c = *st.plan.steps[j].plan;
  d.use(Queue::compute);
  d.wait(d, st.loaded[s]);
  if (writes_outputs && opt_.overlap_copies) d.wait(d, st.stored[s]);
  d.begin_work();
  for (const DeviceState::Widen& w : st.widen_pending[s]) d.widen_rows(w.raw, store_dtype(), w.dst);
  st.widen_pending[s].clear();
  for (const DeviceState::TierPatch& p : st.tier_patch[s]) patch_tier_rows(st, p.batch, p.dst);
  st.tier_patch[s].clear();
  return {d, s, c.num_dst(), c.dst_begin};
}

// End of a batch's compute: outputs go to host on the store queue (written
// behind) or in line on the compute queue; `computed` frees the slot's inputs.
// `batch_stored` marks the batch's outputs on host for the next pass.
void Trainer::publish(DeviceState& st, int s, int j, const std::vector<Output>& outputs) {
  Device& d = *st.dev;
  const Event done = st.batch_stored[pass_seq_ & 1][j];
  for (const Output& o : outputs) write_tier(st, j, o);
  // 16-bit stores: each output rounded into the slot's raw outputs, on compute.
  std::vector<DevArray<std::byte>> raw(outputs.size());
  if (store_dtype() != StoreDtype::f32) {
    int64_t used = 0;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (source(st, *outputs[k].dst).dtype == StoreDtype::f32) continue;  // an fp32 accumulator in the GPU cache
      const int64_t bytes = outputs[k].rows.rows * outputs[k].rows.cols * dtype_bytes(store_dtype());
      HT_ASSERT(used + bytes <= st.raw_out[s].size);
      raw[k] = st.raw_out[s].sub(used, bytes);
      used += bytes;
      d.narrow_rows(outputs[k].rows, store_dtype(), raw[k]);
    }
  }
  if (!opt_.overlap_copies) {
    for (size_t k = 0; k < outputs.size(); ++k) write_out(st, outputs[k].rows, raw[k], *outputs[k].dst, outputs[k].v0);
    d.end_work(WorkKind::compute);
    d.record(st.computed[s]);
    d.record(done);
    return;
  }
  d.end_work(WorkKind::compute);
  d.record(st.computed[s]);
  d.use(Queue::store);
  d.wait(d, st.computed[s]);
  if (!outputs.empty()) {
    d.begin_work();
    for (size_t k = 0; k < outputs.size(); ++k) write_out(st, outputs[k].rows, raw[k], *outputs[k].dst, outputs[k].v0);
    d.end_work(WorkKind::d2h);
    d.record(st.stored[s]);
  }
  d.record(done);
}

// A written matrix's rows in the row tier: the batch's own rows there, copied
// on the compute queue as it publishes (rounded to the store's type as the
// host copy is), before any later batch of this device reads them.
void Trainer::write_tier(DeviceState& st, int j, const Output& out) {
  const DeviceState::RowTier* tier = st.tier_of(*out.dst);
  if (!tier || tier->own_rows[j].size == 0) return;
  const DeviceState::RowTier& t = *tier;
  Device& d = *st.dev;
  const DevIdx own = t.own_rows[j];
  const int64_t cols = out.rows.cols, slot0 = t.own_slot0[j];
  HT_ASSERT(cols == t.rows.cols);
  const HostMat src{out.rows.data, out.rows.rows, cols, d.index()};
  if (t.rows.dtype == StoreDtype::f32) {
    d.gather_from_host(src, own, DevIdx{nullptr, own.size}, DevMat{t.rows.row(slot0), own.size, cols}, DropoutSpec{});
    return;
  }
  const DevMat tmp = view(t.scratch, own.size, cols);
  d.gather_from_host(src, own, DevIdx{nullptr, own.size}, tmp, DropoutSpec{});
  d.narrow_rows(tmp, t.rows.dtype, DevArray<std::byte>{t.rows.row_bytes(slot0), own.size * cols * t.rows.elem_bytes()});
}

// The views of the slot's buffers layer l's math works on: forward reads the
// gathered rows x (or t) and writes z, h and the cached aggregate (out_a);
// backward reads ∇h, h (loaded or recomputed) and the aggregate (in_a), and
// adds the gathered rows' gradients into g.
LayerBatch Trainer::layer_batch(DeviceState& st, int l, int j, int s, int64_t nd, bool forward, bool training,
                                int epoch) {
  const ModelConfig& m = opt_.model;
  const int64_t out_w = m.out_width(l), gw = gather_width(m, opt_.gcn_order, l), rows = st.plan.buffer_rows;
  const int64_t active = st.plan.active_rows(j);
  // Baseline mode's buffer has no remote area: one range.
  const bool areas = opt_.comm != CommMode::baseline;
  LayerBatch b{.d = *st.dev,
               .topo = st.lists[s].topo,
               .nd = nd,
               .buffer_rows = rows,
               .active_rows = active,
               .head_rows = areas ? st.plan.trans_capacity : active,
               .remote_row0 = st.plan.remote_base(j),
               .remote_rows = areas ? active - st.plan.remote_base(j) : 0,
               .X = view(st.x, rows, gw),
               .G = forward ? DevMat{} : view(st.g, rows, gw),
               .Z = view(st.z, nd, out_w),
               .H = view(forward ? st.out_h[s] : st.in_h[s], nd, out_w),
               .dZ = forward ? DevMat{} : view(st.dz, nd, out_w),
               .dH = forward ? DevMat{} : view(st.in_dh[s], nd, out_w),
               .own = !forward && loads_own_rows(l) ? view(st.in_h[s], nd, m.in_width(l)) : DevMat{},
               .out = forward ? DevMat{} : cached_output_rows(st, l, st.plan.steps[j].plan->dst_begin, nd),
               .agg = forward ? st.out_a[s] : st.in_a[s],
               .p = st.layers[l],
               .attn = attn_dropout(l, epoch, training, st.keys.data),
               .scratch = st.model_buffers};
  return b;
}

void Trainer::forward_batch(DeviceState& st, int l, int j, bool training, int epoch) {
  const ModelConfig& m = opt_.model;
  const int64_t out_w = m.out_width(l);
  const bool last = m.is_last(l);
  const auto [d, s, nd, v0] = start_batch(st, j, true);
  const LayerBatch b = layer_batch(st, l, j, s, nd, true, training, epoch);
  std::vector<Output> outputs;
  // z, h = act(z + b) from the gathered rows: t^l (out_w) when transform-first, else x^l (in_w).
  const DevMat cached = layer_math_[l]->forward(b);
  // e.g. GCN's a^l, for backward: an evaluation's forward has no backward
  // (the next training forward writes it again), so it leaves it unwritten.
  if (cached.data && training) outputs.push_back({cached, &store_.agg[l], v0});
  const DevMat H = b.H;
  if (h_on_host(l + 1)) outputs.push_back({H, &store_.h[l + 1], v0});
  if (!last && fused_transform(l + 1)) outputs.push_back(transform_rows(st, l + 1, s, H, v0, training, epoch));
  if (forwards(l)) forward_rows(st, l, j, transform_first(l + 1) ? outputs.back().rows : H, training, epoch);
  if (last) {
    DevMat dL = training ? view(st.out_dl[s], nd, out_w) : DevMat{};
    d.softmax_xent(H, st.labels, st.split, v0, 1.0f / static_cast<float>(num_train_), dL);
    if (training) outputs.push_back({dL, &store_.grad[l + 1], v0});
  }
  publish(st, s, j, outputs);
}

void Trainer::backward_batch(DeviceState& st, int l, int j, int epoch) {
  const ModelConfig& m = opt_.model;
  const int L = m.num_layers();
  const auto [d, s, nd, v0] = start_batch(st, j, false);
  const LayerMath& math = *layer_math_[l];
  const LayerBatch b = layer_batch(st, l, j, s, nd, false, true, epoch);
  // x_v loaded as own rows (issue_loads): the input dropout the gather applies.
  if (b.own.data) d.dropout_rows(b.own, v0, input_dropout(l, epoch, true, st.keys.data));
  const DevMat dH = b.dH;
  const bool fused = l + 1 < L && fused_transform(l + 1);
  if (receiving_) take_handoff(st, j, fused ? view(st.in_t[s], nd, m.out_width(l + 1)) : dH);
  // h^{l+1} where the layer recomputes it without its neighbors, unless the
  // GPU cache holds it (b.out: the mask without the products).
  if (!b.out.data) math.recompute_output(b);
  cached_masks_ += b.out.data ? 1 : 0;
  // ∇x^{l+1} from the next layer's fused transform backward (h^{l+1}:
  // cached, loaded or recomputed above), else loaded.
  if (fused) transform_backward_rows(st, l + 1, s, b.out.data ? b.out : b.H, dH, v0, epoch);
  if (l + 1 < L) {  // ∇h^{l+1} = mask ⊙ ∇x^{l+1}: the next layer's input dropout
    d.dropout_rows(dH, v0, input_dropout(l + 1, epoch, true, st.keys.data));
  }
  // Parameter gradients, and the gathered rows' gradients (∇t^l or ∇x^l) into g.
  math.backward(b);
  // No `computed` here: the gradient return still reads the step's lists in
  // the ring slot (Trainer::run_pass records it after the return).
  d.end_work(WorkKind::compute);
}

// H itself, or (dropout active) its dropped copy in `scratch`: h may still be
// on its way to the host, or be needed undropped later in the batch.
DevMat Trainer::dropped_input(Device& d, DevMat H, DevArray<float> scratch, int64_t v0, const DropoutSpec& drop) {
  if (!drop.active) return H;
  const DevMat X = view(scratch, H.rows, H.cols);
  d.copy(H, X);
  d.dropout_rows(X, v0, drop);
  return X;
}

// Fused transform of layer k (TrainerOptions::fuse_transforms) on the rows of
// h^k a forward batch just computed: the same products as transform_batch.
// The dropout copy goes to z (free once h is computed).
Trainer::Output Trainer::transform_rows(DeviceState& st, int k, int s, DevMat H, int64_t v0, bool training,
                                        int epoch) {
  Device& d = *st.dev;
  const int64_t in_w = opt_.model.in_width(k), out_w = opt_.model.out_width(k);
  HT_ASSERT(H.cols == in_w);
  const DevMat X = dropped_input(d, H, st.z, v0, input_dropout(k, epoch, training, st.keys.data));
  DevMat T = view(st.out_t[s], H.rows, out_w);
  layer_math_[k]->transform(d, X, T, st.layers[k]);
  return {T, &store_.agg[k], v0};
}

// Fused transform backward of layer k on a backward batch of layer k - 1:
// ∇W^k += dropout(h^k)ᵀ ∇t^k and ∇x^k = ∇t^k Wᵀ (the products of
// transform_backward_batch), ∇t^k loaded into the slot's in_t. dz serves as
// the dropout copy (the batch writes ∇z only later).
void Trainer::transform_backward_rows(DeviceState& st, int k, int s, DevMat H, DevMat dX, int64_t v0, int epoch) {
  Device& d = *st.dev;
  const int64_t in_w = opt_.model.in_width(k), out_w = opt_.model.out_width(k), nd = H.rows;
  HT_ASSERT(H.cols == in_w && dX.rows == nd && dX.cols == in_w);
  const DevMat dT = view(st.in_t[s], nd, out_w);
  const DevMat X = dropped_input(d, H, st.dz, v0, input_dropout(k, epoch, true, st.keys.data));
  layer_math_[k]->transform_backward(d, X, dT, dX, st.layers[k]);
}

// Transform-first forward, vertex-wise: t = dropout(h^l) W for the batch's own
// rows (contiguous in new ids), written to host for the chunks to gather.
void Trainer::transform_batch(DeviceState& st, int l, int j, int epoch, bool training) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l);
  const auto [d, s, nd, v0] = start_batch(st, j, true);
  DevMat X = view(st.in_a[s], nd, in_w);
  d.dropout_rows(X, v0, input_dropout(l, epoch, training, st.keys.data));
  DevMat T = view(st.out_h[s], nd, out_w);
  layer_math_[l]->transform(d, X, T, st.layers[l]);
  const std::vector<Output> outputs{{T, &store_.agg[l], v0}};
  publish(st, s, j, outputs);
}

// Transform-first backward, vertex-wise, once ∇t is complete on host:
// ∇W += xᵀ ∇t and ∇x = ∇t Wᵀ for the batch's own rows (x recomputed from h^l).
void Trainer::transform_backward_batch(DeviceState& st, int l, int j, int epoch) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l);
  const auto [d, s, nd, v0] = start_batch(st, j, true);
  DevMat dT = view(st.in_dh[s], nd, out_w), X = view(st.in_a[s], nd, in_w);
  d.dropout_rows(X, v0, input_dropout(l, epoch, true, st.keys.data));
  const DevMat dX = l > 0 ? view(st.out_a[s], nd, in_w) : DevMat{};  // layer 0: no ∇x
  layer_math_[l]->transform_backward(d, X, dT, dX, st.layers[l]);
  std::vector<Output> outputs;
  if (l > 0) outputs.push_back({dX, &store_.grad[l], v0});
  publish(st, s, j, outputs);
}

}  // namespace ht
