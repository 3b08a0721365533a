#pragma once
// Edge arrays stored as .npy: integer shape (E, 2) (row = source, destination)
// or (2, E) (PyG's edge_index: row 0 sources, row 1 destinations).
#include <cstdint>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

class NpyArray;

// Which shape to expect; `either` takes (E, 2) or (2, E) and reads a (2, 2)
// array as (E, 2), `pairs` only (E, 2), `index` only (2, E).
enum class EdgeArrayShape { either, pairs, index };

// Every id must be below `num_vertices`; errors give the byte offset.
RawEdges read_npy_edges(const std::string& path, int64_t num_vertices, EdgeArrayShape shape = EdgeArrayShape::pairs);
RawEdges read_npy_edges(const NpyArray& a, int64_t num_vertices, EdgeArrayShape shape = EdgeArrayShape::pairs);

// The largest id of an edge array of either shape + 1 (0 for no edges), for
// a vertex count taken from the ids; negative ids are refused.
int64_t npy_edges_vertex_count(const NpyArray& a, EdgeArrayShape shape);

}  // namespace ht::data
