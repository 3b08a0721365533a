#pragma once
// Per-vertex arrays from .npy files: features [N, F] (or [N]), labels [N]
// (integers, -1 = unlabeled), split [N] as codes (0 none, 1 train, 2 val,
// 3 test) or as three boolean masks. All arrays must have the same N; each
// mismatch names both files.
#include <cstdint>
#include <span>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct VertexArrayPaths {
  std::string features, labels, split;
  std::string train_mask, val_mask, test_mask;
  int32_t num_classes = 0;  // 0 = max label + 1
};

// Loads every named array into `out`, checking lengths against out.rows
// (and setting it from the first array when it is still -1).
void load_vertex_arrays(const VertexArrayPaths& paths, VertexData& out);

class NpyArray;

// The same checks on arrays already open (the members of an .npz): features
// [N, F] or [N] of any numeric dtype, labels [N] integers (-1 = unlabeled;
// num_classes 0 = max label + 1).
void load_features(const NpyArray& a, VertexData& out);
void load_labels(const NpyArray& a, int32_t num_classes, VertexData& out);

// Row-normalizes the features to sum 1 (rows summing to 0 stay 0), as in
// Kipf & Welling's preprocessing.
void normalize_feature_rows(std::span<float> features, int32_t feature_dim);
// One row of it (the same arithmetic: generated rows are normalized as made).
void normalize_feature_row(std::span<float> row);

}  // namespace ht::data
