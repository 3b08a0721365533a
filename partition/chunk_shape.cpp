#include "partition/chunk_shape.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "core/error.hpp"
#include "partition/plan_cost.hpp"
#include "partition/reorganize.hpp"
#include "partition/vertex_bits.hpp"

namespace ht {
namespace {

// Below this many edges a parallel region costs more than it saves.
constexpr int64_t kParallelMin = int64_t{1} << 15;

// Chunk (i, c) as build_chunks sees it in new ids: N = the sources of its
// destinations' in-edges and the destinations themselves, ascending; edges =
// in-edges without self-loops plus one self-loop per destination.
struct ChunkSets {
  std::vector<std::vector<vid_t>> nbr;  // index i * n + c
  std::vector<int64_t> edges;
};

void chunk_neighbors(const GraphView& g, const Partition& p, int64_t begin, int64_t end, VertexBits& seen,
                     std::vector<vid_t>& nbr, int64_t& edges) {
  edges = 0;
  for (int64_t v = begin; v < end; ++v) {
    const vid_t old = p.new_to_old[v];
    for (vid_t s : g.in_neighbors(old)) {
      if (s == old) continue;  // the builder keeps exactly one self-loop
      ++edges;
      const vid_t w = p.old_to_new[s];
      if (seen.insert(w)) nbr.push_back(w);
    }
    ++edges;
    if (seen.insert(static_cast<vid_t>(v))) nbr.push_back(static_cast<vid_t>(v));
  }
  seen.clear(nbr);
  std::sort(nbr.begin(), nbr.end());
}

ChunkSets chunk_sets(const GraphView& g, const Partition& p) {
  const int64_t chunks = static_cast<int64_t>(p.m()) * p.n();
  ChunkSets s;
  s.nbr.resize(chunks);
  s.edges.assign(chunks, 0);
#pragma omp parallel if (g.num_edges >= kParallelMin)
  {
    VertexBits seen(g.num_vertices);
#pragma omp for schedule(dynamic, 1)
    for (int64_t k = 0; k < chunks; ++k) {
      const int i = static_cast<int>(k / p.n()), c = static_cast<int>(k % p.n());
      chunk_neighbors(g, p, p.chunk_begin(i, c), p.chunk_end(i, c), seen, s.nbr[k], s.edges[k]);
    }
  }
  return s;
}

// build_plan's choice: Algorithm 4's order when it does not raise the cost
// of Eq. 4, else the partitioner's; with that order's batch unions.
BatchOrder plan_order(const ChunkNeighbors& nbr, int m, int n, int64_t num_vertices, const PlanBuildOptions& opt,
                      std::vector<std::vector<vid_t>>& unions) {
  BatchOrder order = BatchOrder::identity(m, n);
  unions = batch_unions(nbr, order);
  if (!opt.reorganize) return order;
  std::vector<std::vector<vid_t>> candidate_unions;
  BatchOrder candidate = reorganize(nbr, m, n, num_vertices, &candidate_unions);
  const double before = comm_cost(volumes_of(nbr, unions), opt.profile, 1.0);
  const double after = comm_cost(volumes_of(nbr, candidate_unions), opt.profile, 1.0);
  if (after > before) return order;
  unions = std::move(candidate_unions);
  return candidate;
}

// |a ∩ b| of two ascending lists.
int64_t common(std::span<const vid_t> a, std::span<const vid_t> b) {
  int64_t count = 0;
  size_t x = 0;
  for (vid_t v : b) {
    while (x < a.size() && a[x] < v) ++x;
    if (x < a.size() && a[x] == v) ++count;
  }
  return count;
}

// The members of an ascending list in [lo, hi).
std::span<const vid_t> in_range(std::span<const vid_t> list, int64_t lo, int64_t hi) {
  auto less = [](vid_t v, int64_t x) { return static_cast<int64_t>(v) < x; };
  const auto first = std::lower_bound(list.begin(), list.end(), lo, less);
  const auto last = std::lower_bound(first, list.end(), hi, less);
  return {first, last};
}

void check_maps(const GraphView& g, const Partition& p) {
  check_partition_shape(g, p);
  HT_CHECK(p.new_to_old.size() == static_cast<size_t>(g.num_vertices) &&
               p.old_to_new.size() == static_cast<size_t>(g.num_vertices),
           "partition has {} / {} id map entries for {} vertices", p.new_to_old.size(), p.old_to_new.size(),
           g.num_vertices);
}

// Per step: sizes of the chunk placed there, its transition set (GPU i's
// part of the batch union), the rows reused from the batch before (the
// builder keeps them in their slots), the remote rows (N outside partition
// i) and the flushes (transition rows not in the next batch's set).
void fill_steps(PlanShape& s, const Partition& p, const ChunkSets& sets, const BatchOrder& order,
                const std::vector<std::vector<vid_t>>& unions) {
  const int m = s.m, n = s.n;
  std::vector<std::span<const vid_t>> trans(static_cast<size_t>(m) * n);
  s.steps.assign(trans.size(), {});
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      const size_t k = static_cast<size_t>(i) * n + order.at(j, i);
      const size_t at = static_cast<size_t>(j) * m + i;
      const int64_t lo = p.part_offsets[i], hi = p.part_offsets[i + 1];
      StepShape& st = s.steps[at];
      st.dst = p.chunk_end(i, order.at(j, i)) - p.chunk_begin(i, order.at(j, i));
      st.edges = sets.edges[k];
      st.nbr = static_cast<int64_t>(sets.nbr[k].size());
      st.remote = st.nbr - static_cast<int64_t>(in_range(sets.nbr[k], lo, hi).size());
      trans[at] = in_range(unions[j], lo, hi);
      st.trans = static_cast<int64_t>(trans[at].size());
      st.reused = j > 0 ? common(trans[at - m], trans[at]) : 0;
    }
  for (size_t at = 0; at < s.steps.size(); ++at) {
    const bool last = at + m >= s.steps.size();
    s.steps[at].flush = s.steps[at].trans - (last ? 0 : s.steps[at + m].reused);
  }
}

// The builder's capacities: a transition buffer of the largest set (slots
// freed by leaving vertices are taken first, so it never grows beyond that),
// and the largest remote area, neighbor set, destination and edge counts.
void fill_capacities(PlanShape& s) {
  const size_t m = static_cast<size_t>(s.m);
  for (auto* v : {&s.trans_capacity, &s.remote_capacity, &s.nbr_capacity, &s.max_dst, &s.max_edges}) v->assign(m, 0);
  for (size_t at = 0; at < s.steps.size(); ++at) {
    const StepShape& st = s.steps[at];
    const size_t i = at % m;
    s.trans_capacity[i] = std::max(s.trans_capacity[i], st.trans);
    s.remote_capacity[i] = std::max(s.remote_capacity[i], st.remote);
    s.nbr_capacity[i] = std::max(s.nbr_capacity[i], st.nbr);
    s.max_dst[i] = std::max(s.max_dst[i], st.dst);
    s.max_edges[i] = std::max(s.max_edges[i], st.edges);
  }
}

// The bound's steps (identity placement): own rows of the partition as the
// transition set, kept in place, nothing flushed; the capacity of GPU i is
// the most rows of partition i one chunk reads (every batch's set holds them).
void fill_steps_bound(PlanShape& s, const Partition& p, const ChunkSets& sets) {
  const int m = s.m, n = s.n;
  s.steps.assign(static_cast<size_t>(m) * n, {});
  std::vector<int64_t> most(m, 0);
  for (int i = 0; i < m; ++i)
    for (int c = 0; c < n; ++c) {
      const size_t k = static_cast<size_t>(i) * n + c;
      for (int o = 0; o < m; ++o)
        most[o] = std::max<int64_t>(most[o], in_range(sets.nbr[k], p.part_offsets[o], p.part_offsets[o + 1]).size());
      StepShape& st = s.steps[static_cast<size_t>(c) * m + i];
      st.dst = p.chunk_end(i, c) - p.chunk_begin(i, c);
      st.edges = sets.edges[k];
      st.nbr = static_cast<int64_t>(sets.nbr[k].size());
      st.trans = static_cast<int64_t>(in_range(sets.nbr[k], p.part_offsets[i], p.part_offsets[i + 1]).size());
      st.remote = st.nbr - st.trans;
      st.reused = c > 0 ? st.trans : 0;
    }
  fill_capacities(s);
  s.trans_capacity = most;
}

}  // namespace

PlanShape partition_plan_shape(const GraphView& g, const Partition& p, const PlanBuildOptions& opt) {
  check_maps(g, p);
  const ChunkSets sets = chunk_sets(g, p);
  ChunkNeighbors nbr(sets.nbr.begin(), sets.nbr.end());
  std::vector<std::vector<vid_t>> unions;
  const BatchOrder order = plan_order(nbr, p.m(), p.n(), g.num_vertices, opt, unions);
  PlanShape s;
  s.m = p.m();
  s.n = p.n();
  s.num_vertices = g.num_vertices;
  fill_steps(s, p, sets, order, unions);
  fill_capacities(s);
  return s;
}

PlanShape partition_plan_shape_bound(const GraphView& g, const Partition& p) {
  check_maps(g, p);
  PlanShape s;
  s.m = p.m();
  s.n = p.n();
  s.num_vertices = g.num_vertices;
  fill_steps_bound(s, p, chunk_sets(g, p));
  return s;
}

}  // namespace ht
