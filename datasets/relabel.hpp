#pragma once
// Input ids -> dense 32-bit ids 0..N-1. When the vertex count is known (from
// the input or its vertex arrays) ids are kept. Otherwise ids are kept if
// every id in 0..max occurs; if not, they are relabeled in ascending order of
// the input id and `orig_ids[new] = input id` records the mapping.
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/raw_graph.hpp"
#include "graph/build.hpp"

namespace ht::data {

struct IdPolicy {
  int64_t known_vertices = -1;  // >= 0: N is fixed; every id must be below it
  bool keep_ids = false;        // never relabel: N = max id + 1
  std::string input;            // named in messages
};

// Consumes `raw` (its id arrays are freed as they are narrowed).
EdgeList to_dense_ids(RawEdges&& raw, const IdPolicy& policy, std::vector<int64_t>& orig_ids);

}  // namespace ht::data
