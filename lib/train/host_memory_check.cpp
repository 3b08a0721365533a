#include "train/host_memory_check.hpp"

#include <omp.h>

#include <functional>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

std::string gib(int64_t bytes) { return format_bytes(static_cast<double>(bytes)); }

// One change of today's options that lowers the host memory of a run, and
// whether it applies to these inputs (it changes them when it does).
struct Remedy {
  std::string text;
  std::function<bool(HostPlanInputs&)> apply;
};

std::vector<Remedy> remedies(const TrainJob& job, bool cuda) {
  return {
      {"--host-dtype bf16",
       [](HostPlanInputs& in) {
         if (in.store_on_device || in.opt.host_dtype != StoreDtype::f32) return false;
         in.opt.host_dtype = StoreDtype::bf16;
         return true;
       }},
      {"--backend cuda",  // device buffers in GPU memory instead of emulated in host memory
       [&job, cuda](HostPlanInputs& in) {
         if (!in.emulated_devices || !cuda) return false;
         in.emulated_devices = false;
         in.runtime_bytes = cuda_runtime_bytes(in.plan ? in.plan->m : job.parts);
         return true;
       }},
      {"--steps stream",  // the emulated devices then hold two steps each, not all of them
       [](HostPlanInputs& in) {
         if (!in.emulated_devices || !in.plan || in.plan->n <= 2 || in.opt.steps == StepPlacement::streamed)
           return false;
         in.opt.steps = StepPlacement::streamed;
         return true;
       }},
      {"--merged-buffers 1",  // an emulated device's second merged buffer is host memory
       [](HostPlanInputs& in) {
         if (!in.emulated_devices || !in.opt.early_start || in.opt.merged_buffers != 2) return false;
         in.opt.merged_buffers = 1;
         return true;
       }},
      {"a graph file with bf16 features (ht-convert --feature-dtype bf16)",
       [](HostPlanInputs& in) {
         GraphShape& g = in.graph;
         if (g.feature_dim <= 0 || g.feature_dtype != StoreDtype::f32) return false;
         g.file_bytes -= 2 * g.vertices * g.feature_dim;
         g.feature_dtype = StoreDtype::bf16;
         return true;
       }},
  };
}

// The smallest set of remedies (fewest first, then in the order above) under
// which the run fits, as advice; else the set that comes closest.
std::string advice(const TrainJob& job, const HostPlanInputs& in, int64_t limit) {
  const bool cuda = in.emulated_devices && job.cuda_available && job.cuda_available();
  const std::vector<Remedy> all = remedies(job, cuda);
  const int k = static_cast<int>(all.size());
  std::vector<unsigned> sets;
  for (unsigned s = 1; s < (1u << k); ++s) sets.push_back(s);
  std::stable_sort(sets.begin(), sets.end(),
                   [](unsigned a, unsigned b) { return __builtin_popcount(a) < __builtin_popcount(b); });
  std::string closest;
  int64_t closest_need = 0;
  for (unsigned s : sets) {
    HostPlanInputs v = in;
    std::string names;
    bool applies = true;
    for (int r = 0; r < k && applies; ++r) {
      if (!(s & (1u << r))) continue;
      applies = all[r].apply(v);
      names += (names.empty() ? "" : " and ") + all[r].text;
    }
    if (!applies) continue;
    const int64_t need = plan_host_memory(v).need;
    if (need <= limit) return fmt::format("{} would need {} and fit", names, gib(need));
    if (closest.empty() || need < closest_need) {
      closest = names;
      closest_need = need;
    }
  }
  if (closest.empty()) return "no option of ht-train lowers it; use a machine with more memory";
  return fmt::format("even {} would need {}; use a machine with more memory", closest, gib(closest_need));
}

}  // namespace

int64_t cuda_runtime_bytes(int gpus) { return (int64_t{1} << 30) + (int64_t{256} << 20) * std::max(gpus - 1, 0); }

HostMemoryLimit host_memory_limit(const TrainJob& job) {
  if (job.host_mem_bytes > 0) return {job.host_mem_bytes, "--host-mem"};
  return detect_host_memory_limit(current_rss_bytes());
}

HostPlanInputs host_plan_inputs(const TrainJob& job, const TrainerOptions& topt, const GraphShape& g,
                                std::optional<PlanShape> plan, bool store_on_device) {
  HostPlanInputs in;
  in.graph = g;
  const int gpus = plan ? plan->m : job.parts;
  in.plan = std::move(plan);
  in.opt = topt;
  in.emulated_devices = job.backend == Backend::cpu;
  in.store_on_device = store_on_device;
  in.partition_file_bytes = job.partition_path.empty() ? 0 : file_size(job.partition_path);
  in.plan_file_bytes = job.plan_path.empty() ? 0 : file_size(job.plan_path);
  in.threads = omp_get_max_threads();
  in.logits_out = !job.logits_out.empty();
  in.predict_out = !job.predict_out.empty();
  if (job.transport && in.plan) {  // this process's share of the plan's devices
    in.devices = in.plan->m / job.transport->size();
    in.first_device = job.transport->rank() * in.devices;
  }
  const int local = in.devices > 0 ? in.devices : gpus;
  in.runtime_bytes = job.backend == Backend::cuda ? cuda_runtime_bytes(local) : 0;
  in.process_bytes = process_bytes_at_start();
  return in;
}

// Taken once, before anything is loaded: later the RSS also holds what the
// plan counts item by item.
int64_t process_bytes_at_start() {
  static const int64_t at_start = current_rss_bytes();
  return at_start;
}

bool choose_store_beside_plans(const TrainerOptions& topt, HostPlanInputs& in, const HostMemoryLimit& limit) {
  in.store_beside_plans = false;
  if (!topt.store_beside_plans || in.store_on_device) return false;
  int64_t store = 0;
  for (const HostMemoryItem& it : plan_host_memory(in).items)
    if (it.name == "vertex store") store = it.bytes;
  if (store < kStoreBesideAtLeast) return false;
  in.store_beside_plans = true;
  const HostMemoryPlan with = plan_host_memory(in);
  if (limit.bytes > 0 && with.need > limit.bytes) {
    in.store_beside_plans = false;
    log::info("vertex store after the device plans, not beside them: held while they are packed it would make the "
              "run need {} of {} ({})",
              gib(with.need), gib(limit.bytes), limit.source);
  }
  return in.store_beside_plans;
}

HostMemoryPlan check_host_memory(const TrainJob& job, const HostPlanInputs& in, const HostMemoryLimit& limit) {
  HostMemoryPlan plan = plan_host_memory(in);
  if (limit.bytes <= 0 || plan.need <= limit.bytes) return plan;
  int64_t at = plan.need;
  for (const HostPhaseTotal& t : plan.phases)
    if (t.phase == plan.need_phase) at = t.need;
  throw Error(fmt::format("host memory: this run needs {} at {} ({}{}) but {} is available ({}); {}", gib(plan.need),
                          host_phase_name(plan.need_phase), host_items_text(plan, plan.need_phase, at, true, 3),
                          plan.plan_known ? "" : "; the plan, built in memory later, not counted yet", gib(limit.bytes),
                          limit.source, advice(job, in, limit.bytes)));
}

std::string host_memory_line(const HostMemoryPlan& plan, int64_t peak_rss, const HostMemoryLimit& limit) {
  const std::string share =
      plan.peak > 0 ? fmt::format(" = {:.0f}% of the plan", 100.0 * static_cast<double>(peak_rss) / static_cast<double>(plan.peak))
                    : "";
  const std::string lim =
      limit.bytes > 0 ? fmt::format("limit {} ({})", gib(limit.bytes), limit.source) : "limit unknown";
  return fmt::format("host memory: plan {} at {} ({}), peak process RSS {}{}; {}", gib(plan.peak),
                     host_phase_name(plan.peak_phase), host_items_text(plan, plan.peak_phase, plan.peak, false, 3),
                     gib(peak_rss), share, lim);
}

}  // namespace ht
