#include "partition/chunking.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/thread_teams.hpp"
#include "core/timer.hpp"
#include "partition/assignment.hpp"
#include "partition/balanced_split.hpp"
#include "partition/method_choice.hpp"
#include "partition/partition_names.hpp"
#include "partition/partition_run.hpp"
#include "partition/vertex_bits.hpp"
#include "partition/vertex_cost.hpp"

namespace ht {
namespace {

// Σ_j |N_j| for the ranges [cut[j], cut[j+1]) of `olds`: each range's
// vertices spread over the threads, each distinct neighbor counted by the
// thread that inserted it into the shared set (exact, the same for any thread
// count; every core works on every range, however few ranges there are: n = 4
// used 4 of 16 cores), the set cleared after each range.
int64_t count_rows(const GraphView& g, std::span<const vid_t> olds, std::span<const int64_t> cut, VertexBits& seen) {
  const int64_t pieces = static_cast<int64_t>(cut.size()) - 1;
  int64_t total = 0;
  for (int64_t j = 0; j < pieces; ++j) {
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : total)
    for (int64_t k = cut[j]; k < cut[j + 1]; ++k)
      for (vid_t u : g.in_neighbors(olds[k])) total += seen.insert_shared(u) ? 1 : 0;
    seen.clear_all();
  }
  return total;
}

// The in-edges of partition i ([b, e) in new ids) in local ids l = new - b,
// as a graph of its own: an in-edge whose source lies in another partition
// becomes a self-loop of its destination. Partitioners skip self-loops, so
// the cut is that of the induced subgraph, while each vertex keeps its whole
// in-degree and so weighs its whole computation weight (in-edges + C).
//
// The sources live in pages faulted in by all threads, without the serial
// zero-fill a vector adds (friendster-like: 2.5 GB per partition, four
// partitions at a time).
struct InducedSubgraph {
  std::vector<int64_t> offsets;
  HostBlock source_storage;
  GraphView view;
};

InducedSubgraph induced_subgraph(const GraphView& g, const Partition& p, int64_t b, int64_t e) {
  const int64_t s = e - b;
  std::vector<int64_t> offsets;
  resize_for_overwrite(offsets, static_cast<size_t>(s) + 1);
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < s; ++l) offsets[l + 1] = g.in_degree(p.new_to_old[b + l]);
  parallel_inclusive_scan(offsets);
  const int64_t edges = offsets[s];
  InducedSubgraph sub{std::move(offsets), HostBlock(static_cast<size_t>(edges) * sizeof(vid_t)), {}};
  prefault_pages(sub.source_storage.data(), sub.source_storage.size());
  auto* sources = reinterpret_cast<vid_t*>(sub.source_storage.data());
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t l = 0; l < s; ++l) {
    int64_t at = sub.offsets[l];
    for (vid_t u : g.in_neighbors(p.new_to_old[b + l])) {
      const int64_t nu = p.old_to_new[u];
      sources[at++] = static_cast<vid_t>(nu >= b && nu < e ? nu - b : l);
    }
  }
  GraphView& v = sub.view;
  v.num_vertices = s;
  v.num_edges = edges;
  v.offsets = sub.offsets;
  v.sources = std::span<const vid_t>(sources, static_cast<size_t>(edges));
  // Symmetric input stays symmetric: inner edges keep both directions and a
  // self-loop is its own reverse. Rows are not sorted any more (the self-
  // loops sit where the outer sources were).
  v.flags.symmetric = g.flags.symmetric;
  v.flags.has_self_loops = true;
  return sub;
}

// The partitions' input-level clusters (`kept`, by old id: coarse vertex
// ids) restricted to partition i ([b, e) in new ids), as labels in local ids:
// each vertex gets the smallest local id of its cluster's members in the
// partition (a cluster split between partitions becomes one cluster per
// partition). `first` (one entry per coarse vertex, all ~0) is the scratch
// array for the smallest member, left all ~0 again. An atomic minimum: the
// same labels for any thread count.
std::vector<vid_t> restricted_clusters(const std::vector<vid_t>& kept, const Partition& p, int64_t b, int64_t e,
                                       std::vector<vid_t>& first) {
  const int64_t s = e - b;
  std::vector<vid_t> label;
  resize_for_overwrite(label, static_cast<size_t>(s));
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < s; ++l) {
    const vid_t c = kept[p.new_to_old[b + l]];
    std::atomic_ref<vid_t> f(first[c]);
    const vid_t mine = static_cast<vid_t>(l);
    vid_t cur = f.load(std::memory_order_relaxed);
    while (mine < cur && !f.compare_exchange_weak(cur, mine, std::memory_order_relaxed)) {
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < s; ++l) label[l] = first[kept[p.new_to_old[b + l]]];
#pragma omp parallel for schedule(static)
  for (int64_t l = 0; l < s; ++l) first[kept[p.new_to_old[b + l]]] = ~vid_t{0};
  return label;
}

// The vertices of a partition in block order: the new layout of its chunks.
struct Blocks {
  std::vector<int64_t> offsets;  // n + 1: block j is olds[offsets[j] .. offsets[j+1])
  std::vector<vid_t> olds;       // old ids, block by block, in old relative order inside a block
};

// `of`: block (0..n-1) of each local id l (new id b + l).
Blocks order_by_block(const Partition& p, int64_t b, const std::vector<int32_t>& of, int n) {
  const int64_t s = static_cast<int64_t>(of.size());
  // A stable counting sort in fixed ranges of local ids, in parallel.
  constexpr int64_t kRange = int64_t{1} << 16;
  const int64_t ranges = (s + kRange - 1) / kRange;
  std::vector<int64_t> at(static_cast<size_t>(ranges * n), 0);  // at[r * n + j]
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < ranges; ++q)
    for (int64_t l = q * kRange; l < std::min(s, (q + 1) * kRange); ++l) ++at[q * n + of[l]];
  Blocks r;
  r.offsets.assign(static_cast<size_t>(n) + 1, 0);
  int64_t sum = 0;
  for (int j = 0; j < n; ++j) {
    r.offsets[j] = sum;
    for (int64_t q = 0; q < ranges; ++q) {
      const int64_t k = at[q * n + j];
      at[q * n + j] = sum;
      sum += k;
    }
  }
  r.offsets[n] = sum;
  resize_for_overwrite(r.olds, static_cast<size_t>(s));
  // Stable in the local id, hence in the old relative order: vertices of a
  // block keep whatever locality the input order had.
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < ranges; ++q) {
    int64_t* next = at.data() + q * n;
    for (int64_t l = q * kRange; l < std::min(s, (q + 1) * kRange); ++l) r.olds[next[of[l]]++] = p.new_to_old[b + l];
  }
  return r;
}

// The partitioner's parameters for cutting a partition into n blocks: the
// computation weight (chunks balance it, whatever --vertex-weights
// balances between partitions), the METIS options and the seed as given.
PartitionParams block_params(const PartitionParams& params, PartitionMethod method) {
  PartitionParams q = params;
  q.parts = params.chunks;
  q.chunks = 1;
  q.method = method;
  q.vertex_weights = VertexWeights::degree;
  return q;
}

// The partitioner for a partition whose induced subgraph is `sub`.
PartitionMethod block_method(const GraphView& sub, const PartitionParams& q, PartitionMethod requested,
                             std::string& reason) {
  if (requested == PartitionMethod::metis || requested == PartitionMethod::multilevel) return requested;
  const MethodChoice c = choose_partition_method(sub, q, available_memory_bytes());
  reason = c.reason;
  return c.method;
}

// Runs partition i's partitioner (info.parts[i].method, m >= 2) on its
// induced subgraph: the block of each local id. Multilevel runs start from
// the partitions' clusters when the partitions' run kept them (`given`).
std::vector<int32_t> cut_part(const GraphView& g, const Partition& p, int i, PartChunking& pc,
                              std::vector<vid_t>&& given, PartitionRunInfo& sub_run) {
  Timer t;
  const InducedSubgraph sub = induced_subgraph(g, p, p.part_offsets[i], p.part_offsets[i + 1]);
  log::info("chunking: partition {}: induced subgraph of {} vertices, {} in-edges: {:.2f} s", i, sub.view.num_vertices,
            sub.view.num_edges, t.seconds());
  PartitionParams q = block_params(p.params, pc.method);
  if (!given.empty()) {
    sub_run.clusters.given = std::move(given);
    pc.reused_clusters = true;
  }
  return partition_blocks(sub.view, q, sub_run);
}

// The partitioners of the partitions in `todo` (m >= 2). Multilevel runs,
// which give the same blocks for any thread count, run side by side, the
// threads split between them (small coarse levels use many cores poorly),
// while their subgraphs fit half the available memory together; METIS runs
// (single-threaded, with process-wide memory accounting) one after another.
void run_part_partitioners(const GraphView& g, const Partition& p, const std::vector<int>& todo,
                           const std::vector<int64_t>& entries, PartitionRunInfo& run,
                           std::vector<std::vector<int32_t>>& blocks_of) {
  ChunkingInfo& info = run.chunking;
  // The partitions' clusters restricted to each multilevel partition, made
  // one partition after another (they share the scratch array).
  std::vector<std::vector<vid_t>> given(static_cast<size_t>(p.m()));
  if (!run.clusters.kept.empty()) {
    std::vector<vid_t> first_member;
    resize_for_overwrite(first_member, run.clusters.kept.size());
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < static_cast<int64_t>(first_member.size()); ++c) first_member[c] = ~vid_t{0};
    for (int i : todo)
      if (info.parts[i].method == PartitionMethod::multilevel)
        given[i] = restricted_clusters(run.clusters.kept, p, p.part_offsets[i], p.part_offsets[i + 1], first_member);
  }
  std::vector<int> side_by_side, one_by_one;
  int64_t bytes = 0;
  for (int i : todo) {
    const int64_t s = p.part_offsets[i + 1] - p.part_offsets[i];
    if (info.parts[i].method == PartitionMethod::multilevel) {
      side_by_side.push_back(i);
      // The subgraph (8 B per vertex, 4 B per entry) and about as much again
      // for the run's own arrays and its first coarse level.
      bytes += 2 * (8 * s + 4 * entries[i]);
    } else {
      one_by_one.push_back(i);
    }
  }
  const int threads = omp_get_max_threads();
  const int tasks = static_cast<int>(side_by_side.size());
  if (tasks < 2 || threads < 2 || bytes > available_memory_bytes() / 2) {
    one_by_one.insert(one_by_one.end(), side_by_side.begin(), side_by_side.end());
    std::sort(one_by_one.begin(), one_by_one.end());
    side_by_side.clear();
  }
  if (!side_by_side.empty()) {
    const int teams = std::min(threads, tasks);
    log::info("chunking: {} multilevel partitioner runs, {} at a time with {}{} threads each", tasks, teams,
              threads / teams, threads % teams != 0 ? " or " + std::to_string(threads / teams + 1) : "");
    std::vector<PartitionRunInfo> sub_runs(static_cast<size_t>(tasks));
    // Each run's blocks are the same for any thread count (tested), so
    // which team runs it, with how many threads, changes nothing. The teams
    // are std::threads (run_in_teams): nested OpenMP teams started fresh
    // threads for every region of a run (1495 thread starts for four runs
    // at 8 threads against 19).
    run_in_teams(tasks, teams, threads, [&](int64_t t) {
      const int i = side_by_side[static_cast<size_t>(t)];
      blocks_of[i] = cut_part(g, p, i, info.parts[i], std::move(given[i]), sub_runs[static_cast<size_t>(t)]);
    });
    for (const PartitionRunInfo& sub_run : sub_runs)
      run.process_peak_before_metis = std::max(run.process_peak_before_metis, sub_run.process_peak_before_metis);
  }
  for (int i : one_by_one) {
    PartitionRunInfo sub_run;
    blocks_of[i] = cut_part(g, p, i, info.parts[i], std::move(given[i]), sub_run);
    // METIS resets the process's high-water mark: keep the peak before it.
    run.process_peak_before_metis = std::max(run.process_peak_before_metis, sub_run.process_peak_before_metis);
  }
}

}  // namespace

ChunkingMode resolve_chunking(const PartitionParams& params) {
  if (params.chunking != ChunkingMode::automatic) return params.chunking;
  const bool partitioner = params.method == PartitionMethod::metis || params.method == PartitionMethod::multilevel;
  return partitioner ? ChunkingMode::locality : ChunkingMode::balanced;
}

int64_t neighbor_rows(const GraphView& g, const std::vector<vid_t>& olds, const std::vector<int64_t>& cut) {
  VertexBits seen(g.num_vertices);
  return count_rows(g, olds, cut, seen);
}

void make_chunks(const GraphView& g, Partition& p, PartitionMethod requested_method, PartitionRunInfo& run) {
  const int m = p.m(), n = p.n();
  ChunkingInfo& info = run.chunking;
  info.requested = p.params.chunking;
  const ChunkingMode mode = resolve_chunking(p.params);
  p.params.chunking = ChunkingMode::balanced;
  p.chunk_offsets.assign(static_cast<size_t>(m) * n + 1, 0);
  p.chunk_offsets.back() = p.num_vertices;
  const bool compare = info.requested == ChunkingMode::automatic;
  std::optional<VertexBits> row_bits;
  if (mode == ChunkingMode::locality && n > 1) {
    info.parts.resize(m);
    if (compare) row_bits.emplace(g.num_vertices);
  }
  Timer chunk_time;
  double partition_seconds = 0, count_seconds = 0;

  // 1. Every partition's balanced ranges (the answer for balanced chunking,
  // the reference that locality must beat for auto), and which partitions a
  // partitioner cuts, with which partitioner.
  std::vector<std::vector<int64_t>> cuts(static_cast<size_t>(m));
  std::vector<int> todo;  // partitions to cut by a partitioner, in order
  std::vector<int64_t> entries(static_cast<size_t>(m), 0);  // in-edges of each partition
  std::vector<double> w;
  for (int i = 0; i < m; ++i) {
    const int64_t b = p.part_offsets[i], e = p.part_offsets[i + 1], s = e - b;
    HT_CHECK(s >= n, "partition {} has {} vertices, fewer than the {} chunks asked for", i, s, n);
    int64_t* const out = p.chunk_offsets.data() + static_cast<size_t>(i) * n;
    if (n == 1) {  // one chunk: the partition (no weights to balance: 0.1 s of a small graph's setup)
      cuts[i] = {0, s};
      out[0] = b;
      continue;
    }
    w.resize(s);
#pragma omp parallel for schedule(static, 4096)
    for (int64_t v = b; v < e; ++v) w[v - b] = computation_weight(g, p.new_to_old[v], p.params.chunk_vertex_weight);
    cuts[i] = balanced_split(w, n, 1);
    for (int j = 0; j < n; ++j) out[j] = b + cuts[i][j];
    if (mode != ChunkingMode::locality || n == 1) continue;
    PartChunking& pc = info.parts[i];
    if (s < kLocalityMinVerticesPerChunk * n) {
      pc.note = fmt::format("{} vertices for {} chunks: fewer than {} per chunk", s, n, kLocalityMinVerticesPerChunk);
      log::info("chunking: partition {} keeps balanced ranges ({})", i, pc.note);
      continue;
    }
    todo.push_back(i);
    if (m >= 2) {
      // The partitioner for the induced subgraph, from its shape (what
      // method_choice reads: vertices, entries, symmetry), before building it.
      int64_t in_edges = 0;
#pragma omp parallel for schedule(static, 4096) reduction(+ : in_edges)
      for (int64_t v = b; v < e; ++v) in_edges += g.in_degree(p.new_to_old[v]);
      entries[i] = in_edges;
      GraphView shape;
      shape.num_vertices = s;
      shape.num_edges = in_edges;
      shape.flags.symmetric = g.flags.symmetric;
      shape.flags.has_self_loops = true;
      pc.method = block_method(shape, block_params(p.params, p.params.method), requested_method, pc.method_reason);
    }
  }

  // 2. The partitioners. With m = 1 on the graph itself (local id = new id =
  // old id: one partition keeps the old order), recorded like an
  // assignment; with m >= 2 on each partition's induced subgraph.
  std::vector<std::vector<int32_t>> blocks_of(static_cast<size_t>(m));
  Timer partition_time;
  if (m == 1 && !todo.empty()) {
    const int64_t s = p.num_vertices;
    PartChunking& pc = info.parts[0];
    // make_partition's --method auto has picked this partitioner already
    // (for the chunks: method_choice.hpp); a partition re-chunked later
    // (--chunks auto: n was 1 then, and auto said "nothing to partition")
    // picks it here, and records it: with m = 1 the file's method is the
    // chunks' partitioner. Range and random keep their name.
    PartitionParams q = block_params(p.params, p.params.method);
    if (requested_method == PartitionMethod::automatic && !run.method_reason.empty()) {
      pc.method = p.params.method;
      pc.method_reason = run.method_reason;
    } else {
      pc.method = block_method(g, q, requested_method, pc.method_reason);
      if (requested_method == PartitionMethod::automatic) p.params.method = pc.method;
    }
    q.method = pc.method;
    const std::vector<int32_t> by_old = partition_blocks(g, q, run);
    std::vector<int32_t>& of = blocks_of[0];
    of.resize(static_cast<size_t>(s));
#pragma omp parallel for schedule(static)
    for (int64_t l = 0; l < s; ++l) of[l] = by_old[p.new_to_old[l]];
  } else if (!todo.empty()) {
    run_part_partitioners(g, p, todo, entries, run, blocks_of);
  }
  partition_seconds = todo.empty() ? 0.0 : partition_time.seconds();

  // 3. In partition order: blocks into chunks, kept where they read fewer
  // neighbor rows (auto), the partition renumbered into its blocks.
  for (int i : todo) {
    const int64_t b = p.part_offsets[i], e = p.part_offsets[i + 1], s = e - b;
    int64_t* const out = p.chunk_offsets.data() + static_cast<size_t>(i) * n;
    PartChunking& pc = info.parts[i];
    std::vector<int32_t>& of = blocks_of[i];
    pc.partitioned = true;
    pc.vertices_moved = ensure_min_part_size(of, n, 1);
    if (pc.vertices_moved > 0)
      log::warn("chunking: partition {}: {} vertices moved into blocks the partitioner left empty", i,
                pc.vertices_moved);
    const Blocks blocks = order_by_block(p, b, of, n);
    std::vector<int32_t>().swap(of);
    bool take = true;
    if (compare) {
      Timer count_time;
      pc.rows_balanced = count_rows(g, std::span<const vid_t>(p.new_to_old).subspan(b, s), cuts[i], *row_bits);
      pc.rows_locality = count_rows(g, blocks.olds, blocks.offsets, *row_bits);
      count_seconds += count_time.seconds();
      // Ties keep the ranges: they balance within one vertex's weight.
      take = pc.rows_locality < pc.rows_balanced;
    }
    // The reason is logged here unless the --method auto line said it.
    const bool say_reason = !pc.method_reason.empty() && pc.method_reason != run.method_reason;
    log::info("chunking: partition {}: {} ({} into {} blocks{}{}{})", i, take ? "locality" : "balanced ranges",
              name_of(pc.method), n, pc.reused_clusters ? ", from the partitions' clusters" : "",
              say_reason ? ": " + pc.method_reason : std::string(),
              compare ? fmt::format("; neighbor rows {} as blocks, {} as ranges", pc.rows_locality, pc.rows_balanced)
                      : std::string());
    if (!take) continue;
    pc.locality = true;
    p.params.chunking = ChunkingMode::locality;
    parallel_copy(p.new_to_old.data() + b, blocks.olds.data(), blocks.olds.size() * sizeof(vid_t));
#pragma omp parallel for schedule(static)
    for (int64_t v = b; v < e; ++v) p.old_to_new[p.new_to_old[v]] = static_cast<vid_t>(v);
    for (int j = 0; j < n; ++j) out[j] = b + blocks.offsets[j];
  }
  run.clusters = MultilevelClusters{};  // no longer needed
  info.ran = p.params.chunking;
  info.partition_seconds = partition_seconds;
  info.count_seconds = count_seconds;
  // With m = 1 the partitioner's own phases are recorded already (as an
  // assignment's); with m >= 2 its runs (and the subgraphs) are one phase.
  if (m >= 2 && partition_seconds > 0) {
    run.phases.add("chunk_partition", partition_seconds);
    log::info("chunk_partition: {:.2f} s", partition_seconds);
  }
  const double rest = std::max(0.0, chunk_time.seconds() - partition_seconds);
  run.phases.add("chunk", rest);
  log::info("chunk: {:.2f} s", rest);
  if (!info.parts.empty()) {
    int locality = 0;
    int64_t rows_balanced = 0, rows_locality = 0;
    bool counted = compare;
    for (const PartChunking& pc : info.parts) {
      locality += pc.locality ? 1 : 0;
      counted = counted && pc.rows_balanced >= 0;
      rows_balanced += pc.rows_balanced;
      rows_locality += pc.locality ? pc.rows_locality : pc.rows_balanced;
    }
    log::info("chunking: {} of {} partitions cut by locality{}", locality, m,
              counted ? fmt::format("; neighbor rows (sum of |N_ij|) {} instead of {} ({:.1f}%)", rows_locality,
                                    rows_balanced,
                                    rows_balanced > 0 ? 100.0 * static_cast<double>(rows_locality) /
                                                            static_cast<double>(rows_balanced)
                                                      : 100.0)
                      : std::string());
  }
}

}  // namespace ht
