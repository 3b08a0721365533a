#pragma once
// Sparse matrices inside .npz archives: SciPy's save_npz layout (keys
// format, shape, data, indices, indptr for csr/csc; row, col for coo) and
// the same arrays under a prefix (cora_ml's "adj_matrix.data", "attr_indptr",
// ...). Read as coordinates; errors name the archive member and the entry.
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/raw_graph.hpp"

namespace ht::data {

class NpzArchive;

struct SparseEntries {
  std::string name;  // "archive.npz:adj_matrix.*", for messages
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> row, col;
  std::vector<float> value;  // one per entry
};

// True when the archive holds prefix + "indptr" (csr/csc) or prefix + "row" (coo).
bool has_sparse(const NpzArchive& z, const std::string& prefix);

// `format` "csr", "csc" or "coo"; empty = the archive's prefix + "format"
// string (save_npz), else csr.
SparseEntries read_sparse(const NpzArchive& z, const std::string& prefix, std::string format = {});

// An adjacency matrix as edges: entry (i, j) is the edge i -> j (SciPy's and
// PyG's convention); the values become weights unless every one is 1.
// The matrix must be square.
RawEdges sparse_to_edges(const SparseEntries& m, int64_t& num_vertices);

// A (N, F) attribute matrix as dense row-major floats (duplicate entries
// add up, as SciPy's toarray()).
void sparse_to_features(const SparseEntries& m, VertexData& out);

}  // namespace ht::data
