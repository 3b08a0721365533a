#include "train/chunk_choice.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/timer.hpp"
#include "engine/memory_plan.hpp"
#include "partition/chunk_shape.hpp"
#include "partition/chunking.hpp"
#include "partition/partition_run.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {


std::string bytes(int64_t b) { return format_bytes(static_cast<double>(b)); }

int64_t smallest_part(const Partition& p) {
  int64_t least = p.num_vertices;
  for (int i = 0; i < p.m(); ++i) least = std::min(least, p.part_offsets[i + 1] - p.part_offsets[i]);
  return least;
}

bool fits(const ChunkNeed& need, int64_t tier, int64_t budget) { return need.working_set + tier <= budget; }

// "n = 3 needs 15.9 GiB (+ tier)" for the count tried just below the chosen one.
std::string below_text(const std::vector<ChunkNeed>& tried, int chosen, int64_t tier) {
  const ChunkNeed* below = nullptr;
  for (const ChunkNeed& t : tried)
    if (t.chunks < chosen && (!below || t.chunks > below->chunks)) below = &t;
  if (!below) return "the fewest chunks";
  return fmt::format("n = {} needs {}{}", below->chunks, bytes(below->working_set), tier > 0 ? " + tier" : "");
}

std::string chosen_text(const ChunkChoice& c, const ChunkBudget& budget) {
  return fmt::format("chunks: auto chose n = {} per GPU (working set {} on GPU {} + GPU cache tier {} of {} per GPU, "
                     "{}; {})",
                     c.chunks, bytes(c.chosen.working_set), c.chosen.gpu, bytes(c.tier), bytes(c.budget),
                     budget.source, below_text(c.tried, c.chunks, c.tier));
}

Error too_small(const ChunkNeed& least, int64_t tier, const ChunkBudget& budget) {
  return option_error("--chunks",
                      fmt::format("auto: the smallest GPU working set, {} at n = {} chunks per GPU (GPU {}){}, does "
                                  "not fit in the {} per GPU of {}; give more GPU memory or more GPUs, or narrower "
                                  "layers",
                                  bytes(least.working_set), least.chunks, least.gpu,
                                  tier > 0 ? fmt::format(" plus {} kept for the GPU cache", bytes(tier)) : "",
                                  bytes(budget.bytes), budget.source));
}

}  // namespace

std::vector<int> chunk_candidates(int cap) {
  std::vector<int> out;
  for (int64_t p = 1; p <= cap; p *= 2) {
    out.push_back(static_cast<int>(p));
    if (p >= 2 && p * 3 / 2 <= cap) out.push_back(static_cast<int>(p * 3 / 2));
  }
  std::sort(out.begin(), out.end());
  return out;
}

int64_t gpu_cache_tier(const TrainerOptions& opt, const Partition& p, int64_t feature_dim, int64_t budget) {
  if (opt.gpu_cache == 0 || budget <= 0) return 0;
  if (opt.gpu_cache > 0) return opt.gpu_cache;
  // Baseline mode caches h^0 whole on every GPU; the others each GPU's rows.
  int64_t rows = 0;
  for (int i = 0; i < p.m(); ++i) rows = std::max(rows, p.part_offsets[i + 1] - p.part_offsets[i]);
  if (opt.comm == CommMode::baseline) rows = p.num_vertices;
  const int64_t tier = rows * feature_dim * dtype_bytes(opt.host_dtype) + gpu_cache_margin(budget);
  return tier <= budget / 8 ? tier : 0;
}

namespace {

// The working set plus the second merged buffer (second_merged_buffer_bytes):
// measured on the H100 with a 16 GiB budget, products-like n = 4 (no room for
// it) 410.7 ms against n = 6 (room) 318.3 ms.
ChunkNeed working_set_of(const PlanShape& shape, const Partition& p, const TrainerOptions& opt, int64_t limit) {
  ChunkNeed need;
  need.chunks = p.n();
  for (int i = 0; i < shape.m; ++i) {
    const int64_t bytes = device_memory_need(shape, i, opt, limit).total() + second_merged_buffer_bytes(shape, i, opt);
    if (bytes > need.working_set) need = {p.n(), bytes, i};
  }
  return need;
}

}  // namespace

ChunkNeed chunk_working_set(const GraphView& g, const Partition& p, const TrainerOptions& opt, int64_t limit) {
  return working_set_of(partition_plan_shape(g, p), p, opt, limit);
}

ChunkNeed chunk_working_set_bound(const GraphView& g, const Partition& p, const TrainerOptions& opt, int64_t limit) {
  // Steps placed automatically are counted streamed (never more than
  // resident), so that the bound holds whichever placement the limit picks.
  TrainerOptions streamed = opt;
  if (streamed.steps == StepPlacement::automatic) streamed.steps = StepPlacement::streamed;
  return working_set_of(partition_plan_shape_bound(g, p), p, streamed, limit);
}

Partition rechunk(const GraphView& g, const Partition& base, const PartitionParams& requested, int n,
                  ChunkingInfo* chunking) {
  HT_CHECK(base.n() == 1, "rechunk: the base partition has {} chunks per partition, not 1", base.n());
  Partition p = base;
  if (chunking) *chunking = {};
  if (n == 1) return p;
  p.params.chunks = n;
  p.params.chunking = requested.chunking;
  PartitionRunInfo run;
  make_chunks(g, p, requested.method, run);
  if (chunking) *chunking = std::move(run.chunking);
  return p;
}

namespace {

// The smallest count before which choose_chunks tests the largest count's bound.
constexpr int kBoundCheckFrom = 8;

ChunkChoice without_budget(Partition base, const ChunkBudget& budget) {
  ChunkChoice c;
  c.partition = std::move(base);
  c.chosen.chunks = 1;
  c.summary = fmt::format("chunks: auto chose n = 1 per GPU: no GPU memory budget ({})", budget.source);
  return c;
}

// A budget below the bound of the largest count's working set fails before
// any count is tried in full; the exact figure is computed for the message.
void check_bound(const GraphView& g, const Partition& most, const TrainerOptions& opt, int64_t limit, int64_t tier,
                 const ChunkBudget& budget) {
  if (!fits(chunk_working_set_bound(g, most, opt, limit), tier, budget.bytes))
    throw too_small(chunk_working_set(g, most, opt, limit), tier, budget);
}

}  // namespace

ChunkChoice choose_chunks(const GraphView& g, Partition base, const PartitionParams& requested,
                          const TrainerOptions& opt, const ChunkBudget& budget) {
  if (budget.bytes <= 0) return without_budget(std::move(base), budget);
  ChunkChoice c;
  c.budget = budget.bytes;
  c.tier = gpu_cache_tier(opt, base, g.feature_dim, budget.bytes);
  const int64_t limit = std::max<int64_t>(budget.bytes - c.tier, 1);  // what the steps may take (placement)
  const std::vector<int> counts =
      chunk_candidates(static_cast<int>(std::min<int64_t>(kMaxAutoChunks, smallest_part(base))));
  bool bound_checked = false;
  for (int n : counts) {
    // The quick test that no count fits (the largest count's bound) chunks
    // the graph into the most pieces, as long as a large count's own try
    // (30 s of the 66 s search on a 12 M-vertex graph, bench/RESULTS.md
    // session 11): it runs once the small counts have failed, so that a
    // budget a few chunks fit never pays it. The count chosen is the same.
    if (!bound_checked && n >= kBoundCheckFrom) {
      check_bound(g, rechunk(g, base, requested, counts.back()), opt, limit, c.tier, budget);
      bound_checked = true;
    }
    const Timer t;
    Partition p = rechunk(g, base, requested, n, &c.chunking);
    c.chosen = chunk_working_set(g, p, opt, limit);
    c.tried.push_back(c.chosen);
    log::debug("chunks: n = {} needs {} on GPU {} ({:.2f} s)", n, bytes(c.chosen.working_set), c.chosen.gpu,
               t.seconds());
    if (!fits(c.chosen, c.tier, budget.bytes)) continue;
    c.chunks = n;
    c.partition = std::move(p);
    c.summary = chosen_text(c, budget);
    return c;
  }
  throw too_small(c.tried.back(), c.tier, budget);  // the largest count's, exact
}

ModelConfig resolved_model(ModelConfig m, int hidden, int64_t feature_dim, int64_t num_classes) {
  if (m.dims.empty()) {
    const int h = hidden > 0 ? hidden : default_hidden(m.kind);
    m.dims = {static_cast<int>(feature_dim), h, static_cast<int>(std::max<int64_t>(num_classes, 1))};
  }
  return m;
}

ChunkChoice choose_model_chunks(const GraphView& g, Partition base, const PartitionParams& requested,
                                TrainerOptions opt, int hidden, const ChunkBudget& budget) {
  opt.model = resolved_model(opt.model, hidden, g.feature_dim, g.num_classes);
  opt.model.validate();
  ChunkChoice c = choose_chunks(g, std::move(base), requested, opt, budget);
  log::info("{}", c.summary);
  return c;
}

namespace {

// The budget: the GPUs' memory (cuda), capped by --gpu-mem; --gpu-mem alone
// on the CPU backend; else none.
ChunkBudget job_budget(const TrainJob& job, int gpus) {
  if (job.device_memory) {
    const int64_t usable = job.device_memory(gpus);
    if (job.gpu_mem_bytes > 0 && job.gpu_mem_bytes <= usable) return {job.gpu_mem_bytes, "--gpu-mem"};
    return {usable, fmt::format("the free memory of the GPU{}", gpus > 1 ? "s" : "")};
  }
  if (job.gpu_mem_bytes > 0) return {job.gpu_mem_bytes, "--gpu-mem"};
  return {0, "the CPU backend emulates GPUs without a memory limit; --gpu-mem GiB sizes the chunks for GPUs of "
             "that memory"};
}

}  // namespace

Partition choose_job_chunks(const TrainJob& job, const GraphView& g, Partition base, const PartitionParams& requested) {
  const ChunkBudget budget = job_budget(job, base.m());
  return choose_model_chunks(g, std::move(base), requested, job.trainer, job.hidden, budget).partition;
}

}  // namespace ht
