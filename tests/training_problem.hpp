#pragma once
// A small training problem: a seeded random directed multigraph (a few
// self-loops) with features uniform in [feature_lo, 1), labels and a split
// (test_engine, test_host_memory_plan, test_device_buffers), and a partition
// by id ranges with equal chunks over all m x chunks.
#include <cstdint>
#include <numeric>

#include "core/rng.hpp"
#include "graph/build.hpp"
#include "partition/partition.hpp"

namespace ht::test {

inline Graph training_graph(int64_t n, int64_t m, int f, int c, uint64_t seed, double feature_lo = 0.0) {
  rng::Stream r(seed, 0);
  EdgeList el;
  el.num_vertices = n;
  for (int64_t e = 0; e < m; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(n)));
    el.dst.push_back(static_cast<vid_t>(r.below(n)));
  }
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = f;
  g.features.resize(n * f);
  for (auto& x : g.features) x = static_cast<float>(feature_lo + (1.0 - feature_lo) * r.uniform());
  g.num_classes = c;
  g.labels.resize(n);
  g.split.resize(n);
  for (int64_t v = 0; v < n; ++v) {
    g.labels[v] = static_cast<int32_t>(r.below(c));
    g.split[v] = static_cast<uint8_t>(1 + r.below(3));
  }
  g.flags = detect_flags(g.view());
  return g;
}

inline Partition id_range_partition(const Graph& g, int m, int chunks) {
  const int64_t n = g.num_vertices;
  Partition p;
  p.num_edges = g.num_edges();
  p.params.parts = m;
  p.params.chunks = chunks;
  p.num_vertices = n;
  p.new_to_old.resize(n);
  std::iota(p.new_to_old.begin(), p.new_to_old.end(), 0u);
  p.old_to_new = p.new_to_old;
  const int64_t k = static_cast<int64_t>(m) * chunks;
  for (int64_t c = 0; c <= k; ++c) p.chunk_offsets.push_back(c * n / k);
  for (int i = 0; i <= m; ++i) p.part_offsets.push_back(p.chunk_offsets[static_cast<size_t>(i) * chunks]);
  return p;
}

}  // namespace ht::test
