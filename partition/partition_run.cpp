#include "partition/partition_run.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "partition/assignment.hpp"
#include "partition/chunking.hpp"
#include "partition/method_choice.hpp"
#include "partition/metis_partition.hpp"
#include "partition/multilevel_partition.hpp"
#include "partition/partition_names.hpp"
#include "partition/renumbering.hpp"
#include "partition/vertex_cost.hpp"

namespace ht {
namespace {

// Runs `body` and records its time as phase `name`.
template <typename F>
void timed(PartitionRunInfo& info, const char* name, F&& body) {
  Timer t;
  body();
  info.phases.add(name, t.seconds());
  log::info("{}: {:.2f} s", name, t.seconds());
}

std::vector<int32_t> metis_assignment(const GraphView& g, const PartitionParams& params, PartitionRunInfo& info) {
  MetisGraph mg;
  std::vector<idx_t> vwgt;
  idx_t ncon = 1;
  timed(info, "symmetrize", [&] {
    mg = build_metis_graph(g);
    vwgt = metis_vertex_weights(g, params, ncon);
  });
  info.metis_adjacency = mg.adjacency_length();
  MetisResult r;
  timed(info, "metis", [&] { r = run_metis(mg, vwgt, ncon, params); });
  info.metis_ran = true;
  info.metis_seconds = r.seconds;
  info.metis_cpu_seconds = r.cpu_seconds;
  info.metis_peak_bytes = r.peak_bytes;
  info.metis_peak_exact = r.peak_is_exact;
  info.metis_objective = r.objective_value;
  info.process_peak_before_metis = r.process_peak_before;
  return std::move(r.part_of);
}

std::vector<int32_t> multilevel_assignment(const GraphView& g, const PartitionParams& params,
                                           PartitionRunInfo& info) {
  if (params.vertex_weights == VertexWeights::train)
    log::warn("--vertex-weights train: the multilevel partitioner balances one weight, the computation weight (as "
              "degree); training vertices are not balanced separately");
  std::vector<int32_t> part_of;
  // The partitions' run keeps its input level's clusters for the locality
  // chunking to reuse (4 B per vertex until the chunks are cut).
  info.clusters.keep = params.parts >= 2 && params.chunks >= 2 && params.chunk_clusters == ChunkClusters::reuse &&
                       resolve_chunking(params) == ChunkingMode::locality;
  timed(info, "multilevel", [&] { part_of = multilevel_partition(g, params, info.multilevel, &info.clusters); });
  info.multilevel_ran = true;
  info.process_peak_before_metis = info.multilevel.process_peak_before_metis;
  return part_of;
}

std::vector<int32_t> assignment(const GraphView& g, const PartitionParams& params, PartitionRunInfo& info) {
  const int m = params.parts;
  if (m == 1) return std::vector<int32_t>(g.num_vertices, 0);  // no partitioning to do
  if (params.method == PartitionMethod::metis || params.method == PartitionMethod::multilevel)
    return partition_blocks(g, params, info);
  std::vector<int32_t> part_of;
  timed(info, "assign", [&] {
    const std::vector<double> w = balance_weights(g, params);
    part_of = params.method == PartitionMethod::range ? range_assignment(w, m, params.chunks)
                                                      : random_assignment(w, m, params.chunks, params.seed);
  });
  return part_of;
}

}  // namespace

std::vector<int32_t> partition_blocks(const GraphView& g, const PartitionParams& q, PartitionRunInfo& info) {
  HT_CHECK(q.parts >= 2, "internal error: a partition into {} blocks", q.parts);
  if (q.method == PartitionMethod::metis) return metis_assignment(g, q, info);
  HT_CHECK(q.method == PartitionMethod::multilevel, "internal error: method {} is not a partitioner",
           name_of(q.method));
  return multilevel_assignment(g, q, info);
}

int64_t process_peak_bytes(const PartitionRunInfo& info) {
  return std::max(info.process_peak_before_metis, peak_rss_bytes());
}

void validate_partition_params(const PartitionParams& params, const GraphView& g) {
  if (params.parts < 1) throw option_error("--parts", fmt::format("must be at least 1 (got {})", params.parts));
  if (params.chunks < 1) throw option_error("--chunks", fmt::format("must be at least 1 (got {})", params.chunks));
  if (params.parts > g.num_vertices)
    throw option_error("--parts", fmt::format("{} partitions for a graph of {} vertices (every partition needs at "
                                              "least one vertex)",
                                              params.parts, g.num_vertices));
  const int64_t total = static_cast<int64_t>(params.parts) * params.chunks;
  if (total > g.num_vertices)
    throw option_error("--chunks", fmt::format("{} partitions x {} chunks = {} chunks, more than the graph's {} "
                                               "vertices (every chunk needs at least one vertex)",
                                               params.parts, params.chunks, total, g.num_vertices));
  if (params.imbalance < 1)
    throw option_error("--imbalance",
                       fmt::format("must be at least 1 (METIS ufactor in 1/1000; got {})", params.imbalance));
  if (!std::isfinite(params.chunk_vertex_weight) || params.chunk_vertex_weight < 0 || params.chunk_vertex_weight > 1e6)
    throw option_error("--chunk-vertex-weight", fmt::format("must be in [0, 1e6] (got {})", params.chunk_vertex_weight));
  // auto may pick METIS: its options are checked as for METIS. Locality
  // chunking may run METIS too (on each partition, balancing the
  // computation weight: --vertex-weights does not apply to it).
  const bool may_metis = params.method == PartitionMethod::metis || params.method == PartitionMethod::automatic;
  const bool metis_parts = may_metis && params.parts > 1;
  // --chunking locality partitions with --method's partitioner (auto's pick
  // for range and random); auto does so only for metis, multilevel and auto.
  const bool metis_chunks = params.chunks > 1 && (params.chunking == ChunkingMode::locality
                                                      ? params.method != PartitionMethod::multilevel
                                                      : params.chunking == ChunkingMode::automatic && may_metis);
  if ((metis_parts || metis_chunks) && params.algorithm == MetisAlgorithm::recursive &&
      params.objective == MetisObjective::vol)
    throw option_error("--objective", "'vol' is only available with k-way METIS (--algorithm kway)");
  if (metis_parts && params.vertex_weights == VertexWeights::train && g.split.empty())
    throw option_error("--vertex-weights", "'train' needs the graph's split section, and this graph has none");
}

Partition make_partition(const GraphView& g, const FileIdentity& graph_identity, const PartitionParams& params,
                         PartitionRunInfo& info) {
  validate_partition_params(params, g);
  Partition p;
  p.params = params;
  // With m = 1, auto picks the chunks' partitioner (when they are cut by
  // locality), with m >= 2 the partitions'.
  if (params.method == PartitionMethod::automatic) {
    const MethodChoice c = choose_partition_method(g, params, available_memory_bytes());
    p.params.method = c.method;
    info.method_reason = c.reason;
    log::info("--method auto: {} ({})", name_of(c.method), c.reason);
  }
  p.graph_identity = graph_identity;
  p.num_edges = g.num_edges;
  std::vector<int32_t> part_of = assignment(g, p.params, info);
  info.vertices_moved = ensure_min_part_size(part_of, params.parts, params.chunks);
  if (info.vertices_moved > 0)
    log::warn("{} vertices moved so that every partition holds at least {} vertices (one per chunk)",
              info.vertices_moved, params.chunks);
  timed(info, "renumber", [&] { layout_partitions(part_of, p); });
  make_chunks(g, p, params.method, info);
  return p;
}

}  // namespace ht
