#include "partition/partition_tool.hpp"

#include <cstdio>
#include <array>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "core/version.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_names.hpp"
#include "partition/partition_run.hpp"
#include "partition/partition_stats.hpp"

namespace ht {
namespace {

std::string describe(const PartitionParams& q) {
  const std::string chunking = q.chunks > 1 ? fmt::format(", chunking {}", name_of(q.chunking)) : std::string();
  if (q.parts == 1 && (q.chunks == 1 || q.chunking == ChunkingMode::balanced))
    return fmt::format("m = 1 (no partitioning), n = {}{}", q.chunks, chunking);
  std::string how = name_of(q.method);
  if (q.method == PartitionMethod::metis || q.method == PartitionMethod::automatic ||
      q.method == PartitionMethod::multilevel)
    how += fmt::format(" {} objective {} ufactor {} vertex-weights {}", name_of(q.algorithm), name_of(q.objective),
                       q.imbalance, name_of(q.vertex_weights));
  return fmt::format("m = {}, n = {}, {}, seed {}{}", q.parts, q.chunks, how, q.seed, chunking);
}

void chunking_json(JsonWriter& w, const ChunkingInfo& c) {
  w.begin_object();
  w.field("requested", name_of(c.requested)).field("ran", name_of(c.ran));
  w.field("partition_seconds", c.partition_seconds).field("count_seconds", c.count_seconds);
  w.key("parts").begin_array();
  for (size_t i = 0; i < c.parts.size(); ++i) {
    const PartChunking& pc = c.parts[i];
    w.begin_object().field("part", static_cast<int64_t>(i)).field("chunking", pc.locality ? "locality" : "balanced");
    w.key("method");
    pc.partitioned ? w.value(name_of(pc.method)) : w.null();
    w.key("method_reason");
    pc.method_reason.empty() ? w.null() : w.value(pc.method_reason);
    w.key("neighbor_rows_balanced");
    pc.rows_balanced >= 0 ? w.value(pc.rows_balanced) : w.null();
    w.key("neighbor_rows_locality");
    pc.rows_locality >= 0 ? w.value(pc.rows_locality) : w.null();
    w.field("vertices_moved", pc.vertices_moved).field("reused_clusters", pc.reused_clusters);
    w.key("note");
    pc.note.empty() ? w.null() : w.value(pc.note);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void multilevel_json(JsonWriter& w, const MultilevelInfo& m) {
  w.begin_object();
  w.field("levels", m.levels).field("input_entries", m.input_entries).field("transposed", m.transposed);
  w.field("coarsest_vertices", m.coarsest_vertices).field("coarsest_entries", m.coarsest_entries);
  w.field("coarsen_seconds", m.coarsen_seconds).field("initial_seconds", m.initial_seconds);
  w.field("refine_seconds", m.refine_seconds).field("coarsest_metis_objective", m.metis_objective);
  w.field("refinement_moves", m.refinement_moves).field("rebalance_moves", m.rebalance_moves);
  w.field("max_block_weight", m.max_block_weight);
  w.end_object();
}

// `q`: the parameters the partition was made with (auto resolved).
std::string stats_json(const PartitionToolOptions& opt, const PartitionParams& q, const PartitionStats& s,
                       const PartitionRunInfo& info, double seconds) {
  JsonWriter w;
  w.begin_object();
  w.field("tool", "ht-partition").field("version", version_string());
  w.field("graph", opt.graph_path).field("output", opt.output_path);
  w.key("params").begin_object();
  w.field("parts", q.parts).field("chunks", q.chunks).field("method", name_of(q.method));
  w.field("method_requested", name_of(opt.params.method));
  w.field("algorithm", name_of(q.algorithm)).field("objective", name_of(q.objective));
  w.field("seed", q.seed).field("ufactor", q.imbalance).field("vertex_weights", name_of(q.vertex_weights));
  w.field("chunk_vertex_weight", q.chunk_vertex_weight);
  w.field("chunking", name_of(q.chunking)).field("chunking_requested", name_of(opt.params.chunking));
  w.end_object();
  write_partition_stats_json(w, s);
  w.field("seconds", seconds);
  w.key("phases").begin_object();
  for (const auto& [name, sec] : info.phases.phases()) w.field(name, sec);
  w.end_object();
  w.key("metis_seconds");
  info.metis_ran ? w.value(info.metis_seconds) : w.null();
  w.key("metis_cpu_seconds");
  info.metis_ran ? w.value(info.metis_cpu_seconds) : w.null();
  w.key("metis_peak_bytes");
  info.metis_ran ? w.value(info.metis_peak_bytes) : w.null();
  w.key("metis_objective");
  info.metis_ran ? w.value(info.metis_objective) : w.null();
  w.field("metis_peak_exact", info.metis_peak_exact);
  w.key("method_reason");
  info.method_reason.empty() ? w.null() : w.value(info.method_reason);
  w.key("multilevel");
  if (info.multilevel_ran)
    multilevel_json(w, info.multilevel);
  else
    w.null();
  w.field("vertices_moved", info.vertices_moved);
  w.key("chunking");
  chunking_json(w, info.chunking);
  w.field("peak_rss_bytes", process_peak_bytes(info));
  w.end_object();
  return w.str() + "\n";
}

}  // namespace

void run_partition_tool(const PartitionToolOptions& opt) {
  Timer total;
  const std::array inputs{opt.graph_path};
  const std::array outputs{OutputPath{opt.output_path, "--output"}, OutputPath{opt.stats_json_path, "--stats-json"}};
  if (opt.output_path.empty()) check_output_path(opt.output_path, "--output");
  check_output_paths(outputs, inputs);
  PartitionRunInfo info;
  Timer t;
  const GraphFile graph(opt.graph_path, ReadOptions{opt.verify});
  const GraphView& g = graph.view();
  info.phases.add("read", t.seconds());
  log::info("graph {}: {} vertices, {} edges; {}", opt.graph_path, g.num_vertices, g.num_edges, describe(opt.params));
  validate_partition_params(opt.params, g);

  Partition p = make_partition(g, graph.identity(), opt.params, info);
  if (opt.choose_chunks) {
    t.reset();
    p = opt.choose_chunks(g, std::move(p), info);
    info.phases.add("chunk choice", t.seconds());
  }
  t.reset();
  const PartitionStats s = compute_partition_stats(g, p);
  info.phases.add("stats", t.seconds());
  t.reset();
  write_partition(opt.output_path, p);
  info.phases.add("write", t.seconds());

  fmt::print("{}", format_partition_stats(s, p.n()));
  std::fflush(stdout);
  std::string phases;
  for (const auto& [name, sec] : info.phases.phases()) phases += fmt::format("{}{} {:.2f} s", phases.empty() ? "" : ", ", name, sec);
  log::info("phases: {}; total {:.2f} s", phases, total.seconds());
  if (info.metis_ran)
    log::info("METIS: {:.2f} s ({:.2f} s CPU), {} peak memory{}, objective {} on {} adjacency entries",
              info.metis_seconds, info.metis_cpu_seconds,
              format_bytes(static_cast<double>(info.metis_peak_bytes)),
              info.metis_peak_exact ? "" : " (upper bound: high-water mark could not be reset)",
              info.metis_objective, info.metis_adjacency);
  log::info("peak memory (process): {}", format_bytes(static_cast<double>(process_peak_bytes(info))));
  if (!opt.stats_json_path.empty())
    write_text_file_atomic(opt.stats_json_path, stats_json(opt, p.params, s, info, total.seconds()));
  log::info("wrote {}", opt.output_path);
}

}  // namespace ht
