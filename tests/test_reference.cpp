// Reference trainer (the engine's test oracle): forward semantics against an
// independent dense formulation, every parameter gradient against central
// finite differences, training progress, and evaluation counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "graph/build.hpp"
#include "models/model.hpp"
#include "models/reference.hpp"

namespace ht {
namespace {

using Dense = std::vector<std::vector<double>>;

// 9 vertices: a duplicated edge (0->1 twice), pre-existing self-loops (3->3,
// 4->4), directed one-way edges, and an isolated vertex (8) that trains.
Graph tiny_graph(int feature_dim, int classes, bool weighted, uint64_t seed) {
  EdgeList el;
  el.num_vertices = 9;
  const std::vector<std::pair<vid_t, vid_t>> edges = {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2},
                                                      {3, 3}, {0, 1}, {4, 5}, {5, 6}, {6, 4}, {7, 0},
                                                      {2, 7}, {5, 2}, {4, 4}, {6, 5}, {1, 3}};
  rng::Stream r(seed, 1);
  for (auto [u, v] : edges) {
    el.src.push_back(u);
    el.dst.push_back(v);
    if (weighted) el.weight.push_back(static_cast<float>(0.5 + 1.5 * r.uniform()));
  }
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = feature_dim;
  g.num_classes = classes;
  for (int64_t i = 0; i < g.num_vertices * feature_dim; ++i) {
    const double u = r.uniform();
    g.features.push_back(static_cast<float>(u < 0.5 ? u - 1.0 : u));  // |x| >= 0.5: no zero rows
  }
  for (int64_t v = 0; v < g.num_vertices; ++v) g.labels.push_back(static_cast<int32_t>((v * 5 + 1) % classes));
  g.split = {1, 2, 1, 3, 1, 1, 2, 0, 1};
  return g;
}

// Random values for every parameter (biases included, so that no ReLU input
// sits exactly at its kink).
void randomize(ModelParams& p, uint64_t seed) {
  rng::Stream r(seed, 7);
  for (auto& t : p.tensors)
    for (auto& x : t.value) x = static_cast<float>(2.0 * r.uniform() - 1.0);
}

ModelConfig gcn_config(std::vector<int> dims, float dropout) {
  ModelConfig c;
  c.kind = ModelKind::gcn;
  c.dims = std::move(dims);
  c.dropout = dropout;
  c.seed = 11;
  return c;
}

ModelConfig gat_config(std::vector<int> dims, int heads, int out_heads, float dropout, float attn_dropout) {
  ModelConfig c;
  c.kind = ModelKind::gat;
  c.dims = std::move(dims);
  c.heads = heads;
  c.out_heads = out_heads;
  c.dropout = dropout;
  c.attn_dropout = attn_dropout;
  c.seed = 5;
  return c;
}

ModelConfig sage_config(std::vector<int> dims, float dropout) {
  ModelConfig c;
  c.kind = ModelKind::sage;
  c.dims = std::move(dims);
  c.dropout = dropout;
  c.seed = 23;
  return c;
}

// ---------------------------------------------------------------------------
// Independent dense forward passes
// ---------------------------------------------------------------------------

// Multiplicity/weight matrix M[v][u] of edges u -> v with every existing
// self-loop replaced by exactly one of weight 1.
Dense self_looped_matrix(const GraphView& g, bool use_weights) {
  const int64_t n = g.num_vertices;
  Dense m(n, std::vector<double>(n, 0.0));
  for (int64_t v = 0; v < n; ++v)
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i)
      if (g.sources[i] != v) m[v][g.sources[i]] += (use_weights && !g.weights.empty()) ? g.weights[i] : 1.0;
  for (int64_t v = 0; v < n; ++v) m[v][v] = 1.0;
  return m;
}

Dense param_matrix(const ParamTensor& t) {
  Dense m(t.rows, std::vector<double>(t.cols));
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; ++c) m[r][c] = t.value[static_cast<size_t>(r) * t.cols + c];
  return m;
}

Dense matmul(const Dense& a, const Dense& b) {
  Dense y(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < b[0].size(); ++j) y[i][j] += a[i][k] * b[k][j];
  return y;
}

Dense drop_input(const ModelConfig& cfg, Dense h, int layer, int epoch, bool training) {
  if (!training || cfg.dropout <= 0) return h;
  for (size_t v = 0; v < h.size(); ++v)
    for (size_t c = 0; c < h[v].size(); ++c)
      h[v][c] *= dropout_keep(cfg.seed, epoch, layer, static_cast<int64_t>(v), static_cast<int>(c), cfg.dropout)
                     ? 1.0 / (1.0 - cfg.dropout)
                     : 0.0;
  return h;
}

Dense features_of(const GraphView& g) {
  Dense h(g.num_vertices, std::vector<double>(g.feature_dim));
  for (int64_t v = 0; v < g.num_vertices; ++v)
    for (int c = 0; c < g.feature_dim; ++c) h[v][c] = g.features[v * g.feature_dim + c];
  return h;
}

Dense dense_gcn_logits(const GraphView& g, const ModelConfig& cfg, const ModelParams& p, int epoch, bool training) {
  const Dense m = self_looped_matrix(g, true);
  const size_t n = m.size();
  std::vector<double> deg(n, 0.0);
  for (size_t v = 0; v < n; ++v)
    for (size_t u = 0; u < n; ++u) deg[v] += m[v][u];
  Dense a_hat = m;
  for (size_t v = 0; v < n; ++v)
    for (size_t u = 0; u < n; ++u) a_hat[v][u] = m[v][u] / std::sqrt(deg[v] * deg[u]);
  Dense h = features_of(g);
  for (int l = 0; l < cfg.num_layers(); ++l) {
    Dense z = matmul(matmul(a_hat, drop_input(cfg, h, l, epoch, training)), param_matrix(p.get(l, "W")));
    const ParamTensor& b = p.get(l, "b");
    for (auto& row : z)
      for (size_t j = 0; j < row.size(); ++j) {
        row[j] += b.value[j];
        if (!cfg.is_last(l)) row[j] = std::max(row[j], 0.0);
      }
    h = z;
  }
  return h;
}

Dense dense_gat_logits(const GraphView& g, const ModelConfig& cfg, const ModelParams& p, int epoch, bool training) {
  const Dense mult = self_looped_matrix(g, false);  // duplicates = repeated softmax terms
  const size_t n = mult.size();
  Dense h = features_of(g);
  for (int l = 0; l < cfg.num_layers(); ++l) {
    const int heads = cfg.layer_heads(l), o = cfg.dims[l + 1];
    const Dense gm = matmul(drop_input(cfg, h, l, epoch, training), param_matrix(p.get(l, "W")));
    const Dense as = param_matrix(p.get(l, "att_src")), ad = param_matrix(p.get(l, "att_dst"));
    const ParamTensor& b = p.get(l, "b");
    Dense z(n, std::vector<double>(cfg.out_width(l), 0.0));
    for (size_t v = 0; v < n; ++v) {
      for (int k = 0; k < heads; ++k) {
        auto score = [&](size_t u, const Dense& att) {
          double s = 0;
          for (int j = 0; j < o; ++j) s += att[k][j] * gm[u][k * o + j];
          return s;
        };
        std::vector<double> w(n, 0.0);
        double total = 0;
        for (size_t u = 0; u < n; ++u) {
          if (mult[v][u] == 0) continue;
          double e = score(u, as) + score(v, ad);
          e = e > 0 ? e : cfg.leaky_slope * e;
          w[u] = mult[v][u] * std::exp(e);
          total += w[u];
        }
        for (size_t u = 0; u < n; ++u) {
          if (w[u] == 0) continue;
          double alpha = w[u] / total;
          if (training && cfg.attn_dropout > 0)
            alpha *= attn_dropout_keep(cfg.seed, epoch, l, k, static_cast<int64_t>(u), static_cast<int64_t>(v),
                                       cfg.attn_dropout)
                         ? 1.0 / (1.0 - cfg.attn_dropout)
                         : 0.0;
          for (int j = 0; j < o; ++j) {
            if (cfg.is_last(l))
              z[v][j] += alpha * gm[u][k * o + j] / heads;
            else
              z[v][k * o + j] += alpha * gm[u][k * o + j];
          }
        }
      }
      for (size_t j = 0; j < z[v].size(); ++j) {
        z[v][j] += b.value[j];
        if (!cfg.is_last(l)) z[v][j] = z[v][j] > 0 ? z[v][j] : std::expm1(z[v][j]);
      }
    }
    h = z;
  }
  return h;
}

// SAGE (PyG SAGEConv, mean): z_v = W_n mean of x_u over the in-edges u -> v
// without self-loops (duplicates counted twice, edge weights ignored; 0 without
// neighbors) + W_root x_v + b.
Dense dense_sage_logits(const GraphView& g, const ModelConfig& cfg, const ModelParams& p, int epoch, bool training) {
  const int64_t n = g.num_vertices;
  Dense mean_op(n, std::vector<double>(n, 0.0));
  for (int64_t v = 0; v < n; ++v) {
    int deg = 0;
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) deg += g.sources[i] != v ? 1 : 0;
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i)
      if (g.sources[i] != v) mean_op[v][g.sources[i]] += 1.0 / deg;
  }
  Dense h = features_of(g);
  for (int l = 0; l < cfg.num_layers(); ++l) {
    const Dense x = drop_input(cfg, h, l, epoch, training);
    Dense z = matmul(matmul(mean_op, x), param_matrix(p.get(l, "W")));
    const Dense r = matmul(x, param_matrix(p.get(l, "W_root")));
    const ParamTensor& b = p.get(l, "b");
    for (size_t v = 0; v < z.size(); ++v)
      for (size_t j = 0; j < z[v].size(); ++j) {
        z[v][j] += r[v][j] + b.value[j];
        if (!cfg.is_last(l)) z[v][j] = std::max(z[v][j], 0.0);
      }
    h = z;
  }
  return h;
}

void expect_logits_equal(const RefMatrix& got, const Dense& want) {
  ASSERT_EQ(got.rows, static_cast<int64_t>(want.size()));
  ASSERT_EQ(got.cols, static_cast<int64_t>(want[0].size()));
  for (int64_t v = 0; v < got.rows; ++v)
    for (int64_t c = 0; c < got.cols; ++c)
      EXPECT_NEAR(got.at(v, c), want[v][c], 1e-12 * (1 + std::abs(want[v][c]))) << "vertex " << v << " col " << c;
}

// ---------------------------------------------------------------------------
// Finite differences
// ---------------------------------------------------------------------------

// Central differences of the loss for every element of every parameter
// tensor; each tensor must also receive a gradient that is not all zero.
void check_gradients(ReferenceTrainer& t, int epoch, bool training) {
  const double loss = t.forward_backward(epoch, training);
  ASSERT_TRUE(std::isfinite(loss));
  ModelParams& p = t.params();
  for (size_t k = 0; k < p.tensors.size(); ++k) {
    ParamTensor& pt = p.tensors[k];
    const std::vector<double> analytic = t.param_grad(k);
    double largest = 0;
    int failures = 0;
    for (int64_t i = 0; i < pt.size(); ++i) {
      const float orig = pt.value[i];
      const float hi = orig + 1e-4f, lo = orig - 1e-4f;
      pt.value[i] = hi;
      const double lp = t.forward_loss(epoch, training);
      pt.value[i] = lo;
      const double lm = t.forward_loss(epoch, training);
      pt.value[i] = orig;
      const double fd = (lp - lm) / (static_cast<double>(hi) - static_cast<double>(lo));
      largest = std::max(largest, std::abs(analytic[i]));
      if (std::abs(fd - analytic[i]) > 1e-8 + 1e-5 * std::abs(fd) && ++failures <= 5)
        ADD_FAILURE() << pt.name << "[" << i << "]: analytic " << analytic[i] << " vs finite difference " << fd;
      // The float copy handed to the optimizer is the same gradient.
      EXPECT_FLOAT_EQ(pt.grad[i], static_cast<float>(analytic[i]));
    }
    EXPECT_GT(largest, 1e-6) << pt.name << " has an all-zero gradient";
  }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

TEST(ReferenceTopology, ReplacesSelfLoopsKeepsDuplicatesAndTransposes) {
  const Graph g = tiny_graph(3, 3, false, 1);
  const RefTopology t = make_ref_topology(g.view());
  // 17 edges - 2 self-loops + 9 added self-loops.
  ASSERT_EQ(t.num_edges(), 17 - 2 + 9);
  for (int64_t v = 0; v < t.num_vertices; ++v) {
    int self = 0;
    for (int64_t e = t.offsets[v]; e < t.offsets[v + 1]; ++e) {
      EXPECT_EQ(t.dst[e], v);
      self += t.src[e] == v ? 1 : 0;
    }
    EXPECT_EQ(self, 1) << "vertex " << v;
  }
  int dup = 0;
  for (int64_t e = t.offsets[1]; e < t.offsets[2]; ++e) dup += t.src[e] == 0 ? 1 : 0;
  EXPECT_EQ(dup, 2);
  std::vector<int> seen(static_cast<size_t>(t.num_edges()), 0);
  for (int64_t u = 0; u < t.num_vertices; ++u)
    for (int64_t q = t.out_offsets[u]; q < t.out_offsets[u + 1]; ++q) {
      EXPECT_EQ(t.src[t.out_edges[q]], u);
      ++seen[t.out_edges[q]];
    }
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(ReferenceGcn, DegreesMatchTheSharedNormalization) {
  const Graph g = tiny_graph(4, 3, true, 2);
  ReferenceTrainer t(g.view(), gcn_config({4, 3}, 0), OptimizerConfig{});
  const std::vector<float> shared = gcn_inv_sqrt_degree(g.view());
  ASSERT_EQ(shared.size(), t.gcn_inv_sqrt_deg().size());
  for (size_t v = 0; v < shared.size(); ++v) EXPECT_NEAR(t.gcn_inv_sqrt_deg()[v], shared[v], 1e-6);
  EXPECT_DOUBLE_EQ(t.gcn_inv_sqrt_deg()[8], 1.0);  // isolated: only its self-loop
}

TEST(ReferenceGcn, ForwardMatchesDenseFormulation) {
  const Graph g = tiny_graph(5, 3, true, 3);
  for (float dropout : {0.0f, 0.4f}) {
    const ModelConfig cfg = gcn_config({5, 4, 6, 3}, dropout);
    ReferenceTrainer t(g.view(), cfg, OptimizerConfig{});
    randomize(t.params(), 4);
    t.forward_loss(2, true);
    expect_logits_equal(t.logits(), dense_gcn_logits(g.view(), cfg, t.params(), 2, true));
    t.evaluate();  // no dropout
    expect_logits_equal(t.logits(), dense_gcn_logits(g.view(), cfg, t.params(), 2, false));
  }
}

TEST(ReferenceGat, ForwardMatchesDenseFormulation) {
  const Graph g = tiny_graph(5, 3, true, 5);  // weights are ignored by GAT
  for (float rate : {0.0f, 0.35f}) {
    const ModelConfig cfg = gat_config({5, 4, 3}, 3, 2, rate, rate);
    ReferenceTrainer t(g.view(), cfg, OptimizerConfig{});
    randomize(t.params(), 6);
    t.forward_loss(1, true);
    expect_logits_equal(t.logits(), dense_gat_logits(g.view(), cfg, t.params(), 1, true));
    t.evaluate();
    expect_logits_equal(t.logits(), dense_gat_logits(g.view(), cfg, t.params(), 1, false));
  }
}

TEST(ReferenceGcn, GradientsTwoLayers) {
  const Graph g = tiny_graph(5, 3, true, 7);
  ReferenceTrainer t(g.view(), gcn_config({5, 6, 3}, 0), OptimizerConfig{});
  randomize(t.params(), 8);
  check_gradients(t, 0, false);
}

TEST(ReferenceGcn, GradientsThreeLayersUnweighted) {
  const Graph g = tiny_graph(4, 3, false, 9);
  ReferenceTrainer t(g.view(), gcn_config({4, 5, 6, 3}, 0), OptimizerConfig{});
  randomize(t.params(), 10);
  check_gradients(t, 0, false);
}

TEST(ReferenceGcn, GradientsWithDropout) {
  const Graph g = tiny_graph(6, 3, true, 11);
  ReferenceTrainer t(g.view(), gcn_config({6, 7, 5, 3}, 0.3f), OptimizerConfig{});
  randomize(t.params(), 12);
  check_gradients(t, 3, true);
  // The mask was applied and is the shared keyed one.
  const RefLayerState& s = t.layer(1);
  ASSERT_EQ(s.input_mask.size(), static_cast<size_t>(9 * 7));
  int dropped = 0;
  for (int64_t v = 0; v < 9; ++v)
    for (int c = 0; c < 7; ++c) {
      const bool keep = dropout_keep(11, 3, 1, v, c, 0.3f);
      EXPECT_EQ(s.input_mask[v * 7 + c] != 0, keep);
      dropped += keep ? 0 : 1;
    }
  EXPECT_GT(dropped, 0);
}

TEST(ReferenceGat, GradientsTwoLayers) {
  const Graph g = tiny_graph(5, 3, false, 13);
  ReferenceTrainer t(g.view(), gat_config({5, 4, 3}, 3, 2, 0, 0), OptimizerConfig{});
  randomize(t.params(), 14);
  check_gradients(t, 0, false);
}

TEST(ReferenceGat, GradientsTwoHiddenHeadsOneOutputHead) {
  const Graph g = tiny_graph(4, 3, false, 15);
  ReferenceTrainer t(g.view(), gat_config({4, 3, 3}, 2, 1, 0, 0), OptimizerConfig{});
  // (att_dst only gets a gradient where LeakyReLU sees scores of both signs
  // among a vertex's in-edges; this draw has such vertices in every layer.)
  randomize(t.params(), 27);
  check_gradients(t, 0, false);
}

TEST(ReferenceGat, GradientsWithInputAndAttentionDropout) {
  const Graph g = tiny_graph(5, 3, false, 17);
  ReferenceTrainer t(g.view(), gat_config({5, 4, 3}, 3, 2, 0.3f, 0.3f), OptimizerConfig{});
  randomize(t.params(), 18);
  check_gradients(t, 4, true);
  int dropped = 0;
  const RefMatrix& mask = t.layer(0).attn_mask;
  for (double f : mask.data) {
    EXPECT_TRUE(f == 0.0 || std::abs(f - 1.0 / (1.0 - static_cast<double>(0.3f))) < 1e-12);
    dropped += f == 0.0 ? 1 : 0;
  }
  EXPECT_GT(dropped, 0);
}

TEST(ReferenceSage, ParametersAreWRootAndBiasPerLayer) {
  const ModelParams p = init_params(sage_config({5, 4, 3}, 0));
  ASSERT_EQ(p.tensors.size(), 6u);
  EXPECT_EQ(p.tensors[0].name, "l0.W");
  EXPECT_EQ(p.tensors[1].name, "l0.W_root");
  EXPECT_EQ(p.tensors[2].name, "l0.b");
  EXPECT_EQ(p.tensors[1].rows, 5);
  EXPECT_EQ(p.tensors[1].cols, 4);
  EXPECT_NE(p.tensors[0].value, p.tensors[1].value);  // drawn from their own streams
  EXPECT_EQ(name_of(ModelKind::sage), "sage");
  EXPECT_EQ(model_title(ModelKind::sage), "SAGE");
}

TEST(ReferenceSage, MeanWeightsLeaveOutTheSelfLoop) {
  const Graph g = tiny_graph(3, 3, true, 29);
  ReferenceTrainer t(g.view(), sage_config({3, 3}, 0), OptimizerConfig{});
  const RefTopology& topo = t.topology();
  const std::vector<float> shared = sage_inv_degree(g.view());
  for (int64_t v = 0; v < topo.num_vertices; ++v) {
    double sum = 0;
    for (int64_t e = topo.offsets[v]; e < topo.offsets[v + 1]; ++e) {
      if (topo.src[e] == v) EXPECT_EQ(t.sage_coef()[e], 0.0);
      else EXPECT_NEAR(t.sage_coef()[e], shared[v], 1e-7);
      sum += t.sage_coef()[e];
    }
    EXPECT_NEAR(sum, topo.offsets[v + 1] - topo.offsets[v] > 1 ? 1.0 : 0.0, 1e-12) << "vertex " << v;
  }
  EXPECT_EQ(shared[8], 0.0f);  // isolated: no neighbors, mean 0
  EXPECT_EQ(shared[3], 1.0f / 2);  // 2 -> 3, 1 -> 3 (its own loop left out)
}

TEST(ReferenceSage, ForwardMatchesDenseFormulation) {
  const Graph g = tiny_graph(5, 3, true, 31);  // weights are ignored by the mean
  for (float dropout : {0.0f, 0.4f}) {
    const ModelConfig cfg = sage_config({5, 4, 6, 3}, dropout);
    ReferenceTrainer t(g.view(), cfg, OptimizerConfig{});
    randomize(t.params(), 32);
    t.forward_loss(2, true);
    expect_logits_equal(t.logits(), dense_sage_logits(g.view(), cfg, t.params(), 2, true));
    t.evaluate();
    expect_logits_equal(t.logits(), dense_sage_logits(g.view(), cfg, t.params(), 2, false));
  }
}

TEST(ReferenceSage, GradientsTwoLayers) {
  const Graph g = tiny_graph(5, 3, false, 33);
  ReferenceTrainer t(g.view(), sage_config({5, 6, 3}, 0), OptimizerConfig{});
  randomize(t.params(), 34);
  check_gradients(t, 0, false);
}

TEST(ReferenceSage, GradientsThreeLayersWithDropout) {
  const Graph g = tiny_graph(6, 3, false, 35);
  ReferenceTrainer t(g.view(), sage_config({6, 7, 5, 3}, 0.3f), OptimizerConfig{});
  randomize(t.params(), 36);
  check_gradients(t, 3, true);
}

TEST(ReferenceTrainer, EvaluationDisablesDropout) {
  const Graph g = tiny_graph(5, 3, false, 19);
  ReferenceTrainer t(g.view(), gat_config({5, 4, 3}, 2, 1, 0.5f, 0.5f), OptimizerConfig{});
  randomize(t.params(), 20);
  const double no_drop = t.forward_loss(0, false);
  EXPECT_DOUBLE_EQ(t.evaluate().loss, no_drop);
  EXPECT_NE(t.forward_loss(0, true), no_drop);
  // Masks are a function of the epoch.
  EXPECT_EQ(t.forward_loss(1, true), t.forward_loss(1, true));
  EXPECT_NE(t.forward_loss(1, true), t.forward_loss(2, true));
}

// Two well-separated classes on a ring of two cliques.
Graph separable_graph() {
  EdgeList el;
  const int n = 24;
  el.num_vertices = n;
  for (int v = 0; v < n; ++v)
    for (int d : {1, 2}) {
      const int u = (v / 12) * 12 + (v % 12 + d) % 12;  // neighbors inside the own half
      el.src.push_back(static_cast<vid_t>(u));
      el.dst.push_back(static_cast<vid_t>(v));
      el.src.push_back(static_cast<vid_t>(v));
      el.dst.push_back(static_cast<vid_t>(u));
    }
  el.src.push_back(0);  // one edge across the halves
  el.dst.push_back(12);
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = 4;
  g.num_classes = 2;
  rng::Stream r(3, 3);
  for (int v = 0; v < n; ++v) {
    const int y = v / 12;
    g.labels.push_back(y);
    g.split.push_back(v % 3 == 0 ? 1 : (v % 3 == 1 ? 2 : 3));
    for (int c = 0; c < 4; ++c)
      g.features.push_back(static_cast<float>((c == y ? 1.0 : 0.0) + 0.6 * (r.uniform() - 0.5)));
  }
  return g;
}

TEST(ReferenceTrainer, AdamDecreasesTheLoss) {
  const Graph g = separable_graph();
  OptimizerConfig opt;
  opt.lr = 0.05f;
  opt.weight_decay = 5e-4f;
  for (const ModelConfig& cfg :
       {gcn_config({4, 8, 2}, 0.1f), gat_config({4, 4, 2}, 2, 1, 0.1f, 0.1f), sage_config({4, 8, 2}, 0.1f)}) {
    ReferenceTrainer t(g.view(), cfg, opt);
    const double first = t.evaluate().loss;
    const ReferenceRun run = t.train(40);
    const EvalResult last = run.eval.back();
    EXPECT_LT(last.loss, 0.3 * first);
    EXPECT_EQ(last.train_correct, last.train_total);
    EXPECT_EQ(last.test_correct, last.test_total);
    EXPECT_EQ(t.optimizer().steps(), 40);
    ASSERT_GE(run.best_epoch, 0);
    EXPECT_DOUBLE_EQ(run.best_val_acc, run.eval[static_cast<size_t>(run.best_epoch)].val_acc());
    for (int e = 0; e < run.best_epoch; ++e) EXPECT_LT(run.eval[static_cast<size_t>(e)].val_acc(), run.best_val_acc);
  }
}

TEST(ReferenceTrainer, EvaluateCountsByHand) {
  // Isolated vertices and a one-layer GCN with W = I, b = 0: the logits are
  // the features (Â = I), so the predictions are the rows' argmax.
  Graph g;
  g.num_vertices = 7;
  g.offsets.assign(8, 0);
  g.feature_dim = 3;
  g.num_classes = 3;
  g.features = {3, 1, 0,   // pred 0
                0, 2, 1,   // pred 1
                1, 1, 0,   // tie -> first maximum, pred 0
                0, 0, 5,   // pred 2
                2, 0, 1,   // pred 0
                0, 4, 0,   // pred 1
                1, 0, 0};  // pred 0
  g.labels = {0, 2, 0, 2, 1, -1, 0};
  g.split = {1, 1, 2, 2, 3, 2, 0};  // train 0,1; val 2,3,(5 unlabeled); test 4; none 6
  ReferenceTrainer t(g.view(), gcn_config({3, 3}, 0), OptimizerConfig{});
  ParamTensor& w = t.params().get(0, "W");
  std::fill(w.value.begin(), w.value.end(), 0.0f);
  for (int i = 0; i < 3; ++i) w.value[i * 3 + i] = 1.0f;
  std::fill(t.params().get(0, "b").value.begin(), t.params().get(0, "b").value.end(), 0.0f);
  const EvalResult r = t.evaluate();
  EXPECT_EQ(r.train_total, 2);
  EXPECT_EQ(r.train_correct, 1);
  EXPECT_EQ(r.val_total, 2);
  EXPECT_EQ(r.val_correct, 2);
  EXPECT_EQ(r.test_total, 1);
  EXPECT_EQ(r.test_correct, 0);
  EXPECT_DOUBLE_EQ(r.val_acc(), 1.0);
  auto ce = [](double a, double b, double c, int y) {
    const double z[3] = {a, b, c};
    return std::log(std::exp(a) + std::exp(b) + std::exp(c)) - z[y];
  };
  EXPECT_NEAR(r.loss, (ce(3, 1, 0, 0) + ce(0, 2, 1, 2)) / 2, 1e-12);
}

TEST(ReferenceTrainer, RejectsUnlabeledTrainingVertex) {
  Graph g = tiny_graph(3, 3, false, 21);
  g.labels[0] = -1;
  EXPECT_THROW({ ReferenceTrainer t(g.view(), gcn_config({3, 3}, 0), OptimizerConfig{}); }, Error);
}

}  // namespace
}  // namespace ht
