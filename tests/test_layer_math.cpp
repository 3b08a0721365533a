// The layer seam's factory (engine/layer_math.hpp): the implementation and
// order each model kind and layer gets, the model traits the engine branches
// on, and the refusal of a kind without an implementation. The math itself
// is checked by the engine's equivalence tests (test_engine*), which run
// through the seam.
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/layer_math.hpp"

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

TEST(LayerMath, LayerOutOfRangeIsRefused) {
  const ModelConfig m = model(ModelKind::gcn, {8, 4, 3});
  EXPECT_THROW(make_layer_math(m, GcnOrder::automatic, 2), Error);
  EXPECT_THROW(make_layer_math(m, GcnOrder::automatic, -1), Error);
}

}  // namespace
}  // namespace ht
