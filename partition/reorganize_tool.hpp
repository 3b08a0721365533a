#pragma once
// ht-reorganize's work: build a plan (graph + partition -> plan file, stats
// table on stdout, optional stats JSON), or check an existing plan.
#include <string>

#include "plan/plan_stats.hpp"

namespace ht {

struct ReorganizeToolOptions {
  std::string graph_path;
  std::string partition_path;
  std::string output_path;      // plan to write (build mode)
  std::string check_path;       // plan to check (check mode) when not empty
  std::string stats_json_path;  // empty: none
  std::string profile_path;     // empty: built-in throughputs
  bool reorganize = true;
  bool verify = true;           // input checksums + symbolic check of the new plan
  bool check = true;            // symbolic check of the new plan (--no-check: off, checksums kept)
  bool sync = true;             // --no-sync: rename the plan without waiting for the disk
  double row_bytes = 0;         // 0: 4 * F of the graph (4 if it has no features)
  CostProfile profile;          // --t-hd/--t-dd/--t-ru values
  bool t_hd_given = false, t_dd_given = false, t_ru_given = false;
};

void run_reorganize_tool(const ReorganizeToolOptions& opt);
void run_plan_check_tool(const ReorganizeToolOptions& opt);

}  // namespace ht
