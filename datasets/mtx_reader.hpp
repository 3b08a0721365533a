#pragma once
// Matrix Market coordinate files:
//   %%MatrixMarket matrix coordinate real|integer|pattern general|symmetric
// Entry (i, j) is the directed edge i -> j (row = source, column =
// destination), ids 1-based in the file and 0-based in the graph; the value
// (real/integer) becomes the edge weight. A symmetric file lists one triangle:
// each off-diagonal entry gives both i -> j and j -> i. N = rows = columns.
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct MtxData {
  RawEdges edges;
  int64_t num_vertices = 0;
};

MtxData read_matrix_market(const std::string& path, bool keep_weights = true);

}  // namespace ht::data
