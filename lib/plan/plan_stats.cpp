#include "plan/plan_stats.hpp"

#include <fmt/format.h>

#include "core/json.hpp"

namespace ht {

double comm_cost(const PlanVolumes& v, const CostProfile& profile, double row_bytes) {
  const double ori = static_cast<double>(v.v_ori), p2p = static_cast<double>(v.v_p2p),
               ru = static_cast<double>(v.v_ru);
  return row_bytes * (ru / profile.t_hd + (ori - p2p) / profile.t_dd + (p2p - ru) / profile.t_ru);
}

namespace {

std::string order_description(const Plan& plan, const PlanParams& params) {
  if (plan.reorganized) return "reorganized (Algorithm 4)";
  if (params.reorganize_requested) return "partitioner's order (reorganization did not lower C)";
  return "partitioner's order (--no-reorganize)";
}

double per_vertex(int64_t rows, int64_t n) { return n > 0 ? static_cast<double>(rows) / static_cast<double>(n) : 0; }

std::string volume_row(const char* name, int64_t before, int64_t after, const Plan& plan, double row_bytes) {
  return fmt::format("  {:<6} {:>14} {:>14} {:>9.3f} {:>14.0f}\n", name, before, after,
                     per_vertex(after, plan.num_vertices), static_cast<double>(after) * row_bytes);
}

std::string capacity_rows(const Plan& plan) {
  std::string out = fmt::format("  {:>4} {:>12} {:>12} {:>12} {:>12} {:>14}\n", "gpu", "transition", "remote",
                                "neighbors", "max dst", "max edges");
  for (int i = 0; i < plan.m; ++i)
    out += fmt::format("  {:>4} {:>12} {:>12} {:>12} {:>12} {:>14}\n", i, plan.trans_capacity[i],
                       plan.remote_capacity[i], plan.nbr_capacity[i], plan.max_dst[i], plan.max_edges[i]);
  return out;
}

}  // namespace

std::string format_plan_stats(const Plan& plan, const PlanParams& params) {
  const double rb = params.row_bytes;
  std::string out = fmt::format("plan: {} GPU(s) x {} batch(es), {} vertices; order: {}\n", plan.m, plan.n,
                                plan.num_vertices, order_description(plan, params));
  out += fmt::format("  {:<6} {:>14} {:>14} {:>9} {:>14}\n", "rows", "before", "after", "after/|V|", "after bytes");
  out += volume_row("V_ori", plan.volumes_before.v_ori, plan.volumes.v_ori, plan, rb);
  out += volume_row("V_p2p", plan.volumes_before.v_p2p, plan.volumes.v_p2p, plan, rb);
  out += volume_row("V_ru", plan.volumes_before.v_ru, plan.volumes.v_ru, plan, rb);
  const double before = plan.cost_before * rb, after = plan.cost_after * rb;
  out += fmt::format("  cost C (Eq. 4) at {} B/row: before {:.3f} ms, after {:.3f} ms ({:+.1f}%)\n", rb,
                     before * 1e3, after * 1e3, before > 0 ? (after / before - 1) * 100 : 0.0);
  out += fmt::format("  profile: T_hd {:.4g} B/s, T_dd {:.4g} B/s, T_ru {:.4g} B/s\n", params.profile.t_hd,
                     params.profile.t_dd, params.profile.t_ru);
  out += "  buffer rows per GPU:\n" + capacity_rows(plan);
  out += fmt::format("  preprocessing time: {:.3f} s\n", plan.seconds);
  return out;
}

std::string plan_stats_json(const Plan& plan, const PlanParams& params,
                            const std::vector<std::pair<std::string, double>>& extra) {
  const double rb = params.row_bytes;
  JsonWriter j;
  j.begin_object();
  j.field("m", plan.m).field("n", plan.n).field("num_vertices", plan.num_vertices);
  j.field("reorganized", plan.reorganized).field("reorganize_requested", params.reorganize_requested);
  j.field("row_bytes", rb);
  j.field("t_hd", params.profile.t_hd).field("t_dd", params.profile.t_dd).field("t_ru", params.profile.t_ru);
  auto volumes = [&](const PlanVolumes& v, const std::string& suffix) {
    j.field("V_ori" + suffix, v.v_ori).field("V_p2p" + suffix, v.v_p2p).field("V_ru" + suffix, v.v_ru);
    j.field("V_ori_bytes" + suffix, static_cast<double>(v.v_ori) * rb);
    j.field("V_p2p_bytes" + suffix, static_cast<double>(v.v_p2p) * rb);
    j.field("V_ru_bytes" + suffix, static_cast<double>(v.v_ru) * rb);
  };
  volumes(plan.volumes, "");
  volumes(plan.volumes_before, "_before");
  j.field("cost_before", plan.cost_before * rb).field("cost_after", plan.cost_after * rb);
  j.field("seconds", plan.seconds);
  auto array = [&](const char* key, const auto& v) {
    j.key(key).begin_array();
    for (auto x : v) j.value(static_cast<int64_t>(x));
    j.end_array();
  };
  array("trans_capacity", plan.trans_capacity);
  array("remote_capacity", plan.remote_capacity);
  array("nbr_capacity", plan.nbr_capacity);
  array("max_dst", plan.max_dst);
  array("max_edges", plan.max_edges);
  for (const auto& [key, value] : extra) j.field(key, value);
  j.end_object();
  return j.str() + "\n";
}

}  // namespace ht
