#include "graph/build.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <numeric>

#include "core/error.hpp"

namespace ht {
namespace {

// Sorts each destination's (source, weight) range by source; stable so that
// "keep the first" in dedup keeps the input order's first.
void sort_ranges(Graph& g) {
  const bool weighted = !g.weights.empty();
#pragma omp parallel
  {
    std::vector<std::pair<vid_t, float>> tmp;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t v = 0; v < g.num_vertices; ++v) {
      const int64_t b = g.offsets[v], e = g.offsets[v + 1];
      if (e - b < 2) continue;
      if (!weighted) {
        std::sort(g.sources.begin() + b, g.sources.begin() + e);
        continue;
      }
      tmp.clear();
      for (int64_t i = b; i < e; ++i) tmp.emplace_back(g.sources[i], g.weights[i]);
      std::stable_sort(tmp.begin(), tmp.end(), [](auto& x, auto& y) { return x.first < y.first; });
      for (int64_t i = b; i < e; ++i) {
        g.sources[i] = tmp[i - b].first;
        g.weights[i] = tmp[i - b].second;
      }
    }
  }
  g.flags.sorted_neighbors = true;
}

// Keeps the edges for which keep(v, i) is true (i = index into sources).
template <typename Keep>
Graph filter_edges(Graph&& g, Keep keep) {
  const int64_t n = g.num_vertices;
  std::vector<int64_t> counts(n + 1, 0);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v) {
    int64_t c = 0;
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) c += keep(v, i) ? 1 : 0;
    counts[v + 1] = c;
  }
  std::partial_sum(counts.begin(), counts.end(), counts.begin());
  Graph out;
  out.num_vertices = n;
  out.sources.resize(counts[n]);
  if (!g.weights.empty()) out.weights.resize(counts[n]);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v) {
    int64_t o = counts[v];
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (!keep(v, i)) continue;
      out.sources[o] = g.sources[i];
      if (!g.weights.empty()) out.weights[o] = g.weights[i];
      ++o;
    }
  }
  out.offsets = std::move(counts);
  out.feature_dim = g.feature_dim;
  out.feature_dtype = g.feature_dtype;
  out.features = std::move(g.features);
  out.features16 = std::move(g.features16);
  out.num_classes = g.num_classes;
  out.labels = std::move(g.labels);
  out.split = std::move(g.split);
  out.orig_ids = std::move(g.orig_ids);
  out.flags = g.flags;
  return out;
}

}  // namespace

Graph csc_from_edges(EdgeList&& el) {
  const int64_t n = el.num_vertices, m = el.size();
  HT_CHECK(n <= kMaxVertices32, "{} vertices exceed the 32-bit id limit", n);
  HT_CHECK(static_cast<int64_t>(el.dst.size()) == m, "edge list: {} sources but {} destinations", m,
           el.dst.size());
  const bool weighted = !el.weight.empty();
  Graph g;
  g.num_vertices = n;
  g.offsets.assign(n + 1, 0);
  // Count in-degrees with per-thread histograms merged by atomics-free prefix.
  {
    std::vector<std::atomic<int64_t>> deg(n);
#pragma omp parallel for
    for (int64_t i = 0; i < m; ++i) deg[el.dst[i]].fetch_add(1, std::memory_order_relaxed);
    for (int64_t v = 0; v < n; ++v) g.offsets[v + 1] = g.offsets[v] + deg[v].load();
  }
  g.sources.resize(m);
  if (weighted) g.weights.resize(m);
  // Scatter sequentially: stable and deterministic (the input order is kept
  // within a destination before the per-range sort).
  {
    std::vector<int64_t> pos(g.offsets.begin(), g.offsets.end() - 1);
    for (int64_t i = 0; i < m; ++i) {
      const int64_t p = pos[el.dst[i]]++;
      g.sources[p] = el.src[i];
      if (weighted) g.weights[p] = el.weight[i];
    }
  }
  el = EdgeList{};
  sort_ranges(g);
  return g;
}

void sort_neighbors(Graph& g) { sort_ranges(g); }

Graph drop_self_loops(Graph&& g) {
  const auto& src = g.sources;
  Graph out = filter_edges(std::move(g), [&](int64_t v, int64_t i) { return static_cast<int64_t>(src[i]) != v; });
  out.flags.has_self_loops = false;
  return out;
}

Graph drop_duplicate_edges(Graph&& g) {
  if (!g.flags.sorted_neighbors) sort_ranges(g);
  const auto& src = g.sources;
  const auto& off = g.offsets;
  Graph out = filter_edges(std::move(g), [&](int64_t v, int64_t i) { return i == off[v] || src[i] != src[i - 1]; });
  out.flags.no_duplicates = true;
  return out;
}

Graph add_self_loops(Graph&& g) {
  const int64_t n = g.num_vertices;
  std::vector<uint8_t> has(n, 0);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v)
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i)
      if (static_cast<int64_t>(g.sources[i]) == v) has[v] = 1;
  std::vector<int64_t> off(n + 1, 0);
  for (int64_t v = 0; v < n; ++v) off[v + 1] = off[v] + (g.offsets[v + 1] - g.offsets[v]) + (has[v] ? 0 : 1);
  std::vector<vid_t> src(off[n]);
  std::vector<float> w(g.weights.empty() ? 0 : off[n]);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v) {
    int64_t o = off[v];
    bool placed = has[v];
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (!placed && g.sources[i] > static_cast<vid_t>(v)) {  // keep sorted order
        src[o] = static_cast<vid_t>(v);
        if (!w.empty()) w[o] = 1.0f;
        ++o;
        placed = true;
      }
      src[o] = g.sources[i];
      if (!w.empty()) w[o] = g.weights[i];
      ++o;
    }
    if (!placed) {
      src[o] = static_cast<vid_t>(v);
      if (!w.empty()) w[o] = 1.0f;
    }
  }
  g.offsets = std::move(off);
  g.sources = std::move(src);
  g.weights = std::move(w);
  g.flags.has_self_loops = n > 0;
  return std::move(g);
}

Graph symmetrize(Graph&& g) {
  const int64_t n = g.num_vertices, m = g.num_edges();
  EdgeList el;
  el.num_vertices = n;
  el.src.resize(2 * m);
  el.dst.resize(2 * m);
  if (!g.weights.empty()) el.weight.resize(2 * m);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      el.src[2 * i] = g.sources[i];
      el.dst[2 * i] = static_cast<vid_t>(v);
      el.src[2 * i + 1] = static_cast<vid_t>(v);
      el.dst[2 * i + 1] = g.sources[i];
      if (!el.weight.empty()) el.weight[2 * i] = el.weight[2 * i + 1] = g.weights[i];
    }
  }
  g.sources = {};
  g.weights = {};
  Graph t = csc_from_edges(std::move(el));
  t.feature_dim = g.feature_dim;
  t.feature_dtype = g.feature_dtype;
  t.features = std::move(g.features);
  t.features16 = std::move(g.features16);
  t.num_classes = g.num_classes;
  t.labels = std::move(g.labels);
  t.split = std::move(g.split);
  t.orig_ids = std::move(g.orig_ids);
  t.flags = g.flags;
  t.flags.sorted_neighbors = true;
  t = drop_duplicate_edges(std::move(t));
  t.flags.symmetric = true;
  return t;
}

// Over each vertex's own range [offsets[v], offsets[v + 1]) rather than
// [0, num_edges): the same edges in a whole graph, and only the view's edges
// in a view of part of a larger edge array (tests/test_offsets_64bit.cpp).
std::vector<int64_t> out_degrees(const GraphView& g) {
  std::vector<int64_t> deg(g.num_vertices, 0);
#pragma omp parallel for schedule(dynamic, 1024) if (g.num_edges > (int64_t{1} << 16))
  for (int64_t v = 0; v < g.num_vertices; ++v)
    for (vid_t u : g.in_neighbors(v)) std::atomic_ref<int64_t>(deg[u]).fetch_add(1, std::memory_order_relaxed);
  return deg;
}

namespace {

// Whether the multiset of edges (u, v) equals that of (v, u), for sorted
// in-lists: first a probe of a few thousand vertices spread over the ids
// (a directed graph is settled there, before any pass over all E edges:
// 2 s of the 2.5 G-edge web graph's out-degree count on 64 cores), then
// every vertex's out-degree against its in-degree (which settles almost
// every other directed graph), then for every v and every distinct source u
// of v, u occurs in in(v) as often as v occurs in in(u) (binary searches, in
// parallel, no transpose: a symmetric graph of E edges would otherwise need
// another E ids of memory). The probe only finds mismatches the full check
// would find, so the answer is the same.
bool is_symmetric_sorted(const GraphView& g) {
  const int64_t n = g.num_vertices;
  // Whether some distinct source u of v occurs in in(v) other than as often as v in in(u).
  const auto mismatch_at = [&](int64_t v) {
    const std::span<const vid_t> in_v = g.in_neighbors(v);
    for (size_t i = 0; i < in_v.size();) {
      const vid_t u = in_v[i];
      size_t j = i + 1;
      while (j < in_v.size() && in_v[j] == u) ++j;
      const std::span<const vid_t> in_u = g.in_neighbors(u);
      const auto [lo, hi] = std::equal_range(in_u.begin(), in_u.end(), static_cast<vid_t>(v));
      if (hi - lo != static_cast<std::ptrdiff_t>(j - i)) return true;
      i = j;
    }
    return false;
  };
  constexpr int64_t kProbes = 4096;
  for (int64_t k = 0; k < std::min(n, kProbes); ++k)
    if (mismatch_at(n <= kProbes ? k : k * (n / kProbes))) return false;
  const std::vector<int64_t> out = out_degrees(g);
  std::atomic<bool> symmetric = true;
#pragma omp parallel for schedule(static) if (n > (int64_t{1} << 16))
  for (int64_t v = 0; v < n; ++v)
    if (out[v] != g.in_degree(v)) symmetric.store(false, std::memory_order_relaxed);
  if (!symmetric) return false;
#pragma omp parallel for schedule(dynamic, 1024) if (g.num_edges > (int64_t{1} << 16))
  for (int64_t v = 0; v < n; ++v) {
    if (!symmetric.load(std::memory_order_relaxed)) continue;
    if (mismatch_at(v)) symmetric.store(false, std::memory_order_relaxed);
  }
  return symmetric;
}

}  // namespace

GraphFlags detect_flags(const GraphView& g) {
  GraphFlags f = g.flags;
  const int64_t n = g.num_vertices;
  bool loops = false, sorted = true, dups = false;
#pragma omp parallel for schedule(dynamic, 1024) reduction(|| : loops, dups) reduction(&& : sorted)
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t i = g.offsets[v]; i < g.offsets[v + 1]; ++i) {
      if (static_cast<int64_t>(g.sources[i]) == v) loops = true;
      if (i > g.offsets[v]) {
        if (g.sources[i] < g.sources[i - 1]) sorted = false;
        if (g.sources[i] == g.sources[i - 1]) dups = true;
      }
    }
  }
  f.has_self_loops = loops;
  f.sorted_neighbors = sorted;
  f.symmetric = sorted && is_symmetric_sorted(g);  // unsorted: unknown, reported as not symmetric
  f.no_duplicates = sorted && !dups;
  return f;
}

}  // namespace ht
