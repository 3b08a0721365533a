#pragma once
// Labels and splits given as plain numbers, shared by the readers of OGB
// folders and NumPy archives: labels as values where NaN (or -1) marks an
// unlabeled vertex (papers100M's node-label.npz), splits as lists of vertex
// ids per part (OGB's split/<name>/*.csv.gz, PyG's train_idx arrays) or as
// boolean masks. Errors name the source and the position in it.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "datasets/raw_graph.hpp"
#include "graph/types.hpp"

namespace ht::data {

// Where value i sits, for messages ("line 7", "index 6 (byte 200)").
using PositionText = std::function<std::string(int64_t)>;

// values[v] = the class of vertex v; NaN or -1 = unlabeled. Sets
// out.labels and out.num_classes (max label + 1). Non-integral, negative
// (other than -1) or too large values are refused.
void set_labels(std::span<const double> values, const std::string& source, const PositionText& where,
                VertexData& out);

// Marks ids[i] with `code` in `split` (one entry per vertex, Split::none
// where unassigned); an id outside 0..N-1, or one already in another part,
// is refused.
void add_split_ids(std::span<const int64_t> ids, Split code, const std::string& source, const PositionText& where,
                   std::vector<uint8_t>& split);

// The same for a boolean mask (mask[v] != 0 puts v in the part).
void add_split_mask(std::span<const uint8_t> mask, Split code, const std::string& source, const PositionText& where,
                    std::vector<uint8_t>& split);

// "train 140 / val 500 / test 1000" for log lines.
std::string split_counts_text(std::span<const uint8_t> split);

}  // namespace ht::data
