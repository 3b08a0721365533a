// The one list of a device's buffers (engine/device_buffers.hpp): the
// parameters are the model's list in init_params' order, a model's own
// buffers are declared by its layer file, and the list is what setup
// allocates on the CPU executor (the planners sum it: test_memory_plan,
// test_host_memory_plan).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/device_plan.hpp"
#include "engine/device_buffers.hpp"
#include "engine/layer_math.hpp"
#include "engine/trainer.hpp"
#include "training_problem.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"
#include "partition/plan_builder.hpp"
#include "plan/plan_shape.hpp"

namespace ht {
namespace {

ModelConfig model(ModelKind kind, std::vector<int> dims, bool bias = true) {
  ModelConfig c;
  c.kind = kind;
  c.dims = std::move(dims);
  c.heads = 3;
  c.out_heads = 2;
  c.bias = bias;
  return c;
}

std::vector<ModelConfig> models() {
  std::vector<ModelConfig> out;
  for (bool bias : {true, false}) {
    out.push_back(model(ModelKind::gcn, {12, 16, 8, 5}, bias));
    out.push_back(model(ModelKind::gat, {12, 4, 5}, bias));
    out.push_back(model(ModelKind::sage, {12, 16, 5}, bias));
  }
  return out;
}

BufferShape small_shape() {
  BufferShape s;
  s.rows = 40;
  s.nd = 10;
  s.ne = 70;
  s.later = 6;
  s.max_flush = 9;
  s.num_vertices = 100;
  s.steps = {512, 768};
  return s;
}

}  // namespace

// Each tensor of init_params, in its order, is an upload and a gradient of its size.
TEST(DeviceBuffers, ParametersAreTheModelsList) {
  for (const ModelConfig& m : models()) {
    SCOPED_TRACE(fmt::format("{} bias {}", name_of(m.kind), m.bias));
    TrainerOptions opt;
    opt.model = m;
    const ModelParams p = init_params(m);
    std::vector<const DeviceBuffer*> values, grads;
    for (const DeviceBuffer& b : device_buffers(small_shape(), opt)) {
      if (b.use == BufferUse::param) values.push_back(&b);
      if (b.use == BufferUse::param_grad) grads.push_back(&b);
    }
    ASSERT_EQ(values.size(), p.tensors.size());
    ASSERT_EQ(grads.size(), p.tensors.size());
    for (size_t k = 0; k < p.tensors.size(); ++k) {
      const ParamTensor& t = p.tensors[k];
      EXPECT_EQ(values[k]->name, t.name);
      EXPECT_EQ(values[k]->index, static_cast<int>(k));
      EXPECT_EQ(grads[k]->index, static_cast<int>(k));
      EXPECT_EQ(values[k]->size(), t.size());
      EXPECT_EQ(grads[k]->bytes(), 4 * t.size());
      EXPECT_FALSE(values[k]->per_chunk);
    }
  }
}

// The model's own buffers come from its layer file (ModelTraits::buffers):
// GAT's transform and attention buffers and its reserved backward scratch;
// SAGE's transform of the gathered rows where a layer narrows (12-16-5: the
// second layer's 5 columns); GCN adds none.
TEST(DeviceBuffers, ModelBuffersAreDeclaredByTheModel) {
  const BufferShape s = small_shape();
  for (const ModelConfig& m : models()) {
    SCOPED_TRACE(name_of(m.kind));
    TrainerOptions opt;
    opt.model = m;
    const LayerExtents x = layer_extents(m, opt.gcn_order);
    int64_t allocated = 0, reserved = 0;
    int count = 0;
    for (const DeviceBuffer& b : device_buffers(s, opt)) {
      if (b.use != BufferUse::model) {
        EXPECT_EQ(b.owner, "engine") << b.name;
        continue;
      }
      EXPECT_EQ(b.owner, name_of(m.kind)) << b.name;
      if (b.site == BufferSite::allocated) {
        EXPECT_EQ(b.slot, count++) << b.name;  // setup's order: LayerBatch::scratch
        allocated += b.bytes();
      } else {
        reserved += b.bytes();
      }
    }
    if (m.kind == ModelKind::gat) {
      EXPECT_EQ(count, 6);
      EXPECT_EQ(allocated, 4 * s.rows * x.max_tw * 2 + 4 * 4 * s.ne * x.max_heads);
      EXPECT_EQ(reserved, 4 * s.ne * x.max_heads);
    } else if (m.kind == ModelKind::sage) {
      EXPECT_EQ(count, 1);
      EXPECT_EQ(x.max_narrowed, 5);
      EXPECT_EQ(allocated, 4 * s.rows * x.max_narrowed);
      EXPECT_EQ(reserved, 0);
    } else {
      EXPECT_EQ(count, 0);
      EXPECT_EQ(reserved, 0);
    }
  }
}

// SAGE's transform buffer only where a layer's output is narrower than its
// input (its order: ModelConfig::narrows).
TEST(DeviceBuffers, SageTransformBufferOnlyWhereALayerNarrows) {
  for (auto [dims, want] : {std::pair{std::vector<int>{4, 8, 8}, 0}, std::pair{std::vector<int>{12, 16, 5}, 5},
                            std::pair{std::vector<int>{9, 7, 7, 3}, 7}}) {
    TrainerOptions opt;
    opt.model = model(ModelKind::sage, dims);
    int64_t cols = 0;
    int count = 0;
    for (const DeviceBuffer& b : device_buffers(small_shape(), opt))
      if (b.use == BufferUse::model) {
        ++count;
        cols = b.cols;
        EXPECT_EQ(b.rows, small_shape().rows);
      }
    EXPECT_EQ(count, want > 0 ? 1 : 0) << dims.size();
    EXPECT_EQ(cols, want);
  }
}

// In-memory mode has no staging ring and no second merged buffer; a 16-bit
// store adds the shadows.
TEST(DeviceBuffers, OptionsChooseTheEntries) {
  TrainerOptions opt;
  opt.model = model(ModelKind::gcn, {12, 16, 5});
  auto has = [&](const BufferShape& s, BufferUse use) {
    const std::vector<DeviceBuffer> list = device_buffers(s, opt);
    return std::any_of(list.begin(), list.end(), [&](const DeviceBuffer& b) { return b.use == use; });
  };
  BufferShape s = small_shape();
  EXPECT_TRUE(has(s, BufferUse::staging));
  EXPECT_TRUE(has(s, BufferUse::second_merged));
  EXPECT_FALSE(has(s, BufferUse::raw_in));
  s.store_on_device = true;
  EXPECT_FALSE(has(s, BufferUse::staging));
  EXPECT_FALSE(has(s, BufferUse::second_merged));
  opt.host_dtype = StoreDtype::bf16;
  EXPECT_TRUE(has(small_shape(), BufferUse::raw_in));
  EXPECT_TRUE(has(small_shape(), BufferUse::raw_staging));
}


// What setup allocates on each emulated device is the list's sum, built
// from the plan's sizes as setup builds it from the device plan: with no
// GPU cache, device forwarding or gradient handoff (setup's later parts,
// outside the list), the CPU executor's peak is the largest device's sum.
TEST(DeviceBuffers, SetupAllocatesTheList) {
  const Graph g = test::training_graph(400, 3000, 12, 5, 3);
  std::vector<int64_t> orig(static_cast<size_t>(g.num_vertices));
  std::iota(orig.begin(), orig.end(), 0);
  for (const ModelConfig& m : models()) {
    // The packed steps' per-edge arrays as the Trainer asks for them.
    const ModelTraits t = model_traits(m.kind);
    const std::vector<float> deg = !t.edge_weights ? std::vector<float>{}
                                   : t.mean_weights ? sage_inv_degree(g.view())
                                                    : gcn_inv_sqrt_degree(g.view());
    const std::span<const float> none;
    const EdgeKeys keys{t.mean_weights ? none : deg, orig, t.mean_weights ? deg : none};
    for (CommMode comm : {CommMode::baseline, CommMode::p2p, CommMode::full})
      for (StoreDtype dtype : {StoreDtype::f32, StoreDtype::bf16}) {
        SCOPED_TRACE(fmt::format("{} bias {} {} {}", name_of(m.kind), m.bias, name_of(comm), dtype_name(dtype)));
        const int gpus = 2, chunks = 3;
        const Plan plan = build_plan(g.view(), test::id_range_partition(g, gpus, chunks));
        TrainerOptions opt;
        opt.model = m;
        opt.comm = comm;
        opt.host_dtype = dtype;
        opt.forward_on_device = false;
        opt.handoff_gradients = false;
        opt.gpu_cache = 0;
        CpuExecutor exec(gpus);
        const Trainer tr(exec, g.view(), orig, plan, opt);
        const PlanShape s = shape_of(plan);
        int64_t most = 0;
        for (int i = 0; i < gpus; ++i) {
          std::vector<std::vector<std::byte>> blocks;
          const DevicePlan dp = build_device_plans(  // (resident steps: derived on the device)
              plan, i, 1, comm, keys, t.edge_keys,
              [&](int, int64_t n) { return blocks.emplace_back(static_cast<size_t>(n)).data(); },
              remote_areas(opt, gpus, chunks), {1})[0];
          BufferShape b;
          b.rows = std::max<int64_t>(dp.buffer_rows, 1);
          b.nd = std::max<int64_t>(s.max_dst[i], 1);
          b.ne = std::max<int64_t>(s.max_edges[i], 1);
          b.later = reads_ahead(opt, chunks) ? std::max<int64_t>(dp.max_later_loads, 1) : 0;
          b.send = early_send_rows(s, i, opt);
          b.max_flush = dp.max_flush;
          b.num_vertices = g.num_vertices;
          int64_t step_bytes = 0;
          for (const DeviceStep& step : dp.steps) {
            step_bytes += step.block_bytes;
            b.steps.push_back(step.block_bytes);
          }
          EXPECT_GT(step_bytes, 0);
          most = std::max(most, allocated_bytes(device_buffers(b, opt)));
        }
        EXPECT_EQ(exec.peak_device_bytes(), most);
      }
  }
}

}  // namespace ht
