#pragma once
// Edge arrays stored as .npy: integer shape (E, 2), row = (source, destination).
#include <cstdint>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

class NpyArray;

// Every id must be below `num_vertices`; errors give the byte offset.
RawEdges read_npy_edges(const std::string& path, int64_t num_vertices);
RawEdges read_npy_edges(const NpyArray& a, int64_t num_vertices);

}  // namespace ht::data
