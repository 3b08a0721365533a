#pragma once
// Outputs of a forward pass over every vertex: predictions as CSV (original
// vertex ids, argmax class) and the logits as a NumPy .npy array [N, C] (f4,
// rows in the graph file's vertex order). Both are written to temporary files
// and renamed into place by the caller (commit()), with the run's other outputs.
#include <memory>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht {

// `logits` rows are in new ids (the partition's numbering), N x classes.
std::unique_ptr<AtomicFile> write_predictions(const std::string& path, const std::vector<float>& logits,
                                              int64_t classes, const Partition& part, const GraphView& g);
std::unique_ptr<AtomicFile> write_logits_npy(const std::string& path, const std::vector<float>& logits,
                                             int64_t classes, const Partition& part, const GraphView& g);
// Any per-vertex matrix (rows in new ids, `cols` wide) as .npy [N, cols] f4 in
// graph file order: --logits-out and --embeddings-out.
std::unique_ptr<AtomicFile> write_rows_npy(const std::string& path, const std::vector<float>& rows, int64_t cols,
                                           const Partition& part, const GraphView& g);

}  // namespace ht
