#pragma once
// Statistics of a plan: the machine profile and cost of Eq. 4 (paper §5.3),
// the parameters a plan was made with, and their readable table / JSON
// forms (docs/PLAN.md lists the keys). Shared by ht-reorganize and ht-train.
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.hpp"

namespace ht {

// Throughputs of the three ways a row reaches a GPU, in bytes/s. Defaults are
// the figures measured on the lent 4xH200 machine (SPEC §9): host->GPU 55.6
// GB/s per GPU (pinned H2D), GPU<->GPU 374 GB/s (P2P gather of 128-float
// rows over NVLink), and 3.0 TB/s for a row reused in place (in-GPU copy at
// roughly the H200's HBM bandwidth; it only needs to be much larger than the
// other two, paper §5.3 "Effectiveness with various interconnects").
struct CostProfile {
  double t_hd = 55.6e9;
  double t_dd = 374e9;
  double t_ru = 3.0e12;
};

// Eq. 4: C = V_ru/T_hd + (V_ori - V_p2p)/T_dd + (V_p2p - V_ru)/T_ru, volumes
// in rows times `row_bytes`; seconds per layer pass.
double comm_cost(const PlanVolumes& v, const CostProfile& profile, double row_bytes);

// What a plan was made with; recorded in the plan file beside the Plan.
struct PlanParams {
  CostProfile profile;
  double row_bytes = 4;          // row width the reported seconds use
  bool reorganize_requested = true;  // false: --no-reorganize
};

// Readable multi-line table (volumes in rows and bytes, costs, capacities).
std::string format_plan_stats(const Plan& plan, const PlanParams& params);
// One JSON object (keys in docs/PLAN.md); `extra` adds (key, number) fields.
std::string plan_stats_json(const Plan& plan, const PlanParams& params,
                            const std::vector<std::pair<std::string, double>>& extra = {});

}  // namespace ht
