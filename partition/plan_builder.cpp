#include "partition/plan_builder.hpp"

#include <algorithm>
#include <tuple>

#include <omp.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/progress.hpp"
#include "core/thread_teams.hpp"
#include "core/timer.hpp"
#include "partition/plan_cost.hpp"
#include "partition/vertex_bits.hpp"
#include "plan/plan_derive.hpp"

namespace ht {
namespace {

// Below this many edges / rows of work a parallel region costs more than it
// saves (and much more on a loaded machine).
constexpr int64_t kParallelMin = int64_t{1} << 15;

// ---------------------------------------------------------------------------
// Chunk topology
// ---------------------------------------------------------------------------

ChunkPlan chunk_topology(const GraphView& g, int part, int chunk, int64_t begin, int64_t end, VertexBits& seen) {
  ChunkPlan cp;
  cp.part = part;
  cp.chunk = chunk;
  cp.dst_begin = begin;
  cp.dst_end = end;
  cp.offsets.reserve(end - begin + 1);
  cp.offsets.push_back(0);
  int64_t edges = 0;
  for (int64_t v = begin; v < end; ++v) edges += g.in_degree(v) + 1;
  cp.src_vid.reserve(edges);
  for (int64_t v = begin; v < end; ++v) {
    const auto row = static_cast<int64_t>(cp.src_vid.size());
    bool sorted = true;
    for (vid_t s : g.in_neighbors(v)) {
      if (s == static_cast<vid_t>(v)) continue;
      sorted = sorted && (static_cast<int64_t>(cp.src_vid.size()) == row || cp.src_vid.back() <= s);
      cp.src_vid.push_back(s);
      if (seen.insert(s)) cp.nbr.push_back(s);
    }
    cp.src_vid.push_back(static_cast<vid_t>(v));  // the one self-loop
    if (seen.insert(static_cast<vid_t>(v))) cp.nbr.push_back(static_cast<vid_t>(v));
    const auto first = cp.src_vid.begin() + row, last = cp.src_vid.end() - 1;
    if (sorted) std::rotate(std::upper_bound(first, last, static_cast<vid_t>(v)), last, cp.src_vid.end());
    else std::sort(first, cp.src_vid.end());
    cp.offsets.push_back(static_cast<int64_t>(cp.src_vid.size()));
  }
  // N: every source (destinations included through their self-loops).
  std::sort(cp.nbr.begin(), cp.nbr.end());
  seen.prepare_rank(cp.nbr);
  cp.src_local.resize(cp.src_vid.size());
  for (size_t e = 0; e < cp.src_vid.size(); ++e) cp.src_local[e] = seen.rank(cp.src_vid[e]);
  seen.clear(cp.nbr);
  return cp;
}

// The same chunk built by all threads (a plan of fewer chunks than threads:
// the in-memory mode's one chunk of a hundred million edges took seconds on
// one core): rows counted, filled and sorted in parallel, the neighbor set as
// shared bits. The same ChunkPlan as chunk_topology: each row sorted with its
// self-loop, N the sorted set of sources.
ChunkPlan chunk_topology_parallel(const GraphView& g, int part, int chunk, int64_t begin, int64_t end,
                                  VertexBits& seen) {
  ChunkPlan cp;
  cp.part = part;
  cp.chunk = chunk;
  cp.dst_begin = begin;
  cp.dst_end = end;
  const int64_t rows = end - begin;
  // Fresh pages faulted by the team's threads (resize_for_overwrite): the
  // chunk's lists are hundreds of MB on a friendster-like graph.
  resize_for_overwrite(cp.offsets, static_cast<size_t>(rows) + 1);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t c = 1;  // the one self-loop
    for (vid_t s : g.in_neighbors(begin + r)) c += s != static_cast<vid_t>(begin + r);
    cp.offsets[r + 1] = c;
  }
  parallel_inclusive_scan(cp.offsets);
  // A chunk of every vertex (m = n = 1) has them all as destinations, so
  // all as neighbors: N_ij = 0..N-1 and src_local = src_vid, without a set
  // insert per edge nor a rank per edge (issue 33: small graphs' setup).
  // Its one batch gives each vertex its id as slot, so src_merged is the
  // same list too (set_merged_indices keeps it). The three lists are sized
  // together (their zero-fills side by side) and written row by row while
  // the row is in cache.
  const bool whole = begin == 0 && end == g.num_vertices;
  const auto edges = static_cast<size_t>(cp.offsets.back());
  if (whole) {
    std::vector<uint32_t>* lists[] = {&cp.src_vid, &cp.src_local, &cp.src_merged};
    const size_t sizes[] = {edges, edges, edges};
    resize_each_for_overwrite(std::span<std::vector<uint32_t>* const>(lists), sizes);
  } else {
    resize_for_overwrite(cp.src_vid, edges);
  }
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t r = 0; r < rows; ++r) {
    const vid_t v = static_cast<vid_t>(begin + r);
    const auto first = cp.src_vid.begin() + cp.offsets[r];
    auto out = first;
    bool sorted = true;
    for (vid_t s : g.in_neighbors(v))
      if (s != v) {
        sorted = sorted && (out == first || *(out - 1) <= s);
        *out++ = s;
        if (!whole) seen.insert_shared(s);
      }
    *out = v;
    if (!whole) seen.insert_shared(v);
    // As chunk_topology: a sorted row (a renumbered graph's) takes its
    // self-loop by a rotation, not a sort.
    if (sorted) std::rotate(std::upper_bound(first, out, v), out, out + 1);
    else std::sort(first, out + 1);
    if (whole) {
      std::copy(first, out + 1, cp.src_local.begin() + cp.offsets[r]);
      std::copy(first, out + 1, cp.src_merged.begin() + cp.offsets[r]);
    }
  }
  if (whole) {
    resize_for_overwrite(cp.nbr, static_cast<size_t>(rows));
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) cp.nbr[r] = static_cast<vid_t>(r);
    return cp;
  }
  cp.nbr = seen.members_and_rank();
  resize_for_overwrite(cp.src_local, edges);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < static_cast<int64_t>(edges); ++e) cp.src_local[e] = seen.rank(cp.src_vid[e]);
  seen.clear_all();
  return cp;
}

// ---------------------------------------------------------------------------
// Transition sets and slots (§6, in-place transition data management)
// ---------------------------------------------------------------------------

// 𝕅_ij = the part of 𝕅∪_j owned by partition i (ids are contiguous per partition).
// Steps in parallel, each copied by its own thread (V_p2p ids in all,
// hundreds of millions on a friendster-like graph: one thread copied and
// faulted them all).
void set_transition_vertices(Plan& plan, const std::vector<std::vector<vid_t>>& unions, bool parallel) {
  const int64_t steps = static_cast<int64_t>(plan.m) * plan.n;
  parallel_tasks(
      steps,
      [&](int64_t s) {
        const int j = static_cast<int>(s / plan.m), i = static_cast<int>(s % plan.m);
        const auto& u = unions[j];
        auto lo = std::lower_bound(u.begin(), u.end(), plan.part_offsets[i],
                                   [](vid_t v, int64_t x) { return static_cast<int64_t>(v) < x; });
        auto hi = std::lower_bound(u.begin(), u.end(), plan.part_offsets[i + 1],
                                   [](vid_t v, int64_t x) { return static_cast<int64_t>(v) < x; });
        plan.step(j, i).trans_vid.assign(lo, hi);
      },
      parallel);
}

// Slots of GPU i over its batches (the slot rule of docs/PLAN.md §1: batch 0
// takes 0..|𝕅_i0|-1; later, a vertex of 𝕅_i,j-1 keeps its slot (reused),
// new vertices (ascending id) take the free slots in ascending order — those
// freed by vertices that left come before never-used ones, so the buffer
// never grows beyond max_j |𝕅_ij|). step_slots is the rule's one
// implementation, shared with the plan reader, which derives the slots
// instead of reading them. Returns the capacity.
uint32_t assign_slots(Plan& plan, int gpu) {
  int64_t capacity = 0;
  for (int j = 0; j < plan.n; ++j) {
    ChunkPlan& cur = plan.step(j, gpu);
    const ChunkPlan* prev = j > 0 ? &plan.step(j - 1, gpu) : nullptr;
    capacity = step_slots(prev ? std::span<const vid_t>(prev->trans_vid) : std::span<const vid_t>(),
                          prev ? std::span<const uint32_t>(prev->trans_slot) : std::span<const uint32_t>(),
                          cur.trans_vid, capacity, cur.trans_slot, cur.trans_reused);
    HT_ASSERT(capacity >= 0);
  }
  HT_CHECK(capacity <= UINT32_MAX, "GPU {}: transition buffer exceeds 32-bit indices", gpu);
  return static_cast<uint32_t>(capacity);
}

// ---------------------------------------------------------------------------
// Merged buffer: remote rows and src_merged (§6, data buffer deduplication)
// ---------------------------------------------------------------------------

// 𝕅∪_j as the concatenation of 𝕅_0j, …, 𝕅_m-1,j (ascending, since partitions
// are ascending id ranges), each member's slot on its owner, and a rank
// structure: position of v in 𝕅∪_j in O(1).
struct BatchRows {
  std::vector<vid_t> vid;
  std::vector<uint32_t> slot;
  std::vector<size_t> start;  // m + 1: GPU k's members are [start[k], start[k+1])
  int owner_of_position(size_t p) const {
    return static_cast<int>(std::upper_bound(start.begin(), start.end(), p) - start.begin()) - 1;
  }
};

// `threads` > 1: the bits set and ranked by that many threads (batches fewer
// than threads: 8 batches kept 8 of 64 cores busy); rows.vid is ascending
// (each GPU's transition set is, and GPUs own ascending id ranges).
BatchRows batch_rows(const Plan& plan, int j, VertexBits& bits, int threads) {
  BatchRows rows;
  rows.start.push_back(0);
  for (int k = 0; k < plan.m; ++k) rows.start.push_back(rows.start.back() + plan.step(j, k).trans_vid.size());
  // The batch's V_p2p share of ids and slots, copied by `threads` threads
  // into pages they fault in (one thread copied them before).
  resize_for_overwrite(rows.vid, rows.start.back());
  resize_for_overwrite(rows.slot, rows.start.back());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (int k = 0; k < plan.m; ++k) {
    const ChunkPlan& cp = plan.step(j, k);
    std::copy(cp.trans_vid.begin(), cp.trans_vid.end(), rows.vid.begin() + static_cast<std::ptrdiff_t>(rows.start[k]));
    std::copy(cp.trans_slot.begin(), cp.trans_slot.end(),
              rows.slot.begin() + static_cast<std::ptrdiff_t>(rows.start[k]));
  }
  if (threads > 1) {
    const auto size = static_cast<int64_t>(rows.vid.size());
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < size; ++k) bits.insert_shared(rows.vid[k]);
    bits.prepare_rank_parallel(rows.vid, threads);
    return rows;
  }
  for (vid_t v : rows.vid) bits.insert(v);
  bits.prepare_rank(rows.vid);
  return rows;
}

// Remote rows and src_merged of step (j, i), by `threads` threads (steps
// fewer than threads: 32 steps kept 32 of 64 cores busy). The remote rows
// go in (GPU, slot) order. A GPU's slots in batch j are distinct, so the key
// key_base[GPU] + slot (key_base: the capacities' prefix sums, at most N in
// all) is distinct per row, and the rows in key order are the members of a
// bit set of keys, each row's place its key's rank: two passes over nbr in
// parallel blocks and no sort (a sort per step of millions of rows was the
// longest serial part of each step on a friendster-like graph).
void set_merged_indices(Plan& plan, int j, int i, const BatchRows& rows, const VertexBits& bits, int threads) {
  ChunkPlan& cp = plan.step(j, i);
  const uint32_t base = plan.trans_capacity[i];
  std::vector<int64_t> key_base(static_cast<size_t>(plan.m) + 1, 0);
  for (int k = 0; k < plan.m; ++k) key_base[k + 1] = key_base[k] + plan.trans_capacity[k];
  HT_CHECK(key_base.back() <= UINT32_MAX, "transition buffers of {} rows in all exceed 32-bit keys",
           key_base.back());
  VertexBits keys(key_base.back());
  const auto size = static_cast<int64_t>(cp.nbr.size());
  const size_t local_begin = rows.start[i], local_end = rows.start[i + 1];
  auto key_of = [&](size_t p) {
    return static_cast<vid_t>(key_base[rows.owner_of_position(p)] + rows.slot[p]);
  };
  std::vector<uint32_t> merged;
  resize_for_overwrite(merged, cp.nbr.size());
  int64_t outside = 0, remotes = 0;  // N_ij ⊄ 𝕅∪_j (a bug), remote rows
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : outside, remotes) if (threads > 1)
  for (int64_t x = 0; x < size; ++x) {
    const size_t p = bits.rank(cp.nbr[x]);
    if (p >= rows.vid.size() || rows.vid[p] != cp.nbr[x]) {
      ++outside;
    } else if (p >= local_begin && p < local_end) {
      merged[x] = rows.slot[p];
    } else {
      ++remotes;
      keys.insert_shared(key_of(p));
    }
  }
  HT_ASSERT(outside == 0);  // N_ij ⊆ 𝕅∪_j
  const std::vector<vid_t> sorted = keys.members_and_rank();
  HT_ASSERT(static_cast<int64_t>(sorted.size()) == remotes);  // distinct slots per GPU
  resize_for_overwrite(cp.remote_vid, sorted.size());
  resize_for_overwrite(cp.remote_gpu, sorted.size());
  resize_for_overwrite(cp.remote_slot, sorted.size());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t x = 0; x < size; ++x) {
    const size_t p = bits.rank(cp.nbr[x]);
    if (p >= local_begin && p < local_end) continue;
    const uint32_t r = keys.rank(key_of(p));
    cp.remote_vid[r] = cp.nbr[x];
    cp.remote_gpu[r] = rows.owner_of_position(p);
    cp.remote_slot[r] = rows.slot[p];
    merged[x] = base + r;
  }
  // Merged rows in N_ij's order (one GPU, one batch: slot = vid): src_local
  // again, which a whole-graph chunk wrote beside it (chunk_topology_parallel).
  if (first_bad(size, [&](int64_t x) { return merged[x] != static_cast<uint32_t>(x); }) < 0) {
    if (cp.src_merged.size() != cp.src_local.size())
      cp.src_merged = copy_to_vector(std::span<const uint32_t>(cp.src_local));
    return;
  }
  // The edges right after their merged rows (in cache): a separate pass in
  // blocks over all steps' edges measured 0.4-1.4 s slower on one thread at
  // 154 M edges (misses on the merged rows).
  resize_for_overwrite(cp.src_merged, cp.src_local.size());
  const auto edges = static_cast<int64_t>(cp.src_local.size());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t e = 0; e < edges; ++e) cp.src_merged[e] = merged[cp.src_local[e]];
}

// After batch j: slots whose vertex is not in 𝕅_i,j+1 (all after the last
// batch), ascending slot. Slots of a batch are distinct: the flushes in slot
// order are the members of a bit set of slots, each vertex at its slot's
// rank (no sort of millions of pairs per step); the merge walk over the two
// ascending lists in parallel blocks, each from its first vertex's place in
// the next list.
void set_flushes(Plan& plan, int j, int i, int threads) {
  ChunkPlan& cp = plan.step(j, i);
  static const std::vector<vid_t> kNone;
  const std::vector<vid_t>& next = j + 1 < plan.n ? plan.step(j + 1, i).trans_vid : kNone;
  const auto size = static_cast<int64_t>(cp.trans_vid.size());
  const int64_t g = std::max<int64_t>(static_cast<int64_t>(bulk_tuning().grain), 1);
  const int64_t blocks = (size + g - 1) / g;
  std::vector<uint8_t> leaves;
  resize_for_overwrite(leaves, cp.trans_vid.size());
  VertexBits slots(plan.trans_capacity[i]);
  int64_t count = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) reduction(+ : count) if (threads > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * g, end = std::min(size, begin + g);
    auto a = std::lower_bound(next.begin(), next.end(), cp.trans_vid[begin]);
    for (int64_t k = begin; k < end; ++k) {
      while (a != next.end() && *a < cp.trans_vid[k]) ++a;
      const bool leave = a == next.end() || *a != cp.trans_vid[k];
      leaves[k] = leave ? 1 : 0;
      if (leave) {
        ++count;
        slots.insert_shared(cp.trans_slot[k]);
      }
    }
  }
  const std::vector<vid_t> sorted = slots.members_and_rank();
  HT_ASSERT(static_cast<int64_t>(sorted.size()) == count);  // distinct slots
  resize_for_overwrite(cp.flush_slot, sorted.size());
  resize_for_overwrite(cp.flush_vid, sorted.size());
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t k = 0; k < size; ++k) {
    if (!leaves[k]) continue;
    const uint32_t r = slots.rank(cp.trans_slot[k]);
    cp.flush_slot[r] = cp.trans_slot[k];
    cp.flush_vid[r] = cp.trans_vid[k];
  }
}

void set_capacities(Plan& plan) {
  const size_t m = static_cast<size_t>(plan.m);
  plan.remote_capacity.assign(m, 0);
  plan.nbr_capacity.assign(m, 0);
  plan.max_dst.assign(m, 0);
  plan.max_edges.assign(m, 0);
  for (const ChunkPlan& cp : plan.steps) {
    const int i = cp.part;
    HT_CHECK(cp.nbr.size() <= UINT32_MAX && cp.remote_vid.size() <= UINT32_MAX,
             "chunk {} of partition {} has too many neighbors for 32-bit buffer indices", cp.chunk, i);
    plan.remote_capacity[i] = std::max(plan.remote_capacity[i], static_cast<uint32_t>(cp.remote_vid.size()));
    plan.nbr_capacity[i] = std::max(plan.nbr_capacity[i], static_cast<uint32_t>(cp.nbr.size()));
    plan.max_dst[i] = std::max(plan.max_dst[i], cp.num_dst());
    plan.max_edges[i] = std::max(plan.max_edges[i], cp.num_edges());
  }
}

ChunkNeighbors neighbor_views(const std::vector<ChunkPlan>& chunks) {
  ChunkNeighbors v;
  v.reserve(chunks.size());
  for (const ChunkPlan& cp : chunks) v.emplace_back(cp.nbr);
  return v;
}

// The batch unions of an order and its volumes: computed once and shared by
// the cost comparison in build_plan and the assembly.
struct OrderUnions {
  std::vector<std::vector<vid_t>> unions;
  PlanVolumes volumes;
};

OrderUnions with_volumes(const ChunkNeighbors& nbr, std::vector<std::vector<vid_t>> unions) {
  OrderUnions o;
  o.unions = std::move(unions);
  o.volumes = volumes_of(nbr, o.unions);
  return o;
}

OrderUnions order_unions(const ChunkNeighbors& nbr, const BatchOrder& order) {
  return with_volumes(nbr, batch_unions(nbr, order));
}

// assemble_plan with the unions of `order` and the partitioner's order's
// volumes already known.
Plan assemble(int m, int n, std::vector<int64_t> part_offsets, int64_t num_vertices, std::vector<ChunkPlan> chunks,
              const BatchOrder& order, OrderUnions run, const PlanVolumes& volumes_before,
              const CostProfile& profile) {
  Plan plan;
  plan.m = m;
  plan.n = n;
  plan.num_vertices = num_vertices;
  plan.part_offsets = std::move(part_offsets);
  plan.volumes_before = volumes_before;
  plan.volumes = run.volumes;
  plan.steps.resize(chunks.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) plan.step(j, i) = std::move(chunks[static_cast<size_t>(i) * n + order.at(j, i)]);
  const bool parallel = plan.volumes.v_ori >= kParallelMin;
  set_transition_vertices(plan, run.unions, parallel);
  run.unions = {};  // 𝕅∪_j is in the transition sets now
  plan.cost_before = comm_cost(plan.volumes_before, profile, 1.0);
  plan.cost_after = comm_cost(plan.volumes, profile, 1.0);

  const int threads = omp_get_max_threads();
  Timer t;
  plan.trans_capacity.assign(m, 0);
  // GPUs in parallel when there are as many as threads; else the GPUs side
  // by side on teams of the threads (run_in_teams), each GPU's steps in
  // parallel blocks by its team (step_slots' own loops, which run serially
  // inside a loop over GPUs: m = 4 kept 4 of 64 cores busy). GPU after GPU
  // with all threads each left step_slots' serial parts (allocation, block
  // prefix sums) one after another, 32 times on m 4 x n 8. A GPU's slots do
  // not depend on the others' nor on its team.
  if (parallel && m > 1 && m < threads) {
    run_in_teams(m, m, threads, [&](int64_t i) { plan.trans_capacity[i] = assign_slots(plan, static_cast<int>(i)); });
  } else {
#pragma omp parallel for schedule(dynamic, 1) if (parallel && m > 1)
    for (int i = 0; i < m; ++i) plan.trans_capacity[i] = assign_slots(plan, i);
  }
  const double slots_seconds = t.seconds();
  // Remote rows, src_merged and flushes step by step in parallel (one task
  // per batch kept n = 8 of 64 cores busy on a friendster-like graph):
  // batches in groups of one per thread (as many rank bits as before, one
  // per thread), each batch's rows and rank bits built once and shared by
  // its m steps.
  const int group = std::clamp(omp_get_max_threads(), 1, n);
  std::vector<VertexBits> bits;
  for (int g = 0; g < group; ++g) bits.emplace_back(num_vertices);
  std::vector<BatchRows> rows(static_cast<size_t>(group));
  // Fewer tasks than threads: each task's inner loops by a team of the
  // threads left over (run_in_teams; the results do not depend on the teams).
  const int team_threads = parallel ? threads : 1;
  double rows_seconds = 0;
  t.reset();
  for (int first = 0; first < n; first += group) {
    const int count = std::min(group, n - first);
    Timer r;
    run_in_teams(count, parallel ? count : 1, team_threads, [&](int64_t g) {
      rows[g] = batch_rows(plan, first + static_cast<int>(g), bits[g], omp_get_max_threads());
    });
    rows_seconds += r.seconds();
    const int64_t steps = static_cast<int64_t>(count) * m;
    run_in_teams(steps, parallel ? static_cast<int>(std::min<int64_t>(steps, threads)) : 1, team_threads,
                 [&](int64_t s) {
                   const int g = static_cast<int>(s / m), i = static_cast<int>(s % m), j = first + g;
                   set_merged_indices(plan, j, i, rows[g], bits[g], omp_get_max_threads());
                   set_flushes(plan, j, i, omp_get_max_threads());
                 });
    for (int g = 0; g < count; ++g) {
      bits[g].clear(rows[g].vid);
      rows[g] = BatchRows{};
    }
  }
  log::debug("assembly: slots {:.2f} s, batch rows {:.2f} s, remote rows, merged indices and flushes {:.2f} s",
             slots_seconds, rows_seconds, t.seconds() - rows_seconds);
  set_capacities(plan);
  for (int i = 0; i < m; ++i)
    HT_CHECK(static_cast<uint64_t>(plan.trans_capacity[i]) + plan.remote_capacity[i] <= UINT32_MAX,
             "GPU {}: merged buffer exceeds 32-bit indices", i);
  return plan;
}

// Fewer chunks than half the threads (m = 4 x n = 8 on 64 cores): one
// chunk per thread kept half the cores idle and the largest chunk set the
// time (topology 4.7 s on friendster-like). Each chunk is built by a team of
// threads instead (chunk_topology_parallel: the same ChunkPlan as
// chunk_topology), the chunks side by side; which team builds a chunk, with
// how many threads, changes nothing.
void build_chunks_in_teams(const GraphView& g, const Partition& p, std::vector<ChunkPlan>& chunks, int threads,
                           Progress& progress) {
  const int n = p.n();
  const int teams = static_cast<int>(chunks.size());
  run_in_teams(teams, teams, threads, [&](int64_t k) {
    const int i = static_cast<int>(k / n), c = static_cast<int>(k % n);
    VertexBits seen(g.num_vertices);
    chunks[k] = chunk_topology_parallel(g, i, c, p.chunk_begin(i, c), p.chunk_end(i, c), seen);
    progress.add(chunks[k].num_edges());
  });
}

}  // namespace

void check_partition_shape(const GraphView& g, const Partition& p) {
  const int m = p.m(), n = p.n();
  HT_CHECK(m >= 1 && n >= 1, "partition has m = {}, n = {}", m, n);
  HT_CHECK(p.num_vertices == g.num_vertices, "partition is for {} vertices but the graph has {}", p.num_vertices,
           g.num_vertices);
  HT_CHECK(g.num_vertices <= kMaxVertices32, "graph has {} vertices; plans need 32-bit ids", g.num_vertices);
  HT_CHECK(p.part_offsets.size() == static_cast<size_t>(m) + 1 &&
               p.chunk_offsets.size() == static_cast<size_t>(m) * n + 1,
           "partition offsets do not have m + 1 / m * n + 1 entries");
  HT_CHECK(p.part_offsets.front() == 0 && p.part_offsets.back() == g.num_vertices,
           "partition offsets do not cover the {} vertices", g.num_vertices);
  for (int i = 0; i < m; ++i) {
    HT_CHECK(p.chunk_offsets[static_cast<size_t>(i) * n] == p.part_offsets[i] &&
                 p.chunk_offsets[static_cast<size_t>(i + 1) * n] == p.part_offsets[i + 1],
             "chunks of partition {} do not tile its id range", i);
    for (int c = 0; c < n; ++c)
      HT_CHECK(p.chunk_begin(i, c) <= p.chunk_end(i, c), "chunk {} of partition {} has a negative size", c, i);
  }
}

std::vector<ChunkPlan> build_chunks(const GraphView& g, const Partition& p) {
  check_partition_shape(g, p);
  const int m = p.m(), n = p.n();
  std::vector<ChunkPlan> chunks(static_cast<size_t>(m) * n);
  Progress progress("chunk topology", g.num_edges + g.num_vertices, "edges");
  // One chunk (the in-memory mode): built by all threads (3.18 -> 2.16 s at
  // 2.45 M vertices on 16 cores); several: side by side, as the device plans'
  // steps (one after another, each in parallel, measured slower there).
  if (chunks.size() == 1 && g.num_edges >= kParallelMin && omp_get_max_threads() > 1) {
    VertexBits seen(g.num_vertices);
    chunks[0] = chunk_topology_parallel(g, 0, 0, p.chunk_begin(0, 0), p.chunk_end(0, 0), seen);
    progress.finish();
    return chunks;
  }
  const int threads = omp_get_max_threads();
  if (g.num_edges >= kParallelMin && chunks.size() > 1 && static_cast<int>(chunks.size()) * 2 <= threads) {
    build_chunks_in_teams(g, p, chunks, threads, progress);
    progress.finish();
    return chunks;
  }
#pragma omp parallel if (g.num_edges >= kParallelMin)
  {
    VertexBits seen(g.num_vertices);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < m * static_cast<int64_t>(n); ++k) {
      const int i = static_cast<int>(k / n), c = static_cast<int>(k % n);
      chunks[k] = chunk_topology(g, i, c, p.chunk_begin(i, c), p.chunk_end(i, c), seen);
      progress.add(chunks[k].num_edges());
    }
  }
  progress.finish();
  return chunks;
}

Plan assemble_plan(int m, int n, std::vector<int64_t> part_offsets, int64_t num_vertices,
                   std::vector<ChunkPlan> chunks, const BatchOrder& order, const CostProfile& profile) {
  HT_CHECK(order.m == m && order.n == n && order.valid(), "batch order does not fit m = {}, n = {}", m, n);
  HT_CHECK(chunks.size() == static_cast<size_t>(m) * n && part_offsets.size() == static_cast<size_t>(m) + 1,
           "assemble_plan: {} chunks / {} partition offsets for m = {}, n = {}", chunks.size(), part_offsets.size(),
           m, n);
  const ChunkNeighbors nbr = neighbor_views(chunks);
  const PlanVolumes before = order_volumes(nbr, BatchOrder::identity(m, n));
  OrderUnions run = order_unions(nbr, order);
  return assemble(m, n, std::move(part_offsets), num_vertices, std::move(chunks), order, std::move(run), before,
                  profile);
}

Plan build_plan(const GraphView& g, const Partition& p, const PlanBuildOptions& opt, PlanBuildTimes* times) {
  Timer timer;
  PlanBuildTimes t_local;
  PlanBuildTimes& t_phase = times ? *times : t_local;
  const int m = p.m(), n = p.n();
  std::vector<ChunkPlan> chunks = build_chunks(g, p);
  t_phase.topology = timer.seconds();
  log::info("chunk topologies: {} chunks in {:.3f} s", chunks.size(), t_phase.topology);

  Timer t;
  const ChunkNeighbors nbr = neighbor_views(chunks);
  BatchOrder order = BatchOrder::identity(m, n);
  OrderUnions run;
  BatchOrder candidate;
  std::vector<std::vector<vid_t>> candidate_unions;
  // The partitioner's order's unions and volumes and the reorganization
  // read the neighbor sets only: side by side, each with all the threads
  // (as write_plan's parts: neither kept a 64-core machine busy alone), one
  // after the other with one thread. Neither depends on the threads.
  // One chunk per partition has one batch order: the partitioner's is the
  // reorganized one (0.08 s of a 1.3 s setup on community in memory).
  const bool search = opt.reorganize && n > 1;
  const int threads = omp_get_max_threads();
  const int teams = search && threads > 1 ? 2 : 1;
  run_in_teams(search ? 2 : 1, teams, threads * teams, [&](int64_t task) {
    if (task == 0) run = order_unions(nbr, order);
    else candidate = reorganize(nbr, m, n, g.num_vertices, &candidate_unions);
  });
  const PlanVolumes before = run.volumes;
  bool reorganized = opt.reorganize && !search;
  if (search) {
    OrderUnions candidate_run = with_volumes(nbr, std::move(candidate_unions));
    const double cost_before = comm_cost(before, opt.profile, 1.0);
    const double cost_after = comm_cost(candidate_run.volumes, opt.profile, 1.0);
    t_phase.reorganize = t.seconds();
    log::info("reorganization: {:.3f} s", t_phase.reorganize);
    t.reset();
    if (cost_after <= cost_before) {
      order = std::move(candidate);
      run = std::move(candidate_run);
      reorganized = true;
    } else {
      log::info("reorganized order would raise the cost of Eq. 4 ({:.4g} -> {:.4g} s per row byte); keeping the "
                "partitioner's order",
                cost_before, cost_after);
    }
  }
  Plan plan = assemble(m, n, p.part_offsets, g.num_vertices, std::move(chunks), order, std::move(run), before,
                       opt.profile);
  t_phase.assemble = t.seconds();
  plan.reorganized = reorganized;
  plan.seconds = timer.seconds();
  return plan;
}

}  // namespace ht
