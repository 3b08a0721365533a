#include "partition/plan_check.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht {
namespace {

constexpr vid_t kEmpty = UINT32_MAX;

class Problems {
 public:
  explicit Problems(size_t max) : max_(max) {}
  template <typename... A>
  void add(fmt::format_string<A...> f, A&&... args) {
    if (list_.size() < max_) list_.push_back(fmt::format(f, std::forward<A>(args)...));
    ++total_;
  }
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

int owner(const Plan& plan, vid_t v) {
  return static_cast<int>(std::upper_bound(plan.part_offsets.begin(), plan.part_offsets.end(),
                                           static_cast<int64_t>(v)) -
                          plan.part_offsets.begin()) - 1;
}

template <typename T>
bool all_below(const std::vector<T>& v, uint64_t bound) {
  return std::all_of(v.begin(), v.end(), [&](T x) { return static_cast<uint64_t>(x) < bound; });
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

void check_step_ranges(const Plan& plan, size_t s, Problems& pr) {
  const ChunkPlan& cp = plan.steps[s];
  const uint64_t nv = static_cast<uint64_t>(plan.num_vertices);
  const int i = cp.part;
  const bool offsets_ok = cp.num_dst() >= 0 && cp.offsets.size() == static_cast<size_t>(cp.num_dst() + 1) &&
                          cp.offsets[0] == 0 && std::is_sorted(cp.offsets.begin(), cp.offsets.end());
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
  for (size_t r = 0; remote_ok && r < cp.remote_gpu.size(); ++r)
    remote_ok = cp.remote_gpu[r] >= 0 && cp.remote_gpu[r] < plan.m &&
                cp.remote_slot[r] < plan.trans_capacity[cp.remote_gpu[r]];
  if (!remote_ok) pr.add("step {}: remote arrays are inconsistent or out of range", s);
  if (cp.flush_vid.size() != cp.flush_slot.size() || !all_below(cp.flush_vid, nv) ||
      !all_below(cp.flush_slot, plan.trans_capacity[i]))
    pr.add("step {}: flush arrays are inconsistent or out of range", s);
}

bool check_structure(const Plan& plan, Problems& pr) {
  if (!check_plan_shape(plan, pr)) return false;
  std::vector<char> seen(plan.steps.size(), 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ChunkPlan& cp = plan.steps[s];
    const int j = static_cast<int>(s / plan.m), i = static_cast<int>(s % plan.m);
    if (cp.part != i || cp.chunk < 0 || cp.chunk >= plan.n) {
      pr.add("step {} (batch {}, GPU {}) has part {} chunk {}", s, j, i, cp.part, cp.chunk);
      continue;
    }
    if (seen[static_cast<size_t>(i) * plan.n + cp.chunk]++)
      pr.add("chunk {} of partition {} runs more than once", cp.chunk, i);
    if (!plan.reorganized && cp.chunk != j)
      pr.add("batch {}, GPU {}: plan is not reorganized but runs chunk {}", j, i, cp.chunk);
    if (cp.dst_begin < plan.part_offsets[i] || cp.dst_end < cp.dst_begin || cp.dst_end > plan.part_offsets[i + 1])
      pr.add("batch {}, GPU {}: destinations [{}, {}) are not in partition {}", j, i, cp.dst_begin, cp.dst_end, i);
    check_step_ranges(plan, s, pr);
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

std::vector<std::string> step_topology_problems(const ChunkPlan& cp, const GraphView& g) {
  std::vector<std::string> out;
  std::vector<vid_t> expect;
  for (int64_t d = 0; d < cp.num_dst() && out.size() < 3; ++d) {
    const vid_t v = static_cast<vid_t>(cp.dst_begin + d);
    expect.clear();
    for (vid_t s : g.in_neighbors(v))
      if (s != v) expect.push_back(s);
    expect.push_back(v);
    std::sort(expect.begin(), expect.end());
    const auto b = cp.src_vid.begin() + cp.offsets[d], e = cp.src_vid.begin() + cp.offsets[d + 1];
    if (!std::equal(b, e, expect.begin(), expect.end()))
      out.push_back(fmt::format("chunk {} of partition {}: in-edges of vertex {} are not the graph's (+1 self-loop, "
                                "ascending): {} sources, expected {}",
                                cp.chunk, cp.part, v, e - b, expect.size()));
  }
  // nbr = set of sources: strictly ascending, every edge finds its source
  // through src_local, every entry is some edge's source.
  std::vector<char> used(cp.nbr.size(), 0);
  for (size_t e = 0; e < cp.src_vid.size(); ++e) {
    if (cp.nbr[cp.src_local[e]] != cp.src_vid[e]) {
      out.push_back(fmt::format("chunk {} of partition {}: edge {} has src_local -> {} but source {}", cp.chunk,
                                cp.part, e, cp.nbr[cp.src_local[e]], cp.src_vid[e]));
      break;
    }
    used[cp.src_local[e]] = 1;
  }
  if (std::adjacent_find(cp.nbr.begin(), cp.nbr.end(), std::greater_equal<vid_t>()) != cp.nbr.end() ||
      std::find(used.begin(), used.end(), 0) != used.end())
    out.push_back(fmt::format("chunk {} of partition {}: nbr is not the ascending set of its sources", cp.chunk,
                              cp.part));
  return out;
}

void check_topology(const Plan& plan, const GraphView& g, Problems& pr) {
  if (g.num_vertices != plan.num_vertices) {
    pr.add("graph has {} vertices, the plan {}", g.num_vertices, plan.num_vertices);
    return;
  }
  std::vector<std::vector<std::string>> found(plan.steps.size());
#pragma omp parallel for schedule(dynamic, 1) if (g.num_edges >= (int64_t{1} << 15))
  for (int64_t s = 0; s < static_cast<int64_t>(plan.steps.size()); ++s)
    found[s] = step_topology_problems(plan.steps[s], g);
  for (const auto& list : found)
    for (const auto& msg : list) pr.add("{}", msg);
}

// ---------------------------------------------------------------------------
// Batch unions by stamping (independent of the builder's set merges).
// ---------------------------------------------------------------------------

std::vector<vid_t> stamp_union(const std::vector<const ChunkPlan*>& batch, std::vector<int64_t>& stamp,
                               int64_t mark) {
  std::vector<vid_t> u;
  for (const ChunkPlan* cp : batch)
    for (vid_t v : cp->nbr)
      if (stamp[v] != mark) stamp[v] = mark, u.push_back(v);
  std::sort(u.begin(), u.end());
  return u;
}

PlanVolumes volumes_by_stamping(const std::vector<std::vector<const ChunkPlan*>>& batches, int64_t num_vertices) {
  PlanVolumes vol;
  std::vector<int64_t> stamp(num_vertices, -1), last(num_vertices, -1);
  for (size_t j = 0; j < batches.size(); ++j) {
    for (const ChunkPlan* cp : batches[j]) vol.v_ori += static_cast<int64_t>(cp->nbr.size());
    const auto u = stamp_union(batches[j], stamp, static_cast<int64_t>(j));
    vol.v_p2p += static_cast<int64_t>(u.size());
    for (vid_t v : u) {
      if (j == 0 || last[v] != static_cast<int64_t>(j) - 1) ++vol.v_ru;  // not in the previous batch
      last[v] = static_cast<int64_t>(j);
    }
  }
  return vol;
}

void check_volumes(const Plan& plan, Problems& pr) {
  std::vector<std::vector<const ChunkPlan*>> run(plan.n), identity(plan.n);
  for (int j = 0; j < plan.n; ++j)
    for (int i = 0; i < plan.m; ++i) {
      const ChunkPlan& cp = plan.step(j, i);
      run[j].push_back(&cp);
      identity[cp.chunk].push_back(&cp);
    }
  auto compare = [&](const PlanVolumes& got, const PlanVolumes& want, const char* which) {
    if (got.v_ori != want.v_ori || got.v_p2p != want.v_p2p || got.v_ru != want.v_ru)
      pr.add("{}: plan says V_ori {} V_p2p {} V_ru {}, recomputed {} {} {}", which, got.v_ori, got.v_p2p, got.v_ru,
             want.v_ori, want.v_p2p, want.v_ru);
  };
  compare(plan.volumes, volumes_by_stamping(run, plan.num_vertices), "volumes");
  compare(plan.volumes_before, volumes_by_stamping(identity, plan.num_vertices), "volumes_before");
}

// ---------------------------------------------------------------------------
// Symbolic execution of the full comm mode.
// ---------------------------------------------------------------------------

class CommEmulator {
 public:
  CommEmulator(const Plan& plan, Problems& pr) : plan_(plan), pr_(pr) {}
  void run();

 private:
  bool in_union(int j, vid_t v) const {
    return j >= 0 && j < plan_.n && std::binary_search(unions_[j].begin(), unions_[j].end(), v);
  }
  std::vector<vid_t> expected_transition(int j, int i) const;
  void load(int j, int i);
  void load_entry(int j, int i, vid_t v, uint32_t slot, bool reused);
  void read(int j, int i);
  void check_remote_rows(int j, int i);
  void flush(int j, int i);
  void check_capacities();

  const Plan& plan_;
  Problems& pr_;
  std::vector<std::vector<vid_t>> unions_;     // 𝕅∪_j recomputed
  std::vector<std::vector<vid_t>> buf_;        // per GPU: slot -> vertex it holds
  std::vector<std::vector<int32_t>> written_;  // per GPU: slot -> last batch that claimed it
  std::vector<std::vector<uint8_t>> live_;     // per GPU: slot holds a gradient not yet flushed
};

std::vector<vid_t> CommEmulator::expected_transition(int j, int i) const {
  const auto& u = unions_[j];
  std::vector<vid_t> out;
  for (vid_t v : u)
    if (owner(plan_, v) == i) out.push_back(v);
  return out;
}

void CommEmulator::run() {
  const int m = plan_.m, n = plan_.n;
  std::vector<int64_t> stamp(plan_.num_vertices, -1);
  for (int j = 0; j < n; ++j) {
    std::vector<const ChunkPlan*> batch;
    for (int i = 0; i < m; ++i) batch.push_back(&plan_.step(j, i));
    unions_.push_back(stamp_union(batch, stamp, j));
  }
  buf_.resize(m);
  written_.resize(m);
  live_.resize(m);
  for (int i = 0; i < m; ++i) {
    buf_[i].assign(plan_.trans_capacity[i], kEmpty);
    written_[i].assign(plan_.trans_capacity[i], -1);
    live_[i].assign(plan_.trans_capacity[i], 0);
  }
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) load(j, i);   // host -> GPU (or kept in place)
    for (int i = 0; i < m; ++i) read(j, i);   // aggregation reads (local and P2P)
    for (int i = 0; i < m; ++i) flush(j, i);  // gradients leaving the GPU
  }
  check_capacities();
}

void CommEmulator::load(int j, int i) {
  const ChunkPlan& cp = plan_.step(j, i);
  const auto expect = expected_transition(j, i);
  if (cp.trans_vid != expect) {
    auto diff = std::mismatch(cp.trans_vid.begin(), cp.trans_vid.end(), expect.begin(), expect.end());
    pr_.add("batch {}, GPU {}: transition set has {} vertices, expected {} (first difference at position {})", j, i,
            cp.trans_vid.size(), expect.size(), diff.first - cp.trans_vid.begin());
  }
  for (size_t b = 0; b < cp.trans_vid.size(); ++b) load_entry(j, i, cp.trans_vid[b], cp.trans_slot[b], cp.trans_reused[b]);
}

void CommEmulator::load_entry(int j, int i, vid_t v, uint32_t slot, bool reused) {
  if (written_[i][slot] == j) pr_.add("batch {}, GPU {}: slot {} is given to two vertices", j, i, slot);
  written_[i][slot] = j;
  if (reused != in_union(j - 1, v))
    pr_.add("batch {}, GPU {}: vertex {} has reused = {} but it {} in the previous batch", j, i, v, int{reused},
            in_union(j - 1, v) ? "was" : "was not");
  if (reused) {
    if (buf_[i][slot] != v)
      pr_.add("batch {}, GPU {}: reused slot {} holds vertex {}, not {}", j, i, slot,
              buf_[i][slot] == kEmpty ? -1 : int64_t{buf_[i][slot]}, v);
    if (!live_[i][slot]) pr_.add("batch {}, GPU {}: reused vertex {} had its gradient flushed already", j, i, v);
  } else {
    // A holder claimed by this batch shows up as a slot given twice or as a
    // reused slot that lost its vertex; a stale copy may be overwritten, a
    // gradient not yet flushed may not.
    if (live_[i][slot])
      pr_.add("batch {}, GPU {}: loading vertex {} into slot {} overwrites vertex {} whose gradient was not flushed",
              j, i, v, slot, buf_[i][slot]);
    buf_[i][slot] = v;
  }
  live_[i][slot] = 1;  // the vertex's gradient accumulates in this slot from now on
}

void CommEmulator::check_remote_rows(int j, int i) {
  const ChunkPlan& cp = plan_.step(j, i);
  std::vector<vid_t> expect, got = cp.remote_vid;
  for (vid_t v : cp.nbr)
    if (owner(plan_, v) != i) expect.push_back(v);
  std::sort(got.begin(), got.end());
  if (got != expect)
    pr_.add("batch {}, GPU {}: remote rows are not the {} neighbors owned by other GPUs ({} rows)", j, i,
            expect.size(), got.size());
  for (size_t r = 0; r < cp.remote_vid.size(); ++r) {
    const int k = cp.remote_gpu[r];
    const uint32_t slot = cp.remote_slot[r];
    if (r > 0 && std::tie(cp.remote_gpu[r - 1], cp.remote_slot[r - 1]) >= std::tie(cp.remote_gpu[r], slot))
      pr_.add("batch {}, GPU {}: remote rows not ordered by (gpu, slot) at row {}", j, i, r);
    if (k == i || owner(plan_, cp.remote_vid[r]) != k)
      pr_.add("batch {}, GPU {}: remote row {} reads vertex {} from GPU {}, which does not own it", j, i, r,
              cp.remote_vid[r], k);
    if (buf_[k][slot] != cp.remote_vid[r] || written_[k][slot] != j)
      pr_.add("batch {}, GPU {}: remote row {} expects vertex {} in GPU {}'s slot {}, which does not hold it now", j,
              i, r, cp.remote_vid[r], k, slot);
  }
}

void CommEmulator::read(int j, int i) {
  check_remote_rows(j, i);
  const ChunkPlan& cp = plan_.step(j, i);
  const uint32_t base = plan_.trans_capacity[i];
  for (size_t e = 0; e < cp.src_vid.size(); ++e) {
    const vid_t v = cp.src_vid[e];
    const uint32_t x = cp.src_merged[e];
    const bool ok = x < base ? buf_[i][x] == v && written_[i][x] == j
                             : x - base < cp.remote_vid.size() && cp.remote_vid[x - base] == v;
    if (!ok) {
      pr_.add("batch {}, GPU {}: edge {} reads merged row {} but its source {} is not there", j, i, e, x, v);
      return;  // one message per step is enough
    }
  }
}

void CommEmulator::flush(int j, int i) {
  const ChunkPlan& cp = plan_.step(j, i);
  for (size_t k = 0; k < cp.flush_slot.size(); ++k) {
    const uint32_t slot = cp.flush_slot[k];
    const vid_t v = cp.flush_vid[k];
    if (k > 0 && cp.flush_slot[k - 1] >= slot)
      pr_.add("batch {}, GPU {}: flush slots not strictly ascending at {}", j, i, k);
    if (buf_[i][slot] != v || written_[i][slot] != j)
      pr_.add("batch {}, GPU {}: flush of vertex {} from slot {}, which does not hold it", j, i, v, slot);
    if (!live_[i][slot]) pr_.add("batch {}, GPU {}: gradient of vertex {} flushed twice", j, i, v);
    live_[i][slot] = 0;
  }
  for (size_t b = 0; b < cp.trans_vid.size(); ++b) {
    const vid_t v = cp.trans_vid[b];
    const bool stays = in_union(j + 1, v) && owner(plan_, v) == i, live = live_[i][cp.trans_slot[b]];
    if (stays && !live)
      pr_.add("batch {}, GPU {}: gradient of vertex {} flushed although it stays for batch {} (reaches the host "
              "twice)",
              j, i, v, j + 1);
    if (!stays && live) pr_.add("batch {}, GPU {}: gradient of vertex {} is never flushed", j, i, v);
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

}  // namespace

std::vector<std::string> check_plan_comm(const Plan& plan, size_t max_problems) {
  Problems pr(max_problems);
  if (!check_structure(plan, pr)) return pr.result();
  CommEmulator(plan, pr).run();
  check_volumes(plan, pr);
  return pr.result();
}

std::vector<std::string> check_plan(const Plan& plan, const GraphView& g_new, const Partition& p,
                                    size_t max_problems) {
  Problems pr(max_problems);
  if (!check_structure(plan, pr)) return pr.result();
  check_against_partition(plan, p, pr);
  if (pr.any()) return pr.result();
  check_topology(plan, g_new, pr);
  CommEmulator(plan, pr).run();
  check_volumes(plan, pr);
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
