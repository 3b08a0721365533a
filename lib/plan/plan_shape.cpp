#include "plan/plan_shape.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "plan/plan_file.hpp"

namespace ht {

PlanShape shape_of(const Plan& plan) {
  PlanShape s;
  s.m = plan.m;
  s.n = plan.n;
  s.num_vertices = plan.num_vertices;
  for (const ChunkPlan& c : plan.steps) {
    int64_t reused = 0;
    for (uint8_t r : c.trans_reused) reused += r ? 1 : 0;
    s.steps.push_back({c.num_dst(), c.num_edges(), static_cast<int64_t>(c.nbr.size()),
                       static_cast<int64_t>(c.trans_vid.size()), reused, static_cast<int64_t>(c.remote_vid.size()),
                       static_cast<int64_t>(c.flush_slot.size())});
  }
  for (int i = 0; i < plan.m; ++i) {
    s.trans_capacity.push_back(plan.trans_capacity[i]);
    s.remote_capacity.push_back(plan.remote_capacity[i]);
    s.nbr_capacity.push_back(plan.nbr_capacity[i]);
    s.max_dst.push_back(plan.max_dst[i]);
    s.max_edges.push_back(plan.max_edges[i]);
  }
  return s;
}

namespace {

// Per-step counts from an offset table of steps + 1 entries that starts at
// 0, never decreases and ends at the length of the section it indexes.
bool step_counts(const ContainerReader& r, const char* index, const char* data, size_t steps,
                 std::vector<int64_t>& out) {
  const auto idx = r.array<int64_t>(index, steps + 1);
  if (idx[0] != 0 || static_cast<uint64_t>(idx[steps]) != r.section(data).count()) return false;
  out.resize(steps);
  for (size_t s = 0; s < steps; ++s) {
    out[s] = idx[s + 1] - idx[s];
    if (out[s] < 0) return false;
  }
  return true;
}

// What read_plan would refuse among the numbers a shape holds: recorded
// maxima that are not its steps' (a corrupt max_dst of 200 M would otherwise
// be planned as host memory and blamed on the machine), counts beyond the
// capacities, capacities beyond the graph.
bool plausible(const PlanShape& s) {
  const size_t m = static_cast<size_t>(s.m);
  std::vector<int64_t> dst(m, 0), edges(m, 0), nbr(m, 0);
  for (size_t k = 0; k < s.steps.size(); ++k) {
    const StepShape& t = s.steps[k];
    const size_t i = k % m;  // step (j, i) is steps[j * m + i]
    if (t.dst > s.num_vertices || t.nbr > s.num_vertices || t.trans > s.trans_capacity[i] ||
        t.remote > s.remote_capacity[i] || t.reused > t.trans || t.flush > t.trans)
      return false;
    dst[i] = std::max(dst[i], t.dst);
    edges[i] = std::max(edges[i], t.edges);
    nbr[i] = std::max(nbr[i], t.nbr);
  }
  for (size_t i = 0; i < m; ++i)
    if (s.max_dst[i] != dst[i] || s.max_edges[i] != edges[i] || s.nbr_capacity[i] != nbr[i] ||
        s.trans_capacity[i] > s.num_vertices || s.remote_capacity[i] > s.num_vertices)
      return false;
  return true;
}

}  // namespace

std::optional<PlanShape> read_plan_shape(const std::string& path) {
  try {
    // The header checksum is always verified; the sections' are left to read_plan.
    const ContainerReader r(path, kPlanMagic, kPlanVersion, {false});
    PlanShape s;
    const uint64_t m = r.meta(kPlanMetaM), n = r.meta(kPlanMetaN);
    if (m < 1 || n < 1 || m > (1u << 16) || n > (1u << 24) || m * n > (uint64_t{1} << 28)) return std::nullopt;
    s.m = static_cast<int>(m);
    s.n = static_cast<int>(n);
    s.num_vertices = static_cast<int64_t>(r.meta(kPlanMetaVertices));
    const size_t steps = m * n;
    std::vector<int64_t> nbr, offsets, edges;
    if (!step_counts(r, "nbr_index", "nbr", steps, nbr) || !step_counts(r, "offsets_index", "offsets", steps, offsets) ||
        !step_counts(r, "edge_index", "src_local", steps, edges))
      return std::nullopt;
    // The derived lists' sizes are recorded per step: (trans, reused, remote, flush).
    const auto counts = r.array<int64_t>("step_counts", 4 * steps);
    s.steps.resize(steps);
    for (size_t k = 0; k < steps; ++k) {
      const int64_t* c = counts.data() + 4 * k;
      if (offsets[k] < 1 || c[0] < 0 || c[1] < 0 || c[2] < 0 || c[3] < 0) return std::nullopt;
      s.steps[k] = {offsets[k] - 1, edges[k], nbr[k], c[0], c[1], c[2], c[3]};
    }
    const auto caps = r.array<uint32_t>("capacity", 3 * m);
    const auto sizes = r.array<int64_t>("max_sizes", 2 * m);
    for (size_t i = 0; i < m; ++i) {
      s.trans_capacity.push_back(caps[3 * i]);
      s.remote_capacity.push_back(caps[3 * i + 1]);
      s.nbr_capacity.push_back(caps[3 * i + 2]);
      s.max_dst.push_back(sizes[2 * i]);
      s.max_edges.push_back(sizes[2 * i + 1]);
    }
    if (!plausible(s)) return std::nullopt;
    return s;
  } catch (const Error&) {
    return std::nullopt;  // read_plan reports what is wrong with the file
  }
}

int64_t plan_memory_bytes(const PlanShape& s) {
  int64_t b = static_cast<int64_t>(sizeof(Plan)) + 8 * (s.m + 1) + 40 * s.m;
  for (const StepShape& t : s.steps) {
    b += static_cast<int64_t>(sizeof(ChunkPlan));
    b += 4 * t.nbr + 8 * (t.dst + 1) + 12 * t.edges;  // nbr; offsets; src_local, src_merged, src_vid
    b += 9 * t.trans + 12 * t.remote + 8 * t.flush;    // vid, slot, reused; vid, gpu, slot; slot, vid
  }
  return b;
}

}  // namespace ht
