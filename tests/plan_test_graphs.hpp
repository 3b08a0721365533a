#pragma once
// Small graphs and hand-made partitions for the reorganization and plan
// tests: uniform random, R-MAT-like (skewed degrees) and community-like
// (dense blocks), each seeded; partitions by id ranges or by a random
// vertex assignment followed by ht::renumber.
#include <algorithm>
#include <numeric>
#include <utility>

#include "core/rng.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"
#include "partition/renumbering.hpp"

namespace ht::test {

enum class GraphKind { random, rmat, community };

inline const char* kind_name(GraphKind k) {
  return k == GraphKind::random ? "random" : k == GraphKind::rmat ? "rmat" : "community";
}

// A directed multigraph; `self_loops` adds some v->v edges (twice for a few
// vertices) so the plan's one-self-loop rule is exercised.
inline Graph make_graph(GraphKind kind, int64_t num_vertices, int64_t num_edges, uint64_t seed,
                        bool self_loops = true) {
  rng::Stream r(seed, 7);
  EdgeList el;
  el.num_vertices = num_vertices;
  const auto nv = static_cast<uint64_t>(num_vertices);
  const uint64_t blocks = 6;
  for (int64_t e = 0; e < num_edges; ++e) {
    uint64_t s = 0, d = 0;
    if (kind == GraphKind::random) {
      s = r.below(nv), d = r.below(nv);
    } else if (kind == GraphKind::rmat) {
      // Recursive quadrant choice (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) over
      // the next power of two, rejected when outside the vertex range.
      uint64_t span = 1;
      while (span < nv) span <<= 1;
      do {
        s = d = 0;
        for (uint64_t half = span >> 1; half > 0; half >>= 1) {
          const double x = r.uniform();
          if (x >= 0.57 && x < 0.76) d += half;
          else if (x >= 0.76 && x < 0.95) s += half;
          else if (x >= 0.95) s += half, d += half;
        }
      } while (s >= nv || d >= nv);
    } else {
      // Communities = `blocks` contiguous id ranges; 85% of edges inside.
      d = r.below(nv);
      s = r.below(nv);
      if (r.uniform() < 0.85) {
        const uint64_t c = d * blocks / nv;
        const uint64_t lo = (c * nv + blocks - 1) / blocks, hi = ((c + 1) * nv + blocks - 1) / blocks;
        s = lo + r.below(hi - lo);
      }
    }
    el.src.push_back(static_cast<vid_t>(s));
    el.dst.push_back(static_cast<vid_t>(d));
  }
  if (self_loops) {
    for (int64_t v = 0; v < num_vertices; v += 5) {
      el.src.push_back(static_cast<vid_t>(v));
      el.dst.push_back(static_cast<vid_t>(v));
      if (v % 3 == 0) el.src.push_back(static_cast<vid_t>(v)), el.dst.push_back(static_cast<vid_t>(v));
    }
  }
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  return g;
}

// Chunk offsets splitting each partition range into n near-equal ranges.
inline std::vector<int64_t> even_chunks(const std::vector<int64_t>& part_offsets, int n) {
  std::vector<int64_t> out{0};
  for (size_t i = 0; i + 1 < part_offsets.size(); ++i) {
    const int64_t b = part_offsets[i], len = part_offsets[i + 1] - b;
    for (int c = 1; c <= n; ++c) out.push_back(b + len * c / n);
  }
  return out;
}

// Identity ids; partition i = an equal range of ids.
inline Partition range_partition(const Graph& g, int m, int n) {
  Partition p;
  p.params.parts = m;
  p.params.chunks = n;
  p.num_vertices = g.num_vertices;
  p.num_edges = g.num_edges();
  p.new_to_old.resize(g.num_vertices);
  std::iota(p.new_to_old.begin(), p.new_to_old.end(), 0);
  p.old_to_new = p.new_to_old;
  for (int i = 0; i <= m; ++i) p.part_offsets.push_back(g.num_vertices * i / m);
  p.chunk_offsets = even_chunks(p.part_offsets, n);
  return p;
}

// Every vertex in a random partition, then renumbered; returns the graph in
// new ids and the partition.
inline std::pair<Graph, Partition> shuffled_partition(const Graph& g, int m, int n, uint64_t seed) {
  rng::Stream r(seed, 11);
  std::vector<int32_t> part(g.num_vertices);
  for (auto& x : part) x = static_cast<int32_t>(r.below(static_cast<uint64_t>(m)));
  Partition p;
  p.params.parts = m;
  p.params.chunks = n;
  p.num_edges = g.num_edges();
  layout_partitions(part, p);
  p.chunk_offsets = even_chunks(p.part_offsets, n);
  Graph g_new = renumber(g.view(), p);
  return {std::move(g_new), std::move(p)};
}

}  // namespace ht::test
