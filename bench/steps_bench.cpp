// ht-bench-steps: ht-train's device-plan steps alone (build_device_plans for
// every device of a plan file, GCN's weights, the resident steps' blocks in
// fresh anonymous memory as the trainer takes them), and the plan file's
// derivation, repeated; per repetition the wall time and the process's
// system and user time and page faults (getrusage), so that a change to the
// steps' memory use can be told apart from other load on the machine by
// its faults and kernel time (issue 33).
//   ht-bench-steps PLAN.htplan [REPEAT] [COMM: full|p2p|baseline] [AREAS: one|early|kept]
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/kernel_counters.hpp"
#include "core/timer.hpp"
#include "engine/device_plan.hpp"
#include "plan/plan_file.hpp"

namespace {

struct Usage {
  double wall = 0, system = 0, user = 0;
  int64_t minor = 0;
};

template <typename Body>
Usage measure(Body body) {
  const ht::CpuSeconds a = ht::process_cpu_seconds();
  ht::Timer t;
  body();
  const double wall = t.seconds();
  const ht::CpuSeconds b = ht::process_cpu_seconds();
  return {wall, b.system - a.system, b.user - a.user, b.minor_faults - a.minor_faults};
}

void say(const char* what, int r, const Usage& u) {
  fmt::print("{} #{}: wall {:.3f} s, system {:.3f} s, user {:.3f} s, {} minor faults\n", what, r, u.wall, u.system,
             u.user, u.minor);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} PLAN.htplan [REPEAT] [full|p2p|baseline] [one|early|kept]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int repeat = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string comm = argc > 3 ? argv[3] : "full", layout = argc > 4 ? argv[4] : "kept";
  const ht::CommMode mode = comm == "baseline" ? ht::CommMode::baseline
                            : comm == "p2p"    ? ht::CommMode::p2p
                                               : ht::CommMode::full;
  const ht::RemoteAreas areas = layout == "one"     ? ht::RemoteAreas::one
                                : layout == "early" ? ht::RemoteAreas::early_pulls
                                                    : ht::RemoteAreas::kept_rows;
  ht::Plan plan;
  for (int r = 0; r < repeat; ++r) {
    ht::PhaseTimes times;
    const Usage u = measure([&] { plan = ht::read_plan(path, {}, nullptr, &times); });
    say("read_plan", r, u);
    for (const auto& [name, s] : times.phases()) fmt::print("  {} {:.3f} s\n", name, s);
  }
  std::vector<float> inv_sqrt_deg(static_cast<size_t>(plan.num_vertices));
  for (size_t v = 0; v < inv_sqrt_deg.size(); ++v) inv_sqrt_deg[v] = 1.0f / static_cast<float>(1 + v % 17);
  const ht::EdgeKeys keys{inv_sqrt_deg, {}};
  for (int r = 0; r < repeat; ++r) {
    std::deque<ht::HostBlock> blocks;
    std::vector<ht::DevicePlan> plans;
    const Usage u = measure([&] {
      plans = ht::build_device_plans(
          plan, 0, plan.m, mode, keys, false,
          [&](int, int64_t bytes) { return blocks.emplace_back(static_cast<size_t>(bytes)).data(); }, areas);
    });
    say("build_device_plans", r, u);
  }
  return 0;
}
