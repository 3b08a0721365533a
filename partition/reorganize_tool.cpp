#include "partition/reorganize_tool.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "core/bulk_memory.hpp"
#include "core/container_verify.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/plan_builder.hpp"
#include "partition/plan_check.hpp"
#include "partition/plan_cost.hpp"
#include "plan/plan_file.hpp"

namespace ht {
namespace {

CostProfile effective_profile(const ReorganizeToolOptions& opt) {
  CostProfile prof = opt.profile_path.empty() ? CostProfile{} : read_cost_profile(opt.profile_path);
  auto take = [](double value, bool given, double& target, const char* option) {
    if (!given) return;
    if (!std::isfinite(value) || value <= 0) throw option_error(option, "must be a positive throughput in bytes/s");
    target = value;
  };
  take(opt.profile.t_hd, opt.t_hd_given, prof.t_hd, "--t-hd");
  take(opt.profile.t_dd, opt.t_dd_given, prof.t_dd, "--t-dd");
  take(opt.profile.t_ru, opt.t_ru_given, prof.t_ru, "--t-ru");
  return prof;
}

double effective_row_bytes(const ReorganizeToolOptions& opt, int32_t feature_dim) {
  if (opt.row_bytes < 0 || !std::isfinite(opt.row_bytes))
    throw option_error("--row-bytes", "must be positive (0 = 4 bytes per feature column)");
  if (opt.row_bytes > 0) return opt.row_bytes;
  return 4.0 * std::max<int32_t>(feature_dim, 1);
}

// The inputs, checked to belong together, and the graph's topology in new
// ids. The graph file itself is not kept: once renumbered it is not read
// again, and its mapping (every page touched by the checksums) would stay in
// the process's RSS until the end (issue 20: 26 GB beside a 23 GB plan).
struct Inputs {
  FileIdentity graph_identity;
  int32_t feature_dim = 0;
  Partition partition;
  FileIdentity partition_identity;
  Graph g_new;  // topology only: no features, labels or split (plans never read them)
  double read_seconds = 0, renumber_seconds = 0;
};

// Sections of a graph file that plans never read: their checksums are not
// verified either. The features are three quarters of a friendster-like
// file (33.6 of 44.7 GB): a checksum pass over them cost their read from
// disk when not cached, and faulted them into the process's RSS (55 GB in
// the read phase with the renumbered topology).
const std::array<std::string, 1> kUnreadGraphSections{"features"};

Inputs load_inputs(const ReorganizeToolOptions& opt) {
  Timer t;
  Inputs in;
  if (opt.verify) {
    // Its own map, released before the graph is opened: the pages it faulted
    // in leave the RSS with it (the file's pages stay in the page cache).
    const ContainerReader unverified(opt.graph_path, kGraphMagic, kGraphVersion, ReadOptions{false});
    verify_section_checksums(unverified, kUnreadGraphSections);
  }
  const GraphFile graph(opt.graph_path, ReadOptions{false});
  in.partition = read_partition(opt.partition_path, ReadOptions{opt.verify});
  in.partition_identity = read_identity(opt.partition_path);
  check_partition_matches(in.partition, graph);
  const GraphView& g = graph.view();
  log::info("graph {}: {} vertices, {} edges; partition {}: m = {}, n = {}", opt.graph_path, g.num_vertices,
            g.num_edges, opt.partition_path, in.partition.m(), in.partition.n());
  in.graph_identity = graph.identity();
  in.feature_dim = g.feature_dim;
  // renumber() permutes whatever the view carries: give it the topology only
  // (the features are most of a graph file).
  GraphView topology;
  topology.num_vertices = g.num_vertices;
  topology.num_edges = g.num_edges;
  topology.offsets = g.offsets;
  topology.sources = g.sources;
  topology.weights = g.weights;
  topology.flags = g.flags;
  in.read_seconds = t.seconds();
  Timer r;
  in.g_new = renumber(topology, in.partition);
  in.renumber_seconds = r.seconds();
  log::info("read and renumbered in {:.2f} s (read {:.2f} s, renumber {:.2f} s)", t.seconds(), in.read_seconds,
            in.renumber_seconds);
  return in;
}

void report_problems(const std::vector<std::string>& problems, const std::string& what) {
  for (const auto& s : problems) log::error("{}", s);
  throw Error(fmt::format("{}: plan check found problems (listed above)", what));
}

}  // namespace

void run_reorganize_tool(const ReorganizeToolOptions& opt) {
  Timer total;
  const std::array inputs{opt.graph_path, opt.partition_path};
  const std::array outputs{OutputPath{opt.output_path, "--output"}, OutputPath{opt.stats_json_path, "--stats-json"}};
  if (opt.output_path.empty()) check_output_path(opt.output_path, "--output");
  check_output_paths(outputs, inputs);
  PlanParams params;
  params.profile = effective_profile(opt);
  params.reorganize_requested = opt.reorganize;
  Inputs in = load_inputs(opt);
  params.row_bytes = effective_row_bytes(opt, in.feature_dim);

  PlanBuildTimes times;
  Plan plan = build_plan(in.g_new.view(), in.partition, {opt.reorganize, params.profile}, &times);
  plan.graph_identity = in.graph_identity;
  plan.partition_identity = in.partition_identity;
  log::info("plan built in {:.2f} s", plan.seconds);
  // The symbolic check reads the plan, the renumbered topology and the
  // partition; the writing (and write_plan's own derivation check) reads the
  // plan: they run side by side, and the file is renamed into place only when
  // the check found nothing (a plan that fails it leaves no file, as before).
  const bool checking = opt.verify && opt.check;
  double check_seconds = 0;
  const double read_seconds = in.read_seconds, renumber_seconds = in.renumber_seconds;
  auto check = [&] {
    Timer t;
    const auto problems = check_plan(plan, in.g_new.view(), in.partition);
    if (!problems.empty()) report_problems(problems, "internal error: the new plan");
    check_seconds = t.seconds();
    log::info("plan checked in {:.2f} s (--no-check skips)", check_seconds);
    // Nothing else needs them: released while the writing goes on.
    in = Inputs{};
  };
  if (!checking) {
    log::info("plan not checked ({})", opt.verify ? "--no-check" : "--no-verify");
    // Writing needs the plan only: the renumbered graph and the partition go first.
    in = Inputs{};
  }
  PlanWriteTimes write_times;
  write_plan(opt.output_path, plan, params, checking ? std::function<void()>(check) : std::function<void()>(),
             &write_times, opt.sync);
  // The writing's own time: its parts (derivation check, sections) and the commit.
  const double write_seconds = write_times.writing();
  const double check_write_seconds = write_times.total;
  log::info("wrote {} in {:.2f} s (derivation check {:.2f} s, sections {:.2f} s, commit {:.2f} s){}",
            opt.output_path, write_seconds, write_times.derivation, write_times.sections, write_times.commit,
            checking ? fmt::format("; check and write side by side {:.2f} s", check_write_seconds) : "");
  log::info("phases: read {:.2f} s, renumber {:.2f} s, build {:.2f} s (topology {:.2f}, reorganize {:.2f}, assemble "
            "{:.2f}), check {:.2f} s, write {:.2f} s, check and write side by side {:.2f} s; total {:.2f} s",
            read_seconds, renumber_seconds, plan.seconds, times.topology, times.reorganize, times.assemble,
            check_seconds, write_seconds, check_write_seconds, total.seconds());
  fmt::print("{}", format_plan_stats(plan, params));
  std::fflush(stdout);
  if (!opt.stats_json_path.empty())
    write_text_file_atomic(opt.stats_json_path,
                           plan_stats_json(plan, params,
                                           {{"read_seconds", read_seconds},
                                            {"renumber_seconds", renumber_seconds},
                                            {"topology_seconds", times.topology},
                                            {"reorganize_seconds", times.reorganize},
                                            {"assemble_seconds", times.assemble},
                                            {"check_seconds", check_seconds},
                                            {"write_seconds", write_seconds},
                                            {"check_write_seconds", check_write_seconds}}));
  // The plan's lists (37 GiB on a friendster-like graph) freed step by step
  // by all threads, not by one in the destructor after the last line.
  Timer release;
  parallel_tasks(static_cast<int64_t>(plan.steps.size()), [&](int64_t s) { plan.steps[s] = ChunkPlan{}; });
  log::debug("plan released in {:.2f} s", release.seconds());
}

void run_plan_check_tool(const ReorganizeToolOptions& opt) {
  PlanParams params;
  const Plan plan = read_plan(opt.check_path, ReadOptions{opt.verify}, &params);
  // Refuse a plan for other files before reading them in full.
  check_plan_matches(plan, read_identity(opt.graph_path), read_identity(opt.partition_path));
  const Inputs in = load_inputs(opt);
  Timer t;
  const auto problems = check_plan(plan, in.g_new.view(), in.partition);
  if (!problems.empty()) report_problems(problems, opt.check_path);
  fmt::print("{}", format_plan_stats(plan, params));
  fmt::print("plan {} is correct for this graph and partition (checked in {:.2f} s)\n", opt.check_path, t.seconds());
  std::fflush(stdout);
}

}  // namespace ht
