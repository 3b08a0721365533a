#pragma once
// Feature rows made on demand instead of held in memory: the synthetic
// generators describe their N x F feature matrix as a function of the row,
// and the graph writer (write_graph_streamed, graph_file.hpp) produces the
// file's features section block by block from it, so that the matrix —
// most of a generated graph's bytes — never exists in memory as a whole.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/half.hpp"

namespace ht {

struct FeatureRows {
  int32_t dim = 0;  // F; 0 = no features
  // Writes row v (dim fp32 values). Called from several threads at once for
  // different rows; must depend on v only.
  std::function<void(int64_t v, std::span<float> row)> fill;

  bool empty() const { return dim == 0; }
};

// Bytes [offset, offset + out.size()) of the features section of n rows in
// dtype t: rows made by `rows.fill`, fp32 copied, 16-bit rounded once to
// nearest even (core/half.hpp). A finite value that t cannot hold (fp16:
// beyond ±65504) throws ht::Error naming the vertex and column, like
// narrow_features; offset and out.size() must be multiples of t's size.
void fill_feature_bytes(const FeatureRows& rows, StoreDtype t, uint64_t offset, std::span<std::byte> out);

// The whole matrix in fp32 (N * F values), rows filled in parallel: for
// callers that want the features in memory (tests, small graphs).
std::vector<float> materialize_features(const FeatureRows& rows, int64_t n);

}  // namespace ht
