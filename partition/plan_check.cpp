#include "partition/plan_check.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"

// Parallel and deterministic: every pass runs over blocks of at most one
// grain (bulk_tuning()) of a step's or a batch's lists; each block collects
// its own problems, and the blocks' lists are merged in a fixed order (step
// or GPU, then block), so the problem list (its first entries and its count)
// is the same whatever the thread count. State that several entries may
// touch (a transition slot given twice, a slot flushed twice) is settled by
// atomic maxima, whose outcome does not depend on the schedule either.
// Membership of a vertex in the batch unions is a dense byte per vertex (no
// binary searches over the unions), the emulated buffers are dense arrays
// per slot.

namespace ht {
namespace {

constexpr vid_t kEmpty = UINT32_MAX;

int64_t grain() { return static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1)); }

// What one block of work finds: its first `cap` messages (no later one of a
// block can be among the first `cap` of the whole list) and how many in all.
class Found {
 public:
  explicit Found(size_t cap = 0) : cap_(cap) {}
  template <typename... A>
  void add(fmt::format_string<A...> f, A&&... args) {
    if (list_.size() < cap_) list_.push_back(fmt::format(f, std::forward<A>(args)...));
    ++total_;
  }
  bool any() const { return total_ > 0; }
  size_t total() const { return total_; }
  const std::vector<std::string>& list() const { return list_; }

 private:
  size_t cap_;
  size_t total_ = 0;
  std::vector<std::string> list_;
};

class Problems {
 public:
  explicit Problems(size_t max) : max_(max) {}
  template <typename... A>
  void add(fmt::format_string<A...> f, A&&... args) {
    if (list_.size() < max_) list_.push_back(fmt::format(f, std::forward<A>(args)...));
    ++total_;
  }
  void merge(const Found& f) {
    for (const std::string& s : f.list())
      if (list_.size() < max_) list_.push_back(s);
    total_ += f.total();
  }
  Found collector() const { return Found(max_); }
  bool any() const { return total_ > 0; }
  std::vector<std::string> result() const {
    std::vector<std::string> r = list_;
    if (total_ > list_.size()) r.push_back(fmt::format("... and {} more problems", total_ - list_.size()));
    return r;
  }

 private:
  size_t max_;
  size_t total_ = 0;
  std::vector<std::string> list_;
};

// Items [begin, end) of one unit (a step, a GPU's list in a batch).
struct Block {
  int64_t unit, begin, end;
};

// Blocks of at most one grain over units of the given sizes, none across a
// unit, in unit order.
std::vector<Block> blocks_of(const std::vector<int64_t>& sizes) {
  std::vector<Block> out;
  const int64_t g = grain();
  for (size_t u = 0; u < sizes.size(); ++u)
    for (int64_t b = 0; b < sizes[u]; b += g) out.push_back({static_cast<int64_t>(u), b, std::min(sizes[u], b + g)});
  return out;
}

// body(block, found) for every block, in parallel; what each block found.
template <typename Body>
std::vector<Found> run_blocks(const std::vector<Block>& blocks, const Problems& pr, Body body) {
  std::vector<Found> found(blocks.size(), pr.collector());
  const auto n = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
  for (int64_t t = 0; t < n; ++t) body(blocks[t], found[t]);
  return found;
}

// body(block) for every block, in parallel (passes that find nothing).
template <typename Body>
void for_blocks(const std::vector<Block>& blocks, Body body) {
  const auto n = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
  for (int64_t t = 0; t < n; ++t) body(blocks[t]);
}

// Merges the found lists of the blocks of one unit (blocks in unit order).
void merge_unit(Problems& pr, const std::vector<Block>& blocks, const std::vector<Found>& found, int64_t unit) {
  for (size_t t = 0; t < blocks.size(); ++t)
    if (blocks[t].unit == unit) pr.merge(found[t]);
}

// x = max(x, v), atomically.
void atomic_max(uint64_t& x, uint64_t v) {
  std::atomic_ref<uint64_t> a(x);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

int owner(const Plan& plan, vid_t v) {
  return static_cast<int>(std::upper_bound(plan.part_offsets.begin(), plan.part_offsets.end(),
                                           static_cast<int64_t>(v)) -
                          plan.part_offsets.begin()) - 1;
}

// In parallel blocks (first_bad): the structure check runs step after step,
// each over all threads; one task per step kept 32 of 64 cores busy.
template <typename T>
bool all_below(const std::vector<T>& v, uint64_t bound) {
  return first_bad(static_cast<int64_t>(v.size()), [&](int64_t k) { return static_cast<uint64_t>(v[k]) >= bound; }) < 0;
}

// ---------------------------------------------------------------------------
// Structure: everything later checks index with is in range.
// ---------------------------------------------------------------------------

bool check_plan_shape(const Plan& plan, Problems& pr) {
  const size_t m = static_cast<size_t>(std::max(plan.m, 0));
  if (plan.m < 1 || plan.n < 1 || plan.steps.size() != m * static_cast<size_t>(plan.n)) {
    pr.add("plan has m = {}, n = {} and {} steps", plan.m, plan.n, plan.steps.size());
    return false;
  }
  if (plan.part_offsets.size() != m + 1 || plan.trans_capacity.size() != m || plan.remote_capacity.size() != m ||
      plan.nbr_capacity.size() != m || plan.max_dst.size() != m || plan.max_edges.size() != m) {
    pr.add("per-GPU arrays of the plan do not have m = {} entries", m);
    return false;
  }
  if (plan.part_offsets.front() != 0 || plan.part_offsets.back() != plan.num_vertices ||
      !std::is_sorted(plan.part_offsets.begin(), plan.part_offsets.end()) || plan.num_vertices > kEmpty) {
    pr.add("partition offsets do not run from 0 to N = {}", plan.num_vertices);
    return false;
  }
  return true;
}

void check_step_ranges(const Plan& plan, size_t s, Found& pr) {
  const ChunkPlan& cp = plan.steps[s];
  const uint64_t nv = static_cast<uint64_t>(plan.num_vertices);
  const int i = cp.part;
  const bool offsets_ok = cp.num_dst() >= 0 && cp.offsets.size() == static_cast<size_t>(cp.num_dst() + 1) &&
                          cp.offsets[0] == 0 &&
                          first_bad(cp.num_dst(), [&](int64_t d) { return cp.offsets[d] > cp.offsets[d + 1]; }) < 0;
  const int64_t e = offsets_ok ? cp.offsets.back() : 0;
  if (!offsets_ok)
    pr.add("step {}: offsets are not a CSC offset array over its {} destinations", s, cp.num_dst());
  else if (cp.src_local.size() != static_cast<size_t>(e) || cp.src_merged.size() != static_cast<size_t>(e) ||
           cp.src_vid.size() != static_cast<size_t>(e))
    pr.add("step {}: edge arrays do not have offsets.back() = {} entries", s, e);
  if (!all_below(cp.nbr, nv) || !all_below(cp.src_vid, nv) || !all_below(cp.src_local, cp.nbr.size()) ||
      !all_below(cp.src_merged, plan.merged_capacity(i)))
    pr.add("step {}: a neighbor id or index is out of range", s);
  if (cp.trans_slot.size() != cp.trans_vid.size() || cp.trans_reused.size() != cp.trans_vid.size() ||
      !all_below(cp.trans_vid, nv) || !all_below(cp.trans_slot, plan.trans_capacity[i]))
    pr.add("step {}: transition arrays are inconsistent or out of range", s);
  bool remote_ok = cp.remote_gpu.size() == cp.remote_vid.size() && cp.remote_slot.size() == cp.remote_vid.size() &&
                   all_below(cp.remote_vid, nv);
  remote_ok = remote_ok && first_bad(static_cast<int64_t>(cp.remote_gpu.size()), [&](int64_t r) {
                return cp.remote_gpu[r] < 0 || cp.remote_gpu[r] >= plan.m ||
                       cp.remote_slot[r] >= plan.trans_capacity[cp.remote_gpu[r]];
              }) < 0;
  if (!remote_ok) pr.add("step {}: remote arrays are inconsistent or out of range", s);
  if (cp.flush_vid.size() != cp.flush_slot.size() || !all_below(cp.flush_vid, nv) ||
      !all_below(cp.flush_slot, plan.trans_capacity[i]))
    pr.add("step {}: flush arrays are inconsistent or out of range", s);
}

bool check_structure(const Plan& plan, Problems& pr) {
  if (!check_plan_shape(plan, pr)) return false;
  const size_t steps = plan.steps.size();
  auto placed = [&](size_t s) {
    const ChunkPlan& cp = plan.steps[s];
    return cp.part == static_cast<int>(s % plan.m) && cp.chunk >= 0 && cp.chunk < plan.n;
  };
  // The range scans (every list of every step): step after step, each list
  // in parallel blocks.
  std::vector<Found> ranges(steps, pr.collector());
  for (size_t s = 0; s < steps; ++s)
    if (placed(s)) check_step_ranges(plan, s, ranges[s]);
  std::vector<char> seen(steps, 0);
  for (size_t s = 0; s < steps; ++s) {
    const ChunkPlan& cp = plan.steps[s];
    const int j = static_cast<int>(s / plan.m), i = static_cast<int>(s % plan.m);
    if (!placed(s)) {
      pr.add("step {} (batch {}, GPU {}) has part {} chunk {}", s, j, i, cp.part, cp.chunk);
      continue;
    }
    if (seen[static_cast<size_t>(i) * plan.n + cp.chunk]++)
      pr.add("chunk {} of partition {} runs more than once", cp.chunk, i);
    if (!plan.reorganized && cp.chunk != j)
      pr.add("batch {}, GPU {}: plan is not reorganized but runs chunk {}", j, i, cp.chunk);
    if (cp.dst_begin < plan.part_offsets[i] || cp.dst_end < cp.dst_begin || cp.dst_end > plan.part_offsets[i + 1])
      pr.add("batch {}, GPU {}: destinations [{}, {}) are not in partition {}", j, i, cp.dst_begin, cp.dst_end, i);
    pr.merge(ranges[s]);
  }
  return !pr.any();
}

void check_against_partition(const Plan& plan, const Partition& p, Problems& pr) {
  if (plan.m != p.m() || plan.n != p.n() || plan.num_vertices != p.num_vertices ||
      plan.part_offsets != p.part_offsets || p.chunk_offsets.size() != plan.steps.size() + 1) {
    pr.add("plan (m = {}, n = {}, N = {}) does not match the partition (m = {}, n = {}, N = {})", plan.m, plan.n,
           plan.num_vertices, p.m(), p.n(), p.num_vertices);
    return;
  }
  for (const ChunkPlan& cp : plan.steps)
    if (cp.dst_begin != p.chunk_begin(cp.part, cp.chunk) || cp.dst_end != p.chunk_end(cp.part, cp.chunk))
      pr.add("chunk {} of partition {}: destinations [{}, {}) but the partition says [{}, {})", cp.chunk, cp.part,
             cp.dst_begin, cp.dst_end, p.chunk_begin(cp.part, cp.chunk), p.chunk_end(cp.part, cp.chunk));
}

// ---------------------------------------------------------------------------
// Topology: the graph's in-edges plus exactly one self-loop per destination.
// ---------------------------------------------------------------------------

// Destination ranges of every step with about one grain of edges or of
// destinations each (high in-degrees make equal destination counts unequal work).
std::vector<Block> destination_blocks(const Plan& plan) {
  std::vector<Block> out;
  const int64_t g = grain();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ChunkPlan& cp = plan.steps[s];
    for (int64_t d = 0; d < cp.num_dst();) {
      int64_t end = d + 1;
      while (end < cp.num_dst() && end - d < g && cp.offsets[end] - cp.offsets[d] < g) ++end;
      out.push_back({static_cast<int64_t>(s), d, end});
      d = end;
    }
  }
  return out;
}

// Are `got` (a destination's sources in the plan) the graph's in-neighbors
// `row` of v without v, plus v once, ascending? A sorted row is compared in
// one lockstep walk; others through a sorted copy in `scratch`.
bool same_sources(std::span<const vid_t> got, std::span<const vid_t> row, vid_t v, std::vector<vid_t>& scratch) {
  if (std::is_sorted(row.begin(), row.end())) {
    size_t k = 0;
    bool placed = false;
    auto take = [&](vid_t x) { return k < got.size() && got[k++] == x; };
    for (vid_t x : row) {
      if (x == v) continue;
      if (!placed && v < x) {
        if (!take(v)) return false;
        placed = true;
      }
      if (!take(x)) return false;
    }
    return (placed || take(v)) && k == got.size();
  }
  scratch.clear();
  for (vid_t x : row)
    if (x != v) scratch.push_back(x);
  scratch.push_back(v);
  std::sort(scratch.begin(), scratch.end());
  return std::equal(got.begin(), got.end(), scratch.begin(), scratch.end());
}

void check_topology(const Plan& plan, const GraphView& g, Problems& pr) {
  if (g.num_vertices != plan.num_vertices) {
    pr.add("graph has {} vertices, the plan {}", g.num_vertices, plan.num_vertices);
    return;
  }
  const size_t steps = plan.steps.size();
  const std::vector<Block> blocks = destination_blocks(plan);
  // Per block: its first three destinations whose in-edges differ (a step
  // reports three at most), the first edge whose src_local does not lead to
  // its source; and the nbr entries that are some edge's source are marked.
  std::vector<Found> in_edges(blocks.size(), Found(3));
  std::vector<int64_t> bad_edge(blocks.size(), std::numeric_limits<int64_t>::max());
  // V_ori marks: allocated and zeroed step by step in parallel (serially,
  // one thread faulted them all in).
  std::vector<std::vector<char>> used(steps);
  parallel_tasks(static_cast<int64_t>(steps), [&](int64_t s) { used[s].assign(plan.steps[s].nbr.size(), 0); });
  const auto nblocks = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1)
  for (int64_t t = 0; t < nblocks; ++t) {
    const Block& b = blocks[t];
    const ChunkPlan& cp = plan.steps[b.unit];
    std::vector<vid_t> scratch;
    for (int64_t d = b.begin; d < b.end && in_edges[t].total() < 3; ++d) {
      const vid_t v = static_cast<vid_t>(cp.dst_begin + d);
      const std::span<const vid_t> row = g.in_neighbors(v);
      const std::span<const vid_t> got(cp.src_vid.data() + cp.offsets[d],
                                       static_cast<size_t>(cp.offsets[d + 1] - cp.offsets[d]));
      if (!same_sources(got, row, v, scratch))
        in_edges[t].add("chunk {} of partition {}: in-edges of vertex {} are not the graph's (+1 self-loop, "
                        "ascending): {} sources, expected {}",
                        cp.chunk, cp.part, v, got.size(),
                        static_cast<int64_t>(row.size()) - std::count(row.begin(), row.end(), v) + 1);
    }
    std::vector<char>& mark = used[b.unit];
    for (int64_t e = cp.offsets[b.begin]; e < cp.offsets[b.end]; ++e) {
      const uint32_t x = cp.src_local[e];
      if (cp.nbr[x] != cp.src_vid[e]) bad_edge[t] = std::min(bad_edge[t], e);
      else std::atomic_ref<char>(mark[x]).store(1, std::memory_order_relaxed);
    }
  }
  // nbr = set of sources: strictly ascending, every entry some edge's source.
  // Step after step, each in parallel blocks.
  std::vector<char> nbr_bad(steps, 0);
  for (size_t s = 0; s < steps; ++s) {
    const ChunkPlan& cp = plan.steps[s];
    const std::vector<char>& mark = used[s];
    nbr_bad[s] = first_bad(static_cast<int64_t>(cp.nbr.size()), [&](int64_t x) {
                   return mark[x] == 0 || (x > 0 && cp.nbr[x - 1] >= cp.nbr[x]);
                 }) >= 0;
  }
  size_t t = 0;
  for (size_t s = 0; s < steps; ++s) {
    const ChunkPlan& cp = plan.steps[s];
    size_t shown = 0;
    int64_t first_bad = std::numeric_limits<int64_t>::max();
    for (; t < blocks.size() && blocks[t].unit == static_cast<int64_t>(s); ++t) {
      for (const std::string& msg : in_edges[t].list()) {
        if (shown == 3) break;
        pr.add("{}", msg);
        ++shown;
      }
      first_bad = std::min(first_bad, bad_edge[t]);
    }
    if (first_bad != std::numeric_limits<int64_t>::max())
      pr.add("chunk {} of partition {}: edge {} has src_local -> {} but source {}", cp.chunk, cp.part, first_bad,
             cp.nbr[cp.src_local[first_bad]], cp.src_vid[first_bad]);
    if (nbr_bad[s])
      pr.add("chunk {} of partition {}: nbr is not the ascending set of its sources", cp.chunk, cp.part);
  }
}

// ---------------------------------------------------------------------------
// Batch unions: each batch's neighbor sets concatenated, sorted and
// deduplicated (independent of the builder's set merges, and of the order
// and duplicates of the lists).
// ---------------------------------------------------------------------------

using Unions = std::vector<std::vector<vid_t>>;

// Pieces of the vertex id range [0, N) per batch: with n batches and T
// threads, n tasks kept 8 of 64 cores busy on a friendster-like plan (the
// unions and volumes were a quarter of the check there); n * pieces tasks,
// each over the ids of one equal range, keep them all. Equal id ranges, not
// the builder's splitters (sorted_sets.hpp): the check stays an independent
// oracle. The pieces only split the work: results do not depend on them.
int id_pieces(const Plan& plan, int64_t entries) {
  const int threads = omp_get_max_threads();
  if (threads <= plan.n || entries < 4 * grain()) return 1;
  return std::clamp<int>(4 * threads / plan.n, 1, 1024);
}

// Piece k's ids start here; the last one has no end (ids beyond N, of a
// plan the structure check let through, still count).
int64_t piece_bound(const Plan& plan, int pieces, int k) {
  return k == pieces ? std::numeric_limits<int64_t>::max() : plan.num_vertices * k / pieces;
}

// The members of an ascending list in [lo, hi).
std::span<const vid_t> id_range(std::span<const vid_t> l, int64_t lo, int64_t hi) {
  const auto below = [](vid_t v, int64_t x) { return static_cast<int64_t>(v) < x; };
  const auto a = std::lower_bound(l.begin(), l.end(), lo, below);
  return {a, std::lower_bound(a, l.end(), hi, below)};
}

// Union of ascending lists: merged pairwise, level by level, in linear time
// per level.
std::vector<vid_t> merge_levels(std::vector<std::span<const vid_t>> lists) {
  std::vector<std::vector<vid_t>> level;
  for (const auto& l : lists) level.emplace_back(l.begin(), l.end());
  while (level.size() > 1) {
    std::vector<std::vector<vid_t>> next((level.size() + 1) / 2);
    for (size_t k = 0; k + 1 < level.size(); k += 2) {
      next[k / 2].reserve(level[k].size() + level[k + 1].size());
      std::set_union(level[k].begin(), level[k].end(), level[k + 1].begin(), level[k + 1].end(),
                     std::back_inserter(next[k / 2]));
    }
    if (level.size() % 2) next.back() = std::move(level.back());
    level.swap(next);
  }
  return level.empty() ? std::vector<vid_t>{} : std::move(level[0]);
}

// Any lists (a broken plan's): concatenated, sorted, deduplicated.
std::vector<vid_t> sort_unique(const std::vector<const ChunkPlan*>& batch) {
  std::vector<vid_t> u;
  size_t total = 0;
  for (const ChunkPlan* cp : batch) total += cp->nbr.size();
  u.reserve(total);
  for (const ChunkPlan* cp : batch) u.insert(u.end(), cp->nbr.begin(), cp->nbr.end());
  std::sort(u.begin(), u.end());
  u.erase(std::unique(u.begin(), u.end()), u.end());
  return u;
}

// 𝕅∪_j of the plan's batches, or (identity) of the partitioner's: batch j =
// chunk j of every partition. A batch of ascending sets (a right plan) is
// merged piece by piece of the id range, all batches' pieces in one loop.
Unions batch_unions(const Plan& plan, bool identity) {
  std::vector<std::vector<const ChunkPlan*>> batch(plan.n);
  int64_t entries = 0;
  for (int j = 0; j < plan.n; ++j)
    for (int i = 0; i < plan.m; ++i) {
      const ChunkPlan& cp = plan.step(j, i);
      batch[identity ? cp.chunk : j].push_back(&cp);
      entries += static_cast<int64_t>(cp.nbr.size());
    }
  std::vector<char> ascending(plan.n, 1);
  for (int j = 0; j < plan.n; ++j)
    for (const ChunkPlan* cp : batch[j])
      ascending[j] = ascending[j] &&
                     first_bad(static_cast<int64_t>(cp->nbr.size()) - 1,
                               [&](int64_t k) { return cp->nbr[k] >= cp->nbr[k + 1]; }) < 0;
  const int pieces = id_pieces(plan, entries);
  std::vector<std::vector<vid_t>> piece(static_cast<size_t>(plan.n) * pieces);
  const auto tasks = static_cast<int64_t>(piece.size());
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int j = static_cast<int>(t / pieces), k = static_cast<int>(t % pieces);
    if (!ascending[j]) {
      if (k == 0) piece[t] = sort_unique(batch[j]);
      continue;
    }
    std::vector<std::span<const vid_t>> lists;
    for (const ChunkPlan* cp : batch[j])
      lists.push_back(id_range(cp->nbr, piece_bound(plan, pieces, k), piece_bound(plan, pieces, k + 1)));
    piece[t] = merge_levels(std::move(lists));
  }
  // The pieces concatenated per batch, all of them copied in parallel into
  // pages faulted by all threads (V_p2p ids: one thread copied them all).
  Unions u(plan.n);
  std::vector<size_t> at(piece.size() + 1, 0);
  for (size_t t = 0; t < piece.size(); ++t) at[t + 1] = at[t] + piece[t].size();
  for (int j = 0; j < plan.n; ++j)
    resize_for_overwrite(u[j], at[static_cast<size_t>(j + 1) * pieces] - at[static_cast<size_t>(j) * pieces]);
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const size_t first = at[static_cast<size_t>(t / pieces) * pieces];
    std::copy(piece[t].begin(), piece[t].end(), u[t / pieces].begin() + static_cast<std::ptrdiff_t>(at[t] - first));
    std::vector<vid_t>().swap(piece[t]);
  }
  return u;
}

// Members of a (ascending) not in b (ascending): a merge walk.
int64_t count_not_in(std::span<const vid_t> a, std::span<const vid_t> b) {
  int64_t c = 0;
  size_t at = 0;
  for (vid_t v : a) {
    while (at < b.size() && b[at] < v) ++at;
    if (at == b.size() || b[at] != v) ++c;
  }
  return c;
}

// V_ru: the vertices of 𝕅∪_j not in 𝕅∪_j-1, per batch and piece of the id
// range (the unions are ascending), summed: the same for any piece count.
PlanVolumes volumes_of(const Plan& plan, const Unions& u) {
  PlanVolumes vol;
  int64_t entries = 0;
  for (const ChunkPlan& cp : plan.steps) vol.v_ori += static_cast<int64_t>(cp.nbr.size());
  for (const auto& x : u) entries += static_cast<int64_t>(x.size());
  const int pieces = id_pieces(plan, entries);
  int64_t p2p = 0, ru = 0;
  for (const auto& x : u) p2p += static_cast<int64_t>(x.size());
  const auto tasks = static_cast<int64_t>(plan.n) * pieces;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : ru) if (tasks > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int j = static_cast<int>(t / pieces), k = static_cast<int>(t % pieces);
    const int64_t lo = piece_bound(plan, pieces, k), hi = piece_bound(plan, pieces, k + 1);
    const std::span<const vid_t> cur = id_range(u[j], lo, hi);
    ru += j == 0 ? static_cast<int64_t>(cur.size()) : count_not_in(cur, id_range(u[j - 1], lo, hi));
  }
  vol.v_p2p = p2p;
  vol.v_ru = ru;
  return vol;
}

void check_volumes(const Plan& plan, const Unions& run, Problems& pr) {
  auto compare = [&](const PlanVolumes& got, const PlanVolumes& want, const char* which) {
    if (got.v_ori != want.v_ori || got.v_p2p != want.v_p2p || got.v_ru != want.v_ru)
      pr.add("{}: plan says V_ori {} V_p2p {} V_ru {}, recomputed {} {} {}", which, got.v_ori, got.v_p2p, got.v_ru,
             want.v_ori, want.v_p2p, want.v_ru);
  };
  compare(plan.volumes, volumes_of(plan, run), "volumes");
  compare(plan.volumes_before, volumes_of(plan, batch_unions(plan, true)), "volumes_before");
}

// ---------------------------------------------------------------------------
// Symbolic execution of the full comm mode, batch by batch; within a batch,
// loads, reads and flushes each run over blocks of every GPU's lists.
// ---------------------------------------------------------------------------

class CommEmulator {
 public:
  CommEmulator(const Plan& plan, const Unions& unions, Problems& pr) : plan_(plan), unions_(unions), pr_(pr) {}
  void run();

 private:
  bool in_union(int t, vid_t v) const { return t >= 0 && t < plan_.n && ((window_[v] >> (t % 3)) & 1) != 0; }
  void mark_union(int t, bool on);
  bool claimed_in(int i, uint32_t slot, int j) const {
    return (claim_[i][slot] >> 32) == static_cast<uint64_t>(j) + 1;
  }
  template <typename Size>
  std::vector<Block> gpu_blocks(int j, Size size) const {
    std::vector<int64_t> sizes;
    for (int i = 0; i < plan_.m; ++i) sizes.push_back(static_cast<int64_t>(size(plan_.step(j, i))));
    return blocks_of(sizes);
  }
  void check_transition_set(int j, int i, Found& f) const;
  void load(int j);
  bool remote_set_matches(int j, int i);
  void read(int j);
  void flush(int j);
  void check_capacities();

  const Plan& plan_;
  const Unions& unions_;                       // 𝕅∪_j recomputed
  Problems& pr_;
  std::vector<uint8_t> window_;                // per vertex: bit t % 3 = in 𝕅∪_t, t = j-1, j, j+1
  std::vector<std::vector<vid_t>> buf_;        // per GPU: slot -> vertex it holds
  std::vector<std::vector<uint64_t>> claim_;   // per GPU: slot -> (batch + 1) << 32 | last entry that claimed it
  std::vector<std::vector<uint64_t>> fclaim_;  // per GPU: slot -> (batch + 1) << 32 | ~(first flush naming it)
  std::vector<std::vector<uint8_t>> live_;     // per GPU: slot holds a gradient not yet flushed
  std::vector<uint8_t> expected_;              // per vertex: 1 while an expected remote row, 0 after
};

// Sets or clears the window bit of 𝕅∪_t (distinct vertices: distinct bytes).
void CommEmulator::mark_union(int t, bool on) {
  if (t < 0 || t >= plan_.n) return;
  const std::vector<vid_t>& u = unions_[t];
  const auto bit = static_cast<uint8_t>(1u << (t % 3));
  parallel_blocks(static_cast<int64_t>(u.size()), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k)
      window_[u[k]] = static_cast<uint8_t>(on ? window_[u[k]] | bit : window_[u[k]] & ~bit);
  });
}

void CommEmulator::run() {
  const int m = plan_.m, n = plan_.n;
  window_.assign(static_cast<size_t>(plan_.num_vertices), 0);
  expected_.assign(static_cast<size_t>(plan_.num_vertices), 0);
  mark_union(0, true);
  mark_union(1, true);
  buf_.resize(m);
  claim_.resize(m);
  fclaim_.resize(m);
  live_.resize(m);
  // Slot arrays of 21 bytes per slot: fresh pages faulted by all threads
  // (a serial assign faulted a friendster-like plan's ~1.5 GB from one).
  for (int i = 0; i < m; ++i) {
    const size_t slots = plan_.trans_capacity[i];
    resize_for_overwrite(buf_[i], slots);
    parallel_blocks(static_cast<int64_t>(slots), [&](int64_t b, int64_t e) {
      std::fill(buf_[i].begin() + b, buf_[i].begin() + e, kEmpty);
    });
    resize_for_overwrite(claim_[i], slots);
    resize_for_overwrite(fclaim_[i], slots);
    resize_for_overwrite(live_[i], slots);
  }
  for (int j = 0; j < n; ++j) {
    load(j);   // host -> GPU (or kept in place)
    read(j);   // aggregation reads (local and P2P)
    flush(j);  // gradients leaving the GPU
    mark_union(j - 1, false);  // the window moves to j, j+1, j+2 (the bit of j-1 is the bit of j+2)
    mark_union(j + 2, true);
  }
  check_capacities();
}

// 𝕅_ij = the vertices of partition i in 𝕅∪_j: one piece of the ascending union.
void CommEmulator::check_transition_set(int j, int i, Found& f) const {
  const ChunkPlan& cp = plan_.step(j, i);
  const std::vector<vid_t>& u = unions_[j];
  auto at = [&](int64_t x) {
    return std::lower_bound(u.begin(), u.end(), x, [](vid_t v, int64_t y) { return static_cast<int64_t>(v) < y; });
  };
  const auto lo = at(plan_.part_offsets[i]), hi = at(plan_.part_offsets[i + 1]);
  const auto expected = static_cast<int64_t>(hi - lo), got = static_cast<int64_t>(cp.trans_vid.size());
  const int64_t common = std::min(expected, got);
  const int64_t diff = first_bad(common, [&](int64_t k) { return cp.trans_vid[k] != lo[k]; });
  if (diff >= 0 || expected != got)
    f.add("batch {}, GPU {}: transition set has {} vertices, expected {} (first difference at position {})", j, i, got,
          expected, diff >= 0 ? diff : common);
}

void CommEmulator::load(int j) {
  const int m = plan_.m;
  std::vector<Found> sets(m, pr_.collector());
  for (int i = 0; i < m; ++i) check_transition_set(j, i, sets[i]);
  const auto blocks = gpu_blocks(j, [](const ChunkPlan& cp) { return cp.trans_vid.size(); });
  const uint64_t stamp = (static_cast<uint64_t>(j) + 1) << 32;
  // Claims: a slot goes to the last entry of the batch that names it.
  for_blocks(blocks, [&](const Block& b) {
    const ChunkPlan& cp = plan_.step(j, static_cast<int>(b.unit));
    for (int64_t k = b.begin; k < b.end; ++k)
      atomic_max(claim_[b.unit][cp.trans_slot[k]], stamp | static_cast<uint64_t>(k));
  });
  // Checks against the buffers as batch j-1 left them.
  const auto found = run_blocks(blocks, pr_, [&](const Block& b, Found& f) {
    const int i = static_cast<int>(b.unit);
    const ChunkPlan& cp = plan_.step(j, i);
    for (int64_t k = b.begin; k < b.end; ++k) {
      const vid_t v = cp.trans_vid[k];
      const uint32_t slot = cp.trans_slot[k];
      const bool reused = cp.trans_reused[k] != 0;
      if (claim_[i][slot] != (stamp | static_cast<uint64_t>(k)))
        f.add("batch {}, GPU {}: slot {} is given to two vertices", j, i, slot);
      if (reused != in_union(j - 1, v))
        f.add("batch {}, GPU {}: vertex {} has reused = {} but it {} in the previous batch", j, i, v, int{reused},
              in_union(j - 1, v) ? "was" : "was not");
      if (reused) {
        if (buf_[i][slot] != v)
          f.add("batch {}, GPU {}: reused slot {} holds vertex {}, not {}", j, i, slot,
                buf_[i][slot] == kEmpty ? -1 : int64_t{buf_[i][slot]}, v);
        if (!live_[i][slot]) f.add("batch {}, GPU {}: reused vertex {} had its gradient flushed already", j, i, v);
      } else if (live_[i][slot]) {
        // A stale copy may be overwritten, a gradient not yet flushed may not.
        f.add("batch {}, GPU {}: loading vertex {} into slot {} overwrites vertex {} whose gradient was not flushed",
              j, i, v, slot, buf_[i][slot]);
      }
    }
  });
  // The claiming entries fill their slots; the vertex's gradient accumulates
  // there from now on.
  for_blocks(blocks, [&](const Block& b) {
    const int i = static_cast<int>(b.unit);
    const ChunkPlan& cp = plan_.step(j, i);
    for (int64_t k = b.begin; k < b.end; ++k) {
      const uint32_t slot = cp.trans_slot[k];
      if (claim_[i][slot] != (stamp | static_cast<uint64_t>(k))) continue;
      if (!cp.trans_reused[k]) buf_[i][slot] = cp.trans_vid[k];
      live_[i][slot] = 1;
    }
  });
  for (int i = 0; i < m; ++i) {
    pr_.merge(sets[i]);
    merge_unit(pr_, blocks, found, i);
  }
}

// The remote rows are exactly the neighbors owned by other GPUs.
bool CommEmulator::remote_set_matches(int j, int i) {
  const ChunkPlan& cp = plan_.step(j, i);
  // The members of nbr owned by other GPUs, in nbr's order: counted and
  // copied in parallel blocks (one loop per step, GPU after GPU, was a
  // serial pass over all of V_ori: 441 M owner lookups on friendster-like).
  const auto size = static_cast<int64_t>(cp.nbr.size());
  const int64_t g = grain(), nblocks = (size + g - 1) / g;
  std::vector<int64_t> at(static_cast<size_t>(nblocks) + 1, 0);
#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (int64_t b = 0; b < nblocks; ++b) {
    int64_t c = 0;
    for (int64_t x = b * g; x < std::min(size, (b + 1) * g); ++x) c += owner(plan_, cp.nbr[x]) != i ? 1 : 0;
    at[b + 1] = c;
  }
  for (int64_t b = 0; b < nblocks; ++b) at[b + 1] += at[b];
  std::vector<vid_t> expect(static_cast<size_t>(at[nblocks]));
#pragma omp parallel for schedule(static) if (nblocks > 1)
  for (int64_t b = 0; b < nblocks; ++b) {
    int64_t k = at[b];
    for (int64_t x = b * g; x < std::min(size, (b + 1) * g); ++x)
      if (owner(plan_, cp.nbr[x]) != i) expect[k++] = cp.nbr[x];
  }
  if (expect.size() != cp.remote_vid.size()) return false;
  const auto strictly_ascending = [](const std::vector<vid_t>& v) {
    return first_bad(static_cast<int64_t>(v.size()) - 1, [&](int64_t k) { return v[k] >= v[k + 1]; }) < 0;
  };
  if (!strictly_ascending(expect)) {
    // A broken neighbor list (the topology check names it): compare as lists.
    std::vector<vid_t> got = cp.remote_vid;
    std::sort(got.begin(), got.end());
    return got == expect;
  }
  // Every row is an expected vertex, none twice: a permutation. Each row
  // takes its vertex's mark (a byte per vertex: a binary search over the
  // expected set per row was a fifth of the check); the marks left are
  // cleared after.
  const auto expected = static_cast<int64_t>(expect.size());
  parallel_blocks(expected, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) expected_[expect[k]] = 1;
  });
  const bool permutation =
      first_bad(static_cast<int64_t>(cp.remote_vid.size()), [&](int64_t r) {
        const vid_t v = cp.remote_vid[r];
        return v >= expected_.size() ||
               std::atomic_ref<uint8_t>(expected_[v]).exchange(0, std::memory_order_relaxed) != 1;
      }) < 0;
  parallel_blocks(expected, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) expected_[expect[k]] = 0;
  });
  return permutation;
}

void CommEmulator::read(int j) {
  const int m = plan_.m;
  std::vector<char> set_ok(m, 1);
  for (int i = 0; i < m; ++i) set_ok[i] = remote_set_matches(j, i) ? 1 : 0;
  const auto rows = gpu_blocks(j, [](const ChunkPlan& cp) { return cp.remote_vid.size(); });
  const auto row_found = run_blocks(rows, pr_, [&](const Block& b, Found& f) {
    const int i = static_cast<int>(b.unit);
    const ChunkPlan& cp = plan_.step(j, i);
    for (int64_t r = b.begin; r < b.end; ++r) {
      const int k = cp.remote_gpu[r];
      const uint32_t slot = cp.remote_slot[r];
      if (r > 0 && std::tie(cp.remote_gpu[r - 1], cp.remote_slot[r - 1]) >= std::tie(cp.remote_gpu[r], slot))
        f.add("batch {}, GPU {}: remote rows not ordered by (gpu, slot) at row {}", j, i, r);
      if (k == i || owner(plan_, cp.remote_vid[r]) != k)
        f.add("batch {}, GPU {}: remote row {} reads vertex {} from GPU {}, which does not own it", j, i, r,
              cp.remote_vid[r], k);
      if (buf_[k][slot] != cp.remote_vid[r] || !claimed_in(k, slot, j))
        f.add("batch {}, GPU {}: remote row {} expects vertex {} in GPU {}'s slot {}, which does not hold it now", j,
              i, r, cp.remote_vid[r], k, slot);
    }
  });
  // Aggregation reads: the first edge per step that misses its source.
  const auto edges = gpu_blocks(j, [](const ChunkPlan& cp) { return cp.src_vid.size(); });
  std::vector<int64_t> bad(edges.size(), std::numeric_limits<int64_t>::max());
  const auto nedges = static_cast<int64_t>(edges.size());
#pragma omp parallel for schedule(dynamic, 1) if (nedges > 1)
  for (int64_t t = 0; t < nedges; ++t) {
    const int i = static_cast<int>(edges[t].unit);
    const ChunkPlan& cp = plan_.step(j, i);
    const uint32_t base = plan_.trans_capacity[i];
    for (int64_t e = edges[t].begin; e < edges[t].end; ++e) {
      const vid_t v = cp.src_vid[e];
      const uint32_t x = cp.src_merged[e];
      const bool ok = x < base ? buf_[i][x] == v && claimed_in(i, x, j)
                               : x - base < cp.remote_vid.size() && cp.remote_vid[x - base] == v;
      if (!ok) {
        bad[t] = e;
        break;
      }
    }
  }
  for (int i = 0; i < m; ++i) {
    const ChunkPlan& cp = plan_.step(j, i);
    if (!set_ok[i])
      pr_.add("batch {}, GPU {}: remote rows are not the neighbors owned by other GPUs ({} rows)", j, i,
              cp.remote_vid.size());
    merge_unit(pr_, rows, row_found, i);
    int64_t e = std::numeric_limits<int64_t>::max();
    for (size_t t = 0; t < edges.size(); ++t)
      if (edges[t].unit == i) e = std::min(e, bad[t]);
    if (e != std::numeric_limits<int64_t>::max())
      pr_.add("batch {}, GPU {}: edge {} reads merged row {} but its source {} is not there", j, i, e,
              cp.src_merged[e], cp.src_vid[e]);
  }
}

void CommEmulator::flush(int j) {
  const int m = plan_.m;
  const auto blocks = gpu_blocks(j, [](const ChunkPlan& cp) { return cp.flush_slot.size(); });
  const uint64_t stamp = (static_cast<uint64_t>(j) + 1) << 32;
  // A slot named twice is flushed by its first entry.
  for_blocks(blocks, [&](const Block& b) {
    const ChunkPlan& cp = plan_.step(j, static_cast<int>(b.unit));
    for (int64_t k = b.begin; k < b.end; ++k)
      atomic_max(fclaim_[b.unit][cp.flush_slot[k]], stamp | (UINT32_MAX - static_cast<uint64_t>(k)));
  });
  const auto found = run_blocks(blocks, pr_, [&](const Block& b, Found& f) {
    const int i = static_cast<int>(b.unit);
    const ChunkPlan& cp = plan_.step(j, i);
    for (int64_t k = b.begin; k < b.end; ++k) {
      const uint32_t slot = cp.flush_slot[k];
      const vid_t v = cp.flush_vid[k];
      if (k > 0 && cp.flush_slot[k - 1] >= slot)
        f.add("batch {}, GPU {}: flush slots not strictly ascending at {}", j, i, k);
      if (buf_[i][slot] != v || !claimed_in(i, slot, j))
        f.add("batch {}, GPU {}: flush of vertex {} from slot {}, which does not hold it", j, i, v, slot);
      if (!live_[i][slot] || fclaim_[i][slot] != (stamp | (UINT32_MAX - static_cast<uint64_t>(k))))
        f.add("batch {}, GPU {}: gradient of vertex {} flushed twice", j, i, v);
    }
  });
  for_blocks(blocks, [&](const Block& b) {
    const ChunkPlan& cp = plan_.step(j, static_cast<int>(b.unit));
    for (int64_t k = b.begin; k < b.end; ++k) {
      const uint32_t slot = cp.flush_slot[k];
      if (fclaim_[b.unit][slot] == (stamp | (UINT32_MAX - static_cast<uint64_t>(k)))) live_[b.unit][slot] = 0;
    }
  });
  // Each vertex's gradient is flushed exactly when it leaves the GPU.
  const auto entries = gpu_blocks(j, [](const ChunkPlan& cp) { return cp.trans_vid.size(); });
  const auto kept = run_blocks(entries, pr_, [&](const Block& b, Found& f) {
    const int i = static_cast<int>(b.unit);
    const ChunkPlan& cp = plan_.step(j, i);
    for (int64_t k = b.begin; k < b.end; ++k) {
      const vid_t v = cp.trans_vid[k];
      const bool stays = in_union(j + 1, v) && owner(plan_, v) == i, live = live_[i][cp.trans_slot[k]];
      if (stays && !live)
        f.add("batch {}, GPU {}: gradient of vertex {} flushed although it stays for batch {} (reaches the host "
              "twice)",
              j, i, v, j + 1);
      if (!stays && live) f.add("batch {}, GPU {}: gradient of vertex {} is never flushed", j, i, v);
    }
  });
  for (int i = 0; i < m; ++i) {
    merge_unit(pr_, blocks, found, i);
    merge_unit(pr_, entries, kept, i);
  }
}

void CommEmulator::check_capacities() {
  for (int i = 0; i < plan_.m; ++i) {
    size_t trans = 0, remote = 0, nbr = 0;
    int64_t dst = 0, edges = 0;
    for (int j = 0; j < plan_.n; ++j) {
      const ChunkPlan& cp = plan_.step(j, i);
      trans = std::max(trans, cp.trans_vid.size());
      remote = std::max(remote, cp.remote_vid.size());
      nbr = std::max(nbr, cp.nbr.size());
      dst = std::max(dst, cp.num_dst());
      edges = std::max(edges, cp.num_edges());
    }
    if (plan_.trans_capacity[i] != trans || plan_.remote_capacity[i] != remote || plan_.nbr_capacity[i] != nbr ||
        plan_.max_dst[i] != dst || plan_.max_edges[i] != edges)
      pr_.add("GPU {}: capacities (transition {}, remote {}, neighbors {}, dst {}, edges {}) are not the maxima "
              "({}, {}, {}, {}, {})",
              i, plan_.trans_capacity[i], plan_.remote_capacity[i], plan_.nbr_capacity[i], plan_.max_dst[i],
              plan_.max_edges[i], trans, remote, nbr, dst, edges);
  }
}

void check_communication(const Plan& plan, Problems& pr) {
  Timer t;
  const Unions unions = batch_unions(plan, false);
  const double union_seconds = t.seconds();
  CommEmulator(plan, unions, pr).run();
  const double emulation_seconds = t.seconds() - union_seconds;
  check_volumes(plan, unions, pr);
  log::debug("plan check: batch unions {:.2f} s, emulation {:.2f} s, volumes {:.2f} s", union_seconds,
             emulation_seconds, t.seconds() - union_seconds - emulation_seconds);
}

}  // namespace

std::vector<std::string> check_plan_comm(const Plan& plan, size_t max_problems) {
  Problems pr(max_problems);
  if (!check_structure(plan, pr)) return pr.result();
  check_communication(plan, pr);
  return pr.result();
}

std::vector<std::string> check_plan(const Plan& plan, const GraphView& g_new, const Partition& p,
                                    size_t max_problems) {
  Problems pr(max_problems);
  Timer t;
  if (!check_structure(plan, pr)) return pr.result();
  check_against_partition(plan, p, pr);
  if (pr.any()) return pr.result();
  const double structure = t.seconds();
  check_topology(plan, g_new, pr);
  const double topology = t.seconds() - structure;
  check_communication(plan, pr);
  log::debug("plan check: structure {:.2f} s, topology {:.2f} s, communication and volumes {:.2f} s", structure,
             topology, t.seconds() - structure - topology);
  return pr.result();
}

void verify_plan(const Plan& plan, const GraphView& g_new, const Partition& p) {
  const auto problems = check_plan(plan, g_new, p);
  if (problems.empty()) return;
  std::string msg = fmt::format("plan check failed ({} problem(s) shown):", problems.size());
  for (const auto& s : problems) msg += "\n  " + s;
  throw Error(msg);
}

}  // namespace ht
