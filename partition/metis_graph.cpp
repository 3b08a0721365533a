#include "partition/metis_graph.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/progress.hpp"

namespace ht {
namespace {

// Out-neighbor lists (the transpose of the CSC), each ascending because
// destinations are visited in increasing order. Sequential: deterministic,
// and each edge costs one write.
struct OutLists {
  std::vector<int64_t> offsets;
  std::vector<vid_t> targets;
};

OutLists transpose(const GraphView& g) {
  const int64_t n = g.num_vertices;
  OutLists t;
  t.offsets.assign(n + 1, 0);
  for (int64_t i = 0; i < g.num_edges; ++i) ++t.offsets[static_cast<int64_t>(g.sources[i]) + 1];
  for (int64_t v = 0; v < n; ++v) t.offsets[v + 1] += t.offsets[v];
  t.targets.resize(g.num_edges);
  std::vector<int64_t> pos(t.offsets.begin(), t.offsets.end() - 1);
  for (int64_t v = 0; v < n; ++v)
    for (vid_t u : g.in_neighbors(v)) t.targets[pos[u]++] = static_cast<vid_t>(v);
  return t;
}

// Sorted union of two ascending lists without `self` and without repeats;
// with out == nullptr only counts.
int64_t merge_row(std::span<const vid_t> a, std::span<const vid_t> b, vid_t self, idx_t* out) {
  int64_t len = 0;
  int64_t last = -1;
  auto emit = [&](vid_t x) {
    if (x == self || static_cast<int64_t>(x) == last) return;
    last = x;
    if (out) out[len] = static_cast<idx_t>(x);
    ++len;
  };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) emit(a[i] <= b[j] ? a[i++] : b[j++]);
  while (i < a.size()) emit(a[i++]);
  while (j < b.size()) emit(b[j++]);
  return len;
}

// In-neighbors of v in ascending order (copied and sorted only when the
// graph does not promise sorted rows).
std::span<const vid_t> sorted_in_neighbors(const GraphView& g, int64_t v, std::vector<vid_t>& scratch) {
  std::span<const vid_t> in = g.in_neighbors(v);
  if (g.flags.sorted_neighbors) return in;
  scratch.assign(in.begin(), in.end());
  std::sort(scratch.begin(), scratch.end());
  return scratch;
}

}  // namespace

int64_t metis_index_limit() { return static_cast<int64_t>(std::numeric_limits<idx_t>::max()); }

void check_metis_range(int64_t count, const char* what) {
  if (count <= metis_index_limit()) return;
  throw Error(fmt::format(
      "graph too large for METIS: {} {} exceed the range of METIS's {}-bit idx_t (at most {}); "
      "use --method random or --method range, or rebuild with a METIS compiled with IDXTYPEWIDTH=64",
      count, what, 8 * sizeof(idx_t), metis_index_limit()));
}

MetisGraph build_metis_graph(const GraphView& g) {
  const int64_t n = g.num_vertices;
  check_metis_range(n, "vertices");
  const OutLists out = transpose(g);
  auto out_neighbors = [&](int64_t v) {
    return std::span<const vid_t>(out.targets).subspan(out.offsets[v], out.offsets[v + 1] - out.offsets[v]);
  };
  Progress progress("symmetrize for METIS", 2 * n, "rows");
  // Pass 1: length of every merged row; pass 2: write the rows.
  std::vector<int64_t> off(n + 1, 0);
#pragma omp parallel
  {
    std::vector<vid_t> scratch;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t v = 0; v < n; ++v) {
      off[v + 1] = merge_row(sorted_in_neighbors(g, v, scratch), out_neighbors(v), static_cast<vid_t>(v), nullptr);
      if ((v & 1023) == 1023) progress.add(1024);
    }
  }
  for (int64_t v = 0; v < n; ++v) off[v + 1] += off[v];
  check_metis_range(off[n], "symmetrized adjacency entries (2 per undirected edge)");
  MetisGraph mg;
  mg.adjncy.resize(off[n]);
#pragma omp parallel
  {
    std::vector<vid_t> scratch;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t v = 0; v < n; ++v) {
      merge_row(sorted_in_neighbors(g, v, scratch), out_neighbors(v), static_cast<vid_t>(v), mg.adjncy.data() + off[v]);
      if ((v & 1023) == 1023) progress.add(1024);
    }
  }
  progress.add(2 * (n % 1024));
  progress.finish();
  mg.xadj.resize(n + 1);
  for (int64_t v = 0; v <= n; ++v) mg.xadj[v] = static_cast<idx_t>(off[v]);
  return mg;
}

}  // namespace ht
