#pragma once
// Building CSC graphs from edge lists, and the structural transformations
// ht-convert offers (symmetrize, drop duplicates, drop/add self-loops).
#include <vector>

#include "graph/graph.hpp"

namespace ht {

// Coordinate list of directed edges src -> dst (optionally weighted).
struct EdgeList {
  int64_t num_vertices = 0;
  std::vector<vid_t> src, dst;
  std::vector<float> weight;  // empty or same length as src
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// CSC (in-edges) of an edge list by counting sort on the destination, with
// each destination's sources sorted ascending (ties keep input order).
// Consumes the list to keep peak memory low.
Graph csc_from_edges(EdgeList&& edges);

// Topology transformations; each returns a new topology (vertex data moved over).
Graph symmetrize(Graph&& g);          // adds v->u for every u->v (then dedups)
Graph drop_duplicate_edges(Graph&& g);  // keeps the first weight of each (u, v)
Graph drop_self_loops(Graph&& g);
Graph add_self_loops(Graph&& g);      // one v->v per vertex that has none (weight 1)
void sort_neighbors(Graph& g);

// Scans the topology and sets flags (symmetric, self-loops, sorted, duplicates).
GraphFlags detect_flags(const GraphView& g);

// Out-degrees (for statistics and normalization).
std::vector<int64_t> out_degrees(const GraphView& g);

}  // namespace ht
