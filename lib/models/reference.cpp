#include "models/reference.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht {

RefTopology make_ref_topology(const GraphView& g) {
  RefTopology t;
  const int64_t n = g.num_vertices;
  t.num_vertices = n;
  t.offsets.assign(static_cast<size_t>(n + 1), 0);
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      const int64_t u = g.sources[i];
      if (u == v) continue;  // replaced by the one self-loop below
      t.src.push_back(u);
      t.dst.push_back(v);
      t.weight.push_back(g.weights.empty() ? 1.0 : static_cast<double>(g.weights[i]));
    }
    t.src.push_back(v);
    t.dst.push_back(v);
    t.weight.push_back(1.0);
    t.offsets[v + 1] = t.num_edges();
  }
  // Transpose by counting sort on the source (edge ids ascending per source).
  t.out_offsets.assign(static_cast<size_t>(n + 1), 0);
  for (int64_t u : t.src) ++t.out_offsets[u + 1];
  for (int64_t u = 0; u < n; ++u) t.out_offsets[u + 1] += t.out_offsets[u];
  t.out_edges.resize(t.src.size());
  std::vector<int64_t> fill(t.out_offsets.begin(), t.out_offsets.end() - 1);
  for (int64_t e = 0; e < t.num_edges(); ++e) t.out_edges[fill[t.src[e]]++] = e;
  return t;
}

// ---------------------------------------------------------------------------
// Dense helpers
// ---------------------------------------------------------------------------

RefSparseRows ref_nonzeros(const RefMatrix& x) {
  RefSparseRows s;
  s.rows = x.rows;
  s.cols = x.cols;
  s.offsets.assign(static_cast<size_t>(x.rows + 1), 0);
#pragma omp parallel for schedule(static) if(x.rows >= kRefParallelRows)
  for (int64_t r = 0; r < x.rows; ++r) {
    const double* xr = x.row(r);
    int64_t c = 0;
    for (int64_t j = 0; j < x.cols; ++j) c += xr[j] != 0.0 ? 1 : 0;
    s.offsets[r + 1] = c;
  }
  for (int64_t r = 0; r < x.rows; ++r) s.offsets[r + 1] += s.offsets[r];
  s.index.resize(static_cast<size_t>(s.offsets.back()));
  s.values.resize(s.index.size());
#pragma omp parallel for schedule(static) if(x.rows >= kRefParallelRows)
  for (int64_t r = 0; r < x.rows; ++r) {
    const double* xr = x.row(r);
    int64_t o = s.offsets[r];
    for (int64_t j = 0; j < x.cols; ++j) {
      if (xr[j] == 0.0) continue;
      s.index[o] = static_cast<int32_t>(j);
      s.values[o++] = xr[j];
    }
  }
  return s;
}

RefMatrix ref_dense(const RefSparseRows& x) {
  RefMatrix d;
  d.assign(x.rows, x.cols);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t q = x.offsets[r]; q < x.offsets[r + 1]; ++q) d.at(r, x.index[q]) = x.values[q];
  return d;
}

void ref_matmul(const RefSparseRows& x, const RefMatrix& w, RefMatrix* y) {
  HT_ASSERT(x.cols == w.rows);
  y->assign(x.rows, w.cols);
  const int64_t m = w.cols;
#pragma omp parallel for schedule(static) if(x.rows >= kRefParallelRows)
  for (int64_t r = 0; r < x.rows; ++r) {
    double* yr = y->row(r);
    for (int64_t q = x.offsets[r]; q < x.offsets[r + 1]; ++q) {
      const double xv = x.values[q];
      const double* wi = w.row(x.index[q]);
      for (int64_t j = 0; j < m; ++j) yr[j] += xv * wi[j];
    }
  }
}

void ref_matmul_tn(const RefSparseRows& x, const RefMatrix& g, RefMatrix* y) {
  HT_ASSERT(x.rows == g.rows);
  y->assign(x.cols, g.cols);
  const int64_t m = g.cols;
  // Serial scatter into the rows of y: plain, deterministic, and cheap
  // (nonzeros × width).
  for (int64_t r = 0; r < x.rows; ++r) {
    const double* gr = g.row(r);
    for (int64_t q = x.offsets[r]; q < x.offsets[r + 1]; ++q) {
      const double xv = x.values[q];
      double* yi = y->row(x.index[q]);
      for (int64_t j = 0; j < m; ++j) yi[j] += xv * gr[j];
    }
  }
}

void ref_matmul_nt(const RefMatrix& g, const RefMatrix& w, RefMatrix* y) {
  HT_ASSERT(g.cols == w.cols);
  y->assign(g.rows, w.rows);
#pragma omp parallel for schedule(static) if(g.rows >= kRefParallelRows)
  for (int64_t r = 0; r < g.rows; ++r) {
    const double* gr = g.row(r);
    double* yr = y->row(r);
    for (int64_t i = 0; i < w.rows; ++i) {
      const double* wi = w.row(i);
      double s = 0;
      for (int64_t j = 0; j < w.cols; ++j) s += gr[j] * wi[j];
      yr[i] = s;
    }
  }
}

void ref_add_transpose_product(const RefTopology& topo, const std::vector<double>& coef, const RefMatrix& g,
                               RefMatrix* out) {
#pragma omp parallel for schedule(dynamic, 64) if(g.rows >= kRefParallelRows)
  for (int64_t u = 0; u < g.rows; ++u) {
    double* ou = out->row(u);
    for (int64_t k = topo.out_offsets[u]; k < topo.out_offsets[u + 1]; ++k) {
      const int64_t e = topo.out_edges[k];
      const double c = coef[e];
      const double* gv = g.row(topo.dst[e]);
      for (int64_t j = 0; j < g.cols; ++j) ou[j] += c * gv[j];
    }
  }
}

// ---------------------------------------------------------------------------
// Trainer
// ---------------------------------------------------------------------------

ReferenceTrainer::ReferenceTrainer(const GraphView& graph, ModelConfig cfg, OptimizerConfig opt)
    : graph_(graph), cfg_(std::move(cfg)), params_(init_params(cfg_)), optimizer_(opt) {
  const int64_t n = graph_.num_vertices;
  HT_CHECK(graph_.feature_dim == cfg_.dims.front(),
           "the model's input width {} differs from the graph's feature dimension {}", cfg_.dims.front(),
           graph_.feature_dim);
  HT_CHECK(graph_.has_features() &&
               static_cast<int64_t>(graph_.feature_bytes().size()) ==
                   n * graph_.feature_dim * dtype_bytes(graph_.feature_dtype),
           "the reference trainer needs vertex features");
  HT_CHECK(static_cast<int64_t>(graph_.labels.size()) == n && static_cast<int64_t>(graph_.split.size()) == n,
           "the reference trainer needs labels and a split");
  for (int64_t v = 0; v < n; ++v) {
    if (graph_.split[v] != static_cast<uint8_t>(Split::train)) continue;
    const int32_t y = graph_.labels[v];
    HT_CHECK(y >= 0 && y < cfg_.dims.back(), "training vertex {} has label {}, outside [0, {})", v, y,
             cfg_.dims.back());
    ++num_train_;
  }
  HT_CHECK(num_train_ > 0, "the graph has no training vertex (split == train)");

  topo_ = make_ref_topology(graph_);
  inv_sqrt_deg_.assign(static_cast<size_t>(n), 0.0);
  for (int64_t e = 0; e < topo_.num_edges(); ++e) inv_sqrt_deg_[topo_.dst[e]] += topo_.weight[e];
  for (auto& d : inv_sqrt_deg_) d = 1.0 / std::sqrt(d);
  gcn_coef_.resize(static_cast<size_t>(topo_.num_edges()));
  for (int64_t e = 0; e < topo_.num_edges(); ++e)
    gcn_coef_[e] = inv_sqrt_deg_[topo_.dst[e]] * topo_.weight[e] * inv_sqrt_deg_[topo_.src[e]];
  // SAGE's mean: every in-edge but the self-loop (the last of each destination) counts once.
  sage_coef_.assign(static_cast<size_t>(topo_.num_edges()), 0.0);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t deg = topo_.offsets[v + 1] - topo_.offsets[v] - 1;
    for (int64_t e = topo_.offsets[v]; e < topo_.offsets[v + 1]; ++e)
      sage_coef_[e] = topo_.src[e] == v ? 0.0 : 1.0 / static_cast<double>(deg);
  }

  features_.rows = n;
  features_.cols = graph_.feature_dim;
  features_.offsets.assign(static_cast<size_t>(n + 1), 0);
  std::vector<float> row(static_cast<size_t>(graph_.feature_dim));  // widened (16-bit features)
  for (int64_t v = 0; v < n; ++v) {
    graph_.load_feature_row(v, row);
    for (size_t c = 0; c < row.size(); ++c) {
      if (row[c] == 0.0f) continue;
      features_.index.push_back(static_cast<int32_t>(c));
      features_.values.push_back(row[c]);
    }
    features_.offsets[v + 1] = static_cast<int64_t>(features_.index.size());
  }
  layers_.resize(static_cast<size_t>(cfg_.num_layers()));
  input_grads_.resize(layers_.size());
  for (const auto& t : params_.tensors) grads_.emplace_back(static_cast<size_t>(t.size()), 0.0);
}

ReferenceTrainer::LayerParams ReferenceTrainer::widen(int l) const {
  LayerParams p;
  auto find = [&](const std::string& what) {
    const std::string name = fmt::format("l{}.{}", l, what);
    for (size_t k = 0; k < params_.tensors.size(); ++k)
      if (params_.tensors[k].name == name) return static_cast<int>(k);
    return -1;
  };
  auto to_matrix = [&](int k, RefMatrix* m) {
    const ParamTensor& t = params_.tensors[static_cast<size_t>(k)];
    m->assign(t.rows, t.cols);
    for (int64_t i = 0; i < t.size(); ++i) m->data[i] = t.value[i];
  };
  p.iW = find("W");
  HT_ASSERT(p.iW >= 0);
  to_matrix(p.iW, &p.W);
  p.ib = find("b");
  if (p.ib >= 0) {
    const ParamTensor& t = params_.tensors[static_cast<size_t>(p.ib)];
    p.b.assign(t.value.begin(), t.value.end());
  } else {
    p.b.assign(static_cast<size_t>(cfg_.out_width(l)), 0.0);
  }
  switch (cfg_.kind) {
    case ModelKind::gcn: break;
    case ModelKind::gat:
      p.iatt_src = find("att_src");
      p.iatt_dst = find("att_dst");
      HT_ASSERT(p.iatt_src >= 0 && p.iatt_dst >= 0);
      to_matrix(p.iatt_src, &p.att_src);
      to_matrix(p.iatt_dst, &p.att_dst);
      break;
    case ModelKind::sage:
      p.iW_root = find("W_root");
      HT_ASSERT(p.iW_root >= 0);
      to_matrix(p.iW_root, &p.W_root);
      break;
  }
  return p;
}

void ReferenceTrainer::apply_input_dropout(int l, int epoch, bool training, const RefMatrix* h) {
  RefLayerState& s = layers_[static_cast<size_t>(l)];
  s.input_mask.clear();
  const bool drop = training && cfg_.dropout > 0;
  const double scale = drop ? 1.0 / (1.0 - static_cast<double>(cfg_.dropout)) : 1.0;
  if (l == 0) {
    // Sparse features: only their nonzeros are drawn, and no mask is kept
    // since no gradient flows into the features.
    s.input = RefMatrix{};
    s.input_rows = features_;
    if (!drop) return;
    RefSparseRows& x = s.input_rows;
#pragma omp parallel for schedule(static) if(x.rows >= kRefParallelRows)
    for (int64_t v = 0; v < x.rows; ++v)
      for (int64_t q = x.offsets[v]; q < x.offsets[v + 1]; ++q)
        x.values[q] *= dropout_keep(cfg_.seed, epoch, 0, v, x.index[q], cfg_.dropout) ? scale : 0.0;
    return;
  }
  s.input = *h;
  if (drop) {
    const int64_t rows = h->rows, cols = h->cols;
    s.input_mask.assign(h->data.size(), 0.0);
#pragma omp parallel for schedule(static) if(rows >= kRefParallelRows)
    for (int64_t v = 0; v < rows; ++v)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(v * cols + c);
        s.input_mask[i] = dropout_keep(cfg_.seed, epoch, l, v, static_cast<int>(c), cfg_.dropout) ? scale : 0.0;
        s.input.data[i] *= s.input_mask[i];
      }
  }
  s.input_rows = ref_nonzeros(s.input);
}

namespace {
double activate(Activation a, double z) {
  switch (a) {
    case Activation::relu: return z > 0 ? z : 0.0;
    case Activation::elu: return z > 0 ? z : std::expm1(z);
    case Activation::none: return z;
  }
  return z;
}
// d act / d z (torch conventions at the kinks: ReLU' (0) = 0, ELU' (0) = 1).
double activate_grad(Activation a, double z) {
  switch (a) {
    case Activation::relu: return z > 0 ? 1.0 : 0.0;
    case Activation::elu: return z > 0 ? 1.0 : std::exp(z);
    case Activation::none: return 1.0;
  }
  return 1.0;
}
}  // namespace

double ReferenceTrainer::forward(int epoch, bool training) {
  const RefMatrix* h = nullptr;  // layer 0 reads features_
  for (int l = 0; l < cfg_.num_layers(); ++l) {
    const LayerParams p = widen(l);
    apply_input_dropout(l, epoch, training, h);
    switch (cfg_.kind) {
      case ModelKind::gcn: gcn_forward(l, p); break;
      case ModelKind::gat: gat_forward(l, epoch, training, p); break;
      case ModelKind::sage: sage_forward(l, p); break;
    }
    RefLayerState& s = layers_[static_cast<size_t>(l)];
    const Activation act = cfg_.activation(l);
    s.output = s.z;
    for (auto& x : s.output.data) x = activate(act, x);
    h = &s.output;
  }
  return loss_and_grad(nullptr);
}

// Mean softmax cross-entropy over training vertices; with `dlogits`, also
// its gradient with respect to the logits (zero rows for other vertices).
double ReferenceTrainer::loss_and_grad(RefMatrix* dlogits) const {
  const RefMatrix& z = logits();
  if (dlogits) dlogits->assign(z.rows, z.cols);
  double total = 0;
  for (int64_t v = 0; v < z.rows; ++v) {
    if (graph_.split[v] != static_cast<uint8_t>(Split::train)) continue;
    const double* zr = z.row(v);
    const double mx = *std::max_element(zr, zr + z.cols);
    double sum = 0;
    for (int64_t c = 0; c < z.cols; ++c) sum += std::exp(zr[c] - mx);
    const double log_sum = mx + std::log(sum);
    const int32_t y = graph_.labels[v];
    total += log_sum - zr[y];
    if (dlogits) {
      double* d = dlogits->row(v);
      for (int64_t c = 0; c < z.cols; ++c) d[c] = std::exp(zr[c] - log_sum) / num_train_;
      d[y] -= 1.0 / num_train_;
    }
  }
  return total / num_train_;
}

void ReferenceTrainer::accumulate(int index, const std::vector<double>& g) {
  auto& dst = grads_[static_cast<size_t>(index)];
  HT_ASSERT(dst.size() == g.size());
  for (size_t i = 0; i < g.size(); ++i) dst[i] += g[i];
}

void ReferenceTrainer::backward() {
  for (auto& g : grads_) std::fill(g.begin(), g.end(), 0.0);
  RefMatrix dh;  // ∇h^{l+1}, starting with the logits
  loss_and_grad(&dh);
  for (int l = cfg_.num_layers() - 1; l >= 0; --l) {
    const LayerParams p = widen(l);
    RefLayerState& s = layers_[static_cast<size_t>(l)];
    const Activation act = cfg_.activation(l);
    RefMatrix dz = std::move(dh);
    for (size_t i = 0; i < dz.data.size(); ++i) dz.data[i] *= activate_grad(act, s.z.data[i]);
    if (p.ib >= 0) {
      std::vector<double> db(static_cast<size_t>(dz.cols), 0.0);
      for (int64_t v = 0; v < dz.rows; ++v)
        for (int64_t c = 0; c < dz.cols; ++c) db[c] += dz.at(v, c);
      accumulate(p.ib, db);
    }
    RefMatrix dx;  // ∇ of the dropped-out input x
    RefMatrix* want_dx = l > 0 ? &dx : nullptr;
    switch (cfg_.kind) {
      case ModelKind::gcn: gcn_backward(l, p, dz, want_dx); break;
      case ModelKind::gat: gat_backward(l, p, dz, want_dx); break;
      case ModelKind::sage: sage_backward(l, p, dz, want_dx); break;
    }
    if (l == 0) {
      input_grads_[0] = RefMatrix{};
      break;
    }
    if (!s.input_mask.empty())
      for (size_t i = 0; i < dx.data.size(); ++i) dx.data[i] *= s.input_mask[i];
    input_grads_[static_cast<size_t>(l)] = dx;
    dh = std::move(dx);
  }
  for (size_t k = 0; k < grads_.size(); ++k) {
    ParamTensor& t = params_.tensors[k];
    for (size_t i = 0; i < grads_[k].size(); ++i) t.grad[i] = static_cast<float>(grads_[k][i]);
  }
}

double ReferenceTrainer::forward_backward(int epoch, bool training) {
  const double loss = forward(epoch, training);
  backward();
  return loss;
}

double ReferenceTrainer::forward_loss(int epoch, bool training) { return forward(epoch, training); }

void ReferenceTrainer::step() { optimizer_.step(params_); }

EvalResult ReferenceTrainer::evaluate() {
  EvalResult r;
  r.loss = forward(0, false);
  const RefMatrix& z = logits();
  for (int64_t v = 0; v < z.rows; ++v) {
    const int32_t y = graph_.labels[v];
    if (y < 0) continue;
    const double* zr = z.row(v);
    // First maximum, like torch.argmax.
    const int64_t pred = std::max_element(zr, zr + z.cols) - zr;
    const int64_t hit = pred == y ? 1 : 0;
    switch (static_cast<Split>(graph_.split[v])) {
      case Split::train: r.train_correct += hit, ++r.train_total; break;
      case Split::val: r.val_correct += hit, ++r.val_total; break;
      case Split::test: r.test_correct += hit, ++r.test_total; break;
      case Split::none: break;
    }
  }
  return r;
}

ReferenceRun ReferenceTrainer::train(int epochs) {
  ReferenceRun run;
  for (int e = 0; e < epochs; ++e) {
    run.train_loss.push_back(forward_backward(e, true));
    step();
    run.eval.push_back(evaluate());
    const EvalResult& r = run.eval.back();
    if (run.best_epoch < 0 || r.val_acc() > run.best_val_acc) {
      run.best_epoch = e;
      run.best_val_acc = r.val_acc();
      run.test_acc_at_best = r.test_acc();
    }
  }
  return run;
}

}  // namespace ht
