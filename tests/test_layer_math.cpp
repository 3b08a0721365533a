// The layer seam's factory (engine/layer_math.hpp): the implementation and
// order each model kind and layer gets, the model traits the engine branches
// on, and the refusal of a kind without an implementation. The math itself
// is checked by the engine's equivalence tests (test_engine*), which run
// through the seam.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/layer_math.hpp"
#include "engine/store_layout.hpp"

namespace ht {
namespace {

ModelConfig model(ModelKind kind, std::vector<int> dims) {
  ModelConfig m;
  m.kind = kind;
  m.dims = std::move(dims);
  if (kind == ModelKind::gat) m.heads = 2;
  return m;
}

TEST(LayerMath, GcnLayersFollowTheOrder) {
  const ModelConfig m = model(ModelKind::gcn, {8, 16, 4});  // widens, then narrows
  for (const GcnOrder order : {GcnOrder::automatic, GcnOrder::aggregate_first, GcnOrder::transform_first}) {
    for (int l = 0; l < m.num_layers(); ++l) {
      const auto math = make_layer_math(m, order, l);
      ASSERT_NE(math, nullptr);
      EXPECT_EQ(math->kind(), ModelKind::gcn);
      EXPECT_EQ(math->layer(), l);
      EXPECT_EQ(math->transform_first(), transform_first(m, order, l)) << name_of(order) << " layer " << l;
    }
  }
  // automatic: transform-first exactly where the output is narrower.
  EXPECT_FALSE(make_layer_math(m, GcnOrder::automatic, 0)->transform_first());
  EXPECT_TRUE(make_layer_math(m, GcnOrder::automatic, 1)->transform_first());
}

TEST(LayerMath, GatLayersNeverTransformFirst) {
  const ModelConfig m = model(ModelKind::gat, {8, 4, 3});
  for (const GcnOrder order : {GcnOrder::automatic, GcnOrder::transform_first}) {
    for (int l = 0; l < m.num_layers(); ++l) {
      const auto math = make_layer_math(m, order, l);
      EXPECT_EQ(math->kind(), ModelKind::gat);
      EXPECT_EQ(math->layer(), l);
      EXPECT_FALSE(math->transform_first());
    }
  }
}

TEST(LayerMath, SageLayersAggregateFirstOnly) {
  const ModelConfig m = model(ModelKind::sage, {8, 4, 3});
  for (const GcnOrder order : {GcnOrder::automatic, GcnOrder::transform_first}) {
    for (int l = 0; l < m.num_layers(); ++l) {
      const auto math = make_layer_math(m, order, l);
      EXPECT_EQ(math->kind(), ModelKind::sage);
      EXPECT_FALSE(math->transform_first());
    }
  }
  EXPECT_EQ(layer_orders(m, GcnOrder::transform_first), "");
}

TEST(LayerMath, TraitsPerModel) {
  const ModelTraits gcn = model_traits(ModelKind::gcn);
  EXPECT_FALSE(gcn.backward_gathers);
  EXPECT_TRUE(gcn.edge_weights);
  EXPECT_FALSE(gcn.edge_keys);
  EXPECT_FALSE(gcn.attention);
  EXPECT_TRUE(gcn.stores_layer_matrix);
  const ModelTraits gat = model_traits(ModelKind::gat);
  EXPECT_TRUE(gat.backward_gathers);
  EXPECT_FALSE(gat.edge_weights);
  EXPECT_TRUE(gat.edge_keys);
  EXPECT_TRUE(gat.attention);
  EXPECT_FALSE(gat.stores_layer_matrix);
  const ModelTraits sage = model_traits(ModelKind::sage);
  EXPECT_TRUE(sage.backward_gathers);  // recomputes the mean: nothing stored
  EXPECT_TRUE(sage.edge_weights);
  EXPECT_TRUE(sage.mean_weights);
  EXPECT_EQ(sage.weight_matrices, 2);  // W, W_root
  EXPECT_FALSE(sage.edge_keys);
  EXPECT_FALSE(sage.attention);
  EXPECT_FALSE(sage.stores_layer_matrix);
  EXPECT_FALSE(gcn.mean_weights || gat.mean_weights);
  EXPECT_EQ(gcn.weight_matrices, 1);
  EXPECT_EQ(gat.weight_matrices, 1);
  // A layer's traits are its model's.
  for (const ModelKind kind : {ModelKind::gcn, ModelKind::gat, ModelKind::sage}) {
    const ModelTraits t = make_layer_math(model(kind, {8, 4, 3}), GcnOrder::automatic, 1)->traits();
    const ModelTraits want = model_traits(kind);
    EXPECT_EQ(t.backward_gathers, want.backward_gathers);
    EXPECT_EQ(t.edge_weights, want.edge_weights);
    EXPECT_EQ(t.edge_keys, want.edge_keys);
    EXPECT_EQ(t.attention, want.attention);
    EXPECT_EQ(t.stores_layer_matrix, want.stores_layer_matrix);
    EXPECT_EQ(t.mean_weights, want.mean_weights);
    EXPECT_EQ(t.weight_matrices, want.weight_matrices);
  }
}

// A value that is no enumerator (a cast from a number, e.g. a newer
// checkpoint's code) is refused by name, never given another model's math.
TEST(LayerMath, UnknownKindIsRefused) {
  const ModelConfig m = model(static_cast<ModelKind>(7), {8, 4, 3});
  for (auto call : {+[](const ModelConfig& c) { (void)make_layer_math(c, GcnOrder::automatic, 0); },
                    +[](const ModelConfig& c) { (void)model_traits(c.kind); }}) {
    try {
      call(m);
      FAIL() << "model kind 7 was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("model kind 7 has no layer implementation"), std::string::npos) << what;
      for (const auto& [name, kind] : model_kind_names()) EXPECT_NE(what.find(name), std::string::npos) << what;
    }
  }
}

// The vertex-wise transform of a transform-first GCN layer on the CPU
// executor: t = x W, ∇W += xᵀ ∇t, ∇x = ∇t Wᵀ (small integers: exact).
TEST(LayerMath, GcnTransformProducts) {
  const ModelConfig m = model(ModelKind::gcn, {3, 2, 2});
  const auto math = make_layer_math(m, GcnOrder::transform_first, 1);  // h^1 (2 wide) -> 2
  const auto first = make_layer_math(m, GcnOrder::transform_first, 0);  // 3 -> 2
  CpuExecutor exec(1);
  Device& d = exec.device(0);
  const std::vector<float> x{1, 2, 3, 4, 5, 6}, w{1, 0, 2, 1, 0, 1}, dt{1, 1, 0, 2};  // x: 2 x 3, W: 3 x 2, ∇t: 2 x 2
  LayerParams p;
  p.value = {d.upload(std::span<const float>(w))};  // the layer's list: W (no bias)
  p.grad = {d.alloc_floats(6)};
  const DevArray<float> X = d.upload(std::span<const float>(x)), dT = d.upload(std::span<const float>(dt));
  const DevArray<float> T = d.alloc_floats(4), dX = d.alloc_floats(6);
  first->transform(d, {X.data, 2, 3}, {T.data, 2, 2}, p);
  first->transform_backward(d, {X.data, 2, 3}, {dT.data, 2, 2}, {dX.data, 2, 3}, p);
  std::vector<float> t(4), dw(6), dx(6);
  d.read(T, t);
  d.read(p.grad[0], dw);
  d.read(dX, dx);
  EXPECT_EQ(t, (std::vector<float>{5, 5, 14, 11}));
  EXPECT_EQ(dw, (std::vector<float>{1, 9, 2, 12, 3, 15}));  // xᵀ ∇t added to zeros
  EXPECT_EQ(dx, (std::vector<float>{1, 3, 1, 0, 2, 2}));    // ∇t Wᵀ
  // A layer of another width refuses X of the wrong width; GAT has no vertex-wise transform.
  EXPECT_THROW(math->transform(d, {X.data, 2, 3}, {T.data, 2, 2}, p), Error);
  const auto gat = make_layer_math(model(ModelKind::gat, {3, 2, 2}), GcnOrder::transform_first, 0);
  EXPECT_THROW(gat->transform(d, {X.data, 2, 3}, {T.data, 2, 4}, p), Error);
}

// A hand-made step topology on a device: destination d's edges are
// edges[d] (source row, weight); its own row is own[d] (the self-loop, weight 0).
struct SmallTopology {
  DevTopology t;
  SmallTopology(Device& d, const std::vector<std::vector<std::pair<uint32_t, float>>>& edges,
                const std::vector<uint32_t>& own, int64_t rows) {
    std::vector<int64_t> offsets{0}, t_offsets(static_cast<size_t>(rows + 1), 0);
    std::vector<uint32_t> src, edge_dst, t_edge;
    std::vector<float> weight;
    for (size_t v = 0; v < edges.size(); ++v) {
      for (const auto& [u, w] : edges[v]) {
        src.push_back(u);
        weight.push_back(w);
        edge_dst.push_back(static_cast<uint32_t>(v));
        ++t_offsets[u + 1];
      }
      offsets.push_back(static_cast<int64_t>(src.size()));
    }
    for (int64_t r = 0; r < rows; ++r) t_offsets[r + 1] += t_offsets[r];
    for (int64_t r = 0; r < rows; ++r)  // edges by source row, ascending edge id
      for (size_t e = 0; e < src.size(); ++e)
        if (src[e] == r) t_edge.push_back(static_cast<uint32_t>(e));
    t.num_dst = static_cast<int64_t>(edges.size());
    t.num_edges = static_cast<int64_t>(src.size());
    t.num_src_rows = rows;
    t.offsets = d.upload(std::span<const int64_t>(offsets));
    t.src = d.upload(std::span<const uint32_t>(src));
    t.weight = d.upload(std::span<const float>(weight));
    t.dst_row = d.upload(std::span<const uint32_t>(own));
    t.t_offsets = d.upload(std::span<const int64_t>(t_offsets));
    t.t_edge = d.upload(std::span<const uint32_t>(t_edge));
    t.edge_dst = d.upload(std::span<const uint32_t>(edge_dst));
  }
};

// One SAGE batch of the last layer of `m` (no activation, no bias, W_root 0)
// on a CPU device: forward's z, then backward from ∇h = dh, the gathered
// rows' gradients.
struct SageBatchResult {
  std::vector<float> z, g;
};
SageBatchResult run_sage_batch(Device& d, const ModelConfig& m, const SmallTopology& topo, const std::vector<float>& x,
                               const std::vector<float>& w, const std::vector<float>& dh) {
  const int l = m.num_layers() - 1;
  const auto math = make_layer_math(m, GcnOrder::automatic, l);
  const int64_t in = m.in_width(l), out = m.out_width(l), rows = topo.t.num_src_rows, nd = topo.t.num_dst;
  const std::vector<float> root(w.size(), 0.0f);
  LayerParams p;
  p.value = {d.upload(std::span<const float>(w)), d.upload(std::span<const float>(root))};  // W, W_root
  p.grad = {d.alloc_floats(in * out), d.alloc_floats(in * out)};
  const DevArray<float> X = d.upload(std::span<const float>(x)), G = d.alloc_floats(rows * in);
  const DevArray<float> Z = d.alloc_floats(nd * out), H = d.alloc_floats(nd * out), dZ = d.alloc_floats(nd * out);
  const DevArray<float> dH = d.upload(std::span<const float>(dh)), agg = d.alloc_floats(nd * in);
  const std::vector<DevArray<float>> scratch{d.alloc_floats(rows * out)};  // sage_buffers: rows x narrowed width
  LayerBatch b{.d = d,
               .topo = topo.t,
               .nd = nd,
               .buffer_rows = rows,
               .active_rows = rows,
               .head_rows = rows - 1,  // the last row as a second range (a remote area)
               .remote_row0 = rows - 1,
               .remote_rows = 1,
               .X = {X.data, rows, in},
               .G = {G.data, rows, in},
               .Z = {Z.data, nd, out},
               .H = {H.data, nd, out},
               .dZ = {dZ.data, nd, out},
               .dH = {dH.data, nd, out},
               .agg = agg,
               .p = p,
               .attn = {},
               .scratch = scratch};
  SageBatchResult r{std::vector<float>(static_cast<size_t>(nd * out)), std::vector<float>(static_cast<size_t>(rows * in))};
  math->forward(b);
  d.read(Z, r.z);
  math->backward(b);
  d.read(G, r.g);
  return r;
}

ModelConfig sage_model(std::vector<int> dims) {
  ModelConfig m = model(ModelKind::sage, std::move(dims));
  m.bias = false;
  return m;
}

// SAGE's order of the neighbors' products follows the widths (GCN's rule,
// ModelConfig::narrows), told apart by float rounding on values made for it:
// a layer 2 -> 1 transforms first, one 2 -> 2 aggregates first.
TEST(LayerMath, SageOrderFollowsTheWidths) {
  CpuExecutor exec(1);
  Device& d = exec.device(0);
  EXPECT_TRUE(sage_model({3, 2, 1}).narrows(1));
  EXPECT_FALSE(sage_model({3, 2, 2}).narrows(1));
  // Forward: v's neighbors are rows 0 and 1 (weights 1/2), its own row 2;
  // W's column is (1, -1). Transform-first: t = (0.5, 1), z = 0.75 exactly.
  // Aggregate-first: the mean's first column, B + 0.75, rounds to B + 1
  // (B = 2^22: steps of 0.5), so z = (B + 1) - B = 1.
  const float B = 4194304.0f;
  const SmallTopology fwd(d, {{{0, 0.5f}, {1, 0.5f}, {2, 0.0f}}}, {2}, 3);
  const std::vector<float> x{B + 0.5f, B, B + 1.0f, B, 0, 0};
  const std::vector<float> dh1{0}, dh2{0, 0};
  EXPECT_EQ(run_sage_batch(d, sage_model({3, 2, 1}), fwd, x, {1, -1}, dh1).z, (std::vector<float>{0.75f}));
  EXPECT_EQ(run_sage_batch(d, sage_model({3, 2, 2}), fwd, x, {1, 0, -1, 0}, dh2).z, (std::vector<float>{1.0f, 0.0f}));
  // Backward: v1 and v2 each have row 0 as their one neighbor (weight 1),
  // ∇z = D and 1 - D (D = 2^24), W's column (c, c), c = 1 + 2^-12.
  // Transform-first: s = Mᵀ ∇z = 1 exactly, row 0's gradient s Wᵀ = (c, c).
  // Aggregate-first: ∇mean = ∇z Wᵀ rounds (1 - D) c = 1 + 2^-12 - D c to
  // 2 - D c (steps of 2 there), so row 0's gradient Mᵀ ∇mean = 2.
  const float D = 16777216.0f, c = 1.0f + 1.0f / 4096.0f;
  const SmallTopology bwd(d, {{{0, 1.0f}, {1, 0.0f}}, {{0, 1.0f}, {2, 0.0f}}}, {1, 2}, 3);
  const std::vector<float> xb(6, 0.0f);
  const std::vector<float> narrow = run_sage_batch(d, sage_model({3, 2, 1}), bwd, xb, {c, c}, {D, 1 - D}).g;
  const std::vector<float> equal = run_sage_batch(d, sage_model({3, 2, 2}), bwd, xb, {c, 0, c, 0}, {D, 0, 1 - D, 0}).g;
  EXPECT_EQ(narrow, (std::vector<float>{c, c, 0, 0, 0, 0}));
  EXPECT_EQ(equal, (std::vector<float>{2, 2, 0, 0, 0, 0}));
}

// An aggregate-first SAGE layer returns its mean from forward (the store
// writes it) and its backward reads the mean back from the slot's aggregate
// rows instead of a second sparse product: given another mean there, z and
// ∇W follow it (exact small numbers), while the root's products still take
// x_v from the gathered rows. Both layers of 2-2-2: layer 0 with ReLU (z
// recomputed for the mask), layer 1 without (∇z = ∇h).
TEST(LayerMath, SageBackwardReadsTheStoredMean) {
  CpuExecutor exec(1);
  Device& d = exec.device(0);
  const ModelConfig m = sage_model({2, 2, 2});
  // One destination: neighbors rows 0 and 1 (weights 1/2), its own row 2.
  const SmallTopology topo(d, {{{0, 0.5f}, {1, 0.5f}, {2, 0.0f}}}, {2}, 3);
  const std::vector<float> x{2, 4, 6, 8, 1, 1}, w{1, 0, 0, 1}, root{1, 0, 0, 1}, dh{1, 2};
  for (int l = 0; l < 2; ++l) {
    SCOPED_TRACE(l);
    const auto math = make_layer_math(m, GcnOrder::automatic, l);
    LayerParams p;
    p.value = {d.upload(std::span<const float>(w)), d.upload(std::span<const float>(root))};  // W, W_root
    p.grad = {d.alloc_floats(4), d.alloc_floats(4)};
    const DevArray<float> X = d.upload(std::span<const float>(x)), G = d.alloc_floats(6), agg = d.alloc_floats(2);
    const DevArray<float> Z = d.alloc_floats(2), H = d.alloc_floats(2), dZ = d.alloc_floats(2);
    const DevArray<float> dH = d.upload(std::span<const float>(dh));
    LayerBatch b{.d = d,
                 .topo = topo.t,
                 .nd = 1,
                 .buffer_rows = 3,
                 .active_rows = 3,
                 .head_rows = 3,
                 .remote_row0 = 0,
                 .remote_rows = 0,
                 .X = {X.data, 3, 2},
                 .G = {G.data, 3, 2},
                 .Z = {Z.data, 1, 2},
                 .H = {H.data, 1, 2},
                 .dZ = {dZ.data, 1, 2},
                 .dH = {dH.data, 1, 2},
                 .agg = agg,
                 .p = p,
                 .attn = {},
                 .scratch = {}};
    const DevMat stored = math->forward(b);
    ASSERT_EQ(stored.data, agg.data);
    std::vector<float> mean(2), z(2);
    d.read(agg, mean);
    d.read(Z, z);
    EXPECT_EQ(mean, (std::vector<float>{4, 6}));  // (x_0 + x_1) / 2
    EXPECT_EQ(z, (std::vector<float>{5, 7}));     // mean W + x_v W_root
    const std::vector<float> other{-10, 3};        // what the store hands back
    d.upload_bytes(std::as_bytes(std::span<const float>(other)), {reinterpret_cast<std::byte*>(agg.data), 8});
    math->backward(b);
    std::vector<float> dw(4), droot(4);
    d.read(p.grad[0], dw);
    d.read(p.grad[1], droot);
    if (l == 0) {  // ReLU's mask from z = (-10 + 1, 3 + 1): ∇z = (0, 2)
      d.read(Z, z);
      EXPECT_EQ(z, (std::vector<float>{-9, 4}));
      EXPECT_EQ(dw, (std::vector<float>{0, -20, 0, 6}));  // otherᵀ ∇z
      EXPECT_EQ(droot, (std::vector<float>{0, 2, 0, 2}));  // x_vᵀ ∇z
    } else {  // ∇z = ∇h
      EXPECT_EQ(dw, (std::vector<float>{-10, -20, 3, 6}));
      EXPECT_EQ(droot, (std::vector<float>{1, 2, 1, 2}));
    }
  }
}

// The layers that keep a matrix in the vertex store: every GCN layer, no
// GAT layer, SAGE's aggregate-first ones (the mean, in width; 6-8-8-4:
// layers 0 and 1, not the narrowing layer 2), as store_matrices lists them.
TEST(LayerMath, StoredLayerMatrices) {
  TrainerOptions opt{model(ModelKind::sage, {6, 8, 8, 4}), OptimizerConfig{}, CommMode::full, GcnOrder::automatic};
  EXPECT_TRUE(stores_layer_matrix(opt, 0));
  EXPECT_TRUE(stores_layer_matrix(opt, 1));
  EXPECT_FALSE(stores_layer_matrix(opt, 2));
  std::vector<std::pair<int, int64_t>> means;
  for (const StoreMatrix& s : store_matrices(opt)) {
    EXPECT_NE(s.kind, StoreKind::transform);
    if (s.kind == StoreKind::aggregate) means.emplace_back(s.layer, s.cols);
  }
  EXPECT_EQ(means, (std::vector<std::pair<int, int64_t>>{{0, 6}, {1, 8}}));
  opt.model.kind = ModelKind::gcn;
  for (int l = 0; l < 3; ++l) EXPECT_TRUE(stores_layer_matrix(opt, l));
  opt.model = model(ModelKind::gat, {6, 8, 8, 4});
  for (int l = 0; l < 3; ++l) EXPECT_FALSE(stores_layer_matrix(opt, l));
  EXPECT_EQ(store_columns(store_matrices(opt), StoreKind::aggregate), 0);
}

TEST(LayerMath, LayerOutOfRangeIsRefused) {
  const ModelConfig m = model(ModelKind::gcn, {8, 4, 3});
  EXPECT_THROW(make_layer_math(m, GcnOrder::automatic, 2), Error);
  EXPECT_THROW(make_layer_math(m, GcnOrder::automatic, -1), Error);
}

}  // namespace
}  // namespace ht
