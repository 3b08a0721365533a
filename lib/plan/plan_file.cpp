#include "plan/plan_file.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/thread_teams.hpp"
#include "core/timer.hpp"
#include "graph/types.hpp"
#include "plan/plan_derive.hpp"
#include "plan/plan_validate.hpp"

namespace ht {
namespace {

// ---------------------------------------------------------------------------
// Writing: one section per stored ChunkPlan field (all steps concatenated, in
// step order j * m + i) and one offset table per group of fields of equal
// length.
// ---------------------------------------------------------------------------

template <typename T>
using Field = std::vector<T> ChunkPlan::*;

template <typename T>
std::vector<int64_t> index_of(const Plan& plan, Field<T> field) {
  std::vector<int64_t> index(plan.steps.size() + 1, 0);
  for (size_t s = 0; s < plan.steps.size(); ++s)
    index[s + 1] = index[s] + static_cast<int64_t>((plan.steps[s].*field).size());
  return index;
}

// The concatenation of one field over the steps, produced piece by piece
// from the steps' own vectors while the writer hashes and writes it: the
// section never exists in memory as a whole (src_local alone is 4 bytes per
// edge). `index` = index_of(plan, field).
template <typename T>
void add_concat(ContainerWriter& w, const std::string& name, const Plan& plan, Field<T> field,
                const std::vector<int64_t>& index) {
  const auto total = static_cast<uint64_t>(index.back());
  w.add_section_filled(name, dtype_of<T>(), total, 1, 1, [&](uint64_t offset, std::span<std::byte> out) {
    const int64_t first = static_cast<int64_t>(offset / sizeof(T));
    size_t s = static_cast<size_t>(std::upper_bound(index.begin(), index.end(), first) - index.begin()) - 1;
    uint64_t at = offset;
    size_t done = 0;
    while (done < out.size()) {
      const uint64_t begin = static_cast<uint64_t>(index[s]) * sizeof(T);
      const uint64_t end = static_cast<uint64_t>(index[s + 1]) * sizeof(T);
      if (at >= end) {
        ++s;
        continue;
      }
      const size_t len = static_cast<size_t>(std::min<uint64_t>(end - at, out.size() - done));
      std::memcpy(out.data() + done, reinterpret_cast<const std::byte*>((plan.steps[s].*field).data()) + (at - begin),
                  len);
      done += len;
      at += len;
    }
  });
}

void add_index(ContainerWriter& w, const std::string& name, const std::vector<int64_t>& index) {
  w.add<int64_t>(name, index);
}

void write_step_headers(ContainerWriter& w, const Plan& plan) {
  std::vector<int32_t> ids;
  std::vector<int64_t> dst;
  for (const ChunkPlan& cp : plan.steps) {
    ids.push_back(cp.part);
    ids.push_back(cp.chunk);
    dst.push_back(cp.dst_begin);
    dst.push_back(cp.dst_end);
  }
  w.add<int32_t>("step_ids", ids, 2);
  w.add<int64_t>("step_dst", dst, 2);
}

// The sizes of the derived lists, per step: (trans, reused, remote, flush).
// Steps in parallel: counts_of scans trans_reused (V_p2p bytes in all).
void write_step_counts(ContainerWriter& w, const Plan& plan) {
  std::vector<int64_t> counts(4 * plan.steps.size());
  parallel_tasks(static_cast<int64_t>(plan.steps.size()), [&](int64_t s) {
    const StepCounts c = counts_of(plan.steps[s]);
    const int64_t row[] = {c.trans, c.reused, c.remote, c.flush};
    std::copy(std::begin(row), std::end(row), counts.begin() + 4 * s);
  });
  w.add<int64_t>("step_counts", counts, 4);
}

void write_per_gpu(ContainerWriter& w, const Plan& plan) {
  std::vector<uint32_t> caps;
  std::vector<int64_t> sizes;
  for (int i = 0; i < plan.m; ++i) {
    caps.insert(caps.end(), {plan.trans_capacity[i], plan.remote_capacity[i], plan.nbr_capacity[i]});
    sizes.insert(sizes.end(), {plan.max_dst[i], plan.max_edges[i]});
  }
  w.add<uint32_t>("capacity", caps, 3);
  w.add<int64_t>("max_sizes", sizes, 2);
  const std::vector<int64_t> vol = {plan.volumes.v_ori,        plan.volumes.v_p2p,        plan.volumes.v_ru,
                                    plan.volumes_before.v_ori, plan.volumes_before.v_p2p, plan.volumes_before.v_ru};
  w.add<int64_t>("volumes", vol, 3);
}

void check_shape(const Plan& plan) {
  HT_CHECK(plan.m >= 1 && plan.n >= 1, "cannot write a plan with m = {}, n = {}", plan.m, plan.n);
  const size_t m = static_cast<size_t>(plan.m);
  HT_CHECK(plan.steps.size() == m * static_cast<size_t>(plan.n), "plan has {} steps, expected m * n = {}",
           plan.steps.size(), m * static_cast<size_t>(plan.n));
  HT_CHECK(plan.part_offsets.size() == m + 1 && plan.trans_capacity.size() == m && plan.remote_capacity.size() == m &&
               plan.nbr_capacity.size() == m && plan.max_dst.size() == m && plan.max_edges.size() == m,
           "plan's per-GPU arrays do not have m = {} entries", m);
}

// ---------------------------------------------------------------------------
// Reading.
// ---------------------------------------------------------------------------

double as_double(uint64_t bits) { return std::bit_cast<double>(bits); }

// An offset table of the per-step arrays (steps + 1 entries) and the
// parallel tasks over it: blocks of at most one grain, none across a step.
struct StepIndex {
  struct Task {
    size_t step;
    int64_t begin, end;
  };
  std::vector<int64_t> at;
  std::vector<Task> tasks;

  explicit StepIndex(std::vector<int64_t> offsets) : at(std::move(offsets)) {
    const int64_t grain = static_cast<int64_t>(std::max<size_t>(bulk_tuning().grain, 1));
    for (size_t s = 0; s + 1 < at.size(); ++s)
      for (int64_t b = at[s]; b < at[s + 1]; b += grain) tasks.push_back({s, b, std::min(at[s + 1], b + grain)});
  }
  int64_t total() const { return at.back(); }
  // The step that element k belongs to (empty steps own no element).
  size_t step_of(int64_t k) const {
    return static_cast<size_t>(std::upper_bound(at.begin(), at.end(), k) - at.begin()) - 1;
  }
};

class PlanReader {
 public:
  PlanReader(const ContainerReader& r, Plan& plan) : r_(r), plan_(plan) {}

  void read_header();
  void read_steps();
  void read_per_gpu();
  void read_counts();
  void read_topology();
  void derive();

 private:
  [[noreturn]] void fail(const std::string& section, const std::string& what) const { r_.fail_in(section, what); }
  size_t steps() const { return plan_.steps.size(); }
  int part(size_t s) const { return plan_.steps[s].part; }
  StepIndex index(const std::string& name, const std::string& values,
                  const std::vector<int64_t>* expected_sizes = nullptr) const;
  template <typename T>
  std::span<const T> values(const std::string& name, const StepIndex& index) const {
    return r_.array<T>(name, static_cast<uint64_t>(index.total()));
  }
  template <typename T, typename Ok>
  int64_t load(std::span<const T> all, const StepIndex& index, Field<T> field, Ok ok);
  template <typename T, typename Ok>
  void load_checked(const std::string& name, const StepIndex& index, Field<T> field, Ok ok, const char* what);

  const ContainerReader& r_;
  Plan& plan_;
  std::vector<StepCounts> counts_;  // recorded sizes of the derived lists
};

// Copies one field of every step out of its concatenated section and checks
// each value with ok(step, k, value) in the same pass over the mapped file,
// in parallel over the index's tasks. Returns the first element (in file
// order, as a sequential check would find) that failed, or -1.
template <typename T, typename Ok>
int64_t PlanReader::load(std::span<const T> all, const StepIndex& index, Field<T> field, Ok ok) {
  std::vector<std::vector<T>*> lists;
  std::vector<size_t> sizes;
  for (size_t s = 0; s < steps(); ++s) {
    lists.push_back(&(plan_.steps[s].*field));
    sizes.push_back(static_cast<size_t>(index.at[s + 1] - index.at[s]));
  }
  resize_each_for_overwrite<T>(lists, sizes);
  int64_t first = std::numeric_limits<int64_t>::max();
  const int64_t ntasks = static_cast<int64_t>(index.tasks.size());
#pragma omp parallel for schedule(dynamic, 1) reduction(min : first) if (ntasks > 1)
  for (int64_t t = 0; t < ntasks; ++t) {
    const StepIndex::Task& task = index.tasks[t];
    T* dst = (plan_.steps[task.step].*field).data();
    const int64_t base = index.at[task.step];
    for (int64_t k = task.begin; k < task.end; ++k) {
      const T x = all[k];
      dst[k - base] = x;
      if (!ok(task.step, k, x)) {
        first = std::min(first, k);
        break;
      }
    }
  }
  return first == std::numeric_limits<int64_t>::max() ? -1 : first;
}

template <typename T, typename Ok>
void PlanReader::load_checked(const std::string& name, const StepIndex& index, Field<T> field, Ok ok,
                              const char* what) {
  const auto all = values<T>(name, index);
  const int64_t k = load(all, index, field, ok);
  if (k >= 0)
    fail(name, fmt::format("element {} (step {}) = {} {}", k, index.step_of(k), static_cast<int64_t>(all[k]), what));
}

void PlanReader::read_header() {
  const uint64_t m = r_.meta(kPlanMetaM), n = r_.meta(kPlanMetaN), nv = r_.meta(kPlanMetaVertices);
  if (m < 1 || n < 1 || m > (1u << 16) || n > (1u << 24) || m * n > (uint64_t{1} << 28))
    throw file_error(r_.path(), fmt::format("header: implausible m = {}, n = {} (corrupted?)", m, n));
  if (nv > static_cast<uint64_t>(kMaxVertices32))
    throw file_error(r_.path(), fmt::format("header: {} vertices exceeds 32-bit ids", nv));
  plan_.m = static_cast<int>(m);
  plan_.n = static_cast<int>(n);
  plan_.num_vertices = static_cast<int64_t>(nv);
  plan_.graph_identity = {r_.meta(kPlanMetaGraphBytes), r_.meta(kPlanMetaGraphChecksum)};
  plan_.partition_identity = {r_.meta(kPlanMetaPartitionBytes), r_.meta(kPlanMetaPartitionChecksum)};
  plan_.reorganized = (r_.flags() & kPlanFlagReorganized) != 0;
  plan_.cost_before = as_double(r_.meta(kPlanMetaCostBefore));
  plan_.cost_after = as_double(r_.meta(kPlanMetaCostAfter));
  plan_.seconds = as_double(r_.meta(kPlanMetaSeconds));
  plan_.steps.resize(m * n);

  auto po = r_.array<int64_t>("part_offsets", m + 1);
  plan_.part_offsets.assign(po.begin(), po.end());
  if (po[0] != 0 || po[m] != plan_.num_vertices)
    fail("part_offsets", fmt::format("must run from 0 to N = {}", plan_.num_vertices));
  for (uint64_t i = 0; i < m; ++i)
    if (po[i + 1] < po[i]) fail("part_offsets", fmt::format("decreases at entry {}", i + 1));
}

void PlanReader::read_steps() {
  auto ids = r_.array<int32_t>("step_ids", 2 * steps());
  auto dst = r_.array<int64_t>("step_dst", 2 * steps());
  std::vector<int64_t> seen(static_cast<size_t>(plan_.m) * plan_.n, 0);
  for (size_t s = 0; s < steps(); ++s) {
    ChunkPlan& cp = plan_.steps[s];
    cp.part = ids[2 * s];
    cp.chunk = ids[2 * s + 1];
    cp.dst_begin = dst[2 * s];
    cp.dst_end = dst[2 * s + 1];
    if (cp.part != static_cast<int32_t>(s % plan_.m) || cp.chunk < 0 || cp.chunk >= plan_.n)
      fail("step_ids", fmt::format("step {} has part {} chunk {} (expected part {}, chunk < {})", s, cp.part, cp.chunk,
                                   s % plan_.m, plan_.n));
    if (seen[static_cast<size_t>(cp.part) * plan_.n + cp.chunk]++)
      fail("step_ids", fmt::format("chunk {} of partition {} appears twice", cp.chunk, cp.part));
    if (cp.dst_begin < plan_.part_offsets[cp.part] || cp.dst_end < cp.dst_begin ||
        cp.dst_end > plan_.part_offsets[cp.part + 1])
      fail("step_dst", fmt::format("step {}: destinations [{}, {}) outside partition {}", s, cp.dst_begin,
                                   cp.dst_end, cp.part));
  }
}

void PlanReader::read_per_gpu() {
  const size_t m = static_cast<size_t>(plan_.m);
  auto caps = r_.array<uint32_t>("capacity", 3 * m);
  auto sizes = r_.array<int64_t>("max_sizes", 2 * m);
  for (size_t i = 0; i < m; ++i) {
    plan_.trans_capacity.push_back(caps[3 * i]);
    plan_.remote_capacity.push_back(caps[3 * i + 1]);
    plan_.nbr_capacity.push_back(caps[3 * i + 2]);
    plan_.max_dst.push_back(sizes[2 * i]);
    plan_.max_edges.push_back(sizes[2 * i + 1]);
    if (static_cast<uint64_t>(caps[3 * i]) + caps[3 * i + 1] > UINT32_MAX)
      fail("capacity", fmt::format("GPU {}: merged buffer exceeds 32-bit indices", i));
  }
  auto vol = r_.array<int64_t>("volumes", 6);
  plan_.volumes = {vol[0], vol[1], vol[2]};
  plan_.volumes_before = {vol[3], vol[4], vol[5]};
}

// An offset table: steps + 1 entries from 0, non-decreasing; optionally each
// step's count must equal expected_sizes[s].
// The index of section `values`, checked against that section's length
// before any work item is made from it: with --no-verify a flipped byte is
// met here, not by an index that claims 2^47 elements.
StepIndex PlanReader::index(const std::string& name, const std::string& values,
                            const std::vector<int64_t>* expected_sizes) const {
  auto idx = r_.array<int64_t>(name, steps() + 1);
  if (idx[0] != 0) fail(name, "must start at 0");
  for (size_t s = 0; s < steps(); ++s) {
    const int64_t len = idx[s + 1] - idx[s];
    if (len < 0) fail(name, fmt::format("decreases at step {}", s));
    if (expected_sizes && len != (*expected_sizes)[s])
      fail(name, fmt::format("step {} has {} entries, expected {}", s, len, (*expected_sizes)[s]));
  }
  const uint64_t held = r_.section(values).count();
  if (static_cast<uint64_t>(idx[steps()]) != held)
    fail(name, fmt::format("ends at {} but section '{}' holds {} elements", idx[steps()], values, held));
  return StepIndex({idx.begin(), idx.end()});
}

// The recorded sizes of the derived lists: each within the capacities, so
// that nothing is derived for a file that lies about them.
void PlanReader::read_counts() {
  auto c = r_.array<int64_t>("step_counts", 4 * steps());
  counts_.resize(steps());
  for (size_t s = 0; s < steps(); ++s) {
    const StepCounts k{c[4 * s], c[4 * s + 1], c[4 * s + 2], c[4 * s + 3]};
    const int i = part(s);
    if (k.trans < 0 || k.trans > plan_.trans_capacity[i] || k.reused < 0 || k.reused > k.trans || k.remote < 0 ||
        k.remote > plan_.remote_capacity[i] || k.flush < 0 || k.flush > k.trans)
      fail("step_counts", fmt::format("step {}: (transition {}, reused {}, remote {}, flush {}) outside GPU {}'s "
                                      "capacities",
                                      s, k.trans, k.reused, k.remote, k.flush, i));
    counts_[s] = k;
  }
}

void PlanReader::read_topology() {
  const int64_t nv = plan_.num_vertices;
  const StepIndex nbr_index = index("nbr_index", "nbr");
  const auto nbr = values<vid_t>("nbr", nbr_index);
  // Strictly ascending per step: the transition sets and merged rows are
  // derived by merging these lists.
  const int64_t bad_nbr = load(nbr, nbr_index, &ChunkPlan::nbr, [&](size_t s, int64_t k, vid_t v) {
    return v < nv && (k == nbr_index.at[s] || nbr[k - 1] < v);
  });
  if (bad_nbr >= 0)
    fail("nbr", fmt::format("element {} (step {}) = {} is not a vertex above the one before (neighbor sets are "
                            "ascending vertex ids)",
                            bad_nbr, nbr_index.step_of(bad_nbr), nbr[bad_nbr]));

  std::vector<int64_t> offset_sizes;
  for (const ChunkPlan& cp : plan_.steps) offset_sizes.push_back(cp.num_dst() + 1);
  const StepIndex off_index = index("offsets_index", "offsets", &offset_sizes);
  const auto offsets = values<int64_t>("offsets", off_index);
  const int64_t bad = load(offsets, off_index, &ChunkPlan::offsets, [&](size_t s, int64_t k, int64_t x) {
    return k == off_index.at[s] ? x == 0 : x >= offsets[k - 1];
  });
  if (bad >= 0) {
    const size_t s = off_index.step_of(bad);
    const int64_t first = off_index.at[s];
    if (bad == first) fail("offsets", fmt::format("step {}: offsets must start at 0", s));
    fail("offsets", fmt::format("step {}: offsets decrease at destination {}", s, bad - first - 1));
  }
  std::vector<int64_t> edge_sizes;
  for (const ChunkPlan& cp : plan_.steps) edge_sizes.push_back(cp.offsets.back());
  const StepIndex edge_index = index("edge_index", "src_local", &edge_sizes);
  load_checked(
      "src_local", edge_index, &ChunkPlan::src_local,
      [&](size_t s, int64_t, uint32_t x) { return x < plan_.steps[s].nbr.size(); },
      "is outside the step's neighbor list");
}

// Everything else follows from the lists read (plan_derive.hpp); what
// disagrees with the recorded sizes and capacities is refused.
void PlanReader::derive() {
  if (const std::string problem = derive_plan_lists(plan_, counts_); !problem.empty()) fail("step_counts", problem);
}

void check_step_maxima(const ContainerReader& r, const Plan& plan) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const ChunkPlan& cp = plan.steps[s];
    if (cp.nbr.size() > plan.nbr_capacity[cp.part] || cp.num_dst() > plan.max_dst[cp.part] ||
        cp.num_edges() > plan.max_edges[cp.part])
      r.fail_in("capacity", fmt::format("step {} exceeds GPU {}'s recorded capacities", s, cp.part));
  }
}

std::string identity_text(const FileIdentity& id) {
  return fmt::format("{} bytes, checksum {:016x}", id.bytes, id.checksum);
}

// The sections of a plan file, in file order (docs/PLAN.md §3).
void write_sections(ContainerWriter& w, const Plan& plan, const PlanParams& params) {
  int64_t edges = 0;
  for (const ChunkPlan& cp : plan.steps) edges += cp.num_edges();
  const uint64_t meta[] = {static_cast<uint64_t>(plan.m),
                           static_cast<uint64_t>(plan.n),
                           static_cast<uint64_t>(plan.num_vertices),
                           plan.graph_identity.bytes,
                           plan.graph_identity.checksum,
                           plan.partition_identity.bytes,
                           plan.partition_identity.checksum,
                           std::bit_cast<uint64_t>(plan.cost_before),
                           std::bit_cast<uint64_t>(plan.cost_after),
                           std::bit_cast<uint64_t>(plan.seconds),
                           std::bit_cast<uint64_t>(params.row_bytes),
                           std::bit_cast<uint64_t>(params.profile.t_hd),
                           std::bit_cast<uint64_t>(params.profile.t_dd),
                           std::bit_cast<uint64_t>(params.profile.t_ru),
                           static_cast<uint64_t>(edges)};
  for (int k = 0; k < static_cast<int>(std::size(meta)); ++k) w.set_meta(k, meta[k]);
  uint64_t flags = 0;
  if (plan.reorganized) flags |= kPlanFlagReorganized;
  if (params.reorganize_requested) flags |= kPlanFlagReorganizeRequested;
  w.set_flags(flags);

  w.add<int64_t>("part_offsets", plan.part_offsets);
  write_step_headers(w, plan);
  write_per_gpu(w, plan);
  write_step_counts(w, plan);
  const std::vector<int64_t> nbr_index = index_of(plan, &ChunkPlan::nbr);
  add_index(w, "nbr_index", nbr_index);
  add_concat(w, "nbr", plan, &ChunkPlan::nbr, nbr_index);
  const std::vector<int64_t> offsets_index = index_of(plan, &ChunkPlan::offsets);
  add_index(w, "offsets_index", offsets_index);
  add_concat(w, "offsets", plan, &ChunkPlan::offsets, offsets_index);
  const std::vector<int64_t> edge_index = index_of(plan, &ChunkPlan::src_local);
  add_index(w, "edge_index", edge_index);
  add_concat(w, "src_local", plan, &ChunkPlan::src_local, edge_index);
}

}  // namespace

void write_plan(const std::string& path, const Plan& plan, const PlanParams& params,
                const std::function<void()>& alongside, PlanWriteTimes* times, bool sync) {
  check_shape(plan);
  const Timer total;
  PlanWriteTimes local;
  PlanWriteTimes& t = times ? *times : local;
  // The temporary file first: the derivation check and `alongside` run while
  // it is written, and a failure of any of them removes it (AtomicFile).
  ContainerWriter w(path, kPlanMagic, kPlanVersion);
  w.set_sync(sync);
  // Task order = the order of their errors (run_in_teams rethrows the lowest
  // task's): the caller's check, then the derivation, then the writing.
  enum class Part { alongside, derivation, sections };
  std::vector<Part> parts;
  if (alongside) parts.push_back(Part::alongside);
  parts.push_back(Part::derivation);
  parts.push_back(Part::sections);
  const int k = static_cast<int>(parts.size());
  // Side by side, every part with all of this thread's threads (teams of
  // threads * k / k): none of them alone kept a 64-core machine busy
  // (friendster-like: 837 s of CPU in a 43 s run, about 20 cores), and the
  // writing waits on the page cache. libgomp spins less when its threads
  // outnumber the cores. With one thread: one part after another, as before,
  // and none after a failure.
  const int threads = omp_get_max_threads();
  const int teams = threads > 1 ? k : 1;
  t.side_by_side = teams > 1;
  std::atomic<bool> failed{false};
  auto run_part = [&](Part part) {
    const Timer lap;
    switch (part) {
      case Part::alongside:
        alongside();
        t.alongside = lap.seconds();
        break;
      case Part::derivation:
        // The file leaves the derived lists out: a plan whose own lists are
        // not what reading derives would read back as another plan.
        if (const std::string problem = find_derivation_mismatch(plan); !problem.empty())
          throw file_error(path, fmt::format("internal error: cannot write the plan: {} (a plan file stores nbr, "
                                             "offsets and src_local and derives the other lists from them)",
                                             problem));
        t.derivation = lap.seconds();
        break;
      case Part::sections:
        write_sections(w, plan, params);
        t.sections = lap.seconds();
        break;
    }
  };
  run_in_teams(k, teams, threads * teams, [&](int64_t task) {
    if (failed) return;
    try {
      run_part(parts[static_cast<size_t>(task)]);
    } catch (...) {
      failed = true;
      throw;
    }
  });
  const Timer commit;
  w.commit();
  t.commit = commit.seconds();
  t.total = total.seconds();
  log::debug("write_plan: lists checked against their derivation in {:.2f} s, sections written in {:.2f} s{}, "
             "committed in {:.2f} s (side by side: {:.2f} s)",
             t.derivation, t.sections, alongside ? fmt::format(", the caller's task {:.2f} s", t.alongside) : "",
             t.commit, t.total);
}

void check_plan_version(const std::string& path) {
  // Magic and version are the header's first 12 bytes (docs/FORMATS.md).
  std::ifstream in(path, std::ios::binary);
  char head[12];
  if (!in.read(head, sizeof head) || std::memcmp(head, kPlanMagic, 8) != 0) return;
  uint32_t version = 0;
  std::memcpy(&version, head + 8, 4);
  if (version != kPlanVersion)
    throw file_error(path, fmt::format("plan file format {}, this build reads {}: rerun ht-reorganize", version,
                                       kPlanVersion));
}

Plan read_plan(const std::string& path, ReadOptions opt, PlanParams* params, PhaseTimes* times) {
  Timer t;
  auto lap = [&](const char* name) {
    if (times) times->add(name, t.seconds());
    t.reset();
  };
  check_plan_version(path);
  ContainerReader r(path, kPlanMagic, kPlanVersion, opt);
  lap("plan checksums");
  Plan plan;
  PlanReader reader(r, plan);
  reader.read_header();
  reader.read_steps();
  reader.read_per_gpu();
  reader.read_counts();
  reader.read_topology();
  check_step_maxima(r, plan);
  lap("plan lists");
  reader.derive();
  if (const std::string problem = find_capacity_mismatch(plan); !problem.empty()) r.fail_in("capacity", problem);
  lap("plan derived");
  if (params) {
    params->row_bytes = as_double(r.meta(kPlanMetaRowBytes));
    params->profile = {as_double(r.meta(kPlanMetaTHd)), as_double(r.meta(kPlanMetaTDd)),
                       as_double(r.meta(kPlanMetaTRu))};
    params->reorganize_requested = (r.flags() & kPlanFlagReorganizeRequested) != 0;
  }
  return plan;
}

void check_plan_matches(const Plan& plan, FileIdentity graph, FileIdentity partition) {
  if (!(plan.graph_identity == graph))
    throw Error(fmt::format("plan was made for another graph (plan: {}; graph file: {}): rerun ht-reorganize",
                            identity_text(plan.graph_identity), identity_text(graph)));
  if (!(plan.partition_identity == partition))
    throw Error(
        fmt::format("plan was made for another partition (plan: {}; partition file: {}): rerun ht-reorganize",
                    identity_text(plan.partition_identity), identity_text(partition)));
}

}  // namespace ht
