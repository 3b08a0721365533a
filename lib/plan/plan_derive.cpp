#include "plan/plan_derive.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/radix_sort.hpp"
#include "core/log.hpp"
#include "core/thread_teams.hpp"
#include "core/timer.hpp"

namespace ht {
namespace {

int64_t grain() { return static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1)); }

// Every step's edges but those of the steps `skip(s)` leaves out, in blocks of
// grain() edges, step after step, each step's in edge order: one edge loop
// over all steps (a loop per step kept at most m * n threads busy, issue 33).
struct EdgeBlock {
  size_t step;
  int64_t begin, end;
};
template <typename Skip>
std::vector<EdgeBlock> edge_blocks(const Plan& plan, Skip skip) {
  std::vector<EdgeBlock> blocks;
  const int64_t g = grain();
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (skip(s)) continue;
    const auto e = static_cast<int64_t>(plan.steps[s].src_local.size());
    for (int64_t b = 0; b < e; b += g) blocks.push_back({s, b, std::min(e, b + g)});
  }
  return blocks;
}

// Sorts of up to tens of millions of keys (a step's flush list, its remote
// rows per owner), each run by one thread: radix sorts (as comparison sorts
// they were the longest tasks of "plan derived" at friendster size, issue
// 33). (Tests shrink the grain: the counting passes on tiny plans.)
void sort_keys(std::vector<uint64_t>& keys) { radix_sort(keys, static_cast<size_t>(grain())); }

std::string where(const Plan& plan, size_t s) {
  return fmt::format("step {} (batch {}, GPU {})", s, s / static_cast<size_t>(plan.m), s % static_cast<size_t>(plan.m));
}

// First index >= from whose element is >= v in an ascending list: doubling
// steps, then a binary search, so O(log distance). Walks over two ascending
// lists (a neighbor set inside its owner's much larger transition set) cost
// the shorter list's length times a logarithm, not the longer one's length.
size_t gallop(std::span<const vid_t> list, size_t from, vid_t v) {
  size_t lo = from, hi = from, step = 1;
  while (hi < list.size() && list[hi] < v) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = std::min(hi, list.size());
  return static_cast<size_t>(std::lower_bound(list.begin() + static_cast<std::ptrdiff_t>(lo),
                                              list.begin() + static_cast<std::ptrdiff_t>(hi), v) -
                             list.begin());
}

// Position of the first id >= x in an ascending list (x may be N, past every id).
size_t first_at_least(std::span<const vid_t> list, size_t from, int64_t x) {
  return static_cast<size_t>(std::lower_bound(list.begin() + static_cast<std::ptrdiff_t>(from), list.end(), x,
                                              [](vid_t v, int64_t y) { return static_cast<int64_t>(v) < y; }) -
                             list.begin());
}

// The transition set and slots of the step before on the same GPU (none in batch 0).
std::span<const vid_t> vids_before(const Plan& plan, size_t s) {
  return s >= static_cast<size_t>(plan.m) ? std::span<const vid_t>(plan.steps[s - plan.m].trans_vid)
                                          : std::span<const vid_t>();
}

std::span<const uint32_t> slots_before(const Plan& plan, size_t s) {
  return s >= static_cast<size_t>(plan.m) ? std::span<const uint32_t>(plan.steps[s - plan.m].trans_slot)
                                          : std::span<const uint32_t>();
}

// What read_plan requires of a step's stored lists before it derives.
// In parallel blocks of the step's lists: one task per step kept 32 of 64
// cores busy (m = 4 x n = 8) over a friendster-like plan's 2.5 B edges.
bool stored_lists_valid(const Plan& plan, const ChunkPlan& cp) {
  const auto nv = static_cast<uint64_t>(plan.num_vertices);
  if (first_bad(static_cast<int64_t>(cp.nbr.size()), [&](int64_t x) {
        return cp.nbr[x] >= nv || (x > 0 && cp.nbr[x - 1] >= cp.nbr[x]);
      }) >= 0)
    return false;
  return first_bad(static_cast<int64_t>(cp.src_local.size()),
                   [&](int64_t e) { return cp.src_local[e] >= cp.nbr.size(); }) < 0;
}

// Step s's own lists but its edges' against their derivation, given the
// capacity its GPU's earlier batches used (`base` of the merged rows at the
// end); "" when equal. `merged` receives the derived merged row of each
// member of nbr, for edge_mismatch.
std::string step_mismatch(const Plan& plan, size_t s, int64_t capacity, uint32_t base,
                          std::vector<uint32_t>& merged) {
  const ChunkPlan& cp = plan.steps[s];
  if (cp.trans_vid != transition_set(plan, s))
    return fmt::format("{}: trans_vid is not the vertices of partition {} that batch {} needs", where(plan, s),
                       cp.part, s / static_cast<size_t>(plan.m));
  std::vector<uint32_t> slot;
  std::vector<uint8_t> reused;
  if (step_slots(vids_before(plan, s), slots_before(plan, s), cp.trans_vid, capacity, slot, reused) < 0 ||
      slot != cp.trans_slot || reused != cp.trans_reused)
    return fmt::format("{}: trans_slot / trans_reused do not follow the slot rule", where(plan, s));
  RemoteRows rows;
  if (!derive_remote_rows(plan, s, base, rows) || rows.vid != cp.remote_vid || rows.gpu != cp.remote_gpu ||
      rows.slot != cp.remote_slot)
    return fmt::format("{}: remote rows are not the neighbors owned by other GPUs, by (GPU, slot)", where(plan, s));
  std::vector<uint32_t> flush_slot;
  std::vector<vid_t> flush_vid;
  derive_flushes(plan, s, flush_slot, flush_vid);
  if (flush_slot != cp.flush_slot || flush_vid != cp.flush_vid)
    return fmt::format("{}: flush lists are not the slots whose vertex leaves after the batch", where(plan, s));
  merged = std::move(rows.merged);
  return "";
}

// Edges [begin, end) of step s against src_vid and src_merged derived
// through src_local; the first that differs, or "".
std::string edge_mismatch(const Plan& plan, size_t s, const std::vector<uint32_t>& merged, int64_t begin,
                          int64_t end) {
  const ChunkPlan& cp = plan.steps[s];
  for (int64_t e = begin; e < end; ++e) {
    const uint32_t x = cp.src_local[e];
    if (cp.src_vid[e] != cp.nbr[x] || cp.src_merged[e] != merged[x])
      return fmt::format("{}: edge {} has src_vid {} and src_merged {}, derived {} and {}", where(plan, s), e,
                         cp.src_vid[e], cp.src_merged[e], cp.nbr[x], merged[x]);
  }
  return "";
}

}  // namespace

StepCounts counts_of(const ChunkPlan& cp) {
  int64_t reused = 0;
  for (uint8_t r : cp.trans_reused) reused += r ? 1 : 0;
  return {static_cast<int64_t>(cp.trans_vid.size()), reused, static_cast<int64_t>(cp.remote_vid.size()),
          static_cast<int64_t>(cp.flush_slot.size())};
}

std::vector<vid_t> transition_set(const Plan& plan, size_t s) {
  const size_t m = static_cast<size_t>(plan.m), first = s - s % m;
  const int i = static_cast<int>(s % m);
  const int64_t lo = plan.part_offsets[i], hi = plan.part_offsets[i + 1];
  // N_kj ∩ partition i is one contiguous piece of each ascending N_kj.
  std::vector<std::span<const vid_t>> pieces;
  for (size_t k = 0; k < m; ++k) {
    const std::span<const vid_t> nbr(plan.steps[first + k].nbr);
    const size_t a = first_at_least(nbr, 0, lo), b = first_at_least(nbr, a, hi);
    if (b > a) pieces.push_back(nbr.subspan(a, b - a));
  }
  std::vector<vid_t> out, acc;
  if (pieces.empty()) return out;
  // All pieces but the last merged into `acc`; the last merge writes the
  // result, sized exactly, into fresh storage (huge pages when large: this
  // is the plan's own vector).
  for (size_t k = 0; k + 1 < pieces.size(); ++k) {
    std::vector<vid_t> tmp;
    tmp.reserve(acc.size() + pieces[k].size());
    std::set_union(acc.begin(), acc.end(), pieces[k].begin(), pieces[k].end(), std::back_inserter(tmp));
    acc.swap(tmp);
  }
  const std::span<const vid_t> last = pieces.back();
  size_t count = 0;
  for (size_t a = 0, b = 0; a < acc.size() || b < last.size(); ++count) {
    if (b == last.size() || (a < acc.size() && acc[a] < last[b])) {
      ++a;
    } else if (a == acc.size() || last[b] < acc[a]) {
      ++b;
    } else {
      ++a;
      ++b;
    }
  }
  resize_for_overwrite(out, count);
  std::set_union(acc.begin(), acc.end(), last.begin(), last.end(), out.begin());
  return out;
}

int64_t step_slots(std::span<const vid_t> prev_vid, std::span<const uint32_t> prev_slot, std::span<const vid_t> vid,
                   int64_t capacity, std::vector<uint32_t>& slot, std::vector<uint8_t>& reused, int64_t* kept) {
  const auto count = static_cast<int64_t>(vid.size());
  resize_for_overwrite(slot, vid.size());
  resize_for_overwrite(reused, vid.size());
  const int64_t g = grain();
  const int64_t blocks = (count + g - 1) / g;
  // 1. Reuse, block by block: each block walks 𝕅_i,j-1 from its first
  //    vertex's place there. fresh[b + 1] = new vertices in block b.
  std::vector<int64_t> fresh(static_cast<size_t>(blocks) + 1, 0);
  std::vector<uint8_t> taken(static_cast<size_t>(capacity), 0);
  bool ok = true;
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : ok) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t begin = b * g, end = std::min(count, begin + g);
    size_t a = 0;
    int64_t fresh_here = 0;
    for (int64_t k = begin; k < end; ++k) {
      a = gallop(prev_vid, a, vid[k]);
      const bool keep = a < prev_vid.size() && prev_vid[a] == vid[k];
      reused[k] = keep ? 1 : 0;
      if (!keep) {
        ++fresh_here;
        continue;
      }
      const uint32_t s = prev_slot[a];
      if (s >= capacity) {
        ok = false;
        continue;
      }
      slot[k] = s;
      // Distinct vertices hold distinct slots in a consistent plan; the
      // atomic store keeps an inconsistent one (write_plan's check) defined.
      std::atomic_ref<uint8_t>(taken[s]).store(1, std::memory_order_relaxed);
    }
    fresh[b + 1] = fresh_here;
  }
  if (!ok) return -1;
  for (int64_t b = 0; b < blocks; ++b) fresh[b + 1] += fresh[b];
  const int64_t added = fresh[blocks];
  if (kept) *kept = count - added;

  // 2. The free slots below `capacity`, ascending (compacted block by block).
  const int64_t cap_blocks = (capacity + g - 1) / g;
  std::vector<int64_t> free_at(static_cast<size_t>(cap_blocks) + 1, 0);
#pragma omp parallel for schedule(static) if (cap_blocks > 1)
  for (int64_t b = 0; b < cap_blocks; ++b) {
    const int64_t end = std::min(capacity, (b + 1) * g);
    int64_t c = 0;
    for (int64_t x = b * g; x < end; ++x) c += taken[x] ? 0 : 1;
    free_at[b + 1] = c;
  }
  for (int64_t b = 0; b < cap_blocks; ++b) free_at[b + 1] += free_at[b];
  const int64_t num_free = free_at[cap_blocks];
  std::vector<uint32_t> free_slots(static_cast<size_t>(std::min(num_free, added)));
  if (!free_slots.empty()) {
#pragma omp parallel for schedule(static) if (cap_blocks > 1)
    for (int64_t b = 0; b < cap_blocks; ++b) {
      int64_t at = free_at[b];
      const int64_t end = std::min(capacity, (b + 1) * g);
      for (int64_t x = b * g; x < end && at < static_cast<int64_t>(free_slots.size()); ++x)
        if (!taken[x]) free_slots[at++] = static_cast<uint32_t>(x);
    }
  }

  // 3. The r-th new vertex (ascending id) takes the r-th free slot, or
  //    never-used slots past `capacity` once the free ones are gone.
#pragma omp parallel for schedule(dynamic, 1) if (blocks > 1)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t r = fresh[b];
    const int64_t end = std::min(count, (b + 1) * g);
    for (int64_t k = b * g; k < end; ++k) {
      if (reused[k]) continue;
      slot[k] = static_cast<uint32_t>(r < num_free ? free_slots[r] : capacity + (r - num_free));
      ++r;
    }
  }
  return std::max(capacity, capacity + added - num_free);
}

namespace {

// Step s's neighbors owned by GPU k: one contiguous piece of its ascending
// nbr, each in k's transition set of the batch (false when one is not).
// The step's own GPU's get their merged row, the owner's slot, in `merged`;
// another's are listed as (owner's slot, position in nbr), ascending: that
// GPU's part of the remote rows, in merged-buffer order (each a key
// slot << 32 | position).
bool remote_piece(const Plan& plan, size_t s, size_t k, std::vector<uint32_t>& merged, std::vector<uint64_t>& rows) {
  const ChunkPlan& cp = plan.steps[s];
  const size_t m = static_cast<size_t>(plan.m), first = s - s % m;
  const std::span<const vid_t> nbr(cp.nbr);
  const size_t x0 = first_at_least(nbr, 0, plan.part_offsets[k]), x1 = first_at_least(nbr, x0, plan.part_offsets[k + 1]);
  const ChunkPlan& owner = plan.steps[first + k];
  const std::span<const vid_t> held(owner.trans_vid);
  const bool own = k == s % m;
  rows.clear();
  for (size_t a = 0, x = x0; x < x1; ++x) {
    a = gallop(held, a, nbr[x]);
    if (a == held.size() || held[a] != nbr[x]) return false;
    if (own) merged[x] = owner.trans_slot[a];
    else rows.push_back(uint64_t{owner.trans_slot[a]} << 32 | static_cast<uint32_t>(x));
  }
  sort_keys(rows);
  return true;
}

// The remote rows of step s from its GPUs' pieces (remote_piece, by GPU):
// GPU by GPU, each in slot order, from merged row `base` on.
void gather_remote_rows(const Plan& plan, size_t s, uint32_t base, std::span<const std::vector<uint64_t>> pieces,
                        RemoteRows& out) {
  const std::span<const vid_t> nbr(plan.steps[s].nbr);
  size_t total = 0;
  for (const auto& p : pieces) total += p.size();
  resize_for_overwrite(out.vid, total);
  resize_for_overwrite(out.gpu, total);
  resize_for_overwrite(out.slot, total);
  size_t r = 0;
  for (size_t k = 0; k < pieces.size(); ++k)
    for (const uint64_t row : pieces[k]) {
      const auto slot = static_cast<uint32_t>(row >> 32), at = static_cast<uint32_t>(row);
      out.merged[at] = base + static_cast<uint32_t>(r);
      out.vid[r] = nbr[at];
      out.gpu[r] = static_cast<int32_t>(k);
      out.slot[r] = slot;
      ++r;
    }
}

// Every neighbor of step s is some GPU's (ids below N).
bool neighbors_owned(const Plan& plan, size_t s) {
  const std::span<const vid_t> nbr(plan.steps[s].nbr);
  return first_at_least(nbr, 0, plan.part_offsets[static_cast<size_t>(plan.m)]) == nbr.size();
}

// A neighbor's id and merged row in one word (id low, row high): the edge
// loop reads one array at a random place per edge instead of two (nbr and
// the merged rows: two cache misses per edge at friendster size).
uint64_t id_and_row(vid_t id, uint32_t row) { return uint64_t{row} << 32 | id; }

// Merged rows of step s's own neighbors at positions [x0, x1) of nbr (all
// owned by the step's GPU): each its slot in the step's transition set, as
// remote_piece's own piece (false when one is not in the set), with the
// neighbor's id (id_and_row). Blocks of a
// piece are independent: with one GPU a step's only piece is its whole
// neighbor list, and a task per piece kept n of the cores busy (issue 33).
bool own_rows(const Plan& plan, size_t s, size_t x0, size_t x1, std::vector<uint64_t>& merged) {
  const ChunkPlan& cp = plan.steps[s];
  const std::span<const vid_t> held(cp.trans_vid);
  size_t a = 0;
  for (size_t x = x0; x < x1; ++x) {
    a = gallop(held, a, cp.nbr[x]);
    if (a == held.size() || held[a] != cp.nbr[x]) return false;
    merged[x] = id_and_row(cp.nbr[x], cp.trans_slot[a]);
  }
  return true;
}

// What remote_rows_and_flushes gives, by sorts: a task per step and other
// GPU (its piece sorted, remote_piece), then a task per step (its rows in
// order, derive_flushes). No slot maps (fresh memory, m (m + 1) times a
// GPU's capacity): the better choice when the tasks outnumber the threads.
void remote_rows_and_flushes_by_sorts(Plan& plan, std::vector<std::vector<uint64_t>>& merged,
                                      std::vector<char>& found) {
  const size_t m = static_cast<size_t>(plan.m), steps = plan.steps.size();
  std::vector<std::vector<uint64_t>> pieces(steps * m);
  std::vector<char> held(steps * m, 1);
  std::vector<uint32_t> unused;  // (remote_piece writes own rows only, and k is never the step's own GPU)
  const auto tasks = static_cast<int64_t>(steps * m);
#pragma omp parallel for schedule(dynamic, 1) if (tasks > 1)
  for (int64_t q = 0; q < tasks; ++q) {
    const size_t s = static_cast<size_t>(q) / m, k = static_cast<size_t>(q) % m;
    if (k != s % m) held[q] = remote_piece(plan, s, k, unused, pieces[q]) ? 1 : 0;
  }
  const auto nsteps = static_cast<int64_t>(steps);
#pragma omp parallel for schedule(dynamic, 1) if (nsteps > 1)
  for (int64_t s = 0; s < nsteps; ++s) {
    ChunkPlan& cp = plan.steps[s];
    const size_t at = static_cast<size_t>(s) * m;
    const bool ok = found[s] &&
                    std::all_of(held.begin() + static_cast<std::ptrdiff_t>(at),
                                held.begin() + static_cast<std::ptrdiff_t>(at + m), [](char h) { return h != 0; }) &&
                    neighbors_owned(plan, static_cast<size_t>(s));
    found[s] = ok ? 1 : 0;
    size_t rows = 0;
    if (ok)
      for (size_t k = 0; k < m; ++k) rows += pieces[at + k].size();
    resize_for_overwrite(cp.remote_vid, rows);
    resize_for_overwrite(cp.remote_gpu, rows);
    resize_for_overwrite(cp.remote_slot, rows);
    const uint32_t base = plan.trans_capacity[s % plan.m];
    size_t r = 0;
    for (size_t k = 0; k < m && ok; ++k)
      for (const uint64_t key : pieces[at + k]) {
        const auto slot = static_cast<uint32_t>(key >> 32), x = static_cast<uint32_t>(key);
        merged[s][x] = id_and_row(cp.nbr[x], base + static_cast<uint32_t>(r));
        cp.remote_vid[r] = cp.nbr[x];
        cp.remote_gpu[r] = static_cast<int32_t>(k);
        cp.remote_slot[r] = slot;
        ++r;
      }
    for (size_t k = 0; k < m; ++k) std::vector<uint64_t>().swap(pieces[at + k]);
    derive_flushes(plan, static_cast<size_t>(s), cp.flush_slot, cp.flush_vid);
  }
}

// The remote rows and flush lists of every step, as derive_remote_rows and
// derive_flushes give them (the merged rows of the steps' other GPUs'
// neighbors into `merged`), a batch at a time by all threads, without sorts:
// - a step's neighbors in another GPU's piece are found in that GPU's
//   transition set in blocks and marked in a map of the owner's slots (one
//   per step of the batch and owner), then the maps are read in (GPU, slot)
//   order in blocks: the remote rows in merged-buffer order;
// - a step's vertices that leave after its batch are marked in blocks in a
//   map of its GPU's slots, read in slot order in blocks: its flush list.
// Slots of a transition set are distinct and below its GPU's capacity, so
// map order is the sorted order. A task per piece and per step, each a
// serial sort, kept n of the cores busy with one GPU and left the largest
// sort the critical path at m 4 x n 8 (issue 33); three parallel loops per
// batch (not per step: each loop's barrier costs a time slice when the
// threads share their cores). found[s] becomes false for a step with a
// neighbor outside its owner's set or outside every GPU (its remote lists
// left empty). A step whose slots are not distinct or not below the
// capacity (never for derived slots) takes derive_remote_rows or
// derive_flushes.
void remote_rows_and_flushes(Plan& plan, std::vector<std::vector<uint64_t>>& merged, std::vector<char>& found) {
  const size_t m = static_cast<size_t>(plan.m);
  const int64_t g = grain();
  // Maps: remote (step i of a batch, owner k != i) at i * m + k; flushes of
  // GPU i at m * m + i. mark[x]: slot x is taken (zero between batches);
  // what[x]: the position in nbr (remote) or the vertex (flushes).
  std::vector<std::vector<uint8_t>> mark(m * m + m);
  std::vector<std::vector<uint32_t>> what(m * m + m);
  auto capacity_of = [&](size_t map) -> int64_t { return plan.trans_capacity[map < m * m ? map % m : map - m * m]; };
  for (size_t map = 0; map < mark.size(); ++map)
    if (map >= m * m || map / m != map % m) {
      resize_for_overwrite(mark[map], static_cast<size_t>(capacity_of(map)));
      resize_for_overwrite(what[map], static_cast<size_t>(capacity_of(map)));
    }
  // A block of a piece of nbr (remote), of a transition set (flush) or of a
  // map; `list` = the step's remote (0) or flush (1) list.
  struct Block {
    size_t step, map;
    int64_t begin, end;
    int list;
  };
  std::vector<Block> marking, reading;
  for (size_t first = 0; first < plan.steps.size(); first += m) {
    marking.clear();
    reading.clear();
    for (size_t i = 0; i < m; ++i) {
      const size_t s = first + i;
      const std::span<const vid_t> nbr(plan.steps[s].nbr);
      for (size_t k = 0; k < m; ++k) {
        if (k == i) continue;
        const auto x0 = static_cast<int64_t>(first_at_least(nbr, 0, plan.part_offsets[k]));
        const auto x1 = static_cast<int64_t>(first_at_least(nbr, static_cast<size_t>(x0), plan.part_offsets[k + 1]));
        for (int64_t b = x0; b < x1; b += g) marking.push_back({s, i * m + k, b, std::min(x1, b + g), 0});
        const int64_t cap = capacity_of(i * m + k);
        for (int64_t b = 0; b < cap; b += g) reading.push_back({s, i * m + k, b, std::min(cap, b + g), 0});
      }
      const auto t = static_cast<int64_t>(plan.steps[s].trans_vid.size());
      for (int64_t b = 0; b < t; b += g) marking.push_back({s, m * m + i, b, std::min(t, b + g), 1});
      const int64_t cap = capacity_of(m * m + i);
      for (int64_t b = 0; b < cap; b += g) reading.push_back({s, m * m + i, b, std::min(cap, b + g), 1});
    }
    // 1. Marks. held: every neighbor in its owner's set; distinct: no slot twice.
    const auto nmark = static_cast<int64_t>(marking.size());
    std::vector<char> held(marking.size(), 1), distinct(marking.size(), 1);
#pragma omp parallel for schedule(dynamic, 1) if (nmark > 1)
    for (int64_t q = 0; q < nmark; ++q) {
      const Block& b = marking[q];
      const int64_t cap = capacity_of(b.map);
      std::vector<uint8_t>& taken = mark[b.map];
      size_t a = 0;
      auto put = [&](uint32_t slot, uint32_t value) {
        if (slot >= cap || std::atomic_ref<uint8_t>(taken[slot]).exchange(1, std::memory_order_relaxed) != 0) {
          distinct[q] = 0;
          return;
        }
        what[b.map][slot] = value;
      };
      if (b.list == 0) {
        const std::span<const vid_t> nbr(plan.steps[b.step].nbr);
        const ChunkPlan& owner = plan.steps[b.step - b.step % m + b.map % m];
        const std::span<const vid_t> set(owner.trans_vid);
        for (int64_t x = b.begin; x < b.end; ++x) {
          a = gallop(set, a, nbr[x]);
          if (a == set.size() || set[a] != nbr[x]) {
            held[q] = 0;
            break;
          }
          put(owner.trans_slot[a], static_cast<uint32_t>(x));
        }
      } else {
        const ChunkPlan& cp = plan.steps[b.step];
        std::span<const vid_t> next;
        if (b.step + m < plan.steps.size()) next = plan.steps[b.step + m].trans_vid;
        for (int64_t k = b.begin; k < b.end; ++k) {
          a = gallop(next, a, cp.trans_vid[k]);
          if (a == next.size() || next[a] != cp.trans_vid[k]) put(cp.trans_slot[k], cp.trans_vid[k]);
        }
      }
    }
    // Verdicts per step and list: fill[i][list] = the list comes from the maps.
    std::vector<char> step_held(m, 1), fill(2 * m, 1);
    for (size_t q = 0; q < marking.size(); ++q) {
      const size_t i = marking[q].step - first;
      if (!held[q]) step_held[i] = 0;
      if (!distinct[q]) fill[2 * i + static_cast<size_t>(marking[q].list)] = 0;
    }
    for (size_t i = 0; i < m; ++i) {
      const size_t s = first + i;
      found[s] = found[s] && step_held[i] && neighbors_owned(plan, s) ? 1 : 0;
      if (!found[s]) fill[2 * i] = 0;
    }
    // 2. Counts of the maps' blocks, then where each block's rows start in
    //    its step's list.
    const auto nread = static_cast<int64_t>(reading.size());
    std::vector<int64_t> at(reading.size(), 0);
#pragma omp parallel for schedule(static) if (nread > 1)
    for (int64_t q = 0; q < nread; ++q) {
      int64_t c = 0;
      for (int64_t x = reading[q].begin; x < reading[q].end; ++x) c += mark[reading[q].map][x];
      at[q] = c;
    }
    std::vector<int64_t> total(2 * m, 0);
    for (size_t q = 0; q < reading.size(); ++q) {
      int64_t& t = total[2 * (reading[q].step - first) + static_cast<size_t>(reading[q].list)];
      t += std::exchange(at[q], t);
    }
    for (size_t i = 0; i < m; ++i) {
      ChunkPlan& cp = plan.steps[first + i];
      const auto rows = static_cast<size_t>(fill[2 * i] ? total[2 * i] : 0);
      resize_for_overwrite(cp.remote_vid, rows);
      resize_for_overwrite(cp.remote_gpu, rows);
      resize_for_overwrite(cp.remote_slot, rows);
      if (fill[2 * i + 1]) {
        resize_for_overwrite(cp.flush_slot, static_cast<size_t>(total[2 * i + 1]));
        resize_for_overwrite(cp.flush_vid, static_cast<size_t>(total[2 * i + 1]));
      }
    }
    // 3. The lists from the maps (each map cleared on the way).
#pragma omp parallel for schedule(static) if (nread > 1)
    for (int64_t q = 0; q < nread; ++q) {
      const Block& b = reading[q];
      const size_t i = b.step - first;
      ChunkPlan& cp = plan.steps[b.step];
      std::vector<uint8_t>& taken = mark[b.map];
      const bool write = fill[2 * i + static_cast<size_t>(b.list)] != 0;
      const uint32_t base = plan.trans_capacity[i];
      int64_t r = at[q];
      for (int64_t slot = b.begin; slot < b.end; ++slot) {
        if (!taken[slot]) continue;
        taken[slot] = 0;
        if (!write) continue;
        const uint32_t v = what[b.map][slot];
        if (b.list == 0) {
          merged[b.step][v] = id_and_row(cp.nbr[v], base + static_cast<uint32_t>(r));
          cp.remote_vid[r] = cp.nbr[v];
          cp.remote_gpu[r] = static_cast<int32_t>(b.map % m);
          cp.remote_slot[r] = static_cast<uint32_t>(slot);
        } else {
          cp.flush_slot[r] = static_cast<uint32_t>(slot);
          cp.flush_vid[r] = v;
        }
        ++r;
      }
    }
    for (size_t i = 0; i < m; ++i) {
      const size_t s = first + i;
      ChunkPlan& cp = plan.steps[s];
      if (found[s] && !fill[2 * i]) {
        RemoteRows rows;
        derive_remote_rows(plan, s, plan.trans_capacity[i], rows);
        cp.remote_vid = std::move(rows.vid);
        cp.remote_gpu = std::move(rows.gpu);
        cp.remote_slot = std::move(rows.slot);
        for (size_t x = 0; x < rows.merged.size(); ++x) merged[s][x] = id_and_row(cp.nbr[x], rows.merged[x]);
      }
      if (!fill[2 * i + 1]) derive_flushes(plan, s, cp.flush_slot, cp.flush_vid);
    }
  }
}

}  // namespace

bool derive_remote_rows(const Plan& plan, size_t s, uint32_t base, RemoteRows& out) {
  const size_t m = static_cast<size_t>(plan.m);
  resize_for_overwrite(out.merged, plan.steps[s].nbr.size());
  // (owner's slot, position in nbr) of every remote row, GPU by GPU.
  std::vector<std::vector<uint64_t>> pieces(m);
  for (size_t k = 0; k < m; ++k)
    if (!remote_piece(plan, s, k, out.merged, pieces[k])) return false;
  if (!neighbors_owned(plan, s)) return false;
  gather_remote_rows(plan, s, base, pieces, out);
  return true;
}

void derive_flushes(const Plan& plan, size_t s, std::vector<uint32_t>& slot, std::vector<vid_t>& vid) {
  const ChunkPlan& cp = plan.steps[s];
  const size_t next_step = s + static_cast<size_t>(plan.m);
  std::span<const vid_t> next;
  if (next_step < plan.steps.size()) next = plan.steps[next_step].trans_vid;
  // (slot, vertex) packed: one integer sort gives ascending slots.
  std::vector<uint64_t> out;
  out.reserve(cp.trans_vid.size());
  size_t a = 0;
  for (size_t b = 0; b < cp.trans_vid.size(); ++b) {
    a = gallop(next, a, cp.trans_vid[b]);
    if (a == next.size() || next[a] != cp.trans_vid[b])
      out.push_back(uint64_t{cp.trans_slot[b]} << 32 | cp.trans_vid[b]);
  }
  sort_keys(out);
  resize_for_overwrite(slot, out.size());
  resize_for_overwrite(vid, out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    slot[k] = static_cast<uint32_t>(out[k] >> 32);
    vid[k] = static_cast<vid_t>(out[k]);
  }
}

std::string derive_plan_lists(Plan& plan, std::span<const StepCounts> recorded) {
  const size_t steps = plan.steps.size();
  const auto nsteps = static_cast<int64_t>(steps);
  int64_t neighbors = 0, edges = 0;
  for (const ChunkPlan& cp : plan.steps) {
    neighbors += static_cast<int64_t>(cp.nbr.size());
    edges += static_cast<int64_t>(cp.src_local.size());
  }
  const bool parallel = nsteps > 1 && neighbors > grain();
  Timer t;
  std::string times;  // (log::debug)
  auto lap = [&](const char* name) {
    times += fmt::format("{}{} {:.2f} s", times.empty() ? "" : ", ", name, t.seconds());
    t.reset();
  };

  // 1. Transition sets (each reads the nbr lists of its batch only). With
  //    one GPU a step's set is its neighbors below N (one piece, nothing to
  //    merge): copied by all threads, a step at a time (a task per step
  //    kept n of the cores busy).
  if (plan.m == 1) {
    for (ChunkPlan& cp : plan.steps) {
      const std::span<const vid_t> nbr(cp.nbr);
      cp.trans_vid = copy_to_vector(nbr.first(first_at_least(nbr, 0, plan.part_offsets[1])));
    }
  } else {
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (int64_t s = 0; s < nsteps; ++s) plan.steps[s].trans_vid = transition_set(plan, static_cast<size_t>(s));
  }
  for (size_t s = 0; s < steps; ++s)
    if (static_cast<int64_t>(plan.steps[s].trans_vid.size()) != recorded[s].trans)
      return fmt::format("{}: the neighbor sets give {} transition vertices, the file records {}", where(plan, s),
                         plan.steps[s].trans_vid.size(), recorded[s].trans);
  lap("transition sets");

  // 2. Slots, batch after batch on each GPU: GPUs in parallel, one thread
  //    each when there are at least as many as threads, else side by side
  //    on teams of the threads (std::threads: no nested OpenMP region, whose
  //    threads libgomp starts afresh each time), each step in parallel
  //    blocks (a GPU at a time, its steps' serial parts, the slot maps of
  //    `capacity` bytes, kept 1 of 64 cores busy). The same slots either way.
  std::vector<int64_t> kept(steps, 0), capacity(static_cast<size_t>(plan.m), 0);
  auto gpu_slots = [&](int64_t i) {
    for (int j = 0; j < plan.n && capacity[i] >= 0; ++j) {
      const size_t s = static_cast<size_t>(j) * plan.m + static_cast<size_t>(i);
      ChunkPlan& cp = plan.steps[s];
      capacity[i] = step_slots(vids_before(plan, s), slots_before(plan, s), cp.trans_vid, capacity[i], cp.trans_slot,
                               cp.trans_reused, &kept[s]);
    }
  };
  const int threads = omp_get_max_threads();
  if (parallel && plan.m > 1 && plan.m < threads) {
    run_in_teams(plan.m, plan.m, threads, gpu_slots);
  } else {
    const bool by_gpu = parallel && plan.m > 1;
#pragma omp parallel for schedule(dynamic, 1) if (by_gpu)
    for (int i = 0; i < plan.m; ++i) gpu_slots(i);
  }
  for (int i = 0; i < plan.m; ++i) {
    if (capacity[i] < 0) return fmt::format("GPU {}: inconsistent slots (internal error)", i);
    if (capacity[i] != static_cast<int64_t>(plan.trans_capacity[i]))
      return fmt::format("GPU {}: recorded transition capacity {} but its steps need {}", i, plan.trans_capacity[i],
                         capacity[i]);
  }
  for (size_t s = 0; s < steps; ++s)
    if (kept[s] != recorded[s].reused)
      return fmt::format("{}: {} transition vertices are kept from the batch before, the file records {}",
                         where(plan, s), kept[s], recorded[s].reused);
  lap("slots");

  // 3. Remote rows, merged rows of the neighbors, flushes (each step reads
  //    the transition sets and slots of its batch and the next). Was a task
  //    per step and piece, each a serial sort, then a task per step: with
  //    one GPU n tasks in all, and the largest piece's sort the critical
  //    path at m 4 x n 8 (issue 33); now blocks within the steps, and slot
  //    maps in place of the sorts.
  // The steps' vectors sized side by side (resize_each_for_overwrite).
  std::vector<std::vector<uint64_t>> merged(steps);  // id_and_row per nbr entry
  {
    std::vector<std::vector<uint64_t>*> lists;
    std::vector<size_t> sizes;
    for (size_t s = 0; s < steps; ++s) {
      lists.push_back(&merged[s]);
      sizes.push_back(plan.steps[s].nbr.size());
    }
    resize_each_for_overwrite<uint64_t>(lists, sizes);
  }
  const size_t m = static_cast<size_t>(plan.m);
  // The steps' own pieces in blocks of nbr (own_rows), all steps in one
  // loop; then the other GPUs' pieces and the flushes, a batch at a time by
  // all threads (remote_rows_and_flushes).
  struct OwnBlock {
    size_t step, x0, x1;
  };
  std::vector<OwnBlock> own;
  const auto g = static_cast<size_t>(grain());
  for (size_t s = 0; s < steps; ++s) {
    const size_t k = s % m;
    const std::span<const vid_t> nbr(plan.steps[s].nbr);
    const size_t x0 = first_at_least(nbr, 0, plan.part_offsets[k]);
    const size_t x1 = first_at_least(nbr, x0, plan.part_offsets[k + 1]);
    for (size_t b = x0; b < x1; b += g) own.push_back({s, b, std::min(x1, b + g)});
  }
  const auto nown = static_cast<int64_t>(own.size());
  std::vector<char> own_ok(own.size(), 1);
#pragma omp parallel for schedule(dynamic, 1) if (parallel && nown > 1)
  for (int64_t q = 0; q < nown; ++q)
    own_ok[q] = own_rows(plan, own[q].step, own[q].x0, own[q].x1, merged[own[q].step]) ? 1 : 0;
  std::vector<char> found(steps, 1);
  for (size_t q = 0; q < own.size(); ++q)
    if (!own_ok[q]) found[own[q].step] = 0;
  // Slot maps where the steps are few for the threads (one GPU, or m x n
  // steps on many more cores: the sorts' critical path); else the sorts,
  // without the maps' fresh memory. The same lists either way.
  if (nsteps < 4 * static_cast<int64_t>(omp_get_max_threads()))
    remote_rows_and_flushes(plan, merged, found);
  else
    remote_rows_and_flushes_by_sorts(plan, merged, found);
  for (size_t s = 0; s < steps; ++s) {
    const ChunkPlan& cp = plan.steps[s];
    if (!found[s]) return fmt::format("{}: a neighbor is not in its owner's transition set", where(plan, s));
    if (static_cast<int64_t>(cp.remote_vid.size()) != recorded[s].remote)
      return fmt::format("{}: the neighbor sets give {} remote rows, the file records {}", where(plan, s),
                         cp.remote_vid.size(), recorded[s].remote);
    if (static_cast<int64_t>(cp.flush_slot.size()) != recorded[s].flush)
      return fmt::format("{}: the transition sets give {} flushes, the file records {}", where(plan, s),
                         cp.flush_slot.size(), recorded[s].flush);
  }
  lap("remote rows and flushes");

  // 4. Per edge: the source's id and merged row through src_local (one
  //    id_and_row word), in blocks over all steps' edges. The lists sized
  //    side by side (resize_each_for_overwrite: at friendster size 2.5 B
  //    edges x 8 bytes).
  {
    std::vector<std::vector<uint32_t>*> lists;
    std::vector<size_t> sizes;
    for (ChunkPlan& cp : plan.steps) {
      lists.push_back(&cp.src_vid);
      lists.push_back(&cp.src_merged);
      sizes.insert(sizes.end(), 2, cp.src_local.size());
    }
    resize_each_for_overwrite<uint32_t>(lists, sizes);
  }
  const std::vector<EdgeBlock> blocks = edge_blocks(plan, [](size_t) { return false; });
  const auto nblocks = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1 && edges > grain())
  for (int64_t t = 0; t < nblocks; ++t) {
    const EdgeBlock& b = blocks[t];
    ChunkPlan& cp = plan.steps[b.step];
    const std::vector<uint64_t>& rows = merged[b.step];
    for (int64_t e = b.begin; e < b.end; ++e) {
      const uint64_t r = rows[cp.src_local[e]];
      cp.src_vid[e] = static_cast<vid_t>(r);
      cp.src_merged[e] = static_cast<uint32_t>(r >> 32);
    }
  }
  lap("edges");
  log::debug("plan lists derived: {}", times);
  return "";
}

std::string find_derivation_mismatch(const Plan& plan) {
  const size_t steps = plan.steps.size();
  const auto nsteps = static_cast<int64_t>(steps);
  // A step's derivation reads the stored lists of its whole batch.
  for (const ChunkPlan& cp : plan.steps)
    if (!stored_lists_valid(plan, cp)) return "";
  // Lengths next: the derivations below index with them.
  for (size_t s = 0; s < steps; ++s) {
    const ChunkPlan& cp = plan.steps[s];
    const size_t t = cp.trans_vid.size(), r = cp.remote_vid.size(), e = cp.src_local.size();
    if (cp.trans_slot.size() != t || cp.trans_reused.size() != t || cp.remote_gpu.size() != r ||
        cp.remote_slot.size() != r || cp.flush_vid.size() != cp.flush_slot.size() || cp.src_vid.size() != e ||
        cp.src_merged.size() != e)
      return fmt::format("{}: lists that go together have different lengths", where(plan, s));
  }
  // The capacity a GPU's batches before j used = max slot + 1 over them
  // (what the slot rule's running capacity is when every step follows it).
  std::vector<int64_t> top(steps, 0), before(steps, 0);
#pragma omp parallel for schedule(dynamic, 1) if (nsteps > 1)
  for (int64_t s = 0; s < nsteps; ++s)
    for (uint32_t x : plan.steps[s].trans_slot) top[s] = std::max<int64_t>(top[s], int64_t{x} + 1);
  std::vector<int64_t> used(static_cast<size_t>(plan.m), 0);
  for (size_t s = 0; s < steps; ++s) {
    before[s] = used[s % plan.m];
    used[s % plan.m] = std::max(used[s % plan.m], top[s]);
  }
  // Every step against its derivation from its own and its neighbors' lists
  // (each assumed right, so that steps are independent); the first step that
  // differs is reported. The merged rows of remote vertices start at the
  // capacity the slots use: a recorded capacity that differs is read_plan's
  // to refuse.
  std::vector<std::string> found(steps);
  std::vector<std::vector<uint32_t>> merged(steps);
  int64_t work = 0;
  for (const ChunkPlan& cp : plan.steps) work += static_cast<int64_t>(cp.src_local.size() + cp.nbr.size());
  // Fewer steps than threads (32 on 64 cores): each step's derivation loops
  // (step_slots' blocks) by a team of the threads left over, the teams
  // std::threads (run_in_teams: libgomp starts fresh threads for every
  // nested OpenMP region); derivations are the same for any thread count.
  const int threads = omp_get_max_threads();
  auto derive_step = [&](int64_t s) {
    found[s] = step_mismatch(plan, static_cast<size_t>(s), before[s], static_cast<uint32_t>(used[s % plan.m]),
                             merged[s]);
  };
  if (nsteps > 1 && work > grain() && nsteps < threads) {
    run_in_teams(nsteps, static_cast<int>(nsteps), threads, derive_step);
  } else {
#pragma omp parallel for schedule(dynamic, 1) if (nsteps > 1 && work > grain())
    for (int64_t s = 0; s < nsteps; ++s) derive_step(s);
  }
  // The edges in blocks over all steps (edge_blocks); a step's own lists
  // come before its edges: the same first mismatch as step by step.
  const std::vector<EdgeBlock> blocks = edge_blocks(plan, [&](size_t s) { return !found[s].empty(); });
  const auto nblocks = static_cast<int64_t>(blocks.size());
  std::vector<std::string> edge_found(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (nblocks > 1 && work > grain())
  for (int64_t t = 0; t < nblocks; ++t)
    edge_found[t] = edge_mismatch(plan, blocks[t].step, merged[blocks[t].step], blocks[t].begin, blocks[t].end);
  size_t t = 0;
  for (size_t s = 0; s < steps; ++s) {
    if (!found[s].empty()) return found[s];
    for (; t < blocks.size() && blocks[t].step == s; ++t)
      if (!edge_found[t].empty()) return edge_found[t];
  }
  return "";
}

}  // namespace ht
