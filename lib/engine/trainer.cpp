#include "engine/trainer.hpp"

#include "engine/memory_plan.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"

namespace ht {

struct Trainer::Layer {
  DevArray<float> W, b, att_src, att_dst;
  DevArray<float> dW, db, d_att_src, d_att_dst;
};

struct Trainer::DeviceState {
  Device* dev = nullptr;
  DevicePlan plan;
  std::vector<Layer> layers;
  DevArray<float> x, g;        // data and gradient buffers: buffer_rows x max gather width
  // By slot (batch parity): buffers that write-behind copies read from; both
  // slots are one allocation when copies run in line.
  DevArray<float> a[2];        // GCN aggregate / its gradient, own input rows: max_dst x max input width
  DevArray<float> h[2], dh[2];  // outputs (or t) and their gradients: max_dst x max output width
  DevArray<float> z, dz;       // max_dst x max output width
  DevArray<float> gt, dgt;     // GAT transform and its gradient: buffer_rows x max transform width
  DevArray<float> pre, score, alpha, alpha_drop;  // GAT: max_edges x max heads
  DevArray<int64_t> keys;      // new id -> graph file id
  DevArray<int32_t> labels;
  DevArray<uint8_t> split;
};

namespace {

DevMat view(DevArray<float> storage, int64_t rows, int64_t cols) {
  HT_ASSERT(rows * cols <= storage.size);
  return {storage.data, rows, cols};
}

Act to_act(Activation a) {
  switch (a) {
    case Activation::relu: return Act::relu;
    case Activation::elu: return Act::elu;
    case Activation::none: break;
  }
  return Act::none;
}

DevArray<float> tensor_or_empty(Device& d, const ModelParams& p, int layer, const char* what, bool exists) {
  if (!exists) return {};
  return d.upload(std::span<const float>(p.get(layer, what).value));
}

int64_t bytes_of(int64_t rows, int64_t cols) { return rows * cols * 4; }

// Peers in the order i+1, i+2, ... (mod m) so that the GPUs do not all read
// from (or push to) the same peer at once (Algorithms 2 and 3).
std::vector<PeerRange> interleaved(const std::vector<PeerRange>& peers, int self, int m) {
  std::vector<PeerRange> out(peers);
  std::sort(out.begin(), out.end(), [&](const PeerRange& a, const PeerRange& b) {
    return (a.peer - self + m) % m < (b.peer - self + m) % m;
  });
  return out;
}

}  // namespace

Trainer::Trainer(Executor& exec, const GraphView& g, std::span<const int64_t> orig_id, const Plan& plan,
                 TrainerOptions opt)
    : exec_(exec), g_(g), orig_id_(orig_id), plan_(plan), opt_(std::move(opt)),
      params_(init_params(opt_.model)), optimizer_(opt_.optimizer) {
  const ModelConfig& m = opt_.model;
  HT_CHECK(exec_.num_devices() == plan_.m, "the plan is for {} GPUs but the executor has {}", plan_.m,
           exec_.num_devices());
  HT_CHECK(g_.num_vertices == plan_.num_vertices, "the plan has {} vertices, the graph {}", plan_.num_vertices,
           g_.num_vertices);
  HT_CHECK(g_.feature_dim == m.dims.front(), "the model's input width {} differs from the graph's feature width {}",
           m.dims.front(), g_.feature_dim);
  HT_CHECK(!g_.features.empty() && !g_.labels.empty() && !g_.split.empty(),
           "training needs features, labels and a split in the graph file");
  HT_CHECK(g_.num_classes <= m.dims.back(), "the output width {} is smaller than the number of classes {}",
           m.dims.back(), g_.num_classes);
  HT_CHECK(g_.weights.empty(), "edge weights are not supported by the training engine yet");
  for (int64_t v = 0; v < g_.num_vertices; ++v) num_train_ += (g_.split[v] == 1 && g_.labels[v] >= 0) ? 1 : 0;
  HT_CHECK(num_train_ > 0, "the graph has no training vertices (split code 1 with a label)");
  if (m.kind == ModelKind::gcn) inv_sqrt_deg_ = gcn_inv_sqrt_degree(g_);

  const int L = m.num_layers();
  const int64_t n = g_.num_vertices;
  if (opt_.store_on_device) {
    HT_CHECK(plan_.m == 1 && plan_.n == 1, "in-memory mode needs one GPU and one chunk (m = 1, n = 1), not m = {}, n = {}",
             plan_.m, plan_.n);
    if (exec_.has_device_memory()) {
      store_.residence = Residence::device;
      // The store comes on top of what the plan needs.
      DeviceMemoryNeed need = device_memory_need(plan_, 0, opt_);
      need.fixed_bytes += vertex_store_bytes(m, opt_.gcn_order, n);
      check_device_memory(need, exec_.memory_limit(0), 0, plan_.n);
    }
  }
  store_.h.resize(L + 1);
  store_.grad.resize(L + 1);
  store_.h[0] = alloc_store(n, g_.feature_dim);
  exec_.store_fill(store_.h[0], g_.features);
  for (int l = 0; l < L; ++l) {
    store_.h[l + 1] = alloc_store(n, m.out_width(l));
    store_.grad[l + 1] = alloc_store(n, m.out_width(l));
    if (m.kind != ModelKind::gcn) continue;
    const bool tf = transform_first(l);
    store_.agg.push_back(alloc_store(n, tf ? m.out_width(l) : m.in_width(l)));
  }
  setup_devices();
}

Trainer::~Trainer() = default;

int64_t vertex_store_bytes(const ModelConfig& m, GcnOrder order, int64_t num_vertices) {
  int64_t cols = m.dims.front();
  for (int l = 0; l < m.num_layers(); ++l) {
    cols += 2 * m.out_width(l);
    if (m.kind == ModelKind::gcn) cols += transform_first(m, order, l) ? m.out_width(l) : m.in_width(l);
  }
  return 4 * num_vertices * cols;
}

HostMat Trainer::alloc_store(int64_t rows, int64_t cols) {
  if (store_.residence == Residence::device) return exec_.alloc_store_on_device(0, rows, cols);
  return exec_.alloc_host(rows, cols);
}

// Rows moved between the vertex store and a device: over the host link, or
// GPU-local in in-memory mode (counted with the in-place reuse).
void Trainer::write_out(Device& d, DevMat src, const HostMat& dst, int64_t v0, int slot) {
  if (opt_.overlap_copies) {
    d.write_behind(src, 0, src.rows, dst, v0, slot);
  } else {
    d.copy_to_host(src, 0, src.rows, dst, v0);
  }
  count_host_rows(src.rows, src.cols, false);
}

void Trainer::read_in(Device& d, const HostMat& src, int64_t v0, DevMat dst) {
  d.copy_from_host(src, v0, dst.rows, dst, 0);
  count_host_rows(dst.rows, dst.cols, true);
}

// x = dropout(h^l) for batch j's own rows, in the slot's aggregate buffer
// (the vertex-wise passes of transform-first layers).
DevMat Trainer::own_input(DeviceState& st, int l, int j, int epoch, bool training) {
  const ChunkPlan& c = *st.plan.steps[j].plan;
  DevMat X = view(st.a[j & 1], c.num_dst(), opt_.model.in_width(l));
  read_in(*st.dev, store_.h[l], c.dst_begin, X);
  st.dev->dropout_rows(X, c.dst_begin, input_dropout(l, epoch, training, st.keys.data));
  return X;
}

// End of a phase: the vertex store rows written behind are complete.
void Trainer::drain() {
  if (!opt_.overlap_copies) return;
  Timer t;
  exec_.drain_all();
  timing_.t_compute += t.seconds();
}

void Trainer::count_host_rows(int64_t rows, int64_t width, bool to_device) {
  auto& c = exec_.counters();
  if (store_.residence == Residence::device) {
    c.reuse_rows += rows;
    c.reuse_bytes += bytes_of(rows, width);
  } else if (to_device) {
    c.h2d_rows += rows;
    c.h2d_bytes += bytes_of(rows, width);
  } else {
    c.d2h_rows += rows;
    c.d2h_bytes += bytes_of(rows, width);
  }
}

std::vector<float> Trainer::logits() const {
  const HostMat& z = store_.h.back();
  std::vector<float> out(static_cast<size_t>(z.rows * z.cols));
  exec_.store_read(z, out);
  return out;
}

void Trainer::setup_devices() {
  const ModelConfig& m = opt_.model;
  const int L = m.num_layers();
  const auto [max_in, max_out, max_tw, max_heads, max_gather] = layer_extents(m, opt_.gcn_order);
  const bool gat = m.kind == ModelKind::gat;
  EdgeKeys keys{inv_sqrt_deg_, orig_id_};
  for (int i = 0; i < plan_.m; ++i)
    check_device_memory(device_memory_need(plan_, i, opt_), exec_.memory_limit(i), i, plan_.n);
  for (int i = 0; i < plan_.m; ++i) {
    auto st = std::make_unique<DeviceState>();
    Device& d = exec_.device(i);
    st->dev = &d;
    st->plan = upload_device_plan(d, plan_, i, opt_.comm, keys, gat);
    const int64_t rows = std::max<int64_t>(st->plan.buffer_rows, 1);
    const int64_t nd = std::max<int64_t>(plan_.max_dst[i], 1), ne = std::max<int64_t>(plan_.max_edges[i], 1);
    st->x = d.alloc_floats(rows * max_gather);
    st->g = d.alloc_floats(rows * max_gather);
    st->z = d.alloc_floats(nd * max_out);
    for (int s = 0; s < 2; ++s) {
      const bool own = s == 0 || opt_.overlap_copies;
      st->a[s] = own ? d.alloc_floats(nd * max_in) : st->a[0];
      st->h[s] = own ? d.alloc_floats(nd * max_out) : st->h[0];
      st->dh[s] = own ? d.alloc_floats(nd * max_out) : st->dh[0];
    }
    st->dz = d.alloc_floats(nd * max_out);
    if (gat) {
      st->gt = d.alloc_floats(rows * max_tw);
      st->dgt = d.alloc_floats(rows * max_tw);
      for (auto* a : {&st->pre, &st->score, &st->alpha, &st->alpha_drop}) *a = d.alloc_floats(ne * max_heads);
    }
    d.reserve(rows * max_gather, gat ? ne * max_heads : 0);
    st->keys = d.upload(orig_id_);
    st->labels = d.upload(g_.labels);
    st->split = d.upload(g_.split);
    for (int l = 0; l < L; ++l) {
      Layer ly;
      ly.W = tensor_or_empty(d, params_, l, "W", true);
      ly.b = tensor_or_empty(d, params_, l, "b", m.bias);
      ly.att_src = tensor_or_empty(d, params_, l, "att_src", gat);
      ly.att_dst = tensor_or_empty(d, params_, l, "att_dst", gat);
      ly.dW = d.alloc_floats(ly.W.size);
      if (ly.b.size) ly.db = d.alloc_floats(ly.b.size);
      if (gat) {
        ly.d_att_src = d.alloc_floats(ly.att_src.size);
        ly.d_att_dst = d.alloc_floats(ly.att_dst.size);
      }
      st->layers.push_back(ly);
    }
    dev_.push_back(std::move(st));
  }
}

void Trainer::upload_params() {
  const ModelConfig& m = opt_.model;
  for (auto& st : dev_) {
    for (int l = 0; l < m.num_layers(); ++l) {
      Layer& ly = st->layers[l];
      st->dev->write(ly.W, params_.get(l, "W").value);
      if (ly.b.size) st->dev->write(ly.b, params_.get(l, "b").value);
      if (ly.att_src.size) {
        st->dev->write(ly.att_src, params_.get(l, "att_src").value);
        st->dev->write(ly.att_dst, params_.get(l, "att_dst").value);
      }
    }
  }
}

void Trainer::set_params(const ModelParams& p) {
  HT_CHECK(p.tensors.size() == params_.tensors.size(), "parameter set does not match the model");
  for (size_t k = 0; k < p.tensors.size(); ++k)
    HT_CHECK(p.tensors[k].size() == params_.tensors[k].size() && p.tensors[k].name == params_.tensors[k].name,
             "parameter {} does not match the model", p.tensors[k].name);
  params_ = p;
  upload_params();
}

DropoutSpec Trainer::input_dropout(int layer, int epoch, bool training, const int64_t* keys) const {
  DropoutSpec d;
  d.active = training && opt_.model.dropout > 0;
  d.rate = opt_.model.dropout;
  d.seed = opt_.model.seed;
  d.epoch = epoch;
  d.layer = layer;
  d.keys = keys;
  return d;
}

DropoutSpec Trainer::attn_dropout(int layer, int epoch, bool training, const int64_t* keys) const {
  DropoutSpec d = input_dropout(layer, epoch, training, keys);
  d.active = training && opt_.model.attn_dropout > 0;
  d.rate = opt_.model.attn_dropout;
  return d;
}

// The rows layer l aggregates: t^l (no dropout: the vertex-wise pass applied
// it) when transform-first, else h^l with the layer's input dropout.
void Trainer::load_layer_inputs(int l, int batch, int epoch, bool training) {
  if (transform_first(l)) {
    load_inputs(store_.agg[l], opt_.model.out_width(l), batch, -1, epoch, training);
  } else {
    load_inputs(store_.h[l], opt_.model.in_width(l), batch, l, epoch, training);
  }
}

// Algorithm 2: per device, rows of h^l from host into the data buffer
// (transition slots, or the baseline neighbor buffer); then P2P pulls of the
// remote rows from their owners' transition buffers.
void Trainer::load_inputs(const HostMat& src, int64_t width, int batch, int drop_layer, int epoch, bool training) {
  Timer t;
  for (auto& st : dev_) {
    DeviceStep& s = st->plan.steps[batch];
    const DropoutSpec drop = drop_layer >= 0 ? input_dropout(drop_layer, epoch, training, st->keys.data) : DropoutSpec{};
    st->dev->gather_from_host(src, s.load_vids, s.load_rows, view(st->x, st->plan.buffer_rows, width), drop);
    count_host_rows(s.load_vids.size, width, true);
    exec_.counters().reuse_rows += s.reused_rows;
    exec_.counters().reuse_bytes += bytes_of(s.reused_rows, width);
  }
  exec_.synchronize_all();
  timing_.t_h2d += t.seconds();
  if (opt_.comm == CommMode::baseline) return;
  t.reset();
  for (auto& st : dev_) {
    DeviceStep& s = st->plan.steps[batch];
    for (const PeerRange& r : interleaved(s.peers, st->dev->index(), plan_.m)) {
      DeviceState& peer = *dev_[r.peer];
      st->dev->pull_from_peer(*peer.dev, view(peer.x, peer.plan.buffer_rows, width),
                              s.remote_slots.sub(r.begin, r.count), view(st->x, st->plan.buffer_rows, width),
                              st->plan.trans_capacity + r.begin);
      exec_.counters().p2p_rows += r.count;
      exec_.counters().p2p_bytes += bytes_of(r.count, width);
    }
  }
  exec_.synchronize_all();
  timing_.t_d2d += t.seconds();
}

void Trainer::forward_batch(int l, int j, bool training, int epoch, LossStats* stats) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l), tw = m.transform_width(l);
  const bool last = m.is_last(l);
  const Act act = to_act(m.activation(l));
  Timer t;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    DeviceStep& s = st->plan.steps[j];
    const int64_t nd = s.plan->num_dst(), v0 = s.plan->dst_begin;
    const DevTopology& topo = s.topo;
    Layer& ly = st->layers[l];
    // The gathered rows: t^l (out_w) when transform-first, else x^l (in_w).
    DevMat X = view(st->x, st->plan.buffer_rows, gather_width(m, opt_.gcn_order, l));
    const int slot = j & 1;
    d.wait_write_behind(slot);  // batch j - 2's copies have read this slot's buffers
    DevMat Z = view(st->z, nd, out_w), H = view(st->h[slot], nd, out_w);
    const bool tf = transform_first(l);
    if (tf) {
      d.spmm(topo, X, Z);  // z = Â t
    } else if (m.kind == ModelKind::gcn) {
      DevMat A = view(st->a[slot], nd, in_w);
      d.spmm(topo, X, A);
      write_out(d, A, store_.agg[l], v0, slot);  // cache a^l for backward
      d.gemm(false, false, nd, out_w, in_w, 1.0f, A.data, in_w, ly.W.data, out_w, 0.0f, Z.data, out_w);
    } else {
      const int heads = m.layer_heads(l);
      const DropoutSpec attn = attn_dropout(l, epoch, training, st->keys.data);
      DevMat Gt = view(st->gt, st->plan.buffer_rows, tw);
      d.gemm(false, false, X.rows, tw, in_w, 1.0f, X.data, in_w, ly.W.data, tw, 0.0f, Gt.data, tw);
      d.gat_scores(topo, Gt, ly.att_src, ly.att_dst, heads, m.leaky_slope, st->pre, st->score);
      d.gat_softmax(topo, heads, st->score, st->alpha, st->alpha_drop, attn);
      d.gat_aggregate(topo, Gt, st->alpha_drop, heads, last, Z);
    }
    d.bias_act(Z, ly.b, act, H);
    write_out(d, H, store_.h[l + 1], v0, slot);
    if (last && stats) {
      DevMat dL = training ? view(st->dh[slot], nd, out_w) : DevMat{};
      LossStats ls = d.softmax_xent(H, st->labels, st->split, v0, 1.0f / static_cast<float>(num_train_), dL);
      stats->loss_sum += ls.loss_sum;
      for (int k = 0; k < 4; ++k) {
        stats->correct[k] += ls.correct[k];
        stats->count[k] += ls.count[k];
      }
      if (training) {
        write_out(d, dL, store_.grad[l + 1], v0, slot);
      }
    }
  }
  exec_.synchronize_all();
  timing_.t_compute += t.seconds();
}

double Trainer::forward(int epoch, bool training, LossStats* stats) {
  const ModelConfig& m = opt_.model;
  for (int l = 0; l < m.num_layers(); ++l) {
    // Transform-first: every vertex's t = x W must be on host before any
    // chunk gathers its neighbors' rows.
    if (transform_first(l)) {
      for (int j = 0; j < plan_.n; ++j) transform_batch(l, j, epoch, training);
      drain();
    }
    for (int j = 0; j < plan_.n; ++j) {
      load_layer_inputs(l, j, epoch, training);
      forward_batch(l, j, training, epoch, m.is_last(l) ? stats : nullptr);
    }
    drain();
  }
  return stats ? stats->loss_sum / static_cast<double>(num_train_) : 0.0;
}

void Trainer::backward_batch(int l, int j, int epoch) {
  const ModelConfig& m = opt_.model;
  const int L = m.num_layers();
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l), tw = m.transform_width(l);
  const Act act = to_act(m.activation(l));
  if (m.kind == ModelKind::gat) load_layer_inputs(l, j, epoch, true);  // recomputation
  const bool tf = transform_first(l);
  Timer t;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    DeviceStep& s = st->plan.steps[j];
    const int64_t nd = s.plan->num_dst(), v0 = s.plan->dst_begin;
    Layer& ly = st->layers[l];
    // Slot 0: write-behind copies are drained before every backward phase.
    DevMat dH = view(st->dh[0], nd, out_w), Z = view(st->z, nd, out_w), H = view(st->h[0], nd, out_w);
    DevMat dZ = view(st->dz, nd, out_w);
    read_in(d, store_.grad[l + 1], v0, dH);
    if (l + 1 < L) {  // ∇h^{l+1} = mask ⊙ ∇x^{l+1}: the next layer's input dropout
      d.dropout_rows(dH, v0, input_dropout(l + 1, epoch, true, st->keys.data));
    }
    // Gradients of the gathered rows: ∇t^l (out_w) or ∇x^l (in_w).
    DevMat G = view(st->g, st->plan.buffer_rows, gather_width(m, opt_.gcn_order, l));
    if (tf) {
      // ∇z = ∇h ⊙ relu'(z), and relu'(z) = [h > 0]: h^{l+1}, already on host, is the mask,
      // so z needs no cache and no neighbor reload. The last layer has no activation.
      HT_ASSERT(act == Act::relu || act == Act::none);
      if (act == Act::relu) {
        read_in(d, store_.h[l + 1], v0, H);
        d.act_backward(dH, H, act, dZ);
      }
      const DevMat dT = act == Act::relu ? dZ : dH;
      if (ly.db.size) d.col_sum_add(dT, ly.db);
      d.spmm_transpose_add(s.topo, dT, G);  // ∇t = Âᵀ ∇z
    } else if (m.kind == ModelKind::gcn) {
      DevMat A = view(st->a[0], nd, in_w);
      read_in(d, store_.agg[l], v0, A);  // cached aggregate: no neighbor reload
      d.gemm(false, false, nd, out_w, in_w, 1.0f, A.data, in_w, ly.W.data, out_w, 0.0f, Z.data, out_w);
      d.bias_act(Z, ly.b, act, H);
      d.act_backward(dH, Z, act, dZ);
      d.gemm(true, false, in_w, out_w, nd, 1.0f, A.data, in_w, dZ.data, out_w, 1.0f, ly.dW.data, out_w);
      if (ly.db.size) d.col_sum_add(dZ, ly.db);
      if (l > 0) {
        d.gemm(false, true, nd, in_w, out_w, 1.0f, dZ.data, out_w, ly.W.data, out_w, 0.0f, A.data, in_w);
        d.spmm_transpose_add(s.topo, A, G);
      }
    } else {
      const int heads = m.layer_heads(l);
      const bool last = m.is_last(l);
      const DropoutSpec attn = attn_dropout(l, epoch, true, st->keys.data);
      DevMat X = view(st->x, st->plan.buffer_rows, in_w);
      DevMat Gt = view(st->gt, st->plan.buffer_rows, tw), dGt = view(st->dgt, st->plan.buffer_rows, tw);
      d.gemm(false, false, X.rows, tw, in_w, 1.0f, X.data, in_w, ly.W.data, tw, 0.0f, Gt.data, tw);
      d.gat_scores(s.topo, Gt, ly.att_src, ly.att_dst, heads, m.leaky_slope, st->pre, st->score);
      d.gat_softmax(s.topo, heads, st->score, st->alpha, st->alpha_drop, attn);
      d.gat_aggregate(s.topo, Gt, st->alpha_drop, heads, last, Z);
      d.bias_act(Z, ly.b, act, H);
      d.act_backward(dH, Z, act, dZ);
      if (ly.db.size) d.col_sum_add(dZ, ly.db);
      d.gat_backward(s.topo, Gt, ly.att_src, ly.att_dst, heads, m.leaky_slope, last, st->pre, st->alpha,
                     st->alpha_drop, attn, dZ, dGt, ly.d_att_src, ly.d_att_dst);
      d.gemm(true, false, in_w, tw, X.rows, 1.0f, X.data, in_w, dGt.data, tw, 1.0f, ly.dW.data, tw);
      if (l > 0) d.gemm(false, true, X.rows, in_w, tw, 1.0f, dGt.data, tw, ly.W.data, tw, 1.0f, G.data, in_w);
    }
  }
  exec_.synchronize_all();
  timing_.t_compute += t.seconds();
  if (tf) {
    return_gradients(store_.agg[l], out_w, j);
  } else if (l > 0) {
    return_gradients(store_.grad[l], in_w, j);
  }
}

// Transform-first forward, vertex-wise: t = dropout(h^l) W for the batch's own
// rows (contiguous in new ids), written to host for the chunks to gather.
void Trainer::transform_batch(int l, int j, int epoch, bool training) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l);
  Timer t;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const ChunkPlan& c = *st->plan.steps[j].plan;
    const int64_t nd = c.num_dst(), v0 = c.dst_begin;
    const int slot = j & 1;
    d.wait_write_behind(slot);
    const DevMat X = own_input(*st, l, j, epoch, training);
    DevMat T = view(st->h[slot], nd, out_w);
    d.gemm(false, false, nd, out_w, in_w, 1.0f, X.data, in_w, st->layers[l].W.data, out_w, 0.0f, T.data, out_w);
    write_out(d, T, store_.agg[l], v0, slot);
  }
  exec_.synchronize_all();
  timing_.t_compute += t.seconds();
}

// Transform-first backward, vertex-wise, once ∇t is complete on host:
// ∇W += xᵀ ∇t and ∇x = ∇t Wᵀ for the batch's own rows (x recomputed from h^l).
void Trainer::transform_backward_batch(int l, int j, int epoch) {
  const ModelConfig& m = opt_.model;
  const int64_t in_w = m.in_width(l), out_w = m.out_width(l);
  Timer t;
  for (auto& st : dev_) {
    Device& d = *st->dev;
    const ChunkPlan& c = *st->plan.steps[j].plan;
    const int64_t nd = c.num_dst(), v0 = c.dst_begin;
    Layer& ly = st->layers[l];
    const int slot = j & 1;
    d.wait_write_behind(slot);
    DevMat dT = view(st->dz, nd, out_w);
    read_in(d, store_.agg[l], v0, dT);
    const DevMat X = own_input(*st, l, j, epoch, true);
    d.gemm(true, false, in_w, out_w, nd, 1.0f, X.data, in_w, dT.data, out_w, 1.0f, ly.dW.data, out_w);
    if (l == 0) continue;
    d.gemm(false, true, nd, in_w, out_w, 1.0f, dT.data, out_w, ly.W.data, out_w, 0.0f, X.data, in_w);
    write_out(d, X, store_.grad[l], v0, slot);
  }
  exec_.synchronize_all();
  timing_.t_compute += t.seconds();
}

// Algorithm 3: remote gradient rows are pushed to their owners' transition
// gradient slots (P2P accumulate); then the slots that leave the device are
// compacted, copied to host and added into ∇x^l by the CPU.
void Trainer::return_gradients(const HostMat& dst, int64_t width, int j) {
  Timer t;
  if (opt_.comm != CommMode::baseline) {
    for (auto& st : dev_) {
      DeviceStep& s = st->plan.steps[j];
      DevMat G = view(st->g, st->plan.buffer_rows, width);
      int64_t remote = 0;
      for (const PeerRange& r : interleaved(s.peers, st->dev->index(), plan_.m)) {
        DeviceState& peer = *dev_[r.peer];
        st->dev->push_add_to_peer(G, st->plan.trans_capacity + r.begin, *peer.dev,
                                  view(peer.g, peer.plan.buffer_rows, width), s.remote_slots.sub(r.begin, r.count));
        exec_.counters().p2p_rows += r.count;
        exec_.counters().p2p_bytes += bytes_of(r.count, width);
        remote += r.count;
      }
      st->dev->zero(G, st->plan.trans_capacity, remote);
    }
    exec_.synchronize_all();
    timing_.t_d2d += t.seconds();
    t.reset();
  }
  for (auto& st : dev_) {
    DeviceStep& s = st->plan.steps[j];
    st->dev->flush_add_to_host(view(st->g, st->plan.buffer_rows, width), s.flush_rows, s.flush_vids,
                               s.flush_vids_host, dst);
    count_host_rows(s.flush_rows.size, width, false);
  }
  exec_.synchronize_all();
  timing_.t_cpu += t.seconds();
}

void Trainer::backward(int epoch) {
  const ModelConfig& m = opt_.model;
  for (int l = m.num_layers() - 1; l >= 0; --l) {
    const bool tf = transform_first(l);
    // The gradient the chunks return: ∇t^l (in t^l's place) or ∇x^l.
    if (tf || l > 0) {
      exec_.store_zero(tf ? store_.agg[l] : store_.grad[l]);
      for (auto& st : dev_) st->dev->zero(st->g);
    }
    for (int j = 0; j < plan_.n; ++j) backward_batch(l, j, epoch);
    if (tf) {
      for (int j = 0; j < plan_.n; ++j) transform_backward_batch(l, j, epoch);
      drain();
    }
  }
}

void Trainer::reduce_and_collect_grads() {
  const ModelConfig& m = opt_.model;
  auto reduce = [&](auto member, int l, const char* name) {
    std::vector<DevArray<float>> parts;
    for (auto& st : dev_) parts.push_back(st->layers[l].*member);
    if (parts[0].size == 0) return;
    exec_.allreduce_sum(parts);
    dev_[0]->dev->read(parts[0], params_.get(l, name).grad);
  };
  for (int l = 0; l < m.num_layers(); ++l) {
    reduce(&Layer::dW, l, "W");
    if (m.bias) reduce(&Layer::db, l, "b");
    if (m.kind == ModelKind::gat) {
      reduce(&Layer::d_att_src, l, "att_src");
      reduce(&Layer::d_att_dst, l, "att_dst");
    }
  }
}

double Trainer::compute_gradients(int epoch) {
  timing_ = {};
  Timer total;
  for (auto& st : dev_)
    for (auto& ly : st->layers)
      for (auto* a : {&ly.dW, &ly.db, &ly.d_att_src, &ly.d_att_dst})
        if (a->size) st->dev->zero(*a);
  LossStats stats;
  const double loss = forward(epoch, true, &stats);
  backward(epoch);
  reduce_and_collect_grads();
  timing_.seconds = total.seconds();
  timing_.loss = loss;
  return loss;
}

EpochResult Trainer::train_epoch(int epoch) {
  Timer total;
  compute_gradients(epoch);
  optimizer_.step(params_);
  upload_params();
  timing_.seconds = total.seconds();
  return timing_;
}

Evaluation Trainer::evaluate() {
  LossStats s;
  const EpochResult saved = timing_;
  Evaluation r;
  r.loss = forward(0, false, &s);
  timing_ = saved;
  auto acc = [&](int k) { return s.count[k] ? static_cast<double>(s.correct[k]) / s.count[k] : 0.0; };
  r.train_acc = acc(1);
  r.val_acc = acc(2);
  r.test_acc = acc(3);
  return r;
}

}  // namespace ht
