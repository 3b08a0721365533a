// ht-reorganize: subgraph reorganization (paper Algorithm 4) and the
// deduplicated communication plan (SPEC §5); or --check of a plan.
// Argument parsing and wiring only; the work is in partition/.
#include "cli/cli.hpp"
#include "core/error.hpp"
#include "partition/reorganize_tool.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "Build the communication plan for training: reorder the partition's chunks into batches (Algorithm 4: "
      "chunks sharing neighbors run together, consecutive batches share transition vertices), then compute "
      "per batch and GPU the transition set, its in-place buffer slots, the P2P rows, the chunk topology "
      "over the merged buffer and the gradient flushes. Prints V_ori, V_p2p, V_ru and the cost C of Eq. 4 "
      "before/after reorganization. With --check PLAN, verifies an existing plan against the graph and "
      "partition instead (symbolic execution). Plan format and cost model: docs/PLAN.md.",
      "ht-reorganize"};
  ht::cli::CommonOptions common;
  ht::cli::setup_app(app, common);
  ht::ReorganizeToolOptions opt;
  app.add_option("-g,--graph", opt.graph_path, "Graph file (.htg) the partition was made from")->required();
  app.add_option("-p,--partition", opt.partition_path, "Partition file (.htp) from ht-partition")->required();
  app.add_option("-o,--output", opt.output_path, "Output plan file (.htplan), written atomically");
  app.add_option("--check", opt.check_path, "Check this plan file instead of building one");
  app.add_flag("--no-reorganize{false}", opt.reorganize, "Keep the partitioner's order (batch j = chunk j)");
  app.add_option("--row-bytes", opt.row_bytes,
                 "Bytes per vertex row for the reported costs; 0 = 4 x the graph's feature columns")
      ->check(ht::cli::in_range(0, 1ll << 40));
  app.add_option("--t-hd", opt.profile.t_hd, "Host->GPU throughput T_hd in bytes/s (overrides --profile)")
      ->check(ht::cli::in_range(1, 1e16));
  app.add_option("--t-dd", opt.profile.t_dd, "GPU<->GPU (P2P) throughput T_dd in bytes/s (overrides --profile)")
      ->check(ht::cli::in_range(1, 1e16));
  app.add_option("--t-ru", opt.profile.t_ru, "In-GPU reuse throughput T_ru in bytes/s (overrides --profile)")
      ->check(ht::cli::in_range(1, 1e16));
  app.add_option("--profile", opt.profile_path, "Machine profile: lines 't_hd = 55.6e9' (keys t_hd, t_dd, t_ru)")
      ->check(CLI::ExistingFile);
  app.add_option("--stats-json", opt.stats_json_path, "Also write the statistics as one JSON object to this file");
  app.add_flag("--no-verify{false}", opt.verify,
               "Skip the inputs' section checksums and the symbolic check of the new plan (huge inputs); the "
               "graph's features, which plans never read, are never read nor verified");
  app.add_flag("--no-check{false}", opt.check,
               "Skip only the symbolic check of the new plan (keep the checksums): the builder is tested against "
               "the same checker, which costs about a fifth of a run (docs/PLAN.md); ht-reorganize --check can "
               "check the plan file later");
  app.add_flag("!--no-sync", opt.sync,
               "Rename the plan file into place once it is in the page cache, without waiting for the disk (no "
               "fsync; the kernel writes it back while ht-train reads it). An interrupted run still leaves no file; "
               "a machine that stops before the write-back can leave an incomplete one");
  return ht::cli::run(app, common, argc, argv, [&] {
    opt.t_hd_given = app.count("--t-hd") > 0;
    opt.t_dd_given = app.count("--t-dd") > 0;
    opt.t_ru_given = app.count("--t-ru") > 0;
    if (!opt.check_path.empty()) {
      if (!opt.output_path.empty()) throw ht::option_error("--output", "not used with --check");
      if (!opt.check) throw ht::option_error("--no-check", "not used with --check (which checks a plan file)");
      if (!opt.sync) throw ht::option_error("--no-sync", "not used with --check (which writes no plan)");
      ht::run_plan_check_tool(opt);
    } else {
      if (opt.output_path.empty()) throw ht::option_error("--output", "required (or --check PLAN to check a plan)");
      ht::run_reorganize_tool(opt);
    }
  });
}
