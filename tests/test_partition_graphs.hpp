#pragma once
// Small seeded graphs for the partition tests (uniform random and R-MAT-like
// skewed), built with ht::csc_from_edges so that the tests do not depend on
// the dataset generators.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "graph/build.hpp"
#include "graph/graph.hpp"
#include "graph/types.hpp"

namespace ht::test {

// E directed edges with uniform random ends (self-loops and duplicates
// possible, like the raw inputs ht-partition sees).
inline Graph random_graph(int64_t n, int64_t e, uint64_t seed, bool weighted = false) {
  EdgeList el;
  el.num_vertices = n;
  rng::Stream rs(seed, 1);
  for (int64_t i = 0; i < e; ++i) {
    el.src.push_back(static_cast<vid_t>(rs.below(n)));
    el.dst.push_back(static_cast<vid_t>(rs.below(n)));
    if (weighted) el.weight.push_back(static_cast<float>(i));  // identifies the edge
  }
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  return g;
}

// R-MAT (a, b, c, d) = (0.57, 0.19, 0.19, 0.05) on 2^scale vertices: skewed
// in- and out-degrees.
inline Graph rmat_graph(int scale, int64_t e, uint64_t seed) {
  EdgeList el;
  el.num_vertices = int64_t{1} << scale;
  rng::Stream rs(seed, 2);
  for (int64_t i = 0; i < e; ++i) {
    vid_t s = 0, d = 0;
    for (int b = 0; b < scale; ++b) {
      const double r = rs.uniform();
      const vid_t hi = r >= 0.57 + 0.19 ? 1 : 0;  // quadrants c, d: source bit set
      const vid_t lo = (r >= 0.57 && r < 0.76) || r >= 0.95 ? 1 : 0;  // quadrants b, d: destination bit set
      s = (s << 1) | hi;
      d = (d << 1) | lo;
    }
    el.src.push_back(s);
    el.dst.push_back(d);
  }
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  return g;
}

// side x side grid, both directions of every edge (symmetric). With
// `shuffle` the vertex ids are a seeded random permutation, so that the
// input order has no locality (like the web generator's ids); else row-major.
inline Graph grid_graph(int side, uint64_t seed, bool shuffle = true) {
  const int64_t n = int64_t{side} * side;
  std::vector<vid_t> id(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) id[v] = static_cast<vid_t>(v);
  rng::Stream rs(seed, 3);
  if (shuffle)
    for (size_t i = id.size(); i > 1; --i) std::swap(id[i - 1], id[rs.below(i)]);
  EdgeList el;
  el.num_vertices = n;
  auto edge = [&](int64_t a, int64_t b) {
    el.src.push_back(id[a]);
    el.dst.push_back(id[b]);
    el.src.push_back(id[b]);
    el.dst.push_back(id[a]);
  };
  for (int r = 0; r < side; ++r)
    for (int c = 0; c < side; ++c) {
      if (c + 1 < side) edge(int64_t{r} * side + c, int64_t{r} * side + c + 1);
      if (r + 1 < side) edge(int64_t{r} * side + c, int64_t{r + 1} * side + c);
    }
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  return g;
}

// Adds features (row v = v, v+0.5, ...), labels, split and orig_ids so that
// renumbering of vertex data can be checked.
inline void add_vertex_data(Graph& g) {
  const int64_t n = g.num_vertices;
  g.feature_dim = 3;
  g.num_classes = 5;
  g.features.resize(n * 3);
  g.labels.resize(n);
  g.split.resize(n);
  g.orig_ids.resize(n);
  for (int64_t v = 0; v < n; ++v) {
    for (int f = 0; f < 3; ++f) g.features[v * 3 + f] = static_cast<float>(v) + 0.5f * f;
    g.labels[v] = static_cast<int32_t>(v % 5);
    g.split[v] = static_cast<uint8_t>(v % 4);
    g.orig_ids[v] = 1000 + 7 * v;
  }
}

}  // namespace ht::test
